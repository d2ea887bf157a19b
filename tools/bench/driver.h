/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * driver.h - the shared driver of the *_perf programs (nccl-tests compatible).
 *
 * Each *_perf.c file describes one collective with a struct bench_coll and
 * hands it to bench_main(). The driver owns flags, ranks (threads x devices,
 * several processes under monelrun), buffers, timing, checking and output.
 */
#ifndef MONEL_BENCH_DRIVER_H
#define MONEL_BENCH_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "nccl.h"

/* Element counts of one size for one rank (all in elements, not bytes). */
struct bench_counts {
  size_t send_count;   /* elements read from sendbuff */
  size_t recv_count;   /* elements written to recvbuff (and checked) */
  size_t param_count;  /* the count argument of the call (column "count") */
  size_t send_inplace; /* in-place: sendbuff = recvbuff + this */
  size_t recv_inplace; /* in-place: recvbuff = recvbuff + this */
};

/* Everything one call of the collective needs. */
struct bench_call {
  const void* sendbuff;
  void* recvbuff;
  struct bench_counts counts;
  ncclDataType_t type;
  ncclRedOp_t op;
  int root;
  int rank;
  int nranks;
  ncclComm_t comm;
  cudaStream_t stream;
  void* priv; /* per-rank state owned by the collective (prepare/release) */
};

struct bench_coll {
  const char* name; /* program name, e.g. "all_reduce_perf" */
  int has_op;       /* prints the redop column, sweeps -o */
  int has_root;     /* prints the root column, sweeps -r */
  int no_inplace;   /* in-place columns print N/A */
  /* In place is timed but not checked (#wrong N/A), because a rank's send and
   * receive share one buffer, so the result depends on the library's timing. */
  int inplace_unchecked;
  int pow2_ranks; /* needs a power-of-two rank count */
  /* Counts of one rank for a message of `count` elements in total. */
  void (*get_counts)(size_t count, int nranks, int rank, struct bench_counts* c);
  /* Bytes moved per call (algbw numerator) and the busbw factor. */
  double (*alg_bytes)(size_t param_count, size_t type_size, int nranks);
  double (*bus_factor)(int nranks);
  /* Number of dependent groups one call needs (NULL: 1), and step s. */
  int (*nsteps)(int nranks);
  ncclResult_t (*run)(const struct bench_call* c, int step);
  /* Value expected in output element i of c->rank; 0 = not checked. */
  int (*expected)(const struct bench_call* c, size_t i, double* value);
  /* Optional per-size setup/teardown of c->priv (called by each rank). */
  int (*prepare)(struct bench_call* c);
  void (*release)(struct bench_call* c);
};

int bench_main(const struct bench_coll* coll, int argc, char** argv);

/* ---- data helpers (data.c) ---- */
size_t bench_type_size(ncclDataType_t t);
const char* bench_type_name(ncclDataType_t t);
int bench_type_parse(const char* s, ncclDataType_t* t);
const char* bench_op_name(ncclRedOp_t op);
int bench_op_parse(const char* s, ncclRedOp_t* op);
int bench_type_is_float(ncclDataType_t t);
/* The input element i of rank r (a small integer, exact in every type). */
double bench_input(ncclDataType_t t, ncclRedOp_t op, int r, int nranks, size_t i);
/* The reduction of element i of every rank's input (sendbuff index i). */
double bench_reduce_all(ncclDataType_t t, ncclRedOp_t op, int nranks, size_t i);
void bench_store(ncclDataType_t t, void* buf, size_t i, double v);
/* 1 when the element i of buf matches v (bit exact; 2 ulp for avg). */
int bench_match(ncclDataType_t t, ncclRedOp_t op, int nranks, const void* buf, size_t i, double v);

/* Looks up an optional library symbol at run time (NULL when absent). */
void* bench_lib_symbol(const char* name);

#endif
