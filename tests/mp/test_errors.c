/* SPDX-License-Identifier: BSD-3-Clause */
/* Errors: bad arguments give the right code and a sentence saying what is wrong; a rank killed
 * in the middle of any collective (over shared memory or TCP) makes every other rank return
 * ncclRemoteError or ncclSystemError within 10 s, naming the dead rank; ncclCommAbort then
 * returns at once and nothing stays in /dev/shm. */
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "common.h"
#include "harness.h"
#include "monel.h"

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

/* NCCL_COMM_ID names where rank 0 runs the bootstrap root: a name that does not resolve fails in
 * ncclGetUniqueId, an address of another host in rank 0's init; both say so. (Parameters are read
 * once per process: one value per test.) */
TEST(comm_id_unresolvable) {
  ncclUniqueId id;
  setenv("NCCL_COMM_ID", "nosuchhost.invalid:29999", 1);
  expect_error(ncclGetUniqueId(&id), ncclInvalidArgument, "cannot resolve \"nosuchhost.invalid\"");
}

TEST(comm_id_other_host) {
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  setenv("NCCL_COMM_ID", "192.0.2.1:29999", 1); /* TEST-NET-1: never an address of this host */
  CHECK_RES(ncclGetUniqueId(&id), ncclSuccess);
  expect_error(ncclCommInitRank(&comm, 2, id, 0), ncclSystemError,
               "NCCL_COMM_ID=192.0.2.1:29999: rank 0 cannot run the bootstrap root there");
  CHECK(comm == NULL);
}

TEST(group_end_without_start) {
  expect_error(ncclGroupEnd(), ncclInvalidUsage, "without a matching ncclGroupStart");
}

