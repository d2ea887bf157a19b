/* SPDX-License-Identifier: BSD-3-Clause */
/* util/dtype.h: exhaustive round trips, ties to even, overflow, subnormals, NaN, sizes, names. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include "harness.h"
#include "util/dtype.h"

typedef float (*to_float_fn)(uint32_t code);
typedef uint32_t (*from_float_fn)(float f);

static float h2f(uint32_t c) {
  return dtype_half_to_float((uint16_t)c);
}
static uint32_t f2h(float f) {
  return dtype_float_to_half(f);
}
static float b2f(uint32_t c) {
  return dtype_bf16_to_float((uint16_t)c);
}
static uint32_t f2b(float f) {
  return dtype_float_to_bf16(f);
}
static float e4_2f(uint32_t c) {
  return dtype_e4m3_to_float((uint8_t)c);
}
static uint32_t f2e4(float f) {
  return dtype_float_to_e4m3(f);
}
static float e5_2f(uint32_t c) {
  return dtype_e5m2_to_float((uint8_t)c);
}
static uint32_t f2e5(float f) {
  return dtype_float_to_e5m2(f);
}

/* The format as a description: number of codes, sign bit, and which magnitudes are NaN. */
struct fmt {
  to_float_fn to;
  from_float_fn from;
  uint32_t ncodes, sign, inf; /* inf: magnitude code of infinity, 0 when there is none */
  uint32_t max_finite;        /* magnitude code of the largest finite value */
};
static const struct fmt fmt_half = {h2f, f2h, 65536, 0x8000, 0x7c00, 0x7bff};
static const struct fmt fmt_bf16 = {b2f, f2b, 65536, 0x8000, 0x7f80, 0x7f7f};
static const struct fmt fmt_e4m3 = {e4_2f, f2e4, 256, 0x80, 0, 0x7e};
static const struct fmt fmt_e5m2 = {e5_2f, f2e5, 256, 0x80, 0x7c, 0x7b};

static int is_nan_code(const struct fmt* f, uint32_t c) {
  uint32_t mag = c & (f->sign - 1);
  return mag > (f->inf ? f->inf : f->max_finite);
}

/* Every code converts to float and back to itself; NaN codes give a float NaN and back a NaN. */
static void check_roundtrip(const struct fmt* f) {
  uint32_t nans = 0;
  for (uint32_t c = 0; c < f->ncodes; c++) {
    float v = f->to(c);
    uint32_t back = f->from(v);
    if (is_nan_code(f, c)) {
      CHECK(isnan(v));
      CHECK(is_nan_code(f, back));
      nans++;
    } else {
      CHECK(!isnan(v));
      if (back != c) fprintf(stderr, "code 0x%x -> %a -> 0x%x\n", c, v, back);
      CHECK_EQ(back, c);
      CHECK_EQ(signbit(v) != 0, (c & f->sign) != 0);
    }
  }
  CHECK(nans > 0);
}

/* Values ascend with the code, so the midpoint of two neighbours is a tie: it must go to the
 * even code; a hair below goes down, a hair above goes up. Both signs. */
static void check_ties(const struct fmt* f) {
  for (uint32_t c = 0; c < f->max_finite; c++) {
    float lo = f->to(c), hi = f->to(c + 1);
    CHECK(lo < hi);
    float mid = (float)(((double)lo + (double)hi) / 2); /* exact: float holds one more bit */
    CHECK((double)mid * 2 == (double)lo + (double)hi);
    uint32_t even = (c & 1) ? c + 1 : c;
    CHECK_EQ(f->from(mid), even);
    CHECK_EQ(f->from(-mid), even | f->sign);
    CHECK_EQ(f->from(nextafterf(mid, 0)), c);
    CHECK_EQ(f->from(nextafterf(mid, INFINITY)), c + 1);
    CHECK_EQ(f->from(-nextafterf(mid, INFINITY)), (c + 1) | f->sign);
  }
}

TEST(half_roundtrip_all) {
  check_roundtrip(&fmt_half);
}
TEST(bf16_roundtrip_all) {
  check_roundtrip(&fmt_bf16);
}
TEST(e4m3_roundtrip_all) {
  check_roundtrip(&fmt_e4m3);
}
TEST(e5m2_roundtrip_all) {
  check_roundtrip(&fmt_e5m2);
}
TEST(half_ties_even) {
  check_ties(&fmt_half);
}
TEST(bf16_ties_even) {
  check_ties(&fmt_bf16);
}
TEST(e4m3_ties_even) {
  check_ties(&fmt_e4m3);
}
TEST(e5m2_ties_even) {
  check_ties(&fmt_e5m2);
}

