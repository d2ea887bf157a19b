/* SPDX-License-Identifier: BSD-3-Clause */
/* Element-wise reductions on the GPU for every NCCL data type, bit for bit like the CPU engine:
 * both run the element functions of util/red_op.h (semantics there). One overload set per type;
 * combine() and elem() pick by the reduction op. */
#ifndef MONEL_DEVICE_REDUCE_CUH
#define MONEL_DEVICE_REDUCE_CUH
#include <stdint.h>
#include "util/dtype.h"
#include "util/red_op.h"

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

/* One overload set per type, each a name for the element functions of util/red_op.h. The narrow
 * types are distinct structs around their bits (V: .v), so that overloads tell half and bfloat16
 * apart. */
#define DEV_FN(OP, T, NAME, V)                                                                     \
  __device__ static inline T red_##OP(T a, T b) {                                                  \
    return T{red_##OP##_##NAME(a V, b V)};                                                         \
  }
#define DEV_OPS(T, NAME, V)                                                                        \
  DEV_FN(sum, T, NAME, V)                                                                          \
  DEV_FN(prod, T, NAME, V)                                                                         \
  DEV_FN(max, T, NAME, V)                                                                          \
  DEV_FN(min, T, NAME, V)                                                                          \
  __device__ static inline T red_div(T x, int n) {                                                 \
    return T{red_div_##NAME(x V, n)};                                                              \
  }

DEV_OPS(int8_t, i8, )
DEV_OPS(uint8_t, u8, )
DEV_OPS(int32_t, i32, )
DEV_OPS(uint32_t, u32, )
DEV_OPS(int64_t, i64, )
DEV_OPS(uint64_t, u64, )
DEV_OPS(float, f32, )
DEV_OPS(double, f64, )
DEV_OPS(dev_f16, f16, .v)
DEV_OPS(dev_bf16, bf16, .v)
DEV_OPS(dev_e4m3, e4m3, .v)
DEV_OPS(dev_e5m2, e5m2, .v)

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
    T p = OP == RED_PREMULSUM ? red_prod(x, s) : x;
    v = has_r ? combine<T, OP>(r, p) : p;
  }
  if (OP == RED_AVG && post) v = red_div(v, nranks);
  return v;
}
#endif
