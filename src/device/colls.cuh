/* SPDX-License-Identifier: BSD-3-Clause */
/* The ring and tree kernels, each written once over the primitives (prims.cuh prim_step) and
 * instantiated per (protocol, data type) in files that CMakeLists.txt generates (so that the build
 * compiles them side by side); ring.cu picks the instantiation of a launch.
 *
 * Ring (Simple, LL, LL128): AllReduce, Broadcast, Reduce, AllGather and ReduceScatter, each the
 * schedule of its algo/ring*.h header executed by one thread block per channel. The schedules
 * run over ring positions (dev_ring_args): a chunk of AllGather or ReduceScatter named by a
 * position belongs to the rank at that position. Each channel owns a contiguous part of the
 * buffer and streams it block after block through its FIFOs (dev.h): a step moves one chunk of
 * at most what one step of the protocol carries (dev_proto_step_bytes).
 * Offsets: a step names a verb and a chunk; the kernel turns the chunk into an offset in the
 * input and one in the output. AllReduce: both base + chunk*len. ReduceScatter: input
 * chunk*count + base, output base. AllGather: input base, output chunk*count + base. Broadcast
 * and Reduce: one verb for every step, both offsets base.
 *
 * Tree (Simple, LL, LL128): AllReduce, Broadcast and Reduce over the double binary tree of
 * algo/tree.h (dev_tree_args): a block per (channel, tree, direction) runs the verb of its node
 * (tree_up_verb / tree_down_verb) over the chunks of its part (tree_part, tree_chunk), receiving
 * from up to two peers and sending to up to two. Up and down run in different blocks, so the
 * root's results flow down while the sums of later chunks flow up. */
#ifndef MONEL_DEVICE_COLLS_CUH
#define MONEL_DEVICE_COLLS_CUH
#include "algo/ring.h"
#include "algo/ring_allgather.h"
#include "algo/ring_broadcast.h"
#include "algo/ring_reduce.h"
#include "algo/ring_reducescatter.h"
#include "algo/tree.h"
#include "device/dev.h"
#include "device/prims.cuh"

template <int PROTO, typename T, int OP>
__global__ void __launch_bounds__(DEV_NTHREADS, 1) ring_kernel(struct dev_ring_args a) {
  __shared__ struct prim p;
  dev_after_previous();
  const int c = blockIdx.x, n = a.nranks, tid = threadIdx.x;
  const size_t P = 16 / sizeof(T);
  const size_t slot_elems = dev_proto_step_bytes(PROTO, a.slot_bytes) / sizeof(T) / P * P;
  const int* order = a.order;
  T s = load_scalar<T>(a.device_scalar, a.scalar);
  block_started(&a.ctl);
  if (tid == 0) {
    uint64_t* steps = a.steps + DEV_STEP_WORDS * c;
    p.nrecv = p.nsend = 1;
    p.recv[0].fifo = a.ch[c].recv_fifo, p.recv[0].words = steps, p.recv[0].by_tail = a.recv_by_tail;
    p.send[0].fifo = a.ch[c].send_fifo, p.send[0].words = steps, p.send[0].by_tail = a.send_by_tail;
    p.recv[0].delta = a.recv_delta, p.send[0].delta = a.send_delta;
    p.nslots = a.nslots;
    p.slot_bytes = a.slot_bytes;
    p.abort = a.ctl.abort;
    prim_load(&p);
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
        prim_step<PROTO, T, OP>(&p, sp.verb, in, out, base + first, base + first, len, s, n);
        if (p.aborted) goto out;
      }
      base += b.len;
      continue;
    }
    size_t len = rem < slot_elems ? rem : slot_elems;
    if (a.coll == DEV_BROADCAST || a.coll == DEV_REDUCE) {
      enum verb v = a.coll == DEV_BROADCAST ? ring_broadcast_verb(a.pos, n, a.root)
                                            : ring_reduce_verb(a.pos, n, a.root);
      prim_step<PROTO, T, OP>(&p, v, in, out, base, base, len, s, n);
      if (p.aborted) goto out;
    } else if (a.coll == DEV_ALLGATHER) {
      int nsteps = ring_allgather_nsteps(n);
      for (int st = 0; st < nsteps; st++) {
        struct step sp = ring_allgather_step(a.pos, n, st);
        size_t o = ring_part_offset(order, sp.chunk, a.count, base);
        prim_step<PROTO, T, OP>(&p, sp.verb, in, out, base, o, len, s, n);
        if (p.aborted) goto out;
      }
    } else {
      int nsteps = ring_reducescatter_nsteps(n);
      for (int st = 0; st < nsteps; st++) {
        struct step sp = ring_reducescatter_step(a.pos, n, st);
        size_t i = ring_part_offset(order, sp.chunk, a.count, base);
        prim_step<PROTO, T, OP>(&p, sp.verb, in, out, i, base, len, s, n);
        if (p.aborted) goto out;
      }
    }
    base += len;
  }
  if (tid == 0) prim_save(&p);