TEST(known_values) {
  CHECK(dtype_half_to_float(0x3c00) == 1.0f);
  CHECK(dtype_half_to_float(0xc000) == -2.0f);
  CHECK(dtype_half_to_float(0x7bff) == 65504.0f);
  CHECK(dtype_half_to_float(0x0001) == ldexpf(1, -24));
  CHECK(dtype_half_to_float(0x0400) == ldexpf(1, -14));
  CHECK(dtype_half_to_float(0x7c00) == INFINITY);
  CHECK(dtype_bf16_to_float(0x3f80) == 1.0f);
  CHECK(dtype_bf16_to_float(0x0001) == ldexpf(1, -133));
  CHECK(dtype_e4m3_to_float(0x38) == 1.0f);
  CHECK(dtype_e4m3_to_float(0x7e) == 448.0f);
  CHECK(dtype_e4m3_to_float(0xfe) == -448.0f);
  CHECK(dtype_e4m3_to_float(0x01) == ldexpf(1, -9));
  CHECK(dtype_e4m3_to_float(0x08) == ldexpf(1, -6));
  CHECK(isnan(dtype_e4m3_to_float(0x7f)) && isnan(dtype_e4m3_to_float(0xff)));
  CHECK(dtype_e4m3_to_float(0x78) == 256.0f); /* exponent 15 is finite in e4m3fn */
  CHECK(dtype_e5m2_to_float(0x3c) == 1.0f);
  CHECK(dtype_e5m2_to_float(0x7b) == 57344.0f);
  CHECK(dtype_e5m2_to_float(0x7c) == INFINITY);
  CHECK(dtype_e5m2_to_float(0xfc) == -INFINITY);
  CHECK(dtype_e5m2_to_float(0x01) == ldexpf(1, -16));
  CHECK(isnan(dtype_e5m2_to_float(0x7d)));
  CHECK_EQ(dtype_float_to_half(0.1f), 0x2e66);
  CHECK_EQ(dtype_float_to_bf16(0.1f), 0x3dcd);
  CHECK_EQ(dtype_float_to_e4m3(0.1f), 0x1d);
  CHECK_EQ(dtype_float_to_e5m2(0.1f), 0x2e);
}

TEST(overflow) {
  CHECK_EQ(dtype_float_to_half(65519.996f), 0x7bff);
  CHECK_EQ(dtype_float_to_half(65520.0f), 0x7c00); /* tie with 0x7bff odd: up to inf */
  CHECK_EQ(dtype_float_to_half(1e10f), 0x7c00);
  CHECK_EQ(dtype_float_to_half(-1e10f), 0xfc00);
  CHECK_EQ(dtype_float_to_half(FLT_MAX), 0x7c00);
  CHECK_EQ(dtype_float_to_half(-INFINITY), 0xfc00);
  CHECK_EQ(dtype_float_to_bf16(FLT_MAX), 0x7f80);
  CHECK_EQ(dtype_float_to_bf16(-INFINITY), 0xff80);
  CHECK_EQ(dtype_float_to_bf16(3.3895314e38f), 0x7f7f); /* bf16's largest finite itself */
  /* e4m3, NOSAT: 464 is the tie between 448 (even) and the NaN code; past it, NaN. */
  CHECK_EQ(dtype_float_to_e4m3(464.0f), 0x7e);
  CHECK_EQ(dtype_float_to_e4m3(nextafterf(464.0f, INFINITY)), 0x7f);
  CHECK_EQ(dtype_float_to_e4m3(1000.0f), 0x7f);
  CHECK_EQ(dtype_float_to_e4m3(-1000.0f), 0xff);
  CHECK_EQ(dtype_float_to_e4m3(INFINITY), 0x7f);
  CHECK_EQ(dtype_float_to_e4m3(-INFINITY), 0xff);
  CHECK_EQ(dtype_float_to_e4m3_sat(1000.0f), 0x7e);
  CHECK_EQ(dtype_float_to_e4m3_sat(-INFINITY), 0xfe);
  CHECK_EQ(dtype_float_to_e4m3_sat(100.0f), dtype_float_to_e4m3(100.0f));
  /* e5m2, NOSAT: 61440 is the tie between 57344 (odd) and inf: inf. */
  CHECK_EQ(dtype_float_to_e5m2(nextafterf(61440.0f, 0)), 0x7b);
  CHECK_EQ(dtype_float_to_e5m2(61440.0f), 0x7c);
  CHECK_EQ(dtype_float_to_e5m2(-1e30f), 0xfc);
  CHECK_EQ(dtype_float_to_e5m2(INFINITY), 0x7c);
  CHECK_EQ(dtype_float_to_e5m2_sat(1e30f), 0x7b);
  CHECK_EQ(dtype_float_to_e5m2_sat(-INFINITY), 0xfb);
}

