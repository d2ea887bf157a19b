/* SPDX-License-Identifier: BSD-3-Clause */
/* The functions NCCL 2.29-2.32 added, on the CPU engine, ranks as threads and as processes:
 * the nccl*Config collectives, ncclCommGrow, ncclCommSuspend/Resume/MemStats, one-sided
 * ncclPutSignal/ncclSignal/ncclWaitSignal, the window helpers, the parameter API,
 * ncclCommQueryProperties and ncclSetEncryption; each with bad arguments too. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "common.h"
#include "harness.h"

/* A call that must fail with `want`; a rank function returns 1 otherwise. */
#define EXPECT_RES(call, want)                                                                     \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != (want)) {                                                                            \
      fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", __FILE__, __LINE__, #call, (int)r_,  \
              (int)(want));                                                                        \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)
#define EXPECT(cond)                                                                               \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                     \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

enum { COUNT = 1031 };

/* AllReduce of (rank+1)*(i+1) on comm, checked exactly. */
static int check_allreduce(ncclComm_t comm) {
  int n = 0, rank = 0;
  MP_CHECK(ncclCommCount(comm, &n));
  MP_CHECK(ncclCommUserRank(comm, &rank));
  int* buf = malloc(COUNT * sizeof *buf);
  EXPECT(buf != NULL);
  for (int i = 0; i < COUNT; i++) buf[i] = (rank + 1) * (i + 1);
  ncclResult_t res = ncclAllReduce(buf, buf, COUNT, ncclInt32, ncclSum, comm, NULL);
  int bad = res != ncclSuccess;
  for (int i = 0; i < COUNT && !bad; i++) bad = buf[i] != n * (n + 1) / 2 * (i + 1);
  if (bad) fprintf(stderr, "rank %d/%d: AllReduce wrong (result %d)\n", rank, n, (int)res);
  free(buf);
  return bad;
}

/* ---- nccl*Config collectives ---- */

static int config_colls(ncclComm_t comm, int rank, int n) {
  enum { C = 257 };
  int *s = calloc((size_t)C * n, sizeof(int)), *r = calloc((size_t)C * n, sizeof(int));
  EXPECT(s && r);
  ncclCollConfig_t cfg = NCCL_COLLCONFIG_INITIALIZER;
  const char* sel[] = {NULL, "ring", "allreduce:tree", "^tree", "allreduce:tree;broadcast:ring"};
  for (int k = 0; k < 5; k++) {
    cfg.algSelection = sel[k];
    cfg.minCTAs = 1 + k % 2;
    cfg.maxCTAs = 2 + k;
    cfg.CTAPolicy = k % 2 ? NCCL_CTA_POLICY_EFFICIENCY : NCCL_CONFIG_UNDEF_INT;
    for (int i = 0; i < C; i++) s[i] = rank * 10 + i;
    MP_CHECK(ncclAllReduceConfig(s, r, C, ncclInt32, ncclSum, comm, NULL, &cfg));
    for (int i = 0; i < C; i++) EXPECT(r[i] == 10 * n * (n - 1) / 2 + n * i);
    int root = k % n;
    MP_CHECK(ncclBroadcastConfig(s, r, C, ncclInt32, root, comm, NULL, &cfg));
    for (int i = 0; i < C; i++) EXPECT(r[i] == root * 10 + i);
    memset(r, 0, C * sizeof(int));
    MP_CHECK(ncclReduceConfig(s, r, C, ncclInt32, ncclMax, root, comm, NULL, &cfg));
    for (int i = 0; i < C && rank == root; i++) EXPECT(r[i] == (n - 1) * 10 + i);
    MP_CHECK(ncclAllGatherConfig(s, r, C, ncclInt32, comm, NULL, &cfg));
    for (int p = 0; p < n; p++)
      for (int i = 0; i < C; i++) EXPECT(r[p * C + i] == p * 10 + i);
    for (int i = 0; i < C * n; i++) s[i] = rank + i;
    MP_CHECK(ncclReduceScatterConfig(s, r, C, ncclInt32, ncclSum, comm, NULL, &cfg));
    for (int i = 0; i < C; i++) EXPECT(r[i] == n * (n - 1) / 2 + n * (rank * C + i));
    MP_CHECK(ncclAlltoAllConfig(s, r, C, ncclInt32, comm, NULL, &cfg));
    for (int p = 0; p < n; p++)
      for (int i = 0; i < C; i++) EXPECT(r[p * C + i] == p + rank * C + i);
    MP_CHECK(ncclGatherConfig(s, r, C, ncclInt32, root, comm, NULL, &cfg));
    for (int p = 0; p < n && rank == root; p++)
      for (int i = 0; i < C; i++) EXPECT(r[p * C + i] == p + i);
    MP_CHECK(ncclScatterConfig(s, r, C, ncclInt32, root, comm, NULL, &cfg));
    for (int i = 0; i < C; i++) EXPECT(r[i] == root + rank * C + i);
  }
  /* NCCL_CTA_POLICY_ZERO, alone and with EFFICIENCY: the CPU engine uses no thread blocks. */
  int pol[] = {NCCL_CTA_POLICY_ZERO, NCCL_CTA_POLICY_ZERO | NCCL_CTA_POLICY_EFFICIENCY,
               NCCL_CTA_POLICY_DEFAULT};
  for (int k = 0; k < 3; k++) {
    ncclCollConfig_t z = NCCL_COLLCONFIG_INITIALIZER;
    z.CTAPolicy = pol[k];
    for (int i = 0; i < C; i++) s[i] = rank * 10 + i;
    MP_CHECK(ncclAllReduceConfig(s, r, C, ncclInt32, ncclSum, comm, NULL, &z));
    for (int i = 0; i < C; i++) EXPECT(r[i] == 10 * n * (n - 1) / 2 + n * i);
    MP_CHECK(ncclAllGatherConfig(s, r, C, ncclInt32, comm, NULL, &z));
    for (int p = 0; p < n; p++)
      for (int i = 0; i < C; i++) EXPECT(r[p * C + i] == p * 10 + i);
  }
  for (int i = 0; i < C * n; i++) s[i] = rank + i;
  /* NULL config: the plain call. */
  MP_CHECK(ncclAllReduceConfig(s, r, C, ncclInt32, ncclSum, comm, NULL, NULL));
  /* Grouped, two comms' worth of calls in one group. */
  MP_CHECK(ncclGroupStart());
  MP_CHECK(ncclAllReduceConfig(s, r, C, ncclInt32, ncclSum, comm, NULL, &cfg));
  MP_CHECK(ncclAllGatherConfig(s, r, C, ncclInt32, comm, NULL, &cfg));
  MP_CHECK(ncclGroupEnd());
  for (int p = 0; p < n; p++)
    for (int i = 0; i < C; i++) EXPECT(r[p * C + i] == p + i);
  free(s);
  free(r);
  return 0;
}

