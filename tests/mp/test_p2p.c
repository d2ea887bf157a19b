/* SPDX-License-Identifier: BSD-3-Clause */
/* Point-to-point on the CPU engine: ncclSend/ncclRecv in groups (ring, all pairs, self, zero
 * size, many messages of varied sizes to varied peers, messages of several MB), AlltoAllv with
 * random counts including zeros, an in-place AllReduce behind a Send on the same FIFO, and a rank
 * killed during AlltoAll. Data checked byte for byte. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common.h"
#include "harness.h"
#include "monel.h"

/* Byte j of message k from rank s to rank d. */
static unsigned char pat(int s, int d, int k, size_t j) {
  return (unsigned char)(s * 29 + d * 71 + k * 13 + j * 7 + (j >> 9) + 3);
}

static void fill(char* buf, int s, int d, int k, size_t bytes) {
  for (size_t j = 0; j < bytes; j++) buf[j] = (char)pat(s, d, k, j);
}

static int same(const char* buf, int s, int d, int k, size_t bytes) {
  for (size_t j = 0; j < bytes; j++)
    if ((unsigned char)buf[j] != pat(s, d, k, j)) {
      fprintf(stderr,
              "rank %d: message %d from rank %d: byte %zu of %zu is 0x%02x, expected 0x%02x\n", d,
              k, s, j, bytes, (unsigned char)buf[j], pat(s, d, k, j));
      return 1;
    }
  return 0;
}

/* A deterministic generator, the same on every rank. */
static uint64_t rnd(uint64_t* st) {
  *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
  return *st >> 33;
}

/* A plan of messages: src, dst, count (floats). Every rank posts its own in plan order. */
struct plan_msg {
  int src, dst;
  size_t count;
};

static int run_plan(ncclComm_t comm, int rank, const struct plan_msg* m, int nmsg) {
  char** sbufs = calloc(nmsg, sizeof *sbufs);
  char** rbufs = calloc(nmsg, sizeof *rbufs);
  int bad = 0;
  MP_CHECK(ncclGroupStart());
  for (int k = 0; k < nmsg; k++) {
    size_t bytes = m[k].count * sizeof(float);
    if (m[k].src == rank) {
      sbufs[k] = malloc(bytes + 1);
      fill(sbufs[k], m[k].src, m[k].dst, k, bytes);
      MP_CHECK(ncclSend(sbufs[k], m[k].count, ncclFloat, m[k].dst, comm, NULL));
    }
    if (m[k].dst == rank) {
      rbufs[k] = malloc(bytes + 1);
      memset(rbufs[k], 0x5a, bytes);
      MP_CHECK(ncclRecv(rbufs[k], m[k].count, ncclFloat, m[k].src, comm, NULL));
    }
  }
  MP_CHECK(ncclGroupEnd());
  for (int k = 0; k < nmsg; k++) {
    if (rbufs[k]) bad += same(rbufs[k], m[k].src, m[k].dst, k, m[k].count * sizeof(float));
    free(sbufs[k]);
    free(rbufs[k]);
  }
  free(sbufs);
  free(rbufs);
  return bad;
}

enum { RING, ALL_PAIRS, SELF, ZERO, MANY, LARGE, NPLANS };
static int plans[NPLANS] = {RING, ALL_PAIRS, SELF, ZERO, MANY, LARGE};

