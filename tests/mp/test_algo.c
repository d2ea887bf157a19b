/* SPDX-License-Identifier: BSD-3-Clause */
/* Algorithm choice on the CPU engine: AllReduce, Broadcast and Reduce with NCCL_ALGO forcing Tree
 * and Ring (and OneShot and TwoShot for AllReduce), on 1, 2, 3, 4, 5 and 8 ranks as processes:
 * every dtype (x every op for the reductions, PreMulSum with both scalar residences) x counts {0,
 * 1, 7, 1023, 64K+3} x in/out of place x every root, plus 1M+3 elements on a few types; checked
 * exactly. The environment is set before the ranks are forked (parameters are read once per
 * process). Then the choice itself: the log names the algorithm that ran and prints the comm's
 * table, and impossible or malformed NCCL_ALGO and NCCL_PROTO values (LL and LL128 on this
 * engine) fail with ncclInvalidUsage and a sentence that names the cause. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common.h"
#include "harness.h"

enum { ALLREDUCE, BROADCAST, REDUCE };
static const char* coll_names[] = {"AllReduce", "Broadcast", "Reduce"};
static const size_t counts[] = {0, 1, 7, 1023, (1 << 16) + 3};
#define NCOUNTS (sizeof counts / sizeof counts[0])
#define LARGE   ((size_t)(1 << 20) + 3)

struct tcase {
  int coll, rank, n, op, inplace, root;
  ncclDataType_t dt;
  size_t count;
  char what[160];
};

static unsigned char pat(int root, size_t j) {
  return (unsigned char)(root * 29 + j * 13 + (j >> 9) + 7);
}

static int check_reduced(const struct tcase* c, const char* out) {
  double expect[231];
  int bad = 0;
  for (size_t i = 0; i < 231; i++)
    expect[i] = mp_expected(c->dt, c->op < 5 ? c->op : 5, c->n, i, 2);
  for (size_t i = 0; i < c->count && bad < 3; i++) {
    double got = mp_load(out, i, c->dt), want = expect[i % 231];
    if (!mp_equal(c->dt, c->op, got, want)) {
      fprintf(stderr, "%s: element %zu is %g, expected %g\n", c->what, i, got, want);
      bad++;
    }
  }
  return bad;
}

static int run_reduction(ncclComm_t comm, const struct tcase* c, char* send, char* recv) {
  for (size_t i = 0; i < c->count; i++)
    mp_store(send, i, c->dt, mp_value(c->dt, c->op, c->rank, i));
  ncclRedOp_t red = (ncclRedOp_t)c->op;
  unsigned char sbuf[8];
  mp_store(sbuf, 0, c->dt, 2);
  if (c->op >= 5)
    MP_CHECK(ncclRedOpCreatePreMulSum(
        &red, sbuf, c->dt, c->op == 5 ? ncclScalarHostImmediate : ncclScalarDevice, comm));
  char* out = c->inplace ? send : recv;
  if (c->coll == ALLREDUCE)
    MP_CHECK(ncclAllReduce(send, out, c->count, c->dt, red, comm, NULL));
  else
    MP_CHECK(ncclReduce(send, out, c->count, c->dt, red, c->root, comm, NULL));
  if (c->op >= 5) MP_CHECK(ncclRedOpDestroy(red, comm));
  if (c->coll == REDUCE && c->rank != c->root) return 0;
  return check_reduced(c, out);
}

static int run_broadcast(ncclComm_t comm, const struct tcase* c, char* send, char* recv) {
  size_t bytes = c->count * mp_size(c->dt);
  char* in = c->inplace ? recv : send;
  if (c->rank == c->root)
    for (size_t j = 0; j < bytes; j++) in[j] = (char)pat(c->root, j);
  MP_CHECK(ncclBroadcast(in, recv, c->count, c->dt, c->root, comm, NULL));
  for (size_t j = 0; j < bytes; j++)
    if ((unsigned char)recv[j] != pat(c->root, j)) {
      fprintf(stderr, "%s: byte %zu is 0x%02x, expected 0x%02x\n", c->what, j,
              (unsigned char)recv[j], pat(c->root, j));
      return 1;
    }
  return 0;
}

static int run_case(ncclComm_t comm, struct tcase* c) {
  size_t bytes = c->count * mp_size(c->dt) + 8;
  char* send = malloc(bytes);
  char* recv = malloc(bytes);
  memset(recv, 0x5a, bytes);
  snprintf(c->what, sizeof c->what, "%s rank %d/%d %s %s count %zu %s root %d (NCCL_ALGO=%s)",
           coll_names[c->coll], c->rank, c->n, mp_type_name(c->dt),
           c->op >= 0 ? mp_op_names[c->op] : "-", c->count,
           c->inplace ? "in-place" : "out-of-place", c->root, getenv("NCCL_ALGO"));
  int bad = c->coll == BROADCAST ? run_broadcast(comm, c, send, recv)
                                 : run_reduction(comm, c, send, recv);
  free(send);
  free(recv);
  return bad != 0;
}

static int rank_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  int coll = *(int*)arg, bad = 0, reduces = coll != BROADCAST;
  ncclComm_t comm;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  for (int dt = 0; dt < ncclNumTypes && bad < 5; dt++)
    for (int op = reduces ? 0 : -1; op < (reduces ? 7 : 0); op++)
      for (size_t k = 0; k <= NCOUNTS; k++) {
        int large = k == NCOUNTS; /* 1M+3 on a few types and ops */
        if (large && !(dt == ncclFloat32 || dt == ncclBfloat16 || (dt == ncclInt32 && !reduces)))
          continue;
        if (large && reduces && op != ncclSum && op != ncclAvg) continue;
        size_t count = large ? LARGE : counts[k];
        for (int inplace = 0; inplace < 2; inplace++)
          for (int root = 0; root < (coll == ALLREDUCE ? 1 : nranks); root++) {
            if (count > 1023 && root != 0 && root != nranks - 1) continue;
            struct tcase c = {coll, rank, nranks, op, inplace, root, (ncclDataType_t)dt, count, ""};
            bad += run_case(comm, &c);
          }
      }
  MP_CHECK(ncclCommDestroy(comm));
  return bad != 0;
}