/* Every rank makes the same bad calls; none is queued. */
static int config_bad(ncclComm_t comm) {
  int s[8] = {0}, r[8];
  ncclCollConfig_t cfg = NCCL_COLLCONFIG_INITIALIZER;
  ncclCollConfig_t bad = cfg;
  bad.magic = 0;
  EXPECT_RES(ncclAllReduceConfig(s, r, 8, ncclInt32, ncclSum, comm, NULL, &bad),
             ncclInvalidArgument);
  bad = cfg, bad.maxCTAs = 1000;
  EXPECT_RES(ncclAllReduceConfig(s, r, 8, ncclInt32, ncclSum, comm, NULL, &bad),
             ncclInvalidArgument);
  bad = cfg, bad.minCTAs = 4, bad.maxCTAs = 2;
  EXPECT_RES(ncclBroadcastConfig(s, r, 8, ncclInt32, 0, comm, NULL, &bad), ncclInvalidArgument);
  bad = cfg, bad.minCTAs = 0;
  EXPECT_RES(ncclAllGatherConfig(s, r, 1, ncclInt32, comm, NULL, &bad), ncclInvalidArgument);
  bad = cfg, bad.CTAPolicy = 8;
  EXPECT_RES(ncclReduceConfig(s, r, 8, ncclInt32, ncclSum, 0, comm, NULL, &bad),
             ncclInvalidArgument);
  bad = cfg, bad.algSelection = "nosuchalgo";
  EXPECT_RES(ncclAllReduceConfig(s, r, 8, ncclInt32, ncclSum, comm, NULL, &bad),
             ncclInvalidArgument);
  /* NVLS is an algorithm NCCL has and Monel does not: forced, that is unsatisfiable. */
  bad = cfg, bad.algSelection = "nvls";
  EXPECT_RES(ncclAllReduceConfig(s, r, 8, ncclInt32, ncclSum, comm, NULL, &bad),
             ncclInvalidArgument);
  /* Monel's AllGather runs on a ring only: a forced tree cannot be had. */
  bad = cfg, bad.algSelection = "tree";
  EXPECT_RES(ncclAllGatherConfig(s, r, 1, ncclInt32, comm, NULL, &bad), ncclInvalidArgument);
  ncclConfigExt_t e2 = {NULL, {7, 1}, {0}}, e1 = {&e2, {7, 1}, {0}};
  bad = cfg, bad.ext = &e1;
  EXPECT_RES(ncclAllReduceConfig(s, r, 8, ncclInt32, ncclSum, comm, NULL, &bad),
             ncclInvalidArgument);
  bad = cfg, bad.launchCompletionEvent = (cudaEvent_t)(uintptr_t)0x1000;
  EXPECT_RES(ncclAllReduceConfig(s, r, 8, ncclInt32, ncclSum, comm, NULL, &bad), ncclInvalidUsage);
  EXPECT_RES(ncclAllReduceConfig(s, r, 8, (ncclDataType_t)99, ncclSum, comm, NULL, &cfg),
             ncclInvalidArgument);
  EXPECT_RES(ncclBroadcastConfig(s, r, 8, ncclInt32, 99, comm, NULL, &cfg), ncclInvalidArgument);
  /* Not forced: the library picks, and the call works. */
  bad = cfg, bad.algSelection = "nvls", bad.forceAlgSelection = 0;
  for (int i = 0; i < 8; i++) s[i] = i;
  MP_CHECK(ncclAllReduceConfig(s, r, 8, ncclInt32, ncclMax, comm, NULL, &bad));
  for (int i = 0; i < 8; i++) EXPECT(r[i] == i);
  /* Distinct ext keys are accepted (and ignored: Monel defines none). */
  ncclConfigExt_t x2 = {NULL, {7, 2}, {0}}, x1 = {&x2, {7, 1}, {0}};
  bad = cfg, bad.ext = &x1;
  MP_CHECK(ncclAllReduceConfig(s, r, 8, ncclInt32, ncclMax, comm, NULL, &bad));
  /* An older, smaller struct: the fields it lacks take their defaults. */
  bad = cfg, bad.size = offsetof(ncclCollConfig_t, algSelection), bad.algSelection = "nvls";
  MP_CHECK(ncclAllReduceConfig(s, r, 8, ncclInt32, ncclMax, comm, NULL, &bad));
  return 0;
}

