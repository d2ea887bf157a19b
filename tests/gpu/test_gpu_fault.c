/* SPDX-License-Identifier: BSD-3-Clause */
/* Failures on GPUs: nothing hangs, every survivor says why, abort cleans up.
 *   kill OP      2 processes (a GPU each) run OP in a loop on a nonblocking comm, polling the
 *                stream and ncclCommGetAsyncError like PyTorch's watchdog; rank 1 kills itself
 *                (SIGKILL). Rank 0 must see ncclRemoteError within 10 s with a sentence naming
 *                rank 1 and its own operation of that moment (kind and sequence number),
 *                ncclCommAbort must return within 2 s and the stream drain within 1 s.
 *                OP: allreduce, allreduce_small, broadcast, reduce, allgather, reducescatter,
 *                alltoall, gather, scatter, sendrecv, graph (an AllReduce graph replayed); with
 *                MONEL_COPY_ENGINE=1 the copy-engine path's stream waits are the ones released.
 *   threads      one process, a thread per GPU: rank 0 enqueues 3 AllReduces that rank 1 never
 *                joins (a stuck kernel and 2 queued behind it) and waits on its stream; another
 *                thread aborts the comm: the wait ends within 1 s, abort within 2 s.
 *   hang         rank 1 skips an AllReduce: with MONEL_HANG_TIMEOUT=2 both ranks log a report
 *                naming rank 1 as missing (read back from NCCL_DEBUG_FILE).
 *   mismatch     the ranks' counts differ: the report says "Mismatch".
 *   badinput     host memory, memory and streams of another GPU, NULL and destroyed comms, use
 *                after abort: ncclInvalidArgument (or ncclInvalidUsage) and a sentence.
 *   devices      ncclCommInitAll with more ranks than GPUs and no devlist, or a devlist entry past
 *                the GPUs: ncclInvalidArgument and a sentence; a devlist repeating GPU 0: exact.
 * Prints PASS/FAIL lines; exits non-zero on failure; SKIP with fewer than 2 GPUs, unless
 * MONEL_TEST_SHARE_GPUS=1: then rank r runs on GPU r mod the GPU count (for a machine of one GPU;
 * badinput, which needs a second GPU, is skipped). */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../common.h"
#include "gpu_check.h"
#include "nccl.h"

#define COUNT ((size_t)1 << 20) /* floats: 4 MB */

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static const char* mode_op;

/* The GPU of rank r: r itself, or r mod the GPU count with MONEL_TEST_SHARE_GPUS=1. */
static int gpu_of(int rank) {
  const char* e = getenv("MONEL_TEST_SHARE_GPUS");
  int ndev = 1;
  if (e == NULL || strcmp(e, "1") != 0) return rank;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) ndev = 1;
  return rank % ndev;
}

static ncclResult_t run_op(const char* op, ncclComm_t comm, int rank, float* s, float* r,
                           cudaStream_t st) {
  size_t n = COUNT;
  if (!strcmp(op, "allreduce") || !strcmp(op, "graph"))
    return ncclAllReduce(s, r, n, ncclFloat, ncclSum, comm, st);
  if (!strcmp(op, "allreduce_small")) return ncclAllReduce(s, r, 2, ncclFloat, ncclSum, comm, st);
  if (!strcmp(op, "broadcast")) return ncclBroadcast(s, r, n, ncclFloat, 0, comm, st);
  if (!strcmp(op, "reduce")) return ncclReduce(s, r, n, ncclFloat, ncclSum, 0, comm, st);
  if (!strcmp(op, "allgather")) return ncclAllGather(s, r, n / 2, ncclFloat, comm, st);
  if (!strcmp(op, "reducescatter"))
    return ncclReduceScatter(s, r, n / 2, ncclFloat, ncclSum, comm, st);
  if (!strcmp(op, "alltoall")) return ncclAlltoAll(s, r, n / 2, ncclFloat, comm, st);
  if (!strcmp(op, "gather")) return ncclGather(s, r, n / 2, ncclFloat, 0, comm, st);
  if (!strcmp(op, "scatter")) return ncclScatter(s, r, n / 2, ncclFloat, 0, comm, st);
  if (!strcmp(op, "sendrecv")) {
    ncclGroupStart();
    ncclSend(s, n, ncclFloat, 1 - rank, comm, st);
    ncclRecv(r, n, ncclFloat, 1 - rank, comm, st);
    return ncclGroupEnd();
  }
  return ncclInvalidArgument;
}

