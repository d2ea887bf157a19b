/* SPDX-License-Identifier: BSD-3-Clause */
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
/* An acquire load at system scope: what the writer stored before it published this value (a
 * proxy's slot bytes before its tail, a peer kernel's before its fenced tail) is seen by this
 * thread's later loads, and by the block's after a barrier. A poll of a tail by it is cheaper per
 * step than volatile loads followed by a system fence (one H200, docs/PERFORMANCE.md at 212cdd8,
 * "What a small operation costs on the GPU"). */
__device__ static inline uint64_t ld_acquire_sys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

/* Whether the tail of FIFO fifo (its host-memory or peer counters, dev.h) reached step `want`,
 * with acquire; if not, says that the kernel now waits for that step (the want word, which tells
 * a network proxy to test the connection on every pass; gpu_fifo.h) before the caller polls.
 * Writing the want word first made a step's wait longer where the data was already there (the
 * read of the tail behind the write, one H200, docs/PERFORMANCE.md at 212cdd8). */
__device__ static inline bool tail_reached(char* fifo, uint64_t want) {
  if (ld_acquire_sys((const uint64_t*)(fifo + DEV_FIFO_TAIL)) >= want) return true;
  st_volatile((uint64_t*)(fifo + DEV_FIFO_WANT), want);
  return false;
}

/* Programmatic dependent launch (gpu/driver.c): the first thing every kernel does. It waits until
 * the kernel before it on its stream ended and that kernel's memory is visible (nothing before it
 * reads or writes memory), and only then lets the next kernel begin. In that order a stream holds
 * at most two of these kernels on the SMs, the running one and the next, waiting: letting the
 * next begin first let every queued kernel of a stream begin at once, and with 8 ranks sharing
 * one GPU their waiting blocks took the SMs a peer's running kernel needed (a ring AllReduce of
 * 2 MB on 4 blocks never finished). A no-op for a kernel launched without the attribute, and
 * below compute capability 9.0. */
