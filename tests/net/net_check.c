/* SPDX-License-Identifier: BSD-3-Clause */
/* One rank of a multi-host check, started by monelrun (MONEL_RANK, MONEL_NRANKS, NCCL_COMM_ID):
 * every collective and point-to-point pattern on a few types and counts (0, 1, 1023, 1M+3),
 * AllReduce, AllGather and ReduceScatter also in place, Broadcast and Reduce also from every
 * root, checked exactly on every rank.
 *
 *   net_check            run the checks; exit 0 when every value is right
 *   net_check quick      the same with a large count of 64K+3 instead of 1M+3 (many ranks on
 *                        few cores)
 *   net_check kill R     AllReduce in a loop; rank R kills itself in the 5th; every other rank
 *                        must get an error naming a peer rank within 10 s (exit 0 when it does)
 *   net_check kill -1 S  the same loop with no victim: something else (a link taken down) must
 *                        make every rank fail within S s of its last successful AllReduce
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common.h"
#include "monel.h"

static size_t counts[] = {0, 1, 1023, (1 << 20) + 3}; /* the last one (1 << 16) + 3 when quick */
#define NCOUNTS 4
#define PERIOD  231 /* mp_value repeats every 231 elements */

struct ctx {
  ncclComm_t comm;
  int rank, n;
  int bad;
  char what[128];
};

/* Byte j of the data that rank s contributes with stream `k`. */
static unsigned char pat(int s, int k, size_t j) {
  return (unsigned char)(s * 131 + k * 37 + j * 7 + (j >> 8) * 3 + 1);
}

static void fill(char* buf, int s, int k, size_t first, size_t bytes) {
  for (size_t j = 0; j < bytes; j++) buf[j] = (char)pat(s, k, first + j);
}

static void same(struct ctx* x, const char* buf, int s, int k, size_t first, size_t bytes) {
  for (size_t j = 0; j < bytes; j++)
    if ((unsigned char)buf[j] != pat(s, k, first + j)) {
      fprintf(stderr,
              "rank %d: %s: byte %zu of the block from rank %d is 0x%02x, expected 0x%02x\n",
              x->rank, x->what, j, s, (unsigned char)buf[j], pat(s, k, first + j));
      x->bad++;
      return;
    }
}

static void fill_values(char* buf, ncclDataType_t dt, int op, int r, size_t first, size_t count) {
  double v[PERIOD];
  for (size_t i = 0; i < PERIOD; i++) v[i] = mp_value(dt, op, r, i);
  for (size_t i = 0; i < count; i++) mp_store(buf, i, dt, v[(first + i) % PERIOD]);
}

static void check_values(struct ctx* x, const char* buf, ncclDataType_t dt, int op, size_t first,
                         size_t count) {
  double want[PERIOD];
  for (size_t i = 0; i < PERIOD; i++) want[i] = mp_expected(dt, op, x->n, i, 1);
  for (size_t i = 0; i < count; i++) {
    double got = mp_load(buf, i, dt), w = want[(first + i) % PERIOD];
    if (!mp_equal(dt, op, got, w)) {
      fprintf(stderr, "rank %d: %s: element %zu is %g, expected %g\n", x->rank, x->what, i, got, w);
      x->bad++;
      return;
    }
  }
}

static char* alloc(size_t bytes) {
  char* p = malloc(bytes + 1);
  if (p == NULL) {
    fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
    exit(2);
  }
  memset(p, 0x5a, bytes + 1);
  return p;
}

#define RUN(x, call)                                                                               \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != ncclSuccess) {                                                                       \
      fprintf(stderr, "rank %d: %s: %s failed: %s: %s\n", (x)->rank, (x)->what, #call,             \
              ncclGetErrorString(r_), ncclGetLastError((x)->comm));                                \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static void name(struct ctx* x, const char* coll, ncclDataType_t dt, int op, size_t count,
                 int root) {
  snprintf(x->what, sizeof x->what, "%s %s%s%s count %zu root %d", coll, mp_type_name(dt),
           op >= 0 ? " " : "", op >= 0 ? mp_op_names[op] : "", count, root);
}

