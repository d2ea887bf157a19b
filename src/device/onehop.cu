/* One-hop AllReduce over the point-to-point FIFOs (dev.h, dev_onehop_args): for small buffers
 * on a comm with a peer across the network, where a ring step costs a trip through both proxies
 * and the network, so the ring's 2(n-1) steps cost 2(n-1) trips. Here every rank sends its
 * input to every peer at once, then folds what it received:
 *
 *   r0: x0 --slot--> r1         r1: x1 --slot--> r0          (both at once: one trip)
 *   r0: out = x0 + x1           r1: out = x0 + x1            (rank order: the same bits)
 *
 * Worked step (3 ranks, r1): send x1 to r2 and r0 (channel 0 FIFOs), say it wants one step from
 * each, wait for both tails, out[i] = (x0[i] + x1[i]) + x2[i] with x0 and x2 read from the slots,
 * then release both slots (head).
 * Cost: one trip (alpha) plus (n-1) x bytes sent and received per rank: it wins while that is
 * small (MONEL_NET_ONEHOP_MAX). Preconditions: count * size <= slot_bytes (one slot per peer);
 * at most DEV_MAX_PEERS ranks. In place is safe: each thread reads in[i] before it writes out[i].
 */
#include "device/dev.h"
#include "device/prims.cuh"

/* Whether my slots from peer r are pinned host memory (read uncached). */
__device__ static inline bool onehop_uncached(const struct dev_onehop_args& a, int r) {
  return (a.sysmem >> r & 1) != 0 && a.slot_delta[r] == 0;
}

/* out[i] = in_0[i] op ... op in_{n-1}[i], in rank order (elem: the one-shot kernel's fold),
 * src[r] the input of rank r; 8 bytes a thread while the buffers allow, elements after that. */
template <typename T, int OP>
__device__ static void fold(const struct dev_onehop_args& a, const char* const* src) {
  const int n = a.nranks, me = a.rank, tid = threadIdx.x, nt = blockDim.x;
  const int E = 8 / sizeof(T);
  union line {
    unsigned long long u;
    T e[8 / sizeof(T)];
  };
  const T s = load_scalar<T>(a.device_scalar, a.scalar);
  const size_t bytes = a.count * sizeof(T);
  const bool wide = (((uintptr_t)a.in | (uintptr_t)a.out) & 7) == 0;
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
    ((unsigned long long*)a.out)[i] = acc.u;
  }
  for (size_t i = nl * E + tid; i < a.count; i += nt) {
    T acc = T(), x;
    for (int r = 0; r < n; r++) {
      const T* p = (const T*)src[r] + i;
      x = r == me ? *p : ld_fifo(p, onehop_uncached(a, r));
      acc = elem<T, OP>(acc, x, r > 0, true, r == n - 1, s, n);
    }
    ((T*)a.out)[i] = acc;
  }
}

template <typename T, int OP>
__global__ void __launch_bounds__(DEV_NTHREADS, 1) onehop_kernel(struct dev_onehop_args a) {
  __shared__ struct fifo_state st[DEV_MAX_PEERS];
  __shared__ const char* src[DEV_MAX_PEERS];
  __shared__ int aborted;
  const int n = a.nranks, me = a.rank, tid = threadIdx.x;
  const size_t bytes = a.count * sizeof(T);
  block_started(&a.ctl);
  if (tid == 0) {
    aborted = 0;
    for (int r = 0; r < n; r++) {
      const uint64_t* w = a.steps + DEV_STEP_WORDS * (size_t)r * a.nch; /* channel 0 */
      st[r].sent = w[0], st[r].recvd = w[1], st[r].head_seen = w[2], st[r].aborted = 0;
      src[r] = r == me ? (const char*)a.in
                       : a.recv_fifo[r] + a.slot_delta[r] + DEV_FIFO_HEADER +
                             (w[1] % a.nslots) * a.slot_bytes;
    }
  }
  __syncthreads();
  /* My input to every peer, nearest first. */
  for (int d = 1; d < n; d++) {
    const int p = (me + d) % n;
    struct fifo_ctx rc = {a.send_fifo[p], NULL,        a.nslots,       a.slot_bytes,
                          false,          a.ctl.abort, a.slot_delta[p]};
    fifo_step<uint8_t, RED_SUM>(&st[p], &rc, VERB_SEND, (const uint8_t*)a.in, NULL, 0, 0, bytes, 0,
                                1);
    if (st[p].aborted) goto out;
  }
  /* Every peer's input: say which step I want (for the proxy), then wait for each tail. */
  if (tid == 0) {
    for (int r = 0; r < n; r++)
      if (r != me) st_volatile((uint64_t*)(a.recv_fifo[r] + DEV_FIFO_WANT), st[r].recvd + 1);
    unsigned spins = 0;
    for (int r = 0; r < n && !aborted; r++) {
      if (r == me) continue;
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
  fold<T, OP>(a, src);
  __syncthreads();
  /* Release the slots; the counters carry over to the next launch. */
  if (tid == 0) {
    __threadfence();
    for (int r = 0; r < n; r++) {
      if (r == me) continue;
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