__device__ static inline void dev_after_previous(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* A FIFO slot's bytes: from L2 for device memory (never a stale L1 line); fetched again from
 * memory for pinned host memory (uncached), which another GPU writes behind this GPU's L2. */
template <typename U> __device__ static inline U ld_slot(const U* p, bool uncached) {
  return uncached ? __ldcv(p) : __ldcg(p);
}

template <typename T> __device__ static inline T ld_fifo(const T* p, bool uncached) {
  T r;
  if (sizeof(T) == 1) {
    unsigned char v = ld_slot((const unsigned char*)p, uncached);
    memcpy(&r, &v, 1);
  } else if (sizeof(T) == 2) {
    unsigned short v = ld_slot((const unsigned short*)p, uncached);
    memcpy(&r, &v, 2);
  } else if (sizeof(T) == 4) {
    unsigned int v = ld_slot((const unsigned int*)p, uncached);
    memcpy(&r, &v, 4);
  } else {
    unsigned long long v = ld_slot((const unsigned long long*)p, uncached);
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
                                bool uncached) {
  const int nt = blockDim.x, tid = threadIdx.x;
  size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
  if (head > n) head = n;
  for (size_t i = tid; i < head; i += nt) {
    uint8_t v = ld_slot(src + i, uncached);
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
        int4 lo = ld_slot(a + i, uncached);
        v[u] = shift ? shift_pack(lo, ld_slot(a + i + 1, uncached), shift) : lo;
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
    uint8_t v = ld_slot(src + i, uncached);
    dst[i] = v;
    if (dst2) dst2[i] = v;
  }
}

/* dst(s) = elem(rs, in) over n elements; any pointer may be NULL (unused). When in == out the
 * element is read before it is written, by the same thread. */
template <typename T, int OP>
__device__ static void move(const T* rs, const T* in, T* out, T* ss, size_t n, bool post, T s,
                            int nranks, bool uncached = false) {
  const int P = 16 / sizeof(T);
  /* A plain copy (one source, no factor, no division), aligned or not: 16 bytes a thread (byte
   * shifts for misaligned buffers), COPY_UNROLL packs in flight. */
  if ((rs == NULL) != (in == NULL) && !(OP == RED_PREMULSUM && in) && !(OP == RED_AVG && post) &&
      (out || ss) && (!out || !ss || (((uintptr_t)out ^ (uintptr_t)ss) & 15) == 0)) {
    copy_any((const uint8_t*)(rs ? rs : in), (uint8_t*)(out ? out : ss), out ? (uint8_t*)ss : NULL,
             n * sizeof(T), rs != NULL && uncached);
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
        if (rs) r[u].q = ld_slot((const int4*)rs + i, uncached);
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
    T r = rs ? ld_fifo(rs + i, uncached) : T(), x = in ? in[i] : T();
    T v = elem<T, OP>(r, x, rs != NULL, in != NULL, post, s, nranks);
    if (out) out[i] = v;
    if (ss) ss[i] = v;
  }
}

/* True once every DEV_ABORT_SPINS calls when the host has set the abort word (dev.h). */
__device__ static inline bool wait_aborted(const volatile uint32_t* abort, unsigned* spins) {
  return (++*spins % DEV_ABORT_SPINS) == 0 && *abort != 0;
}

/* A block's start and end for the host's progress counters (dev.h dev_ctl). The launch is done
 * when its last block ends, not its first: on a GPU shared by many ranks some blocks of a grid
 * start only after others have ended, and a host that took the first for the whole grid freed
 * memory the late ones still used. The comm's launches run one after the other (griddepcontrol
 * or stream order), so one count of ended blocks serves them all; the last block resets it. */
__device__ static inline void block_started(const struct dev_ctl* ctl) {
  if (threadIdx.x == 0) atomicAdd(&ctl->ctr[DEV_CTR_STARTED], 1ull);
}
__device__ static inline void block_finished(const struct dev_ctl* ctl) {
  if (threadIdx.x != 0) return;
  __threadfence();
  unsigned long long grid = (unsigned long long)gridDim.x * gridDim.y * gridDim.z;
  if (atomicAdd(&ctl->ctr[DEV_CTR_GRID_ENDED], 1ull) + 1 == grid) {
    atomicExch(&ctl->ctr[DEV_CTR_GRID_ENDED], 0ull);
    __threadfence();
    atomicMax(&ctl->ctr[DEV_CTR_DONE_SEQ], (unsigned long long)ctl->seq);
  }
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
  bool hostmem; /* the slots are pinned host memory (read uncached) */
  const volatile uint32_t* abort;
  int64_t delta; /* slots at the FIFO's address + their offset + delta (dev.h slot_delta) */
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
  if (tid == 0) {
    unsigned spins = 0;
    if (do_recv && !tail_reached(rc->recv_fifo, cs->recvd + 1)) {
      const uint64_t* tail = (const uint64_t*)(rc->recv_fifo + DEV_FIFO_TAIL);
      while (ld_acquire_sys(tail) < cs->recvd + 1)
        if (wait_aborted(rc->abort, &spins)) {
          cs->aborted = 1;
          break;
        }
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
  const T* rs = do_recv ? (const T*)(rc->recv_fifo + rc->delta + DEV_FIFO_HEADER +
                                     (cs->recvd % rc->nslots) * rc->slot_bytes)
                        : NULL;
  T* ss =
      do_send
          ? (T*)(send_fifo + rc->delta + DEV_FIFO_HEADER + (cs->sent % rc->nslots) * rc->slot_bytes)
          : NULL;
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
    move<T, OP>(rs, xin, xout, ss, len, post, s, nranks, rc->hostmem);
  /* The slot's byte count, for the proxy of a network connection; the fence below orders it
   * before the tail. */
  __syncthreads();
  if (tid == 0) {
    if (do_send) {
      st_volatile((uint64_t*)(send_fifo + DEV_FIFO_SIZES + 8 * (cs->sent % rc->nslots)),
                  (uint64_t)len * sizeof(T));
      __threadfence_system(); /* after the barrier: it orders the whole block's stores */
      st_volatile((uint64_t*)(send_fifo + DEV_FIFO_TAIL), ++cs->sent);
    }
    if (do_recv) {
      __threadfence();
      st_volatile((uint64_t*)(rc->recv_fifo + DEV_FIFO_HEAD), ++cs->recvd);
    }
  }
  __syncthreads();
}

/* ---- The protocol seam: one step of a schedule over up to two receive and two send
 * connections, with the protocol (dev.h dev_proto) a template parameter. Ring (one peer each
 * way) and tree (an inner node receives from two children, or sends to two) kernels are written
 * once over prim_step; the protocol decides only how a slot is laid out, waited on and
 * published. */
#define PRIM_MAX 2

/* One direction of a connection. words: its step counters in device memory (DEV_STEP_WORDS:
 * [0] steps sent, [1] steps received, [2] head seen), a send connection uses [0] and [2], a
 * receive connection [1]. by_tail: every step published by the tail in the Simple area (pinned
 * host memory, a network connection, LL128 without safe lines); delta: the slots are at fifo +
 * their offset + delta (a network FIFO whose slots are in device memory of their own: dev.h
 * slot_delta). Slots are read uncached where they are published by the tail with no delta. */
struct prim_conn {
  char* fifo;
  uint64_t* words;
  int by_tail;
  int64_t delta;
};
__device__ static inline bool prim_uncached(const struct prim_conn* c) {
  return c->by_tail && c->delta == 0;
}

/* A block's connections and their counters (in shared memory; thread 0 writes them). */
struct prim {
  int nrecv, nsend;
  struct prim_conn recv[PRIM_MAX], send[PRIM_MAX];
  uint64_t rstep[PRIM_MAX], sstep[PRIM_MAX], head_seen[PRIM_MAX];
  int nslots;
  size_t slot_bytes;
  const volatile uint32_t* abort;
  int aborted;
};

/* Thread 0: the counters from device memory; prim_save writes them back. */
__device__ static inline void prim_load(struct prim* p) {
  for (int i = 0; i < p->nrecv; i++) p->rstep[i] = p->recv[i].words[1];
  for (int i = 0; i < p->nsend; i++) {
    p->sstep[i] = p->send[i].words[0];
    p->head_seen[i] = p->send[i].words[2];
  }
  p->aborted = 0;
}
__device__ static inline void prim_save(const struct prim* p) {
  for (int i = 0; i < p->nrecv; i++) p->recv[i].words[1] = p->rstep[i];
  for (int i = 0; i < p->nsend; i++) {
    p->send[i].words[0] = p->sstep[i];
    p->send[i].words[2] = p->head_seen[i];
  }
}

/* 8 bytes at byte offset at of a buffer of total bytes (zeros past the end), and the store. */
__device__ static inline uint64_t ld8(const char* p, size_t at, size_t total) {
  if (at >= total) return 0;
  size_t nb = total - at < 8 ? total - at : 8;
  if (nb == 8 && ((uintptr_t)(p + at) & 7) == 0) return *(const uint64_t*)(p + at);
  uint64_t v = 0;
  for (size_t k = 0; k < nb; k++) v |= (uint64_t)(unsigned char)p[at + k] << (8 * k);
  return v;
}
__device__ static inline void st8(char* p, size_t at, size_t total, uint64_t v) {
  if (at >= total) return;
  size_t nb = total - at < 8 ? total - at : 8;
  if (nb == 8 && ((uintptr_t)(p + at) & 7) == 0) {
    *(uint64_t*)(p + at) = v;
    return;
  }
  for (size_t k = 0; k < nb; k++) p[at + k] = (char)(v >> (8 * k));
}

/* One 8-byte word of a step: the elements of r0 (if nr >= 1), my input x (if has_x) and r1 (if
 * nr == 2), reduced in that order (the CPU engine's tree order); post divides for AVG. */
template <typename T, int OP>
__device__ static inline uint64_t red_word(uint64_t r0, uint64_t r1, uint64_t x, int nr, bool has_x,
                                           bool post, T s, int nranks) {
  union {
    uint64_t u;
    T e[8 / sizeof(T)];
  } a, b, c, v;
  a.u = r0, b.u = x, c.u = r1;
#pragma unroll
  for (int k = 0; k < (int)(8 / sizeof(T)); k++) {
    T e = elem<T, OP>(a.e[k], b.e[k], nr >= 1, has_x, post && nr < 2, s, nranks);
    if (nr == 2) {
      e = combine<T, OP>(e, c.e[k]);
      if (OP == RED_AVG && post) e = red_div(e, nranks);
    }
    v.e[k] = e;
  }
  return v.u;
}

/* Simple, two sources or two destinations (a tree's inner node): dst(s) = r0 . x . r1 over n
 * elements, 16-byte packs where every pointer allows, elements after that. */
template <typename T, int OP>
__device__ static void move_multi(const T* r0, const T* r1, bool uncached, const T* in, T* out,
                                  T* s0, T* s1, size_t n, bool post, T s, int nranks) {
  const int nr = r1 ? 2 : r0 ? 1 : 0;
  const int tid = threadIdx.x, nt = blockDim.x;
  uintptr_t bits = (uintptr_t)r0 | (uintptr_t)r1 | (uintptr_t)in | (uintptr_t)out | (uintptr_t)s0 |
                   (uintptr_t)s1;
  size_t npk = (bits & 15) == 0 ? n * sizeof(T) / 16 : 0;
  for (size_t i = tid; i < npk; i += nt) {
    uint64_t a[2] = {0, 0}, b[2] = {0, 0}, x[2] = {0, 0}, v[2];
    if (r0) {
      int4 q = ld_slot((const int4*)r0 + i, uncached);
      memcpy(a, &q, 16);
    }
    if (r1) {
      int4 q = ld_slot((const int4*)r1 + i, uncached);
      memcpy(b, &q, 16);
    }
    if (in) memcpy(x, (const int4*)in + i, 16);
    v[0] = red_word<T, OP>(a[0], b[0], x[0], nr, in != NULL, post, s, nranks);
    v[1] = red_word<T, OP>(a[1], b[1], x[1], nr, in != NULL, post, s, nranks);
    int4 q;
    memcpy(&q, v, 16);
    if (out) ((int4*)out)[i] = q;
    if (s0) ((int4*)s0)[i] = q;
    if (s1) ((int4*)s1)[i] = q;
  }
  for (size_t i = npk * 16 / sizeof(T) + tid; i < n; i += nt) {
    T a = r0 ? ld_fifo(r0 + i, uncached) : T(), b = r1 ? ld_fifo(r1 + i, uncached) : T(),
      x = in ? in[i] : T();
    T v = elem<T, OP>(a, x, nr >= 1, in != NULL, post && nr < 2, s, nranks);
    if (nr == 2) {
      v = combine<T, OP>(v, b);
      if (OP == RED_AVG && post) v = red_div(v, nranks);
    }
    if (out) out[i] = v;
    if (s0) s0[i] = v;
    if (s1) s1[i] = v;
  }
}

/* LL: wait for line p to carry flag (peer memory), or read it once (by_tail: the tail already
 * published its step); uncached: from memory again (pinned host memory). */
__device__ static inline uint64_t ll_read(const char* p, uint32_t flag, bool by_tail, bool uncached,
                                          const volatile uint32_t* abort, int* aborted) {
  uint32_t lo, f1, hi, f2;
  unsigned spins = 0;
  for (;;) {
    if (uncached)
      asm volatile("ld.global.cv.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(lo), "=r"(f1), "=r"(hi), "=r"(f2)
                   : "l"(p)
                   : "memory");
    else
      asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(lo), "=r"(f1), "=r"(hi), "=r"(f2)
                   : "l"(p)
                   : "memory");
    if (by_tail || (f1 == flag && f2 == flag)) break;
    if (wait_aborted(abort, &spins)) {
      *aborted = 1;
      break;
    }
  }
  return (uint64_t)lo | (uint64_t)hi << 32;
}
__device__ static inline void ll_write(char* p, uint64_t v, uint32_t flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"((uint32_t)v),
               "r"(flag), "r"((uint32_t)(v >> 32)), "r"(flag)
               : "memory");
}

/* LL: every thread takes lines tid, tid + nt, ...: 8 bytes of the chunk each. */
template <typename T, int OP>
__device__ static void move_ll(struct prim* p, int nr, int ns, char* const* rs, char* const* ss,
                               const T* in, T* out, size_t n, bool post, T s, int nranks) {
  const size_t total = n * sizeof(T), nlines = (total + 7) / 8;
  uint32_t rflag[PRIM_MAX], sflag[PRIM_MAX];
  for (int i = 0; i < nr; i++) rflag[i] = (uint32_t)(p->rstep[i] + 1);
  for (int i = 0; i < ns; i++) sflag[i] = (uint32_t)(p->sstep[i] + 1);
  int aborted = 0;
  for (size_t l = threadIdx.x; l < nlines; l += blockDim.x) {
    uint64_t r[PRIM_MAX] = {0, 0};
    for (int i = 0; i < nr; i++)
      r[i] = ll_read(rs[i] + l * DEV_LL_LINE, rflag[i], p->recv[i].by_tail != 0,
                     prim_uncached(&p->recv[i]), p->abort, &aborted);
    if (aborted) break;
    uint64_t x = in ? ld8((const char*)in, l * 8, total) : 0;
    uint64_t v = red_word<T, OP>(r[0], r[1], x, nr, in != NULL, post, s, nranks);
    if (out) st8((char*)out, l * 8, total, v);
    for (int i = 0; i < ns; i++) ll_write(ss[i] + l * DEV_LL_LINE, v, sflag[i]);
  }
  if (aborted) p->aborted = 1;
}

/* LL128: warp w takes 4 lines at a time (8 lanes a line, 16 bytes a lane; lane 7 of a line holds
 * its last 8 data bytes and the flag), every lane of the warp storing in the same instruction, so
 * that a line is written whole. A receiving warp polls until every flag of its 4 lines matches. */
template <typename T, int OP>
__device__ static void move_ll128(struct prim* p, int nr, int ns, char* const* rs, char* const* ss,
                                  const T* in, T* out, size_t n, bool post, T s, int nranks) {
  const size_t total = n * sizeof(T);
  const size_t nlines = (total + DEV_LL128_DATA - 1) / DEV_LL128_DATA;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const int j = lane & 7, grp = lane >> 3;
  uint64_t rflag[PRIM_MAX], sflag[PRIM_MAX];
  for (int i = 0; i < nr; i++) rflag[i] = p->rstep[i] + 1;
  for (int i = 0; i < ns; i++) sflag[i] = p->sstep[i] + 1;
  int aborted = 0;
  for (size_t base = (size_t)warp * 4; base < nlines; base += (size_t)nwarps * 4) {
    const size_t line = base + grp;
    const bool active = line < nlines;
    const size_t at = line * DEV_LL128_DATA + 16 * (size_t)j;
    const size_t off = line * DEV_LL128_LINE + 16 * (size_t)j;
    uint64_t r[PRIM_MAX][2] = {{0, 0}, {0, 0}};
    for (int i = 0; i < nr; i++) {
      const bool by_tail = p->recv[i].by_tail != 0, uncached = prim_uncached(&p->recv[i]);
      unsigned spins = 0;
      for (;;) {
        uint64_t a = 0, b = 0;
        if (active) {
          if (uncached)
            asm volatile("ld.global.cv.v2.u64 {%0, %1}, [%2];"
                         : "=l"(a), "=l"(b)
                         : "l"(rs[i] + off)
                         : "memory");
          else
            asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
                         : "=l"(a), "=l"(b)
                         : "l"(rs[i] + off)
                         : "memory");
        }
        r[i][0] = a, r[i][1] = b;
        bool ok = by_tail || !active || j != 7 || b == rflag[i];
        if (__all_sync(0xffffffffu, ok)) break;
        if (__any_sync(0xffffffffu, wait_aborted(p->abort, &spins))) {
          aborted = 1;
          break;
        }
      }
      if (aborted) break;
    }
    if (aborted) break;
    if (!active) continue;
    uint64_t x0 = 0, x1 = 0;
    if (in) {
      x0 = ld8((const char*)in, at, total);
      if (j != 7) x1 = ld8((const char*)in, at + 8, total);
    }
    uint64_t v0 = red_word<T, OP>(r[0][0], r[1][0], x0, nr, in != NULL, post, s, nranks);
    uint64_t v1 = red_word<T, OP>(r[0][1], r[1][1], x1, nr, in != NULL, post, s, nranks);
    if (out) {
      st8((char*)out, at, total, v0);
      if (j != 7) st8((char*)out, at + 8, total, v1);
    }
    for (int i = 0; i < ns; i++) {
      uint64_t w1 = j == 7 ? sflag[i] : v1;
      asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(ss[i] + off), "l"(v0), "l"(w1)
                   : "memory");
    }
  }
  if (aborted) p->aborted = 1;
}