static int colls[] = {ALLREDUCE, BROADCAST, REDUCE};

static int run_forced(const char* algo, int coll, int n) {
  setenv("NCCL_ALGO", algo, 1);
  return mp_run(n, rank_main, &colls[coll]);
}

#define FORCED(name, algo, coll)                                                                   \
  TEST(name##_1) {                                                                                 \
    CHECK_EQ(run_forced(algo, coll, 1), 0);                                                        \
  }                                                                                                \
  TEST(name##_2) {                                                                                 \
    CHECK_EQ(run_forced(algo, coll, 2), 0);                                                        \
  }                                                                                                \
  TEST(name##_3) {                                                                                 \
    CHECK_EQ(run_forced(algo, coll, 3), 0);                                                        \
  }                                                                                                \
  TEST(name##_4) {                                                                                 \
    CHECK_EQ(run_forced(algo, coll, 4), 0);                                                        \
  }                                                                                                \
  TEST(name##_5) {                                                                                 \
    CHECK_EQ(run_forced(algo, coll, 5), 0);                                                        \
  }                                                                                                \
  TEST(name##_8) {                                                                                 \
    CHECK_EQ(run_forced(algo, coll, 8), 0);                                                        \
  }
FORCED(tree_allreduce, "Tree", ALLREDUCE)
FORCED(tree_broadcast, "Tree", BROADCAST)
FORCED(tree_reduce, "Tree", REDUCE)
FORCED(oneshot_allreduce, "OneShot", ALLREDUCE)
FORCED(twoshot_allreduce, "TwoShot", ALLREDUCE)
FORCED(ring_allreduce, "Ring", ALLREDUCE)
FORCED(ring_broadcast, "Ring", BROADCAST)
FORCED(ring_reduce, "Ring", REDUCE)

/* Per-collective lists, mixed case: AllReduce on the tree, Broadcast and Reduce on the ring. */
TEST(per_collective_list_4) {
  setenv("NCCL_ALGO", "allreduce:TREE;Broadcast:ring;reduce:Ring", 1);
  CHECK_EQ(mp_run(4, rank_main, &colls[ALLREDUCE]), 0);
  CHECK_EQ(mp_run(4, rank_main, &colls[BROADCAST]), 0);
}

