/* SPDX-License-Identifier: BSD-3-Clause */
/* AllReduce on the CPU engine: every dtype x op (PreMulSum with both scalar residences) x counts
 * {0, 1, 7, 1023, 1M+3} x in/out of place, for 1..8 ranks as processes, and as threads.
 * Results are checked element by element, exactly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "harness.h"

/* The last count is 1M+3; sanitizer builds (TEST_SANITIZED=1) use 64K+3 to stay in time. */
static size_t counts[] = {0, 1, 7, 1023, (1 << 20) + 3};
#define NCOUNTS (sizeof counts / sizeof counts[0])

__attribute__((constructor)) static void sanitized_counts(void) {
  const char* s = getenv("TEST_SANITIZED");
  if (s && s[0] == '1') counts[NCOUNTS - 1] = (1 << 16) + 3;
}

static int check_one(ncclComm_t comm, int rank, int nranks, ncclDataType_t dt, int op, size_t count,
                     int inplace) {
  size_t es = mp_size(dt);
  char* send = malloc(count * es + 1);
  char* recv = inplace ? send : malloc(count * es + 1);
  for (size_t i = 0; i < count; i++) mp_store(send, i, dt, mp_value(dt, op, rank, i));
  if (!inplace) memset(recv, 0x5a, count * es);
  ncclRedOp_t red = (ncclRedOp_t)op;
  double scalar = 2;
  unsigned char sbuf[8];
  mp_store(sbuf, 0, dt, scalar);
  if (op >= 5)
    MP_CHECK(ncclRedOpCreatePreMulSum(&red, sbuf, dt,
                                      op == 5 ? ncclScalarHostImmediate : ncclScalarDevice, comm));
  if (op == 5) memset(sbuf, 0, sizeof sbuf); /* host-immediate: the value was copied */
  MP_CHECK(ncclAllReduce(send, recv, count, dt, red, comm, NULL));
  if (op >= 5) MP_CHECK(ncclRedOpDestroy(red, comm));
  /* Inputs repeat with period 231 (3 * 7 * 11), so do the expected values. */
  double expect[231];
  for (size_t i = 0; i < 231; i++) expect[i] = mp_expected(dt, op < 5 ? op : 5, nranks, i, scalar);
  int bad = 0;
  for (size_t i = 0; i < count && bad < 3; i++) {
    double got = mp_load(recv, i, dt), want = expect[i % 231];
    if (!mp_equal(dt, op, got, want)) {
      fprintf(stderr, "rank %d/%d %s %s count %zu %s: element %zu is %g, expected %g\n", rank,
              nranks, mp_type_name(dt), mp_op_names[op], count,
              inplace ? "in-place" : "out-of-place", i, got, want);
      bad++;
    }
  }
  free(send);
  if (!inplace) free(recv);
  return bad;
}

static int matrix(ncclComm_t comm, int rank, int nranks) {
  int bad = 0;
  for (int dt = 0; dt < ncclNumTypes; dt++)
    for (int op = 0; op < 7; op++)
      for (size_t c = 0; c < NCOUNTS; c++)
        for (int inplace = 0; inplace < 2; inplace++)
          bad += check_one(comm, rank, nranks, (ncclDataType_t)dt, op, counts[c], inplace);
  return bad;
}

static int rank_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  ncclComm_t comm;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  int bad = matrix(comm, rank, nranks);
  MP_CHECK(ncclCommDestroy(comm));
  return bad != 0;
}

#define PROCS_TEST(n)                                                                              \
  TEST(processes_##n) {                                                                            \
    CHECK_EQ(mp_run(n, rank_main, NULL), 0);                                                       \
  }
PROCS_TEST(1)
PROCS_TEST(2)
PROCS_TEST(3)
PROCS_TEST(4)
PROCS_TEST(5)
PROCS_TEST(6)
PROCS_TEST(7)
PROCS_TEST(8)

TEST(threads_initrank_4) {
  CHECK_EQ(mp_run_threads(4, rank_main, NULL), 0);
}

/* One thread drives all ranks: ncclCommInitAll and one group over the comms. */
TEST(one_thread_initall_3) {
  enum { N = 3 };
  ncclComm_t comms[N];
  CHECK_RES(ncclCommInitAll(comms, N, NULL), ncclSuccess);
  size_t count = 100003;
  float* buf[N];
  for (int r = 0; r < N; r++) {
    buf[r] = malloc(count * sizeof(float));
    for (size_t i = 0; i < count; i++) buf[r][i] = (float)mp_value(ncclFloat32, ncclSum, r, i);
  }
  CHECK_RES(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < N; r++)
    CHECK_RES(ncclAllReduce(buf[r], buf[r], count, ncclFloat32, ncclSum, comms[r], NULL),
              ncclSuccess);
  CHECK_RES(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < N; r++) {
    for (size_t i = 0; i < count; i++)
      CHECK(buf[r][i] == (float)mp_expected(ncclFloat32, ncclSum, N, i, 1));
    CHECK_RES(ncclCommDestroy(comms[r]), ncclSuccess);
    free(buf[r]);
  }
}
