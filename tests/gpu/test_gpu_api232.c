/* SPDX-License-Identifier: BSD-3-Clause */
/* NCCL 2.29-2.32 functions on the GPU engine, ranks as threads (on one GPU they share it):
 * the nccl*Config collectives with per-call algorithm and block limits, checked exactly; the
 * launch-completion event of ncclCollConfig_t (rank 0's event must fire while rank 1 has not yet
 * called, so an event recorded at the end of the kernel would never fire); a per-call
 * NCCL_CTA_POLICY_ZERO on the copy-engine path, set up on first use (and refused where that path
 * cannot run); ncclCommSuspend/Resume with ncclCommMemStats before and after and a collective
 * after resume; ncclCommGrow from 2 to 3 ranks; one-sided ncclPutSignal/ncclSignal/ncclWaitSignal
 * between two ranks, the window's data checked, then read and written through the peer's
 * pointer (ncclGetPeerDevicePointer); two ranks driven by one thread with per-call ZERO in one
 * group. Usage: test_gpu_api232 (API232_SKIP leaves steps out: see skipped()).
 * With the argument "procs", one rank of a job of two processes (monelrun -n 2; both may share a
 * GPU): windows of each rank read and written through CUDA IPC, per-call ZERO across processes.
 * Prints STEP lines as each rank goes, PASS/FAIL/SKIP lines; exits 1 on a failure.
 *
 * Ranks that share a GPU must never wait for the device: each rank works on its own non-blocking
 * stream and copies with cudaMemcpyAsync on it (a cudaMemcpy on the legacy default stream waits
 * for every blocking stream of the device, among them a peer's collective that waits for this
 * rank's next one: a deadlock). A failing rank ends the process (its peers would wait for it
 * forever), and a watchdog names the step each rank is in when it runs out of time. */
#include <cuda.h>
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
static int* recv_of[N];            /* each rank's d_recv, which holds its window */
static int p2p_off; /* NCCL_P2P_DISABLE=1: FIFOs in host memory, no copy-engine path */

/* Rank 1 waits at gate k until rank 0 opened it (launch_events). */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gates_open;

/* API232_SKIP="suspend grow ...": steps left out (config, cta, events, suspend, grow), to tell
 * which earlier step a later one's failure depends on. */
