/* NCCL 2.29-2.32 functions on the GPU engine, ranks as threads (on one GPU they share it):
 * the nccl*Config collectives with per-call algorithm and block limits, checked exactly;
 * ncclCommSuspend/Resume with ncclCommMemStats before and after and a collective after resume;
 * ncclCommGrow from 2 to 3 ranks; one-sided ncclPutSignal/ncclSignal/ncclWaitSignal between two
 * ranks, the window's data checked. Usage: test_gpu_api232.
 * Prints PASS/FAIL/SKIP lines; exits 1 on a failure. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "nccl.h"

enum { C = 1 << 20 };

static int ngpus;
static ncclUniqueId first_id;
static ncclUniqueId grow_id;
static _Atomic int grow_ready;
static _Atomic int failures;

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    printf("FAIL " __VA_ARGS__);                                                                   \
    printf("\n");                                                                                  \
    atomic_fetch_add(&failures, 1);                                                                \
    return 1;                                                                                      \
  } while (0)
#define NC(call)                                                                                   \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != ncclSuccess)                                                                         \
      FAIL("%s: %s: %s", #call, ncclGetErrorString(r_), ncclGetLastError(NULL));                   \
  } while (0)
#define CU(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) FAIL("%s: %s", #call, cudaGetErrorString(e_));                          \
  } while (0)

struct rank_ctx {
  int rank, n;
  ncclComm_t comm;
  cudaStream_t stream;
  int *d_send, *d_recv, *h;
};

/* recv (n*count ints at most) == want(i) for i < count. */
static int check(struct rank_ctx* c, const char* what, size_t count,
                 int (*want)(int, int, size_t)) {
  CU(cudaStreamSynchronize(c->stream));
  CU(cudaMemcpy(c->h, c->d_recv, count * sizeof(int), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < count; i++)
    if (c->h[i] != want(c->rank, c->n, i))
      FAIL("%s: rank %d element %zu is %d, want %d", what, c->rank, i, c->h[i],
           want(c->rank, c->n, i));
  return 0;
}

static int fill(struct rank_ctx* c, size_t count) {
  for (size_t i = 0; i < count; i++) c->h[i] = (c->rank + 1) * (int)(i % 1000 + 1);
  CU(cudaMemcpy(c->d_send, c->h, count * sizeof(int), cudaMemcpyHostToDevice));
  return 0;
}

static int want_sum(int rank, int n, size_t i) {
  (void)rank;
  return n * (n + 1) / 2 * (int)(i % 1000 + 1);
}
static int want_gather(int rank, int n, size_t i) {
  (void)rank, (void)n;
  return (int)(i / 4096 + 1) * (int)(i % 4096 % 1000 + 1);
}

static int allreduce_ok(struct rank_ctx* c, const char* what) {
  if (fill(c, C)) return 1;
  NC(ncclAllReduce(c->d_send, c->d_recv, C, ncclInt32, ncclSum, c->comm, c->stream));
  return check(c, what, C, want_sum);
}

static int config_colls(struct rank_ctx* c) {
  ncclCollConfig_t cfg = NCCL_COLLCONFIG_INITIALIZER;
  const char* sel[] = {NULL, "ring", "^tree"};
  size_t sizes[] = {8, 4096, C}; /* one-shot LL and ring sizes */
  for (int k = 0; k < 3; k++) {
    for (int s = 0; s < 3; s++) {
      cfg.algSelection = sel[k];
      cfg.minCTAs = 1;
      cfg.maxCTAs = 1 + 3 * k;
      cfg.CTAPolicy = k == 1 ? NCCL_CTA_POLICY_EFFICIENCY : NCCL_CONFIG_UNDEF_INT;
      if (fill(c, sizes[s])) return 1;
      NC(ncclAllReduceConfig(c->d_send, c->d_recv, sizes[s], ncclInt32, ncclSum, c->comm, c->stream,
                             &cfg));
      if (check(c, "ncclAllReduceConfig", sizes[s], want_sum)) return 1;
    }
  }
  /* AllGather of 4096 ints per rank, two blocks at most. */
  cfg = (ncclCollConfig_t)NCCL_COLLCONFIG_INITIALIZER;
  cfg.maxCTAs = 2;
  if (fill(c, 4096)) return 1;
  NC(ncclAllGatherConfig(c->d_send, c->d_recv, 4096, ncclInt32, c->comm, c->stream, &cfg));
  if (check(c, "ncclAllGatherConfig", 4096 * (size_t)c->n, want_gather)) return 1;
  NC(ncclAlltoAllConfig(c->d_send, c->d_recv, 1024, ncclInt32, c->comm, c->stream, &cfg));
  CU(cudaStreamSynchronize(c->stream));
  /* Unsatisfiable when forced. */
  cfg.algSelection = "nvls";
  if (ncclAllReduceConfig(c->d_send, c->d_recv, 8, ncclInt32, ncclSum, c->comm, c->stream, &cfg) !=
      ncclInvalidArgument)
    FAIL("ncclAllReduceConfig with a forced \"nvls\" was accepted");
  return 0;
}

static int suspend_resume(struct rank_ctx* c) {
  uint64_t total = 0, susp = 9;
  NC(ncclCommMemStats(c->comm, ncclStatGpuMemTotal, &total));
  if (total == 0) FAIL("rank %d: ncclCommMemStats reports no GPU memory before suspend", c->rank);
  size_t free0 = 0, free1 = 0, all = 0;
  CU(cudaMemGetInfo(&free0, &all));
  NC(ncclCommSuspend(c->comm, NCCL_SUSPEND_MEM));
  CU(cudaMemGetInfo(&free1, &all));
  NC(ncclCommMemStats(c->comm, ncclStatGpuMemSuspended, &susp));
  uint64_t after = 1;
  NC(ncclCommMemStats(c->comm, ncclStatGpuMemTotal, &after));
  if (susp != 1 || after != 0)
    FAIL("rank %d: suspended %llu, total %llu", c->rank, (unsigned long long)susp,
         (unsigned long long)after);
  printf("INFO rank %d: %.1f MB held before suspend; free GPU memory %.1f -> %.1f MB (ranks "
         "sharing a GPU see each other's too)\n",
         c->rank, total / 1048576.0, free0 / 1048576.0, free1 / 1048576.0);
  int x = 0;
  if (ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, c->comm, c->stream) != ncclInvalidUsage)
    FAIL("a collective on a suspended comm was accepted");
  NC(ncclCommResume(c->comm));
  NC(ncclCommMemStats(c->comm, ncclStatGpuMemTotal, &after));
  if (after == 0) FAIL("rank %d: no GPU memory after resume", c->rank);
  return allreduce_ok(c, "AllReduce after ncclCommResume");
}

