/* SPDX-License-Identifier: BSD-3-Clause */
/* How the api layer defines an exported function: the strong symbol is pncclX, and ncclX is a
 * weak alias of it (so a profiler or interposer can wrap ncclX). Only src/api uses this. */
#ifndef MONEL_API_API_H
#define MONEL_API_API_H
#include "nccl.h"
#include "monel.h"
#include "core/task.h"

#define NCCL_API(ret, name, ...)                                                                   \
  __attribute__((visibility("default"))) ret p##name(__VA_ARGS__);                                 \
  extern __typeof__(p##name) name __attribute__((weak, alias("p" #name), visibility("default")));  \
  __attribute__((visibility("default"))) ret p##name(__VA_ARGS__)

/* Argument checks shared by the api files: each WARNs with a sentence naming `fn`. */
struct ncclComm;
ncclResult_t api_check_ptr(const void* p, const char* what, const char* fn);
ncclResult_t api_check_dtype(ncclDataType_t dt, const char* fn);
ncclResult_t api_check_count(size_t count, ncclDataType_t dt, size_t factor, const char* fn);
ncclResult_t api_check_rank(int rank, int nranks, const char* what, const char* fn);
/* A live comm that was not aborted, revoked, suspended or failed. */
ncclResult_t api_check_usable(struct ncclComm* comm, const char* fn);
/* Checks an operation's arguments and queues it; opts (may be NULL) brings the per-call options
 * of the nccl*Config calls (algo_mask, cta_*). */
ncclResult_t api_enqueue(enum coll_kind coll, const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t dt, ncclRedOp_t op, int root, struct ncclComm* comm,
                         cudaStream_t stream, const char* fn, const struct task* opts);

#endif
