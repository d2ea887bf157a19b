/* The data primitives the ring kernels share: volatile counters, FIFO loads that bypass L1, and
 * move(), which executes one verb of a schedule over a chunk (receive from a FIFO slot, reduce
 * with my input, store to my output, send to the next FIFO slot; any of them optional). */
#ifndef MONEL_DEVICE_PRIMS_CUH
#define MONEL_DEVICE_PRIMS_CUH
#include <string.h>
#include "algo/prim.h"
#include "device/dev.h"
#include "device/reduce.cuh"

/* 16-byte packs a thread keeps in flight: 4 where it reduces (two sources in registers), 8 where
 * it only copies, so that a block moves more per step (fewer blocks fill a link). */
#define UNROLL      4
#define COPY_UNROLL 8

__device__ static inline uint64_t ld_volatile(const uint64_t* p) {
  return *(const volatile uint64_t*)p;
}
__device__ static inline void st_volatile(uint64_t* p, uint64_t v) {
  *(volatile uint64_t*)p = v;
}

/* A FIFO slot's bytes: from L2 for device memory (never a stale L1 line); fetched again from
 * memory for pinned host memory (sys), which another GPU writes behind this GPU's L2. */
template <typename U> __device__ static inline U ld_slot(const U* p, bool sys) {
  return sys ? __ldcv(p) : __ldcg(p);
}

template <typename T> __device__ static inline T ld_fifo(const T* p, bool sys) {
  T r;
  if (sizeof(T) == 1) {
    unsigned char v = ld_slot((const unsigned char*)p, sys);
    memcpy(&r, &v, 1);
  } else if (sizeof(T) == 2) {
    unsigned short v = ld_slot((const unsigned short*)p, sys);
    memcpy(&r, &v, 2);
  } else if (sizeof(T) == 4) {
    unsigned int v = ld_slot((const unsigned int*)p, sys);
    memcpy(&r, &v, 4);
  } else {
    unsigned long long v = ld_slot((const unsigned long long*)p, sys);
    memcpy(&r, &v, 8);
  }
  return r;
}

/* 16 bytes of a source that starts `shift` bytes (1..15) past the aligned pack lo: the bytes
 * shift..15 of lo followed by 0..shift-1 of hi. */
__device__ static inline int4 shift_pack(int4 lo, int4 hi, unsigned shift) {
  unsigned w[8] = {(unsigned)lo.x, (unsigned)lo.y, (unsigned)lo.z, (unsigned)lo.w,
                   (unsigned)hi.x, (unsigned)hi.y, (unsigned)hi.z, (unsigned)hi.w};
  unsigned b = (shift & 3) * 8, o[4];
  /* the word offset is uniform over the block: each case indexes registers, not local memory */
  switch (shift >> 2) {
#define SHIFT_WORDS(K)                                                                             \
  case K:                                                                                          \
    for (int j = 0; j < 4; j++) o[j] = __funnelshift_r(w[j + K], w[j + K + 1], b);                 \
    break;
    SHIFT_WORDS(0)
    SHIFT_WORDS(1)
    SHIFT_WORDS(2)
    SHIFT_WORDS(3)
#undef SHIFT_WORDS
  }
  return make_int4((int)o[0], (int)o[1], (int)o[2], (int)o[3]);
}

/* Copies n bytes from src to dst (and dst2 if not NULL, which must have dst's alignment mod 16)
 * whatever their alignments: bytes up to dst's first 16-byte boundary one by one, then 16-byte
 * stores, each composed from the two aligned 16-byte loads of src it spans (never a byte outside
 * [src, src + n)), then the last bytes one by one. */
