/* Ring AllReduce kernel, Simple protocol: the schedule of algo/ring.h executed by one thread
 * block per channel. Each channel owns a contiguous part of the buffer and streams it block after
 * block through its FIFOs (dev.h): a step moves one chunk of at most one slot.
 *
 * Per step, thread 0 waits (tail from the previous rank for a receive, a free slot at the next
 * rank for a send), the block moves the data with 16-byte loads and stores where every pointer is
 * aligned, each writer fences at system scope, and after a barrier thread 0 publishes the new tail
 * to the next rank and the new head to the previous one. FIFO slots are read with ld.global.cg
 * (L2, never a stale L1 line). */
#include <string.h>
#include "algo/ring.h"
#include "device/dev.h"
#include "device/reduce.cuh"

#define UNROLL 4

struct chan_state {
  uint64_t sent, recvd;  /* steps so far on this channel's connections */
  uint64_t head_seen;    /* last head read from the next rank */
};

__device__ static inline uint64_t ld_volatile(const uint64_t* p) {
  return *(const volatile uint64_t*)p;
}
__device__ static inline void st_volatile(uint64_t* p, uint64_t v) { *(volatile uint64_t*)p = v; }

template <typename T> __device__ static inline T ld_fifo(const T* p) {
  T r;
  if (sizeof(T) == 1) {
    unsigned char v = __ldcg((const unsigned char*)p);
    memcpy(&r, &v, 1);
  } else if (sizeof(T) == 2) {
    unsigned short v = __ldcg((const unsigned short*)p);
    memcpy(&r, &v, 2);
  } else if (sizeof(T) == 4) {
    unsigned int v = __ldcg((const unsigned int*)p);
    memcpy(&r, &v, 4);
  } else {
    unsigned long long v = __ldcg((const unsigned long long*)p);
    memcpy(&r, &v, 8);
  }
  return r;
}

