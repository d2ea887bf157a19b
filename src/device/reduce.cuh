/* Element-wise reductions on the GPU for every NCCL data type, bit for bit like the CPU engine
 * (semantics in cpu/reduce.h): integers wrap (computed unsigned), AVG on integers truncates;
 * half, bfloat16 and fp8 compute each step in float and round back to nearest even (fp8
 * saturating); max/min propagate NaN and order the zeros; float and double use the _rn
 * intrinsics so that no multiply-add is ever fused. One overload set per type; combine() and
 * elem() pick by the reduction op. */
#ifndef MONEL_DEVICE_REDUCE_CUH
#define MONEL_DEVICE_REDUCE_CUH
#include <stdint.h>
#include "cpu/reduce.h"
#include "util/dtype.h"

/* Storage types of the narrow floating formats (the bits, as the API passes them). */
struct dev_f16 {
  uint16_t v;
};
struct dev_bf16 {
  uint16_t v;
};
struct dev_e4m3 {
  uint8_t v;
};
struct dev_e5m2 {
  uint8_t v;
};

__device__ static inline float max_nan(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a != b) return a > b ? a : b;
  return signbit(a) ? b : a;
}
__device__ static inline float min_nan(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a != b) return a < b ? a : b;
  return signbit(a) ? a : b;
}
__device__ static inline double max_nan(double a, double b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a != b) return a > b ? a : b;
  return signbit(a) ? b : a;
}
__device__ static inline double min_nan(double a, double b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a != b) return a < b ? a : b;
  return signbit(a) ? a : b;
}

/* x / n rounded to float with round-to-odd, so that the final rounding to a narrow type is the
 * only one (same as the CPU engine). */
__device__ static inline float div_to_odd(float x, int n) {
  double q = (double)x / (double)n;
  float f = (float)q;
  if (q == q && (double)f != q) {
    uint32_t u = __float_as_uint(f);
    if (fabs((double)f) > fabs(q)) u--;
    f = __uint_as_float(u | 1u);
  }
  return f;
}

#define DEV_INT_OPS(T, U, W)                                                                       \
  __device__ static inline T red_sum(T a, T b) {                                                   \
    return (T)(U)((U)a + (U)b);                                                                    \
  }                                                                                                \
  __device__ static inline T red_prod(T a, T b) {                                                  \
    return (T)(U)((U)a * (U)b);                                                                    \
  }                                                                                                \
  __device__ static inline T red_max(T a, T b) {                                                   \
    return a > b ? a : b;                                                                          \
  }                                                                                                \
  __device__ static inline T red_min(T a, T b) {                                                   \
    return a < b ? a : b;                                                                          \
  }                                                                                                \
  __device__ static inline T red_mul(T x, T s) {                                                   \
    return (T)(U)((U)x * (U)s);                                                                    \
  }                                                                                                \
  __device__ static inline T red_div(T x, int n) {                                                 \
    return (T)((W)x / (W)n);                                                                       \
  }

DEV_INT_OPS(int8_t, uint8_t, int64_t)
DEV_INT_OPS(uint8_t, uint8_t, uint64_t)
DEV_INT_OPS(int32_t, uint32_t, int64_t)
DEV_INT_OPS(uint32_t, uint32_t, uint64_t)
DEV_INT_OPS(int64_t, uint64_t, int64_t)
DEV_INT_OPS(uint64_t, uint64_t, uint64_t)

__device__ static inline float red_sum(float a, float b) {
  return __fadd_rn(a, b);
}
__device__ static inline float red_prod(float a, float b) {
  return __fmul_rn(a, b);
}
__device__ static inline float red_max(float a, float b) {
  return max_nan(a, b);
}
__device__ static inline float red_min(float a, float b) {
  return min_nan(a, b);
}
__device__ static inline float red_mul(float x, float s) {
  return __fmul_rn(x, s);
}
__device__ static inline float red_div(float x, int n) {
  return (float)((double)x / (double)n);
}

__device__ static inline double red_sum(double a, double b) {
  return __dadd_rn(a, b);
}
__device__ static inline double red_prod(double a, double b) {
  return __dmul_rn(a, b);
}
__device__ static inline double red_max(double a, double b) {
  return max_nan(a, b);
}
__device__ static inline double red_min(double a, double b) {
  return min_nan(a, b);
}
__device__ static inline double red_mul(double x, double s) {
  return __dmul_rn(x, s);
}
__device__ static inline double red_div(double x, int n) {
  return __ddiv_rn(x, (double)n);
}

#define DEV_NARROW_OPS(T, TO_F, FROM_F)                                                            \
  __device__ static inline T narrow_##T(float f) {                                                 \
    T r;                                                                                           \
    r.v = FROM_F(f);                                                                               \
    return r;                                                                                      \
  }                                                                                                \
  __device__ static inline T red_sum(T a, T b) {                                                   \
    return narrow_##T(__fadd_rn(TO_F(a.v), TO_F(b.v)));                                            \
  }                                                                                                \
  __device__ static inline T red_prod(T a, T b) {                                                  \
    return narrow_##T(__fmul_rn(TO_F(a.v), TO_F(b.v)));                                            \
  }                                                                                                \
  __device__ static inline T red_max(T a, T b) {                                                   \
    return narrow_##T(max_nan(TO_F(a.v), TO_F(b.v)));                                              \
  }                                                                                                \
  __device__ static inline T red_min(T a, T b) {                                                   \
    return narrow_##T(min_nan(TO_F(a.v), TO_F(b.v)));                                              \
  }                                                                                                \
  __device__ static inline T red_mul(T x, T s) {                                                   \
    return narrow_##T(__fmul_rn(TO_F(x.v), TO_F(s.v)));                                            \
  }                                                                                                \
  __device__ static inline T red_div(T x, int n) {                                                 \
    return narrow_##T(div_to_odd(TO_F(x.v), n));                                                   \
  }

DEV_NARROW_OPS(dev_f16, dtype_half_to_float, dtype_float_to_half)
DEV_NARROW_OPS(dev_bf16, dtype_bf16_to_float, dtype_float_to_bf16)
DEV_NARROW_OPS(dev_e4m3, dtype_e4m3_to_float, dtype_float_to_e4m3_sat)
DEV_NARROW_OPS(dev_e5m2, dtype_e5m2_to_float, dtype_float_to_e5m2_sat)

template <typename T, int OP> __device__ static inline T combine(T a, T b) {
  if (OP == RED_PROD) return red_prod(a, b);
  if (OP == RED_MAX) return red_max(a, b);
  if (OP == RED_MIN) return red_min(a, b);
  return red_sum(a, b); /* SUM, AVG, PREMULSUM */
}

/* One element of a verb: r from the FIFO (if has_r), x my input (if has_x); post divides for AVG.
 */
template <typename T, int OP>
__device__ static inline T elem(T r, T x, bool has_r, bool has_x, bool post, T s, int nranks) {
  T v = r;
  if (has_x) {
    T p = OP == RED_PREMULSUM ? red_mul(x, s) : x;
    v = has_r ? combine<T, OP>(r, p) : p;
  }
  if (OP == RED_AVG && post) v = red_div(v, nranks);
  return v;
}
#endif
