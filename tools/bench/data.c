/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * data.c - types, operators, input values and exact checking for the benches.
 *
 * Inputs are small integers, so every reduction order gives the same bits in
 * every type: sums stay well inside the exact range, products multiply 1s and
 * a single 2. Only avg on floating types may round, and is checked to 2 ulp.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

static const char* const type_names[ncclNumTypes] = {"int8",   "uint8",    "int32",  "uint32",
                                                     "int64",  "uint64",   "half",   "float",
                                                     "double", "bfloat16", "f8e4m3", "f8e5m2"};
static const size_t type_sizes[ncclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
static const char* const op_names[ncclNumOps] = {"sum", "prod", "max", "min", "avg"};

size_t bench_type_size(ncclDataType_t t) {
  return (unsigned)t < ncclNumTypes ? type_sizes[t] : 0;
}

const char* bench_type_name(ncclDataType_t t) {
  return (unsigned)t < ncclNumTypes ? type_names[t] : "?";
}

int bench_type_parse(const char* s, ncclDataType_t* t) {
  static const struct {
    const char* name;
    ncclDataType_t t;
  } alias[] = {{"char", ncclInt8},           {"int", ncclInt32},          {"float16", ncclFloat16},
               {"float32", ncclFloat32},     {"float64", ncclFloat64},    {"bf16", ncclBfloat16},
               {"fp8_e4m3", ncclFloat8e4m3}, {"fp8_e5m2", ncclFloat8e5m2}};
  for (int i = 0; i < ncclNumTypes; i++) {
    if (strcmp(s, type_names[i]) == 0) {
      *t = (ncclDataType_t)i;
      return 0;
    }
  }
  for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++) {
    if (strcmp(s, alias[i].name) == 0) {
      *t = alias[i].t;
      return 0;
    }
  }
  return -1;
}

const char* bench_op_name(ncclRedOp_t op) {
  return (unsigned)op < ncclNumOps ? op_names[op] : "?";
}

int bench_op_parse(const char* s, ncclRedOp_t* op) {
  for (int i = 0; i < ncclNumOps; i++) {
    if (strcmp(s, op_names[i]) == 0) {
      *op = (ncclRedOp_t)i;
      return 0;
    }
  }
  return -1;
}

int bench_type_is_float(ncclDataType_t t) {
  return t >= ncclFloat16 && t != ncclInt64 && t != ncclUint64;
}

static int type_is_unsigned(ncclDataType_t t) {
  return t == ncclUint8 || t == ncclUint32 || t == ncclUint64;
}

static int type_is_fp8(ncclDataType_t t) {
  return t == ncclFloat8e4m3 || t == ncclFloat8e5m2;
}

double bench_input(ncclDataType_t t, ncclRedOp_t op, int r, int nranks, size_t i) {
  if (op == ncclProd) return (int)(i % (size_t)nranks) == r ? 2.0 : 1.0;
  size_t k = i + 2 * (size_t)r + (i >> 3);
  if (type_is_fp8(t)) return (double)(int)(k % 3) - 1.0;
  if (type_is_unsigned(t)) return (double)(k % 5);
  return (double)(int)(k % 5) - 2.0;
}

double bench_reduce_all(ncclDataType_t t, ncclRedOp_t op, int nranks, size_t i) {
  double acc = bench_input(t, op, 0, nranks, i);
  for (int r = 1; r < nranks; r++) {
    double v = bench_input(t, op, r, nranks, i);
    switch (op) {
    case ncclProd:
      acc *= v;
      break;
    case ncclMax:
      acc = v > acc ? v : acc;
      break;
    case ncclMin:
      acc = v < acc ? v : acc;
      break;
    default:
      acc += v;
      break;
    }
  }
  if (op == ncclAvg) {
    if (bench_type_is_float(t)) return acc / nranks;
    return (double)((int64_t)acc / nranks); /* integer avg truncates */
  }
  return acc;
}

/* Encodes v in a small float format (ebits exponent, mbits mantissa), RNE. */
static uint32_t mini_encode(double v, int ebits, int mbits) {
  uint32_t sign = signbit(v) ? 1u << (ebits + mbits) : 0;
  double a = fabs(v);
  if (a == 0.0) return sign;
  int bias = (1 << (ebits - 1)) - 1;
  int e;
  (void)frexp(a, &e);
  e -= 1; /* a = 1.f * 2^e */
  if (e < 1 - bias) {
    uint32_t m = (uint32_t)nearbyint(ldexp(a, bias - 1 + mbits));
    return sign | m; /* may carry into the lowest normal, which is right */
  }
  uint32_t m = (uint32_t)nearbyint(ldexp(ldexp(a, -e) - 1.0, mbits));
  if (m == (1u << mbits)) {
    m = 0;
    e++;
  }
  return sign | ((uint32_t)(e + bias) << mbits) | m;
}

