/* SPDX-License-Identifier: BSD-3-Clause */
/* One-shot AllReduce, AllGather and ReduceScatter for small messages, LL protocol: every rank
 * pushes what each peer needs from it (dev.h), 8 bytes per 16-byte line with the launch's flag
 * beside each half, straight into a buffer of every peer's GPU; then every rank polls its own
 * buffer until each peer's lines carry this launch's flag and reduces the n pieces in rank order
 * (so every rank computes the same bits) or, for AllGather, stores them. There is no fence and no
 * step counter: a line is complete when both its flags match.
 *
 *   AllReduce:     r0 --x0--> r1, r2, r3  (all ranks at once)    r1: out = x0 + x1 + x2 + x3
 *   ReduceScatter: r0 --x0[p]--> rank p                          r1: out = x0[1] + ... + x3[1]
 *
 * Cost: one NVLink write latency plus a kernel launch, (n-1) * 2 * bytes written by each rank
 * (the flags double the traffic): for up to DEV_LL_MAX_BYTES per peer.
 *
 * Reuse of the buffers: block b of launch k (its k-th launch, counted per block in device memory
 * by every rank alike) uses parity k & 1 and flag k + 1. A rank starts launch k + 2 only after
 * its launch k + 1 saw every peer's data of launch k + 1, which each peer wrote after its own
 * launch k was over, so nothing is overwritten while it is read; stale lines carry an older flag.
 */
#include "device/dev.h"
#include "device/prims.cuh"

__device__ static inline void st_line(char* p, uint32_t lo, uint32_t hi, uint32_t flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(lo), "r"(flag),
               "r"(hi), "r"(flag)
               : "memory");
}

/* Waits for a line carrying `flag`; gives up (and every later call of the thread at once) when
 * the host sets the abort word. */
__device__ static inline uint64_t ld_line(const char* p, uint32_t flag,
                                          const volatile uint32_t* abort, bool* aborted) {
  uint32_t lo, f1, hi, f2;
  unsigned spins = 0;
  do {
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(lo), "=r"(f1), "=r"(hi), "=r"(f2)
                 : "l"(p)
                 : "memory");
    if (f1 == flag && f2 == flag) break;
    if (*aborted || wait_aborted(abort, &spins)) {
      *aborted = true;
      break;
    }
  } while (true);
  return (uint64_t)lo | (uint64_t)hi << 32;
}

/* The 8 bytes of line i of a buffer of `total` bytes (zeros past the end). */
__device__ static inline uint64_t ld_bytes(const char* p, size_t i, size_t total) {
  size_t at = i * 8, nb = total - at < 8 ? total - at : 8;
  if (nb == 8 && ((uintptr_t)(p + at) & 7) == 0) return *(const uint64_t*)(p + at);
  uint64_t v = 0;
  for (size_t k = 0; k < nb; k++) v |= (uint64_t)(unsigned char)p[at + k] << (8 * k);
  return v;
}

__device__ static inline void st_bytes(char* p, size_t i, size_t total, uint64_t v) {
  size_t at = i * 8, nb = total - at < 8 ? total - at : 8;
  if (nb == 8 && ((uintptr_t)(p + at) & 7) == 0) {
    *(uint64_t*)(p + at) = v;
    return;
  }
  for (size_t k = 0; k < nb; k++) p[at + k] = (char)(v >> (8 * k));
}

#define LINES_PER_THREAD (DEV_LL_LINES / DEV_LL_NTHREADS)