static int config_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  (void)arg;
  ncclComm_t comm = NULL;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  int bad = config_colls(comm, rank, nranks) || config_bad(comm) || check_allreduce(comm);
  MP_CHECK(ncclCommDestroy(comm));
  return bad;
}

TEST(config_collectives_threads) {
  CHECK_EQ(mp_run_threads(3, config_main, NULL), 0);
}
TEST(config_collectives_processes) {
  CHECK_EQ(mp_run(2, config_main, NULL), 0);
}

/* ---- grow ---- */

/* Shared by the ranks (threads, or processes forked after it was mapped): the grow token. */
struct grow_box {
  _Atomic int ready;
  ncclUniqueId id;
};

static int wait_ready(struct grow_box* box) {
  struct timespec t0, t, nap = {0, 1000000};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (!atomic_load(&box->ready)) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec - t0.tv_sec > 60) return 1;
    nanosleep(&nap, NULL);
  }
  return 0;
}

static int grow_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  struct grow_box* box = arg;
  int old = nranks - 1; /* ranks 0..old-1 make the first comm, the last rank joins */
  ncclComm_t comm = NULL, grown = NULL;
  ncclUniqueId tok;
  if (rank == old) {
    EXPECT(wait_ready(box) == 0);
    tok = box->id;
    EXPECT_RES(ncclCommGrow(NULL, nranks, NULL, rank, &grown, NULL), ncclInvalidArgument);
    EXPECT_RES(ncclCommGrow(NULL, nranks, &tok, nranks, &grown, NULL), ncclInvalidArgument);
    MP_CHECK(ncclCommGrow(NULL, nranks, &tok, rank, &grown, NULL));
  } else {
    MP_CHECK(ncclCommInitRank(&comm, old, id, rank));
    EXPECT_RES(ncclCommGrow(comm, old, NULL, -1, &grown, NULL), ncclInvalidArgument);
    EXPECT_RES(ncclCommGrow(comm, nranks, NULL, rank, &grown, NULL), ncclInvalidArgument);
    EXPECT_RES(ncclCommGetUniqueId(comm, NULL), ncclInvalidArgument);
    if (rank == 0) {
      MP_CHECK(ncclCommGetUniqueId(comm, &tok));
      EXPECT_RES(ncclCommGetUniqueId(comm, &tok), ncclInvalidUsage); /* one at a time */
      box->id = tok;
      atomic_store(&box->ready, 1);
    }
    /* A token this comm did not make: every rank of the comm is told. */
    ncclUniqueId stranger;
    MP_CHECK(ncclGetUniqueId(&stranger));
    EXPECT_RES(ncclCommGrow(comm, nranks, rank == 0 ? &stranger : NULL, -1, &grown, NULL),
               ncclInvalidUsage);
    /* Two roots. */
    EXPECT_RES(ncclCommGrow(comm, nranks, &stranger, -1, &grown, NULL), ncclInvalidUsage);
    MP_CHECK(ncclCommGrow(comm, nranks, rank == 0 ? &tok : NULL, -1, &grown, NULL));
    if (check_allreduce(comm)) return 1; /* the old comm still works */
  }
  int n = 0, me = -1;
  MP_CHECK(ncclCommCount(grown, &n));
  MP_CHECK(ncclCommUserRank(grown, &me));
  EXPECT(n == nranks && me == rank);
  if (check_allreduce(grown)) return 1;
  if (rank == 0) {
    /* The token was used: a new one can be made, the old one no longer grows. */
    ncclUniqueId again;
    MP_CHECK(ncclCommGetUniqueId(comm, &again));
    EXPECT(memcmp(&again, &tok, sizeof tok) != 0);
  }
  MP_CHECK(ncclCommDestroy(grown));
  if (comm) MP_CHECK(ncclCommDestroy(comm));
  return 0;
}