static ncclResult_t init_nonblocking(ncclComm_t* comm, int n, ncclUniqueId id, int rank) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclResult_t res = ncclCommInitRankConfig(comm, n, id, rank, &cfg);
  if (res != ncclSuccess && res != ncclInProgress) return res;
  ncclResult_t st = ncclInProgress;
  double t0 = now();
  while (st == ncclInProgress && now() - t0 < 60) ncclCommGetAsyncError(*comm, &st);
  return st;
}

/* ---- kill ---------------------------------------------------------------------------------- */

static int kill_rank(int rank, int nranks, ncclUniqueId id, void* arg) {
  (void)arg;
  alarm(60);
  CK(cudaSetDevice(gpu_of(rank)));
  ncclComm_t comm;
  NK(init_nonblocking(&comm, nranks, id, rank));
  float *s, *r;
  CK(cudaMalloc((void**)&s, 2 * COUNT * sizeof(float)));
  CK(cudaMalloc((void**)&r, 2 * COUNT * sizeof(float)));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraphExec_t exec = NULL;
  if (!strcmp(mode_op, "graph")) {
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    NK(run_op(mode_op, comm, rank, s, r, st));
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&exec, g, 0));
  }
  double t_kill = 0;
  for (int iter = 0;; iter++) {
    if (rank == 1 && iter == 5) raise(SIGKILL);
    if (rank == 0 && iter == 5) t_kill = now(); /* rank 1 dies about now */
    ncclResult_t res =
        exec ? (cudaGraphLaunch(exec, st) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError)
             : run_op(mode_op, comm, rank, s, r, st);
    ncclResult_t async = ncclSuccess;
    while (res == ncclSuccess || res == ncclInProgress) { /* the watchdog's poll */
      ncclCommGetAsyncError(comm, &async);
      if (async != ncclSuccess && async != ncclInProgress) break;
      if (cudaStreamQuery(st) == cudaSuccess) break;
      if (t_kill > 0 && now() - t_kill > 20) break;
    }
    if (res == ncclSuccess && async == ncclSuccess) {
      if (t_kill > 0 && now() - t_kill > 20) {
        printf("FAIL kill %s: no error 20 s after rank 1 died\n", mode_op);
        return 1;
      }
      continue;
    }
    double t_err = now() - (t_kill > 0 ? t_kill : now());
    char msg[600];
    snprintf(msg, sizeof msg, "%s", ncclGetLastError(comm));
    double a0 = now();
    ncclResult_t ab = ncclCommAbort(comm);
    double t_abort = now() - a0;
    double d0 = now();
    cudaError_t q;
    while ((q = cudaStreamQuery(st)) == cudaErrorNotReady && now() - d0 < 5) {
    }
    double t_drain = now() - d0;
    /* The sentence names the operation of this iteration (the one waiting on rank 1, or the one
     * called after the failure): each iteration waited for the one before it. A graph replays
     * AllReduce #1; a Send/Recv pair takes two sequence numbers, and its Send may be over (its
     * blocks done) while its Recv waits. */
    char want[48], also[48] = "";
    if (exec) {
      snprintf(want, sizeof want, "AllReduce #1 (");
    } else if (!strcmp(mode_op, "sendrecv")) {
      snprintf(want, sizeof want, "Send #%d (", 2 * iter + 1);
      snprintf(also, sizeof also, "Recv #%d (", 2 * iter + 2);
    } else {
      snprintf(want, sizeof want, " #%d (", iter + 1);
    }
    int named = strstr(msg, want) != NULL || (also[0] && strstr(msg, also) != NULL);
    int ok = (res == ncclRemoteError || async == ncclRemoteError) && t_err < 10 &&
             strstr(msg, "rank 1") != NULL && named && ab == ncclSuccess && t_abort < 2 &&
             q == cudaSuccess && t_drain < 1;
    printf("%s kill %s: error %d/%d %.2f s after the kill, abort %.3f s, stream drained in %.3f s "
           "(%s), expected \"%s\"%s%s%s in: %s\n",
           ok ? "PASS" : "FAIL", mode_op, (int)res, (int)async, t_err, t_abort, t_drain,
           cudaGetErrorString(q), want, also[0] ? " or \"" : "", also, also[0] ? "\"" : "", msg);
    return ok ? 0 : 1;
  }
}

