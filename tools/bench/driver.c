/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * driver.c - the shared driver of the *_perf programs.
 *
 * Ranks: this process runs -t threads, each driving -g ranks (one GPU each, or
 * CPU ranks without GPUs). Under monelrun (MONEL_RANK / MONEL_NRANKS set) the
 * processes together hold nprocs * t * g ranks; each process gets the same
 * unique id through NCCL_COMM_ID. Times and #wrong are combined across ranks
 * with an ncclAllReduce on doubles, so no MPI is needed.
 */
#define _GNU_SOURCE
#include "driver.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cuda_rt.h"
#include "run.h"

struct bench_world g_bench;

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_fail(struct bench_rank* r, const char* what, ncclResult_t res) {
  const char* last = r && r->comm ? ncclGetLastError(r->comm) : ncclGetLastError(NULL);
  char on[32] = ""; /* no rank yet in ncclGetUniqueId */
  if (r) snprintf(on, sizeof on, " on rank %d", r->rank);
  fprintf(stderr, "# %s failed%s: %s: %s\n", what, on, ncclGetErrorString(res),
          last && *last ? last : "(no detail)");
  printf("# Error: %s failed%s: %s: %s\n", what, on, ncclGetErrorString(res),
         last && *last ? last : "(no detail)");
  fflush(stdout);
  fflush(stderr);
  _exit(2);
}

static void on_timeout(int sig) {
  static const char msg[] = "# Error: timeout (-T) reached, aborting\n";
  (void)sig;
  if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0) _exit(3);
  _exit(3);
}

/* Bytes each buffer needs on this rank, over every type swept. */
static size_t buffer_bytes(int rank) {
  const struct bench_opts* o = &g_bench.opts;
  size_t best = 64;
  for (int t = 0; t < ncclNumTypes; t++) {
    if (!o->all_types && t != (int)o->type) continue;
    size_t ts = bench_type_size((ncclDataType_t)t);
    struct bench_counts c;
    g_bench.coll->get_counts(o->max_bytes / ts, g_bench.nranks, rank, &c);
    size_t n = c.send_count > c.recv_count ? c.send_count : c.recv_count;
    if (c.send_count + c.send_inplace > n) n = c.send_count + c.send_inplace;
    if (c.recv_count + c.recv_inplace > n) n = c.recv_count + c.recv_inplace;
    if (n * ts > best) best = n * ts;
  }
  return (best + 4095) & ~(size_t)4095;
}

static void register_buffers(struct bench_thread* t) {
  int mode = g_bench.opts.local_register;
  if (mode == 1) {
    for (int j = 0; j < t->nranks; j++) {
      struct bench_rank* r = &t->ranks[j];
      if (ncclCommRegister(r->comm, r->sendbuff, r->bytes, &r->reg[0]) != ncclSuccess ||
          ncclCommRegister(r->comm, r->recvbuff, r->bytes, &r->reg[1]) != ncclSuccess)
        fprintf(stderr, "# Rank %d: ncclCommRegister failed; running unregistered\n", r->rank);
    }
  } else if (mode == 2) {
    typedef ncclResult_t (*win_reg_t)(ncclComm_t, void*, size_t, ncclWindow_t*, int);
    win_reg_t reg = (win_reg_t)bench_lib_symbol("ncclCommWindowRegister");
    if (!reg) {
      fprintf(stderr, "# ncclCommWindowRegister is not available; -R 2 ignored\n");
      return;
    }
    for (int b = 0; b < 2; b++) {
      ncclGroupStart();
      for (int j = 0; j < t->nranks; j++) {
        struct bench_rank* r = &t->ranks[j];
        reg(r->comm, b ? r->recvbuff : r->sendbuff, r->bytes, &r->win[b], NCCL_WIN_COLL_SYMMETRIC);
      }
      if (ncclGroupEnd() != ncclSuccess)
        fprintf(stderr, "# symmetric registration failed; running unregistered\n");
    }
  }
}