static struct grow_box* box_new(void) {
  struct grow_box* b =
      mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(b != MAP_FAILED);
  atomic_store(&b->ready, 0);
  return b;
}

TEST(grow_threads) {
  CHECK_EQ(mp_run_threads(3, grow_main, box_new()), 0);
}
TEST(grow_processes) {
  CHECK_EQ(mp_run(3, grow_main, box_new()), 0);
}

/* ---- suspend / resume ---- */

static int suspend_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  (void)arg;
  ncclComm_t comm = NULL;
  uint64_t v = 7;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  if (check_allreduce(comm)) return 1;
  MP_CHECK(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &v));
  EXPECT(v == 0);
  MP_CHECK(ncclCommMemStats(comm, ncclStatGpuMemTotal, &v));
  EXPECT(v == 0); /* the CPU engine holds no GPU memory */
  EXPECT_RES(ncclCommMemStats(comm, (ncclCommMemStat_t)9, &v), ncclInvalidArgument);
  EXPECT_RES(ncclCommMemStats(comm, ncclStatGpuMemTotal, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommSuspend(comm, 0x10), ncclInvalidArgument);
  for (int round = 0; round < 2; round++) {
    MP_CHECK(ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
    MP_CHECK(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &v));
    EXPECT(v == 1);
    EXPECT_RES(ncclCommSuspend(comm, NCCL_SUSPEND_MEM), ncclInvalidUsage);
    int x = 1;
    EXPECT_RES(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, NULL), ncclInvalidUsage);
    MP_CHECK(ncclCommResume(comm));
    MP_CHECK(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &v));
    EXPECT(v == 0);
    if (check_allreduce(comm)) return 1;
  }
  MP_CHECK(ncclCommResume(comm)); /* not suspended: nothing to do */
  EXPECT_RES(ncclCommSuspend(NULL, NCCL_SUSPEND_MEM), ncclInvalidArgument);
  MP_CHECK(ncclCommDestroy(comm));
  return 0;
}

TEST(suspend_resume_threads) {
  CHECK_EQ(mp_run_threads(3, suspend_main, NULL), 0);
}
TEST(suspend_resume_processes) {
  CHECK_EQ(mp_run(3, suspend_main, NULL), 0);
}

/* ---- one-sided ---- */

enum { WIN = 4096 };

