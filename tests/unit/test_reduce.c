/* SPDX-License-Identifier: BSD-3-Clause */
/* cpu/reduce.c: every type x operator against known results, flags, aliasing, wraparound,
 * average truncation and rounding, PreMulSum, NaN and signed zeros in max/min. */
#include <math.h>
#include <stdint.h>
#include "cpu/reduce.h"
#include "harness.h"
#include "util/dtype.h"

static struct red_op make_op(int kind, int nranks) {
  struct red_op op;
  memset(&op, 0, sizeof op);
  op.kind = kind;
  op.nranks = nranks;
  return op;
}

/* Element i of an array of type dt, as a double (exact for every value used here). */
static double get(ncclDataType_t dt, const void* p, size_t i) {
  switch (dt) {
  case ncclInt8:
    return ((const int8_t*)p)[i];
  case ncclUint8:
    return ((const uint8_t*)p)[i];
  case ncclInt32:
    return ((const int32_t*)p)[i];
  case ncclUint32:
    return ((const uint32_t*)p)[i];
  case ncclInt64:
    return (double)((const int64_t*)p)[i];
  case ncclUint64:
    return (double)((const uint64_t*)p)[i];
  case ncclFloat16:
    return dtype_half_to_float(((const uint16_t*)p)[i]);
  case ncclFloat32:
    return ((const float*)p)[i];
  case ncclFloat64:
    return ((const double*)p)[i];
  case ncclBfloat16:
    return dtype_bf16_to_float(((const uint16_t*)p)[i]);
  case ncclFloat8e4m3:
    return dtype_e4m3_to_float(((const uint8_t*)p)[i]);
  default:
    return dtype_e5m2_to_float(((const uint8_t*)p)[i]);
  }
}

static void put(ncclDataType_t dt, void* p, size_t i, double v) {
  switch (dt) {
  case ncclInt8:
    ((int8_t*)p)[i] = (int8_t)v;
    break;
  case ncclUint8:
    ((uint8_t*)p)[i] = (uint8_t)v;
    break;
  case ncclInt32:
    ((int32_t*)p)[i] = (int32_t)v;
    break;
  case ncclUint32:
    ((uint32_t*)p)[i] = (uint32_t)v;
    break;
  case ncclInt64:
    ((int64_t*)p)[i] = (int64_t)v;
    break;
  case ncclUint64:
    ((uint64_t*)p)[i] = (uint64_t)v;
    break;
  case ncclFloat16:
    ((uint16_t*)p)[i] = dtype_float_to_half((float)v);
    break;
  case ncclFloat32:
    ((float*)p)[i] = (float)v;
    break;
  case ncclFloat64:
    ((double*)p)[i] = v;
    break;
  case ncclBfloat16:
    ((uint16_t*)p)[i] = dtype_float_to_bf16((float)v);
    break;
  case ncclFloat8e4m3:
    ((uint8_t*)p)[i] = dtype_float_to_e4m3((float)v);
    break;
  default:
    ((uint8_t*)p)[i] = dtype_float_to_e5m2((float)v);
    break;
  }
}

/* Small values whose every result below is exact in every type (e5m2 holds 0..8 exactly). */
#define N 6
static const double acc_v[N] = {1, 2, 3, 0, 2, 1};
static const double in_v[N] = {2, 2, 1, 3, 0, 3};

static double expect(ncclDataType_t dt, int kind, double a, double x, int last) {
  switch (kind) {
  case RED_SUM:
    return a + x;
  case RED_PROD:
    return a * x;
  case RED_MAX:
    return a > x ? a : x;
  case RED_MIN:
    return a < x ? a : x;
  case RED_AVG:
    if (!last) return a + x;
    return dtype_is_float(dt) ? (a + x) / 2 : floor((a + x) / 2);
  default:
    return a + 2 * x; /* PREMULSUM with scalar 2 */
  }
}