/* ---- threads: abort from another thread ---------------------------------------------------- */

struct aborter {
  ncclComm_t comm;
  int waiting; /* the enqueuing thread is about to wait on its stream */
  double started, took;
  ncclResult_t res;
};

static void* abort_later(void* arg) {
  struct aborter* a = arg;
  double t0 = now();
  while (!__atomic_load_n(&a->waiting, __ATOMIC_ACQUIRE) && now() - t0 < 10) {
  }
  a->started = now();
  a->res = ncclCommAbort(a->comm);
  a->took = now() - a->started;
  return NULL;
}

static int threads_case(void) {
  ncclComm_t comms[2];
  int devs[2] = {gpu_of(0), gpu_of(1)};
  NK(ncclCommInitAll(comms, 2, devs));
  float *s, *r;
  cudaStream_t st;
  CK(cudaSetDevice(0));
  CK(cudaMalloc((void**)&s, COUNT * sizeof(float)));
  CK(cudaMalloc((void**)&r, COUNT * sizeof(float)));
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (int i = 0; i < 3; i++) NK(ncclAllReduce(s, r, COUNT, ncclFloat, ncclSum, comms[0], st));
  struct aborter a = {comms[0], 0, 0, 0, ncclInternalError};
  pthread_t th;
  pthread_create(&th, NULL, abort_later, &a);
  __atomic_store_n(&a.waiting, 1, __ATOMIC_RELEASE);
  cudaError_t e = cudaStreamSynchronize(st);
  double waited = now() - a.started;
  pthread_join(th, NULL);
  NK(ncclCommAbort(comms[1]));
  int ok = e == cudaSuccess && waited < 1.0 && a.res == ncclSuccess && a.took < 2.0;
  printf("%s threads: abort from another thread %.3f s, the blocked stream wait ended %.3f s "
         "after the abort began (%s)\n",
         ok ? "PASS" : "FAIL", a.took, waited, cudaGetErrorString(e));
  return ok ? 0 : 1;
}

/* ---- hang and mismatch reports ------------------------------------------------------------- */

static char logdir[64];

static int report_seen(const char* words, char* line, size_t len) {
  char path[128];
  snprintf(path, sizeof path, "%s/log.%d", logdir, (int)getpid());
  FILE* f = fopen(path, "r");
  int found = 0;
  while (f && !found && fgets(line, (int)len, f)) found = strstr(line, "hang:") != NULL;
  if (f) fclose(f);
  return found && strstr(line, words) != NULL ? 1 : found ? -1 : 0;
}

