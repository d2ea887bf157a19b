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
 *   kill-many T OP
 *                many ranks: run under monelrun, P processes of T rank-threads each (ranks
 *                MONEL_RANK*T + t of P*T), every process a host of its own and on GPU
 *                MONEL_LOCAL_RANK mod the GPU count (all of them on GPU 0 on a machine of one;
 *                under MPS there):
 *                  monelrun -n P --fake-hosts P gpu_test_gpu_fault kill-many T OP
 *                Every thread makes its own nonblocking comm (ncclCommInitRankConfig inside
 *                ncclGroupStart/End) and runs OP (alltoall, allreduce or sendrecv: a ring
 *                exchange) in a loop on a stream of its own, polling the stream and
 *                ncclCommGetAsyncError like PyTorch's watchdog. After 20 iterations every rank
 *                joins a 1-element AllReduce (its sum proves every rank finished 20); when one
 *                of its ranks has run 22, the process with MONEL_RANK 1 notes the time in a file
 *                (MONEL_TEST_KILL_FILE, or /tmp/monel-kill-many-<NCCL_COMM_ID>, left behind: no
 *                process knows when the last survivor has read it) and SIGKILLs itself: its T
 *                ranks die at once, mid-OP. Every surviving rank must see
 *                ncclRemoteError within 10 s of that time, with ncclGetLastError(comm) naming a
 *                rank of the dead process and its own operation of that moment (sequence
 *                number), then ncclCommAbort within 2 s and its stream drained within 1 s.
 *                Without a GPU (or with MONEL_ENGINE=cpu) the same runs on the CPU engine with
 *                ncclMemAlloc buffers (the calls complete before they return; nothing to drain).
 *                Output: each surviving process prints one line, "PASS kill-many OP: process p
 *                (ranks a..b of N, GPU): T of T ranks saw ncclRemoteError naming ...", or FAIL
 *                with a FAIL line per failing rank (MONEL_TEST_VERBOSE=1: a line per rank), and
 *                exits non-zero on failure; the killed process prints nothing. A process not
 *                done within MONEL_TEST_TIMEOUT s (240) prints where each of its ranks is.
 *                What counts: P-1 PASS lines and no FAIL line in monelrun's output (lines
 *                prefixed "[p] "). monelrun stops every rank when one fails and exits with its
 *                status (128 + 9 for a SIGKILL), so the victim dies in a forked worker whose
 *                parent, monelrun's child, then exits 0: the survivors run on and monelrun's
 *                status is 0 exactly when no survivor failed (tests/gpu/run checks both).
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
#include <ctype.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* ---- kill-many: a process of many rank-threads killed, at many ranks ----------------------- */

#define KM_BARRIER_AT 20 /* iterations of OP before the barrier AllReduce */
#define KM_KILL_AT    22 /* the victim process dies when one of its ranks has run this many */
#define KM_MAXT       64
#define KM_VICTIM     1 /* MONEL_RANK of the process that kills itself */

struct km_rank {
  int rank;
  int phase; /* what the thread is doing, for the process's timeout line */
  int ok;
  int iters; /* iterations of OP it called */
  ncclResult_t res, async;
  double t_err, t_abort, t_drain;
  int stream_err; /* cudaStreamQuery's answer after the abort */
  char want[64], msg[1024];
};

static const char* const km_phases[] = {"start",   "init",  "setup", "loop",
                                        "barrier", "abort", "drain", "done"};
enum { KM_START, KM_INIT, KM_SETUP, KM_LOOP, KM_BARRIER, KM_ABORT, KM_DRAIN, KM_DONE };

static struct {
  int nprocs, proc, T, nranks, device, dev;
  size_t total; /* floats in each buffer of a rank */
  const char* op;
  ncclUniqueId id;
  char killfile[160];
  double t_kill; /* read back from killfile; 0 while unknown */
  int dying;
  struct km_rank r[KM_MAXT];
  int ready; /* rank-threads past their set-up (which may wait for the whole GPU) or gone */
  pthread_mutex_t ready_mu;
  pthread_cond_t ready_cv;
} km = {.ready_mu = PTHREAD_MUTEX_INITIALIZER, .ready_cv = PTHREAD_COND_INITIALIZER};
static void km_arrive(void) { /* and km_wait_all: the process's rank-threads set up first */
  pthread_mutex_lock(&km.ready_mu);
  km.ready++;
  pthread_cond_broadcast(&km.ready_cv);
  pthread_mutex_unlock(&km.ready_mu);
}
static void km_wait_all(void) {
  pthread_mutex_lock(&km.ready_mu);
  while (km.ready < km.T) pthread_cond_wait(&km.ready_cv, &km.ready_mu);
  pthread_mutex_unlock(&km.ready_mu);
}