static void allreduce(struct ctx* x, ncclDataType_t dt, int op, size_t count) {
  size_t es = mp_size(dt);
  name(x, "AllReduce", dt, op, count, -1);
  char *s = alloc(count * es), *r = alloc(count * es);
  fill_values(s, dt, op, x->rank, 0, count);
  RUN(x, ncclAllReduce(s, r, count, dt, (ncclRedOp_t)op, x->comm, NULL));
  check_values(x, r, dt, op, 0, count);
  /* in place */
  RUN(x, ncclAllReduce(s, s, count, dt, (ncclRedOp_t)op, x->comm, NULL));
  check_values(x, s, dt, op, 0, count);
  free(s), free(r);
}

static void reduce(struct ctx* x, ncclDataType_t dt, int op, size_t count, int root) {
  size_t es = mp_size(dt);
  name(x, "Reduce", dt, op, count, root);
  char *s = alloc(count * es), *r = alloc(count * es);
  fill_values(s, dt, op, x->rank, 0, count);
  RUN(x, ncclReduce(s, r, count, dt, (ncclRedOp_t)op, root, x->comm, NULL));
  if (x->rank == root) check_values(x, r, dt, op, 0, count);
  free(s), free(r);
}

static void reduce_scatter(struct ctx* x, ncclDataType_t dt, int op, size_t count) {
  size_t es = mp_size(dt), n = (size_t)x->n;
  name(x, "ReduceScatter", dt, op, count, -1);
  char *s = alloc(n * count * es), *r = alloc(count * es);
  fill_values(s, dt, op, x->rank, 0, n * count);
  RUN(x, ncclReduceScatter(s, r, count, dt, (ncclRedOp_t)op, x->comm, NULL));
  check_values(x, r, dt, op, (size_t)x->rank * count, count);
  /* in place: my part of the input is the output */
  char* mine = s + (size_t)x->rank * count * es;
  RUN(x, ncclReduceScatter(s, mine, count, dt, (ncclRedOp_t)op, x->comm, NULL));
  check_values(x, mine, dt, op, (size_t)x->rank * count, count);
  free(s), free(r);
}

static void broadcast(struct ctx* x, ncclDataType_t dt, size_t count, int root) {
  size_t bytes = count * mp_size(dt);
  name(x, "Broadcast", dt, -1, count, root);
  char *s = alloc(bytes), *r = alloc(bytes);
  fill(s, x->rank, 1, 0, bytes);
  RUN(x, ncclBroadcast(s, r, count, dt, root, x->comm, NULL));
  same(x, r, root, 1, 0, bytes);
  free(s), free(r);
}

static void all_gather(struct ctx* x, ncclDataType_t dt, size_t count) {
  size_t bytes = count * mp_size(dt);
  name(x, "AllGather", dt, -1, count, -1);
  char *s = alloc(bytes), *r = alloc(bytes * (size_t)x->n);
  fill(s, x->rank, 2, 0, bytes);
  RUN(x, ncclAllGather(s, r, count, dt, x->comm, NULL));
  for (int p = 0; p < x->n; p++) same(x, r + (size_t)p * bytes, p, 2, 0, bytes);
  /* in place: my input is my part of the output */
  memset(r, 0x5a, bytes * (size_t)x->n);
  char* mine = r + (size_t)x->rank * bytes;
  fill(mine, x->rank, 2, 0, bytes);
  RUN(x, ncclAllGather(mine, r, count, dt, x->comm, NULL));
  for (int p = 0; p < x->n; p++) same(x, r + (size_t)p * bytes, p, 2, 0, bytes);
  free(s), free(r);
}

static void all_to_all(struct ctx* x, ncclDataType_t dt, size_t count) {
  size_t bytes = count * mp_size(dt), n = (size_t)x->n;
  name(x, "AlltoAll", dt, -1, count, -1);
  char *s = alloc(bytes * n), *r = alloc(bytes * n);
  fill(s, x->rank, 3, 0, bytes * n); /* block d goes to rank d */
  RUN(x, ncclAlltoAll(s, r, count, dt, x->comm, NULL));
  for (int p = 0; p < x->n; p++)
    same(x, r + (size_t)p * bytes, p, 3, (size_t)x->rank * bytes, bytes);
  free(s), free(r);
}

static void gather(struct ctx* x, ncclDataType_t dt, size_t count, int root) {
  size_t bytes = count * mp_size(dt);
  name(x, "Gather", dt, -1, count, root);
  char *s = alloc(bytes), *r = alloc(bytes * (size_t)x->n);
  fill(s, x->rank, 4, 0, bytes);
  RUN(x, ncclGather(s, r, count, dt, root, x->comm, NULL));
  if (x->rank == root)
    for (int p = 0; p < x->n; p++) same(x, r + (size_t)p * bytes, p, 4, 0, bytes);
  free(s), free(r);
}

