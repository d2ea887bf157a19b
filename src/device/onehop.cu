/* One hop over the point-to-point FIFOs (dev.h, dev_onehop_args): AllReduce, AllGather,
 * ReduceScatter, Broadcast and Reduce of small buffers on a comm with a peer across the network,
 * where a ring step costs a trip through both proxies and the network, so the ring's n-1 or
 * 2(n-1) steps cost as many trips. Here every rank sends what each peer needs of its input at
 * once, then folds or copies what it received:
 *
 *   r0: x0 --slot--> r1         r1: x1 --slot--> r0          (both at once: one trip)
 *   AllReduce:     r0, r1: out = x0 + x1 (rank order: the same bits on every rank)
 *   AllGather:     r0, r1: out = x0 | x1 (rank r's piece at r x bytes)
 *   ReduceScatter: r sends piece p of its input to p; out = piece r of x0 + ... + x(n-1)
 *   Broadcast:     the root sends to every peer, the others copy its slot
 *   Reduce:        every peer sends to the root, which folds the n inputs
 *
 * Who sends to whom (onehop_sends): everyone to everyone, but only the root for Broadcast and
 * only to the root for Reduce; a rank receives from r exactly when r sends to it, so both ends
 * of every pair take one step on channel 0, and gpu/peers.c connects the same pairs.
 * Worked step (AllReduce, 3 ranks, r1): send x1 to r2 and r0 (channel 0 FIFOs), say it wants one
 * step from each, wait for both tails, out[i] = (x0[i] + x1[i]) + x2[i] with x0 and x2 read from
 * the slots, then release both slots (head).
 * Every peer at once: a slot in pinned host memory costs a trip over the bus for each wait, fence
 * and uncached load, so thread p waits for peer p's free slot and publishes its step, the block
 * fills all slots together, thread r waits for sender r's tail, and each thread of the fold has
 * the loads of up to ONEHOP_BATCH sources in flight. Peer after peer, the sends of one 8-byte
 * AllReduce on 8 hosts reached the proxy spread over 47 us (a traced run: 111 us an operation);
 * in one A/B call it took 99.8 us peer after peer and 75.6 us at once (docs/PERFORMANCE.md, "The
 * one hop of every collective").
 * Cost: one trip (alpha) plus (n-1) x bytes sent or received by a rank (bytes: the count
 * argument's; the root's for Broadcast and Reduce): it wins while that is small
 * (MONEL_NET_ONEHOP_MAX, gpu/caps.c). Preconditions: count * size <= slot_bytes (one slot per
 * peer); at most DEV_MAX_PEERS ranks. In place is safe: a rank sends before it writes out, and each
 * thread of the fold reads its own input's element i before it writes out[i] (ReduceScatter in
 * place: out is the input's piece of this rank, which goes to no peer). */
#include "device/dev.h"
#include "device/prims.cuh"

/* Whether rank `from` sends to rank `to` in the one hop of coll (from != to). */
__device__ static inline bool onehop_sends(int coll, int from, int to, int root) {
  return coll == DEV_BROADCAST ? from == root : coll == DEV_REDUCE ? to == root : true;
}

/* Whether my slots from peer r are pinned host memory (read uncached). */
__device__ static inline bool onehop_uncached(const struct dev_onehop_args& a, int r) {
  return (a.sysmem >> r & 1) != 0 && a.slot_delta[r] == 0;
}

/* Loads of as many sources as this in flight per thread: a slot in host memory answers after a
 * trip over the bus, so the sources of one element are fetched together, then folded in order. */
#define ONEHOP_BATCH 8

/* out[i] = src_0[i] op ... op src_{n-1}[i], in rank order (elem: the one-shot kernel's fold),
 * src[me] my own input (plain loads), the others slots; 8 bytes a thread while the buffers allow,
 * elements after that. */
