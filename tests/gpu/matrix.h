/* SPDX-License-Identifier: BSD-3-Clause */
/* The exact-check matrix (tests/gpu/matrix.c): what every element of every buffer must hold.
 *
 * One formula, compiled twice: as host C for the CPU engine and for messages, and as CUDA device
 * code (MX_HD) for the fill and check kernels of matrix_kernels.cu, so that a GPU run never
 * copies a large buffer to the host. Every value is a function of (case, rank, index) only.
 *
 * Reducing collectives (AllReduce, Reduce, ReduceScatter) get small integers: element i of rank r
 * is v = k - 2 with k = (7i + 3r + salt) mod 5 (prod: one of 1, 2, -1, 1, -2; unsigned types:
 * |v|). Over at most 12 ranks every partial sum, product, min and max of such values (the
 * reduction of any subset of the ranks), also pre-multiplied by 2, is a small integer that every
 * type holds exactly (fp8 e5m2 included), so any order of reduction gives the same bits; over at
 * most 64 ranks the same holds in the 32- and 64-bit types (MX_WIDE_TYPES), which a run of more
 * than 12 ranks is restricted to. avg is
 * the exact sum divided once by nranks: truncated for integers, correctly rounded for float and
 * double, and for the narrow types the quotient rounded to odd in float, then once to the type
 * (the one rounding that is left). With 2, 4 or 8 ranks it is exact in every floating type.
 *
 * Data-moving collectives (Broadcast, AllGather, AlltoAll, AlltoAllv, Gather, Scatter,
 * Send/Recv) get a hash of (rank, index, salt) over every bit of the element, so a block that
 * lands in the wrong place, a stale block or a converted value shows. The salt changes with every
 * case, so what a previous case left behind never passes for this one's result. */
#ifndef MONEL_TESTS_GPU_MATRIX_H
#define MONEL_TESTS_GPU_MATRIX_H
#include <stddef.h>
#include <stdint.h>
#include "nccl.h"
#include "util/dtype.h"

#define MX_HD MONEL_HD

enum mx_coll {
  MX_ALLREDUCE,
  MX_BROADCAST,
  MX_REDUCE,
  MX_ALLGATHER,
  MX_REDUCESCATTER,
  MX_ALLTOALL,
  MX_ALLTOALLV,
  MX_GATHER,
  MX_SCATTER,
  MX_SENDRECV,
  MX_NCOLLS
};
enum mx_op { MX_SUM, MX_PROD, MX_MAX, MX_MIN, MX_AVG, MX_PREMUL, MX_PREMUL_DEV, MX_NOPS };
/* Send/Recv patterns (the "variant" of a Send/Recv case; rooted collectives keep the root there):
 * ring: send to the next rank, receive from the previous; pairs: a block to and from every rank,
 * this one included, in one group; self: send to and receive from this rank only. */
enum mx_pattern { MX_SR_RING, MX_SR_PAIRS, MX_SR_SELF, MX_SR_NPATTERNS };
/* What a checked element must hold. */
enum mx_kind { MX_OUTPUT, MX_INPUT, MX_UNTOUCHED };

#define MX_ALLTYPES_RANKS 12 /* the inputs stay exact in every type up to 12 ranks (fp8 e5m2) */
#define MX_MAXRANKS       64 /* ... and in the 32- and 64-bit types up to 64 (mx_wide_types) */
/* The types whose every partial result stays exact up to MX_MAXRANKS ranks: sums of at most 4 x 64
 * in magnitude, products powers of two up to 2^64 in floating types (exact) and wrapping alike in
 * any order in integer ones, averages divided once. */
#define MX_WIDE_TYPES                                                                              \
  (1u << ncclInt32 | 1u << ncclUint32 | 1u << ncclInt64 | 1u << ncclUint64 | 1u << ncclFloat32 |   \
   1u << ncclFloat64)
#define MX_MAXREGIONS  4
#define MX_GUARD       64   /* elements after each buffer's used part that must stay untouched */
#define MX_UNTOUCHED_B 0xa5 /* every byte of an untouched element */

/* A case, as every rank sees it. */
struct mx_case {
  int coll, op, nranks, variant; /* variant: the root, or the Send/Recv pattern */
  int dt;                        /* ncclDataType_t */
  uint32_t salt;
  size_t count; /* the count argument of the call (per rank / per peer / per block) */
};

/* One region of a rank's buffer to check after the call: element i of `base` must hold
 * mx_expect(case, rank, kind, i). */
struct mx_region {
  void* base;
  size_t len;
  int kind;
};

/* Mismatches of one region: how many, and the first index as ~index (the largest ~index is the
 * first one), so that zeroed memory is the state with none. */
struct mx_result {
  unsigned long long bad, first;
};

MX_HD static inline int mx_reduces(int coll) {
  return coll == MX_ALLREDUCE || coll == MX_REDUCE || coll == MX_REDUCESCATTER;
}