static int km_env(const char* name, int def) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : def;
}

/* The victim's last act: the time of its death, where the survivors can read it (one machine:
 * CLOCK_MONOTONIC is the same clock in every process), then SIGKILL to the whole process. */
static void km_die(void) {
  if (__atomic_exchange_n(&km.dying, 1, __ATOMIC_ACQ_REL)) return;
  char tmp[200], line[64];
  snprintf(tmp, sizeof tmp, "%s.%d", km.killfile, (int)getpid());
  int len = snprintf(line, sizeof line, "%.9f\n", now());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd >= 0) {
    if (write(fd, line, (size_t)len) != len) {
    }
    close(fd);
    rename(tmp, km.killfile);
  }
  raise(SIGKILL);
}

/* The victim's time of death, or 0 while it lives. */
static double km_kill_time(void) {
  double t;
  __atomic_load(&km.t_kill, &t, __ATOMIC_ACQUIRE);
  if (t > 0) return t;
  FILE* f = fopen(km.killfile, "r");
  if (f == NULL) return 0;
  if (fscanf(f, "%lf", &t) != 1) t = 0;
  fclose(f);
  if (t > 0) __atomic_store(&km.t_kill, &t, __ATOMIC_RELEASE);
  return t;
}

static ncclResult_t km_op(ncclComm_t comm, int rank, float* s, float* r, cudaStream_t st) {
  int n = km.nranks;
  if (!strcmp(km.op, "alltoall")) return ncclAlltoAll(s, r, km.total / n, ncclFloat, comm, st);
  if (!strcmp(km.op, "allreduce"))
    return ncclAllReduce(s, r, km.total, ncclFloat, ncclSum, comm, st);
  ncclGroupStart(); /* sendrecv: a ring exchange */
  ncclSend(s, km.total, ncclFloat, (rank + 1) % n, comm, st);
  ncclRecv(r, km.total, ncclFloat, (rank + n - 1) % n, comm, st);
  return ncclGroupEnd();
}

/* The watchdog's poll of one operation: until the stream is done (on the CPU engine the call
 * itself completed it), the comm reports an error, or 20 s have passed since the victim died. */
static int km_wait(ncclComm_t comm, cudaStream_t st, ncclResult_t res, ncclResult_t* async) {
  double next_look = 0;
  *async = ncclSuccess;
  while (res == ncclSuccess || res == ncclInProgress) {
    ncclCommGetAsyncError(comm, async);
    if (*async != ncclSuccess && *async != ncclInProgress) return 0;
    if (!km.device || cudaStreamQuery(st) == cudaSuccess) return 0;
    double t = now();
    if (t >= next_look) {
      double tk = km_kill_time();
      if (tk > 0 && t - tk > 20) return 1;
      next_look = t + 0.25;
    }
    usleep(100);
  }
  return 0;
}

static int km_named_rank(const char* msg, int lo, int hi) {
  for (const char* p = strstr(msg, "rank "); p; p = strstr(p + 1, "rank ")) {
    char* end;
    long v = strtol(p + 5, &end, 10);
    if (end != p + 5 && v >= lo && v <= hi) return (int)v;
  }
  return -1;
}

/* "#seq" followed by a space or "(" (the watch: "AlltoAll #23 (count ..."; the CPU engine:
 * "AlltoAll #23 on rank 5: ..."). */
static int km_named_seq(const char* msg, int seq) {
  char w[24];
  int l = snprintf(w, sizeof w, "#%d", seq);
  for (const char* p = strstr(msg, w); p; p = strstr(p + 1, w))
    if (p[l] == ' ' || p[l] == '(') return 1;
  return 0;
}