out:
  block_finished(&a.ctl);
}

/* Connection of a tree block to peer r on point-to-point channel pc. */
__device__ static inline void tree_conn(const struct dev_tree_args& a, int r, int pc, bool send,
                                        struct prim_conn* cn) {
  const struct dev_peer* pe = &a.peers[r]; /* the comm's peer table (dev.h) */
  cn->fifo = (send ? pe->send_fifo : pe->recv_fifo) + (size_t)pc * a.fifo_bytes;
  cn->words = a.steps + DEV_STEP_WORDS * ((size_t)r * a.p2p_nch + pc);
  cn->by_tail = a.all_by_tail || (send ? pe->send_by_tail : pe->recv_hostmem);
  cn->delta = pe->slot_delta;
}

template <int PROTO, typename T, int OP>
__global__ void __launch_bounds__(DEV_TREE_NTHREADS, 2) tree_kernel(struct dev_tree_args a) {
  __shared__ struct prim p;
  dev_after_previous();
  const int dir = blockIdx.x & 1, t = (blockIdx.x >> 1) % a.ntrees,
            c = (blockIdx.x >> 1) / a.ntrees;
  const int pc = c * a.ntrees + t, tid = threadIdx.x;
  const struct tree_node nd = a.node[t];
  const int allreduce = a.coll == DEV_ALLREDUCE;
  enum verb v = VERB_NONE;
  if (dir == 0 && a.coll != DEV_BROADCAST) v = tree_up_verb(&nd, allreduce);
  if (dir == 1 && a.coll != DEV_REDUCE) v = tree_down_verb(&nd, allreduce);
  block_started(&a.ctl);
  if (v == VERB_NONE) goto out;
  {
    const size_t P = 16 / sizeof(T);
    const size_t step_elems = dev_proto_step_bytes(PROTO, a.slot_bytes) / sizeof(T);
    T s = load_scalar<T>(a.device_scalar, a.scalar);
    if (tid == 0) {
      p.nrecv = p.nsend = 0;
      const bool from_children = v == VERB_RECV_REDUCE_SEND || v == VERB_RECV_REDUCE_COPY ||
                                 v == VERB_RECV_REDUCE_COPY_SEND;
      const bool to_children =
          v == VERB_RECV_REDUCE_COPY_SEND || v == VERB_COPY_SEND || v == VERB_RECV_COPY_SEND;
      if (from_children)
        for (int i = 0; i < nd.nchild; i++)
          tree_conn(a, nd.child[i], pc, false, &p.recv[p.nrecv++]);
      if (v == VERB_RECV_COPY_SEND || v == VERB_RECV)
        tree_conn(a, nd.parent, pc, false, &p.recv[p.nrecv++]);
      if (to_children)
        for (int i = 0; i < nd.nchild; i++) tree_conn(a, nd.child[i], pc, true, &p.send[p.nsend++]);
      if (v == VERB_SEND || v == VERB_RECV_REDUCE_SEND)
        tree_conn(a, nd.parent, pc, true, &p.send[p.nsend++]);
      p.nslots = a.nslots;
      p.slot_bytes = a.slot_bytes;
      p.abort = a.ctl.abort;
      prim_load(&p);
    }
    __syncthreads();
    size_t lo, hi;
    tree_part(a.count, a.ntrees * a.nchannels, t * a.nchannels + c, P, &lo, &hi);
    const size_t chunk = tree_chunk(hi - lo, 4096 / sizeof(T), step_elems, P);
    for (size_t at = lo; at < hi; at += chunk) {
      size_t len = hi - at < chunk ? hi - at : chunk;
      prim_step<PROTO, T, OP>(&p, v, (const T*)a.in, (T*)a.out, at, at, len, s, a.nranks);
      if (p.aborted) goto out;
    }
    if (tid == 0) prim_save(&p);
  }
out:
  block_finished(&a.ctl);
}