static void check_type_op(ncclDataType_t dt, int kind, int flags) {
  unsigned char acc[64], in[64], dst[64];
  struct red_op op = make_op(kind, 2);
  put(dt, op.scalar, 0, 2);
  for (int i = 0; i < N; i++) {
    put(dt, acc, i, acc_v[i]);
    put(dt, in, i, in_v[i]);
  }
  memset(dst, 0xa5, sizeof dst);
  red_apply(dst, acc, in, N, dt, &op, flags);
  for (int i = 0; i < N; i++) {
    double want;
    if (flags & RED_FIRST) {
      want = kind == RED_PREMULSUM ? 2 * in_v[i] : in_v[i];
      if ((flags & RED_LAST) && kind == RED_AVG)
        want = dtype_is_float(dt) ? want / 2 : floor(want / 2);
    } else {
      want = expect(dt, kind, acc_v[i], in_v[i], flags & RED_LAST);
    }
    if (get(dt, dst, i) != want)
      fprintf(stderr, "%s kind %d flags %d [%d]: got %g want %g\n", dtype_name(dt), kind, flags, i,
              get(dt, dst, i), want);
    CHECK(get(dt, dst, i) == want);
  }
  /* nothing past count is written */
  size_t sz = dtype_size(dt);
  for (size_t b = N * sz; b < sizeof dst; b++) CHECK_EQ(dst[b], 0xa5);
}

TEST(every_type_and_op) {
  for (int dt = 0; dt < ncclNumTypes; dt++)
    for (int kind = RED_SUM; kind <= RED_PREMULSUM; kind++)
      for (int flags = 0; flags <= (RED_FIRST | RED_LAST); flags++)
        check_type_op((ncclDataType_t)dt, kind, flags);
}

TEST(int8_wraparound) {
  int8_t a[4] = {100, -100, 127, -128}, x[4] = {100, -100, 1, -1}, d[4];
  struct red_op op = make_op(RED_SUM, 2);
  red_apply(d, a, x, 4, ncclInt8, &op, 0);
  CHECK_EQ(d[0], -56);
  CHECK_EQ(d[1], 56);
  CHECK_EQ(d[2], -128);
  CHECK_EQ(d[3], 127);
  op.kind = RED_PROD;
  int8_t p[3] = {16, -3, -128}, q[3] = {16, 5, -1};
  red_apply(d, p, q, 3, ncclInt8, &op, 0);
  CHECK_EQ(d[0], 0);
  CHECK_EQ(d[1], -15);
  CHECK_EQ(d[2], -128);
  uint8_t ua[2] = {200, 255}, ux[2] = {100, 255}, ud[2];
  op.kind = RED_SUM;
  red_apply(ud, ua, ux, 2, ncclUint8, &op, 0);
  CHECK_EQ(ud[0], 44);
  CHECK_EQ(ud[1], 254);
  op.kind = RED_MAX; /* unsigned comparison: 200 > 100 */
  red_apply(ud, ua, ux, 2, ncclUint8, &op, 0);
  CHECK_EQ(ud[0], 200);
}

TEST(int_wide_wraparound_and_signedness) {
  struct red_op op = make_op(RED_SUM, 2);
  int32_t a[2] = {INT32_MAX, INT32_MIN}, x[2] = {1, -1}, d[2];
  red_apply(d, a, x, 2, ncclInt32, &op, 0);
  CHECK_EQ(d[0], INT32_MIN);
  CHECK_EQ(d[1], INT32_MAX);
  op.kind = RED_PROD;
  int64_t la[1] = {INT64_MAX}, lx[1] = {2}, ld[1];
  red_apply(ld, la, lx, 1, ncclInt64, &op, 0);
  CHECK_EQ(ld[0], -2);
  uint32_t ua[2] = {0xffffffffu, 5}, ux[2] = {1, 7}, ud[2];
  op.kind = RED_MAX;
  red_apply(ud, ua, ux, 2, ncclUint32, &op, 0);
  CHECK(ud[0] == 0xffffffffu && ud[1] == 7);
  op.kind = RED_MIN;
  red_apply(ud, ua, ux, 2, ncclUint32, &op, 0);
  CHECK(ud[0] == 1 && ud[1] == 5);
  int32_t sa[2] = {-5, 3}, sx[2] = {3, -5};
  red_apply(d, sa, sx, 2, ncclInt32, &op, 0);
  CHECK(d[0] == -5 && d[1] == -5);
  uint64_t big[1] = {UINT64_MAX}, one[1] = {1}, bd[1];
  op.kind = RED_SUM;
  red_apply(bd, big, one, 1, ncclUint64, &op, 0);
  CHECK(bd[0] == 0);
  op.kind = RED_MAX;
  red_apply(bd, big, one, 1, ncclUint64, &op, 0);
  CHECK(bd[0] == UINT64_MAX);
}

