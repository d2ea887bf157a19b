/* SPDX-License-Identifier: BSD-3-Clause */
/* One-shot AllReduce on the CPU engine (algo/oneshot.h): the input goes to every peer in one
 * message per round, and each rank folds the n inputs in rank order as they arrive (the first
 * two in one pass over the output when the operator has no pre step).
 *
 * Connections: the point-to-point FIFOs of p2p.c (one per peer and direction), created for all
 * peers the first time; every rank runs the same operations in the same order, so all take part.
 * A collective drains every message it posts before it returns, so sharing them with Send/Recv
 * keeps both in order. Setup in three phases, as in p2p.c, cannot deadlock.
 * Rounds: a buffer larger than a FIFO slot goes in rounds of one slot. A round's sends never
 * wait long: a peer that finished round k has read my message of round k-1, and a FIFO has at
 * least two slots. */
#include <stdlib.h>
#include <string.h>
#include "algo/oneshot.h"
#include "boot/tags.h"
#include "util/check.h"
#include "cpu/cpu.h"
#include "cpu/reduce.h"
#include "util/dtype.h"

/* Not inlined: cpu_oneshot_connect runs twice per operation, and with this body inside it GCC
 * saved every register before its first test. */
__attribute__((noinline)) static ncclResult_t connect_all(struct ncclComm* comm) {
  struct cpu_comm* cc = comm->engine_state;
  int n = comm->nranks, rank = comm->rank, nl = 0;
  struct cpu_link* links = NULL;
  NCCLCALLOC(links, 2 * (size_t)n);
  for (int s = 1; s < n; s++) {
    int to = oneshot_send_peer(rank, n, s), from = oneshot_send_peer(rank, n, n - s);
    links[nl++] = (struct cpu_link){&cc->p2p_recv[from],       from, 1, BOOT_TAG_CPU_ONESHOT,
                                    &cc->p2p_recv_ready[from], 1};
    links[nl++] = (struct cpu_link){&cc->p2p_send[to],       to, 0, BOOT_TAG_CPU_ONESHOT,
                                    &cc->p2p_send_ready[to], 1};
  }
  ncclResult_t res = cpu_connect(comm, links, nl);
  free(links);
  if (res == ncclSuccess) cc->oneshot_ready = 1;
  return res;
}

/* One round: `len` bytes of my input at `in` to everyone; the folded result to `out`. When `in`
 * is `out` (in place), folding waits until every send has taken its copy. */
static ncclResult_t round_run(struct ncclComm* comm, const struct task* t, const char* in,
                              char* out, size_t len, size_t count, unsigned char* sent) {
  struct cpu_comm* cc = comm->engine_state;
  int n = comm->nranks, rank = comm->rank, nsent = 0, next = 0;
  struct fifo_idle idle = {0, 0, 0};
  memset(sent, 0, (size_t)n);
  while (nsent < n - 1 || next < n) {
    int moved = 0;
    struct conn* waiting = NULL;
    for (int s = 1; s < n; s++) {
      int to = oneshot_send_peer(rank, n, s);
      void* slot;
      if (sent[to]) continue;
      if (!fifo_send_try(&cc->p2p_send[to], &slot)) {
        waiting = waiting ? waiting : &cc->p2p_send[to];
        continue;
      }
      fifo_send_copy_post(&cc->p2p_send[to], in, len);
      sent[to] = 1, nsent++, moved++;
    }
    while (next < n && (in != out || nsent == n - 1)) {
      /* The first two inputs fold in one pass when the operator has no pre step. */
      int take = next == 0 && n > 1 && t->op.kind != RED_PREMULSUM ? 2 : 1, k = 0;
      const void* src[2] = {in, in};
      for (; k < take; k++) {
        int r = oneshot_fold_rank(next + k);
        size_t got = len;
        if (r != rank && !fifo_recv_try(&cc->p2p_recv[r], &src[k], &got)) break;
        if (got != len) return cpu_check_len(&(struct wait_ctx){comm, t}, got, len, r);
      }
      if (k < take) {
        waiting = &cc->p2p_recv[oneshot_fold_rank(next + k)];
        break;
      }
      int last = next + take == n ? RED_LAST : 0;
      if (take == 2)
        red_apply(out, src[0], src[1], count, t->dtype, &t->op, last);
      else
        red_apply(out, next == 0 ? NULL : out, src[0], count, t->dtype, &t->op,
                  (next == 0 ? RED_FIRST : 0) | last);
      for (k = 0; k < take; k++)
        if (oneshot_fold_rank(next + k) != rank)
          fifo_recv_release(&cc->p2p_recv[oneshot_fold_rank(next + k)]);
      next += take, moved++;
    }
    NCCLCHECK(cpu_mesh_idle(comm, t, &idle, moved, waiting));
  }
  return ncclSuccess;
}

