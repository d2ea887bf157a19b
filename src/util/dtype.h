/* SPDX-License-Identifier: BSD-3-Clause */
/* Data types of the NCCL API: element sizes, names, and the conversions between float and the
 * narrow floating formats (fp16, bfloat16, fp8 e4m3, fp8 e5m2).
 *
 * Header-only; compiles as C11 host code and as CUDA device code (MONEL_HD), so the CPU engine
 * and the kernels round exactly alike. Every float -> narrow conversion rounds to nearest, ties
 * to even, produces subnormals of the target, and keeps the sign of zero. They reproduce CUDA's
 * conversions bit for bit:
 *   half:  __float2half_rn          overflow -> +-inf, NaN -> 0x7fff
 *   bf16:  __float2bfloat16_rn      overflow -> +-inf, NaN -> 0x7fff
 *   e4m3:  __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3)
 *          the OCP "fn" format has no infinity: |x| > 464 (448 plus half an ulp) and +-inf give
 *          the NaN 0x7f with the sign of x (0xff when negative); NaN gives 0x7f.
 *   e5m2:  __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2)
 *          |x| >= 61440 gives +-inf (0x7c/0xfc); NaN gives 0x7f.
 * The *_sat variants are __NV_SATFINITE: out-of-range values and infinities clamp to the largest
 * finite value (448 / 57344) with their sign; NaN still gives 0x7f. They are what CUDA's
 * __nv_fp8_e4m3/__nv_fp8_e5m2 constructors use, hence what reductions on fp8 use.
 * Narrow -> float is exact for every bit pattern; NaN stays NaN (sign and payload kept where
 * float can hold them). */
#ifndef MONEL_UTIL_DTYPE_H
#define MONEL_UTIL_DTYPE_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "nccl.h"

#ifdef __CUDACC__
#define MONEL_HD __host__ __device__
#else
#define MONEL_HD
#endif

MONEL_HD static inline uint32_t dtype_float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
#endif
}

MONEL_HD static inline float dtype_bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/* Round the magnitude `a` (float bits, finite, not NaN) to a format with `m` mantissa bits and
 * exponent bias `bias`, ties to even. Returns the magnitude code; a code past the format's
 * largest finite value means overflow, which the caller resolves. */
MONEL_HD static inline uint32_t dtype_round_magnitude(uint32_t a, int m, int bias) {
  int e = (int)(a >> 23) - 127 + bias; /* biased exponent in the target */
  uint32_t sig = (a & 0x7fffffu) | 0x800000u;
  int shift = 23 - m; /* bits dropped from the float mantissa */
  uint32_t code;
  if (e >= 1) {
    code = ((uint32_t)e << m) | ((a & 0x7fffffu) >> shift);
  } else {
    shift += 1 - e;           /* subnormal in the target: the leading 1 moves into the mantissa */
    if (shift > 24) return 0; /* below half the smallest subnormal (float subnormals land here) */
    code = sig >> shift;
  }
  uint32_t rest = sig & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (code & 1u))) code++; /* a carry moves into the exponent */
  return code;
}

/* ---- fp16 (IEEE binary16) ---- */
MONEL_HD static inline float dtype_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return dtype_bits_float(sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    float v = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
    return sign ? -v : v;
  }
  return dtype_bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

MONEL_HD static inline uint16_t dtype_float_to_half(float f) {
  uint32_t u = dtype_float_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fff;
  if (a == 0x7f800000u) return (uint16_t)(sign | 0x7c00u);
  uint32_t code = dtype_round_magnitude(a, 10, 15);
  if (code >= 0x7c00u) code = 0x7c00u;
  return (uint16_t)(sign | code);
}

/* ---- bfloat16 ---- */
MONEL_HD static inline float dtype_bf16_to_float(uint16_t b) {
  return dtype_bits_float((uint32_t)b << 16);
}

MONEL_HD static inline uint16_t dtype_float_to_bf16(float f) {
  uint32_t u = dtype_float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fff;
  u += 0x7fffu + ((u >> 16) & 1u); /* ties to even; overflow carries into +-inf */
  return (uint16_t)(u >> 16);
}