TEST(get_version_and_strings) {
  int v = 0;
  CHECK_RES(ncclGetVersion(&v), ncclSuccess);
  CHECK_EQ(v, 23203);
  expect_error(ncclGetVersion(NULL), ncclInvalidArgument, "version is NULL");
  CHECK(strcmp(ncclGetErrorString(ncclSuccess), "no error") == 0);
  CHECK(strstr(ncclGetErrorString(ncclRemoteError), "remote") != NULL);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* A rank killed during a collective. 4 ranks run the operation once (every connection it needs
 * then exists); when the others have finished it (over TCP, data a rank has posted may still be
 * on its way when it returns), rank 2 kills itself (SIGKILL) while the others run the operation
 * again, and again, until it fails: a rank that does not wait on rank 2 itself may finish one,
 * and fails in a later one, once the ranks that do wait on it have stopped. Each part is 2 MB,
 * more than a FIFO holds, so that senders to the dead rank block too. */
#define KILL_RANKS  4
#define KILL_VICTIM 2
#define KILL_COUNT  ((size_t)1 << 19) /* floats per part */

enum kill_op {
  K_ALLREDUCE,
  K_BROADCAST,
  K_REDUCE,
  K_ALLGATHER,
  K_REDUCESCATTER,
  K_ALLTOALL,
  K_ALLTOALLV,
  K_GATHER,
  K_SCATTER,
  K_SENDRECV
};

struct kill_case {
  enum kill_op op;
  int root;         /* of Broadcast, Reduce, Gather, Scatter */
  size_t count;     /* floats per part; KILL_COUNT when 0 */
  const char* algo; /* NCCL_ALGO, or NULL */
  int tcp;          /* NCCL_SHM_DISABLE=1 */
  struct kill_shared* sh;
};

/* Shared by the ranks and the test process. */
struct kill_shared {
  int pids[KILL_RANKS];
  int stale; /* objects in /dev/shm named after those pids before the ranks started */
  int warm;  /* ranks that have run the operation once */
};

static int shm_count(const int* pids, int n, int verbose);

static ncclResult_t kill_op_run(const struct kill_case* k, ncclComm_t comm, int rank, int n,
                                float* s, float* r, const size_t* v) {
  size_t cnt = k->count;
  switch (k->op) {
  case K_ALLREDUCE:
    return ncclAllReduce(s, r, cnt, ncclFloat, ncclSum, comm, NULL);
  case K_BROADCAST:
    return ncclBroadcast(s, r, cnt, ncclFloat, k->root, comm, NULL);
  case K_REDUCE:
    return ncclReduce(s, r, cnt, ncclFloat, ncclSum, k->root, comm, NULL);
  case K_ALLGATHER:
    return ncclAllGather(s, r, cnt, ncclFloat, comm, NULL);
  case K_REDUCESCATTER:
    return ncclReduceScatter(s, r, cnt, ncclFloat, ncclSum, comm, NULL);
  case K_ALLTOALL:
    return ncclAlltoAll(s, r, cnt, ncclFloat, comm, NULL);
  case K_ALLTOALLV:
    return ncclAlltoAllv(s, v, v + n * n, r, v, v + n * n, NULL, 0, ncclFloat, comm, NULL);
  case K_GATHER:
    return ncclGather(s, r, cnt, ncclFloat, k->root, comm, NULL);
  case K_SCATTER:
    return ncclScatter(s, r, cnt, ncclFloat, k->root, comm, NULL);
  case K_SENDRECV:
    ncclGroupStart();
    ncclSend(s, cnt, ncclFloat, (rank + 1) % n, comm, NULL);
    ncclRecv(r, cnt, ncclFloat, (rank + n - 1) % n, comm, NULL);
    return ncclGroupEnd();
  }
  return ncclInternalError;
}

static int kill_rank_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  const struct kill_case* k = arg;
  alarm(30); /* a rank that hangs fails the test instead of stalling it */
  k->sh->pids[rank] = (int)getpid();
  /* An object of a dead process that had this pid, left by another program, is not ours. */
  __atomic_add_fetch(&k->sh->stale, shm_count(&k->sh->pids[rank], 1, 0), __ATOMIC_SEQ_CST);
  ncclComm_t comm;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  size_t total = k->count * (size_t)nranks;
  float* s = calloc(total, sizeof(float));
  float* r = calloc(total, sizeof(float));
  /* AlltoAllv: every pair moves one part, at the offsets AlltoAll would use. */
  size_t* v = calloc(2 * (size_t)nranks * nranks, sizeof(size_t));
  for (int i = 0; i < nranks * nranks; i++) {
    v[i] = k->count;
    v[nranks * nranks + i] = (size_t)(i % nranks) * k->count;
  }
  MP_CHECK(kill_op_run(k, comm, rank, nranks, s, r, v));
  double t0 = now();
  if (rank != KILL_VICTIM) __atomic_add_fetch(&k->sh->warm, 1, __ATOMIC_SEQ_CST);
  while (rank == KILL_VICTIM && __atomic_load_n(&k->sh->warm, __ATOMIC_SEQ_CST) < nranks - 1) {
    if (now() - t0 > 20) return 1;
    sched_yield();
  }
  for (int iter = 0; iter < 1000; iter++) {
    if (rank == KILL_VICTIM) raise(SIGKILL);
    ncclResult_t res = kill_op_run(k, comm, rank, nranks, s, r, v);
    if (res == ncclSuccess) continue;
    double t = now() - t0;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", ncclGetLastError(comm));
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm, &async);
    double a0 = now();
    ncclResult_t ab = ncclCommAbort(comm);
    double ta = now() - a0;
    fprintf(stderr, "rank %d: error %d after %.2f s (op %d), abort %.3f s: %s\n", rank, (int)res, t,
            iter, ta, msg);
    char dead[32];
    snprintf(dead, sizeof dead, "rank %d", KILL_VICTIM);
    int ok = (res == ncclRemoteError || res == ncclSystemError) && t < 10.0 && async == res &&
             strstr(msg, "peer rank") != NULL && strstr(msg, dead) != NULL && ab == ncclSuccess &&
             ta < 5.0;
    free(s), free(r), free(v);
    return ok ? 0 : 1;
  }
  fprintf(stderr, "rank %d never saw an error\n", rank);
  return 1;
}

/* Shared-memory objects in /dev/shm named after the given processes. */
static int shm_count(const int* pids, int n, int verbose) {
  int left = 0;
  DIR* d = opendir("/dev/shm");
  if (d == NULL) return 0;
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    int pid = 0;
    if (sscanf(e->d_name, "monel-%d-", &pid) != 1) continue;
    for (int i = 0; i < n; i++)
      if (pids[i] == pid) {
        if (verbose) fprintf(stderr, "/dev/shm/%s is there\n", e->d_name);
        left++;
      }
  }
  closedir(d);
  return left;
}