MX_HD static inline int mx_unsigned(int dt) {
  return dt == ncclUint8 || dt == ncclUint32 || dt == ncclUint64;
}

/* The PreMulSum scalar. */
MX_HD static inline double mx_scalar(void) {
  return 2.0;
}

/* Input of a reducing collective: element i of rank r. */
MX_HD static inline double mx_small(const struct mx_case* c, int r, size_t i) {
  int k = (int)(((i % 5) * 7 + (size_t)r * 3 + c->salt % 5) % 5);
  double v;
  if (c->op == MX_PROD)
    v = k == 1 ? 2.0 : k == 2 ? -1.0 : k == 4 ? -2.0 : 1.0;
  else
    v = (double)(k - 2);
  if (mx_unsigned(c->dt) && v < 0) v = -v;
  return v;
}

/* The bits of v (an integer that the type holds, or the quotient of an average) in type dt. */
MX_HD static inline uint64_t mx_encode(int dt, double v) {
  switch (dt) {
  case ncclInt8:
    return (uint8_t)(int8_t)(int64_t)v;
  case ncclUint8:
    return (uint8_t)(uint64_t)v;
  case ncclInt32:
    return (uint32_t)(int32_t)(int64_t)v;
  case ncclUint32:
    return (uint32_t)(uint64_t)v;
  case ncclInt64:
    return (uint64_t)(int64_t)v;
  case ncclUint64:
    return (uint64_t)v;
  case ncclFloat16:
    return dtype_float_to_half((float)v);
  case ncclFloat32:
    return dtype_float_bits((float)v);
  case ncclFloat64: {
#ifdef __CUDA_ARCH__
    return (uint64_t)__double_as_longlong(v);
#else
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
#endif
  }
  case ncclBfloat16:
    return dtype_float_to_bf16((float)v);
  case ncclFloat8e4m3:
    return dtype_float_to_e4m3_sat((float)v);
  case ncclFloat8e5m2:
    return dtype_float_to_e5m2_sat((float)v);
  default:
    return 0;
  }
}

/* x / n as a float rounded to odd, so that rounding it to a narrower type is the only rounding. */
MX_HD static inline float mx_div_odd(double x, int n) {
  double q = x / (double)n;
  float f = (float)q;
  if ((double)f != q) {
    uint32_t u = dtype_float_bits(f);
    double af = f < 0 ? -(double)f : (double)f, aq = q < 0 ? -q : q;
    if (af > aq) u--;
    f = dtype_bits_float(u | 1u);
  }
  return f;
}

/* The bits of sum / n as avg stores them in type dt. */
MX_HD static inline uint64_t mx_avg_bits(int dt, double sum, int n) {
  if (dt == ncclInt8 || dt == ncclInt32 || dt == ncclInt64)
    return mx_encode(dt, (double)((int64_t)sum / n));
  if (mx_unsigned(dt)) return mx_encode(dt, (double)((uint64_t)sum / (uint64_t)n));
  if (dt == ncclFloat32 || dt == ncclFloat64) return mx_encode(dt, sum / n);
  return mx_encode(dt, (double)mx_div_odd(sum, n));
}

/* The reduction over every rank of input element i. */
MX_HD static inline uint64_t mx_reduced(const struct mx_case* c, size_t i) {
  double acc = 0;
  for (int r = 0; r < c->nranks; r++) {
    double v = mx_small(c, r, i);
    if (c->op == MX_PREMUL || c->op == MX_PREMUL_DEV) v *= mx_scalar();
    if (r == 0)
      acc = v;
    else if (c->op == MX_PROD)
      acc *= v;
    else if (c->op == MX_MAX)
      acc = v > acc ? v : acc;
    else if (c->op == MX_MIN)
      acc = v < acc ? v : acc;
    else
      acc += v;
  }
  return c->op == MX_AVG ? mx_avg_bits(c->dt, acc, c->nranks) : mx_encode(c->dt, acc);
}

/* Bits that cover one element of dt. */
MX_HD static inline uint64_t mx_mask(int dt) {
  size_t es = dtype_size((ncclDataType_t)dt);
  return es >= 8 ? ~0ull : (1ull << (8 * es)) - 1;
}

/* Element i of rank r in a data-moving collective: a hash of (r, i, salt), all bits of the type. */
MX_HD static inline uint64_t mx_pattern(const struct mx_case* c, int r, size_t i) {
  uint64_t x = (uint64_t)i ^ ((uint64_t)(c->salt & 0xffffu) << 40) ^ ((uint64_t)r << 56);
  x = (x ^ (x >> 29)) * 0xc2b2ae3d27d4eb4full;
  x = (x ^ (x >> 32)) * 0x9fb21c651e98df25ull;
  x ^= x >> 28;
  return x & mx_mask(c->dt);
}

/* What rank r puts at index i of its input. */
MX_HD static inline uint64_t mx_input(const struct mx_case* c, int r, size_t i) {
  return mx_reduces(c->coll) ? mx_encode(c->dt, mx_small(c, r, i)) : mx_pattern(c, r, i);
}

