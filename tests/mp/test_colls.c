/* SPDX-License-Identifier: BSD-3-Clause */
/* Broadcast, Bcast, Reduce, AllGather, ReduceScatter, AlltoAll, Gather and Scatter on the CPU
 * engine: every dtype (x every op where the collective reduces) x nranks {1,2,3,4,5,8} x counts
 * {0, 1, 7, 1023, 64K+3} x in/out of place x roots (all roots for small counts, first and last
 * for the large one), plus 1M+3 elements for each collective on a few types. Checked exactly:
 * moved data byte for byte, reductions against mp_expected. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "harness.h"

enum { BCAST_OOP, BCAST, REDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL, GATHER, SCATTER, NCOLLS };
static const char* names[NCOLLS] = {"Broadcast",     "Bcast",    "Reduce", "AllGather",
                                    "ReduceScatter", "AlltoAll", "Gather", "Scatter"};
static const size_t counts[] = {0, 1, 7, 1023, (1 << 16) + 3};
#define NCOUNTS (sizeof counts / sizeof counts[0])
#define LARGE   ((size_t)(1 << 20) + 3)

/* Byte j of rank r's logical input: distinct enough that a misplaced block shows. */
static unsigned char pat(int r, size_t j) {
  return (unsigned char)(r * 131 + j * 7 + (j >> 8) * 3 + 1);
}

static void fill(char* buf, int r, size_t first_byte, size_t bytes) {
  for (size_t j = 0; j < bytes; j++) buf[j] = (char)pat(r, first_byte + j);
}

/* Bytes [0, bytes) of buf must be rank r's bytes starting at first_byte. */
static int same(const char* buf, int r, size_t first_byte, size_t bytes, const char* what) {
  for (size_t j = 0; j < bytes; j++)
    if ((unsigned char)buf[j] != pat(r, first_byte + j)) {
      fprintf(stderr, "%s: byte %zu is 0x%02x, expected 0x%02x\n", what, j, (unsigned char)buf[j],
              pat(r, first_byte + j));
      return 1;
    }
  return 0;
}

struct tcase {
  int coll, rank, n, op, inplace, root;
  ncclDataType_t dt;
  size_t count;
  char what[160];
};

static int reduce_check(const struct tcase* c, const char* out, size_t first, size_t count) {
  double expect[231];
  int bad = 0;
  for (size_t i = 0; i < 231; i++) expect[i] = mp_expected(c->dt, c->op, c->n, i, 2);
  for (size_t i = 0; i < count && bad < 3; i++) {
    double got = mp_load(out, i, c->dt), want = expect[(first + i) % 231];
    if (!mp_equal(c->dt, c->op, got, want)) {
      fprintf(stderr, "%s: element %zu is %g, expected %g\n", c->what, i, got, want);
      bad++;
    }
  }
  return bad;
}

static int run_reduce(ncclComm_t comm, const struct tcase* c, char* send, char* recv) {
  size_t es = mp_size(c->dt), nin = c->coll == REDUCE ? c->count : c->count * c->n;
  for (size_t i = 0; i < nin; i++) mp_store(send, i, c->dt, mp_value(c->dt, c->op, c->rank, i));
  ncclRedOp_t red = (ncclRedOp_t)c->op;
  unsigned char sbuf[8];
  mp_store(sbuf, 0, c->dt, 2);
  if (c->op == 5)
    MP_CHECK(ncclRedOpCreatePreMulSum(&red, sbuf, c->dt, ncclScalarHostImmediate, comm));
  char* out = c->inplace ? (c->coll == REDUCE ? send : send + c->rank * c->count * es) : recv;
  if (c->coll == REDUCE)
    MP_CHECK(ncclReduce(send, out, c->count, c->dt, red, c->root, comm, NULL));
  else
    MP_CHECK(ncclReduceScatter(send, out, c->count, c->dt, red, comm, NULL));
  if (c->op == 5) MP_CHECK(ncclRedOpDestroy(red, comm));
  if (c->coll == REDUCE) return c->rank == c->root ? reduce_check(c, out, 0, c->count) : 0;
  return reduce_check(c, out, c->rank * c->count, c->count);
}

static int run_move(ncclComm_t comm, const struct tcase* c, char* send, char* recv) {
  size_t b = c->count * mp_size(c->dt), cnt = c->count;
  int n = c->n, r = c->rank, root = c->root, bad = 0;
  ncclDataType_t dt = c->dt;
  switch (c->coll) {
  case BCAST_OOP:
  case BCAST: {
    char* in = c->inplace ? recv : send;
    if (r == root) fill(in, root, 0, b);
    if (c->coll == BCAST)
      MP_CHECK(ncclBcast(in, cnt, dt, root, comm, NULL));
    else
      MP_CHECK(ncclBroadcast(in, recv, cnt, dt, root, comm, NULL));
    return same(recv, root, 0, b, c->what);
  }
  case ALLGATHER: {
    char* in = c->inplace ? recv + r * b : send;
    fill(in, r, 0, b);
    MP_CHECK(ncclAllGather(in, recv, cnt, dt, comm, NULL));
    for (int p = 0; p < n; p++) bad += same(recv + p * b, p, 0, b, c->what);
    return bad;
  }
  case ALLTOALL:
    fill(send, r, 0, n * b);
    MP_CHECK(ncclAlltoAll(send, recv, cnt, dt, comm, NULL));
    for (int p = 0; p < n; p++) bad += same(recv + p * b, p, r * b, b, c->what);
    return bad;
  case GATHER: {
    char* in = c->inplace && r == root ? recv + r * b : send;
    fill(in, r, 0, b);
    MP_CHECK(ncclGather(in, recv, cnt, dt, root, comm, NULL));
    for (int p = 0; r == root && p < n; p++) bad += same(recv + p * b, p, 0, b, c->what);
    return bad;
  }
  case SCATTER: {
    char* out = c->inplace && r == root ? send + r * b : recv;
    if (r == root) fill(send, root, 0, n * b);
    MP_CHECK(ncclScatter(send, out, cnt, dt, root, comm, NULL));
    return same(out, root, r * b, b, c->what);
  }
  default:
    return 1;
  }
}

