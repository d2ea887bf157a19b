/* SPDX-License-Identifier: BSD-3-Clause */
/* Two-shot AllReduce on the CPU engine (algo/twoshot.h), over the point-to-point FIFOs the
 * one-shot uses (cpu_oneshot_connect). One progress loop per round moves whatever is ready:
 * shot-1 sends of my input's pieces, the fold of my piece in rank order, shot-2 sends of the
 * folded piece, shot-2 receives of the other pieces.
 * Order on a FIFO: a peer's shot-1 message to me comes before its shot-2 message, so shot-2
 * receives start once my fold has taken every shot-1 message. In place, my own piece of the
 * input is overwritten by the fold before its turn (unless I am rank 0): a copy is kept; the
 * other pieces are overwritten by shot-2 receives, which start once every shot-1 send has taken
 * its copy. Rounds: a round's pieces fit a FIFO slot; a FIFO holds at most two messages of a
 * collective at once (a peer's shot 2 of round k and shot 1 of round k+1), and has two slots
 * or more. Every message a round posts is received in that round. */
#include <stdlib.h>
#include <string.h>
#include "algo/twoshot.h"
#include "util/check.h"
#include "cpu/cpu.h"
#include "cpu/reduce.h"
#include "util/dtype.h"

struct round {
  const char* in;
  char* out;
  size_t count, es;
  const char* mine; /* my piece of the input (a copy when in place) */
};

static ncclResult_t round_run(struct ncclComm* comm, const struct task* t, const struct round* r,
                              unsigned char* state) {
  struct cpu_comm* cc = comm->engine_state;
  const struct wait_ctx w = {comm, t};
  int n = comm->nranks, me = comm->rank, next = 0, todo = 0;
  size_t mlo, mhi;
  twoshot_piece(r->count, n, me, &mlo, &mhi);
  const size_t mine_bytes = (mhi - mlo) * r->es;
  enum { SENT1 = 1, SENT2 = 2, RECVD2 = 4 };
  /* state[p]: what is done with peer p; pieces that are empty need nothing */
  for (int p = 0; p < n; p++) {
    size_t lo, hi;
    twoshot_piece(r->count, n, p, &lo, &hi);
    state[p] = p == me ? SENT1 | SENT2 | RECVD2 : 0;
    if (p != me && hi == lo) state[p] |= SENT1 | RECVD2;
    if (p != me && mine_bytes == 0) state[p] |= SENT2;
    if (state[p] != (SENT1 | SENT2 | RECVD2)) todo++;
  }
  if (mine_bytes == 0) next = n;
  int nsent1 = 0, need1 = 0;
  for (int p = 0; p < n; p++) need1 += !(state[p] & SENT1);
  struct fifo_idle idle = {0, 0, 0};
  while (todo > 0 || next < n) {
    int moved = 0;
    struct conn* waiting = NULL;
    void* slot;
    /* shot 1: piece p of my input to rank p */
    for (int s = 1; s < n && nsent1 < need1; s++) {
      int to = twoshot_peer(me, n, s);
      if (state[to] & SENT1) continue;
      if (!fifo_send_try(&cc->p2p_send[to], &slot)) {
        waiting = waiting ? waiting : &cc->p2p_send[to];
        continue;
      }
      size_t lo, hi;
      twoshot_piece(r->count, n, to, &lo, &hi);
      fifo_send_copy_post(&cc->p2p_send[to], r->in + lo * r->es, (hi - lo) * r->es);
      state[to] |= SENT1, nsent1++, moved++;
    }
    /* fold my piece, inputs in rank order */
    char* acc = r->out + mlo * r->es;
    while (next < n) {
      const void* src = r->mine;
      size_t got = mine_bytes;
      if (next != me && !fifo_recv_try(&cc->p2p_recv[next], &src, &got)) {
        waiting = &cc->p2p_recv[next];
        break;
      }
      if (next != me) NCCLCHECK(cpu_check_len(&w, got, mine_bytes, next));
      red_apply(acc, next == 0 ? NULL : acc, src, mhi - mlo, t->dtype, &t->op,
                (next == 0 ? RED_FIRST : 0) | (next == n - 1 ? RED_LAST : 0));
      if (next != me) fifo_recv_release(&cc->p2p_recv[next]);
      next++, moved++;
    }
    for (int s = 1; s < n && next == n; s++) {
      int p = twoshot_peer(me, n, s);
      int was_done = state[p] == (SENT1 | SENT2 | RECVD2);
      /* shot 2: my folded piece to rank p */
      if (!(state[p] & SENT2)) {
        if (fifo_send_try(&cc->p2p_send[p], &slot)) {
          fifo_send_copy_post(&cc->p2p_send[p], acc, mine_bytes);
          state[p] |= SENT2, moved++;
        } else if (!waiting) {
          waiting = &cc->p2p_send[p];
        }
      }
      /* shot 2: rank p's folded piece, once my input's pieces are all sent */
      if (!(state[p] & RECVD2) && nsent1 == need1) {
        const void* src;
        size_t got, lo, hi;
        twoshot_piece(r->count, n, p, &lo, &hi);
        if (fifo_recv_try(&cc->p2p_recv[p], &src, &got)) {
          NCCLCHECK(cpu_check_len(&w, got, (hi - lo) * r->es, p));
          memcpy(r->out + lo * r->es, src, got);
          fifo_recv_release(&cc->p2p_recv[p]);
          state[p] |= RECVD2, moved++;
        } else if (!waiting) {
          waiting = &cc->p2p_recv[p];
        }
      }
      if (!was_done && state[p] == (SENT1 | SENT2 | RECVD2)) todo--;
    }
    NCCLCHECK(cpu_mesh_idle(comm, t, &idle, moved, waiting));
  }
  return ncclSuccess;
}