TEST(avg_integer_truncates_toward_zero) {
  struct red_op op = make_op(RED_AVG, 2);
  int32_t a[4] = {-3, 3, -8, 0}, x[4] = {-4, 4, 1, -1}, d[4];
  red_apply(d, a, x, 4, ncclInt32, &op, RED_LAST);
  CHECK_EQ(d[0], -3); /* (-7)/2 */
  CHECK_EQ(d[1], 3);  /* 7/2 */
  CHECK_EQ(d[2], -3); /* (-7)/2 */
  CHECK_EQ(d[3], 0);  /* (-1)/2 */
  op.nranks = 3;
  int8_t b[2] = {-128, 127}, bd[2];
  red_copy_post(bd, b, 2, ncclInt8, &op);
  CHECK_EQ(bd[0], -42);
  CHECK_EQ(bd[1], 42);
  int64_t l[1] = {-(INT64_C(1) << 62) - 1}, ld[1];
  op.nranks = 2;
  red_copy_post(ld, l, 1, ncclInt64, &op);
  CHECK(ld[0] == -(INT64_C(1) << 61));
  uint64_t u[1] = {UINT64_MAX}, ud[1];
  red_copy_post(ud, u, 1, ncclUint64, &op);
  CHECK(ud[0] == UINT64_MAX / 2);
}

/* For codes [lo, hi) of a 16-bit floating type, post (divide by n) must give the value
 * nearest to the exact quotient, the even one on a tie. */
static void check_div_rounding(ncclDataType_t dt, uint32_t lo, uint32_t hi, int n) {
  struct red_op op = make_op(RED_AVG, n);
  for (uint32_t c = lo; c < hi; c++) {
    uint16_t src = (uint16_t)c, out, nb[2];
    red_copy_post(&out, &src, 1, dt, &op);
    double q = get(dt, &src, 0) / n, err = fabs(get(dt, &out, 0) - q);
    nb[0] = (uint16_t)(out + 1);
    nb[1] = (uint16_t)(out - 1);
    for (int j = 0; j < 2; j++) {
      if (j == 1 && out == 0) break;
      double e = fabs(get(dt, nb, j) - q);
      if (!(e > err || (e == err && (out & 1) == 0)))
        fprintf(stderr, "%s 0x%04x / %d -> 0x%04x, 0x%04x is closer\n", dtype_name(dt), c, n, out,
                nb[j]);
      CHECK(e > err || (e == err && (out & 1) == 0));
    }
  }
}

TEST(avg_float_rounding) {
  struct red_op op = make_op(RED_AVG, 3);
  float f[2] = {1.0f, 2.0f}, fd[2];
  red_copy_post(fd, f, 2, ncclFloat32, &op);
  CHECK(fd[0] == 1.0f / 3.0f && fd[1] == 2.0f / 3.0f);
  double g[1] = {1.0}, gd[1];
  red_copy_post(gd, g, 1, ncclFloat64, &op);
  CHECK(gd[0] == 1.0 / 3.0);
  /* half: 1/3 -> 0x3555 (0.33325); bf16: 1/3 -> 0x3eab; e4m3: 1/3 -> 0x2b (0.34375) */
  uint16_t h[1] = {0x3c00}, hd[1];
  red_copy_post(hd, h, 1, ncclFloat16, &op);
  CHECK_EQ(hd[0], 0x3555);
  red_copy_post(hd, h + 0, 1, ncclBfloat16, &op); /* 0x3c00 as bf16 is 2^-7 */
  CHECK_EQ(hd[0], dtype_float_to_bf16(ldexpf(1, -7) / 3));
  uint8_t e[1] = {0x38}, ed[1];
  red_copy_post(ed, e, 1, ncclFloat8e4m3, &op);
  CHECK_EQ(ed[0], 0x2b);
  /* Every finite positive half divided by a few rank counts, and a range of bf16: correctly
   * rounded. Counts past 2^13 (8195, 65791) catch a float quotient rounded twice. */
  static const int divs[6] = {3, 5, 7, 6000, 8195, 8207};
  for (int k = 0; k < 6; k++) check_div_rounding(ncclFloat16, 0, 0x7c00, divs[k]);
  check_div_rounding(ncclBfloat16, 0x3f80, 0x4000, 65791);
  check_div_rounding(ncclBfloat16, 0x0000, 0x7f80, 3);
}