template <typename T, int OP>
__device__ static void fold(const struct dev_onehop_args& a, const char* const* src, T* out) {
  const int n = a.nranks, me = a.rank, tid = threadIdx.x, nt = blockDim.x;
  const int E = 8 / sizeof(T);
  union line {
    unsigned long long u;
    T e[8 / sizeof(T)];
  };
  const T s = load_scalar<T>(a.device_scalar, a.scalar);
  const size_t bytes = a.count * sizeof(T);
  const bool wide = (((uintptr_t)src[me] | (uintptr_t)out) & 7) == 0;
  const size_t nl = wide ? bytes / 8 : 0;
  for (size_t i = tid; i < nl; i += nt) {
    union line acc, x[ONEHOP_BATCH];
    for (int r0 = 0; r0 < n; r0 += ONEHOP_BATCH) {
#pragma unroll
      for (int j = 0; j < ONEHOP_BATCH; j++) {
        const int r = r0 + j;
        if (r >= n) break;
        const unsigned long long* p = (const unsigned long long*)src[r] + i;
        x[j].u = r == me ? *p : ld_slot(p, onehop_uncached(a, r));
      }
#pragma unroll
      for (int j = 0; j < ONEHOP_BATCH; j++) {
        const int r = r0 + j;
        if (r >= n) break;
#pragma unroll
        for (int e = 0; e < E; e++)
          acc.e[e] = elem<T, OP>(acc.e[e], x[j].e[e], r > 0, true, r == n - 1, s, n);
      }
    }
    ((unsigned long long*)out)[i] = acc.u;
  }
  for (size_t i = nl * E + tid; i < a.count; i += nt) {
    T acc = T(), x[ONEHOP_BATCH];
    for (int r0 = 0; r0 < n; r0 += ONEHOP_BATCH) {
#pragma unroll
      for (int j = 0; j < ONEHOP_BATCH; j++) {
        const int r = r0 + j;
        if (r >= n) break;
        const T* p = (const T*)src[r] + i;
        x[j] = r == me ? *p : ld_fifo(p, onehop_uncached(a, r));
      }
#pragma unroll
      for (int j = 0; j < ONEHOP_BATCH; j++) {
        const int r = r0 + j;
        if (r >= n) break;
        acc = elem<T, OP>(acc, x[j], r > 0, true, r == n - 1, s, n);
      }
    }
    out[i] = acc;
  }
}

/* out + (r - lo) x bytes = src[r] for the ranks lo <= r < hi but where they are the same bytes (in
 * place): the lines of all of them spread over the threads at once, each from a slot (pinned
 * host memory read uncached) or my own input. AllGather: every rank; Broadcast: the root. */
__device__ static void gather(const struct dev_onehop_args& a, const char* const* src, int lo,
                              int hi, char* out, size_t bytes) {
  const int tid = threadIdx.x, nt = blockDim.x;
  bool wide = bytes % 8 == 0 && ((uintptr_t)out & 7) == 0;
  for (int r = lo; r < hi; r++) wide = wide && ((uintptr_t)src[r] & 7) == 0;
  const size_t unit = wide ? 8 : 1, per = bytes / unit, total = per * (size_t)(hi - lo);
  for (size_t j = tid; j < total; j += nt) {
    const int r = lo + (int)(j / per);
    const size_t i = j % per;
    char* dst = out + (size_t)(r - lo) * bytes;
    if (src[r] == dst) continue;
    const bool sys = r != a.rank && onehop_uncached(a, r);
    if (wide)
      ((unsigned long long*)dst)[i] = ld_slot((const unsigned long long*)src[r] + i, sys);
    else
      dst[i] = (char)ld_slot((const unsigned char*)src[r] + i, sys);
  }
}

/* My input into the slots of every peer I send to (the send phase's copy): the units (16 bytes
 * where every end allows, else 8, else 1) of all of them spread over the threads at once. slot[p]
 * for those peers, NULL for the others; ReduceScatter sends peer p its piece. */
__device__ static void scatter(const struct dev_onehop_args& a, char* const* slot, size_t bytes) {
  const int tid = threadIdx.x, nt = blockDim.x, n = a.nranks, me = a.rank;
  const bool pieces = a.coll == DEV_REDUCESCATTER;
  const char* in = (const char*)a.in;
  uintptr_t al = (uintptr_t)in | bytes;
  for (int p = 0; p < n; p++) al |= (uintptr_t)slot[p];
  const size_t unit = (al & 15) == 0 ? 16 : (al & 7) == 0 ? 8 : 1, per = bytes / unit;
  const size_t total = per * (size_t)(n - 1);
  for (size_t j = tid; j < total; j += nt) {
    const int p = (me + 1 + (int)(j / per)) % n;
    const size_t i = j % per;
    if (slot[p] == NULL) continue;
    const char* from = in + (pieces ? (size_t)p * bytes : 0);
    if (unit == 16)
      ((int4*)slot[p])[i] = ((const int4*)from)[i];
    else if (unit == 8)
      ((unsigned long long*)slot[p])[i] = ((const unsigned long long*)from)[i];
    else
      slot[p][i] = from[i];
  }
}