TEST(nan) {
  float qnan = NAN, nnan = -NAN;
  CHECK_EQ(dtype_float_to_half(qnan), 0x7fff);
  CHECK_EQ(dtype_float_to_half(nnan), 0x7fff);
  CHECK_EQ(dtype_float_to_bf16(qnan), 0x7fff);
  CHECK_EQ(dtype_float_to_bf16(nnan), 0x7fff);
  CHECK_EQ(dtype_float_to_e4m3(qnan), 0x7f);
  CHECK_EQ(dtype_float_to_e4m3_sat(nnan), 0x7f);
  CHECK_EQ(dtype_float_to_e5m2(nnan), 0x7f);
  CHECK_EQ(dtype_float_to_e5m2_sat(qnan), 0x7f);
  /* a signalling NaN whose payload sits below bf16's mantissa must not become inf */
  CHECK_EQ(dtype_float_to_bf16(dtype_bits_float(0x7f800001u)), 0x7fff);
  CHECK(isnan(dtype_half_to_float(0xfe00)) && signbit(dtype_half_to_float(0xfe00)));
}

TEST(subnormals) {
  float h_min = ldexpf(1, -24);
  CHECK_EQ(dtype_float_to_half(h_min), 0x0001);
  CHECK_EQ(dtype_float_to_half(-h_min), 0x8001);
  CHECK_EQ(dtype_float_to_half(h_min / 2), 0x0000); /* tie to the even zero */
  CHECK_EQ(dtype_float_to_half(-h_min / 2), 0x8000);
  CHECK_EQ(dtype_float_to_half(nextafterf(h_min / 2, 1)), 0x0001);
  CHECK_EQ(dtype_float_to_half(h_min * 1.5f), 0x0002);               /* tie between 1 and 2 */
  CHECK_EQ(dtype_float_to_half(h_min * 2.5f), 0x0002);               /* tie between 2 and 3 */
  CHECK_EQ(dtype_float_to_half(ldexpf(1, -14) - h_min / 2), 0x0400); /* into the normals */
  CHECK_EQ(dtype_float_to_half(ldexpf(1, -30)), 0x0000);
  CHECK_EQ(dtype_float_to_half(1e-40f), 0x0000); /* a float subnormal */
  CHECK_EQ(dtype_float_to_half(-0.0f), 0x8000);
  CHECK_EQ(dtype_float_to_bf16(1e-40f), 0x0001); /* bf16 keeps float's exponent range */
  CHECK_EQ(dtype_float_to_bf16(-0.0f), 0x8000);
  CHECK_EQ(dtype_float_to_e4m3(ldexpf(1, -10)), 0x00);
  CHECK_EQ(dtype_float_to_e4m3(ldexpf(3, -10)), 0x02);
  CHECK_EQ(dtype_float_to_e4m3(ldexpf(7, -9)), 0x07);
  CHECK_EQ(dtype_float_to_e4m3(ldexpf(15, -10)), 0x08); /* 7.5 * 2^-9 -> min normal 2^-6 */
  CHECK_EQ(dtype_float_to_e4m3(-ldexpf(1, -20)), 0x80);
  CHECK_EQ(dtype_float_to_e5m2(ldexpf(1, -16)), 0x01);
  CHECK_EQ(dtype_float_to_e5m2(ldexpf(3, -17)), 0x02);
  CHECK_EQ(dtype_float_to_e5m2(ldexpf(1, -17)), 0x00);
}

TEST(sizes_and_names) {
  static const struct {
    ncclDataType_t dt;
    size_t size;
    const char* name;
  } t[] = {
      {ncclInt8, 1, "int8"},         {ncclUint8, 1, "uint8"},       {ncclInt32, 4, "int32"},
      {ncclUint32, 4, "uint32"},     {ncclInt64, 8, "int64"},       {ncclUint64, 8, "uint64"},
      {ncclFloat16, 2, "half"},      {ncclFloat32, 4, "float"},     {ncclFloat64, 8, "double"},
      {ncclBfloat16, 2, "bfloat16"}, {ncclFloat8e4m3, 1, "f8e4m3"}, {ncclFloat8e5m2, 1, "f8e5m2"},
  };
  CHECK_EQ(sizeof t / sizeof t[0], ncclNumTypes);
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    CHECK_EQ(t[i].dt, (int)i);
    CHECK_EQ(dtype_size(t[i].dt), t[i].size);
    CHECK(strcmp(dtype_name(t[i].dt), t[i].name) == 0);
  }
  CHECK_EQ(dtype_size(ncclNumTypes), 0);
  CHECK(strcmp(dtype_name((ncclDataType_t)-1), "unknown") == 0);
  CHECK(dtype_is_float(ncclBfloat16) && dtype_is_float(ncclFloat8e5m2));
  CHECK(!dtype_is_float(ncclUint64) && !dtype_is_float(ncclInt8));
}