static void* km_thread(void* arg) {
  struct km_rank* k = arg;
  int n = km.nranks, me = k->rank, lo = KM_VICTIM * km.T, hi = lo + km.T - 1;
  int victim = me >= lo && me <= hi, per = strcmp(km.op, "sendrecv") ? 1 : 2;
  snprintf(k->msg, sizeof k->msg, "(no error seen)");
  k->phase = KM_INIT;
  if (km.device && cudaSetDevice(km.dev) != cudaSuccess) {
    snprintf(k->msg, sizeof k->msg, "cudaSetDevice(%d) failed", km.dev);
    __atomic_store_n(&k->phase, KM_DONE, __ATOMIC_RELEASE);
    km_arrive();
    return NULL;
  }
  ncclComm_t comm = NULL;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclResult_t res = ncclGroupStart();
  if (res == ncclSuccess) {
    res = ncclCommInitRankConfig(&comm, n, km.id, me, &cfg);
    ncclResult_t e = ncclGroupEnd();
    if (res == ncclSuccess || res == ncclInProgress) res = e;
  }
  while (res == ncclInProgress) {
    usleep(1000);
    if (ncclCommGetAsyncError(comm, &res) != ncclSuccess) break;
  }
  if (res != ncclSuccess) {
    snprintf(k->msg, sizeof k->msg, "init: %s: %s", ncclGetErrorString(res),
             ncclGetLastError(comm));
    __atomic_store_n(&k->phase, KM_DONE, __ATOMIC_RELEASE);
    km_arrive();
    return NULL;
  }
  k->phase = KM_SETUP;
  size_t bytes = km.total * sizeof(float);
  float *s = NULL, *r = NULL;
  int* b = NULL; /* the barrier: b[0] = 1 on every rank, b[1] their sum */
  int one = 1, sum = 0;
  cudaStream_t st = NULL;
  if (km.device) {
    CK(cudaMalloc((void**)&s, bytes));
    CK(cudaMalloc((void**)&r, bytes));
    CK(cudaMalloc((void**)&b, 2 * sizeof(int)));
    CK(cudaMemset(s, 0, bytes));
    CK(cudaMemcpy(b, &one, sizeof one, cudaMemcpyHostToDevice));
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  } else {
    NK(ncclMemAlloc((void**)&s, bytes));
    NK(ncclMemAlloc((void**)&r, bytes));
    NK(ncclMemAlloc((void**)&b, 2 * sizeof(int)));
    memset(s, 0, bytes);
    b[0] = 1;
  }
  km_arrive();
  km_wait_all();
  int late = 0, iter, in_barrier = 0;
  ncclResult_t async = ncclSuccess;
  for (iter = 0;; iter++) {
    if (iter == KM_BARRIER_AT) { /* every rank has finished KM_BARRIER_AT operations */
      k->phase = KM_BARRIER;
      in_barrier = 1;
      res = ncclAllReduce(b, b + 1, 1, ncclInt32, ncclSum, comm, st);
      late = km_wait(comm, st, res, &async);
      if (res != ncclSuccess || async != ncclSuccess || late) break;
      in_barrier = 0;
      if (km.device)
        CK(cudaMemcpy(&sum, b + 1, sizeof sum, cudaMemcpyDeviceToHost));
      else
        sum = b[1];
      if (sum != n) {
        snprintf(k->msg, sizeof k->msg, "the barrier AllReduce gave %d, not %d", sum, n);
        break;
      }
    }
    if (victim && iter == KM_KILL_AT) km_die();
    k->phase = KM_LOOP;
    k->iters = iter + 1;
    res = km_op(comm, me, s, r, st);
    late = km_wait(comm, st, res, &async);
    if (res != ncclSuccess || async != ncclSuccess || late) break;
  }
  k->res = res, k->async = async;
  double t_seen = now(), tk = km_kill_time();
  k->t_err = tk > 0 ? t_seen - tk : -1;
  if (res != ncclSuccess || async != ncclSuccess)
    snprintf(k->msg, sizeof k->msg, "%s", ncclGetLastError(comm));
  k->phase = KM_ABORT;
  double a0 = now();
  ncclResult_t ab = ncclCommAbort(comm);
  k->t_abort = now() - a0;
  k->phase = KM_DRAIN;
  cudaError_t q = cudaSuccess;
  double d0 = now();
  while (km.device && (q = cudaStreamQuery(st)) == cudaErrorNotReady && now() - d0 < 5) {
  }
  k->t_drain = now() - d0, k->stream_err = (int)q;
  /* The operation of the failing iteration: the sentence names it (each iteration waited for the
   * one before it; the barrier took a sequence number after KM_BARRIER_AT iterations). */
  int seq = iter * per + 1 + (iter >= KM_BARRIER_AT), also = per == 2;
  if (in_barrier) seq = KM_BARRIER_AT * per + 1, also = 0;
  if (also)
    snprintf(k->want, sizeof k->want, "#%d or #%d and a rank of %d..%d", seq, seq + 1, lo, hi);
  else
    snprintf(k->want, sizeof k->want, "#%d and a rank of %d..%d", seq, lo, hi);
  int named = km_named_seq(k->msg, seq) || (also && km_named_seq(k->msg, seq + 1));
  k->ok = !late && tk > 0 && (res == ncclRemoteError || async == ncclRemoteError) &&
          k->t_err >= 0 && k->t_err < 10 && km_named_rank(k->msg, lo, hi) >= 0 && named &&
          ab == ncclSuccess && k->t_abort < 2 && q == cudaSuccess && k->t_drain < 1;
  if (!k->ok && late) snprintf(k->msg, sizeof k->msg, "no error 20 s after the victim died");
  if (!k->ok && tk <= 0 && (res != ncclSuccess || async != ncclSuccess)) {
    static const char pre[] = "an error before the victim died: ";
    memmove(k->msg + sizeof pre - 1, k->msg, sizeof k->msg - sizeof pre);
    memcpy(k->msg, pre, sizeof pre - 1);
    k->msg[sizeof k->msg - 1] = 0;
  }
  /* GPU buffers stay until the process exits: cudaFree waits for the whole device, and so for
   * the kernels of this process's other ranks until they have seen the error too. */
  if (!km.device) ncclMemFree(s), ncclMemFree(r), ncclMemFree(b);
  __atomic_store_n(&k->phase, KM_DONE, __ATOMIC_RELEASE);
  return NULL;
}

