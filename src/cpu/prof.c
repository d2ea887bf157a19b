/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU engine's ProxyOp and ProxyStep events (cpu/prof.h). A FIFO's messages are numbered by
 * its position counter (conn.pos): the operations declared on it own consecutive ranges of
 * them, in the order they move them. At most nslots steps of a FIFO are open at once (a sender's
 * posted slots whose send is not seen complete, a receiver's slots from the one it reads next),
 * so their handles live in a ring indexed by message number. Everything runs on the thread
 * that runs the operation, except what the network does with the steps' references: a step of
 * an operation that asks for NetPlugin events is published in the link's table for its slot
 * (conn.net_phandles) while it is open, so that the proxy thread gives it to the slot's
 * isend/irecv and the net plugin's events under it reach the profiler (core/profiler.h). */
#include <stdlib.h>
#include "core/profiler_abi.h"
#include "cpu/cpu.h"
#include "util/check.h"

struct prof_op {
  struct prof_op* next;
  const struct task* task;
  void* h;                /* the ProxyOp handle (NULL: the plugin gave none) */
  uint32_t first, nsteps; /* messages [first, first + nsteps) of the FIFO */
  uint32_t stopped;       /* steps stopped so far */
  int net;                /* its steps are published for NetPlugin events */
};

struct conn_prof {
  struct conn_prof* next; /* in the comm's list (cpu_comm.prof_conns) */
  struct conn* c;
  struct ncclComm* comm;
  int is_send;
  struct prof_op *ops, *last; /* declared, in message order; the first is the oldest open */
  uint32_t end;               /* the message after the last declared one */
  uint32_t lo;                /* the oldest message whose step is open (or not yet started) */
  void* step[FIFO_MAX_SLOTS];
  struct prof_op* step_op[FIFO_MAX_SLOTS]; /* NULL: no step open for that message */
  unsigned char taken[FIFO_MAX_SLOTS];
  unsigned char published[FIFO_MAX_SLOTS];      /* its ref is in the link's table */
  struct profiler_step_ref ref[FIFO_MAX_SLOTS]; /* what the network gets for it */
};

static struct prof_op* op_of(struct conn_prof* p, uint32_t m) {
  for (struct prof_op* op = p->ops; op != NULL; op = op->next)
    if (m - op->first < op->nsteps) return op;
  return NULL;
}

static void step_start(struct conn_prof* p, uint32_t m, int state, size_t bytes) {
  struct prof_op* op = op_of(p, m);
  if (op == NULL) return; /* a message of no profiled operation */
  int i = (int)(m % FIFO_MAX_SLOTS);
  p->step[i] = profiler_proxy_step_start(p->comm, op->task, op->h, (int)(m - op->first));
  p->step_op[i] = op;
  p->taken[i] = 0;
  profiler_proxy_state(p->comm, p->step[i], state, bytes);
  if (op->net && p->step[i] != NULL) {
    p->ref[i] = (struct profiler_step_ref){p->comm, p->step[i]};
    p->published[i] = 1;
    __atomic_store_n(&p->c->net_phandles[m % (uint32_t)p->c->nslots], &p->ref[i], __ATOMIC_RELEASE);
  }
}

/* Takes message m's step out of the link's table. */
static void unpublish(struct conn_prof* p, uint32_t m) {
  int i = (int)(m % FIFO_MAX_SLOTS);
  if (!p->published[i]) return;
  p->published[i] = 0;
  __atomic_store_n(&p->c->net_phandles[m % (uint32_t)p->c->nslots], NULL, __ATOMIC_RELEASE);
}

/* Stop message m's step; the operation's last one stops its ProxyOp. Operations end in order. */
static void step_stop(struct conn_prof* p, uint32_t m) {
  int i = (int)(m % FIFO_MAX_SLOTS);
  struct prof_op* op = p->step_op[i];
  if (op == NULL) return;
  unpublish(p, m);
  profiler_proxy_stop(p->comm, p->step[i]);
  p->step[i] = NULL, p->step_op[i] = NULL;
  if (++op->stopped < op->nsteps || op != p->ops) return;
  profiler_proxy_stop(p->comm, op->h);
  p->ops = op->next;
  if (p->ops == NULL) p->last = NULL;
  free(op);
}

void cpu_prof_op(struct ncclComm* comm, const struct task* t, struct conn* c, int is_send,
                 int channel, uint64_t nsteps) {
  struct cpu_comm* cc = comm->engine_state;
  if (c == NULL || c->tr != &net_socket_transport || nsteps == 0) return;
  struct conn_prof* p = c->prof;
  struct prof_op* op = calloc(1, sizeof *op);
  if (p == NULL && op != NULL && (p = calloc(1, sizeof *p)) != NULL) {
    p->c = c, p->comm = comm, p->is_send = is_send;
    p->end = p->lo = c->pos;
    p->next = cc->prof_conns, cc->prof_conns = p;
    c->prof = p;
  }
  if (p == NULL || op == NULL) { /* out of memory: this transfer goes unreported */
    free(op);
    return;
  }
  op->task = t, op->first = p->end, op->nsteps = (uint32_t)nsteps;
  p->end += (uint32_t)nsteps;
  if (p->last)
    p->last->next = op;
  else
    p->ops = op;
  p->last = op;
  /* A task of the same batch that does not ask (its mask differs) keeps its messages, silent. */
  if (cpu_prof_wanted(comm, t)) {
    op->h = profiler_proxy_op_start(comm, t, is_send, c->peer, channel, (int)nsteps,
                                    cpu_step_bytes(comm->engine_state, t));
    op->net = c->net_phandles != NULL && profiler_net_on(comm, t);
  }
  /* A receiver's slots that are free now: their receives are posted. The others start when the
   * slot nslots before them is given back. */
  for (uint32_t m = op->first; !is_send && m != p->end && (int32_t)(m - c->pos) < c->nslots; m++)
    step_start(p, m, PROF_STATE_STEP_RECV_WAIT, c->slot_size);
}

/* Sender: stop the steps whose send completed (head passed them), up to message `upto`. */
static void reap_sent(struct conn_prof* p, uint32_t head, uint32_t upto) {
  while (p->lo != upto && (int32_t)(head - p->lo) > 0) step_stop(p, p->lo++);
}

void cpu_prof_sent(struct conn* c, uint64_t bytes) {
  struct conn_prof* p = c->prof;
  reap_sent(p, __atomic_load_n(&c->ctrl->head, __ATOMIC_ACQUIRE), c->pos);
  step_start(p, c->pos, PROF_STATE_STEP_SEND_WAIT, (size_t)(bytes & FIFO_SIZE_BYTES));
}

void cpu_prof_taken(struct conn* c, uint64_t bytes) {
  struct conn_prof* p = c->prof;
  int i = (int)(c->pos % FIFO_MAX_SLOTS);
  if (p->step_op[i] == NULL || p->taken[i]) return; /* a slot tried again is taken once */
  p->taken[i] = 1;
  profiler_proxy_state(p->comm, p->step[i], PROF_STATE_STEP_RECV_TAKE,
                       (size_t)(bytes & FIFO_SIZE_BYTES));
}

void cpu_prof_released(struct conn* c) {
  struct conn_prof* p = c->prof;
  step_stop(p, c->pos);
  p->lo = c->pos + 1;
  uint32_t m = c->pos + (uint32_t)c->nslots; /* its slot is now free: the receive is posted */
  if ((int32_t)(m - p->end) < 0) step_start(p, m, PROF_STATE_STEP_RECV_WAIT, c->slot_size);
}

ncclResult_t cpu_prof_finish(struct ncclComm* comm, const struct task* t, int ok) {
  struct cpu_comm* cc = comm->engine_state;
  struct wait_ctx w = {comm, t};
  ncclResult_t res = ncclSuccess;
  while (cc->prof_conns != NULL) {
    struct conn_prof* p = cc->prof_conns;
    struct conn* c = p->c;
    if (ok && res == ncclSuccess && p->is_send) {
      res = fifo_send_drain(c, &w);
      if (res == ncclSuccess) reap_sent(p, c->pos, c->pos);
    }
    /* After a failure: whatever is still open ends now, once the proxy thread no longer uses
     * a reference it read to those steps. */
    int published = 0;
    for (uint32_t m = p->lo; m != p->lo + FIFO_MAX_SLOTS; m++) {
      published |= p->published[m % FIFO_MAX_SLOTS];
      unpublish(p, m);
    }
    if (published && c->tr->sync != NULL) c->tr->sync(c);
    for (int i = 0; i < FIFO_MAX_SLOTS; i++)
      if (p->step_op[i] != NULL) profiler_proxy_stop(comm, p->step[i]);
    while (p->ops != NULL) {
      struct prof_op* op = p->ops;
      profiler_proxy_stop(comm, op->h);
      p->ops = op->next;
      free(op);
    }
    cc->prof_conns = p->next;
    c->prof = NULL;
    free(p);
  }
  return res;
}