/* dst(s) = elem(rs, in) over n elements; any pointer may be NULL (unused). */
template <typename T, int OP>
__device__ static void move(const T* rs, const T* in, T* out, T* ss, size_t n, bool post, T s,
                            int nranks) {
  const int P = 16 / sizeof(T);
  union pack {
    int4 q;
    T e[16 / sizeof(T)];
  };
  uintptr_t bits = (uintptr_t)rs | (uintptr_t)in | (uintptr_t)out | (uintptr_t)ss;
  size_t npk = (bits & 15) == 0 ? n / P : 0;
  const int nt = blockDim.x, tid = threadIdx.x;
  for (size_t base = tid; base < npk; base += (size_t)nt * UNROLL) {
    pack r[UNROLL], x[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      size_t i = base + (size_t)u * nt;
      r[u].q = make_int4(0, 0, 0, 0);
      x[u].q = make_int4(0, 0, 0, 0);
      if (i < npk) {
        if (rs) r[u].q = __ldcg((const int4*)rs + i);
        if (in) x[u].q = ((const int4*)in)[i];
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      size_t i = base + (size_t)u * nt;
      if (i >= npk) break;
      pack v;
#pragma unroll
      for (int k = 0; k < P; k++)
        v.e[k] = elem<T, OP>(r[u].e[k], x[u].e[k], rs != NULL, in != NULL, post, s, nranks);
      if (out) ((int4*)out)[i] = v.q;
      if (ss) ((int4*)ss)[i] = v.q;
    }
  }
  for (size_t i = npk * P + tid; i < n; i += nt) {
    T r = rs ? ld_fifo(rs + i) : T(), x = in ? in[i] : T();
    T v = elem<T, OP>(r, x, rs != NULL, in != NULL, post, s, nranks);
    if (out) out[i] = v;
    if (ss) ss[i] = v;
  }
}

template <typename T, int OP> __global__ void __launch_bounds__(DEV_NTHREADS, 1)
allreduce_kernel(struct dev_allreduce_args a) {
  __shared__ struct chan_state cs;
  const int c = blockIdx.x, n = a.nranks, tid = threadIdx.x;
  const size_t P = 16 / sizeof(T), slot_elems = a.slot_bytes / sizeof(T);
  char* send_fifo = a.ch[c].send_fifo;
  char* recv_fifo = a.ch[c].recv_fifo;
  uint64_t* steps = a.steps + 2 * c;
  T s;
  if (a.device_scalar)
    s = *(const T*)a.device_scalar;
  else
    memcpy(&s, a.scalar, sizeof(T));
  if (tid == 0) {
    cs.sent = steps[0];
    cs.recvd = steps[1];
    cs.head_seen = n > 1 ? ld_volatile((const uint64_t*)(send_fifo + DEV_FIFO_HEAD)) : 0;
  }
  __syncthreads();

  /* This channel's part of the buffer, in whole 16-byte packs except at the very end. */
  size_t per = (a.count + a.nchannels - 1) / a.nchannels;
  per = (per + P - 1) / P * P;
  size_t lo = (size_t)c * per < a.count ? (size_t)c * per : a.count;
  size_t hi = lo + per < a.count ? lo + per : a.count;
  const T* in = (const T*)a.in;
  T* out = (T*)a.out;
  int nsteps = ring_allreduce_nsteps(n);

  for (size_t base = lo; base < hi;) {
    size_t rem = hi - base;
    size_t chunk = (rem + n - 1) / n;
    chunk = (chunk + P - 1) / P * P;
    if (chunk > slot_elems) chunk = slot_elems;
    size_t block = chunk * (size_t)n < rem ? chunk * (size_t)n : rem;
    for (int st = 0; st < nsteps; st++) {
      struct step sp = ring_allreduce_step(a.rank, n, st);
      size_t first = (size_t)sp.chunk * chunk, len = 0;
      if (first < block) len = block - first < chunk ? block - first : chunk;
      bool do_recv = sp.verb != VERB_SEND && sp.verb != VERB_COPY;
      bool do_send = sp.verb != VERB_RECV && sp.verb != VERB_COPY;
      if (tid == 0) {
        if (do_recv) {
          const uint64_t* tail = (const uint64_t*)(recv_fifo + DEV_FIFO_TAIL);
          while (ld_volatile(tail) < cs.recvd + 1) {
          }
          __threadfence_system();
        }
        if (do_send) {
          const uint64_t* head = (const uint64_t*)(send_fifo + DEV_FIFO_HEAD);
          while (cs.sent + 1 > cs.head_seen + (uint64_t)a.nslots) cs.head_seen = ld_volatile(head);
        }
      }
      __syncthreads();
      const T* rs = do_recv ? (const T*)(recv_fifo + DEV_FIFO_HEADER +
                                         (cs.recvd % a.nslots) * a.slot_bytes)
                            : NULL;
      T* ss = do_send ? (T*)(send_fifo + DEV_FIFO_HEADER + (cs.sent % a.nslots) * a.slot_bytes)
                      : NULL;
      const T* xin = NULL;
      T* xout = NULL;
      bool post = false;
      size_t off = base + first;
      switch (sp.verb) {
      case VERB_SEND: xin = in + off; break;
      case VERB_RECV_REDUCE_SEND: xin = in + off; break;
      case VERB_RECV_REDUCE_COPY_SEND: xin = in + off, xout = out + off, post = true; break;
      case VERB_RECV_COPY_SEND: xout = out + off; break;
      case VERB_RECV: xout = out + off; break;
      case VERB_COPY: xin = in + off, xout = out + off, post = true; break;
      default: break;
      }
      move<T, OP>(rs, xin, xout, ss, len, post, s, n);
      if (do_send) __threadfence_system();
      __syncthreads();
      if (tid == 0) {
        if (do_send) st_volatile((uint64_t*)(send_fifo + DEV_FIFO_TAIL), ++cs.sent);
        if (do_recv) {
          __threadfence();
          st_volatile((uint64_t*)(recv_fifo + DEV_FIFO_HEAD), ++cs.recvd);
        }
      }
      __syncthreads();
    }
    base += block;
  }
  if (tid == 0) {
    steps[0] = cs.sent;
    steps[1] = cs.recvd;
  }
}

template <typename T, int OP>
static cudaError_t launch(const struct dev_allreduce_args* a, cudaStream_t stream) {
  allreduce_kernel<T, OP><<<a->nchannels, DEV_NTHREADS, 0, stream>>>(*a);
  return cudaGetLastError();
}

template <typename T> static cudaError_t launch_op(const struct dev_allreduce_args* a, cudaStream_t s) {
  switch (a->op) {
  case RED_SUM: return launch<T, RED_SUM>(a, s);
  case RED_PROD: return launch<T, RED_PROD>(a, s);
  case RED_MAX: return launch<T, RED_MAX>(a, s);
  case RED_MIN: return launch<T, RED_MIN>(a, s);
  case RED_AVG: return launch<T, RED_AVG>(a, s);
  case RED_PREMULSUM: return launch<T, RED_PREMULSUM>(a, s);
  default: return cudaErrorInvalidValue;
  }
}

extern "C" cudaError_t dev_allreduce_launch(const struct dev_allreduce_args* a,
                                            cudaStream_t stream) {
  switch (a->dtype) {
  case ncclInt8: return launch_op<int8_t>(a, stream);
  case ncclUint8: return launch_op<uint8_t>(a, stream);
  case ncclInt32: return launch_op<int32_t>(a, stream);
  case ncclUint32: return launch_op<uint32_t>(a, stream);
  case ncclInt64: return launch_op<int64_t>(a, stream);
  case ncclUint64: return launch_op<uint64_t>(a, stream);
  case ncclFloat16: return launch_op<dev_f16>(a, stream);
  case ncclFloat32: return launch_op<float>(a, stream);
  case ncclFloat64: return launch_op<double>(a, stream);
  case ncclBfloat16: return launch_op<dev_bf16>(a, stream);
  case ncclFloat8e4m3: return launch_op<dev_e4m3>(a, stream);
  case ncclFloat8e5m2: return launch_op<dev_e5m2>(a, stream);
  default: return cudaErrorInvalidValue;
  }
}