static void scatter(struct ctx* x, ncclDataType_t dt, size_t count, int root) {
  size_t bytes = count * mp_size(dt);
  name(x, "Scatter", dt, -1, count, root);
  char *s = alloc(bytes * (size_t)x->n), *r = alloc(bytes);
  fill(s, x->rank, 5, 0, bytes * (size_t)x->n);
  RUN(x, ncclScatter(s, r, count, dt, root, x->comm, NULL));
  same(x, r, root, 5, (size_t)x->rank * bytes, bytes);
  free(s), free(r);
}

/* Each rank sends to the next and the previous rank in one group. */
static void send_recv_ring(struct ctx* x, ncclDataType_t dt, size_t count) {
  size_t bytes = count * mp_size(dt);
  int next = (x->rank + 1) % x->n, prev = (x->rank + x->n - 1) % x->n;
  name(x, "Send/Recv ring", dt, -1, count, -1);
  char *s = alloc(bytes), *r1 = alloc(bytes), *r2 = alloc(bytes);
  fill(s, x->rank, 6, 0, bytes);
  RUN(x, ncclGroupStart());
  RUN(x, ncclSend(s, count, dt, next, x->comm, NULL));
  RUN(x, ncclSend(s, count, dt, prev, x->comm, NULL));
  RUN(x, ncclRecv(r1, count, dt, prev, x->comm, NULL));
  RUN(x, ncclRecv(r2, count, dt, next, x->comm, NULL));
  RUN(x, ncclGroupEnd());
  same(x, r1, prev, 6, 0, bytes);
  same(x, r2, next, 6, 0, bytes);
  free(s), free(r1), free(r2);
}

/* Elements rank s sends to rank d: 0 for some pairs, up to 3 * base for others. */
static size_t vcount(int s, int d, size_t base) {
  return (size_t)((s * 3 + d * 5) % 4) * base + (base > 1 ? (size_t)(s + d) : 0);
}

/* The count and offset arrays are nranks x nranks and the same on every rank: row i is rank
 * i's. Offsets leave gaps so that a block written too far shows. */
static void all_to_allv(struct ctx* x, ncclDataType_t dt, size_t base) {
  size_t es = mp_size(dt), n = (size_t)x->n, nn = n * n;
  name(x, "AlltoAllv", dt, -1, base, -1);
  size_t *sc = calloc(nn, sizeof *sc), *sd = calloc(nn, sizeof *sd);
  size_t *rc = calloc(nn, sizeof *rc), *rd = calloc(nn, sizeof *rd);
  if (!sc || !sd || !rc || !rd) exit(2);
  for (int i = 0; i < x->n; i++) {
    size_t so = 0, ro = 0;
    for (int p = 0; p < x->n; p++) {
      size_t k = (size_t)i * n + (size_t)p;
      sc[k] = vcount(i, p, base), sd[k] = so, so += sc[k] + 1;
      rc[k] = vcount(p, i, base), rd[k] = ro, ro += rc[k] + 2;
    }
  }
  const size_t *msc = sc + (size_t)x->rank * n, *msd = sd + (size_t)x->rank * n;
  const size_t *mrc = rc + (size_t)x->rank * n, *mrd = rd + (size_t)x->rank * n;
  char *s = alloc((msd[n - 1] + msc[n - 1] + 1) * es),
       *r = alloc((mrd[n - 1] + mrc[n - 1] + 2) * es);
  for (int p = 0; p < x->n; p++) fill(s + msd[p] * es, x->rank, 7 + p, 0, msc[p] * es);
  RUN(x, ncclAlltoAllv(s, sc, sd, r, rc, rd, NULL, 0, dt, x->comm, NULL));
  for (int p = 0; p < x->n; p++) same(x, r + mrd[p] * es, p, 7 + x->rank, 0, mrc[p] * es);
  free(s), free(r), free(sc), free(sd), free(rc), free(rd);
}

