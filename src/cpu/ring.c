/* SPDX-License-Identifier: BSD-3-Clause */
/* Ring algorithms on the CPU engine: the schedules of algo/ring*.h executed one FIFO slot per
 * step. AllReduce cuts a block of the buffer in nranks chunks of at most one slot each;
 * AllGather and ReduceScatter move one slot of each rank's part per step; Broadcast and Reduce
 * stream the buffer slot by slot down a chain.
 *
 * The schedules run on ring positions (comm->ring_pos, comm->ring_order: the ranks of a host are
 * neighbours): a schedule is given my position and the root's position, and its chunk c is the
 * piece of the rank at position c where a chunk is a rank's piece (AllGather output,
 * ReduceScatter input). AllReduce's chunks are only a partition of the buffer and need no map. */
#include <string.h>
#include "algo/ring.h"
#include "algo/ring_allgather.h"
#include "algo/ring_broadcast.h"
#include "algo/ring_reduce.h"
#include "algo/ring_reducescatter.h"
#include "util/check.h"
#include "cpu/cpu.h"
#include "cpu/reduce.h"
#include "util/dtype.h"

struct ring_exec {
  struct conn *send, *recv;
  struct wait_ctx w;
  size_t esize;
  ncclDataType_t dt;
  const struct red_op* op;
  int reduces; /* 0: data moves unchanged (memcpy) */
};

static void copy_bytes(void* dst, const void* src, size_t len) {
  if (dst != src && len) memcpy(dst, src, len);
}

static ncclResult_t recv_slot(struct ring_exec* x, size_t len, const void** rslot) {
  size_t rbytes = 0;
  NCCLCHECK(fifo_recv_slot(x->recv, &x->w, rslot, &rbytes));
  return cpu_check_len(&x->w, rbytes, len, x->recv->peer);
}

/* Execute one verb on `len` bytes: input at `in`, output at `out`. */
static ncclResult_t exec_verb(struct ring_exec* x, enum verb v, const char* in, char* out,
                              size_t len) {
  const void* rslot = NULL;
  void* sslot = NULL;
  size_t n = len / x->esize;
  int traits = verb_traits(v);
  if (traits & VERB_RECVS) NCCLCHECK(recv_slot(x, len, &rslot));
  if (traits & VERB_SENDS) NCCLCHECK(fifo_send_slot(x->send, &x->w, &sslot));
  switch (v) {
  case VERB_SEND:
    if (x->reduces)
      red_apply(sslot, NULL, in, n, x->dt, x->op, RED_FIRST);
    else
      copy_bytes(sslot, in, len);
    break;
  case VERB_RECV_REDUCE_SEND:
    red_apply(sslot, rslot, in, n, x->dt, x->op, 0);
    break;
  case VERB_RECV_REDUCE_COPY_SEND:
    red_apply(out, rslot, in, n, x->dt, x->op, RED_LAST);
    copy_bytes(sslot, out, len);
    break;
  case VERB_RECV_REDUCE_COPY:
    red_apply(out, rslot, in, n, x->dt, x->op, RED_LAST);
    break;
  case VERB_RECV_COPY_SEND:
    copy_bytes(out, rslot, len);
    copy_bytes(sslot, rslot, len);
    break;
  case VERB_RECV:
    copy_bytes(out, rslot, len);
    break;
  case VERB_COPY_SEND:
    copy_bytes(out, in, len);
    copy_bytes(sslot, in, len);
    break;
  case VERB_COPY:
    if (x->reduces)
      red_apply(out, NULL, in, n, x->dt, x->op, RED_FIRST | RED_LAST);
    else
      copy_bytes(out, in, len);
    break;
  default:
    return ncclInternalError;
  }
  if (rslot) fifo_recv_release(x->recv);
  if (sslot) fifo_send_post(x->send, len);
  return ncclSuccess;
}

/* The profiler's ProxyOps of a ring operation (cpu/prof.h): `units` repetitions of a schedule
 * whose verbs send `nsend` and receive `nrecv` slots each. */
static void prof_ring(struct ncclComm* comm, const struct task* t, const struct ring_exec* x,
                      uint64_t units, int nsend, int nrecv) {
  cpu_prof_op(comm, t, x->send, 1, 0, units * (uint64_t)nsend);
  cpu_prof_op(comm, t, x->recv, 0, 0, units * (uint64_t)nrecv);
}

/* Verbs with trait `bit` (VERB_SENDS, VERB_RECVS) in the `nsteps` steps of a schedule. */
static int count_verbs(struct step (*step_of)(int, int, int), int pos, int n, int nsteps, int bit) {
  int k = 0;
  for (int s = 0; s < nsteps; s++) k += (verb_traits(step_of(pos, n, s).verb) & bit) != 0;
  return k;
}