static int report_rank(int rank, int nranks, ncclUniqueId id, void* arg) {
  const char* words = arg;
  alarm(60);
  CK(cudaSetDevice(gpu_of(rank)));
  ncclComm_t comm;
  NK(init_nonblocking(&comm, nranks, id, rank));
  float* b;
  CK(cudaMalloc((void**)&b, 4 * COUNT * sizeof(float)));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  NK(ncclAllReduce(b, b, COUNT, ncclFloat, ncclSum, comm, st));
  CK(cudaStreamSynchronize(st));
  int mismatch = !strcmp(mode_op, "mismatch");
  if (mismatch || rank == 0)
    NK(ncclAllReduce(b, b, rank == 1 ? 4 * COUNT : COUNT, ncclFloat, ncclSum, comm, st));
  char line[2048] = "";
  int seen = 0;
  double t0 = now();
  while (seen == 0 && now() - t0 < 30) seen = report_seen(words, line, sizeof line);
  ncclCommAbort(comm);
  cudaError_t q;
  double d0 = now();
  while ((q = cudaStreamQuery(st)) == cudaErrorNotReady && now() - d0 < 5) {
  }
  int ok = seen == 1 && q == cudaSuccess;
  printf("%s %s rank %d: %s", ok ? "PASS" : "FAIL", mode_op, rank, line[0] ? line : "no report\n");
  return ok ? 0 : 1;
}

static int report_case(const char* words) {
  snprintf(logdir, sizeof logdir, "/tmp/monel-gpu-fault-%d", (int)getpid());
  mkdir(logdir, 0700);
  char file[128];
  snprintf(file, sizeof file, "%s/log.%%p", logdir);
  setenv("NCCL_DEBUG", "WARN", 1);
  setenv("NCCL_DEBUG_FILE", file, 1);
  setenv("MONEL_HANG_TIMEOUT", "2", 1);
  return mp_run(2, report_rank, (void*)words) ? 1 : 0;
}

/* ---- bad input ----------------------------------------------------------------------------- */

static int expect(const char* what, ncclResult_t got, ncclResult_t want, const char* words) {
  const char* msg = ncclGetLastError(NULL);
  int ok = got == want && strstr(msg, words) != NULL;
  printf("%s badinput %s: %d (%s)\n", ok ? "PASS" : "FAIL", what, (int)got, msg);
  return ok ? 0 : 1;
}

static int badinput_case(void) {
  ncclComm_t comms[2];
  int devs[2] = {0, 1};
  NK(ncclCommInitAll(comms, 2, devs));
  float *d0, *d1;
  cudaStream_t s0, s1;
  CK(cudaSetDevice(1));
  CK(cudaMalloc((void**)&d1, 1024 * sizeof(float)));
  CK(cudaStreamCreate(&s1));
  CK(cudaSetDevice(0));
  CK(cudaMalloc((void**)&d0, 1024 * sizeof(float)));
  CK(cudaStreamCreate(&s0));
  float* host = malloc(1024 * sizeof(float));
  int fails = 0;
  fails += expect("host pointer", ncclAllReduce(host, d0, 1024, ncclFloat, ncclSum, comms[0], s0),
                  ncclInvalidArgument, "is host memory that CUDA does not know");
  fails +=
      expect("buffer of another GPU", ncclAllReduce(d0, d1, 1024, ncclFloat, ncclSum, comms[0], s0),
             ncclInvalidArgument, "is memory of GPU 1");
  fails +=
      expect("stream of another GPU", ncclAllReduce(d0, d0, 1024, ncclFloat, ncclSum, comms[0], s1),
             ncclInvalidArgument, "belongs to GPU 1");
  fails += expect("NULL comm", ncclAllReduce(d0, d0, 1024, ncclFloat, ncclSum, NULL, s0),
                  ncclInvalidArgument, "comm is NULL");
  NK(ncclCommAbort(comms[0]));
  fails += expect("use after abort", ncclAllReduce(d0, d0, 1024, ncclFloat, ncclSum, comms[0], s0),
                  ncclInvalidArgument, "not a live communicator");
  NK(ncclCommDestroy(comms[1]));
  fails += expect("destroyed comm", ncclBroadcast(d1, d1, 4, ncclFloat, 0, comms[1], s1),
                  ncclInvalidArgument, "not a live communicator");
  free(host);
  return fails ? 1 : 0;
}

