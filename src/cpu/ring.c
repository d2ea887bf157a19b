/* Ring algorithms on the CPU engine: the schedule of algo/ring.h executed one FIFO slot per step.
 * A block of the buffer is cut in nranks chunks of at most one slot each, so a step moves one
 * slot and the ring streams block after block through the FIFOs. */
#include <string.h>
#include "algo/ring.h"
#include "core/check.h"
#include "cpu/cpu.h"
#include "util/dtype.h"

struct ring_exec {
  struct conn *send, *recv;
  struct wait_ctx w;
  const char* in;
  char* out;
  size_t esize;
  ncclDataType_t dt;
  const struct red_op* op;
};

/* Execute one verb on the byte range [off, off+len) of the buffers. */
static ncclResult_t exec_verb(struct ring_exec* x, enum verb v, size_t off, size_t len) {
  const void* rslot = NULL;
  void* sslot = NULL;
  size_t rbytes = 0, n = len / x->esize;
  if (v != VERB_SEND && v != VERB_COPY) {
    NCCLCHECK(fifo_recv_slot(x->recv, &x->w, &rslot, &rbytes));
    if (rbytes != len) {
      WARN("%s #%llu on rank %d: received %zu bytes from rank %d where %zu were expected: the ranks "
           "were not given the same count and datatype",
           coll_name(x->w.task->coll), (unsigned long long)x->w.task->seq, x->w.comm->rank, rbytes,
           x->recv->peer, len);
      return ncclInvalidUsage;
    }
  }
  if (v != VERB_RECV && v != VERB_COPY) NCCLCHECK(fifo_send_slot(x->send, &x->w, &sslot));
  switch (v) {
  case VERB_SEND: red_apply(sslot, NULL, x->in + off, n, x->dt, x->op, RED_FIRST); break;
  case VERB_RECV_REDUCE_SEND: red_apply(sslot, rslot, x->in + off, n, x->dt, x->op, 0); break;
  case VERB_RECV_REDUCE_COPY_SEND:
    red_apply(x->out + off, rslot, x->in + off, n, x->dt, x->op, RED_LAST);
    memcpy(sslot, x->out + off, len);
    break;
  case VERB_RECV_COPY_SEND:
    memcpy(x->out + off, rslot, len);
    memcpy(sslot, rslot, len);
    break;
  case VERB_RECV: memcpy(x->out + off, rslot, len); break;
  case VERB_COPY: red_apply(x->out + off, NULL, x->in + off, n, x->dt, x->op, RED_FIRST | RED_LAST); break;
  default: return ncclInternalError;
  }
  if (rslot) fifo_recv_release(x->recv);
  if (sslot) fifo_send_post(x->send, len);
  return ncclSuccess;
}

ncclResult_t cpu_ring_allreduce(struct ncclComm* comm, const struct task* t) {
  struct cpu_comm* cc = comm->engine_state;
  int n = comm->nranks, rank = comm->rank;
  struct ring_exec x = {&cc->ring_send, &cc->ring_recv, {comm, t}, t->sendbuff, t->recvbuff,
                        dtype_size(t->dtype), t->dtype, &t->op};
  size_t count = t->count, slot_elems = cc->slot_size / x.esize;
  int nsteps = ring_allreduce_nsteps(n);
  for (size_t base = 0; base < count;) {
    size_t rem = count - base;
    size_t chunk = (rem + n - 1) / n;
    if (chunk > slot_elems) chunk = slot_elems;
    size_t block = chunk * (size_t)n < rem ? chunk * (size_t)n : rem;
    for (int s = 0; s < nsteps; s++) {
      struct step st = ring_allreduce_step(rank, n, s);
      size_t first = (size_t)st.chunk * chunk, len = 0;
      if (first < block) len = (block - first < chunk ? block - first : chunk);
      NCCLCHECK(exec_verb(&x, st.verb, (base + first) * x.esize, len * x.esize));
    }
    base += block;
  }
  return ncclSuccess;
}