static void kill_run(struct kill_case k) {
  if (k.count == 0) k.count = KILL_COUNT;
  if (k.algo) setenv("NCCL_ALGO", k.algo, 1);
  if (k.tcp) setenv("NCCL_SHM_DISABLE", "1", 1);
  k.sh = mmap(NULL, sizeof *k.sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(k.sh != MAP_FAILED);
  memset(k.sh, 0, sizeof *k.sh);
  /* mp_run counts rank 2 (killed) as failed: exactly one failure is expected. */
  CHECK_EQ(mp_run(KILL_RANKS, kill_rank_main, &k), 1);
  CHECK_EQ(shm_count(k.sh->pids, KILL_RANKS, 1), k.sh->stale);
  munmap(k.sh, sizeof *k.sh);
}

#define KILL_TEST(name, ...)                                                                       \
  TEST(killed_rank_##name) {                                                                       \
    kill_run((struct kill_case){__VA_ARGS__});                                                     \
  }

/* Shared memory: every collective, the algorithms AllReduce, Broadcast and Reduce can run, and
 * roots that are and are not the dead rank. */
KILL_TEST(allreduce, .op = K_ALLREDUCE)
KILL_TEST(allreduce_ring, .op = K_ALLREDUCE, .algo = "Ring")
KILL_TEST(allreduce_tree, .op = K_ALLREDUCE, .algo = "Tree")
KILL_TEST(allreduce_oneshot, .op = K_ALLREDUCE, .algo = "OneShot", .count = 1024)
KILL_TEST(allreduce_twoshot, .op = K_ALLREDUCE, .algo = "TwoShot", .count = 4096)
KILL_TEST(broadcast, .op = K_BROADCAST, .root = 0)
KILL_TEST(broadcast_dead_root, .op = K_BROADCAST, .root = KILL_VICTIM)
KILL_TEST(broadcast_tree, .op = K_BROADCAST, .root = 1, .algo = "Tree")
KILL_TEST(reduce, .op = K_REDUCE, .root = 0)
KILL_TEST(reduce_tree, .op = K_REDUCE, .root = 3, .algo = "Tree")
KILL_TEST(allgather, .op = K_ALLGATHER)
KILL_TEST(reducescatter, .op = K_REDUCESCATTER)
KILL_TEST(alltoall, .op = K_ALLTOALL)
KILL_TEST(alltoallv, .op = K_ALLTOALLV)
KILL_TEST(gather, .op = K_GATHER, .root = 0)
KILL_TEST(gather_dead_root, .op = K_GATHER, .root = KILL_VICTIM)
KILL_TEST(scatter, .op = K_SCATTER, .root = 1)
KILL_TEST(scatter_dead_root, .op = K_SCATTER, .root = KILL_VICTIM)
KILL_TEST(sendrecv, .op = K_SENDRECV)
/* TCP between the processes (NCCL_SHM_DISABLE=1). */
KILL_TEST(allreduce_tcp, .op = K_ALLREDUCE, .tcp = 1)
KILL_TEST(broadcast_tcp, .op = K_BROADCAST, .root = 0, .tcp = 1)
KILL_TEST(reduce_tcp, .op = K_REDUCE, .root = 1, .tcp = 1)
KILL_TEST(allgather_tcp, .op = K_ALLGATHER, .tcp = 1)
KILL_TEST(reducescatter_tcp, .op = K_REDUCESCATTER, .tcp = 1)
KILL_TEST(alltoall_tcp, .op = K_ALLTOALL, .tcp = 1)
KILL_TEST(alltoallv_tcp, .op = K_ALLTOALLV, .tcp = 1)
KILL_TEST(gather_tcp, .op = K_GATHER, .root = 3, .tcp = 1)
KILL_TEST(scatter_tcp, .op = K_SCATTER, .root = 0, .tcp = 1)
KILL_TEST(sendrecv_tcp, .op = K_SENDRECV, .tcp = 1)
