/* NCCL 2.29-2.32 functions on the GPU engine, ranks as threads (on one GPU they share it):
 * the nccl*Config collectives with per-call algorithm and block limits, checked exactly;
 * ncclCommSuspend/Resume with ncclCommMemStats before and after and a collective after resume;
 * ncclCommGrow from 2 to 3 ranks; one-sided ncclPutSignal/ncclSignal/ncclWaitSignal between two
 * ranks, the window's data checked. Usage: test_gpu_api232.
 * Prints STEP lines as each rank goes, PASS/FAIL/SKIP lines; exits 1 on a failure.
 *
 * Ranks that share a GPU must never wait for the device: each rank works on its own non-blocking
 * stream and copies with cudaMemcpyAsync on it (a cudaMemcpy on the legacy default stream waits
 * for every blocking stream of the device, among them a peer's collective that waits for this
 * rank's next one: a deadlock). A failing rank ends the process (its peers would wait for it
 * forever), and a watchdog names the step each rank is in when it runs out of time. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
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
static int grow_ready;
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t grow_cond = PTHREAD_COND_INITIALIZER;

enum { N = 3, LIMIT_S = 240 }; /* 2 ranks, then one more joins; the watchdog's limit */
static const char* _Atomic step_of[N];
static pthread_barrier_t all_done; /* every rank's last communication is done */

/* A rank that fails cannot stay in step with its peers: end the process. */
#define FAIL(...)                                                                                  \
  do {                                                                                             \
    printf("FAIL " __VA_ARGS__);                                                                   \
    printf("\n");                                                                                  \
    fflush(stdout);                                                                                \
    _exit(1);                                                                                      \
  } while (0)

static void step(int rank, const char* what) {
  atomic_store(&step_of[rank], what);
  printf("STEP rank %d: %s\n", rank, what);
}

static void on_alarm(int sig) {
  (void)sig;
  char line[160];
  for (int r = 0; r < N; r++) {
    const char* w = atomic_load(&step_of[r]);
    int len = snprintf(line, sizeof line, "FAIL rank %d still in \"%s\" after %d s\n", r,
                       w ? w : "(not started)", LIMIT_S);
    if (write(1, line, (size_t)len) < 0) break;
  }
  _exit(1);
}
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
  CU(cudaMemcpyAsync(c->h, c->d_recv, count * sizeof(int), cudaMemcpyDeviceToHost, c->stream));
  CU(cudaStreamSynchronize(c->stream));
  for (size_t i = 0; i < count; i++)
    if (c->h[i] != want(c->rank, c->n, i))
      FAIL("%s: rank %d element %zu is %d, want %d", what, c->rank, i, c->h[i],
           want(c->rank, c->n, i));
  return 0;
}

static int fill(struct rank_ctx* c, size_t count) {
  for (size_t i = 0; i < count; i++) c->h[i] = (c->rank + 1) * (int)(i % 1000 + 1);
  CU(cudaMemcpyAsync(c->d_send, c->h, count * sizeof(int), cudaMemcpyHostToDevice, c->stream));
  CU(cudaStreamSynchronize(c->stream)); /* c->h is refilled next */
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
  int prev = (c->rank + c->n - 1) % c->n, next = (c->rank + 1) % c->n;
  /* The GPU engine maps no peer's window: NULL, as for a peer outside the load/store team. */
  NC(ncclGetPeerDevicePointer(win, 64, next, &p));
  if (p != NULL) FAIL("ncclGetPeerDevicePointer gave %p for rank %d's window", p, next);
  if (fill(c, 1024)) return 1;
  NC(ncclPutSignal(c->d_send, 1024, ncclInt32, next, win, 256 * sizeof(int), 0, 0, 0, c->comm,
                   c->stream));
  NC(ncclSignal(next, 1, 0, 0, c->comm, c->stream));
  ncclWaitSignalDesc_t d[2] = {{1, prev, 1, 0}, {1, prev, 0, 0}}; /* in the other order */
  NC(ncclWaitSignal(2, d, c->comm, c->stream));
  CU(cudaMemcpyAsync(c->h, c->d_recv, 2048 * sizeof(int), cudaMemcpyDeviceToHost, c->stream));
  CU(cudaStreamSynchronize(c->stream));
  for (int i = 0; i < 1024; i++)
    if (c->h[256 + i] != (prev + 1) * (i % 1000 + 1))
      FAIL("ncclPutSignal: rank %d window element %d is %d, want %d", c->rank, 256 + i,
           c->h[256 + i], (prev + 1) * (i % 1000 + 1));
  NC(ncclCommWindowDeregister(c->comm, win));
  return 0;
}

/* Grows the comm into *grown (destroyed at the end: a destroy frees device memory, and a
 * cudaFree may wait for the device while peers run collectives that wait for this rank). */
