/* The CPU engine's reduction kernels: element-wise combine of host arrays for every NCCL data
 * type and reduction operator.
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
 * exactly in the type for float/double, with wraparound for integers.
 * MAX/MIN on floating types propagate NaN (like CUDA's __hmax_nan): if either input is NaN the
 * result is NaN. max(-0, +0) = +0 and min(-0, +0) = -0 in either order, so the result never
 * depends on the order of the ranks.
 * Called by the CPU engine only (src/cpu); no locks, no allocation. */
#ifndef MONEL_CPU_REDUCE_H
#define MONEL_CPU_REDUCE_H
#include <stddef.h>
#include "nccl.h"

enum { RED_SUM = 0, RED_PROD = 1, RED_MAX = 2, RED_MIN = 3, RED_AVG = 4, RED_PREMULSUM = 5 };

/* Flags of red_apply. */
#define RED_FIRST 1 /* acc is ignored: dst = pre(in) */
#define RED_LAST  2 /* apply post (AVG: divide by nranks) to the result */

struct red_op {
  int kind;                  /* RED_* */
  int nranks;                /* divisor of RED_AVG (> 0) */
  unsigned char scalar[8];   /* PREMULSUM factor, stored in the op's data type */
  const void* device_scalar; /* PREMULSUM factor the CUDA engine reads when the op runs, or NULL */
};

/* dst[i] = acc[i] (+) pre(in[i]) for i < count, or pre(in[i]) with RED_FIRST; then post with
 * RED_LAST. dst may be the same array as acc or in (not a partial overlap). */
void red_apply(void* dst, const void* acc, const void* in, size_t count, ncclDataType_t dt,
               const struct red_op* op, int flags);

/* dst = post(src): divides by nranks for RED_AVG, a plain copy otherwise. dst may equal src. */
void red_copy_post(void* dst, const void* src, size_t count, ncclDataType_t dt,
                   const struct red_op* op);

/* dst = pre(src): multiplies by the scalar for RED_PREMULSUM, a plain copy otherwise. */
void red_pre(void* dst, const void* src, size_t count, ncclDataType_t dt, const struct red_op* op);
#endif