/* ncclCommInitAll's devices: more than this process sees, or an index past them, fail with a
 * sentence; a list that repeats a GPU gives ranks that share it, and their AllReduce is exact. */
static int devices_case(int ndev) {
  ncclComm_t comms[2] = {NULL, NULL};
  int fails = 0, past[2] = {0, ndev}, same[2] = {0, 0};
  ncclComm_t* many = calloc((size_t)ndev + 1, sizeof *many);
  fails += expect("more ranks than GPUs, no devlist", ncclCommInitAll(many, ndev + 1, NULL),
                  ncclInvalidArgument, "this process sees");
  free(many);
  fails += expect("devlist past the GPUs", ncclCommInitAll(comms, 2, past), ncclInvalidArgument,
                  "devlist[1] is");
  NK(ncclCommInitAll(comms, 2, same));
  float *buf[2], host[1024];
  cudaStream_t st[2];
  CK(cudaSetDevice(0));
  for (int r = 0; r < 2; r++) {
    for (int i = 0; i < 1024; i++) host[i] = (float)((r + 1) * (i % 7 + 1));
    CK(cudaMalloc((void**)&buf[r], sizeof host));
    CK(cudaMemcpy(buf[r], host, sizeof host, cudaMemcpyHostToDevice));
    CK(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking));
  }
  NK(ncclGroupStart());
  for (int r = 0; r < 2; r++)
    NK(ncclAllReduce(buf[r], buf[r], 1024, ncclFloat, ncclSum, comms[r], st[r]));
  NK(ncclGroupEnd());
  int wrong = 0;
  for (int r = 0; r < 2; r++) {
    CK(cudaStreamSynchronize(st[r]));
    CK(cudaMemcpy(host, buf[r], sizeof host, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 1024; i++) wrong += host[i] != (float)(3 * (i % 7 + 1));
    NK(ncclCommDestroy(comms[r]));
    CK(cudaFree(buf[r]));
    CK(cudaStreamDestroy(st[r]));
  }
  printf("%s devices: devlist {0, 0}: AllReduce of 1024 floats on two ranks sharing GPU 0, %d "
         "wrong values\n",
         wrong ? "FAIL" : "PASS", wrong);
  return fails || wrong ? 1 : 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* ranks end with _exit: every line must be out by then */
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  const char* mode = argc > 1 ? argv[1] : "";
  mode_op = argc > 2 ? argv[2] : "allreduce";
  /* No CUDA call before the forks of the process modes. */
  if (!strcmp(mode, "kill")) return mp_run(2, kill_rank, NULL) == 1 ? 0 : 1; /* rank 1 died */
  if (!strcmp(mode, "hang")) {
    mode_op = "hang";
    return report_case("Ranks that have not called it: 1 (host");
  }
  if (!strcmp(mode, "mismatch")) {
    mode_op = "mismatch";
    setenv("MONEL_CHECK_CALLS", "0", 1); /* the hang report's own mismatch line, not the check */
    return report_case("Mismatch:");
  }
  int ndev = 0;
  if (!strcmp(mode, "devices")) {
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
      printf("SKIP test_gpu_fault devices: needs a GPU\n");
      return 0;
    }
    return devices_case(ndev);
  }
  int shared = gpu_of(1) != 1;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || (ndev < 2 && !shared)) {
    printf("SKIP test_gpu_fault %s: needs 2 GPUs\n", mode);
    return 0;
  }
  if (!strcmp(mode, "threads")) return threads_case();
  if (!strcmp(mode, "badinput") && ndev < 2) {
    printf("SKIP test_gpu_fault badinput: needs 2 GPUs\n");
    return 0;
  }
  if (!strcmp(mode, "badinput")) return badinput_case();
  fprintf(stderr, "usage: %s kill OP | threads | hang | mismatch | badinput | devices\n", argv[0]);
  return 2;
}
