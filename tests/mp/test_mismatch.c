/* SPDX-License-Identifier: BSD-3-Clause */
/* Mismatched calls (core/fingerprint.c, MONEL_CHECK_CALLS) on the CPU engine, with the default
 * settings (the check is on unless MONEL_CHECK_CALLS=0): the last rank calls something else than
 * the others (count, a type of the same size, op, root, another collective, a Send/Recv size,
 * AlltoAllv counts); every rank's comm must fail with ncclInvalidUsage and a sentence naming the
 * last rank and its call, whether or not the mismatch would hang. 2, 3 and 5 ranks, as threads
 * and as processes; the Send/Recv and AlltoAllv pairs, and matched calls, also at 72 ranks as
 * threads. Each rank waits for the asynchronous error (polling ncclCommGetAsyncError, up
 * to 20 s), records it, and aborts. no_false_alarm: the same runs with matched calls, each rank
 * polling for 1 s and then running 50 more AllReduces, see no error. check_off: with
 * MONEL_CHECK_CALLS=0 a type of the same size, which nothing else notices, goes unreported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "common.h"
#include "harness.h"
#include "monel.h"

#define SLOT  600
#define COUNT 4096

enum kind { K_COUNT, K_DTYPE, K_OP, K_ROOT, K_COLL, K_P2P, K_ALLTOALLV, K_NONE };

struct mm_case {
  enum kind kind;
  int nranks;
  char* seen;      /* shared: per rank, "<async error> <last error>" */
  int expect_none; /* matched calls, or the check off: no error may come */
};

static ncclResult_t odd_call(const struct mm_case* c, int rank, float* buf, ncclComm_t comm) {
  int n = c->nranks, odd = rank == n - 1;
  size_t* v = NULL;
  ncclResult_t res;
  switch (c->kind) {
  case K_COUNT:
    return ncclAllReduce(buf, buf, odd ? 2 * COUNT : COUNT, ncclFloat, ncclSum, comm, NULL);
  case K_DTYPE: /* same size: nothing else would notice */
    return ncclAllReduce(buf, buf, COUNT, odd ? ncclInt32 : ncclFloat, ncclSum, comm, NULL);
  case K_OP:
    return ncclAllReduce(buf, buf, COUNT, ncclFloat, odd ? ncclMax : ncclSum, comm, NULL);
  case K_ROOT:
    return ncclBroadcast(buf, buf, COUNT, ncclFloat, odd ? 1 : 0, comm, NULL);
  case K_COLL:
    if (odd) return ncclBroadcast(buf, buf, COUNT, ncclFloat, 0, comm, NULL);
    return ncclAllReduce(buf, buf, COUNT, ncclFloat, ncclSum, comm, NULL);
  case K_P2P: /* rank 0 sends COUNT to the last rank, which expects twice that */
    if (rank == 0) return ncclSend(buf, COUNT, ncclFloat, n - 1, comm, NULL);
    if (odd) return ncclRecv(buf, 2 * COUNT, ncclFloat, 0, comm, NULL);
    return ncclSuccess;
  case K_ALLTOALLV: /* the last rank expects one element more from rank 0 than rank 0 sends it */
    v = calloc(4 * (size_t)n * n, sizeof *v);
    if (v == NULL) return ncclSystemError;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) {
        size_t at = (size_t)i * n + j;
        v[at] = 8, v[n * n + at] = 8 * j; /* send, sdispls */
        v[2 * n * n + at] = 8 + (i == n - 1 && j == 0), v[3 * n * n + at] = 16 * j; /* recv */
      }
    res = ncclAlltoAllv(buf, v, v + n * n, buf + COUNT / 2, v + 2 * n * n, v + 3 * n * n, NULL, 0,
                        ncclFloat, comm, NULL);
    free(v);
    return res;
  case K_NONE:
    return ncclAllReduce(buf, buf, COUNT, ncclFloat, ncclSum, comm, NULL);
  }
  return ncclInternalError;
}

static int mm_rank(int rank, int nranks, ncclUniqueId id, void* arg) {
  const struct mm_case* c = arg;
  ncclComm_t comm;
  float* buf = calloc(4 * COUNT, sizeof(float));
  if (buf == NULL) return 1;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  /* Matched. Where a mismatch follows, a rank still finishing it may see it fail: a faster rank
   * may have reached the mismatched call and the check reported it (the comm fails on every
   * rank); with matched calls it must succeed. */
  ncclResult_t first = ncclAllReduce(buf, buf, COUNT, ncclFloat, ncclSum, comm, NULL);
  if (first != ncclSuccess && c->expect_none) return 1;
  ncclResult_t call = first == ncclSuccess ? odd_call(c, rank, buf, comm) : first;
  ncclResult_t async = ncclSuccess;
  double t0 = test_now(), limit = c->expect_none ? 1.0 : 20.0;
  /* A rank whose engine saw a peer stop may read ncclRemoteError until the news of the mismatch
   * arrives; then ncclInvalidUsage takes its place. */
  while (async != ncclInvalidUsage && test_now() - t0 < limit) {
    if (ncclCommGetAsyncError(comm, &async) != ncclSuccess) break;
    if (async != ncclInvalidUsage) usleep(10000); /* raised by another thread: poll it */
  }
  if (c->expect_none) /* a matched loop after: still no error */
    for (int i = 0; i < 50 && async == ncclSuccess; i++)
      if (ncclAllReduce(buf, buf, 1 + i, ncclFloat, ncclSum, comm, NULL) != ncclSuccess ||
          ncclCommGetAsyncError(comm, &async) != ncclSuccess)
        async = ncclInternalError;
  snprintf(c->seen + (size_t)rank * SLOT, SLOT, "%d %d %.1fs %s", (int)async, (int)call,
           test_now() - t0, ncclGetLastError(comm));
  /* A healthy comm says goodbye (its peers may still be finishing the last AllReduce); an
   * abort would stop theirs */
  if (async == ncclSuccess)
    ncclCommDestroy(comm);
  else
    ncclCommAbort(comm);
  free(buf);
  return 0;
}

