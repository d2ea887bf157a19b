/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the GPU tests: check macros, the data types and test ops, inputs that every order of
 * reduction sums to the same bits, and the expected results. */
#ifndef MONEL_TESTS_GPU_CHECK_H
#define MONEL_TESTS_GPU_CHECK_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "nccl.h"
#include "util/dtype.h"

#define MAXDEV 16
#define CK(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      printf("FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));            \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define NK(call)                                                                                   \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != ncclSuccess) {                                                                       \
      printf("FAIL %s:%d %s: %s (%s)\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_),        \
             ncclGetLastError(NULL));                                                              \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

enum { OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_AVG, OP_PREMUL_HOST, OP_PREMUL_DEV, NOPS };
static const char* const op_names[NOPS] = {"sum", "prod",   "max",       "min",
                                           "avg", "premul", "premul_dev"};
static const ncclDataType_t types[] = {ncclInt8,    ncclUint8,    ncclInt32,      ncclUint32,
                                       ncclInt64,   ncclUint64,   ncclFloat16,    ncclFloat32,
                                       ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
#define NTYPES (int)(sizeof types / sizeof types[0])

static inline int is_unsigned(ncclDataType_t dt) {
  return dt == ncclUint8 || dt == ncclUint32 || dt == ncclUint64;
}

static inline double input_value(int op, ncclDataType_t dt, int rank, size_t i) {
  int k = (int)((i * 7 + (size_t)rank * 3) % 5);
  double v;
  if (op == OP_PROD) {
    static const double pv[5] = {1, 2, -1, 1, -2};
    v = pv[k];
  } else {
    v = k - 2;
  }
  return is_unsigned(dt) ? fabs(v) : v;
}

static inline void put(void* buf, ncclDataType_t dt, size_t i, double v) {
  switch (dt) {
  case ncclInt8:
    ((int8_t*)buf)[i] = (int8_t)(int64_t)v;
    break;
  case ncclUint8:
    ((uint8_t*)buf)[i] = (uint8_t)(uint64_t)(int64_t)v;
    break;
  case ncclInt32:
    ((int32_t*)buf)[i] = (int32_t)(int64_t)v;
    break;
  case ncclUint32:
    ((uint32_t*)buf)[i] = (uint32_t)(uint64_t)(int64_t)v;
    break;
  case ncclInt64:
    ((int64_t*)buf)[i] = (int64_t)v;
    break;
  case ncclUint64:
    ((uint64_t*)buf)[i] = (uint64_t)(int64_t)v;
    break;
  case ncclFloat16:
    ((uint16_t*)buf)[i] = dtype_float_to_half((float)v);
    break;
  case ncclFloat32:
    ((float*)buf)[i] = (float)v;
    break;
  case ncclFloat64:
    ((double*)buf)[i] = v;
    break;
  case ncclBfloat16:
    ((uint16_t*)buf)[i] = dtype_float_to_bf16((float)v);
    break;
  case ncclFloat8e4m3:
    ((uint8_t*)buf)[i] = dtype_float_to_e4m3_sat((float)v);
    break;
  case ncclFloat8e5m2:
    ((uint8_t*)buf)[i] = dtype_float_to_e5m2_sat((float)v);
    break;
  default:
    break;
  }
}

/* x / n to float with round-to-odd: the final rounding to a narrow type is then the only one. */
static inline float div_odd(float x, int n) {
  double q = (double)x / (double)n;
  float f = (float)q;
  if ((double)f != q) {
    uint32_t u = dtype_float_bits(f);
    if (fabs((double)f) > fabs(q)) u--;
    f = dtype_bits_float(u | 1u);
  }
  return f;
}

static inline void put_avg(void* buf, ncclDataType_t dt, size_t i, double sum, int n) {
  if (dt == ncclInt8 || dt == ncclInt32 || dt == ncclInt64)
    put(buf, dt, i, (double)((int64_t)sum / n));
  else if (is_unsigned(dt))
    put(buf, dt, i, (double)((uint64_t)sum / (uint64_t)n));
  else if (dt == ncclFloat32)
    ((float*)buf)[i] = (float)(sum / n);
  else if (dt == ncclFloat64)
    ((double*)buf)[i] = sum / n;
  else
    put(buf, dt, i, div_odd((float)sum, n));
}

static inline double scalar_for(int nranks) {
  return nranks <= 4 ? 2.0 : 1.0;
}

/* The reduction over every rank of element `src` of the inputs, stored at buf[i]. */
static inline void expect_one(void* buf, size_t i, int op, ncclDataType_t dt, size_t src,
                              int nranks) {
  double s = scalar_for(nranks), acc = 0;
  for (int r = 0; r < nranks; r++) {
    double v = input_value(op, dt, r, src);
    if (op == OP_PREMUL_HOST || op == OP_PREMUL_DEV) v *= s;
    if (r == 0)
      acc = v;
    else if (op == OP_PROD)
      acc *= v;
    else if (op == OP_MAX)
      acc = v > acc ? v : acc;
    else if (op == OP_MIN)
      acc = v < acc ? v : acc;
    else
      acc += v;
  }
  if (op == OP_AVG)
    put_avg(buf, dt, i, acc, nranks);
  else
    put(buf, dt, i, acc);
}

static inline void expected(void* buf, int op, ncclDataType_t dt, size_t count, int nranks) {
  for (size_t i = 0; i < count; i++) expect_one(buf, i, op, dt, i, nranks);
}

/* The ncclRedOp_t of a test op (PREMULSUM ops are created per case). */
static inline ncclRedOp_t base_op(int op) {
  return op == OP_PROD  ? ncclProd
         : op == OP_MAX ? ncclMax
         : op == OP_MIN ? ncclMin
         : op == OP_AVG ? ncclAvg
                        : ncclSum;
}

#endif
