/* SPDX-License-Identifier: BSD-3-Clause */
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
 * the loads of up to ONEHOP_BATCH sources in flight; with more peers than threads, thread t
 * serves peers t, t + blockDim, ... in turn. Peer after peer, the sends of one 8-byte AllReduce
 * on 8 hosts reached the proxy spread over a large part of the operation's time, and every peer
 * at once was faster in an A/B (docs/PERFORMANCE.md at 212cdd8, "The one hop of every
 * collective"). Every peer's state (counters, source, slot, whether it is read uncached) lives in
 * dynamic shared memory sized by the comm (dev.h dev_onehop_smem); the FIFOs come from the comm's
 * peer table in device memory.
 * Cost: one trip (alpha) plus (n-1) x bytes sent or received by a rank (bytes: the count
 * argument's; the root's for Broadcast and Reduce): it wins while that is small
 * (MONEL_NET_ONEHOP_MAX, gpu/caps.c). Preconditions: count * size <= slot_bytes (one slot per
 * peer); dev_onehop_smem(nranks) bytes of shared memory for the block. In place is safe: a rank
 * sends before it writes out, and each thread of the fold reads its own input's element i before
 * it writes out[i] (ReduceScatter in place: out is the input's piece of this rank, which goes to
 * no peer). */
#include "algo/doubling.h"
#include "device/dev.h"
#include "device/prims.cuh"

/* Whether rank `from` sends to rank `to` in the one hop of coll (from != to). */
__device__ static inline bool onehop_sends(int coll, int from, int to, int root) {
  return coll == DEV_BROADCAST ? from == root : coll == DEV_REDUCE ? to == root : true;
}

/* The block's per-peer state in dynamic shared memory, nranks of each, one array after the other:
 * counters, sources, slots, then a byte each saying whether my slots from the peer are pinned
 * host memory (read uncached). */
extern __shared__ __align__(16) char onehop_smem[];
static_assert(sizeof(struct fifo_state) + 2 * sizeof(char*) + 1 <= DEV_ONEHOP_PEER_BYTES,
              "dev.h DEV_ONEHOP_PEER_BYTES holds a peer's state");
__device__ static inline struct fifo_state* onehop_st(int n) {
  return (struct fifo_state*)onehop_smem;
}
__device__ static inline const char** onehop_src(int n) {
  return (const char**)(onehop_smem + (size_t)n * sizeof(struct fifo_state));
}
__device__ static inline char** onehop_slot(int n) {
  return (char**)(onehop_smem + (size_t)n * (sizeof(struct fifo_state) + sizeof(char*)));
}
__device__ static inline unsigned char* onehop_unc(int n) {
  return (unsigned char*)(onehop_smem +
                          (size_t)n * (sizeof(struct fifo_state) + 2 * sizeof(char*)));
}

__device__ static inline bool onehop_uncached(const struct dev_onehop_args& a, int r) {
  return onehop_unc(a.nranks)[r] != 0;
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
    const bool uncached = r != a.rank && onehop_uncached(a, r);
    if (wide)
      ((unsigned long long*)dst)[i] = ld_slot((const unsigned long long*)src[r] + i, uncached);
    else
      dst[i] = (char)ld_slot((const unsigned char*)src[r] + i, uncached);
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

/* The FIFO steps of channel 0 with peer q, each run by thread q (st: its counters):
 * send_slot waits for a free slot of q's FIFO and returns it (NULL after an abort); publish, after
 * a barrier, records the slot's bytes and moves the tail behind a system fence, which orders the
 * whole block's stores before it;
 * recv_wait says which step the kernel wants (for q's proxy) and waits for q's tail (0 after an
 * abort); release frees the slot once the block read it. */
__device__ static char* send_slot(const struct dev_onehop_args& a, struct fifo_state* cs, int q) {
  char* fifo = a.peers[q].send_fifo;
  unsigned spins = 0;
  while (cs->sent + 1 > cs->head_seen + (uint64_t)a.nslots) {
    cs->head_seen = ld_volatile((const uint64_t*)(fifo + DEV_FIFO_HEAD));
    if (wait_aborted(a.ctl.abort, &spins)) return NULL;
  }
  return fifo + a.peers[q].slot_delta + DEV_FIFO_HEADER +
         (cs->sent % (uint64_t)a.nslots) * a.slot_bytes;
}

__device__ static void publish(const struct dev_onehop_args& a, struct fifo_state* cs, int q,
                               size_t bytes) {
  char* fifo = a.peers[q].send_fifo;
  st_volatile((uint64_t*)(fifo + DEV_FIFO_SIZES + 8 * (cs->sent % (uint64_t)a.nslots)),
              (uint64_t)bytes);
  __threadfence_system();
  st_volatile((uint64_t*)(fifo + DEV_FIFO_TAIL), ++cs->sent);
}

__device__ static int recv_wait(const struct dev_onehop_args& a, struct fifo_state* cs, int q) {
  char* fifo = a.peers[q].recv_fifo;
  if (tail_reached(fifo, cs->recvd + 1)) return 1;
  const uint64_t* tail = (const uint64_t*)(fifo + DEV_FIFO_TAIL);
  unsigned spins = 0;
  while (ld_acquire_sys(tail) < cs->recvd + 1)
    if (wait_aborted(a.ctl.abort, &spins)) return 0;
  return 1;
}

__device__ static void release(const struct dev_onehop_args& a, struct fifo_state* cs, int q) {
  __threadfence();
  st_volatile((uint64_t*)(a.peers[q].recv_fifo + DEV_FIFO_HEAD), ++cs->recvd);
}

/* Where the next step from q lies in my FIFO. */
__device__ static const char* recv_slot(const struct dev_onehop_args& a,
                                        const struct fifo_state* cs, int q) {
  return a.peers[q].recv_fifo + a.peers[q].slot_delta + DEV_FIFO_HEADER +
         (cs->recvd % (uint64_t)a.nslots) * a.slot_bytes;
}

template <typename T, int OP> __device__ static inline T pre_of(T x, bool raw, T s) {
  return OP == RED_PREMULSUM && raw ? red_prod(x, s) : x;
}

/* out[i] = pre(lo[i]) op pre(hi[i]) (pre where raw: an input; post, AVG's division, where post),
 * a source in a slot read with ld_slot (uncached: pinned host memory), the other with plain loads
 * (my input, or out as this block wrote it); 8 bytes a thread while the buffers allow. In place is
 * safe: each thread reads element i of both before it writes out[i]. */
template <typename T, int OP>
__device__ static void fold2(const T* lo, bool lo_raw, bool lo_slot, const T* hi, bool hi_raw,
                             bool hi_slot, bool uncached, T* out, size_t count, bool post, T s,
                             int n) {
  const int tid = threadIdx.x, nt = blockDim.x, E = 8 / sizeof(T);
  union line {
    unsigned long long u;
    T e[8 / sizeof(T)];
  };
  const bool wide = (((uintptr_t)lo | (uintptr_t)hi | (uintptr_t)out) & 7) == 0;
  const size_t nl = wide ? count / E : 0;
  for (size_t i = tid; i < nl; i += nt) {
    const unsigned long long *pl = (const unsigned long long*)lo + i,
                             *ph = (const unsigned long long*)hi + i;
    union line x, y, v;
    x.u = lo_slot ? ld_slot(pl, uncached) : *pl;
    y.u = hi_slot ? ld_slot(ph, uncached) : *ph;
#pragma unroll
    for (int e = 0; e < E; e++) {
      v.e[e] = combine<T, OP>(pre_of<T, OP>(x.e[e], lo_raw, s), pre_of<T, OP>(y.e[e], hi_raw, s));
      if (OP == RED_AVG && post) v.e[e] = red_div(v.e[e], n);
    }
    ((unsigned long long*)out)[i] = v.u;
  }
  for (size_t i = nl * E + tid; i < count; i += nt) {
    T x = lo_slot ? ld_fifo(lo + i, uncached) : lo[i],
      y = hi_slot ? ld_fifo(hi + i, uncached) : hi[i];
    T v = combine<T, OP>(pre_of<T, OP>(x, lo_raw, s), pre_of<T, OP>(y, hi_raw, s));
    if (OP == RED_AVG && post) v = red_div(v, n);
    out[i] = v;
  }
}

/* The thread that runs peer q's FIFO steps: q itself, or q modulo the block's threads. */
__device__ static inline bool serves(int q) {
  return (int)threadIdx.x == q % (int)blockDim.x;
}

/* A hop of recursive doubling with peer q, the whole block: hop_send puts len bytes of from into
 * q's next slot and publishes it; hop_recv waits for q's next step and returns its slot; hop_done
 * frees that slot once the block has read it. 0 / NULL after an abort. */
__device__ static int hop_send(const struct dev_onehop_args& a, struct fifo_state* st, char** slot,
                               int q, const void* from, size_t len, int* aborted) {
  if (serves(q) && (slot[q] = send_slot(a, &st[q], q)) == NULL) *aborted = 1;
  __syncthreads();
  if (*aborted) return 0;
  copy_any((const uint8_t*)from, (uint8_t*)slot[q], NULL, len, false);
  __syncthreads();
  if (serves(q)) publish(a, &st[q], q, len);
  return 1;
}

__device__ static const char* hop_recv(const struct dev_onehop_args& a, struct fifo_state* st,
                                       int q, int* aborted) {
  if (serves(q) && !recv_wait(a, &st[q], q)) *aborted = 1;
  __syncthreads();
  return *aborted ? NULL : recv_slot(a, &st[q], q);
}

__device__ static void hop_done(const struct dev_onehop_args& a, struct fifo_state* st, int q) {
  __syncthreads();
  if (serves(q)) release(a, &st[q], q);
}

/* AllReduce by recursive doubling (algo/doubling.h): a hop at a time, each with one peer, the
 * value between hops in out. 0 after an abort. */
template <typename T, int OP>
__device__ static int reduce_doubling(const struct dev_onehop_args& a, struct fifo_state* st,
                                      char** slot, int* aborted) {
  const int n = a.nranks, me = a.rank;
  const size_t bytes = a.count * sizeof(T);
  const T s = load_scalar<T>(a.device_scalar, a.scalar);
  T* out = (T*)a.out;
  for (int h = 0; h < doubling_nhops(me, n); h++) {
    const struct doubling_hop d = doubling_hop_of(me, n, h);
    const int q = d.peer;
    const T* mine = d.mine_raw ? (const T*)a.in : out;
    if (doubling_sends(d.kind) && !hop_send(a, st, slot, q, mine, bytes, aborted)) return 0;
    if (!doubling_receives(d.kind)) continue;
    const T* theirs = (const T*)hop_recv(a, st, q, aborted);
    if (theirs == NULL) return 0;
    const bool uncached = onehop_uncached(a, q);
    if (d.kind == DOUBLING_GIVE)
      copy_any((const uint8_t*)theirs, (uint8_t*)out, NULL, bytes, uncached);
    else if (d.mine_lower)
      fold2<T, OP>(mine, d.mine_raw, false, theirs, d.theirs_raw, true, uncached, out, a.count,
                   d.last, s, n);
    else
      fold2<T, OP>(theirs, d.theirs_raw, true, mine, d.mine_raw, false, uncached, out, a.count,
                   d.last, s, n);
    hop_done(a, st, q);
  }
  return 1;
}

/* AllGather by recursive doubling on a power of two (algo/doubling.h): my piece into place, then
 * in round k my block of 2^k pieces to me ^ 2^k and its block into place. 0 after an abort. */
__device__ static int gather_doubling(const struct dev_onehop_args& a, struct fifo_state* st,
                                      char** slot, int* aborted) {
  const int n = a.nranks, me = a.rank;
  const size_t bytes = a.count; /* AllGather's count is in bytes here (dev_onehop_args) */
  char* out = (char*)a.out;
  if (out + (size_t)me * bytes != (const char*)a.in)
    copy_any((const uint8_t*)a.in, (uint8_t*)out + (size_t)me * bytes, NULL, bytes, false);
  for (int k = 0; (1 << k) < n; k++) {
    const int q = me ^ (1 << k);
    const size_t len = ((size_t)1 << k) * bytes;
    const void* from = k == 0 ? a.in : out + (size_t)doubling_gather_first(me, k) * bytes;
    if (!hop_send(a, st, slot, q, from, len, aborted)) return 0;
    const char* theirs = hop_recv(a, st, q, aborted);
    if (theirs == NULL) return 0;
    copy_any((const uint8_t*)theirs, (uint8_t*)out + (size_t)doubling_gather_first(q, k) * bytes,
             NULL, len, onehop_uncached(a, q));
    hop_done(a, st, q);
  }
  return 1;
}

template <typename T, int OP>
__global__ void __launch_bounds__(DEV_NTHREADS, 1) onehop_kernel(struct dev_onehop_args a) {
  __shared__ int aborted;
  const int n = a.nranks, me = a.rank, tid = threadIdx.x, nt = blockDim.x, coll = a.coll,
            root = a.root;
  struct fifo_state* st = onehop_st(n);
  const char** src = onehop_src(n);
  char** slot = onehop_slot(n);
  unsigned char* unc = onehop_unc(n);
  const size_t bytes = a.count * sizeof(T);
  const char* in = (const char*)a.in;
  dev_after_previous();
  block_started(&a.ctl);
  if (tid == 0) aborted = 0;
  for (int r = tid; r < n; r += nt) { /* peer r's channel 0 counters and where its slot is */
    const uint64_t* w = a.steps + DEV_STEP_WORDS * (size_t)r * a.nch;
    st[r].sent = w[0], st[r].recvd = w[1], st[r].head_seen = w[2], st[r].aborted = 0;
    slot[r] = NULL;
    unc[r] = r != me && a.peers[r].recv_hostmem && a.peers[r].slot_delta == 0;
    src[r] = r == me ? (coll == DEV_REDUCESCATTER ? in + (size_t)me * bytes : in)
                     : recv_slot(a, &st[r], r);
  }
  __syncthreads();
  if (a.doubling) {
    if (coll == DEV_ALLGATHER ? !gather_doubling(a, st, slot, &aborted)
                              : !reduce_doubling<T, OP>(a, st, slot, &aborted))
      goto out;
    goto save;
  }
  /* What each peer needs of my input (ReduceScatter: its piece), all peers at once: the thread of
   * peer p waits for a free slot of it, the block fills them, that thread records the size and
   * publishes the step. */
  for (int p = tid; p < n; p += nt)
    if (p != me && onehop_sends(coll, me, p, root) && (slot[p] = send_slot(a, &st[p], p)) == NULL)
      aborted = 1;
  __syncthreads();
  if (aborted) goto out;
  scatter(a, slot, bytes);
  __syncthreads();
  for (int p = tid; p < n; p += nt)
    if (slot[p] != NULL) publish(a, &st[p], p, bytes); /* I sent to peer p */
  /* Every sender's input, a thread per peer: say which step I want (for the proxy), then wait
   * for its tail. */
  for (int r = tid; r < n; r += nt)
    if (r != me && onehop_sends(coll, r, me, root) && !recv_wait(a, &st[r], r)) aborted = 1;
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
  /* Release the slots, a thread per peer. */
  for (int r = tid; r < n; r += nt)
    if (r != me && onehop_sends(coll, r, me, root)) release(a, &st[r], r);
save: /* the counters carry over to the next launch */
  for (int r = tid; r < n; r += nt) {
    if (r == me) continue;
    uint64_t* w = a.steps + DEV_STEP_WORDS * (size_t)r * a.nch;
    w[0] = st[r].sent, w[1] = st[r].recvd, w[2] = st[r].head_seen;
  }
out:
  block_finished(&a.ctl);
}

/* The block's shared memory grows with the comm: beyond the default (48 KiB) CUDA wants the
 * kernel told first (engine.c checks the GPU's maximum before the one hop is offered). */
template <typename T, int OP> static cudaError_t onehop_smem_allow(size_t bytes) {
  if (bytes <= ((size_t)48 << 10)) return cudaSuccess;
  return cudaFuncSetAttribute(onehop_kernel<T, OP>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              (int)bytes);
}

#define ONEHOP_LAUNCH(T, OP)                                                                       \
  {                                                                                                \
    const size_t sm = dev_onehop_smem(a->nranks);                                                  \
    cudaError_t e = onehop_smem_allow<T, OP>(sm);                                                  \
    if (e != cudaSuccess) return e;                                                                \
    if (ex) return dev_launch_by(ex, onehop_kernel<T, OP>, 1, DEV_NTHREADS, a, stream, sm);        \
    onehop_kernel<T, OP><<<1, DEV_NTHREADS, sm, stream>>>(*a);                                     \
    return cudaGetLastError();                                                                     \
  }

extern "C" cudaError_t dev_onehop_launch(const struct dev_onehop_args* a, cudaStream_t stream,
                                         const struct dev_launch_ex* ex) {
  DEV_SWITCH_TYPE(a->dtype, a->op, ONEHOP_LAUNCH)
}

#define ONEHOP_PRELOAD(T, OP) return dev_preload_fn(onehop_kernel<T, OP>);

/* See dev_ring_preload. */
extern "C" cudaError_t dev_onehop_preload(int dtype, int op) {
  DEV_SWITCH_TYPE(dtype, op, ONEHOP_PRELOAD)
}