static void deregister_buffers(struct bench_thread* t) {
  typedef ncclResult_t (*win_dereg_t)(ncclComm_t, ncclWindow_t);
  win_dereg_t dereg = (win_dereg_t)bench_lib_symbol("ncclCommWindowDeregister");
  for (int j = 0; j < t->nranks; j++) {
    struct bench_rank* r = &t->ranks[j];
    for (int b = 0; b < 2; b++) {
      if (r->reg[b]) ncclCommDeregister(r->comm, r->reg[b]);
      if (r->win[b] && dereg) dereg(r->comm, r->win[b]);
    }
  }
}

static void setup_rank(struct bench_thread* t, int j) {
  struct bench_rank* r = &t->ranks[j];
  const struct bench_opts* o = &g_bench.opts;
  int local = t->tid * o->ngpus + j;
  r->rank = g_bench.proc * o->nthreads * o->ngpus + local;
  r->dev = g_bench.local_proc * o->nthreads * o->ngpus + local;
  if (bench_cuda_set_device(r->dev) != 0) bench_fail(r, "cudaSetDevice", ncclSystemError);
  if (!o->stream_null && bench_cuda_stream_create(&r->stream) != 0)
    bench_fail(r, "cudaStreamCreate", ncclSystemError);
  r->bytes = buffer_bytes(r->rank);
  ncclResult_t res;
  if ((res = ncclMemAlloc(&r->sendbuff, r->bytes)) != ncclSuccess ||
      (res = ncclMemAlloc(&r->recvbuff, r->bytes)) != ncclSuccess ||
      (res = ncclMemAlloc(&r->statbuf, 64)) != ncclSuccess)
    bench_fail(r, "ncclMemAlloc", res);
  r->host = malloc(r->bytes);
  if (!r->host) bench_fail(r, "malloc", ncclSystemError);
  char host[64], desc[300];
  gethostname(host, sizeof(host));
  host[sizeof(host) - 1] = 0;
  bench_device_desc(r->dev, desc, sizeof(desc));
  pthread_mutex_lock(&g_bench.print_lock);
  printf("#  Rank %2d Group %2d Pid %6d on %10s device %s\n", r->rank, 0, (int)getpid(), host,
         desc);
  pthread_mutex_unlock(&g_bench.print_lock);
}

static void init_comms(struct bench_thread* t) {
  ncclResult_t res;
  if (t->nranks > 1) ncclGroupStart();
  for (int j = 0; j < t->nranks; j++) {
    struct bench_rank* r = &t->ranks[j];
    bench_cuda_set_device(r->dev);
    res = ncclCommInitRank(&r->comm, g_bench.nranks, g_bench.id, r->rank);
    if (res != ncclSuccess && res != ncclInProgress) bench_fail(r, "ncclCommInitRank", res);
  }
  if (t->nranks > 1 && (res = ncclGroupEnd()) != ncclSuccess)
    bench_fail(&t->ranks[0], "ncclCommInitRank (group)", res);
}

static void* thread_main(void* arg) {
  struct bench_thread* t = arg;
  for (int j = 0; j < t->nranks; j++) setup_rank(t, j);
  pthread_barrier_wait(&g_bench.barrier);
  init_comms(t);
  register_buffers(t);
  pthread_barrier_wait(&g_bench.barrier);
  bench_sweep(t);
  deregister_buffers(t);
  for (int j = 0; j < t->nranks; j++) {
    struct bench_rank* r = &t->ranks[j];
    ncclCommDestroy(r->comm);
    ncclMemFree(r->sendbuff);
    ncclMemFree(r->recvbuff);
    ncclMemFree(r->statbuf);
    free(r->host);
    bench_cuda_stream_destroy(r->stream);
  }
  return NULL;
}

static void print_preamble(void) {
  const struct bench_opts* o = &g_bench.opts;
  int version = 0;
  ncclGetVersion(&version);
  if (g_bench.proc != 0) return;
  printf("# nccl-tests compatible: Monel bench, nccl-headers=%d nccl-library=%d\n",
         NCCL_VERSION_CODE, version);
  printf("# nccl-tests compatible: %s (%s)\n", g_bench.coll->name,
         bench_cuda_active() ? "GPU buffers, CUDA streams" : "host buffers, wall-clock timing");
  printf("# Collective test starting: %s\n", g_bench.coll->name);
  printf("# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %g(%s) warmup iters: %d "
         "iters: %d agg iters: %d validation: %d graph: %d\n",
         o->nthreads, o->ngpus, o->min_bytes, o->max_bytes,
         o->step_factor > 1.0 ? o->step_factor : (double)o->step_bytes,
         o->step_factor > 1.0 ? "factor" : "bytes", o->warmup, o->iters, o->agg_iters, o->check,
         o->graph);
  printf("#\n# Using devices\n");
  fflush(stdout);
}

