/* Ring collectives, Simple protocol: AllReduce, Broadcast, Reduce, AllGather and ReduceScatter,
 * each the schedule of its algo/ring*.h header executed by one thread block per channel. The
 * schedules run over ring positions (dev_ring_args): a chunk of AllGather or ReduceScatter named
 * by a position belongs to the rank at that position. Each
 * channel owns a contiguous part of the buffer and streams it block after block through its
 * FIFOs (dev.h): a step moves one chunk of at most one slot.
 *
 * Per step, thread 0 waits (tail from the previous rank for a receive, a free slot at the next
 * rank for a send), the block moves the data with 16-byte loads and stores where every pointer is
 * aligned, each writer fences at system scope, and after a barrier thread 0 publishes the new tail
 * to the next rank and the new head to the previous one. FIFO slots are read with ld.global.cg
 * (L2, never a stale L1 line).
 *
 * Offsets: a step names a verb and a chunk; the kernel turns the chunk into an offset in the
 * input and one in the output. AllReduce: both base + chunk*len. ReduceScatter: input
 * chunk*count + base, output base. AllGather: input base, output chunk*count + base. Broadcast
 * and Reduce: one verb for every step, both offsets base. */
#include "algo/ring.h"
#include "algo/ring_allgather.h"
#include "algo/ring_broadcast.h"
#include "algo/ring_reduce.h"
#include "algo/ring_reducescatter.h"
#include "device/dev.h"
#include "device/prims.cuh"

template <typename T, int OP>
__global__ void __launch_bounds__(DEV_NTHREADS, 1) ring_kernel(struct dev_ring_args a) {
  __shared__ struct fifo_state cs;
  const int c = blockIdx.x, n = a.nranks, tid = threadIdx.x;
  const size_t P = 16 / sizeof(T), slot_elems = a.slot_bytes / sizeof(T);
  struct fifo_ctx rc;
  rc.send_fifo = a.ch[c].send_fifo;
  rc.recv_fifo = a.ch[c].recv_fifo;
  rc.nslots = a.nslots;
  rc.slot_bytes = a.slot_bytes;
  rc.sysmem = a.sysmem != 0;
  rc.abort = a.ctl.abort;
  const int* order = a.order;
  uint64_t* steps = a.steps + DEV_STEP_WORDS * c;
  T s = load_scalar<T>(a.device_scalar, a.scalar);
  block_started(&a.ctl);
  if (tid == 0) {
    cs.sent = steps[0];
    cs.recvd = steps[1];
    cs.head_seen = steps[2];
    cs.aborted = 0;
  }
  __syncthreads();

  /* This channel's part of the range, in whole 16-byte packs except at the very end. */
  size_t per = (a.count + a.nchannels - 1) / a.nchannels;
  per = (per + P - 1) / P * P;
  size_t lo = (size_t)c * per < a.count ? (size_t)c * per : a.count;
  size_t hi = lo + per < a.count ? lo + per : a.count;
  const T* in = (const T*)a.in;
  T* out = (T*)a.out;

  for (size_t base = lo; base < hi;) {
    size_t rem = hi - base;
    if (a.coll == DEV_ALLREDUCE) {
      struct ring_block b = ring_allreduce_block(rem, n, P, slot_elems);
      int nsteps = ring_allreduce_nsteps(n);
      for (int st = 0; st < nsteps; st++) {
        struct step sp = ring_allreduce_step(a.pos, n, st);
        size_t first, len = ring_block_chunk(b, sp.chunk, &first);
        fifo_step<T, OP>(&cs, &rc, sp.verb, in, out, base + first, base + first, len, s, n);
        if (cs.aborted) goto out;
      }
      base += b.len;
      continue;
    }
    size_t len = rem < slot_elems ? rem : slot_elems;
    if (a.coll == DEV_BROADCAST || a.coll == DEV_REDUCE) {
      enum verb v = a.coll == DEV_BROADCAST ? ring_broadcast_verb(a.pos, n, a.root)
                                            : ring_reduce_verb(a.pos, n, a.root);
      fifo_step<T, OP>(&cs, &rc, v, in, out, base, base, len, s, n);
      if (cs.aborted) goto out;
    } else if (a.coll == DEV_ALLGATHER) {
      int nsteps = ring_allgather_nsteps(n);
      for (int st = 0; st < nsteps; st++) {
        struct step sp = ring_allgather_step(a.pos, n, st);
        size_t o = ring_part_offset(order, sp.chunk, a.count, base);
        fifo_step<T, OP>(&cs, &rc, sp.verb, in, out, base, o, len, s, n);
        if (cs.aborted) goto out;
      }
    } else {
      int nsteps = ring_reducescatter_nsteps(n);
      for (int st = 0; st < nsteps; st++) {
        struct step sp = ring_reducescatter_step(a.pos, n, st);
        size_t i = ring_part_offset(order, sp.chunk, a.count, base);
        fifo_step<T, OP>(&cs, &rc, sp.verb, in, out, i, base, len, s, n);
        if (cs.aborted) goto out;
      }
    }
    base += len;
  }
  if (tid == 0) {
    steps[0] = cs.sent;
    steps[1] = cs.recvd;
    steps[2] = cs.head_seen;
  }
out:
  block_finished(&a.ctl);
}

#define RING_LAUNCH(T, OP)                                                                         \
  ring_kernel<T, OP><<<a->nchannels, DEV_NTHREADS, 0, stream>>>(*a);                               \
  return cudaGetLastError();

extern "C" cudaError_t dev_ring_launch(const struct dev_ring_args* a, cudaStream_t stream) {
  DEV_SWITCH_TYPE(a->dtype, a->op, RING_LAUNCH)
}

/* Load the kernel of (dtype, op) now (dev_preload_fn). */
#define RING_PRELOAD(T, OP) return dev_preload_fn(ring_kernel<T, OP>);

extern "C" cudaError_t dev_ring_preload(int dtype, int op) {
  DEV_SWITCH_TYPE(dtype, op, RING_PRELOAD)
}
