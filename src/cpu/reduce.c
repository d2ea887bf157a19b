/* SPDX-License-Identifier: BSD-3-Clause */
/* Reduction kernels of the CPU engine (the semantics, element by element, in util/red_op.h).
 *
 * red_apply runs in up to three steps, each a plain loop per type that the compiler vectorises:
 * pre (PREMULSUM only, through a small stack buffer), combine (acc with the pre'd input), and
 * post (RED_LAST with AVG, in place on dst). The common case, a sum without pre or post, is the
 * combine loop alone over the whole array. Loops read element i of every input before writing
 * element i of dst, so dst may be the same array as acc or in. */
#include "cpu/reduce.h"
#include <stdint.h>
#include <string.h>
#include "util/dtype.h"
#include "util/red_op.h"

/* CMakeLists.txt compiles this file with options that let the compiler vectorise these loops
 * (GCC's -O2 leaves them scalar, and their speed then hangs on where the loop lands in memory). */
#ifndef MONEL_REDUCE_VECTORIZE
#error "cpu/reduce.c needs the compile options that CMakeLists.txt sets for it"
#endif

typedef void (*combine_fn)(int kind, void* d, const void* a, const void* x, size_t n);
typedef void (*pre_fn)(void* d, const void* x, size_t n, const unsigned char* scalar);
typedef void (*post_fn)(void* d, const void* x, size_t n, int nranks);

struct type_kernels {
  combine_fn combine;
  pre_fn pre;
  post_fn post;
};

/* The loops of one type T, around the element functions red_*_NAME of util/red_op.h (for the
 * narrow types T is their bits). */
#define TYPE_KERNELS(NAME, T)                                                                      \
  static void NAME##_combine(int kind, void* dv, const void* av, const void* xv, size_t n) {       \
    T* d = (T*)dv;                                                                                 \
    const T* a = (const T*)av;                                                                     \
    const T* x = (const T*)xv;                                                                     \
    switch (kind) {                                                                                \
    case RED_SUM:                                                                                  \
      for (size_t i = 0; i < n; i++) d[i] = red_sum_##NAME(a[i], x[i]);                            \
      break;                                                                                       \
    case RED_PROD:                                                                                 \
      for (size_t i = 0; i < n; i++) d[i] = red_prod_##NAME(a[i], x[i]);                           \
      break;                                                                                       \
    case RED_MAX:                                                                                  \
      for (size_t i = 0; i < n; i++) d[i] = red_max_##NAME(a[i], x[i]);                            \
      break;                                                                                       \
    default:                                                                                       \
      for (size_t i = 0; i < n; i++) d[i] = red_min_##NAME(a[i], x[i]);                            \
      break;                                                                                       \
    }                                                                                              \
  }                                                                                                \
  static void NAME##_pre(void* dv, const void* xv, size_t n, const unsigned char* scalar) {        \
    T* d = (T*)dv;                                                                                 \
    const T* x = (const T*)xv;                                                                     \
    T s;                                                                                           \
    memcpy(&s, scalar, sizeof s);                                                                  \
    for (size_t i = 0; i < n; i++) d[i] = red_prod_##NAME(x[i], s);                                \
  }                                                                                                \
  static void NAME##_post(void* dv, const void* xv, size_t n, int nranks) {                        \
    T* d = (T*)dv;                                                                                 \
    const T* x = (const T*)xv;                                                                     \
    for (size_t i = 0; i < n; i++) d[i] = red_div_##NAME(x[i], nranks);                            \
  }

TYPE_KERNELS(i8, int8_t)
TYPE_KERNELS(u8, uint8_t)
TYPE_KERNELS(i32, int32_t)
TYPE_KERNELS(u32, uint32_t)
TYPE_KERNELS(i64, int64_t)
TYPE_KERNELS(u64, uint64_t)
TYPE_KERNELS(f32, float)
TYPE_KERNELS(f64, double)
TYPE_KERNELS(f16, uint16_t)
TYPE_KERNELS(bf16, uint16_t)
TYPE_KERNELS(e4m3, uint8_t)
TYPE_KERNELS(e5m2, uint8_t)

#define KERNELS(NAME)                                                                              \
  { NAME##_combine, NAME##_pre, NAME##_post }
static const struct type_kernels kernels[ncclNumTypes] = {
    [ncclInt8] = KERNELS(i8),         [ncclUint8] = KERNELS(u8),
    [ncclInt32] = KERNELS(i32),       [ncclUint32] = KERNELS(u32),
    [ncclInt64] = KERNELS(i64),       [ncclUint64] = KERNELS(u64),
    [ncclFloat16] = KERNELS(f16),     [ncclFloat32] = KERNELS(f32),
    [ncclFloat64] = KERNELS(f64),     [ncclBfloat16] = KERNELS(bf16),
    [ncclFloat8e4m3] = KERNELS(e4m3), [ncclFloat8e5m2] = KERNELS(e5m2),
};

#define PRE_BLOCK_BYTES 4096 /* stack buffer for pre(in) when it cannot be written into dst */

void red_apply(void* dst, const void* acc, const void* in, size_t count, ncclDataType_t dt,
               const struct red_op* op, int flags) {
  if (count == 0) return;
  const struct type_kernels* k = &kernels[dt];
  size_t size = dtype_size(dt);
  int kind = op->kind;
  int combine_kind = (kind == RED_AVG || kind == RED_PREMULSUM) ? RED_SUM : kind;
  if (flags & RED_FIRST) {
    if (kind == RED_PREMULSUM)
      k->pre(dst, in, count, op->scalar);
    else if (dst != in)
      memmove(dst, in, count * size);
  } else if (kind == RED_PREMULSUM) {
    _Alignas(16) unsigned char tmp[PRE_BLOCK_BYTES];
    size_t block = PRE_BLOCK_BYTES / size;
    for (size_t i = 0; i < count; i += block) {
      size_t n = count - i < block ? count - i : block;
      size_t off = i * size;
      k->pre(tmp, (const char*)in + off, n, op->scalar);
      k->combine(RED_SUM, (char*)dst + off, (const char*)acc + off, tmp, n);
    }
  } else {
    k->combine(combine_kind, dst, acc, in, count);
  }
  if ((flags & RED_LAST) && kind == RED_AVG) k->post(dst, dst, count, op->nranks);
}

void red_copy_post(void* dst, const void* src, size_t count, ncclDataType_t dt,
                   const struct red_op* op) {
  if (count == 0) return;
  if (op->kind == RED_AVG)
    kernels[dt].post(dst, src, count, op->nranks);
  else if (dst != src)
    memmove(dst, src, count * dtype_size(dt));
}

void red_pre(void* dst, const void* src, size_t count, ncclDataType_t dt, const struct red_op* op) {
  if (count == 0) return;
  if (op->kind == RED_PREMULSUM)
    kernels[dt].pre(dst, src, count, op->scalar);
  else if (dst != src)
    memmove(dst, src, count * dtype_size(dt));
}