/* Slots moved each way with peer p in a round of `count` elements: p's piece of my input and
 * p's folded piece back, unless p's piece is empty; mine to p and p's input of it, unless mine
 * is empty. */
static uint64_t round_slots(size_t count, int n, int me, int p) {
  size_t lo, hi, mlo, mhi;
  twoshot_piece(count, n, p, &lo, &hi);
  twoshot_piece(count, n, me, &mlo, &mhi);
  return (uint64_t)(hi > lo) + (uint64_t)(mhi > mlo);
}

/* The profiler's ProxyOps (cpu/prof.h): full rounds, then the last one. */
static void prof_twoshot(struct ncclComm* comm, const struct task* t, size_t per_round) {
  struct cpu_comm* cc = comm->engine_state;
  int n = comm->nranks, me = comm->rank;
  uint64_t full = t->count / per_round;
  size_t rest = t->count % per_round;
  for (int p = 0; p < n; p++) {
    if (p == me) continue;
    uint64_t k = full * round_slots(per_round, n, me, p) + (rest ? round_slots(rest, n, me, p) : 0);
    cpu_prof_op(comm, t, &cc->p2p_send[p], 1, 0, k);
    cpu_prof_op(comm, t, &cc->p2p_recv[p], 0, 0, k);
  }
}

ncclResult_t cpu_twoshot_allreduce(struct ncclComm* comm, const struct task* t) {
  struct cpu_comm* cc = comm->engine_state;
  int n = comm->nranks, me = comm->rank;
  size_t es = dtype_size(t->dtype);
  if (n == 1) {
    red_apply(t->recvbuff, NULL, t->sendbuff, t->count, t->dtype, &t->op, RED_FIRST | RED_LAST);
    return ncclSuccess;
  }
  NCCLCHECK(cpu_oneshot_connect(comm));
  /* a round's largest piece, ceil(count / n) elements, fits a step */
  size_t per_round = (cpu_step_bytes(cc, t) / es) * (size_t)n;
  if (cpu_prof_wanted(comm, t)) prof_twoshot(comm, t, per_round);
  size_t first = t->count < per_round ? t->count : per_round; /* the largest round */
  size_t max_piece = (first + n - 1) / n * es;
  int keep = t->sendbuff == t->recvbuff && me != 0;
  unsigned char state_small[64], *state = n <= 64 ? state_small : malloc((size_t)n);
  /* the sizes the cost model gives the two-shot need no allocation */
  char copy_small[16384], *copy = NULL;
  if (keep) copy = max_piece <= sizeof copy_small ? copy_small : malloc(max_piece);
  ncclResult_t res = ncclSuccess;
  if (state == NULL || (keep && copy == NULL)) {
    WARN("%s #%llu on rank %d: out of host memory", coll_name(t->coll), (unsigned long long)t->seq,
         me);
    res = ncclSystemError;
    goto out;
  }
  for (size_t done = 0; done < t->count; done += per_round) {
    struct round r;
    r.count = t->count - done < per_round ? t->count - done : per_round;
    r.es = es;
    r.in = (const char*)t->sendbuff + done * es;
    r.out = (char*)t->recvbuff + done * es;
    size_t lo, hi;
    twoshot_piece(r.count, n, me, &lo, &hi);
    r.mine = keep ? memcpy(copy, r.in + lo * es, (hi - lo) * es) : r.in + lo * es;
    NCCLCHECKGOTO(round_run(comm, t, &r, state), res, out);
  }
out:
  if (copy != copy_small) free(copy);
  if (state != state_small) free(state);
  return res;
}