static void note_ignored_flags(void) {
  const struct bench_opts* o = &g_bench.opts;
  if (g_bench.proc != 0) return;
  if (!bench_cuda_active() && o->graph)
    fprintf(stderr, "# -G (CUDA graph) needs GPUs; running without graphs\n");
  if (o->parallel_init)
    fprintf(stderr, "# -p accepted: ranks always initialize in parallel here\n");
}

static int world_setup(const struct bench_coll* coll, int argc, char** argv) {
  const char* prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
  g_bench.coll = coll;
  bench_parse_args(&g_bench.opts, prog, argc, argv);
  bench_cuda_load();
  const char* np = getenv("MONEL_NRANKS");
  const char* pr = getenv("MONEL_RANK");
  const char* lr = getenv("MONEL_LOCAL_RANK");
  g_bench.nprocs = np ? atoi(np) : 1;
  g_bench.proc = pr ? atoi(pr) : 0;
  g_bench.local_proc = lr ? atoi(lr) : g_bench.proc;
  if (g_bench.nprocs < 1) g_bench.nprocs = 1;
  g_bench.nranks = g_bench.nprocs * g_bench.opts.nthreads * g_bench.opts.ngpus;
  if (coll->pow2_ranks && (g_bench.nranks & (g_bench.nranks - 1))) {
    fprintf(stderr, "%s needs a power-of-two number of ranks (got %d)\n", coll->name,
            g_bench.nranks);
    return 1;
  }
  if (coll->has_root && !g_bench.opts.all_roots &&
      (g_bench.opts.root < 0 || g_bench.opts.root >= g_bench.nranks)) {
    fprintf(stderr, "invalid root %d for %d ranks\n", g_bench.opts.root, g_bench.nranks);
    return 1;
  }
  if (g_bench.nprocs > 1 && !getenv("NCCL_COMM_ID")) {
    fprintf(stderr, "several processes need NCCL_COMM_ID (start them with monelrun)\n");
    return 1;
  }
  ncclResult_t res = ncclGetUniqueId(&g_bench.id);
  if (res != ncclSuccess) bench_fail(NULL, "ncclGetUniqueId", res);
  return 0;
}

int bench_main(const struct bench_coll* coll, int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (world_setup(coll, argc, argv) != 0) return 1;
  const struct bench_opts* o = &g_bench.opts;
  print_preamble();
  note_ignored_flags();
  if (o->timeout > 0) signal(SIGALRM, on_timeout);
  pthread_mutex_init(&g_bench.print_lock, NULL);
  pthread_barrier_init(&g_bench.barrier, NULL, (unsigned)o->nthreads);
  struct bench_thread* threads = calloc((size_t)o->nthreads, sizeof(*threads));
  pthread_t* ids = calloc((size_t)o->nthreads, sizeof(*ids));
  for (int i = 0; i < o->nthreads; i++) {
    threads[i].tid = i;
    threads[i].nranks = o->ngpus;
    threads[i].ranks = calloc((size_t)o->ngpus, sizeof(struct bench_rank));
    pthread_create(&ids[i], NULL, thread_main, &threads[i]);
  }
  for (int i = 0; i < o->nthreads; i++) pthread_join(ids[i], NULL);
  /* Thread 0 of process 0 holds the global figures (rank 0). */
  struct bench_thread* t0 = &threads[0];
  int status = t0->wrong_total > 0 ? 1 : 0;
  if (g_bench.proc == 0) {
    printf("# Out of bounds values : %ld %s\n", t0->wrong_total, status ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g \n", t0->bw_count ? t0->bw_sum / t0->bw_count : 0.0);
    printf("#\n# Collective test concluded: %s\n", coll->name);
  }
  for (int i = 0; i < o->nthreads; i++) free(threads[i].ranks);
  free(threads);
  free(ids);
  return status;
}