TEST(avg_float_sum_then_divide) {
  struct red_op op = make_op(RED_AVG, 4);
  float a[3] = {1, 2, 3}, x[3] = {3, 4, 5}, d[3];
  red_apply(d, a, x, 3, ncclFloat32, &op, 0); /* not last: plain sum */
  CHECK(d[0] == 4 && d[1] == 6 && d[2] == 8);
  red_apply(d, d, x, 3, ncclFloat32, &op, RED_LAST);
  CHECK(d[0] == 1.75f && d[1] == 2.5f && d[2] == 3.25f);
}

TEST(premulsum_scalar) {
  struct red_op op = make_op(RED_PREMULSUM, 2);
  float s = 0.5f;
  memcpy(op.scalar, &s, sizeof s);
  float a[3] = {1, 2, 3}, x[3] = {4, 6, -8}, d[3];
  red_apply(d, a, x, 3, ncclFloat32, &op, 0);
  CHECK(d[0] == 3 && d[1] == 5 && d[2] == -1);
  red_apply(d, NULL, x, 3, ncclFloat32, &op, RED_FIRST);
  CHECK(d[0] == 2 && d[1] == 3 && d[2] == -4);
  red_pre(d, x, 3, ncclFloat32, &op);
  CHECK(d[0] == 2 && d[1] == 3 && d[2] == -4);
  /* half: (1 + 2^-10) * 3 = 3 + 1.5 ulp(3) is a tie: rounds once, to even 0x4202 */
  uint16_t hs = 0x4200, hx[1] = {0x3c01}, hd[1];
  memcpy(op.scalar, &hs, sizeof hs);
  red_pre(hd, hx, 1, ncclFloat16, &op);
  CHECK_EQ(hd[0], 0x4202);
  /* integers multiply with wraparound */
  int8_t is = 3, ia[2] = {1, 0}, ix[2] = {50, -50}, id[2];
  memcpy(op.scalar, &is, 1);
  red_apply(id, ia, ix, 2, ncclInt8, &op, 0);
  CHECK_EQ(id[0], (int8_t)(1 + 150 - 256));
  CHECK_EQ(id[1], (int8_t)(-150 + 256));
  uint64_t us = UINT64_C(0x8000000000000001), ux[1] = {2}, ud[1];
  memcpy(op.scalar, &us, 8);
  red_pre(ud, ux, 1, ncclUint64, &op);
  CHECK(ud[0] == 2);
  /* SUM ignores the scalar; red_pre is then a copy */
  op.kind = RED_SUM;
  red_pre(ud, ux, 1, ncclUint64, &op);
  CHECK(ud[0] == 2);
}

TEST(aliasing_large) {
  enum { COUNT = 5000 }; /* spans several PreMulSum blocks, odd tail */
  static float a[COUNT], x[COUNT], want[COUNT];
  struct red_op op = make_op(RED_PREMULSUM, 2);
  float s = 4.0f;
  memcpy(op.scalar, &s, sizeof s);
  for (int i = 0; i < COUNT; i++) {
    a[i] = (float)i;
    x[i] = (float)(3 * i + 1);
    want[i] = a[i] + 4.0f * x[i];
  }
  red_apply(a, a, x, COUNT, ncclFloat32, &op, 0); /* dst == acc */
  for (int i = 0; i < COUNT; i++) CHECK(a[i] == want[i]);
  for (int i = 0; i < COUNT; i++) a[i] = (float)i;
  red_apply(x, a, x, COUNT, ncclFloat32, &op, 0); /* dst == in */
  for (int i = 0; i < COUNT; i++) CHECK(x[i] == want[i]);
  op.kind = RED_SUM;
  for (int i = 0; i < COUNT; i++) x[i] = (float)(3 * i + 1);
  red_apply(x, a, x, COUNT, ncclFloat32, &op, 0);
  for (int i = 0; i < COUNT; i++) CHECK(x[i] == (float)(4 * i + 1));
  red_apply(x, x, x, COUNT, ncclFloat32, &op, 0); /* all three the same */
  for (int i = 0; i < COUNT; i++) CHECK(x[i] == (float)(8 * i + 2));
  op = make_op(RED_AVG, 2);
  red_apply(x, x, a, COUNT, ncclFloat32, &op, RED_LAST);
  for (int i = 0; i < COUNT; i++) CHECK(x[i] == (float)(9 * i + 2) / 2);
  red_apply(x, NULL, x, COUNT, ncclFloat32, &op, RED_FIRST); /* in place: unchanged */
  for (int i = 0; i < COUNT; i++) CHECK(x[i] == (float)(9 * i + 2) / 2);
}