/* Which connections a verb uses, what it reads and writes. */
__device__ static inline bool verb_recvs(enum verb v) {
  return v == VERB_RECV || v == VERB_RECV_REDUCE_SEND || v == VERB_RECV_REDUCE_COPY_SEND ||
         v == VERB_RECV_COPY_SEND || v == VERB_RECV_REDUCE_COPY;
}
__device__ static inline bool verb_sends(enum verb v) {
  return v == VERB_SEND || v == VERB_RECV_REDUCE_SEND || v == VERB_RECV_REDUCE_COPY_SEND ||
         v == VERB_RECV_COPY_SEND || v == VERB_COPY_SEND;
}

/* One step of a schedule: verb on len elements at in + in_off / out + out_off, receiving from
 * every receive connection and sending to every send connection of p as the verb says.
 * Thread 0 says which step it wants (for a network proxy), waits for a free slot on every send
 * connection (head) and, where the tail publishes the step (Simple, or host memory), for the
 * data; the block moves the chunk (LL and LL128 poll the lines' flags themselves); then thread 0
 * publishes: the tail where it is the publication (after a system fence), the head to every
 * sender. Not inlined: one copy per kernel instantiation keeps the build short. */
template <int PROTO, typename T, int OP>
__device__ static __noinline__ void prim_step(struct prim* p, enum verb verb, const T* in, T* out,
                                              size_t in_off, size_t out_off, size_t len, T s,
                                              int nranks) {
  const int tid = threadIdx.x;
  const int nr = verb_recvs(verb) ? p->nrecv : 0, ns = verb_sends(verb) ? p->nsend : 0;
  if (tid == 0) {
    unsigned spins = 0;
    for (int i = 0; i < nr && !p->aborted; i++) {
      if (PROTO != DEV_PROTO_SIMPLE && !p->recv[i].by_tail) continue;
      if (tail_reached(p->recv[i].fifo, p->rstep[i] + 1)) continue;
      const uint64_t* tail = (const uint64_t*)(p->recv[i].fifo + DEV_FIFO_TAIL);
      while (ld_acquire_sys(tail) < p->rstep[i] + 1)
        if (wait_aborted(p->abort, &spins)) {
          p->aborted = 1;
          break;
        }
    }
    for (int i = 0; i < ns && !p->aborted; i++) {
      const uint64_t* head = (const uint64_t*)(p->send[i].fifo + DEV_FIFO_HEAD);
      while (p->sstep[i] + 1 > p->head_seen[i] + (uint64_t)p->nslots) {
        p->head_seen[i] = ld_volatile(head);
        if (wait_aborted(p->abort, &spins)) {
          p->aborted = 1;
          break;
        }
      }
    }
  }
  __syncthreads();
  if (p->aborted) return;
  char* rs[PRIM_MAX] = {NULL, NULL};
  char* ss[PRIM_MAX] = {NULL, NULL};
  for (int i = 0; i < nr; i++)
    rs[i] = p->recv[i].fifo + p->recv[i].delta +
            dev_slot_offset(PROTO, p->recv[i].by_tail, p->nslots, p->slot_bytes, p->rstep[i]);
  for (int i = 0; i < ns; i++)
    ss[i] = p->send[i].fifo + p->send[i].delta +
            dev_slot_offset(PROTO, p->send[i].by_tail, p->nslots, p->slot_bytes, p->sstep[i]);
  const T* xin = NULL;
  T* xout = NULL;
  bool post = false;
  switch (verb) {
  case VERB_SEND:
  case VERB_RECV_REDUCE_SEND:
    xin = in + in_off;
    break;
  case VERB_RECV_REDUCE_COPY_SEND:
  case VERB_COPY:
  case VERB_RECV_REDUCE_COPY:
    xin = in + in_off, xout = out + out_off, post = true;
    break;
  case VERB_RECV_COPY_SEND:
  case VERB_RECV:
    xout = out + out_off;
    break;
  case VERB_COPY_SEND:
    xin = in + in_off, xout = out + out_off;
    break;
  default:
    break;
  }
  /* In place copies need no store (only collectives that do not reduce copy without post). */
  if (xin != NULL && xin == xout && !post) xout = NULL;
  if (PROTO == DEV_PROTO_SIMPLE || (nr == 0 && ns == 0)) {
    /* Slots read uncached where any source is host memory. */
    const bool uncached =
        (nr > 0 && prim_uncached(&p->recv[0])) || (nr > 1 && prim_uncached(&p->recv[1]));
    if (nr <= 1 && ns <= 1) {
      if (xin != NULL || xout != NULL || nr || ns)
        move<T, OP>((const T*)rs[0], xin, xout, (T*)ss[0], len, post, s, nranks, uncached);
    } else {
      move_multi<T, OP>((const T*)rs[0], (const T*)rs[1], uncached, xin, xout, (T*)ss[0], (T*)ss[1],
                        len, post, s, nranks);
    }
  } else if (PROTO == DEV_PROTO_LL) {
    move_ll<T, OP>(p, nr, ns, rs, ss, xin, xout, len, post, s, nranks);
  } else {
    move_ll128<T, OP>(p, nr, ns, rs, ss, xin, xout, len, post, s, nranks);
  }
  /* Steps published by the tail: the slot's byte count (for a network proxy), then a system
   * fence, which orders the slot and the count before the tail. */
  bool tails = false;
  for (int i = 0; i < ns; i++) tails |= PROTO == DEV_PROTO_SIMPLE || p->send[i].by_tail;
  __syncthreads();
  if (tid == 0 && !p->aborted) {
    if (tails) { /* after the barrier, thread 0's fence orders the whole block's stores */
      size_t bytes = PROTO == DEV_PROTO_SIMPLE ? len * sizeof(T)
                     : PROTO == DEV_PROTO_LL
                         ? (len * sizeof(T) + 7) / 8 * DEV_LL_LINE
                         : (len * sizeof(T) + DEV_LL128_DATA - 1) / DEV_LL128_DATA * DEV_LL128_LINE;
      for (int i = 0; i < ns; i++)
        st_volatile(
            (uint64_t*)(p->send[i].fifo + DEV_FIFO_SIZES + 8 * (p->sstep[i] % (uint64_t)p->nslots)),
            (uint64_t)bytes);
      __threadfence_system();
    }
    for (int i = 0; i < ns; i++) {
      ++p->sstep[i];
      if (PROTO == DEV_PROTO_SIMPLE || p->send[i].by_tail)
        st_volatile((uint64_t*)(p->send[i].fifo + DEV_FIFO_TAIL), p->sstep[i]);
    }
    if (nr) __threadfence();
    for (int i = 0; i < nr; i++)
      st_volatile((uint64_t*)(p->recv[i].fifo + DEV_FIFO_HEAD), ++p->rstep[i]);
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
/* The caller's own launch of `kernel` (dev.h struct dev_launch_ex). */
template <typename F>
static inline cudaError_t dev_launch_by(const struct dev_launch_ex* ex, F* kernel, unsigned grid,
                                        unsigned block, const void* arg, cudaStream_t stream,
                                        size_t shared_bytes = 0) {
  return ex->launch(ex, (const void*)kernel, grid, block, shared_bytes, (void*)arg, stream);
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
