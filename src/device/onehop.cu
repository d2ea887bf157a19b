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
 * Cost: one trip (alpha) plus (n-1) x bytes sent or received by a rank (bytes: the count
 * argument's; the root's for Broadcast and Reduce): it wins while that is small
 * (MONEL_NET_ONEHOP_MAX). Preconditions: count * size <= slot_bytes (one slot per peer); at most
 * DEV_MAX_PEERS ranks. In place is safe: a rank sends before it writes out, and each thread of
 * the fold reads its own input's element i before it writes out[i] (ReduceScatter in place: out
 * is the input's piece of this rank, which goes to no peer). */
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
    union line acc, x;
    for (int r = 0; r < n; r++) {
      const unsigned long long* p = (const unsigned long long*)src[r] + i;
      x.u = r == me ? *p : ld_slot(p, onehop_uncached(a, r));
#pragma unroll
      for (int e = 0; e < E; e++)
        acc.e[e] = elem<T, OP>(acc.e[e], x.e[e], r > 0, true, r == n - 1, s, n);
    }
    ((unsigned long long*)out)[i] = acc.u;
  }
  for (size_t i = nl * E + tid; i < a.count; i += nt) {
    T acc = T(), x;
    for (int r = 0; r < n; r++) {
      const T* p = (const T*)src[r] + i;
      x = r == me ? *p : ld_fifo(p, onehop_uncached(a, r));
      acc = elem<T, OP>(acc, x, r > 0, true, r == n - 1, s, n);
    }
    out[i] = acc;
  }
}

/* dst[0, bytes) = src[0, bytes): a slot (sys: pinned host memory, read uncached) or my own
 * input; nothing when they are the same bytes (in place). */
__device__ static void copy_bytes(const char* src, bool sys, char* dst, size_t bytes) {
  const int tid = threadIdx.x, nt = blockDim.x;
  if (src == dst) return;
  const size_t nl = (((uintptr_t)src | (uintptr_t)dst) & 7) == 0 ? bytes / 8 : 0;
  for (size_t i = tid; i < nl; i += nt)
    ((unsigned long long*)dst)[i] = ld_slot((const unsigned long long*)src + i, sys);
  for (size_t i = nl * 8 + tid; i < bytes; i += nt)
    dst[i] = (char)ld_slot((const unsigned char*)src + i, sys);
}

template <typename T, int OP>
__global__ void __launch_bounds__(DEV_NTHREADS, 1) onehop_kernel(struct dev_onehop_args a) {
  __shared__ struct fifo_state st[DEV_MAX_PEERS];
  __shared__ const char* src[DEV_MAX_PEERS];
  __shared__ int aborted;
  const int n = a.nranks, me = a.rank, tid = threadIdx.x, coll = a.coll, root = a.root;
  const size_t bytes = a.count * sizeof(T);
  const char* in = (const char*)a.in;
  block_started(&a.ctl);
  if (tid == 0) {
    aborted = 0;
    for (int r = 0; r < n; r++) {
      const uint64_t* w = a.steps + DEV_STEP_WORDS * (size_t)r * a.nch; /* channel 0 */
      st[r].sent = w[0], st[r].recvd = w[1], st[r].head_seen = w[2], st[r].aborted = 0;
      src[r] = r == me ? (coll == DEV_REDUCESCATTER ? in + (size_t)me * bytes : in)
                       : a.recv_fifo[r] + a.slot_delta[r] + DEV_FIFO_HEADER +
                             (w[1] % a.nslots) * a.slot_bytes;
    }
  }
  __syncthreads();
  /* What each peer needs of my input (ReduceScatter: its piece), nearest first. */
  for (int d = 1; d < n; d++) {
    const int p = (me + d) % n;
    if (!onehop_sends(coll, me, p, root)) continue;
    struct fifo_ctx rc = {a.send_fifo[p], NULL,        a.nslots,       a.slot_bytes,
                          false,          a.ctl.abort, a.slot_delta[p]};
    const uint8_t* mine = (const uint8_t*)in + (coll == DEV_REDUCESCATTER ? (size_t)p * bytes : 0);
    fifo_step<uint8_t, RED_SUM>(&st[p], &rc, VERB_SEND, mine, NULL, 0, 0, bytes, 0, 1);
    if (st[p].aborted) goto out;
  }
  /* Every sender's input: say which step I want (for the proxy), then wait for each tail. */
  if (tid == 0) {
    for (int r = 0; r < n; r++)
      if (r != me && onehop_sends(coll, r, me, root))
        st_volatile((uint64_t*)(a.recv_fifo[r] + DEV_FIFO_WANT), st[r].recvd + 1);
    unsigned spins = 0;
    for (int r = 0; r < n && !aborted; r++) {
      if (r == me || !onehop_sends(coll, r, me, root)) continue;
      const uint64_t* tail = (const uint64_t*)(a.recv_fifo[r] + DEV_FIFO_TAIL);
      while (ld_volatile(tail) < st[r].recvd + 1)
        if (wait_aborted(a.ctl.abort, &spins)) {
          aborted = 1;
          break;
        }
    }
    __threadfence_system();
  }
  __syncthreads();
  if (aborted) goto out;
  if (coll == DEV_ALLGATHER) {
    for (int r = 0; r < n; r++)
      copy_bytes(src[r], r != me && onehop_uncached(a, r), (char*)a.out + (size_t)r * bytes, bytes);
  } else if (coll == DEV_BROADCAST) {
    copy_bytes(src[root], root != me && onehop_uncached(a, root), (char*)a.out, bytes);
  } else if (coll != DEV_REDUCE || me == root) {
    fold<T, OP>(a, src, (T*)a.out);
  }
  __syncthreads();
  /* Release the slots; the counters carry over to the next launch. */
  if (tid == 0) {
    __threadfence();
    for (int r = 0; r < n; r++) {
      if (r == me) continue;
      if (onehop_sends(coll, r, me, root))
        st_volatile((uint64_t*)(a.recv_fifo[r] + DEV_FIFO_HEAD), ++st[r].recvd);
      uint64_t* w = a.steps + DEV_STEP_WORDS * (size_t)r * a.nch;
      w[0] = st[r].sent, w[1] = st[r].recvd, w[2] = st[r].head_seen;
    }
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