TEST(narrow_types_round_each_step) {
  struct red_op op = make_op(RED_SUM, 2);
  uint16_t ha[3] = {0x6800, 0x6800, 0x7bff}, hx[3] = {0x3c00, 0x4200, 0x7bff}, hd[3];
  red_apply(hd, ha, hx, 3, ncclFloat16, &op, 0);
  CHECK_EQ(hd[0], 0x6800);                            /* 2048 + 1: tie, to even 2048 */
  CHECK_EQ(hd[1], 0x6802);                            /* 2048 + 3: tie, to even 2052 */
  CHECK_EQ(hd[2], 0x7c00);                            /* 65504 + 65504 = inf */
  uint16_t ba[1] = {0x3f80}, bx[1] = {0x3b80}, bd[1]; /* 1 + 2^-8: tie, to even 1 */
  red_apply(bd, ba, bx, 1, ncclBfloat16, &op, 0);
  CHECK_EQ(bd[0], 0x3f80);
  /* e4m3: 1 + 1/16 ties to 1; 1.125 + 1/16 ties to 1.25; 448 + 448 saturates; NaN stays */
  uint8_t ea[4] = {0x38, 0x39, 0x7e, 0x7f}, ex[4] = {0x18, 0x18, 0x7e, 0x38}, ed[4];
  red_apply(ed, ea, ex, 4, ncclFloat8e4m3, &op, 0);
  CHECK_EQ(ed[0], 0x38);
  CHECK_EQ(ed[1], 0x3a);
  CHECK_EQ(ed[2], 0x7e);
  CHECK_EQ(ed[3], 0x7f);
  uint8_t fa[2] = {0x7b, 0xfb}, fx[2] = {0x7b, 0xfb}, fd[2];
  red_apply(fd, fa, fx, 2, ncclFloat8e5m2, &op, 0);
  CHECK_EQ(fd[0], 0x7b);
  CHECK_EQ(fd[1], 0xfb);
  op.kind = RED_PROD;
  red_apply(ed, ex, ex, 1, ncclFloat8e4m3, &op, 0); /* 2^-4 * 2^-4 = 2^-8, a subnormal */
  CHECK_EQ(ed[0], 0x02);
}

TEST(max_min_nan_and_zero) {
  struct red_op op = make_op(RED_MAX, 2);
  float a[4] = {NAN, 1.0f, -0.0f, 0.0f}, x[4] = {1.0f, NAN, 0.0f, -0.0f}, d[4];
  red_apply(d, a, x, 4, ncclFloat32, &op, 0);
  CHECK(isnan(d[0]) && isnan(d[1]));
  CHECK(d[2] == 0 && !signbit(d[2]) && d[3] == 0 && !signbit(d[3]));
  op.kind = RED_MIN;
  red_apply(d, a, x, 4, ncclFloat32, &op, 0);
  CHECK(isnan(d[0]) && isnan(d[1]));
  CHECK(d[2] == 0 && signbit(d[2]) && d[3] == 0 && signbit(d[3]));
  double da[2] = {NAN, -1.0}, dx[2] = {-INFINITY, -2.0}, dd[2];
  red_apply(dd, da, dx, 2, ncclFloat64, &op, 0);
  CHECK(isnan(dd[0]) && dd[1] == -2.0);
  uint16_t ha[2] = {0x7e00, 0x3c00}, hx[2] = {0x3c00, 0xfc00}, hd[2];
  op.kind = RED_MAX;
  red_apply(hd, ha, hx, 2, ncclFloat16, &op, 0);
  CHECK_EQ(hd[0], 0x7fff);
  CHECK_EQ(hd[1], 0x3c00);
  uint16_t ba[1] = {0x3f80}, bx[1] = {0x7fc0}, bd[1];
  op.kind = RED_MIN;
  red_apply(bd, ba, bx, 1, ncclBfloat16, &op, 0);
  CHECK_EQ(bd[0], 0x7fff);
}

TEST(zero_count) {
  struct red_op op = make_op(RED_PREMULSUM, 2);
  float s = 2.0f;
  memcpy(op.scalar, &s, sizeof s);
  float d[1] = {7};
  red_apply(d, NULL, NULL, 0, ncclFloat32, &op, 0);
  red_apply(d, NULL, NULL, 0, ncclFloat32, &op, RED_FIRST | RED_LAST);
  red_copy_post(d, NULL, 0, ncclFloat32, &op);
  CHECK(d[0] == 7);
}