static double mini_decode(uint32_t b, int ebits, int mbits) {
  int bias = (1 << (ebits - 1)) - 1;
  uint32_t m = b & ((1u << mbits) - 1);
  int e = (int)((b >> mbits) & ((1u << ebits) - 1));
  double v =
      e == 0 ? ldexp((double)m, 1 - bias - mbits) : ldexp(1.0 + ldexp((double)m, -mbits), e - bias);
  return (b >> (ebits + mbits)) & 1 ? -v : v;
}

static void mini_format(ncclDataType_t t, int* ebits, int* mbits) {
  switch (t) {
  case ncclFloat16:
    *ebits = 5;
    *mbits = 10;
    break;
  case ncclBfloat16:
    *ebits = 8;
    *mbits = 7;
    break;
  case ncclFloat8e4m3:
    *ebits = 4;
    *mbits = 3;
    break;
  default:
    *ebits = 5;
    *mbits = 2;
    break;
  }
}

void bench_store(ncclDataType_t t, void* buf, size_t i, double v) {
  int eb, mb;
  switch (t) {
  case ncclInt8:
    ((int8_t*)buf)[i] = (int8_t)(int64_t)v;
    break;
  case ncclUint8:
    ((uint8_t*)buf)[i] = (uint8_t)(int64_t)v;
    break;
  case ncclInt32:
    ((int32_t*)buf)[i] = (int32_t)(int64_t)v;
    break;
  case ncclUint32:
    ((uint32_t*)buf)[i] = (uint32_t)(int64_t)v;
    break;
  case ncclInt64:
    ((int64_t*)buf)[i] = (int64_t)v;
    break;
  case ncclUint64:
    ((uint64_t*)buf)[i] = (uint64_t)(int64_t)v;
    break;
  case ncclFloat32:
    ((float*)buf)[i] = (float)v;
    break;
  case ncclFloat64:
    ((double*)buf)[i] = v;
    break;
  case ncclFloat16:
  case ncclBfloat16:
    mini_format(t, &eb, &mb);
    ((uint16_t*)buf)[i] = (uint16_t)mini_encode(v, eb, mb);
    break;
  default:
    mini_format(t, &eb, &mb);
    ((uint8_t*)buf)[i] = (uint8_t)mini_encode(v, eb, mb);
    break;
  }
}

/* Bits of element i as an integer ordered like the values (for ulp distance). */
static int64_t ordered_bits(ncclDataType_t t, const void* buf, size_t i) {
  int64_t b;
  int nbits = (int)bench_type_size(t) * 8;
  switch (bench_type_size(t)) {
  case 1:
    b = ((const uint8_t*)buf)[i];
    break;
  case 2:
    b = ((const uint16_t*)buf)[i];
    break;
  case 4:
    b = ((const uint32_t*)buf)[i];
    break;
  default:
    memcpy(&b, (const uint64_t*)buf + i, 8);
    break;
  }
  int64_t sign_mask = nbits == 64 ? INT64_MIN : (int64_t)1 << (nbits - 1);
  int64_t mag = b & ~sign_mask;
  if (nbits == 64) mag = b & INT64_MAX;
  return (b & sign_mask) ? -mag : mag;
}

static double load_float(ncclDataType_t t, const void* buf, size_t i) {
  int eb, mb;
  switch (t) {
  case ncclFloat32:
    return ((const float*)buf)[i];
  case ncclFloat64:
    return ((const double*)buf)[i];
  case ncclFloat16:
  case ncclBfloat16:
    mini_format(t, &eb, &mb);
    return mini_decode(((const uint16_t*)buf)[i], eb, mb);
  default:
    mini_format(t, &eb, &mb);
    return mini_decode(((const uint8_t*)buf)[i], eb, mb);
  }
}

int bench_match(ncclDataType_t t, ncclRedOp_t op, int nranks, const void* buf, size_t i, double v) {
  unsigned char want[8];
  size_t ts = bench_type_size(t);
  bench_store(t, want, 0, v);
  if (memcmp(want, (const char*)buf + i * ts, ts) == 0) return 1;
  if (op != ncclAvg || !bench_type_is_float(t)) return 0;
  int64_t d = ordered_bits(t, buf, i) - ordered_bits(t, want, 0);
  if (d >= -2 && d <= 2) return 1;
  /* Near zero, an avg made of pre-scaled terms may leave a tiny residue. */
  int eb, mb = t == ncclFloat32 ? 23 : t == ncclFloat64 ? 52 : 0;
  if (mb == 0) mini_format(t, &eb, &mb);
  return fabs(load_float(t, buf, i) - v) <= 4.0 * ldexp(1.0, -mb);
}

void* bench_lib_symbol(const char* name) {
  return dlsym(RTLD_DEFAULT, name);
}