static int onesided_main(int rank, int n, ncclUniqueId id, void* arg) {
  (void)arg;
  ncclComm_t comm = NULL;
  MP_CHECK(ncclCommInitRank(&comm, n, id, rank));
  int *w0 = calloc(WIN, sizeof(int)), *w1 = calloc(WIN, sizeof(int)), src[WIN];
  EXPECT(w0 && w1);
  ncclWindow_t win0, win1;
  MP_CHECK(ncclCommWindowRegister(comm, w0, WIN * sizeof(int), &win0, NCCL_WIN_DEFAULT));
  MP_CHECK(ncclCommWindowRegister(comm, w1, WIN * sizeof(int), &win1, NCCL_WIN_DEFAULT));
  void* p = NULL;
  MP_CHECK(ncclWinGetUserPtr(comm, win1, &p));
  EXPECT(p == w1);
  MP_CHECK(ncclGetPeerDevicePointer(win1, 8, rank, &p));
  EXPECT(p == (char*)w1 + 8);
  MP_CHECK(ncclGetLsaDevicePointer(win0, 0, rank, &p));
  EXPECT(p == w0);
  EXPECT_RES(ncclGetLsaMultimemDevicePointer(win1, 0, &p), ncclInvalidUsage);
  EXPECT_RES(ncclWinGetUserPtr(comm, (ncclWindow_t)src, &p), ncclInvalidArgument);

  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  /* A signal on index 2 first, then a put on index 0: the wait for 0 keeps the other. */
  MP_CHECK(ncclSignal(next, 2, 0, 0, comm, NULL));
  for (int i = 0; i < WIN / 2; i++) src[i] = rank * 100000 + i;
  MP_CHECK(
      ncclPutSignal(src, WIN / 2, ncclInt32, next, win1, 64 * sizeof(int), 0, 0, 0, comm, NULL));
  ncclWaitSignalDesc_t d = {1, prev, 0, 0};
  MP_CHECK(ncclWaitSignal(1, &d, comm, NULL));
  for (int i = 0; i < WIN / 2; i++) EXPECT(w1[64 + i] == prev * 100000 + i);
  EXPECT(w1[63] == 0 && w1[64 + WIN / 2] == 0);
  d.sigIdx = 2;
  MP_CHECK(ncclWaitSignal(1, &d, comm, NULL));
  /* Several puts in one group, to the previous and the next rank, on context 1. */
  for (int i = 0; i < WIN; i++) src[i] = rank + 7 * i;
  MP_CHECK(ncclGroupStart());
  MP_CHECK(ncclPutSignal(src, 16, ncclInt32, next, win0, 0, 0, 1, 0, comm, NULL));
  MP_CHECK(
      ncclPutSignal(src + 16, 16, ncclInt32, prev, win0, 64 * sizeof(int), 0, 1, 0, comm, NULL));
  MP_CHECK(ncclGroupEnd());
  ncclWaitSignalDesc_t two[2] = {{1, prev, 0, 1}, {1, next, 0, 1}};
  if (n == 1) two[1].opCnt = 0; /* to myself: one put and one wait would count twice */
  MP_CHECK(ncclWaitSignal(n == 1 ? 1 : 2, two, comm, NULL));
  if (n == 1) {
    two[0].opCnt = 1;
    MP_CHECK(ncclWaitSignal(1, two, comm, NULL));
  }
  for (int i = 0; i < 16; i++) EXPECT(w0[i] == prev + 7 * i);
  for (int i = 0; i < 16; i++) EXPECT(w0[64 + i] == next + 7 * (16 + i));
  /* To myself. */
  MP_CHECK(ncclPutSignal(src, 4, ncclInt32, rank, win0, 1000 * sizeof(int), 3, 0, 0, comm, NULL));
  ncclWaitSignalDesc_t self = {1, rank, 3, 0};
  MP_CHECK(ncclWaitSignal(1, &self, comm, NULL));
  for (int i = 0; i < 4; i++) EXPECT(w0[1000 + i] == rank + 7 * i);

  /* Bad arguments: nothing is sent. */
  EXPECT_RES(ncclPutSignal(src, 4, ncclInt32, n, win0, 0, 0, 0, 0, comm, NULL),
             ncclInvalidArgument);
  EXPECT_RES(ncclPutSignal(src, 4, ncclInt32, next, win0, 0, 0, 0, 1, comm, NULL),
             ncclInvalidArgument);
  EXPECT_RES(ncclPutSignal(src, WIN, ncclInt32, next, win0, 8, 0, 0, 0, comm, NULL),
             ncclInvalidArgument);
  EXPECT_RES(ncclPutSignal(src, 4, ncclInt32, next, (ncclWindow_t)src, 0, 0, 0, 0, comm, NULL),
             ncclInvalidArgument);
  EXPECT_RES(ncclPutSignal(NULL, 4, ncclInt32, next, win0, 0, 0, 0, 0, comm, NULL),
             ncclInvalidArgument);
  EXPECT_RES(ncclPutSignal(src, 4, ncclInt32, next, win0, 0, -1, 0, 0, comm, NULL),
             ncclInvalidArgument);
  EXPECT_RES(ncclSignal(next, 0, -2, 0, comm, NULL), ncclInvalidArgument);
  ncclWaitSignalDesc_t neg = {-1, prev, 0, 0};
  EXPECT_RES(ncclWaitSignal(1, &neg, comm, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclWaitSignal(1, NULL, comm, NULL), ncclInvalidArgument);
  MP_CHECK(ncclGroupStart());
  EXPECT_RES(ncclWaitSignal(1, &d, comm, NULL), ncclInvalidUsage);
  MP_CHECK(ncclGroupEnd());
  MP_CHECK(ncclWaitSignal(0, NULL, comm, NULL));

  if (check_allreduce(comm)) return 1; /* the paths are still in step */
  MP_CHECK(ncclCommWindowDeregister(comm, win0));
  EXPECT_RES(ncclCommWindowDeregister(comm, win0), ncclInvalidArgument);
  MP_CHECK(ncclCommWindowDeregister(comm, win1));
  MP_CHECK(ncclCommDestroy(comm));
  free(w0);
  free(w1);
  return 0;
}

TEST(onesided_threads) {
  CHECK_EQ(mp_run_threads(2, onesided_main, NULL), 0);
}
TEST(onesided_processes) {
  CHECK_EQ(mp_run(3, onesided_main, NULL), 0);
}
TEST(onesided_one_rank) {
  CHECK_EQ(mp_run_threads(1, onesided_main, NULL), 0);
}

/* ---- peer pointers of windows ---- */

enum { PWIN = 2048 }; /* ints */
enum ptr_mode { PTR_MALLOC, PTR_MEMALLOC };
struct ptr_arg {
  enum ptr_mode mode;
  int threads; /* ranks are threads of one process */
};

static int barrier(ncclComm_t comm) {
  int x = 1;
  MP_CHECK(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, NULL));
  return 0;
}