static int kill_many(int T, const char* op) {
  km.nprocs = km_env("MONEL_NRANKS", 0), km.proc = km_env("MONEL_RANK", -1), km.T = T;
  km.op = op;
  if (km.nprocs < 2 || km.proc < 0 || km.proc >= km.nprocs || !getenv("NCCL_COMM_ID")) {
    fprintf(stderr, "kill-many runs under monelrun, 2 processes or more: monelrun -n P "
                    "--fake-hosts P gpu_test_gpu_fault kill-many T OP\n");
    return 2;
  }
  if (T < 1 || T > KM_MAXT ||
      (strcmp(op, "alltoall") && strcmp(op, "allreduce") && strcmp(op, "sendrecv"))) {
    fprintf(stderr, "kill-many: T is 1..%d, OP alltoall, allreduce or sendrecv\n", KM_MAXT);
    return 2;
  }
  km.nranks = km.nprocs * T;
  const char* kf = getenv("MONEL_TEST_KILL_FILE");
  if (kf && *kf) {
    snprintf(km.killfile, sizeof km.killfile, "%s", kf);
  } else { /* one name per job: monelrun gives each job a port of its own */
    int l = snprintf(km.killfile, sizeof km.killfile, "/tmp/monel-kill-many-");
    for (const char* p = getenv("NCCL_COMM_ID"); *p && l + 1 < (int)sizeof km.killfile; p++)
      km.killfile[l++] = (char)(isalnum((unsigned char)*p) ? *p : '_');
    km.killfile[l] = 0;
  }
  /* No thread and no CUDA call before this fork. The victim's worker dies by SIGKILL; its parent,
   * monelrun's child, then exits 0: monelrun stops every rank when one fails, and would take the
   * survivors down before they report. */
  if (km.proc == 0) unlink(km.killfile); /* a stale one: the victim writes it much later */
  if (km.proc == KM_VICTIM) {
    fflush(stdout);
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
      printf("FAIL kill-many %s: fork: %s\n", op, strerror(errno));
      return 1;
    }
    if (pid > 0) {
      int st = 0;
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      struct stat sb;
      if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && stat(km.killfile, &sb) == 0) _exit(0);
      if (WIFEXITED(st) && WEXITSTATUS(st) != 0) _exit(WEXITSTATUS(st));
      printf("FAIL kill-many %s: the process of ranks %d..%d ended before its planned death "
             "(status 0x%x)\n",
             op, KM_VICTIM * T, KM_VICTIM * T + T - 1, st);
      _exit(1);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
  }
  const char* engine = getenv("MONEL_ENGINE");
  int ndev = 0;
  if (!(engine && !strcmp(engine, "cpu")) && cudaGetDeviceCount(&ndev) != cudaSuccess) ndev = 0;
  (void)cudaGetLastError();
  km.device = ndev > 0;
  km.dev = km.device ? km_env("MONEL_LOCAL_RANK", km.proc) % ndev : -1;
  km.total = km.device ? (size_t)1 << 20 : (size_t)1 << 16;
  ncclResult_t res = ncclGetUniqueId(&km.id); /* NCCL_COMM_ID's: the job's */
  if (res != ncclSuccess) {
    printf("FAIL kill-many %s: ncclGetUniqueId: %s\n", op, ncclGetLastError(NULL));
    return 1;
  }
  pthread_t th[KM_MAXT];
  for (int t = 0; t < T; t++) {
    km.r[t].rank = km.proc * T + t;
    if (pthread_create(&th[t], NULL, km_thread, &km.r[t]) != 0) {
      printf("FAIL kill-many %s: cannot start rank-thread %d\n", op, t);
      _exit(1);
    }
  }
  /* The process's own watchdog: every rank-thread done within the limit, or a line saying where
   * each one is. */
  double limit = km_env("MONEL_TEST_TIMEOUT", 240), t0 = now();
  for (;;) {
    int done = 0;
    for (int t = 0; t < T; t++)
      done += __atomic_load_n(&km.r[t].phase, __ATOMIC_ACQUIRE) == KM_DONE;
    if (done == T) break;
    if (now() - t0 > limit) {
      char where[2048];
      int l = 0;
      for (int t = 0; t < T && l < (int)sizeof where - 64; t++)
        l += snprintf(where + l, sizeof where - (size_t)l, "%s rank %d: %s (%d iterations)",
                      t ? ";" : "", km.r[t].rank, km_phases[km.r[t].phase], km.r[t].iters);
      printf("FAIL kill-many %s: process %d: not done within %.0f s:%s\n", op, km.proc, limit,
             where);
      fflush(stdout);
      _exit(1);
    }
    usleep(100 * 1000);
  }
  for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
  int bad = 0;
  double e_max = 0, a_max = 0, d_max = 0;
  for (int t = 0; t < T; t++) {
    struct km_rank* k = &km.r[t];
    if (!k->ok) bad++;
    if (k->t_err > e_max) e_max = k->t_err;
    if (k->t_abort > a_max) a_max = k->t_abort;
    if (k->t_drain > d_max) d_max = k->t_drain;
    if (!k->ok && !k->want[0]) /* it never got to the loop */
      printf("FAIL kill-many %s rank %d: %s\n", op, k->rank, k->msg);
    else if (!k->ok || getenv("MONEL_TEST_VERBOSE"))
      printf("%s kill-many %s rank %d: error %d/%d %.2f s after the kill (%d iterations), abort "
             "%.3f s, drained in %.3f s (%s), expected \"%s\" in: %s\n",
             k->ok ? "PASS" : "FAIL", op, k->rank, (int)k->res, (int)k->async, k->t_err, k->iters,
             k->t_abort, k->t_drain, cudaGetErrorName((cudaError_t)k->stream_err), k->want, k->msg);
  }
  int lo = KM_VICTIM * T;
  printf("%s kill-many %s: process %d (ranks %d..%d of %d, %s): %d of %d ranks saw "
         "ncclRemoteError naming a rank of %d..%d (the killed process) and their own operation, "
         "at most %.2f s after the kill; abort at most %.3f s, streams drained within %.3f s; "
         "rank %d: %s\n",
         bad ? "FAIL" : "PASS", op, km.proc, km.proc * T, km.proc * T + T - 1, km.nranks,
         km.device ? "GPU" : "CPU engine", T - bad, T, lo, lo + T - 1, e_max, a_max, d_max,
         km.r[0].rank, km.r[0].msg);
  fflush(stdout);
  _exit(bad ? 1 : 0);
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
  if (!strcmp(mode, "kill-many"))
    return kill_many(argc > 2 ? atoi(argv[2]) : 0, argc > 3 ? argv[3] : "alltoall");
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
  fprintf(stderr,
          "usage: %s kill OP | kill-many T OP | threads | hang | mismatch | badinput | devices\n",
          argv[0]);
  return 2;
}