__device__ static void copy_any(const uint8_t* src, uint8_t* dst, uint8_t* dst2, size_t n,
                                bool sys) {
  const int nt = blockDim.x, tid = threadIdx.x;
  size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
  if (head > n) head = n;
  for (size_t i = tid; i < head; i += nt) {
    uint8_t v = ld_slot(src + i, sys);
    dst[i] = v;
    if (dst2) dst2[i] = v;
  }
  src += head, dst += head, n -= head;
  if (dst2) dst2 += head;
  const size_t npk = n / 16;
  const unsigned shift = (unsigned)((uintptr_t)src & 15);
  const int4* a = (const int4*)(src - shift);
  for (size_t base = tid; base < npk; base += (size_t)nt * COPY_UNROLL) {
    int4 v[COPY_UNROLL];
#pragma unroll
    for (int u = 0; u < COPY_UNROLL; u++) {
      size_t i = base + (size_t)u * nt;
      if (i < npk) {
        int4 lo = ld_slot(a + i, sys);
        v[u] = shift ? shift_pack(lo, ld_slot(a + i + 1, sys), shift) : lo;
      }
    }
#pragma unroll
    for (int u = 0; u < COPY_UNROLL; u++) {
      size_t i = base + (size_t)u * nt;
      if (i >= npk) break;
      ((int4*)dst)[i] = v[u];
      if (dst2) ((int4*)dst2)[i] = v[u];
    }
  }
  for (size_t i = npk * 16 + tid; i < n; i += nt) {
    uint8_t v = ld_slot(src + i, sys);
    dst[i] = v;
    if (dst2) dst2[i] = v;
  }
}

/* dst(s) = elem(rs, in) over n elements; any pointer may be NULL (unused). When in == out the
 * element is read before it is written, by the same thread. */
template <typename T, int OP>
__device__ static void move(const T* rs, const T* in, T* out, T* ss, size_t n, bool post, T s,
                            int nranks, bool sys = false) {
  const int P = 16 / sizeof(T);
  /* A plain copy (one source, no factor, no division), aligned or not: 16 bytes a thread (byte
   * shifts for misaligned buffers), COPY_UNROLL packs in flight. */
  if ((rs == NULL) != (in == NULL) && !(OP == RED_PREMULSUM && in) && !(OP == RED_AVG && post) &&
      (out || ss) && (!out || !ss || (((uintptr_t)out ^ (uintptr_t)ss) & 15) == 0)) {
    copy_any((const uint8_t*)(rs ? rs : in), (uint8_t*)(out ? out : ss), out ? (uint8_t*)ss : NULL,
             n * sizeof(T), rs != NULL && sys);
    return;
  }
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
        if (rs) r[u].q = ld_slot((const int4*)rs + i, sys);
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
    T r = rs ? ld_fifo(rs + i, sys) : T(), x = in ? in[i] : T();
    T v = elem<T, OP>(r, x, rs != NULL, in != NULL, post, s, nranks);
    if (out) out[i] = v;
    if (ss) ss[i] = v;
  }
}

/* True once every DEV_ABORT_SPINS calls when the host has set the abort word (dev.h). */
__device__ static inline bool wait_aborted(const volatile uint32_t* abort, unsigned* spins) {
  return (++*spins % DEV_ABORT_SPINS) == 0 && *abort != 0;
}

/* A block's start and end for the host's progress counters (dev.h dev_ctl). */
__device__ static inline void block_started(const struct dev_ctl* ctl) {
  if (threadIdx.x == 0) atomicAdd(&ctl->ctr[DEV_CTR_STARTED], 1ull);
}
__device__ static inline void block_finished(const struct dev_ctl* ctl) {
  if (threadIdx.x != 0) return;
  atomicMax(&ctl->ctr[DEV_CTR_DONE_SEQ], (unsigned long long)ctl->seq);
  atomicAdd(&ctl->ctr[DEV_CTR_FINISHED], 1ull);
}

struct fifo_state {
  uint64_t sent, recvd; /* steps so far on this channel's connections */
  uint64_t head_seen;   /* last head read from the receiver (a lower bound of its head) */
  int aborted;          /* a wait saw the abort word: the kernel returns */
};

struct fifo_ctx {
  const char* send_fifo; /* as char*: slots are computed from it */
  char* recv_fifo;
  int nslots;
  size_t slot_bytes;
  bool sysmem; /* the FIFOs are pinned host memory */
  const volatile uint32_t* abort;
};

