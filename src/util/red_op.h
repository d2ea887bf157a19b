/* SPDX-License-Identifier: BSD-3-Clause */
/* Reduction operators: the type every layer passes around (struct red_op, RED_*) and what each
 * operator does to one pair of elements, written once for the CPU engine (cpu/reduce.c) and the
 * kernels (device/reduce.cuh). Header-only; compiles as C11 host code and as CUDA (MONEL_HD).
 *
 * An operator is pre(x) on each input, a combine, then post(result) once at the end:
 *   RED_SUM        pre: x            combine: +              post: none
 *   RED_PROD       pre: x            combine: *              post: none
 *   RED_MAX/MIN    pre: x            combine: max/min        post: none
 *   RED_AVG        pre: x            combine: +              post: / nranks
 *   RED_PREMULSUM  pre: x * scalar   combine: +              post: none
 * Integer types wrap on overflow (two's complement, computed unsigned: no undefined behaviour);
 * AVG on integers divides truncating toward zero ((-7)/2 = -3). Floating AVG divides correctly
 * rounded. half, bfloat16 and fp8 compute each step in float and round back to the type (ties to
 * even) after every step; fp8 results saturate to the largest finite value as CUDA's fp8 types
 * do (see util/dtype.h). PREMULSUM multiplies in float and rounds once for the narrow types,
 * exactly in the type for float/double, with wraparound for integers. No multiply-add is ever
 * fused (the kernels use the _rn intrinsics; host code is C11, which does not contract).
 * MAX/MIN on floating types propagate NaN (like CUDA's __hmax_nan): if either input is NaN the
 * result is NaN. max(-0, +0) = +0 and min(-0, +0) = -0 in either order, so the result never
 * depends on the order of the ranks.
 *
 * Element functions, one set per type NAME (i8 u8 i32 u32 i64 u64 f32 f64 f16 bf16 e4m3 e5m2;
 * the narrow types as their bits): red_sum_NAME(a, b), red_prod_NAME(a, b) (also PREMULSUM's
 * pre: x times the scalar), red_max_NAME, red_min_NAME, red_div_NAME(x, nranks) (AVG's post). */
#ifndef MONEL_UTIL_RED_OP_H
#define MONEL_UTIL_RED_OP_H
#include <math.h>
#include <stdint.h>
#include "util/dtype.h"

enum { RED_SUM = 0, RED_PROD = 1, RED_MAX = 2, RED_MIN = 3, RED_AVG = 4, RED_PREMULSUM = 5 };

/* Flags of red_apply (cpu/reduce.h). */
#define RED_FIRST 1 /* acc is ignored: dst = pre(in) */
#define RED_LAST  2 /* apply post (AVG: divide by nranks) to the result */

struct red_op {
  int kind;                  /* RED_* */
  int nranks;                /* divisor of RED_AVG (> 0) */
  unsigned char scalar[8];   /* PREMULSUM factor, stored in the op's data type */
  const void* device_scalar; /* PREMULSUM factor the CUDA engine reads when the op runs, or NULL */
};

/* ---- integers: sums and products in the unsigned type U (wraparound), AVG divides in W ---- */
#define RED_INT_OPS(NAME, T, U, W)                                                                 \
  MONEL_HD static inline T red_sum_##NAME(T a, T b) {                                              \
    return (T)(U)((U)a + (U)b);                                                                    \
  }                                                                                                \
  MONEL_HD static inline T red_prod_##NAME(T a, T b) {                                             \
    return (T)(U)((U)a * (U)b);                                                                    \
  }                                                                                                \
  MONEL_HD static inline T red_max_##NAME(T a, T b) {                                              \
    return a > b ? a : b;                                                                          \
  }                                                                                                \
  MONEL_HD static inline T red_min_##NAME(T a, T b) {                                              \
    return a < b ? a : b;                                                                          \
  }                                                                                                \
  MONEL_HD static inline T red_div_##NAME(T x, int n) {                                            \
    return (T)((W)x / (W)n);                                                                       \
  }

RED_INT_OPS(i8, int8_t, uint8_t, int64_t)
RED_INT_OPS(u8, uint8_t, uint8_t, uint64_t)
RED_INT_OPS(i32, int32_t, uint32_t, int64_t)
RED_INT_OPS(u32, uint32_t, uint32_t, uint64_t)
RED_INT_OPS(i64, int64_t, uint64_t, int64_t)
RED_INT_OPS(u64, uint64_t, uint64_t, uint64_t)