/* Each rank writes through its pointer to the next rank's window; the next rank finds the values
 * in its own buffer. Where the peer cannot be reached (another process's malloc'd memory) the
 * pointer is NULL and the call succeeds. */
static int peer_ptr_main(int rank, int n, ncclUniqueId id, void* arg) {
  const struct ptr_arg* a = arg;
  ncclComm_t comm = NULL;
  MP_CHECK(ncclCommInitRank(&comm, n, id, rank));
  int* buf = NULL;
  if (a->mode == PTR_MEMALLOC)
    MP_CHECK(ncclMemAlloc((void**)&buf, PWIN * sizeof(int)));
  else
    buf = calloc(PWIN, sizeof(int));
  EXPECT(buf != NULL);
  for (int i = 0; i < PWIN; i++) buf[i] = -1;
  ncclWindow_t win;
  MP_CHECK(ncclCommWindowRegister(comm, buf, PWIN * sizeof(int), &win, NCCL_WIN_DEFAULT));
  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  int reach = a->threads || a->mode == PTR_MEMALLOC;
  void *p = (void*)1, *q = (void*)1;
  MP_CHECK(ncclGetPeerDevicePointer(win, 12, rank, &p));
  EXPECT(p == (char*)buf + 12);
  MP_CHECK(ncclGetPeerDevicePointer(win, 4 * sizeof(int), next, &p));
  MP_CHECK(ncclGetLsaDevicePointer(win, 4 * sizeof(int), next, &q));
  EXPECT(p == q);
  EXPECT(reach || n == 1 ? p != NULL : p == NULL);
  if (a->threads && n > 1) {
    void* own = NULL; /* a thread peer's pointer is its own address */
    MP_CHECK(ncclWinGetUserPtr(comm, win, &own));
    EXPECT(p != (char*)own + 4 * sizeof(int));
  }
  if (barrier(comm)) return 1; /* every rank set its buffer to -1 */
  if (p != NULL)
    for (int i = 0; i < 100; i++) ((int*)p)[i] = rank * 1000 + i;
  if (barrier(comm)) return 1; /* every write is done */
  for (int i = 0; i < PWIN; i++) {
    int want = reach && i >= 4 && i < 104 ? prev * 1000 + i - 4 : -1;
    if (buf[i] != want) {
      fprintf(stderr, "rank %d: buf[%d] = %d, expected %d\n", rank, i, buf[i], want);
      return 1;
    }
  }
  /* The last byte of a peer's part, and bad arguments. */
  MP_CHECK(ncclGetPeerDevicePointer(win, PWIN * sizeof(int) - 1, next, &p));
  EXPECT(reach || n == 1 ? p != NULL : p == NULL);
  EXPECT_RES(ncclGetPeerDevicePointer(win, PWIN * sizeof(int), next, &p), ncclInvalidArgument);
  EXPECT(p == NULL);
  EXPECT_RES(ncclGetPeerDevicePointer(win, 0, n, &p), ncclInvalidArgument);
  EXPECT_RES(ncclGetLsaDevicePointer(win, 0, -1, &p), ncclInvalidArgument);
  EXPECT_RES(ncclGetPeerDevicePointer(win, 0, next, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclGetPeerDevicePointer((ncclWindow_t)buf, 0, next, &p), ncclInvalidArgument);
  EXPECT_RES(ncclGetPeerDevicePointer(NULL, 0, next, &p), ncclInvalidArgument);
  /* Registered inside a group: nothing is exchanged, only the own part is known. */
  ncclWindow_t gwin;
  MP_CHECK(ncclGroupStart());
  MP_CHECK(ncclCommWindowRegister(comm, buf, 64, &gwin, NCCL_WIN_DEFAULT));
  MP_CHECK(ncclGroupEnd());
  MP_CHECK(ncclGetPeerDevicePointer(gwin, 8, rank, &p));
  EXPECT(p == (char*)buf + 8);
  MP_CHECK(ncclGetPeerDevicePointer(gwin, 8, next, &p));
  EXPECT(n == 1 ? p == (char*)buf + 8 : p == NULL);
  MP_CHECK(ncclCommWindowDeregister(comm, gwin));
  MP_CHECK(ncclCommWindowDeregister(comm, win));
  if (barrier(comm)) return 1; /* no peer writes any more before the memory goes */
  if (a->mode == PTR_MEMALLOC) {
    MP_CHECK(ncclMemFree(buf));
    EXPECT_RES(ncclMemFree(buf), ncclInvalidArgument); /* freed already */
  } else {
    free(buf);
  }
  MP_CHECK(ncclCommDestroy(comm));
  return 0;
}

TEST(peer_pointers_threads) {
  struct ptr_arg a = {PTR_MALLOC, 1}, m = {PTR_MEMALLOC, 1};
  CHECK_EQ(mp_run_threads(3, peer_ptr_main, &a), 0);
  CHECK_EQ(mp_run_threads(2, peer_ptr_main, &m), 0);
  CHECK_EQ(mp_run_threads(1, peer_ptr_main, &a), 0);
}
TEST(peer_pointers_processes_memalloc) {
  struct ptr_arg a = {PTR_MEMALLOC, 0};
  CHECK_EQ(mp_run(3, peer_ptr_main, &a), 0);
}
TEST(peer_pointers_processes_malloc) {
  struct ptr_arg a = {PTR_MALLOC, 0};
  CHECK_EQ(mp_run(2, peer_ptr_main, &a), 0);
}

/* ---- properties, encryption, device-API helpers ---- */

void ncclResetDebugInitInternal(void); /* exported by NCCL's library, declared by no header */

static int props_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  (void)arg;
  ncclComm_t comm = NULL;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  ncclCommProperties_t pr = NCCL_COMM_PROPERTIES_INITIALIZER;
  MP_CHECK(ncclCommQueryProperties(comm, &pr));
  EXPECT(pr.rank == rank && pr.nRanks == nranks && pr.size == sizeof pr);
  EXPECT(pr.hostRmaSupport && !pr.deviceApiSupport && !pr.multimemSupport && !pr.cftSupport);
  pr.magic = 1;
  EXPECT_RES(ncclCommQueryProperties(comm, &pr), ncclInvalidArgument);
  EXPECT_RES(ncclCommQueryProperties(comm, NULL), ncclInvalidArgument);
  ncclTeam_t t = ncclTeamCft(comm, NCCL_CFT_TEAM_FLAT);
  EXPECT(t.nRanks == 1 && t.rank == 0);
  t = ncclTeamCftMultimem(comm);
  EXPECT(t.nRanks == 1);
  ncclGinOutboxHandle ob;
  ncclDevResourceRequirements_t req;
  EXPECT_RES(ncclGinOutboxCreateRequirement(1, 12, &ob, &req), ncclInvalidUsage);
  ncclCftLeId le;
  size_t off;
  EXPECT_RES(ncclGetPeerDeviceLeInfo(NULL, 0, 0, &le, &off), ncclInvalidUsage);
  MP_CHECK(ncclCommDestroy(comm));
  return 0;
}