/* ---- fp8 e4m3 (OCP fn: bias 7, no infinity, 0x7f/0xff are NaN, max 448) ---- */
MONEL_HD static inline float dtype_e4m3_to_float(uint8_t c) {
  uint32_t sign = (uint32_t)(c & 0x80u) << 24;
  uint32_t e = (c >> 3) & 0xfu, m = c & 7u;
  if ((c & 0x7fu) == 0x7fu) return dtype_bits_float(sign | 0x7fc00000u);
  if (e == 0) {
    float v = (float)m * 0.001953125f; /* m * 2^-9 */
    return sign ? -v : v;
  }
  return dtype_bits_float(sign | ((e + 120u) << 23) | (m << 20));
}

MONEL_HD static inline uint8_t dtype_e4m3_from(float f, int sat) {
  uint32_t u = dtype_float_bits(f), sign = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7f;
  uint32_t code = a == 0x7f800000u ? 0x7fu : dtype_round_magnitude(a, 3, 7);
  if (code >= 0x7fu) code = sat ? 0x7eu : 0x7fu;
  return (uint8_t)(sign | code);
}
MONEL_HD static inline uint8_t dtype_float_to_e4m3(float f) {
  return dtype_e4m3_from(f, 0);
}
MONEL_HD static inline uint8_t dtype_float_to_e4m3_sat(float f) {
  return dtype_e4m3_from(f, 1);
}

/* ---- fp8 e5m2 (bias 15, the top byte of an fp16) ---- */
MONEL_HD static inline float dtype_e5m2_to_float(uint8_t c) {
  return dtype_half_to_float((uint16_t)(c << 8));
}

MONEL_HD static inline uint8_t dtype_e5m2_from(float f, int sat) {
  uint32_t u = dtype_float_bits(f), sign = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7f;
  uint32_t code = a == 0x7f800000u ? 0x7cu : dtype_round_magnitude(a, 2, 15);
  if (code >= 0x7cu) code = sat ? 0x7bu : 0x7cu;
  return (uint8_t)(sign | code);
}
MONEL_HD static inline uint8_t dtype_float_to_e5m2(float f) {
  return dtype_e5m2_from(f, 0);
}
MONEL_HD static inline uint8_t dtype_float_to_e5m2_sat(float f) {
  return dtype_e5m2_from(f, 1);
}

/* ---- sizes and names ---- */
/* Bytes per element; 0 for a value outside ncclDataType_t. */
MONEL_HD static inline size_t dtype_size(ncclDataType_t dt) {
  switch (dt) {
  case ncclInt8:
  case ncclUint8:
  case ncclFloat8e4m3:
  case ncclFloat8e5m2:
    return 1;
  case ncclFloat16:
  case ncclBfloat16:
    return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32:
    return 4;
  case ncclInt64:
  case ncclUint64:
  case ncclFloat64:
    return 8;
  default:
    return 0;
  }
}

/* The names nccl-tests prints; "unknown" outside ncclDataType_t. */
MONEL_HD static inline const char* dtype_name(ncclDataType_t dt) {
  switch (dt) {
  case ncclInt8:
    return "int8";
  case ncclUint8:
    return "uint8";
  case ncclInt32:
    return "int32";
  case ncclUint32:
    return "uint32";
  case ncclInt64:
    return "int64";
  case ncclUint64:
    return "uint64";
  case ncclFloat16:
    return "half";
  case ncclFloat32:
    return "float";
  case ncclFloat64:
    return "double";
  case ncclBfloat16:
    return "bfloat16";
  case ncclFloat8e4m3:
    return "f8e4m3";
  case ncclFloat8e5m2:
    return "f8e5m2";
  default:
    return "unknown";
  }
}

/* Whether the type is a floating type (fp8 through double). */
MONEL_HD static inline int dtype_is_float(ncclDataType_t dt) {
  return dt == ncclFloat16 || dt == ncclFloat32 || dt == ncclFloat64 || dt == ncclBfloat16 ||
         dt == ncclFloat8e4m3 || dt == ncclFloat8e5m2;
}
#endif