static int onesided(struct rank_ctx* c) {
  ncclWindow_t win;
  NC(ncclCommWindowRegister(c->comm, c->d_recv, 4096 * sizeof(int), &win, NCCL_WIN_DEFAULT));
  void* p = NULL;
  NC(ncclWinGetUserPtr(c->comm, win, &p));
  if (p != c->d_recv) FAIL("ncclWinGetUserPtr");
  NC(ncclGetPeerDevicePointer(win, 64, c->rank, &p));
  if (p != (char*)c->d_recv + 64) FAIL("ncclGetPeerDevicePointer");
  if (fill(c, 1024)) return 1;
  int prev = (c->rank + c->n - 1) % c->n, next = (c->rank + 1) % c->n;
  NC(ncclPutSignal(c->d_send, 1024, ncclInt32, next, win, 256 * sizeof(int), 0, 0, 0, c->comm,
                   c->stream));
  NC(ncclSignal(next, 1, 0, 0, c->comm, c->stream));
  ncclWaitSignalDesc_t d[2] = {{1, prev, 1, 0}, {1, prev, 0, 0}}; /* in the other order */
  NC(ncclWaitSignal(2, d, c->comm, c->stream));
  CU(cudaStreamSynchronize(c->stream));
  CU(cudaMemcpy(c->h, c->d_recv, 2048 * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 1024; i++)
    if (c->h[256 + i] != (prev + 1) * (i % 1000 + 1))
      FAIL("ncclPutSignal: rank %d window element %d is %d, want %d", c->rank, 256 + i,
           c->h[256 + i], (prev + 1) * (i % 1000 + 1));
  NC(ncclCommWindowDeregister(c->comm, win));
  return 0;
}

static int grow(struct rank_ctx* c, int joining) {
  ncclComm_t grown = NULL;
  if (joining) {
    struct timespec nap = {0, 1000000};
    for (int i = 0; i < 60000 && !atomic_load(&grow_ready); i++) nanosleep(&nap, NULL);
    if (!atomic_load(&grow_ready)) FAIL("rank %d: no grow token within 60 s", c->rank);
    NC(ncclCommGrow(NULL, c->n, &grow_id, c->rank, &grown, NULL));
  } else {
    ncclUniqueId tok;
    if (c->rank == 0) {
      NC(ncclCommGetUniqueId(c->comm, &tok));
      grow_id = tok;
      atomic_store(&grow_ready, 1);
    }
    NC(ncclCommGrow(c->comm, c->n, c->rank == 0 ? &tok : NULL, -1, &grown, NULL));
  }
  ncclComm_t old = c->comm;
  c->comm = grown;
  int bad = allreduce_ok(c, "AllReduce on the grown comm");
  c->comm = old;
  NC(ncclCommDestroy(grown));
  return bad;
}

struct arg {
  int rank, n, phase;
};

static void* rank_main(void* p) {
  struct arg* a = p;
  struct rank_ctx c = {a->rank, a->n, NULL, NULL, NULL, NULL, NULL};
  int old = a->n - 1, joining = a->rank == old;
  if (cudaSetDevice(a->rank % ngpus) != cudaSuccess || cudaStreamCreate(&c.stream) != cudaSuccess ||
      cudaMalloc((void**)&c.d_send, (size_t)C * a->n * sizeof(int)) != cudaSuccess ||
      cudaMalloc((void**)&c.d_recv, (size_t)C * a->n * sizeof(int)) != cudaSuccess ||
      (c.h = malloc((size_t)C * a->n * sizeof(int))) == NULL) {
    printf("FAIL rank %d: CUDA setup\n", a->rank);
    atomic_fetch_add(&failures, 1);
    return NULL;
  }
  if (!joining) {
    c.n = old;
    if (ncclCommInitRank(&c.comm, old, first_id, a->rank) != ncclSuccess) {
      printf("FAIL rank %d: ncclCommInitRank: %s\n", a->rank, ncclGetLastError(NULL));
      atomic_fetch_add(&failures, 1);
      return NULL;
    }
    if (!config_colls(&c) && a->rank == 0) printf("PASS nccl*Config collectives\n");
    if (!suspend_resume(&c) && a->rank == 0) printf("PASS Suspend/Resume, then AllReduce\n");
  }
  c.n = a->n;
  if (!grow(&c, joining) && a->rank == 0) printf("PASS Grow %d -> %d ranks\n", old, a->n);
  c.n = old;
  if (!joining && !onesided(&c) && a->rank == 0) printf("PASS PutSignal/Signal/WaitSignal\n");
  if (c.comm) ncclCommDestroy(c.comm);
  cudaFree(c.d_send);
  cudaFree(c.d_recv);
  free(c.h);
  return NULL;
}

int main(void) {
  if (cudaGetDeviceCount(&ngpus) != cudaSuccess || ngpus < 1) {
    printf("SKIP test_gpu_api232: no GPU\n");
    return 0;
  }
  alarm(300);
  enum { N = 3 }; /* 2 ranks, then one more joins */
  pthread_t t[N];
  struct arg a[N];
  if (ncclGetUniqueId(&first_id) != ncclSuccess) return 1;
  for (int r = 0; r < N; r++) {
    a[r] = (struct arg){r, N, 0};
    pthread_create(&t[r], NULL, rank_main, &a[r]);
  }
  for (int r = 0; r < N; r++) pthread_join(t[r], NULL);
  int f = atomic_load(&failures);
  printf("%s test_gpu_api232 (%d GPU%s, %d failures)\n", f ? "FAIL" : "PASS", ngpus,
         ngpus == 1 ? "" : "s", f);
  return f ? 1 : 0;
}