static int run_case(ncclComm_t comm, struct tcase* c) {
  size_t es = mp_size(c->dt), big = (c->count * c->n + 1) * es;
  char* send = malloc(big);
  char* recv = malloc(big);
  memset(recv, 0x5a, big);
  snprintf(c->what, sizeof c->what, "%s rank %d/%d %s %s count %zu %s root %d", names[c->coll],
           c->rank, c->n, mp_type_name(c->dt), c->op >= 0 ? mp_op_names[c->op] : "-", c->count,
           c->inplace ? "in-place" : "out-of-place", c->root);
  int bad = (c->coll == REDUCE || c->coll == REDUCESCATTER) ? run_reduce(comm, c, send, recv)
                                                            : run_move(comm, c, send, recv);
  free(send);
  free(recv);
  return bad != 0;
}

static int rank_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  int coll = *(int*)arg, bad = 0;
  int reduces = coll == REDUCE || coll == REDUCESCATTER;
  int rooted =
      coll == BCAST_OOP || coll == BCAST || coll == REDUCE || coll == GATHER || coll == SCATTER;
  ncclComm_t comm;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  for (int dt = 0; dt < ncclNumTypes && bad < 5; dt++)
    for (int op = reduces ? 0 : -1; op < (reduces ? 6 : 0); op++)
      for (size_t k = 0; k <= NCOUNTS; k++) {
        /* k == NCOUNTS: the 1M+3 case, for a few types only */
        int large = k == NCOUNTS;
        if (large && !(dt == ncclFloat32 || (dt == ncclInt8 && !reduces) || dt == ncclBfloat16))
          continue;
        if (large && reduces && op != 0 && op != 4) continue;
        size_t count = large ? LARGE : counts[k];
        for (int inplace = 0; inplace < 2; inplace++) {
          if ((coll == BCAST && !inplace) || (coll == ALLTOALL && inplace)) continue;
          for (int root = 0; root < (rooted ? nranks : 1); root++) {
            if (count > 1023 && root != 0 && root != nranks - 1) continue;
            struct tcase c = {coll, rank, nranks, op, inplace, root, (ncclDataType_t)dt, count, ""};
            bad += run_case(comm, &c);
          }
        }
      }
  MP_CHECK(ncclCommDestroy(comm));
  return bad != 0;
}

static int colls[NCOLLS] = {0, 1, 2, 3, 4, 5, 6, 7};
#define COLL_TESTS(name, id)                                                                       \
  TEST(name##_1) {                                                                                 \
    CHECK_EQ(mp_run(1, rank_main, &colls[id]), 0);                                                 \
  }                                                                                                \
  TEST(name##_2) {                                                                                 \
    CHECK_EQ(mp_run(2, rank_main, &colls[id]), 0);                                                 \
  }                                                                                                \
  TEST(name##_3) {                                                                                 \
    CHECK_EQ(mp_run(3, rank_main, &colls[id]), 0);                                                 \
  }                                                                                                \
  TEST(name##_4) {                                                                                 \
    CHECK_EQ(mp_run(4, rank_main, &colls[id]), 0);                                                 \
  }                                                                                                \
  TEST(name##_5) {                                                                                 \
    CHECK_EQ(mp_run(5, rank_main, &colls[id]), 0);                                                 \
  }                                                                                                \
  TEST(name##_8) {                                                                                 \
    CHECK_EQ(mp_run(8, rank_main, &colls[id]), 0);                                                 \
  }
COLL_TESTS(broadcast, BCAST_OOP)
COLL_TESTS(bcast, BCAST)
COLL_TESTS(reduce, REDUCE)
COLL_TESTS(allgather, ALLGATHER)
COLL_TESTS(reducescatter, REDUCESCATTER)
COLL_TESTS(alltoall, ALLTOALL)
COLL_TESTS(gather, GATHER)
COLL_TESTS(scatter, SCATTER)

/* Ranks as threads of one process: the same schedules without shared-memory mappings. */
TEST(threads_allgather_reducescatter_4) {
  CHECK_EQ(mp_run_threads(4, rank_main, &colls[ALLGATHER]), 0);
  CHECK_EQ(mp_run_threads(4, rank_main, &colls[SCATTER]), 0);
}