/* AlltoAllv: how many elements rank s sends to rank d (0 to count; some blocks are empty). */
MX_HD static inline size_t mx_vcount(const struct mx_case* c, int s, int d) {
  return c->count * (size_t)(1 + (s + 2 * d + (int)(c->salt % 4)) % 4) / 4;
}
/* Rank s packs its blocks in the order of their destinations... */
MX_HD static inline size_t mx_sdispl(const struct mx_case* c, int s, int d) {
  size_t off = 0;
  for (int p = 0; p < d; p++) off += mx_vcount(c, s, p);
  return off;
}
/* ...and rank d stores what it receives in the reverse order of the sources. */
MX_HD static inline size_t mx_rdispl(const struct mx_case* c, int d, int s) {
  size_t off = 0;
  for (int p = c->nranks - 1; p > s; p--) off += mx_vcount(c, p, d);
  return off;
}
MX_HD static inline size_t mx_vsent(const struct mx_case* c, int s) {
  return mx_sdispl(c, s, c->nranks);
}
MX_HD static inline size_t mx_vreceived(const struct mx_case* c, int d) {
  return mx_rdispl(c, d, -1);
}

/* What rank r must hold at index i of its receive buffer after the call. */
MX_HD static inline uint64_t mx_output(const struct mx_case* c, int r, size_t i) {
  size_t n = (size_t)c->nranks, cnt = c->count;
  int root = c->variant;
  switch (c->coll) {
  case MX_ALLREDUCE:
  case MX_REDUCE:
    return mx_reduced(c, i);
  case MX_REDUCESCATTER:
    return mx_reduced(c, (size_t)r * cnt + i);
  case MX_BROADCAST:
    return mx_input(c, root, i);
  case MX_ALLGATHER:
  case MX_GATHER:
    return mx_input(c, (int)(i / cnt), i % cnt);
  case MX_ALLTOALL:
    return mx_input(c, (int)(i / cnt), (size_t)r * cnt + i % cnt);
  case MX_SCATTER:
    return mx_input(c, root, (size_t)r * cnt + i);
  case MX_ALLTOALLV: {
    size_t off = 0;
    for (int s = c->nranks - 1; s >= 0; s--) {
      size_t k = mx_vcount(c, s, r);
      if (i < off + k) return mx_input(c, s, mx_sdispl(c, s, r) + (i - off));
      off += k;
    }
    return ~0ull; /* past what this rank receives: never asked */
  }
  case MX_SENDRECV:
    if (c->variant == MX_SR_RING) return mx_input(c, (int)(((size_t)r + n - 1) % n), i);
    if (c->variant == MX_SR_PAIRS) return mx_input(c, (int)(i / cnt), (size_t)r * cnt + i % cnt);
    return mx_input(c, r, i);
  default:
    return ~0ull;
  }
}

MX_HD static inline uint64_t mx_expect(const struct mx_case* c, int r, int kind, size_t i) {
  if (kind == MX_OUTPUT) return mx_output(c, r, i);
  if (kind == MX_INPUT) return mx_input(c, r, i);
  return 0xa5a5a5a5a5a5a5a5ull & mx_mask(c->dt);
}

/* Element i of a buffer of type dt, as bits; and the store. */
MX_HD static inline uint64_t mx_load(const void* buf, int dt, size_t i) {
  switch (dtype_size((ncclDataType_t)dt)) {
  case 1:
    return ((const uint8_t*)buf)[i];
  case 2:
    return ((const uint16_t*)buf)[i];
  case 4:
    return ((const uint32_t*)buf)[i];
  default:
    return ((const uint64_t*)buf)[i];
  }
}

MX_HD static inline void mx_store(void* buf, int dt, size_t i, uint64_t v) {
  switch (dtype_size((ncclDataType_t)dt)) {
  case 1:
    ((uint8_t*)buf)[i] = (uint8_t)v;
    break;
  case 2:
    ((uint16_t*)buf)[i] = (uint16_t)v;
    break;
  case 4:
    ((uint32_t*)buf)[i] = (uint32_t)v;
    break;
  default:
    ((uint64_t*)buf)[i] = v;
  }
}

/* The kernels of matrix_kernels.cu (cudaError_t as int). fill: element j of base, j < len, gets
 * mx_input(c, rank, j), and *scalar (when not NULL) the PreMulSum scalar in type c->dt. check:
 * adds the elements of each region that differ from mx_expect to res[region] (zeroed by the
 * caller). flip: changes one byte. */
#ifdef __cplusplus
extern "C" {
#endif
int mx_dev_fill(const struct mx_case* c, int rank, void* base, size_t len, void* scalar,
                cudaStream_t stream);
int mx_dev_check(const struct mx_case* c, int rank, const struct mx_region* regions, int nregions,
                 struct mx_result* res, cudaStream_t stream);
int mx_dev_flip(void* byte, cudaStream_t stream);
#ifdef __cplusplus
}
#endif

#endif
