/* SPDX-License-Identifier: BSD-3-Clause */
/* Communicators: nonblocking init, grouped init, scalable init, split (with NOCOLOR), shrink,
 * finalize, queries; each new comm proven by an AllReduce checked exactly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "harness.h"

/* Sum of (r+1) over the comm's ranks, checked on 1000 ints. */
static int check_allreduce(ncclComm_t comm) {
  int n = 0, rank = 0;
  MP_CHECK(ncclCommCount(comm, &n));
  MP_CHECK(ncclCommUserRank(comm, &rank));
  enum { COUNT = 1000 };
  int buf[COUNT];
  for (int i = 0; i < COUNT; i++) buf[i] = (rank + 1) * (i + 1);
  MP_CHECK(ncclAllReduce(buf, buf, COUNT, ncclInt32, ncclSum, comm, NULL));
  for (int i = 0; i < COUNT; i++)
    if (buf[i] != n * (n + 1) / 2 * (i + 1)) {
      fprintf(stderr, "rank %d/%d: element %d is %d\n", rank, n, i, buf[i]);
      return 1;
    }
  return 0;
}

static int nonblocking_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = "nonblocking";
  ncclComm_t comm = NULL;
  ncclResult_t res = ncclCommInitRankConfig(&comm, nranks, id, rank, &config);
  if (res != ncclSuccess && res != ncclInProgress) return 1;
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) MP_CHECK(ncclCommGetAsyncError(comm, &state));
  if (state != ncclSuccess) return 1;
  int bad = check_allreduce(comm);
  MP_CHECK(ncclCommFinalize(comm));
  MP_CHECK(ncclCommDestroy(comm));
  return bad;
}

TEST(nonblocking_init_threads) {
  CHECK_EQ(mp_run_threads(4, nonblocking_main, NULL), 0);
}
TEST(nonblocking_init_processes) {
  CHECK_EQ(mp_run(3, nonblocking_main, NULL), 0);
}

TEST(grouped_init_one_thread) {
  enum { N = 3 };
  ncclUniqueId id;
  ncclComm_t comms[N];
  CHECK_RES(ncclGetUniqueId(&id), ncclSuccess);
  CHECK_RES(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < N; r++) CHECK_RES(ncclCommInitRank(&comms[r], N, id, r), ncclSuccess);
  CHECK_RES(ncclGroupEnd(), ncclSuccess);
  int bufs[N][64];
  CHECK_RES(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < N; r++) {
    for (int i = 0; i < 64; i++) bufs[r][i] = r + i;
    CHECK_RES(ncclAllReduce(bufs[r], bufs[r], 64, ncclInt32, ncclMax, comms[r], NULL), ncclSuccess);
  }
  CHECK_RES(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < N; r++) {
    for (int i = 0; i < 64; i++) CHECK_EQ(bufs[r][i], N - 1 + i);
    CHECK_RES(ncclCommDestroy(comms[r]), ncclSuccess);
  }
}

static int scalable_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  ncclComm_t comm;
  ncclUniqueId ids[1] = {id};
  MP_CHECK(ncclCommInitRankScalable(&comm, nranks, rank, 1, ids, NULL));
  int bad = check_allreduce(comm);
  int dev = 0;
  MP_CHECK(ncclCommCuDevice(comm, &dev));
  if (dev != -1) bad = 1; /* the CPU engine has no device */
  MP_CHECK(ncclCommDestroy(comm));
  return bad;
}

TEST(init_rank_scalable) {
  CHECK_EQ(mp_run(3, scalable_main, NULL), 0);
}

static int split_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  ncclComm_t comm, sub = NULL;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  /* ranks 0..4: color rank%2, key -rank (reversed order); rank 5 opts out */
  int color = rank == 5 ? NCCL_SPLIT_NOCOLOR : rank % 2;
  MP_CHECK(ncclCommSplit(comm, color, -rank, &sub, NULL));
  int bad = 0;
  if (rank == 5) {
    bad = sub != NULL;
  } else {
    int n = 0, r = 0;
    MP_CHECK(ncclCommCount(sub, &n));
    MP_CHECK(ncclCommUserRank(sub, &r));
    int want_n = rank % 2 ? 2 : 3; /* odd: 1,3; even: 0,2,4 */
    int want_r = rank % 2 ? (rank == 3 ? 0 : 1) : (4 - rank) / 2;
    if (n != want_n || r != want_r) {
      fprintf(stderr, "rank %d: split gave rank %d of %d, expected %d of %d\n", rank, r, n, want_r,
              want_n);
      bad = 1;
    }
    bad |= check_allreduce(sub);
    MP_CHECK(ncclCommDestroy(sub));
  }
  bad |= check_allreduce(comm); /* the parent still works */
  MP_CHECK(ncclCommDestroy(comm));
  return bad;
}

TEST(split_processes) {
  CHECK_EQ(mp_run(6, split_main, NULL), 0);
}
TEST(split_threads) {
  CHECK_EQ(mp_run_threads(6, split_main, NULL), 0);
}

TEST(split_of_initall) {
  enum { N = 4 };
  ncclComm_t comms[N], subs[N];
  CHECK_RES(ncclCommInitAll(comms, N, NULL), ncclSuccess);
  CHECK_RES(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < N; r++)
    CHECK_RES(ncclCommSplit(comms[r], r / 2, r, &subs[r], NULL), ncclSuccess);
  CHECK_RES(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < N; r++) {
    int n = 0;
    CHECK_RES(ncclCommCount(subs[r], &n), ncclSuccess);
    CHECK_EQ(n, 2);
    CHECK_RES(ncclCommDestroy(subs[r]), ncclSuccess);
    CHECK_RES(ncclCommDestroy(comms[r]), ncclSuccess);
  }
}

static int shrink_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  ncclComm_t comm, small = NULL;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  int exclude[1] = {1};
  int bad = 0;
  if (rank != 1) {
    MP_CHECK(ncclCommShrink(comm, exclude, 1, &small, NULL, NCCL_SHRINK_DEFAULT));
    int n = 0, r = 0;
    MP_CHECK(ncclCommCount(small, &n));
    MP_CHECK(ncclCommUserRank(small, &r));
    bad = n != nranks - 1 || r != (rank > 1 ? rank - 1 : rank);
    bad |= check_allreduce(small);
    MP_CHECK(ncclCommDestroy(small));
  }
  MP_CHECK(ncclCommDestroy(comm));
  return bad;
}

TEST(shrink_processes) {
  CHECK_EQ(mp_run(4, shrink_main, NULL), 0);
}

TEST(group_simulate_estimates) {
  ncclComm_t comm;
  CHECK_RES(ncclCommInitAll(&comm, 1, NULL), ncclSuccess);
  float buf[256] = {0};
  ncclSimInfo_t small = NCCL_SIM_INFO_INITIALIZER, big = NCCL_SIM_INFO_INITIALIZER;
  CHECK_RES(ncclGroupStart(), ncclSuccess);
  CHECK_RES(ncclAllReduce(buf, buf, 16, ncclFloat, ncclSum, comm, NULL), ncclSuccess);
  CHECK_RES(ncclGroupSimulateEnd(&small), ncclSuccess);
  CHECK_RES(ncclGroupStart(), ncclSuccess);
  CHECK_RES(ncclAllReduce(buf, buf, 256, ncclFloat, ncclSum, comm, NULL), ncclSuccess);
  CHECK_RES(ncclGroupSimulateEnd(&big), ncclSuccess);
  CHECK(small.estimatedTime > 0 && big.estimatedTime > small.estimatedTime);
  CHECK_RES(ncclCommDestroy(comm), ncclSuccess);
}