/* One step of a schedule over a FIFO connection (dev.h): verb on len elements at in + in_off /
 * out + out_off, receiving from rc->recv_fifo and sending into rc->send_fifo as the verb says.
 * Thread 0 says which step it wants, waits for data (tail) or a free slot (head); the block moves
 * the chunk; thread 0 then records the slot's byte count, publishes the new tail to the receiver
 * and the new head to the sender. Not inlined: one copy per kernel instantiation keeps the build
 * short. */
template <typename T, int OP>
__device__ static __noinline__ void fifo_step(struct fifo_state* cs, const struct fifo_ctx* rc,
                                              enum verb verb, const T* in, T* out, size_t in_off,
                                              size_t out_off, size_t len, T s, int nranks) {
  const int tid = threadIdx.x;
  bool do_recv = verb_traits(verb) & VERB_RECVS, do_send = verb_traits(verb) & VERB_SENDS;
  char* send_fifo = (char*)rc->send_fifo;
  /* The step I am about to wait for, for the proxy of a network connection. */
  if (tid == 0 && do_recv) st_volatile((uint64_t*)(rc->recv_fifo + DEV_FIFO_WANT), cs->recvd + 1);
  if (tid == 0) {
    unsigned spins = 0;
    if (do_recv) {
      const uint64_t* tail = (const uint64_t*)(rc->recv_fifo + DEV_FIFO_TAIL);
      while (ld_volatile(tail) < cs->recvd + 1)
        if (wait_aborted(rc->abort, &spins)) {
          cs->aborted = 1;
          break;
        }
      __threadfence_system();
    }
    if (do_send && !cs->aborted) {
      const uint64_t* head = (const uint64_t*)(send_fifo + DEV_FIFO_HEAD);
      while (cs->sent + 1 > cs->head_seen + (uint64_t)rc->nslots) {
        cs->head_seen = ld_volatile(head);
        if (wait_aborted(rc->abort, &spins)) {
          cs->aborted = 1;
          break;
        }
      }
    }
  }
  __syncthreads();
  if (cs->aborted) return;
  const T* rs =
      do_recv
          ? (const T*)(rc->recv_fifo + DEV_FIFO_HEADER + (cs->recvd % rc->nslots) * rc->slot_bytes)
          : NULL;
  T* ss =
      do_send ? (T*)(send_fifo + DEV_FIFO_HEADER + (cs->sent % rc->nslots) * rc->slot_bytes) : NULL;
  const T* xin = NULL;
  T* xout = NULL;
  bool post = false;
  switch (verb) {
  case VERB_SEND:
    xin = in + in_off;
    break;
  case VERB_RECV_REDUCE_SEND:
    xin = in + in_off;
    break;
  case VERB_RECV_REDUCE_COPY_SEND:
    xin = in + in_off, xout = out + out_off, post = true;
    break;
  case VERB_RECV_COPY_SEND:
    xout = out + out_off;
    break;
  case VERB_RECV:
    xout = out + out_off;
    break;
  case VERB_COPY:
    xin = in + in_off, xout = out + out_off, post = true;
    break;
  case VERB_COPY_SEND:
    xin = in + in_off, xout = out + out_off;
    break;
  case VERB_RECV_REDUCE_COPY:
    xin = in + in_off, xout = out + out_off, post = true;
    break;
  default:
    break;
  }
  /* In place copies need no store (only collectives that do not reduce copy without post). */
  if (xin != NULL && xin == xout && !post) xout = NULL;
  if (xin != NULL || xout != NULL || rs != NULL || ss != NULL)
    move<T, OP>(rs, xin, xout, ss, len, post, s, nranks, rc->sysmem);
  /* The slot's byte count, for the proxy of a network connection; the fence below orders it
   * before the tail. */
  if (do_send && tid == 0)
    st_volatile((uint64_t*)(send_fifo + DEV_FIFO_SIZES + 8 * (cs->sent % rc->nslots)),
                (uint64_t)len * sizeof(T));
  if (do_send) __threadfence_system();
  __syncthreads();
  if (tid == 0) {
    if (do_send) st_volatile((uint64_t*)(send_fifo + DEV_FIFO_TAIL), ++cs->sent);
    if (do_recv) {
      __threadfence();
      st_volatile((uint64_t*)(rc->recv_fifo + DEV_FIFO_HEAD), ++cs->recvd);
    }
  }
  __syncthreads();
}