static int make_plan(int kind, int n, struct plan_msg* m) {
  int k = 0;
  uint64_t st = 12345 + (uint64_t)n;
  switch (kind) {
  case RING:
    for (int r = 0; r < n; r++) m[k++] = (struct plan_msg){r, (r + 1) % n, 100003};
    break;
  case ALL_PAIRS:
    for (int s = 0; s < n; s++)
      for (int d = 0; d < n; d++) m[k++] = (struct plan_msg){s, d, 1000 + 37 * s + 11 * d};
    break;
  case SELF:
    for (int r = 0; r < n; r++) m[k++] = (struct plan_msg){r, r, 300001};
    break;
  case ZERO: /* zero-size messages between real ones */
    for (int r = 0; r < n; r++) {
      m[k++] = (struct plan_msg){r, (r + 1) % n, 0};
      m[k++] = (struct plan_msg){r, (r + 1) % n, 5};
      m[k++] = (struct plan_msg){r, (r + n - 1) % n, 0};
      m[k++] = (struct plan_msg){r, r, 0};
    }
    break;
  case MANY: /* 20 messages from each rank, varied sizes and peers */
    for (int r = 0; r < n; r++)
      for (int i = 0; i < 20; i++) {
        size_t sz = rnd(&st) % 4 == 0 ? 0 : rnd(&st) % 3 == 0 ? rnd(&st) % 200000 : rnd(&st) % 3000;
        m[k++] = (struct plan_msg){r, (int)(rnd(&st) % (uint64_t)n), sz};
      }
    /* shuffle so sends and receives interleave differently on each rank */
    for (int i = k - 1; i > 0; i--) {
      int j = (int)(rnd(&st) % (uint64_t)(i + 1));
      struct plan_msg t = m[i];
      m[i] = m[j], m[j] = t;
    }
    break;
  case LARGE: /* several MB each way around the ring, both directions at once */
    for (int r = 0; r < n; r++) {
      m[k++] = (struct plan_msg){r, (r + 1) % n, 3 << 20};
      m[k++] = (struct plan_msg){r, (r + n - 1) % n, (1 << 20) + 7};
    }
    break;
  }
  return k;
}

static int plan_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  int kind = *(int*)arg, bad = 0;
  ncclComm_t comm;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  struct plan_msg* m = malloc(sizeof *m * (size_t)(20 * nranks + nranks * nranks + 8 * nranks));
  int nm = make_plan(kind, nranks, m);
  for (int iter = 0; iter < 2; iter++) bad += run_plan(comm, rank, m, nm); /* lazy, then ready */
  free(m);
  MP_CHECK(ncclCommDestroy(comm));
  return bad != 0;
}

#define PLAN_TESTS(name, id)                                                                       \
  TEST(name##_1) {                                                                                 \
    CHECK_EQ(mp_run(1, plan_main, &plans[id]), 0);                                                 \
  }                                                                                                \
  TEST(name##_2) {                                                                                 \
    CHECK_EQ(mp_run(2, plan_main, &plans[id]), 0);                                                 \
  }                                                                                                \
  TEST(name##_3) {                                                                                 \
    CHECK_EQ(mp_run(3, plan_main, &plans[id]), 0);                                                 \
  }                                                                                                \
  TEST(name##_5) {                                                                                 \
    CHECK_EQ(mp_run(5, plan_main, &plans[id]), 0);                                                 \
  }                                                                                                \
  TEST(name##_8) {                                                                                 \
    CHECK_EQ(mp_run(8, plan_main, &plans[id]), 0);                                                 \
  }
PLAN_TESTS(ring, RING)
PLAN_TESTS(all_pairs, ALL_PAIRS)
PLAN_TESTS(self, SELF)
PLAN_TESTS(zero_size, ZERO)
PLAN_TESTS(many_in_group, MANY)
PLAN_TESTS(several_mb, LARGE)

TEST(threads_all_pairs_4) {
  CHECK_EQ(mp_run_threads(4, plan_main, &plans[ALL_PAIRS]), 0);
}
TEST(threads_many_in_group_4) {
  CHECK_EQ(mp_run_threads(4, plan_main, &plans[MANY]), 0);
}

/* A send to myself needs a receive from myself of its size, and the other way round: a group
 * without its partner is ncclInvalidUsage, and the sentence says which call. */
static int self_unpaired_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  int recv_only = *(int*)arg, bad = 0;
  char buf[16] = {0};
  ncclComm_t comm;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  MP_CHECK(ncclGroupStart());
  if (!recv_only) MP_CHECK(ncclSend(buf, 8, ncclInt8, rank, comm, NULL));
  MP_CHECK(ncclRecv(buf + 8, 4, ncclInt8, rank, comm, NULL));
  ncclResult_t r = ncclGroupEnd();
  const char* why = ncclGetLastError(comm);
  const char* want = recv_only ? "a receive of 4 bytes from itself has no matching send"
                               : "a send of 8 bytes to itself has no receive from itself";
  if (r != ncclInvalidUsage || strstr(why, want) == NULL) {
    fprintf(stderr, "rank %d: ncclGroupEnd gave %d, last error \"%s\"; expected %d and \"%s\"\n",
            rank, (int)r, why, (int)ncclInvalidUsage, want);
    bad = 1;
  }
  ncclCommAbort(comm);
  return bad;
}