template <typename T, int OP>
__global__ void __launch_bounds__(DEV_NTHREADS, 1) onehop_kernel(struct dev_onehop_args a) {
  __shared__ struct fifo_state st[DEV_MAX_PEERS];
  __shared__ const char* src[DEV_MAX_PEERS];
  __shared__ char* slot[DEV_MAX_PEERS];
  __shared__ int aborted;
  const int n = a.nranks, me = a.rank, tid = threadIdx.x, coll = a.coll, root = a.root;
  const size_t bytes = a.count * sizeof(T);
  const char* in = (const char*)a.in;
  block_started(&a.ctl);
  if (tid == 0) aborted = 0;
  if (tid < n) { /* thread r: peer r's channel 0 counters and where its slot is */
    const int r = tid;
    const uint64_t* w = a.steps + DEV_STEP_WORDS * (size_t)r * a.nch;
    st[r].sent = w[0], st[r].recvd = w[1], st[r].head_seen = w[2], st[r].aborted = 0;
    src[r] = r == me ? (coll == DEV_REDUCESCATTER ? in + (size_t)me * bytes : in)
                     : a.recv_fifo[r] + a.slot_delta[r] + DEV_FIFO_HEADER +
                           (w[1] % a.nslots) * a.slot_bytes;
  }
  __syncthreads();
  /* What each peer needs of my input (ReduceScatter: its piece), all peers at once: thread p
   * waits for a free slot of peer p, the block fills them, thread p records the size and
   * publishes the step. */
  if (tid < n && tid != me && onehop_sends(coll, me, tid, root)) {
    struct fifo_state* cs = &st[tid];
    const char* fifo = a.send_fifo[tid];
    unsigned spins = 0;
    while (cs->sent + 1 > cs->head_seen + (uint64_t)a.nslots) {
      cs->head_seen = ld_volatile((const uint64_t*)(fifo + DEV_FIFO_HEAD));
      if (wait_aborted(a.ctl.abort, &spins)) {
        aborted = 1;
        break;
      }
    }
    slot[tid] = a.send_fifo[tid] + a.slot_delta[tid] + DEV_FIFO_HEADER +
                (cs->sent % (uint64_t)a.nslots) * a.slot_bytes;
  } else if (tid < n) {
    slot[tid] = NULL;
  }
  __syncthreads();
  if (aborted) goto out;
  scatter(a, slot, bytes);
  __threadfence_system();
  __syncthreads();
  if (tid < n && slot[tid] != NULL) { /* I sent to peer tid */
    char* fifo = a.send_fifo[tid];
    st_volatile((uint64_t*)(fifo + DEV_FIFO_SIZES + 8 * (st[tid].sent % (uint64_t)a.nslots)),
                (uint64_t)bytes);
    __threadfence_system();
    st_volatile((uint64_t*)(fifo + DEV_FIFO_TAIL), ++st[tid].sent);
  }
  /* Every sender's input, a thread per peer: say which step I want (for the proxy), then wait
   * for its tail. */
  if (tid < n && tid != me && onehop_sends(coll, tid, me, root)) {
    const int r = tid;
    st_volatile((uint64_t*)(a.recv_fifo[r] + DEV_FIFO_WANT), st[r].recvd + 1);
    const uint64_t* tail = (const uint64_t*)(a.recv_fifo[r] + DEV_FIFO_TAIL);
    unsigned spins = 0;
    while (ld_volatile(tail) < st[r].recvd + 1)
      if (wait_aborted(a.ctl.abort, &spins)) {
        aborted = 1;
        break;
      }
    __threadfence_system();
  }
  __syncthreads();
  if (aborted) goto out;
  if (coll == DEV_ALLGATHER) {
    gather(a, src, 0, n, (char*)a.out, bytes);
  } else if (coll == DEV_BROADCAST) {
    gather(a, src, root, root + 1, (char*)a.out, bytes);
  } else if (coll != DEV_REDUCE || me == root) {
    fold<T, OP>(a, src, (T*)a.out);
  }
  __syncthreads();
  /* Release the slots, a thread per peer; the counters carry over to the next launch. */
  if (tid < n && tid != me) {
    const int r = tid;
    __threadfence();
    if (onehop_sends(coll, r, me, root))
      st_volatile((uint64_t*)(a.recv_fifo[r] + DEV_FIFO_HEAD), ++st[r].recvd);
    uint64_t* w = a.steps + DEV_STEP_WORDS * (size_t)r * a.nch;
    w[0] = st[r].sent, w[1] = st[r].recvd, w[2] = st[r].head_seen;
  }
out:
  block_finished(&a.ctl);
}

#define ONEHOP_LAUNCH(T, OP)                                                                       \
  if (ex) return dev_launch_by(ex, onehop_kernel<T, OP>, 1, DEV_NTHREADS, a, stream);              \
  onehop_kernel<T, OP><<<1, DEV_NTHREADS, 0, stream>>>(*a);                                        \
  return cudaGetLastError();

extern "C" cudaError_t dev_onehop_launch(const struct dev_onehop_args* a, cudaStream_t stream,
                                         const struct dev_launch_ex* ex) {
  DEV_SWITCH_TYPE(a->dtype, a->op, ONEHOP_LAUNCH)
}

#define ONEHOP_PRELOAD(T, OP) return dev_preload_fn(onehop_kernel<T, OP>);

/* See dev_ring_preload. */
extern "C" cudaError_t dev_onehop_preload(int dtype, int op) {
  DEV_SWITCH_TYPE(dtype, op, ONEHOP_PRELOAD)
}
