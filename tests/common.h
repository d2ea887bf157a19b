/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers for tests that go through the public library: start ranks as processes or threads,
 * generate inputs that every reduction order sums to the same bits, and compare exactly. */
#ifndef MONEL_TESTS_COMMON_H
#define MONEL_TESTS_COMMON_H
#include <stddef.h>
#include <stdint.h>
#include "nccl.h"

typedef int (*rank_fn)(int rank, int nranks, ncclUniqueId id, void* arg);

/* Fork nranks processes running fn; returns the number of ranks that failed (exit != 0). */
int mp_run(int nranks, rank_fn fn, void* arg);
/* Same with threads of this process, each calling ncclCommInitRank on one id. */
int mp_run_threads(int nranks, rank_fn fn, void* arg);

/* Value of element i on rank r for a test of `op` (an ncclRedOp_t or 5 for PreMulSum), as a
 * double that is exactly representable in every type. */
double mp_value(ncclDataType_t dt, int op, int r, size_t i);
/* Store / load a double in a typed buffer. */
void mp_store(void* buf, size_t i, ncclDataType_t dt, double v);
double mp_load(const void* buf, size_t i, ncclDataType_t dt);
/* Expected reduction over nranks of element i (op as for mp_value, scalar for PreMulSum). */
double mp_expected(ncclDataType_t dt, int op, int nranks, size_t i, double scalar);
/* 1 if got equals want for this type (bits, or within 2 ulp for floating AVG). */
int mp_equal(ncclDataType_t dt, int op, double got, double want);
size_t mp_size(ncclDataType_t dt);
const char* mp_type_name(ncclDataType_t dt);
extern const char* mp_op_names[7];

#define MP_CHECK(call)                                                                             \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != ncclSuccess) {                                                                       \
      fprintf(stderr, "%s:%d: %s returned %d (%s): %s\n", __FILE__, __LINE__, #call, (int)r_,      \
              ncclGetErrorString(r_), ncclGetLastError(NULL));                                     \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

#endif