static struct ring_exec make_exec(struct ncclComm* comm, const struct task* t, int reduces) {
  struct cpu_comm* cc = comm->engine_state;
  struct ring_exec x = {cc->ring_send, cc->ring_recv, {comm, t}, dtype_size(t->dtype),
                        t->dtype,      &t->op,        reduces};
  return x;
}

ncclResult_t cpu_ring_allreduce(struct ncclComm* comm, const struct task* t) {
  struct cpu_comm* cc = comm->engine_state;
  int n = comm->nranks, pos = comm->ring_pos[comm->rank];
  struct ring_exec x = make_exec(comm, t, 1);
  const char* in = t->sendbuff;
  char* out = t->recvbuff;
  size_t count = t->count, slot_elems = cpu_step_bytes(cc, t) / x.esize;
  int nsteps = ring_allreduce_nsteps(n);
  if (cpu_prof_wanted(comm, t)) {
    uint64_t blocks = 0;
    for (size_t base = 0; base < count; blocks++)
      base += ring_allreduce_block(count - base, n, 1, slot_elems).len;
    prof_ring(comm, t, &x, blocks, count_verbs(ring_allreduce_step, pos, n, nsteps, VERB_SENDS),
              count_verbs(ring_allreduce_step, pos, n, nsteps, VERB_RECVS));
  }
  for (size_t base = 0; base < count;) {
    struct ring_block b = ring_allreduce_block(count - base, n, 1, slot_elems);
    for (int s = 0; s < nsteps; s++) {
      struct step st = ring_allreduce_step(pos, n, s);
      size_t first, len = ring_block_chunk(b, st.chunk, &first);
      size_t off = (base + first) * x.esize;
      NCCLCHECK(exec_verb(&x, st.verb, in + off, out + off, len * x.esize));
    }
    base += b.len;
  }
  return ncclSuccess;
}

/* Broadcast and Reduce: the same verb for every slot-sized piece of the buffer. */
ncclResult_t cpu_ring_chain(struct ncclComm* comm, const struct task* t) {
  struct cpu_comm* cc = comm->engine_state;
  int reduces = t->coll == COLL_REDUCE;
  struct ring_exec x = make_exec(comm, t, reduces);
  int pos = comm->ring_pos[comm->rank], root_pos = comm->ring_pos[t->root];
  enum verb v = reduces ? ring_reduce_verb(pos, comm->nranks, root_pos)
                        : ring_broadcast_verb(pos, comm->nranks, root_pos);
  const char* in = t->sendbuff;
  char* out = t->recvbuff;
  size_t bytes = t->count * x.esize, piece = cpu_step_bytes(cc, t) / x.esize * x.esize;
  if (cpu_prof_wanted(comm, t))
    prof_ring(comm, t, &x, (bytes + piece - 1) / piece, (verb_traits(v) & VERB_SENDS) != 0,
              (verb_traits(v) & VERB_RECVS) != 0);
  for (size_t off = 0; off < bytes; off += piece) {
    size_t len = bytes - off < piece ? bytes - off : piece;
    NCCLCHECK(exec_verb(&x, v, in ? in + off : NULL, out ? out + off : NULL, len));
  }
  return ncclSuccess;
}

/* AllGather and ReduceScatter: per block, one slot-sized piece of each rank's part. */
ncclResult_t cpu_ring_gather_scatter(struct ncclComm* comm, const struct task* t) {
  struct cpu_comm* cc = comm->engine_state;
  int n = comm->nranks, pos = comm->ring_pos[comm->rank], ag = t->coll == COLL_ALLGATHER;
  struct ring_exec x = make_exec(comm, t, !ag);
  const char* in = t->sendbuff;
  char* out = t->recvbuff;
  size_t part = t->count * x.esize, piece = cpu_step_bytes(cc, t) / x.esize * x.esize;
  int nsteps = ag ? ring_allgather_nsteps(n) : ring_reducescatter_nsteps(n);
  if (cpu_prof_wanted(comm, t)) {
    struct step (*step_of)(int, int, int) = ag ? ring_allgather_step : ring_reducescatter_step;
    prof_ring(comm, t, &x, (part + piece - 1) / piece,
              count_verbs(step_of, pos, n, nsteps, VERB_SENDS),
              count_verbs(step_of, pos, n, nsteps, VERB_RECVS));
  }
  for (size_t off = 0; off < part; off += piece) {
    size_t len = part - off < piece ? part - off : piece;
    for (int s = 0; s < nsteps; s++) {
      struct step st = ag ? ring_allgather_step(pos, n, s) : ring_reducescatter_step(pos, n, s);
      /* AllGather: input is my part, output holds every part; ReduceScatter: the reverse. */
      size_t parts = ring_part_offset(comm->ring_order, st.chunk, part, off);
      const char* pin = ag ? in + off : in + parts;
      char* pout = ag ? out + parts : out + off;
      NCCLCHECK(exec_verb(&x, st.verb, pin, pout, len));
    }
  }
  return ncclSuccess;
}