static int send_sizes_differ = 0, recv_alone = 1;
TEST(self_send_without_its_receive_1) {
  CHECK_EQ(mp_run(1, self_unpaired_main, &send_sizes_differ), 0);
}
TEST(self_receive_without_a_send_2) {
  CHECK_EQ(mp_run(2, self_unpaired_main, &recv_alone), 0);
}

/* Ungrouped blocking calls: rank 0 sends 5 MB to rank 1, which sends it back. */
static int pingpong_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  (void)arg, (void)nranks;
  ncclComm_t comm;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  size_t bytes = 5 << 20;
  char* buf = malloc(bytes);
  if (rank == 0) {
    fill(buf, 0, 1, 0, bytes);
    MP_CHECK(ncclSend(buf, bytes, ncclInt8, 1, comm, NULL));
    memset(buf, 0, bytes);
    MP_CHECK(ncclRecv(buf, bytes, ncclInt8, 1, comm, NULL));
  } else {
    MP_CHECK(ncclRecv(buf, bytes, ncclInt8, 0, comm, NULL));
    MP_CHECK(ncclSend(buf, bytes, ncclInt8, 0, comm, NULL));
  }
  int bad = same(buf, 0, 1, 0, bytes);
  free(buf);
  MP_CHECK(ncclCommDestroy(comm));
  return bad;
}
TEST(ungrouped_pingpong_2) {
  CHECK_EQ(mp_run(2, pingpong_main, NULL), 0);
}

/* AlltoAllv: random counts (a quarter of them zero), displacements with gaps, every dtype size. */
static int alltoallv_main(int rank, int n, ncclUniqueId id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  MP_CHECK(ncclCommInitRank(&comm, n, id, rank));
  int bad = 0;
  size_t nn = (size_t)n * n;
  size_t *sc = malloc(nn * sizeof *sc), *sd = malloc(nn * sizeof *sd);
  size_t *rc = malloc(nn * sizeof *rc), *rd = malloc(nn * sizeof *rd);
  ncclDataType_t types[] = {ncclInt8, ncclFloat16, ncclFloat32, ncclFloat64};
  for (int iter = 0; iter < 8; iter++) {
    ncclDataType_t dt = types[iter % 4];
    size_t es = mp_size(dt);
    uint64_t st = 777 + (uint64_t)iter * 31 + (uint64_t)n;
    /* count[s][d]: elements s sends to d */
    size_t* cnt = malloc(nn * sizeof *cnt);
    for (size_t i = 0; i < nn; i++)
      cnt[i] = rnd(&st) % 4 == 0 ? 0 : rnd(&st) % (iter < 4 ? 5000 : 300000);
    for (int s = 0; s < n; s++) {
      size_t so = 0, ro = 0;
      for (int d = 0; d < n; d++) {
        sc[s * n + d] = cnt[s * n + d], sd[s * n + d] = so, so += cnt[s * n + d] + 3;
        rc[s * n + d] = cnt[d * n + s], rd[s * n + d] = ro, ro += cnt[d * n + s] + 1;
      }
    }
    size_t stot = sd[rank * n + n - 1] + sc[rank * n + n - 1] + 3;
    size_t rtot = rd[rank * n + n - 1] + rc[rank * n + n - 1] + 1;
    char* sbuf = malloc(stot * es);
    char* rbuf = malloc(rtot * es);
    memset(rbuf, 0x5a, rtot * es);
    for (int d = 0; d < n; d++)
      fill(sbuf + sd[rank * n + d] * es, rank, d, iter, sc[rank * n + d] * es);
    MP_CHECK(ncclAlltoAllv(sbuf, sc, sd, rbuf, rc, rd, NULL, 0, dt, comm, NULL));
    memset(sc, 0xff, nn * sizeof *sc); /* the rows were copied at enqueue */
    for (int s = 0; s < n; s++)
      bad += same(rbuf + rd[rank * n + s] * es, s, rank, iter, cnt[s * n + rank] * es);
    free(sbuf), free(rbuf), free(cnt);
  }
  free(sc), free(sd), free(rc), free(rd);
  MP_CHECK(ncclCommDestroy(comm));
  return bad != 0;
}
TEST(alltoallv_1) {
  CHECK_EQ(mp_run(1, alltoallv_main, NULL), 0);
}
TEST(alltoallv_2) {
  CHECK_EQ(mp_run(2, alltoallv_main, NULL), 0);
}
TEST(alltoallv_3) {
  CHECK_EQ(mp_run(3, alltoallv_main, NULL), 0);
}
TEST(alltoallv_5) {
  CHECK_EQ(mp_run(5, alltoallv_main, NULL), 0);
}
TEST(alltoallv_8) {
  CHECK_EQ(mp_run(8, alltoallv_main, NULL), 0);
}
TEST(threads_alltoallv_4) {
  CHECK_EQ(mp_run_threads(4, alltoallv_main, NULL), 0);
}

