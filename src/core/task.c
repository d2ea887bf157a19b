/* SPDX-License-Identifier: BSD-3-Clause */
/* Names of operations, as logs and errors print them, and the messages of point-to-point
 * operations. */
#include "core/task.h"
#include "algo/p2p.h"
#include "util/check.h"
#include "util/dtype.h"
#include "util/log.h"

const char* coll_name(enum coll_kind coll) {
  static const char* names[COLL_COUNT] = {"AllReduce",     "Broadcast", "Reduce",    "AllGather",
                                          "ReduceScatter", "AlltoAll",  "AlltoAllv", "Gather",
                                          "Scatter",       "Send",      "Recv"};
  return (unsigned)coll < COLL_COUNT ? names[coll] : "unknown";
}

ncclResult_t task_messages(const struct task* t, int rank, int n, task_msg_fn fn, void* ctx) {
  size_t es = dtype_size(t->dtype), cnt = t->count;
  char* in = (char*)t->sendbuff;
  char* out = t->recvbuff;
  ncclResult_t res = ncclSuccess;
#define MSG(buf, count, peer, is_send)                                                             \
  do {                                                                                             \
    size_t b_ = (size_t)(count)*es;                                                                \
    if (b_ && (res = fn(ctx, t, (buf), b_, (peer), (is_send))) != ncclSuccess) return res;         \
  } while (0)
  switch (t->coll) {
  case COLL_SEND:
    MSG(in, cnt, t->root, 1);
    break;
  case COLL_RECV:
    MSG(out, cnt, t->root, 0);
    break;
  case COLL_ALLTOALL:
  case COLL_ALLTOALLV:
    for (int s = 0; s < n; s++) {
      int to = p2p_pairwise_send_peer(rank, n, s), from = p2p_pairwise_recv_peer(rank, n, s);
      const size_t* v = t->vrows;
      if (t->coll == COLL_ALLTOALL) {
        MSG(in + (size_t)to * cnt * es, cnt, to, 1);
        MSG(out + (size_t)from * cnt * es, cnt, from, 0);
      } else {
        MSG(in + v[n + to] * es, v[to], to, 1);
        MSG(out + v[3 * n + from] * es, v[2 * n + from], from, 0);
      }
    }
    break;
  case COLL_GATHER:
    if (rank != t->root) {
      MSG(in, cnt, t->root, 1);
      break;
    }
    MSG(in, cnt, rank, 1);
    for (int s = 0; s < n; s++) {
      int p = p2p_rooted_peer(t->root, n, s);
      MSG(out + (size_t)p * cnt * es, cnt, p, 0);
    }
    break;
  case COLL_SCATTER:
    if (rank != t->root) {
      MSG(out, cnt, t->root, 0);
      break;
    }
    for (int s = 0; s < n; s++) {
      int p = p2p_rooted_peer(t->root, n, s);
      MSG(in + (size_t)p * cnt * es, cnt, p, 1);
    }
    MSG(out, cnt, rank, 0);
    break;
  default:
    return ncclInternalError;
  }
#undef MSG
  return res;
}

static ncclResult_t self_unpaired(int rank, const struct task_msg_view* v) {
  if (v->is_send)
    WARN("%s #%llu on rank %d: a send of %zu bytes to itself has no receive from itself of the "
         "same size in its group",
         coll_name(v->task->coll), (unsigned long long)v->task->seq, rank, v->bytes);
  else
    WARN("%s #%llu on rank %d: a receive of %zu bytes from itself has no matching send to itself "
         "in its group",
         coll_name(v->task->coll), (unsigned long long)v->task->seq, rank, v->bytes);
  return ncclInvalidUsage;
}

ncclResult_t task_pair_self(int rank, int n, task_msg_view_fn view, task_pair_fn pair, void* ctx) {
  struct task_msg_view s, r;
  int ri = -1;
  for (int si = 0; si < n; si++) {
    view(ctx, si, &s);
    if (!s.is_send || s.peer != rank) continue;
    do
      if (++ri < n) view(ctx, ri, &r);
    while (ri < n && (r.is_send || r.peer != rank));
    if (ri == n || r.bytes != s.bytes) return self_unpaired(rank, &s);
    if (pair != NULL) NCCLCHECK(pair(ctx, si, ri));
  }
  for (ri++; ri < n; ri++) {
    view(ctx, ri, &r);
    if (!r.is_send && r.peer == rank) return self_unpaired(rank, &r);
  }
  return ncclSuccess;
}