/* Part b of the buffer (DEV_LL_BLOCK_DATA bytes of it, its own lines and counter). */
template <typename T, int OP>
__device__ static __forceinline__ void oneshot_part(const struct dev_oneshot_args& a, int b) {
  const int n = a.nranks, me = a.rank, tid = threadIdx.x;
  const int E = 8 / sizeof(T);
  union line {
    uint64_t u;
    T e[8 / sizeof(T)];
  };
  /* Every thread reads the part's launch counter itself (one broadcast load a warp): no barrier
   * and no shared-memory round trip before the first push (a measurable part of an AllReduce of
   * 8 B replayed in CUDA graphs). Thread 0 writes it back only after the barrier at the end,
   * once every thread has read it. */
  const uint32_t flag = a.seq[b] + 1;
  /* total: bytes each rank sends each peer; this block's part of it: [lo, lo + bytes). */
  const size_t total = a.count * sizeof(T);
  const size_t lo = (size_t)b * DEV_LL_BLOCK_DATA;
  const size_t bytes = total - lo < DEV_LL_BLOCK_DATA ? total - lo : DEV_LL_BLOCK_DATA;
  const int nlines = (int)((bytes + 7) / 8);
  const char* in = (const char*)a.in + lo;
  char* out = (char*)a.out + lo;
  const size_t region = (size_t)DEV_LL_LINES * DEV_LL_LINE;
  const size_t par = ((size_t)b * 2 + (flag & 1)) * (size_t)n;
  T s = load_scalar<T>(a.device_scalar, a.scalar);
  bool aborted = false;

  /* My piece for my own output, kept in registers: AllReduce/AllGather my input, ReduceScatter
   * my chunk of it. */
  const bool rs = a.coll == DEV_REDUCESCATTER;
  uint64_t mine[LINES_PER_THREAD];
  const char* my_src = rs ? in + (size_t)me * total : in;
#pragma unroll
  for (int k = 0; k < LINES_PER_THREAD; k++) {
    int i = tid + k * DEV_LL_NTHREADS;
    mine[k] = i < nlines ? ld_bytes(my_src, i, bytes) : 0;
  }
  /* Push to every peer, nearest first in ring order. */
  for (int d = 1; d < n; d++) {
    int peer = (me + d) % n;
    char* dst = a.peer_ll[peer] + (par + me) * region;
    const char* src = in + (size_t)peer * total;
#pragma unroll
    for (int k = 0; k < LINES_PER_THREAD; k++) {
      int i = tid + k * DEV_LL_NTHREADS;
      if (i >= nlines) break;
      uint64_t v = rs ? ld_bytes(src, i, bytes) : mine[k];
      st_line(dst + (size_t)i * DEV_LL_LINE, (uint32_t)v, (uint32_t)(v >> 32), flag);
    }
  }
  const char* buf = a.peer_ll[me];
  if (a.coll == DEV_ALLGATHER) {
    /* Piece r to out + r * total, mine from registers (in place it is already there). */
    for (int r = 0; r < n; r++) {
      char* o = out + (size_t)r * total;
      if (r == me && o == in) continue;
#pragma unroll
      for (int k = 0; k < LINES_PER_THREAD; k++) {
        int i = tid + k * DEV_LL_NTHREADS;
        if (i >= nlines) break;
        uint64_t v = r == me ? mine[k]
                             : ld_line(buf + (par + r) * region + (size_t)i * DEV_LL_LINE, flag,
                                       a.ctl.abort, &aborted);
        st_bytes(o, i, bytes, v);
      }
    }
  } else {
    /* Reduce in rank order, my own piece from registers. */
#pragma unroll
    for (int k = 0; k < LINES_PER_THREAD; k++) {
      int i = tid + k * DEV_LL_NTHREADS;
      if (i >= nlines) break;
      union line acc, x;
      for (int r = 0; r < n; r++) {
        x.u = r == me ? mine[k]
                      : ld_line(buf + (par + r) * region + (size_t)i * DEV_LL_LINE, flag,
                                a.ctl.abort, &aborted);
#pragma unroll
        for (int e = 0; e < E; e++)
          acc.e[e] = elem<T, OP>(acc.e[e], x.e[e], r > 0, true, r == n - 1, s, n);
      }
      st_bytes(out, i, bytes, acc.u);
    }
  }
  __syncthreads();
  if (tid == 0) a.seq[b] = flag;
}

/* Parts b = blockIdx.x, + gridDim.x, ...: a grid smaller than nblocks (NCCL_MAX_CTAS) takes its
 * parts in turn. Every rank takes part b only after its parts before b in the same block, each
 * pushed before it waits, so by induction on b every part completes whatever the grids. The usual
 * grid, a block per part, runs its part outside the loop: the loop around the part made an
 * AllReduce of 8 B in CUDA graphs slower (docs/PERFORMANCE.md at 212cdd8). */
template <typename T, int OP>
__global__ void __launch_bounds__(DEV_LL_NTHREADS) oneshot_kernel(struct dev_oneshot_args a) {
  dev_after_previous();
  block_started(&a.ctl);
  if (gridDim.x == a.nblocks)
    oneshot_part<T, OP>(a, blockIdx.x);
  else
    for (int b = blockIdx.x; b < a.nblocks; b += gridDim.x) oneshot_part<T, OP>(a, b);
  block_finished(&a.ctl);
}

#define ONESHOT_LAUNCH(T, OP)                                                                      \
  if (ex) return dev_launch_by(ex, oneshot_kernel<T, OP>, a->grid, DEV_LL_NTHREADS, a, stream);    \
  oneshot_kernel<T, OP><<<a->grid, DEV_LL_NTHREADS, 0, stream>>>(*a);                              \
  return cudaGetLastError();

extern "C" cudaError_t dev_oneshot_launch(const struct dev_oneshot_args* a, cudaStream_t stream,
                                          const struct dev_launch_ex* ex) {
  DEV_SWITCH_TYPE(a->dtype, a->op, ONESHOT_LAUNCH)
}

#define ONESHOT_PRELOAD(T, OP) return dev_preload_fn(oneshot_kernel<T, OP>);

/* See dev_ring_preload. */
extern "C" cudaError_t dev_oneshot_preload(int dtype, int op) {
  DEV_SWITCH_TYPE(dtype, op, ONESHOT_PRELOAD)
}