ncclResult_t cpu_mesh_idle(struct ncclComm* comm, const struct task* t, struct fifo_idle* idle,
                           int moved, struct conn* waiting) {
  struct cpu_comm* cc = comm->engine_state;
  struct wait_ctx w = {comm, t};
  if (moved) {
    fifo_idle_reset(idle);
    return ncclSuccess;
  }
  if (waiting == NULL || !fifo_idle(idle, waiting, waiting == &cc->p2p_send[waiting->peer]))
    return ncclSuccess;
  for (int p = 0; p < comm->nranks; p++)
    if (p != comm->rank) {
      NCCLCHECK(fifo_check(&cc->p2p_send[p], &w));
      NCCLCHECK(fifo_check(&cc->p2p_recv[p], &w));
    }
  return ncclSuccess;
}

ncclResult_t cpu_oneshot_connect(struct ncclComm* comm) {
  struct cpu_comm* cc = comm->engine_state;
  if (cc->oneshot_ready || comm->nranks == 1) return ncclSuccess;
  return connect_all(comm);
}

ncclResult_t cpu_oneshot_allreduce(struct ncclComm* comm, const struct task* t) {
  struct cpu_comm* cc = comm->engine_state;
  int n = comm->nranks;
  size_t es = dtype_size(t->dtype), bytes = t->count * es;
  const char* in = t->sendbuff;
  char* out = t->recvbuff;
  if (n == 1) {
    red_apply(out, NULL, in, t->count, t->dtype, &t->op, RED_FIRST | RED_LAST);
    return ncclSuccess;
  }
  NCCLCHECK(cpu_oneshot_connect(comm));
  size_t piece = cpu_step_bytes(cc, t); /* a multiple of 64, so of every element size */
  if (cpu_prof_wanted(comm, t))         /* a slot to and from every peer per round */
    for (int p = 0; p < n; p++) {
      cpu_prof_op(comm, t, p == comm->rank ? NULL : &cc->p2p_send[p], 1, 0,
                  (bytes + piece - 1) / piece);
      cpu_prof_op(comm, t, p == comm->rank ? NULL : &cc->p2p_recv[p], 0, 0,
                  (bytes + piece - 1) / piece);
    }
  ncclResult_t res = ncclSuccess;
  unsigned char sent_small[64], *sent = n <= 64 ? sent_small : malloc((size_t)n);
  /* Folding into the output overwrites an in-place input before its own turn: keep a copy,
   * unless it is one of the first two (inputs fold in rank order), which fold together in the
   * first write. */
  int keep = in == out && bytes && (comm->rank > 1 || t->op.kind == RED_PREMULSUM);
  size_t copy_len = bytes < piece ? bytes : piece;
  char copy_small[4096], *copy = NULL;
  if (keep) copy = copy_len <= sizeof copy_small ? copy_small : malloc(copy_len);
  if (sent == NULL || (keep && copy == NULL)) {
    WARN("%s #%llu on rank %d: out of host memory", coll_name(t->coll), (unsigned long long)t->seq,
         comm->rank);
    res = ncclSystemError;
    goto out;
  }
  for (size_t off = 0; off < bytes; off += piece) {
    size_t len = bytes - off < piece ? bytes - off : piece;
    const char* src = in + off;
    if (copy) src = memcpy(copy, in + off, len);
    size_t count = len == bytes ? t->count : len / es;
    NCCLCHECKGOTO(round_run(comm, t, src, out + off, len, count, sent), res, out);
  }
out:
  if (copy != copy_small) free(copy);
  if (sent != sent_small) free(sent);
  return res;
}