static void run_checks(struct ctx* x) {
  const ncclDataType_t red_types[] = {ncclInt32, ncclFloat32, ncclFloat64, ncclBfloat16};
  const int red_ops[] = {ncclSum, ncclSum, ncclMax, ncclSum};
  const ncclDataType_t move_types[] = {ncclInt8, ncclInt32, ncclFloat64};
  for (int c = 0; c < NCOUNTS; c++) {
    size_t count = counts[c];
    int large = c == NCOUNTS - 1;
    int root = (int)(c % (size_t)x->n), last = x->n - 1;
    for (int t = 0; t < 4 && (!large || t < 2); t++) {
      allreduce(x, red_types[t], red_ops[t], count);
      reduce(x, red_types[t], red_ops[t], count, large ? last : root);
      reduce_scatter(x, red_types[t], red_ops[t], large ? count / (size_t)x->n : count);
    }
    for (int t = 0; t < 3 && (!large || t < 1); t++) {
      ncclDataType_t dt = large ? ncclFloat32 : move_types[t];
      size_t per_peer = large ? count / (size_t)x->n : count;
      broadcast(x, dt, count, large ? last : root);
      all_gather(x, dt, per_peer);
      all_to_all(x, dt, per_peer);
      gather(x, dt, per_peer, large ? last : root);
      scatter(x, dt, per_peer, large ? last : root);
      send_recv_ring(x, dt, count);
      all_to_allv(x, dt, large ? per_peer / 2 : count);
    }
    if (x->rank == 0) printf("count %zu: checked\n", count);
    fflush(stdout);
  }
  /* every root: the chains start and end where the root sits in the ring */
  for (int root = 0; root < x->n; root++) {
    broadcast(x, ncclInt32, 1023, root);
    reduce(x, ncclFloat32, ncclSum, 1023, root);
  }
  if (x->rank == 0) printf("every root: checked\n");
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Rank `victim` kills itself in the 5th AllReduce; the others must fail within limit_s. */
static int killed_rank(struct ctx* x, int victim, double limit_s) {
  size_t count = 1 << 20;
  float* buf = calloc(count, sizeof *buf);
  /* monelrun stops the ranks of the victim's host when it dies: they must see the error first
   * (it sends SIGKILL after a grace period). */
  signal(SIGTERM, SIG_IGN);
  double last = now();
  for (int iter = 0; iter < 100000; iter++) {
    if (x->rank == victim && iter == 5) raise(SIGKILL);
    ncclResult_t res = ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, x->comm, NULL);
    double t = now();
    if (res != ncclSuccess) {
      const char* msg = ncclGetLastError(x->comm);
      int ok = (res == ncclRemoteError || res == ncclSystemError) && t - last < limit_s &&
               strstr(msg, "peer rank") != NULL;
      printf("rank %d: %s after %.2f s: %s\n", x->rank, ok ? "error as expected" : "WRONG error",
             t - last, msg);
      ncclCommAbort(x->comm);
      free(buf);
      return ok ? 0 : 1;
    }
    if (iter == 0) printf("rank %d: first AllReduce done\n", x->rank), fflush(stdout);
    last = t;
  }
  printf("rank %d never saw an error\n", x->rank);
  return 1;
}

int main(int argc, char** argv) {
  const char* r = getenv("MONEL_RANK");
  const char* n = getenv("MONEL_NRANKS");
  if (r == NULL || n == NULL) {
    fprintf(stderr, "run me under monelrun (MONEL_RANK and MONEL_NRANKS are not set)\n");
    return 2;
  }
  struct ctx x = {.rank = atoi(r), .n = atoi(n)};
  ncclUniqueId id;
  RUN(&x, ncclGetUniqueId(&id)); /* with NCCL_COMM_ID set, every rank gets the same id */
  RUN(&x, ncclCommInitRank(&x.comm, x.n, id, x.rank));
  if (argc >= 3 && strcmp(argv[1], "kill") == 0)
    return killed_rank(&x, atoi(argv[2]), argc > 3 ? atof(argv[3]) : 10.0);
  if (argc >= 2 && strcmp(argv[1], "quick") == 0) counts[NCOUNTS - 1] = (1 << 16) + 3;
  double t0 = now();
  run_checks(&x);
  RUN(&x, ncclCommDestroy(x.comm));
  if (x.bad) {
    fprintf(stderr, "rank %d: %d wrong results\n", x.rank, x.bad);
    return 1;
  }
  printf("rank %d: all checks passed in %.1f s\n", x.rank, now() - t0);
  return 0;
}