static int grow(struct rank_ctx* c, int joining, ncclComm_t* out) {
  ncclComm_t grown = NULL;
  if (joining) {
    step(c->rank, "waiting for the grow token");
    pthread_mutex_lock(&grow_lock);
    while (!grow_ready) pthread_cond_wait(&grow_cond, &grow_lock); /* the watchdog bounds it */
    ncclUniqueId tok = grow_id;
    pthread_mutex_unlock(&grow_lock);
    step(c->rank, "ncclCommGrow (joining)");
    NC(ncclCommGrow(NULL, c->n, &tok, c->rank, &grown, NULL));
  } else {
    ncclUniqueId tok;
    if (c->rank == 0) {
      NC(ncclCommGetUniqueId(c->comm, &tok));
      pthread_mutex_lock(&grow_lock);
      grow_id = tok, grow_ready = 1;
      pthread_cond_broadcast(&grow_cond);
      pthread_mutex_unlock(&grow_lock);
    }
    step(c->rank, "ncclCommGrow");
    NC(ncclCommGrow(c->comm, c->n, c->rank == 0 ? &tok : NULL, -1, &grown, NULL));
  }
  step(c->rank, "AllReduce on the grown comm");
  ncclComm_t old = c->comm;
  c->comm = grown;
  int bad = allreduce_ok(c, "AllReduce on the grown comm");
  c->comm = old;
  *out = grown;
  return bad;
}

struct arg {
  int rank, n, phase;
};

static void* rank_main(void* p) {
  struct arg* a = p;
  struct rank_ctx c = {a->rank, a->n, NULL, NULL, NULL, NULL, NULL};
  int old = a->n - 1, joining = a->rank == old;
  step(a->rank, "CUDA setup");
  if (cudaSetDevice(a->rank % ngpus) != cudaSuccess ||
      cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMalloc((void**)&c.d_send, (size_t)C * a->n * sizeof(int)) != cudaSuccess ||
      cudaMalloc((void**)&c.d_recv, (size_t)C * a->n * sizeof(int)) != cudaSuccess ||
      (c.h = malloc((size_t)C * a->n * sizeof(int))) == NULL)
    FAIL("rank %d: CUDA setup", a->rank);
  if (!joining) {
    c.n = old;
    step(a->rank, "ncclCommInitRank");
    NC(ncclCommInitRank(&c.comm, old, first_id, a->rank));
    step(a->rank, "nccl*Config collectives");
    config_colls(&c);
    if (a->rank == 0) printf("PASS nccl*Config collectives\n");
    step(a->rank, "Suspend/Resume");
    suspend_resume(&c);
    if (a->rank == 0) printf("PASS Suspend/Resume, then AllReduce\n");
  }
  c.n = a->n;
  ncclComm_t grown = NULL;
  grow(&c, joining, &grown);
  if (a->rank == 0) printf("PASS Grow %d -> %d ranks\n", old, a->n);
  c.n = old;
  if (!joining) {
    step(a->rank, "PutSignal/Signal/WaitSignal");
    onesided(&c);
    if (a->rank == 0) printf("PASS PutSignal/Signal/WaitSignal\n");
  }
  /* No rank frees device memory (a destroy) while another still communicates: the free waits
   * for the device, whose kernels may wait for a peer's next launch, which CUDA holds back
   * behind the free (ranks sharing a GPU as threads of one process). */
  step(a->rank, "waiting for every rank before the destroys");
  pthread_barrier_wait(&all_done);
  if (!joining) {
    step(a->rank, "ncclCommDestroy");
    NC(ncclCommDestroy(c.comm));
  }
  NC(ncclCommDestroy(grown));
  step(a->rank, "done");
  /* No cudaFree here: it may wait for the device, and peers still run; the process ends. */
  free(c.h);
  return NULL;
}

int main(void) {
  if (cudaGetDeviceCount(&ngpus) != cudaSuccess || ngpus < 1) {
    printf("SKIP test_gpu_api232: no GPU\n");
    return 0;
  }
  setvbuf(stdout, NULL, _IOLBF, 0); /* every line shows at once, also through a pipe */
  signal(SIGALRM, on_alarm);
  alarm(LIMIT_S);
  printf("STEP %d ranks as threads on %d GPU%s\n", N, ngpus, ngpus == 1 ? "" : "s");
  pthread_t t[N];
  pthread_barrier_init(&all_done, NULL, N);
  struct arg a[N];
  if (ncclGetUniqueId(&first_id) != ncclSuccess) return 1;
  for (int r = 0; r < N; r++) {
    a[r] = (struct arg){r, N, 0};
    pthread_create(&t[r], NULL, rank_main, &a[r]);
  }
  for (int r = 0; r < N; r++) pthread_join(t[r], NULL);
  printf("PASS test_gpu_api232 (%d GPU%s)\n", ngpus, ngpus == 1 ? "" : "s");
  return 0;
}