/* Send/Recv and the one-shot AllReduce share their FIFOs. Rank 1 fills its FIFO to rank 2 with
 * a Send and goes on to an in-place AllReduce while rank 2, busy with 16 MB of work of its own,
 * has not drained it yet: rank 1 gets rank 0's input before there is room to send to rank 2,
 * and must still send rank 2 its own input, not the sum it folds into the same buffer. */
static int send_then_allreduce_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  size_t big = (size_t)8 << 17; /* the FIFO's default capacity: 8 slots of 128 KB */
  char* msg = calloc(big, 1);
  size_t work_bytes = (size_t)16 << 20;
  char* work = rank == 2 ? malloc(work_bytes) : NULL;
  int bad = 0;
  for (int iter = 0; iter < 20 && !bad; iter++) {
    if (rank == 1) MP_CHECK(ncclSend(msg, big, ncclChar, 2, comm, NULL));
    if (rank == 2) {
      memset(work, iter, work_bytes);
      MP_CHECK(ncclRecv(msg, big, ncclChar, 1, comm, NULL));
    }
    float x[2] = {(float)(rank + 1), (float)(10 * (rank + 1) + iter)};
    MP_CHECK(ncclAllReduce(x, x, 2, ncclFloat, ncclSum, comm, NULL));
    if (x[0] != 6 || x[1] != (float)(60 + 3 * iter)) {
      fprintf(stderr, "rank %d, AllReduce %d: got {%g, %g}, expected {6, %d}\n", rank, iter, x[0],
              x[1], 60 + 3 * iter);
      bad = 1;
    }
  }
  free(msg);
  free(work);
  ncclCommDestroy(comm);
  return bad;
}
TEST(send_then_inplace_allreduce_3) {
  CHECK_EQ(mp_run(3, send_then_allreduce_main, NULL), 0);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* Rank 2 kills itself before the 4th AlltoAll; the others must fail within 10 s. */
static int killed_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  size_t count = 1 << 20;
  float* s = calloc(count * nranks, sizeof(float));
  float* r = calloc(count * nranks, sizeof(float));
  for (int iter = 0; iter < 1000; iter++) {
    if (rank == 2 && iter == 3) raise(SIGKILL);
    double t0 = now();
    ncclResult_t res = ncclAlltoAll(s, r, count, ncclFloat, comm, NULL);
    double t = now() - t0;
    if (res != ncclSuccess) {
      const char* msg = ncclGetLastError(comm);
      fprintf(stderr, "rank %d: error %d after %.2f s: %s\n", rank, (int)res, t, msg);
      int ok = (res == ncclRemoteError || res == ncclSystemError) && t < 10.0 &&
               strstr(msg, "AlltoAll #") != NULL;
      ncclCommAbort(comm);
      free(s), free(r);
      return ok ? 0 : 1;
    }
  }
  fprintf(stderr, "rank %d never saw an error\n", rank);
  return 1;
}
TEST(killed_rank_alltoall) {
  CHECK_EQ(mp_run(4, killed_main, NULL), 1);
}
