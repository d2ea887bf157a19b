/* SPDX-License-Identifier: BSD-3-Clause */
/* A task: one operation a user enqueued on a comm, waiting for its group to end. */
#ifndef MONEL_CORE_TASK_H
#define MONEL_CORE_TASK_H
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "nccl.h"
#include "core/plan.h"
#include "util/red_op.h"

enum coll_kind {
  COLL_ALLREDUCE,
  COLL_BROADCAST,
  COLL_REDUCE,
  COLL_ALLGATHER,
  COLL_REDUCESCATTER,
  COLL_ALLTOALL,
  COLL_ALLTOALLV,
  COLL_GATHER,
  COLL_SCATTER,
  COLL_SEND,
  COLL_RECV,
  COLL_COUNT
};

struct task {
  enum coll_kind coll;
  const void* sendbuff;
  void* recvbuff;
  size_t count; /* elements, with the meaning of the NCCL call's count argument */
  ncclDataType_t dtype;
  struct red_op op;
  int root; /* root, or peer for send/recv */
  cudaStream_t stream;
  uint64_t seq; /* per-comm sequence number, names the op in logs and errors */
  /* AlltoAllv: this rank's rows of the four matrices, copied at enqueue (4 * nranks elements:
   * sendcounts, sdispls, recvcounts, rdispls), owned by the task; NULL for other ops. */
  size_t* vrows;
  /* How the engine runs it: filled by core (core/plan.c) for every task before engine->run. */
  struct plan_op plan;
  /* Per-call options of the nccl*Config calls (api/coll_config.c); 0 keeps the comm's. */
  unsigned algo_mask;       /* algorithms this call may use (1 << ALGO_*) */
  int cta_min, cta_max;     /* thread blocks of its GPU kernels */
  int cta_policy;           /* NCCL_CTA_POLICY_* + 1 */
  cudaEvent_t launch_event; /* ncclCollConfig_t.launchCompletionEvent (GPU engine), or NULL */
  /* The profiler plugin (core/profiler.h): the call's tag, the mask when it was enqueued, its
   * API event (the parent of its Coll/P2p event) and that event. */
  uint64_t user_tag; /* ncclCollConfig_t.userProfilerTag; 0: none */
  int prof_mask;
  void* prof_api;
  void* prof_ev;
};

/* Release what a task owns (accepts a task that owns nothing). Whoever drops or completes a
 * queued task calls it. */
static inline void task_release(struct task* t) {
  free(t->vrows);
  t->vrows = NULL;
}

const char* coll_name(enum coll_kind coll);

/* Send, Recv, AlltoAll(v), Gather and Scatter as messages, in the order of their schedule
 * (algo/p2p.h): fn(ctx, t, buf, bytes, peer, is_send) for each, zero-byte ones left out. buf is
 * the source of a send and the destination of a receive; a message to myself has peer == rank.
 * Both engines run the messages a rank lists; the first error of fn is returned. */
typedef ncclResult_t (*task_msg_fn)(void* ctx, const struct task* t, char* buf, size_t bytes,
                                    int peer, int is_send);
ncclResult_t task_messages(const struct task* t, int rank, int nranks, task_msg_fn fn, void* ctx);
/* Messages to oneself pair in order: the k-th send to self goes to the k-th receive from self,
 * which must have its size. view(ctx, i, &v) describes message i of n (in the order of the
 * group's tasks and their schedules); pair(ctx, send, recv), when not NULL, is called for each pair
 * in turn. A send or receive to self left without its partner is ncclInvalidUsage, with a WARN
 * naming the call. One rule for every engine. */
struct task_msg_view {
  const struct task* task;
  size_t bytes;
  int peer, is_send;
};
typedef void (*task_msg_view_fn)(const void* ctx, int i, struct task_msg_view* v);
typedef ncclResult_t (*task_pair_fn)(void* ctx, int send, int recv);
ncclResult_t task_pair_self(int rank, int n, task_msg_view_fn view, task_pair_fn pair, void* ctx);

static inline int task_is_p2p(enum coll_kind c) {
  return c == COLL_SEND || c == COLL_RECV || c == COLL_ALLTOALL || c == COLL_ALLTOALLV ||
         c == COLL_GATHER || c == COLL_SCATTER;
}

/* Whether rank reads sendbuff / writes recvbuff for this task (count > 0 assumed; AlltoAllv
 * decides by its counts). */
static inline int task_reads_send(enum coll_kind c, int rank, int root) {
  return c != COLL_RECV && !(c == COLL_SCATTER && rank != root) &&
         !(c == COLL_BROADCAST && rank != root);
}
static inline int task_writes_recv(enum coll_kind c, int rank, int root) {
  return c != COLL_SEND && !(c == COLL_REDUCE && rank != root) &&
         !(c == COLL_GATHER && rank != root);
}

#endif
