/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU engine's reduction kernels: element-wise combine of host arrays for every NCCL data
 * type and reduction operator, with the semantics of util/red_op.h (the same the kernels use).
 * Called by the CPU engine only (src/cpu); no locks, no allocation. */
#ifndef MONEL_CPU_REDUCE_H
#define MONEL_CPU_REDUCE_H
#include <stddef.h>
#include "nccl.h"
#include "util/red_op.h"

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