/* ---- float and double: computed in the type, never fused; NaN-propagating max/min with an
 * order-independent sign of zero; AVG divides in double, correctly rounded (for float, a
 * quotient of two floats rounded to double and then to float is rounded once) ---- */
#ifdef __CUDA_ARCH__
#define RED_ADD_F32(a, b) __fadd_rn(a, b)
#define RED_MUL_F32(a, b) __fmul_rn(a, b)
#define RED_ADD_F64(a, b) __dadd_rn(a, b)
#define RED_MUL_F64(a, b) __dmul_rn(a, b)
#else
#define RED_ADD_F32(a, b) ((a) + (b))
#define RED_MUL_F32(a, b) ((a) * (b))
#define RED_ADD_F64(a, b) ((a) + (b))
#define RED_MUL_F64(a, b) ((a) * (b))
#endif

#define RED_FLOAT_OPS(NAME, T, ADD, MUL)                                                           \
  MONEL_HD static inline T red_sum_##NAME(T a, T b) {                                              \
    return ADD(a, b);                                                                              \
  }                                                                                                \
  MONEL_HD static inline T red_prod_##NAME(T a, T b) {                                             \
    return MUL(a, b);                                                                              \
  }                                                                                                \
  MONEL_HD static inline T red_max_##NAME(T a, T b) {                                              \
    if (a != a) return a;                                                                          \
    if (b != b) return b;                                                                          \
    if (a != b) return a > b ? a : b;                                                              \
    return signbit(a) ? b : a;                                                                     \
  }                                                                                                \
  MONEL_HD static inline T red_min_##NAME(T a, T b) {                                              \
    if (a != a) return a;                                                                          \
    if (b != b) return b;                                                                          \
    if (a != b) return a < b ? a : b;                                                              \
    return signbit(a) ? a : b;                                                                     \
  }                                                                                                \
  MONEL_HD static inline T red_div_##NAME(T x, int n) {                                            \
    return (T)((double)x / (double)n);                                                             \
  }

RED_FLOAT_OPS(f32, float, RED_ADD_F32, RED_MUL_F32)
RED_FLOAT_OPS(f64, double, RED_ADD_F64, RED_MUL_F64)

/* x / n rounded to float with round-to-odd: a later round-to-nearest-even to any format of at
 * most 22 significant bits then gives the correctly rounded quotient (no double rounding). */
MONEL_HD static inline float red_div_to_odd(float x, int n) {
  double q = (double)x / (double)n;
  float f = (float)q;
  if (q == q && (double)f != q) {
    uint32_t u = dtype_float_bits(f);
    if (fabs((double)f) > fabs(q)) u--; /* went away from zero: step back (sign-magnitude) */
    f = dtype_bits_float(u | 1u);
  }
  return f;
}

/* ---- half, bfloat16, fp8 (S: their bits): each step in float, rounded back to the type. Sums,
 * products and quotients of values of at most 11 significant bits are rounded once: float
 * carries more than twice their precision plus two bits, so rounding through float equals
 * rounding directly. ---- */
#define RED_NARROW_FN(OP, NAME, S, TO_F, FROM_F)                                                   \
  MONEL_HD static inline S red_##OP##_##NAME(S a, S b) {                                           \
    return FROM_F(red_##OP##_f32(TO_F(a), TO_F(b)));                                               \
  }
#define RED_NARROW_OPS(NAME, S, TO_F, FROM_F)                                                      \
  RED_NARROW_FN(sum, NAME, S, TO_F, FROM_F)                                                        \
  RED_NARROW_FN(prod, NAME, S, TO_F, FROM_F)                                                       \
  RED_NARROW_FN(max, NAME, S, TO_F, FROM_F)                                                        \
  RED_NARROW_FN(min, NAME, S, TO_F, FROM_F)                                                        \
  MONEL_HD static inline S red_div_##NAME(S x, int n) {                                            \
    return FROM_F(red_div_to_odd(TO_F(x), n));                                                     \
  }

RED_NARROW_OPS(f16, uint16_t, dtype_half_to_float, dtype_float_to_half)
RED_NARROW_OPS(bf16, uint16_t, dtype_bf16_to_float, dtype_float_to_bf16)
RED_NARROW_OPS(e4m3, uint8_t, dtype_e4m3_to_float, dtype_float_to_e4m3_sat)
RED_NARROW_OPS(e5m2, uint8_t, dtype_e5m2_to_float, dtype_float_to_e5m2_sat)
#endif
