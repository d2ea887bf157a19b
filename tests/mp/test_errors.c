/* Errors: bad arguments give the right code and a sentence saying what is wrong; a rank killed
 * in the middle of an AllReduce makes every other rank return an error within 10 s. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common.h"
#include "harness.h"

static void expect_error(ncclResult_t got, ncclResult_t want, const char* words) {
  const char* msg = ncclGetLastError(NULL);
  if (got != want || strstr(msg, words) == NULL) {
    fprintf(stderr, "got %d, want %d; last error \"%s\" should contain \"%s\"\n", (int)got,
            (int)want, msg, words);
    exit(1);
  }
}

static ncclComm_t one_rank_comm(void) {
  ncclComm_t comm = NULL;
  CHECK_RES(ncclCommInitAll(&comm, 1, NULL), ncclSuccess);
  return comm;
}

TEST(null_comm) {
  float x = 0;
  expect_error(ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, NULL, NULL), ncclInvalidArgument,
               "comm is NULL");
  int n;
  expect_error(ncclCommCount(NULL, &n), ncclInvalidArgument, "comm is NULL");
}

TEST(destroyed_comm) {
  ncclComm_t comm = one_rank_comm();
  CHECK_RES(ncclCommDestroy(comm), ncclSuccess);
  float x = 0;
  expect_error(ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comm, NULL), ncclInvalidArgument,
               "not a live communicator");
}

TEST(rank_out_of_range) {
  ncclUniqueId id;
  ncclComm_t comm;
  CHECK_RES(ncclGetUniqueId(&id), ncclSuccess);
  expect_error(ncclCommInitRank(&comm, 4, id, 4), ncclInvalidArgument, "rank 4 is out of range");
  expect_error(ncclCommInitRank(&comm, 4, id, -1), ncclInvalidArgument, "rank -1 is out of range");
  expect_error(ncclCommInitRank(&comm, 0, id, 0), ncclInvalidArgument, "nranks is 0");
}

TEST(invalid_dtype_and_op) {
  ncclComm_t comm = one_rank_comm();
  float x = 1;
  expect_error(ncclAllReduce(&x, &x, 1, (ncclDataType_t)12, ncclSum, comm, NULL),
               ncclInvalidArgument, "datatype 12 is invalid");
  expect_error(ncclAllReduce(&x, &x, 1, (ncclDataType_t)-1, ncclSum, comm, NULL),
               ncclInvalidArgument, "datatype -1 is invalid");
  expect_error(ncclAllReduce(&x, &x, 1, ncclFloat, (ncclRedOp_t)5, comm, NULL), ncclInvalidArgument,
               "reduction op 5");
  expect_error(ncclAllReduce(&x, &x, 1, ncclFloat, (ncclRedOp_t)77, comm, NULL),
               ncclInvalidArgument, "reduction op 77");
  /* A PreMulSum handle of another datatype, and one already destroyed. */
  ncclRedOp_t op;
  float s = 2;
  CHECK_RES(ncclRedOpCreatePreMulSum(&op, &s, ncclFloat, ncclScalarHostImmediate, comm),
            ncclSuccess);
  expect_error(ncclAllReduce(&x, &x, 1, ncclDouble, op, comm, NULL), ncclInvalidArgument,
               "created for datatype float");
  CHECK_RES(ncclRedOpDestroy(op, comm), ncclSuccess);
  expect_error(ncclAllReduce(&x, &x, 1, ncclFloat, op, comm, NULL), ncclInvalidArgument,
               "reduction op 5");
  CHECK_RES(ncclCommDestroy(comm), ncclSuccess);
}

TEST(count_overflow) {
  ncclComm_t comm = one_rank_comm();
  float x = 1;
  expect_error(ncclAllReduce(&x, &x, (size_t)1 << 62, ncclFloat, ncclSum, comm, NULL),
               ncclInvalidArgument, "overflows");
  expect_error(ncclAllReduce(&x, &x, (size_t)-1, ncclInt8, ncclSum, comm, NULL),
               ncclInvalidArgument, "overflows");
  CHECK_RES(ncclCommDestroy(comm), ncclSuccess);
}

TEST(null_buffers) {
  ncclComm_t comm = one_rank_comm();
  float x = 1;
  expect_error(ncclAllReduce(NULL, &x, 1, ncclFloat, ncclSum, comm, NULL), ncclInvalidArgument,
               "sendbuff is NULL");
  expect_error(ncclAllReduce(&x, NULL, 1, ncclFloat, ncclSum, comm, NULL), ncclInvalidArgument,
               "recvbuff is NULL");
  CHECK_RES(ncclAllReduce(NULL, NULL, 0, ncclFloat, ncclSum, comm, NULL), ncclSuccess);
  CHECK_RES(ncclCommDestroy(comm), ncclSuccess);
}

TEST(config_not_initialized) {
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  CHECK_RES(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config;
  memset(&config, 0, sizeof config);
  config.size = sizeof config;
  expect_error(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclInvalidArgument,
               "NCCL_CONFIG_INITIALIZER");
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.blocking = 7;
  expect_error(ncclCommInitRankConfig(&comm, 1, id, 0, &bad), ncclInvalidArgument,
               "config.blocking is 7");
  ncclConfig_t ctas = NCCL_CONFIG_INITIALIZER;
  ctas.minCTAs = 8;
  ctas.maxCTAs = 4;
  expect_error(ncclCommInitRankConfig(&comm, 1, id, 0, &ctas), ncclInvalidArgument,
               "minCTAs (8) is larger");
}

TEST(group_end_without_start) {
  expect_error(ncclGroupEnd(), ncclInvalidUsage, "without a matching ncclGroupStart");
}

TEST(get_version_and_strings) {
  int v = 0;
  CHECK_RES(ncclGetVersion(&v), ncclSuccess);
  CHECK_EQ(v, 22809);
  expect_error(ncclGetVersion(NULL), ncclInvalidArgument, "version is NULL");
  CHECK(strcmp(ncclGetErrorString(ncclSuccess), "no error") == 0);
  CHECK(strstr(ncclGetErrorString(ncclRemoteError), "remote") != NULL);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* Rank 2 kills itself during the 5th AllReduce; the others must fail within 10 s. */
static int killed_rank_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  ncclComm_t comm;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  size_t count = 4 << 20;
  float* buf = calloc(count, sizeof(float));
  double last = now();
  for (int iter = 0; iter < 1000; iter++) {
    if (rank == 2 && iter == 5) raise(SIGKILL);
    ncclResult_t res = ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, NULL);
    double t = now();
    if (res != ncclSuccess) {
      const char* msg = ncclGetLastError(comm);
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm, &async);
      fprintf(stderr, "rank %d: error %d after %.2f s: %s\n", rank, (int)res, t - last, msg);
      int ok = (res == ncclRemoteError || res == ncclSystemError) && t - last < 10.0 &&
               async == res && strstr(msg, "peer rank") != NULL;
      /* rank 3 receives from rank 2: it sees the death itself (others may hear of it first
       * from a neighbour that stopped) */
      if (rank == 3 && strstr(msg, "peer rank 2") == NULL) ok = 0;
      ncclCommAbort(comm);
      free(buf);
      return ok ? 0 : 1;
    }
    last = t;
  }
  fprintf(stderr, "rank %d never saw an error\n", rank);
  return 1;
}

TEST(killed_rank_allreduce) {
  /* mp_run counts rank 2 (killed) as failed: exactly one failure is expected. */
  CHECK_EQ(mp_run(4, killed_rank_main, NULL), 1);
}