/* The PREMULSUM factor of a launch: from device memory if given, else the host immediate. */
template <typename T>
__device__ static inline T load_scalar(const void* device_scalar, const unsigned char* host) {
  T s;
  if (device_scalar)
    s = *(const T*)device_scalar;
  else
    memcpy(&s, host, sizeof(T));
  return s;
}

/* Kernel launchers by data type and op: LAUNCH(T, OP) must be a statement returning the
 * cudaError_t of launching the kernel instantiated for (T, OP). */
#define DEV_SWITCH_OP(T, op, LAUNCH)                                                               \
  switch (op) {                                                                                    \
  case RED_SUM:                                                                                    \
    LAUNCH(T, RED_SUM);                                                                            \
  case RED_PROD:                                                                                   \
    LAUNCH(T, RED_PROD);                                                                           \
  case RED_MAX:                                                                                    \
    LAUNCH(T, RED_MAX);                                                                            \
  case RED_MIN:                                                                                    \
    LAUNCH(T, RED_MIN);                                                                            \
  case RED_AVG:                                                                                    \
    LAUNCH(T, RED_AVG);                                                                            \
  case RED_PREMULSUM:                                                                              \
    LAUNCH(T, RED_PREMULSUM);                                                                      \
  default:                                                                                         \
    return cudaErrorInvalidValue;                                                                  \
  }
/* Loads a kernel now: with lazy module loading its first launch would otherwise pay for it
 * inside the user's timed region. */
template <typename F> static inline cudaError_t dev_preload_fn(F* kernel) {
  cudaFuncAttributes fa;
  return cudaFuncGetAttributes(&fa, (const void*)kernel);
}

#define DEV_SWITCH_TYPE(dtype, op, LAUNCH)                                                         \
  switch (dtype) {                                                                                 \
  case ncclInt8:                                                                                   \
    DEV_SWITCH_OP(int8_t, op, LAUNCH)                                                              \
  case ncclUint8:                                                                                  \
    DEV_SWITCH_OP(uint8_t, op, LAUNCH)                                                             \
  case ncclInt32:                                                                                  \
    DEV_SWITCH_OP(int32_t, op, LAUNCH)                                                             \
  case ncclUint32:                                                                                 \
    DEV_SWITCH_OP(uint32_t, op, LAUNCH)                                                            \
  case ncclInt64:                                                                                  \
    DEV_SWITCH_OP(int64_t, op, LAUNCH)                                                             \
  case ncclUint64:                                                                                 \
    DEV_SWITCH_OP(uint64_t, op, LAUNCH)                                                            \
  case ncclFloat16:                                                                                \
    DEV_SWITCH_OP(dev_f16, op, LAUNCH)                                                             \
  case ncclFloat32:                                                                                \
    DEV_SWITCH_OP(float, op, LAUNCH)                                                               \
  case ncclFloat64:                                                                                \
    DEV_SWITCH_OP(double, op, LAUNCH)                                                              \
  case ncclBfloat16:                                                                               \
    DEV_SWITCH_OP(dev_bf16, op, LAUNCH)                                                            \
  case ncclFloat8e4m3:                                                                             \
    DEV_SWITCH_OP(dev_e4m3, op, LAUNCH)                                                            \
  case ncclFloat8e5m2:                                                                             \
    DEV_SWITCH_OP(dev_e5m2, op, LAUNCH)                                                            \
  default:                                                                                         \
    return cudaErrorInvalidValue;                                                                  \
  }
#endif