static int check_off; /* MONEL_CHECK_CALLS=0: nothing may be reported */

static void mm_run(enum kind kind, int nranks, int threads) {
  struct mm_case c = {kind, nranks, NULL, kind == K_NONE || check_off};
  c.seen =
      mmap(NULL, (size_t)nranks * SLOT, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(c.seen != MAP_FAILED);
  memset(c.seen, 0, (size_t)nranks * SLOT);
  int failed = threads ? mp_run_threads(nranks, mm_rank, &c) : mp_run(nranks, mm_rank, &c);
  CHECK_EQ(failed, 0);
  char who[32];
  snprintf(who, sizeof who, "rank %d (host", nranks - 1);
  /* What every rank's sentence must say of the last rank's call (and of the others'). */
  static const char* const said[][2] = {
      [K_COUNT] = {"called AllReduce #2 (count 8192, float, sum)", "AllReduce #2 (count 4096,"},
      [K_DTYPE] = {"called AllReduce #2 (count 4096, int32, sum)", "(count 4096, float, sum)"},
      [K_OP] = {"called AllReduce #2 (count 4096, float, max)", "(count 4096, float, sum)"},
      [K_ROOT] = {"called Broadcast #2 (count 4096, float, root 1)", "root 0)"},
      [K_COLL] = {"called Broadcast #2 (count 4096, float, root 0)",
                  "called AllReduce #2 (count 4096, float, sum)"},
      [K_P2P] = {"receives 32768 bytes from rank 0 in its Recv #2", "sends 16384 bytes"},
      [K_ALLTOALLV] = {"receives 36 bytes from rank 0 in its AlltoAllv #2", "sends 32 bytes"},
  };
  for (int r = 0; r < nranks; r++) {
    const char* s = c.seen + (size_t)r * SLOT;
    fprintf(stderr, "  %s rank %d: %s\n", threads ? "thread" : "process", r, s);
    if (c.expect_none) {
      CHECK(strncmp(s, "0 0 ", 4) == 0);
      continue;
    }
    CHECK(atoi(s) == ncclInvalidUsage);
    CHECK(strstr(s, "mismatched calls") != NULL);
    CHECK(strstr(s, who) != NULL);
    CHECK(strstr(s, said[kind][0]) != NULL);
    CHECK(strstr(s, said[kind][1]) != NULL);
  }
  munmap(c.seen, (size_t)nranks * SLOT);
}

/* Ranks as threads of one process (the tests named *_threads, also run under ThreadSanitizer by
 * tests/run-all) or as processes. */
static void mm_all(enum kind kind, int threads) {
  if (check_off)
    setenv("MONEL_CHECK_CALLS", "0", 1);
  else
    unsetenv("MONEL_CHECK_CALLS"); /* the default: on */
  setenv("MONEL_HANG_TIMEOUT", "0", 1);
  int sizes[] = {2, 3, 5};
  for (int i = 0; i < 3; i++) mm_run(kind, sizes[i], threads);
}

TEST(mismatch_count_threads) {
  mm_all(K_COUNT, 1);
}
TEST(mismatch_count_procs) {
  mm_all(K_COUNT, 0);
}
TEST(mismatch_dtype_same_size_threads) {
  mm_all(K_DTYPE, 1);
}
TEST(mismatch_dtype_same_size_procs) {
  mm_all(K_DTYPE, 0);
}
TEST(mismatch_op_threads) {
  mm_all(K_OP, 1);
}
TEST(mismatch_op_procs) {
  mm_all(K_OP, 0);
}
TEST(mismatch_root_threads) {
  mm_all(K_ROOT, 1);
}
TEST(mismatch_root_procs) {
  mm_all(K_ROOT, 0);
}
TEST(mismatch_collective_threads) {
  mm_all(K_COLL, 1);
}
TEST(mismatch_collective_procs) {
  mm_all(K_COLL, 0);
}
TEST(mismatch_sendrecv_size_threads) {
  mm_all(K_P2P, 1);
}
TEST(mismatch_sendrecv_size_procs) {
  mm_all(K_P2P, 0);
}
TEST(mismatch_alltoallv_counts_threads) {
  mm_all(K_ALLTOALLV, 1);
}
TEST(mismatch_alltoallv_counts_procs) {
  mm_all(K_ALLTOALLV, 0);
}
/* More ranks than a word has bits, their pair records passing through up to 70 ranks on their
 * way round the ring; as threads (not named *_threads: ThreadSanitizer runs those, and 72 ranks
 * under it take minutes on a small machine). */
static void mm_many(enum kind kind) {
  unsetenv("MONEL_CHECK_CALLS");
  setenv("MONEL_HANG_TIMEOUT", "0", 1);
  mm_run(kind, 72, 1);
}
TEST(mismatch_sendrecv_size_at_72) {
  mm_many(K_P2P);
}
TEST(mismatch_alltoallv_counts_at_72) {
  mm_many(K_ALLTOALLV);
}
TEST(no_false_alarm_at_72) {
  mm_many(K_NONE);
}
TEST(no_false_alarm_threads) {
  mm_all(K_NONE, 1);
}
TEST(no_false_alarm_procs) {
  mm_all(K_NONE, 0);
}
TEST(check_off_dtype_same_size_threads) {
  check_off = 1;
  mm_all(K_DTYPE, 1);
  check_off = 0;
}
TEST(check_off_dtype_same_size_procs) {
  check_off = 1;
  mm_all(K_DTYPE, 0);
  check_off = 0;
}