/* --- what ran, from the TUNING log -------------------------------------------------------- */

static int one_allreduce(int rank, int nranks, ncclUniqueId id, void* arg) {
  ncclComm_t comm;
  size_t count = *(size_t*)arg;
  float* buf = calloc(count, sizeof(float));
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  MP_CHECK(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, NULL));
  MP_CHECK(ncclCommDestroy(comm));
  free(buf);
  return 0;
}

static void rm_dir(const char* dir) {
  DIR* d = opendir(dir);
  struct dirent* e;
  char path[512];
  while (d && (e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') snprintf(path, sizeof path, "%s/%s", dir, e->d_name), unlink(path);
  if (d) closedir(d);
  rmdir(dir);
}

/* 1 if a log file in dir has a line containing both a and b. */
static int log_has(const char* dir, const char* a, const char* b) {
  DIR* d = opendir(dir);
  struct dirent* e;
  char path[512], line[1024];
  int found = 0;
  while (d && (e = readdir(d)) != NULL && !found) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE* f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
      if (strstr(line, a) && strstr(line, b)) found = 1;
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return found;
}

static void run_logged(const char* algo, int n, size_t count, char* dir) {
  strcpy(dir, "/tmp/monel_algo_XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  char file[600];
  snprintf(file, sizeof file, "%s/log.%%p", dir);
  if (algo) setenv("NCCL_ALGO", algo, 1);
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "TUNING", 1);
  setenv("NCCL_DEBUG_FILE", file, 1);
  CHECK_EQ(mp_run(n, one_allreduce, &count), 0);
}

TEST(log_names_forced_tree) {
  char dir[64];
  run_logged("tree", 4, 1 << 20, dir);
  CHECK(log_has(dir, "AllReduce of 4194304 bytes", "Tree"));
  rm_dir(dir);
}

TEST(log_names_forced_ring) {
  char dir[64];
  run_logged("^TREE,oneshot,TwoShot", 8, 1, dir);
  CHECK(log_has(dir, "AllReduce of 4 bytes", "Ring"));
  rm_dir(dir);
}

TEST(log_names_forced_oneshot) {
  char dir[64];
  run_logged("allreduce:OneShot", 4, 3000, dir);
  CHECK(log_has(dir, "AllReduce of 12000 bytes", "OneShot"));
  rm_dir(dir);
}

TEST(log_names_forced_twoshot) {
  char dir[64];
  run_logged("allreduce:TwoShot", 5, 3001, dir);
  CHECK(log_has(dir, "AllReduce of 12004 bytes", "TwoShot"));
  rm_dir(dir);
}

/* The cost model: a tiny AllReduce on 8 ranks does not take the ring (14 steps). */
TEST(default_small_allreduce_8_avoids_ring) {
  char dir[64];
  run_logged(NULL, 8, 1, dir);
  CHECK(log_has(dir, "AllReduce of 4 bytes", "on 8 ranks"));
  CHECK(!log_has(dir, "AllReduce of 4 bytes", "Ring"));
  rm_dir(dir);
}

/* The comm's table, once (rank 0), at NCCL_DEBUG_SUBSYS=TUNING: every pair with its figures. */
TEST(log_prints_the_table) {
  char dir[64];
  run_logged(NULL, 2, 1, dir);
  CHECK(log_has(dir, "nranks 2 engine cpu path host shared memory", "per-step latency"));
  CHECK(log_has(dir, "AllReduce", "Ring/Simple 0.40 6.7"));
  CHECK(log_has(dir, "AllReduce", "TwoShot/Simple"));
  CHECK(log_has(dir, "AllGather", "Ring/Simple"));
  CHECK(!log_has(dir, "AllGather", "Tree/"));
  rm_dir(dir);
}

/* --- impossible choices ------------------------------------------------------------------- */

struct expect_err {
  int coll;           /* ALLREDUCE, or 3 for AllGather, 4 for ReduceScatter, 5 for Broadcast */
  const char* words;  /* must appear in ncclGetLastError */
  int then_allreduce; /* afterwards an AllReduce on the same comm succeeds */
};

static int failing_rank(int rank, int nranks, ncclUniqueId id, void* arg) {
  const struct expect_err* e = arg;
  ncclComm_t comm;
  float buf[64] = {0};
  float out[64 * 8];
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  ncclResult_t r;
  if (e->coll == 3)
    r = ncclAllGather(buf, out, 64, ncclFloat32, comm, NULL);
  else if (e->coll == 4)
    r = ncclReduceScatter(out, buf, 64, ncclFloat32, ncclSum, comm, NULL);
  else if (e->coll == 5)
    r = ncclBroadcast(buf, buf, 64, ncclFloat32, 0, comm, NULL);
  else
    r = ncclAllReduce(buf, buf, 64, ncclFloat32, ncclSum, comm, NULL);
  const char* msg = ncclGetLastError(comm);
  if (r != ncclInvalidUsage || strstr(msg, e->words) == NULL) {
    fprintf(stderr, "rank %d: got %d and \"%s\", expected ncclInvalidUsage and \"%s\"\n", rank,
            (int)r, msg, e->words);
    return 1;
  }
  for (int i = 0; i < 64; i++) buf[i] = (float)(rank + 1);
  if (e->then_allreduce) {
    MP_CHECK(ncclAllReduce(buf, buf, 64, ncclFloat32, ncclSum, comm, NULL));
    for (int i = 0; i < 64; i++)
      if (buf[i] != (float)(nranks * (nranks + 1) / 2)) return 1;
  }
  MP_CHECK(ncclCommDestroy(comm));
  return 0;
}

static int run_failing(const char* algo, int coll, const char* words, int then_allreduce) {
  struct expect_err e = {coll, words, then_allreduce};
  setenv("NCCL_ALGO", algo, 1);
  return mp_run(3, failing_rank, &e);
}

TEST(error_oneshot_for_broadcast) {
  CHECK_EQ(run_failing("oneshot", 5, "leaves no algorithm for Broadcast", 1), 0);
}
TEST(error_tree_for_allgather) {
  CHECK_EQ(run_failing("Tree", 3, "leaves no algorithm for AllGather", 1), 0);
}
TEST(error_tree_for_reducescatter) {
  CHECK_EQ(run_failing("tree", 4, "leaves no algorithm for ReduceScatter", 1), 0);
}
TEST(error_unknown_algorithm) {
  CHECK_EQ(run_failing("Ring,Butterfly", ALLREDUCE, "\"Butterfly\" is not an algorithm", 0), 0);
}
TEST(error_unknown_collective) {
  CHECK_EQ(run_failing("allreduce:tree;alltoall:ring", ALLREDUCE, "\"alltoall\" is not a", 0), 0);
}
TEST(error_nothing_left) {
  CHECK_EQ(
      run_failing("^ring,tree,OneShot,twoshot", ALLREDUCE, "leaves no algorithm for AllReduce", 0),
      0);
}
TEST(error_only_nvls) {
  CHECK_EQ(run_failing("NVLS", ALLREDUCE, "leaves no algorithm for AllReduce", 0), 0);
}
/* The CPU engine runs Simple only: NCCL_PROTO without it is refused, with the reason. */
static int run_failing_proto(const char* proto, int coll, const char* words) {
  struct expect_err e = {coll, words, coll != ALLREDUCE}; /* AllReduce then runs */
  setenv("NCCL_PROTO", proto, 1);
  return mp_run(3, failing_rank, &e);
}
TEST(error_proto_ll_on_cpu) {
  CHECK_EQ(run_failing_proto("LL", ALLREDUCE, "NCCL_PROTO=\"LL\" leaves no protocol for AllReduce"),
           0);
}
TEST(error_proto_ll128_per_collective_on_cpu) {
  CHECK_EQ(run_failing_proto("allgather:LL128", 3, "leaves no protocol for AllGather"), 0);
}
TEST(error_proto_unknown) {
  CHECK_EQ(run_failing_proto("Simple,LL64", ALLREDUCE, "\"LL64\" is not a protocol"), 0);
}

TEST(error_per_collective_tree_for_allgather) {
  CHECK_EQ(run_failing("allgather:tree", 3, "leaves no algorithm for AllGather", 1), 0);
}