TEST(properties_threads) {
  CHECK_EQ(mp_run_threads(2, props_main, NULL), 0);
}

TEST(encryption) {
  ncclEncryptionConfig_t e = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  CHECK_RES(ncclSetEncryption(&e), ncclSuccess);
  e.mode = NCCL_ENCRYPTION_MODE_PSK;
  e.psk = "secret";
  CHECK_RES(ncclSetEncryption(&e), ncclInvalidUsage);
  CHECK(strstr(ncclGetLastError(NULL), "encrypt") != NULL);
  e.mode = 5;
  CHECK_RES(ncclSetEncryption(&e), ncclInvalidArgument);
  e.magic = 0;
  CHECK_RES(ncclSetEncryption(&e), ncclInvalidArgument);
  CHECK_RES(ncclSetEncryption(NULL), ncclInvalidArgument);
  ncclResetDebugInitInternal();
  CHECK(strcmp(ncclGetErrorString(ncclTimeout), ncclGetErrorString(ncclNumResults)) != 0);
}

/* ---- parameters ---- */

TEST(params) {
  /* Read once per process: set before the first call. */
  setenv("NCCL_BUFFSIZE", "300000", 1);
  setenv("NCCL_ALGO", "ring", 1);
  unsetenv("NCCL_SOCKET_NTHREADS"); /* its default is checked */
  unsetenv("NCCL_MIN_CTAS");
  ncclParamHandle_t h = NULL, h2 = NULL;
  CHECK_RES(ncclParamBind(&h, "NCCL_BUFFSIZE"), ncclSuccess);
  CHECK_RES(ncclParamBind(&h2, "BUFFSIZE"), ncclSuccess);
  CHECK(h == h2);
  int32_t i32 = 0;
  int64_t i64 = 0;
  uint64_t u64 = 0;
  uint16_t u16 = 0;
  int8_t i8 = 0;
  CHECK_RES(ncclParamGetI32(h, &i32), ncclSuccess);
  CHECK_EQ(i32, 300000);
  CHECK_RES(ncclParamGetI64(h, &i64), ncclSuccess);
  CHECK_EQ(i64, 300000);
  CHECK_RES(ncclParamGetU64(h, &u64), ncclSuccess);
  CHECK_EQ(u64, 300000);
  CHECK_RES(ncclParamGetI8(h, &i8), ncclInvalidArgument); /* does not fit */
  CHECK_RES(ncclParamGetU16(h, &u16), ncclInvalidArgument);
  const char* s = NULL;
  CHECK_RES(ncclParamGetStr(h, &s), ncclSuccess);
  CHECK(strcmp(s, "300000") == 0);
  char raw[16];
  int len = 0;
  CHECK_RES(ncclParamGet(h, raw, sizeof raw, &len), ncclSuccess);
  CHECK_EQ(len, 8);
  memcpy(&i64, raw, 8);
  CHECK_EQ(i64, 300000);
  CHECK_RES(ncclParamGet(h, raw, 4, &len), ncclInvalidArgument);
  /* A text parameter. */
  CHECK_RES(ncclParamBind(&h, "NCCL_ALGO"), ncclSuccess);
  CHECK_RES(ncclParamGetStr(h, &s), ncclSuccess);
  CHECK(strcmp(s, "ring") == 0);
  CHECK_RES(ncclParamGetI32(h, &i32), ncclInvalidArgument);
  CHECK_RES(ncclParamGet(h, raw, sizeof raw, &len), ncclSuccess);
  CHECK_EQ(len, 5);
  CHECK(strcmp(raw, "ring") == 0);
  /* Defaults, and a negative one in an unsigned type. */
  CHECK_RES(ncclParamBind(&h, "MONEL_NET_CHANNELS"), ncclSuccess);
  CHECK_RES(ncclParamGetU16(h, &u16), ncclSuccess);
  CHECK_EQ(u16, 8);
  CHECK_RES(ncclParamBind(&h, "NCCL_SOCKET_NTHREADS"), ncclSuccess); /* -1: Monel decides */
  CHECK_RES(ncclParamGetI32(h, &i32), ncclSuccess);
  CHECK_EQ(i32, -1);
  CHECK_RES(ncclParamGetU16(h, &u16), ncclInvalidArgument);
  CHECK_RES(ncclParamBind(&h, "NCCL_NSOCKS_PERTHREAD"), ncclSuccess); /* -1 as well */
  CHECK_RES(ncclParamGetI32(h, &i32), ncclSuccess);
  CHECK_EQ(i32, -1);
  CHECK_RES(ncclParamBind(&h, "NCCL_MIN_CTAS"), ncclSuccess);
  CHECK_RES(ncclParamGetI8(h, &i8), ncclSuccess);
  CHECK_EQ(i8, -1);
  CHECK_RES(ncclParamGetU64(h, &u64), ncclInvalidArgument);
  /* By key. */
  const char* v = NULL;
  int vlen = 0;
  CHECK_RES(ncclParamGetParameter("NCCL_BUFFSIZE", &v, &vlen), ncclSuccess);
  CHECK(strcmp(v, "300000") == 0 && vlen == 6);
  CHECK_RES(ncclParamGetParameter("NCCL_NO_SUCH_THING", &v, &vlen), ncclInvalidArgument);
  const char** keys = NULL;
  int nkeys = 0, found = 0;
  CHECK_RES(ncclParamGetAllParameterKeys(&keys, &nkeys), ncclSuccess);
  CHECK(nkeys > 20);
  for (int i = 0; i < nkeys; i++) {
    CHECK_RES(ncclParamBind(&h, keys[i]), ncclSuccess);
    CHECK_RES(ncclParamGetStr(h, &s), ncclSuccess);
    found += strcmp(keys[i], "NCCL_ALGO") == 0 || strcmp(keys[i], "MONEL_ENGINE") == 0;
  }
  CHECK_EQ(found, 2);
  /* Bad arguments. */
  CHECK_RES(ncclParamBind(&h, "nope"), ncclInvalidArgument);
  CHECK_RES(ncclParamBind(NULL, "NCCL_ALGO"), ncclInvalidArgument);
  CHECK_RES(ncclParamBind(&h, NULL), ncclInvalidArgument);
  CHECK_RES(ncclParamGetI32((ncclParamHandle_t)&i32, &i32), ncclInvalidArgument);
  CHECK_RES(ncclParamGetI32(h2, NULL), ncclInvalidArgument);
  CHECK_RES(ncclParamGetAllParameterKeys(NULL, &nkeys), ncclInvalidArgument);
  ncclParamDumpAll();
}