/* Launchers of one (protocol, data type) pair, defined where COLLS_INSTANTIATE is set (one
 * generated file per pair, CMakeLists.txt) and called by ring.cu's dispatch. */
template <int PROTO, typename T>
cudaError_t colls_ring_launch(const struct dev_ring_args* a, cudaStream_t stream,
                              const struct dev_launch_ex* ex);
template <int PROTO, typename T> cudaError_t colls_ring_preload(int op);
template <int PROTO, typename T>
cudaError_t colls_tree_launch(const struct dev_tree_args* a, cudaStream_t stream,
                              const struct dev_launch_ex* ex);
template <int PROTO, typename T> cudaError_t colls_tree_preload(int op);

#ifdef COLLS_INSTANTIATE
#define RING_LAUNCH(T, OP)                                                                         \
  if (ex)                                                                                          \
    return dev_launch_by(ex, ring_kernel<PROTO, T, OP>, a->nchannels, DEV_NTHREADS, a, stream);    \
  ring_kernel<PROTO, T, OP><<<a->nchannels, DEV_NTHREADS, 0, stream>>>(*a);                        \
  return cudaGetLastError();
#define RING_PRELOAD(T, OP) return dev_preload_fn(ring_kernel<PROTO, T, OP>);
#define TREE_LAUNCH(T, OP)                                                                         \
  if (ex)                                                                                          \
    return dev_launch_by(ex, tree_kernel<PROTO, T, OP>, 2 * a->ntrees * a->nchannels,              \
                         DEV_TREE_NTHREADS, a, stream);                                            \
  tree_kernel<PROTO, T, OP><<<2 * a->ntrees * a->nchannels, DEV_TREE_NTHREADS, 0, stream>>>(*a);   \
  return cudaGetLastError();
#define TREE_PRELOAD(T, OP) return dev_preload_fn(tree_kernel<PROTO, T, OP>);

template <int PROTO, typename T>
cudaError_t colls_ring_launch(const struct dev_ring_args* a, cudaStream_t stream,
                              const struct dev_launch_ex* ex) {
  DEV_SWITCH_OP(T, a->op, RING_LAUNCH)
}
template <int PROTO, typename T> cudaError_t colls_ring_preload(int op) {
  DEV_SWITCH_OP(T, op, RING_PRELOAD)
}
template <int PROTO, typename T>
cudaError_t colls_tree_launch(const struct dev_tree_args* a, cudaStream_t stream,
                              const struct dev_launch_ex* ex) {
  DEV_SWITCH_OP(T, a->op, TREE_LAUNCH)
}
template <int PROTO, typename T> cudaError_t colls_tree_preload(int op) {
  DEV_SWITCH_OP(T, op, TREE_PRELOAD)
}
#define COLLS_INSTANCE(PR, T)                                                                      \
  template cudaError_t colls_ring_launch<PR, T>(const struct dev_ring_args*, cudaStream_t,         \
                                                const struct dev_launch_ex*);                      \
  template cudaError_t colls_ring_preload<PR, T>(int);                                             \
  template cudaError_t colls_tree_launch<PR, T>(const struct dev_tree_args*, cudaStream_t,         \
                                                const struct dev_launch_ex*);                      \
  template cudaError_t colls_tree_preload<PR, T>(int);
#endif
#endif