static int skipped(const char* what) {
  const char* s = getenv("API232_SKIP");
  return s != NULL && strstr(s, what) != NULL;
}

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
  char line[256];
  for (int r = 0; r < N; r++) {
    const char* w = atomic_load(&step_of[r]);
    int len = snprintf(line, sizeof line,
                       "FAIL rank %d still in \"%s\" when the time ran out (%d s, or the "
                       "script's limit)\n",
                       r, w ? w : "(not started)", LIMIT_S);
    if (len > (int)sizeof line - 1) len = (int)sizeof line - 1;
    if (len < 0 || write(1, line, (size_t)len) < 0) break;
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

/* Whether the GPUs of ranks a and b reach each other's memory (the same GPU, or peer access). */
static int gpus_reach(int dev_a, int dev_b) {
  int can = 0;
  if (dev_a == dev_b) return 1;
  if (p2p_off || cudaDeviceCanAccessPeer(&can, dev_a, dev_b) != cudaSuccess) return 0;
  return can;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void gate_open(int k) {
  pthread_mutex_lock(&gate_lock);
  gates_open = k;
  pthread_cond_broadcast(&gate_cond);
  pthread_mutex_unlock(&gate_lock);
}

static void gate_wait(int k) {
  pthread_mutex_lock(&gate_lock);
  while (gates_open < k) pthread_cond_wait(&gate_cond, &gate_lock); /* the watchdog bounds it */
  pthread_mutex_unlock(&gate_lock);
}

/* A stream held by a flag in pinned host memory (cuStreamWaitValue32): an event recorded on it
 * stays pending until the flag is raised, so a later record by the library is what makes it
 * fire. */
typedef CUresult (*wait_value_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
struct hold {
  cudaStream_t s;
  volatile uint32_t* flag;
  void* flag_dev;
  wait_value_fn wait;
};

static void hold_init(struct hold* h) {
  enum cudaDriverEntryPointQueryResult q;
  void* fn = NULL;
#if CUDART_VERSION >= 12050
  CU(cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &fn, 12000, cudaEnableDefault, &q));
#else
  CU(cudaGetDriverEntryPoint("cuStreamWaitValue32", &fn, cudaEnableDefault, &q));
#endif
  if (fn == NULL || q != cudaDriverEntryPointSuccess) FAIL("no cuStreamWaitValue32 in the driver");
  h->wait = (wait_value_fn)fn;
  CU(cudaStreamCreateWithFlags(&h->s, cudaStreamNonBlocking));
  CU(cudaHostAlloc((void**)&h->flag, sizeof(uint32_t), cudaHostAllocMapped));
  CU(cudaHostGetDevicePointer(&h->flag_dev, (void*)h->flag, 0));
}

/* ev pending: recorded on the held stream. */
static void hold_arm(struct hold* h, cudaEvent_t ev) {
  *h->flag = 0;
  if (h->wait((CUstream)h->s, (CUdeviceptr)(uintptr_t)h->flag_dev, 1, CU_STREAM_WAIT_VALUE_EQ) !=
      CUDA_SUCCESS)
    FAIL("cuStreamWaitValue32 failed");
  CU(cudaEventRecord(ev, h->s));
  if (cudaEventQuery(ev) != cudaErrorNotReady) FAIL("the held event is not pending");
}

static void hold_release(struct hold* h) {
  __atomic_store_n(h->flag, 1, __ATOMIC_RELEASE);
  CU(cudaStreamSynchronize(h->s));
}

/* Whether ev fires within limit_s seconds (a failing query ends the process). */
static int fires(cudaEvent_t ev, double limit_s) {
  struct timespec nap = {0, 1000000};
  for (double t0 = now_s(); now_s() - t0 < limit_s; nanosleep(&nap, NULL)) {
    cudaError_t e = cudaEventQuery(ev);
    if (e == cudaSuccess) return 1;
    if (e != cudaErrorNotReady) FAIL("cudaEventQuery: %s", cudaGetErrorString(e));
  }
  return 0;
}

static int want_a2a(int rank, int n, size_t i) { /* AlltoAll of 1024 ints per pair */
  (void)n;
  return (int)(i / 1024 + 1) * (int)((rank * 1024 + i % 1024) % 1000 + 1);
}
static int want_root1(int rank, int n, size_t i) { /* Broadcast from rank 1 */
  (void)rank, (void)n;
  return 2 * (int)(i % 1000 + 1);
}
static int want_gather1k(int rank, int n, size_t i) { /* Gather of 1024 ints per rank */
  (void)rank, (void)n;
  return (int)(i / 1024 + 1) * (int)(i % 1024 % 1000 + 1);
}
static int want_scatter1(int rank, int n, size_t i) { /* Scatter of 1024 ints from rank 1 */
  (void)n;
  return 2 * (int)((rank * 1024 + i) % 1000 + 1);
}

/* One collective of a launch_events or cta_zero case. kind: 0 AllReduce, 1 AlltoAll, 2 AllGather
 * (4096 ints per rank), 3 Broadcast from rank 1, 4 Gather to rank 0, 5 Scatter from rank 1,
 * 6 ReduceScatter, 7 Reduce. */
static ncclResult_t coll(struct rank_ctx* c, int kind, size_t count, const ncclCollConfig_t* cfg) {
  void *s = c->d_send, *r = c->d_recv;
  switch (kind) {
  case 0:
    return ncclAllReduceConfig(s, r, count, ncclInt32, ncclSum, c->comm, c->stream, cfg);
  case 1:
    return ncclAlltoAllConfig(s, r, count, ncclInt32, c->comm, c->stream, cfg);
  case 2:
    return ncclAllGatherConfig(s, r, count, ncclInt32, c->comm, c->stream, cfg);
  case 3:
    return ncclBroadcastConfig(s, r, count, ncclInt32, 1, c->comm, c->stream, cfg);
  case 4:
    return ncclGatherConfig(s, r, count, ncclInt32, 0, c->comm, c->stream, cfg);
  case 5:
    return ncclScatterConfig(s, r, count, ncclInt32, 1, c->comm, c->stream, cfg);
  case 6:
    return ncclReduceScatterConfig(s, r, count, ncclInt32, ncclSum, c->comm, c->stream, cfg);
  default:
    return ncclReduceConfig(s, r, count, ncclInt32, ncclSum, 0, c->comm, c->stream, cfg);
  }
}

/* Checks what coll(kind, count) left on this rank. */
static int coll_check(struct rank_ctx* c, const char* what, int kind, size_t count) {
  size_t n = (size_t)c->n;
  switch (kind) {
  case 0:
    return check(c, what, count, want_sum);
  case 1:
    return check(c, what, n * count, want_a2a);
  case 2:
    return check(c, what, n * count, want_gather);
  case 3:
    return check(c, what, count, want_root1);
  case 4:
    return c->rank == 0 ? check(c, what, n * count, want_gather1k) : 0;
  default:
    return check(c, what, count, want_scatter1);
  }
}

/* ncclCollConfig_t.launchCompletionEvent: rank 0 arms its event (pending on a held stream),
 * calls with it and waits until it fires before rank 1 calls at all; only a record at the
 * kernel's launch (or, on the copy-engine path, before its copies) fires it then. AllReduce
 * kernels of 8 ints and of 1M (one-shot and ring with GPU-memory FIFOs, the ring twice through
 * host memory), the point-to-point kernel (AlltoAll), the copy-engine path (AllGather
 * with NCCL_CTA_POLICY_ZERO, after cta_zero set the path up: the first call with ZERO waits on
 * the host for every rank to reach it) and a call that moves nothing. */
static int launch_events(struct rank_ctx* c) {
  struct {
    const char* what;
    int kind;
    size_t count;
    int zero;
  } cases[] = {{"AllReduce of 8 ints (a small kernel)", 0, 8, 0},
               {"AllReduce of 1M ints (a large kernel)", 0, C, 0},
               {"AlltoAll (point-to-point kernel)", 1, 1024, 0},
               {"AllGather (copy engine)", 2, 4096, 1},
               {"AllReduce of 0 elements", 0, 0, 0}};
  struct hold h;
  cudaEvent_t ev;
  CU(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  if (c->rank == 0) hold_init(&h);
  for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
    if (cases[k].zero && p2p_off) continue; /* no copy-engine path: cta_zero tests the refusal */
    ncclCollConfig_t cfg = NCCL_COLLCONFIG_INITIALIZER;
    cfg.launchCompletionEvent = ev;
    if (cases[k].zero) cfg.CTAPolicy = NCCL_CTA_POLICY_ZERO;
    size_t filled = cases[k].kind == 1 ? 1024 * (size_t)c->n : 4096;
    if (fill(c, cases[k].count > filled ? cases[k].count : filled)) return 1;
    if (c->rank == 1) gate_wait(k + 1);
    if (c->rank == 0) hold_arm(&h, ev);
    NC(coll(c, cases[k].kind, cases[k].count, &cfg));
    if (c->rank == 0) {
      int ok = fires(ev, 30.0);
      hold_release(&h);
      if (!ok)
        FAIL("%s: config->launchCompletionEvent did not fire within 30 s of the call, while rank "
             "1 has not called yet",
             cases[k].what);
      gate_open(k + 1);
    }
    if (coll_check(c, cases[k].what, cases[k].kind, cases[k].count)) return 1;
    if (c->rank == 0) printf("PASS launchCompletionEvent: %s\n", cases[k].what);
  }
  CU(cudaEventDestroy(ev));
  return 0;
}

/* Per-call NCCL_CTA_POLICY_ZERO on a comm whose own policy is the default: the first such call
 * sets the copy-engine path up (the comm's GPU memory grows), and every collective it runs is
 * exact; a reduction with it is refused, and so is any call where the path cannot run (FIFOs in
 * host memory: GPUs that do not reach each other, NCCL_P2P_DISABLE=1). */
static int cta_zero(struct rank_ctx* c, int ce_usable) {
  ncclCollConfig_t z = NCCL_COLLCONFIG_INITIALIZER;
  z.CTAPolicy = NCCL_CTA_POLICY_ZERO;
  for (int kind = 6; kind <= 7; kind++)
    if (coll(c, kind, 1024, &z) != ncclInvalidUsage)
      FAIL("a reduction (kind %d) with NCCL_CTA_POLICY_ZERO was not refused", kind);
  if (!ce_usable) {
    if (coll(c, 2, 4096, &z) != ncclInvalidUsage)
      FAIL(
          "AllGather with NCCL_CTA_POLICY_ZERO was accepted where the copy-engine path cannot run");
    if (c->rank == 0)
      printf("PASS NCCL_CTA_POLICY_ZERO refused where the copy engine cannot run\n");
    return 0;
  }
  uint64_t before = 0, after = 0;
  NC(ncclCommMemStats(c->comm, ncclStatGpuMemTotal, &before));
  const char* what[] = {"", "AlltoAll", "AllGather", "Broadcast", "Gather", "Scatter"};
  for (int kind = 1; kind <= 5; kind++) {
    size_t count = kind == 2 ? 4096 : kind == 3 ? C : 1024;
    if (fill(c, kind == 3 ? C : 4096)) return 1;
    z.CTAPolicy =
        kind == 2 ? NCCL_CTA_POLICY_ZERO | NCCL_CTA_POLICY_EFFICIENCY : NCCL_CTA_POLICY_ZERO;
    NC(coll(c, kind, count, &z));
    if (coll_check(c, what[kind], kind, count)) return 1;
  }
  NC(ncclCommMemStats(c->comm, ncclStatGpuMemTotal, &after));
  if (after <= before)
    FAIL("rank %d: GPU memory %llu before the first NCCL_CTA_POLICY_ZERO call and %llu after: the "
         "copy-engine path was not set up",
         c->rank, (unsigned long long)before, (unsigned long long)after);
  if (c->rank == 0)
    printf("PASS NCCL_CTA_POLICY_ZERO per call: the copy-engine path set up on first use (+%.1f "
           "MB), AlltoAll, AllGather, Broadcast, Gather, Scatter exact\n",
           (double)(after - before) / 1048576.0);
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

/* Every rank's window is complete (a collective after every wait): one with its stream drained. */
static int barrier(struct rank_ctx* c) {
  int* x = c->d_send + (size_t)C * c->n - 1; /* the last element of d_send, used by no test */
  NC(ncclAllReduce(x, x, 1, ncclInt32, ncclSum, c->comm, c->stream));
  CU(cudaStreamSynchronize(c->stream));
  return 0;
}

/* Through the peer's pointer: read what this rank put in its window (ints 256..1279), then write
 * ints 3000..3099 with a memset kernel (stores of an SM) for the peer to find. */
static int peer_load_store(struct rank_ctx* c, ncclWindow_t win, int peer) {
  void* p = NULL;
  if (barrier(c)) return 1;
  NC(ncclGetPeerDevicePointer(win, 256 * sizeof(int), peer, &p));
  CU(cudaMemcpyAsync(c->h, p, 1024 * sizeof(int), cudaMemcpyDefault, c->stream));
  CU(cudaStreamSynchronize(c->stream));
  for (int i = 0; i < 1024; i++)
    if (c->h[i] != (c->rank + 1) * (i % 1000 + 1))
      FAIL("rank %d read %d through rank %d's window pointer at element %d, want %d", c->rank,
           c->h[i], peer, 256 + i, (c->rank + 1) * (i % 1000 + 1));
  NC(ncclGetPeerDevicePointer(win, 3000 * sizeof(int), peer, &p));
  CU(cudaMemsetAsync(p, 0x40 + c->rank, 100 * sizeof(int), c->stream));
  CU(cudaStreamSynchronize(c->stream));
  if (barrier(c)) return 1;
  CU(cudaMemcpyAsync(c->h, c->d_recv + 3000, 100 * sizeof(int), cudaMemcpyDeviceToHost, c->stream));
  CU(cudaStreamSynchronize(c->stream));
  int prev = (c->rank + c->n - 1) % c->n, b = 0x40 + prev, w = b | b << 8 | b << 16 | b << 24;
  for (int i = 0; i < 100; i++)
    if (c->h[i] != w)
      FAIL("rank %d window element %d is 0x%x; rank %d wrote 0x%x through its pointer", c->rank,
           3000 + i, (unsigned)c->h[i], prev, (unsigned)w);
  if (c->rank == 0) printf("PASS ncclGetPeerDevicePointer: a peer's window read and written\n");
  return 0;
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
  /* A thread of this process on the same GPU, or one this GPU reaches: the peer's own address. */
  int reach = gpus_reach(c->rank % ngpus, next % ngpus);
  void* want = reach ? (char*)recv_of[next] + 64 : NULL;
  NC(ncclGetPeerDevicePointer(win, 64, next, &p));
  if (p != want)
    FAIL("ncclGetPeerDevicePointer gave %p for rank %d's window, want %p", p, next, want);
  NC(ncclGetLsaDevicePointer(win, 64, next, &p));
  if (p != want)
    FAIL("ncclGetLsaDevicePointer gave %p for rank %d's window, want %p", p, next, want);
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
  if (reach && peer_load_store(c, win, next)) return 1;
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
  recv_of[a->rank] = c.d_recv;
  if (!joining) {
    c.n = old;
    step(a->rank, "ncclCommInitRank");
    NC(ncclCommInitRank(&c.comm, old, first_id, a->rank));
    if (!skipped("config")) {
      step(a->rank, "nccl*Config collectives");
      config_colls(&c);
      if (a->rank == 0) printf("PASS nccl*Config collectives\n");
    }
    int ce_usable = !p2p_off && gpus_reach(0, 1 % ngpus);
    if (!skipped("cta")) {
      step(a->rank, "NCCL_CTA_POLICY_ZERO per call");
      cta_zero(&c, ce_usable);
    }
    if (!skipped("events")) {
      step(a->rank, "launchCompletionEvent");
      launch_events(&c);
    }
    if (!skipped("suspend")) {
      step(a->rank, "Suspend/Resume");
      suspend_resume(&c);
      if (a->rank == 0) printf("PASS Suspend/Resume, then AllReduce\n");
      /* Resume set the engine up afresh: the next call with ZERO sets the path up again. */
      if (!skipped("cta")) {
        step(a->rank, "NCCL_CTA_POLICY_ZERO after Resume");
        cta_zero(&c, ce_usable);
      }
    }
  }
  c.n = a->n;
  ncclComm_t grown = NULL;
  if (!skipped("grow")) {
    grow(&c, joining, &grown);
    if (a->rank == 0) printf("PASS Grow %d -> %d ranks\n", old, a->n);
  }
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
  if (grown != NULL) NC(ncclCommDestroy(grown));
  step(a->rank, "done");
  /* No cudaFree here: it may wait for the device, and peers still run; the process ends. */
  free(c.h);
  return NULL;
}

/* Two ranks of one comm driven by one thread (ncclCommInitAll), each with a per-call
 * NCCL_CTA_POLICY_ZERO AllGather in one group: the copy-engine path of both is set up side by
 * side (each rank's setup waits for the other's). */
static int one_thread_group(int ce_usable) {
  enum { R = 2, K = 4096 };
  int devs[R] = {0, 1 % ngpus};
  ncclComm_t comms[R];
  cudaStream_t st[R];
  int *s[R], *r[R], *h = malloc(sizeof(int) * K * R);
  if (h == NULL) FAIL("out of host memory");
  step(0, "one thread, two ranks: ncclCommInitAll");
  NC(ncclCommInitAll(comms, R, devs));
  for (int k = 0; k < R; k++) {
    CU(cudaSetDevice(devs[k]));
    CU(cudaStreamCreateWithFlags(&st[k], cudaStreamNonBlocking));
    CU(cudaMalloc((void**)&s[k], sizeof(int) * K));
    CU(cudaMalloc((void**)&r[k], sizeof(int) * K * R));
    for (int i = 0; i < K; i++) h[i] = (k + 1) * (i % 1000 + 1);
    CU(cudaMemcpyAsync(s[k], h, sizeof(int) * K, cudaMemcpyHostToDevice, st[k]));
    CU(cudaStreamSynchronize(st[k]));
  }
  ncclCollConfig_t z = NCCL_COLLCONFIG_INITIALIZER;
  z.CTAPolicy = NCCL_CTA_POLICY_ZERO;
  step(0, "one thread, two ranks: AllGather with NCCL_CTA_POLICY_ZERO in one group");
  NC(ncclGroupStart());
  for (int k = 0; k < R; k++) {
    CU(cudaSetDevice(devs[k]));
    NC(ncclAllGatherConfig(s[k], r[k], K, ncclInt32, comms[k], st[k], &z));
  }
  ncclResult_t res = ncclGroupEnd();
  if (!ce_usable) {
    if (res != ncclInvalidUsage) FAIL("the group with NCCL_CTA_POLICY_ZERO was not refused");
  } else {
    NC(res);
    for (int k = 0; k < R; k++) {
      CU(cudaSetDevice(devs[k]));
      CU(cudaMemcpyAsync(h, r[k], sizeof(int) * K * R, cudaMemcpyDeviceToHost, st[k]));
      CU(cudaStreamSynchronize(st[k]));
      for (int i = 0; i < K * R; i++)
        if (h[i] != want_gather(k, R, (size_t)i))
          FAIL("one thread, two ranks: rank %d element %d is %d, want %d", k, i, h[i],
               want_gather(k, R, (size_t)i));
    }
  }
  for (int k = 0; k < R; k++) NC(ncclCommDestroy(comms[k]));
  printf("PASS one thread, two ranks, NCCL_CTA_POLICY_ZERO in one group (%s)\n",
         ce_usable ? "exact" : "refused");
  free(h);
  return 0;
}

/* Process mode: a window of `bytes` at buff, every int set to rank * 100000 + i before the
 * (collective) registration; through the peer's pointer (CUDA IPC) this rank reads the peer's
 * ints, then writes the second half of the peer's part with a memset kernel for the peer to
 * find. A peer this GPU cannot reach gives NULL. Deregistration unmaps it. */
static int ipc_window(struct rank_ctx* c, char* buff, size_t bytes, const char* what, int reach) {
  ncclWindow_t win;
  int peer = 1 - c->rank, nint = (int)(bytes / sizeof(int));
  void* p = NULL;
  for (int i = 0; i < nint; i++) c->h[i] = c->rank * 100000 + i;
  CU(cudaMemcpyAsync(buff, c->h, bytes, cudaMemcpyHostToDevice, c->stream));
  CU(cudaStreamSynchronize(c->stream));
  step(c->rank, what);
  NC(ncclCommWindowRegister(c->comm, buff, bytes, &win, NCCL_WIN_DEFAULT));
  NC(ncclGetPeerDevicePointer(win, 0, peer, &p));
  if (!reach && p != NULL)
    FAIL("%s: a pointer to rank %d's window on a GPU out of reach", what, peer);
  if (reach && p == NULL) FAIL("%s: no pointer to rank %d's window through CUDA IPC", what, peer);
  if (reach) {
    CU(cudaMemcpyAsync(c->h, p, bytes, cudaMemcpyDefault, c->stream));
    CU(cudaStreamSynchronize(c->stream));
    for (int i = 0; i < nint; i++)
      if (c->h[i] != peer * 100000 + i)
        FAIL("%s: rank %d read %d at int %d of rank %d's window, want %d", what, c->rank, c->h[i],
             i, peer, peer * 100000 + i);
    NC(ncclGetLsaDevicePointer(win, bytes / 2, peer, &p));
    CU(cudaMemsetAsync(p, 0x40 + c->rank, bytes / 2, c->stream));
    CU(cudaStreamSynchronize(c->stream));
    if (barrier(c)) return 1;
    CU(cudaMemcpyAsync(c->h, buff + bytes / 2, bytes / 2, cudaMemcpyDeviceToHost, c->stream));
    CU(cudaStreamSynchronize(c->stream));
    int b = 0x40 + peer, w = b | b << 8 | b << 16 | b << 24;
    for (int i = 0; i < nint / 2; i++)
      if (c->h[i] != w)
        FAIL("%s: rank %d's window int %d is 0x%x; rank %d wrote 0x%x through CUDA IPC", what,
             c->rank, nint / 2 + i, (unsigned)c->h[i], peer, (unsigned)w);
  }
  NC(ncclCommWindowDeregister(c->comm, win));
  if (ncclGetPeerDevicePointer(win, 0, peer, &p) != ncclInvalidArgument)
    FAIL("%s: the window still gives pointers after its deregistration", what);
  printf("PASS %s: rank %d %s rank %d's part\n", what, c->rank,
         reach ? "read and wrote through CUDA IPC" : "got NULL (no peer access) for", peer);
  return 0;
}

/* One-sided between two processes: each rank puts twice and signals before either waits (four
 * messages each way, more than a point-to-point FIFO holds: the puts must not wait for their
 * target), then waits for both puts and the signal and checks its window. `where`: "processes"
 * (one host: the direct route) or "hosts" (the host route). */
static int onesided_procs(struct rank_ctx* c, const char* where) {
  ncclWindow_t win;
  int peer = 1 - c->rank;
  step(c->rank, "PutSignal/Signal/WaitSignal across two ranks");
  NC(ncclCommWindowRegister(c->comm, c->d_recv, 4096 * sizeof(int), &win, NCCL_WIN_DEFAULT));
  if (fill(c, 1024)) return 1;
  NC(ncclPutSignal(c->d_send, 512, ncclInt32, peer, win, 256 * sizeof(int), 0, 0, 0, c->comm,
                   c->stream));
  NC(ncclPutSignal(c->d_send + 512, 512, ncclInt32, peer, win, 768 * sizeof(int), 0, 0, 0, c->comm,
                   c->stream));
  NC(ncclSignal(peer, 1, 0, 0, c->comm, c->stream));
  ncclWaitSignalDesc_t d[2] = {{1, peer, 1, 0}, {2, peer, 0, 0}};
  NC(ncclWaitSignal(2, d, c->comm, c->stream));
  CU(cudaMemcpyAsync(c->h, c->d_recv, 2048 * sizeof(int), cudaMemcpyDeviceToHost, c->stream));
  CU(cudaStreamSynchronize(c->stream));
  for (int i = 0; i < 1024; i++)
    if (c->h[256 + i] != (peer + 1) * (i % 1000 + 1))
      FAIL("one-sided across %s: rank %d window element %d is %d, want %d", where, c->rank, 256 + i,
           c->h[256 + i], (peer + 1) * (i % 1000 + 1));
  if (barrier(c)) return 1; /* the peer's puts into this window are over before it goes */
  NC(ncclCommWindowDeregister(c->comm, win));
  printf("PASS one-sided across %s: rank %d got rank %d's two puts and signal\n", where, c->rank,
         peer);
  return 0;
}

/* One rank of two processes (monelrun -n 2; MONEL_LOCAL_RANK picks the GPU): windows on
 * cudaMalloc memory at an offset into its allocation and on ncclMemAlloc memory, then per-call
 * NCCL_CTA_POLICY_ZERO (the copy-engine path maps the peer's buffers through CUDA IPC), then
 * one-sided calls where the GPUs reach each other. `hosts` (monelrun --fake-hosts 2): the two
 * ranks are on different hosts: no window pointer, per-call ZERO refused, one-sided calls over
 * the host route. */
static int procs_main(int hosts) {
  const char *r = getenv("MONEL_RANK"), *nr = getenv("MONEL_NRANKS"),
             *lr = getenv("MONEL_LOCAL_RANK");
  if (r == NULL || nr == NULL || atoi(nr) != 2) FAIL("procs: run it under monelrun -n 2");
  struct rank_ctx c = {atoi(r), 2, NULL, NULL, NULL, NULL, NULL};
  int local = lr ? atoi(lr) : c.rank, dev = local % ngpus, peer_dev = (1 - local) % ngpus;
  char* base = NULL;
  void* mem = NULL;
  ncclUniqueId id;
  step(c.rank, "CUDA setup");
  CU(cudaSetDevice(dev));
  CU(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
  CU(cudaMalloc((void**)&c.d_send, (size_t)C * 2 * sizeof(int)));
  CU(cudaMalloc((void**)&c.d_recv, (size_t)C * 2 * sizeof(int)));
  CU(cudaMalloc((void**)&base, 1 << 20));
  if ((c.h = malloc((size_t)C * 2 * sizeof(int))) == NULL) FAIL("out of host memory");
  step(c.rank, "ncclCommInitRank");
  NC(ncclGetUniqueId(&id)); /* NCCL_COMM_ID: the same on every rank */
  NC(ncclCommInitRank(&c.comm, 2, id, c.rank));
  int reach = !hosts && gpus_reach(dev, peer_dev);
  ipc_window(&c, base + 4096, 64 << 10, "window on cudaMalloc memory + 4096", reach);
  NC(ncclMemAlloc(&mem, 1 << 20));
  ipc_window(&c, mem, 1 << 20, "window on ncclMemAlloc memory", reach);
  step(c.rank, "NCCL_CTA_POLICY_ZERO per call");
  cta_zero(&c, reach && !p2p_off);
  if (reach || hosts) onesided_procs(&c, hosts ? "hosts" : "processes");
  step(c.rank, "ncclCommDestroy");
  NC(ncclCommDestroy(c.comm));
  NC(ncclMemFree(mem));
  printf("PASS test_gpu_api232 procs rank %d (GPU %d, peer on GPU %d)\n", c.rank, dev, peer_dev);
  return 0;
}

int main(int argc, char** argv) {
  if (cudaGetDeviceCount(&ngpus) != cudaSuccess || ngpus < 1) {
    printf("SKIP test_gpu_api232: no GPU\n");
    return 0;
  }
  const char* off = getenv("NCCL_P2P_DISABLE");
  p2p_off = off != NULL && strcmp(off, "1") == 0;
  setvbuf(stdout, NULL, _IOLBF, 0); /* every line shows at once, also through a pipe */
  signal(SIGALRM, on_alarm);
  alarm(LIMIT_S);
  if (argc > 1 && strcmp(argv[1], "procs") == 0)
    return procs_main(argc > 2 && strcmp(argv[2], "hosts") == 0);
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
  one_thread_group(!p2p_off && gpus_reach(0, 1 % ngpus));
  printf("PASS test_gpu_api232 (%d GPU%s)\n", ngpus, ngpus == 1 ? "" : "s");
  return 0;
}
