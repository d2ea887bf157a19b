/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sweep.c - one thread's sweep: sizes x types x ops x roots, each timed
 * out-of-place and in-place, checked exactly, and printed by global rank 0.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_rt.h"
#include "run.h"

enum { poison_byte = 0x7B };

static void make_calls(struct bench_thread* t, struct bench_call* calls, size_t count,
                       ncclDataType_t type, ncclRedOp_t op, int root, int inplace) {
  size_t ts = bench_type_size(type);
  for (int j = 0; j < t->nranks; j++) {
    struct bench_rank* r = &t->ranks[j];
    struct bench_call* c = &calls[j];
    memset(c, 0, sizeof(*c));
    g_bench.coll->get_counts(count, g_bench.nranks, r->rank, &c->counts);
    c->type = type;
    c->op = op;
    c->root = root;
    c->rank = r->rank;
    c->nranks = g_bench.nranks;
    c->comm = r->comm;
    c->stream = r->stream;
    char* rb = r->recvbuff;
    c->sendbuff = inplace ? rb + c->counts.send_inplace * ts : r->sendbuff;
    c->recvbuff = inplace ? rb + c->counts.recv_inplace * ts : r->recvbuff;
  }
}

static void sync_all(struct bench_thread* t) {
  for (int j = 0; j < t->nranks; j++)
    if (bench_cuda_stream_sync(t->ranks[j].stream) != 0)
      bench_fail(&t->ranks[j], "cudaStreamSynchronize", ncclUnhandledCudaError);
}

/* One iteration: every step is a group over this thread's ranks. */
static void launch(struct bench_thread* t, struct bench_call* calls) {
  const struct bench_coll* coll = g_bench.coll;
  int nsteps = coll->nsteps ? coll->nsteps(g_bench.nranks) : 1;
  for (int s = 0; s < nsteps; s++) {
    ncclGroupStart();
    for (int a = 0; a < g_bench.opts.agg_iters; a++) {
      for (int j = 0; j < t->nranks; j++) {
        ncclResult_t res = coll->run(&calls[j], s);
        if (res != ncclSuccess && res != ncclInProgress) bench_fail(&t->ranks[j], coll->name, res);
      }
    }
    ncclResult_t res = ncclGroupEnd();
    if (res != ncclSuccess && res != ncclInProgress) bench_fail(&t->ranks[0], coll->name, res);
  }
}

static double graph_loop(struct bench_thread* t, struct bench_call* calls) {
  const struct bench_opts* o = &g_bench.opts;
  void* exec[t->nranks];
  for (int j = 0; j < t->nranks; j++)
    if (bench_graph_begin(t->ranks[j].stream) != 0)
      bench_fail(&t->ranks[j], "cudaStreamBeginCapture", ncclUnhandledCudaError);
  for (int it = 0; it < o->iters; it++) launch(t, calls);
  for (int j = 0; j < t->nranks; j++)
    if (bench_graph_end(t->ranks[j].stream, &exec[j]) != 0)
      bench_fail(&t->ranks[j], "cudaStreamEndCapture", ncclUnhandledCudaError);
  sync_all(t);
  pthread_barrier_wait(&g_bench.barrier);
  double t0 = bench_now();
  for (int g = 0; g < o->graph; g++)
    for (int j = 0; j < t->nranks; j++) bench_graph_launch(exec[j], t->ranks[j].stream);
  sync_all(t);
  double sec = bench_now() - t0;
  for (int j = 0; j < t->nranks; j++) bench_graph_destroy(exec[j]);
  return sec / ((double)o->graph * o->iters * o->agg_iters);
}

/* Seconds per operation (or CPU seconds with -C). */
static double combine(struct bench_thread* t, double mine, ncclRedOp_t op);

static double timed_loop(struct bench_thread* t, struct bench_call* calls) {
  const struct bench_opts* o = &g_bench.opts;
  if (o->graph > 0 && bench_cuda_active() && !o->stream_null) return graph_loop(t, calls);
  /* One untimed call, then every rank lines up, so that no rank's clock
   * includes another's late start (printing the previous line, for instance). */
  launch(t, calls);
  sync_all(t);
  (void)combine(t, 0.0, ncclSum);
  pthread_barrier_wait(&g_bench.barrier);
  double t0 = bench_now();
  for (int it = 0; it < o->iters; it++) {
    launch(t, calls);
    if (o->blocking) sync_all(t);
  }
  double cpu = bench_now() - t0;
  sync_all(t);
  double sec = o->report_cputime ? cpu : bench_now() - t0;
  return sec / ((double)o->iters * o->agg_iters);
}

static void fill_inputs(struct bench_thread* t, struct bench_call* calls) {
  for (int j = 0; j < t->nranks; j++) {
    struct bench_rank* r = &t->ranks[j];
    struct bench_call* c = &calls[j];
    size_t ts = bench_type_size(c->type);
    bench_cuda_set_device(r->dev); /* the copies go on the rank's stream, of its GPU */
    memset(r->host, poison_byte, c->counts.recv_count * ts);
    if (bench_copy(c->recvbuff, r->host, c->counts.recv_count * ts, r->stream) != 0)
      bench_fail(r, "cudaMemcpyAsync", ncclUnhandledCudaError);
    for (size_t i = 0; i < c->counts.send_count; i++)
      bench_store(c->type, r->host, i, bench_input(c->type, c->op, c->rank, c->nranks, i));
    if (bench_copy((void*)c->sendbuff, r->host, c->counts.send_count * ts, r->stream) != 0)
      bench_fail(r, "cudaMemcpyAsync", ncclUnhandledCudaError);
  }
}

static long check_outputs(struct bench_thread* t, struct bench_call* calls) {
  static int corrupt = -1;
  if (corrupt < 0) corrupt = getenv("MONEL_BENCH_CORRUPT") && atoi(getenv("MONEL_BENCH_CORRUPT"));
  long wrong = 0;
  for (int j = 0; j < t->nranks; j++) {
    struct bench_rank* r = &t->ranks[j];
    struct bench_call* c = &calls[j];
    size_t ts = bench_type_size(c->type), n = c->counts.recv_count;
    bench_cuda_set_device(r->dev);
    if (bench_copy(r->host, c->recvbuff, n * ts, r->stream) != 0)
      bench_fail(r, "cudaMemcpyAsync", ncclUnhandledCudaError);
    if (corrupt && c->rank == 0 && n > 0) ((unsigned char*)r->host)[(n / 2) * ts] ^= 0x01;
    for (size_t i = 0; i < n; i++) {
      double v;
      if (g_bench.coll->expected(c, i, &v) &&
          !bench_match(c->type, c->op, c->nranks, r->host, i, v))
        wrong++;
    }
  }
  return wrong;
}

/* Combines one double per rank across all ranks with op. */
static double combine(struct bench_thread* t, double mine, ncclRedOp_t op) {
  double out = 0;
  ncclGroupStart();
  for (int j = 0; j < t->nranks; j++) {
    struct bench_rank* r = &t->ranks[j];
    double* sb = r->statbuf;
    bench_cuda_set_device(r->dev);
    if (bench_copy(sb, &mine, sizeof(mine), r->stream) != 0)
      bench_fail(r, "cudaMemcpyAsync", ncclUnhandledCudaError);
    ncclResult_t res = ncclAllReduce(sb, sb + 1, 1, ncclFloat64, op, r->comm, r->stream);
    if (res != ncclSuccess) bench_fail(r, "ncclAllReduce (figures)", res);
  }
  ncclResult_t res = ncclGroupEnd();
  if (res != ncclSuccess) bench_fail(&t->ranks[0], "ncclAllReduce (figures)", res);
  sync_all(t);
  bench_cuda_set_device(t->ranks[0].dev);
  bench_copy(&out, (double*)t->ranks[0].statbuf + 1, sizeof(out), t->ranks[0].stream);
  return out;
}

struct place_result {
  double sec;
  long wrong;
};

static struct place_result run_place(struct bench_thread* t, struct bench_call* calls, int place) {
  const struct bench_opts* o = &g_bench.opts;
  struct place_result pr = {0, 0};
  for (int j = 0; j < t->nranks; j++)
    if (g_bench.coll->prepare && g_bench.coll->prepare(&calls[j]) != 0)
      bench_fail(&t->ranks[j], "prepare", ncclSystemError);
  fill_inputs(t, calls);
  double sec = timed_loop(t, calls);
  int checks = place == 1 && g_bench.coll->inplace_unchecked ? 0 : o->check;
  for (int k = 0; k < checks; k++) {
    fill_inputs(t, calls);
    launch(t, calls);
    sync_all(t);
    pr.wrong += check_outputs(t, calls);
  }
  for (int j = 0; j < t->nranks; j++)
    if (g_bench.coll->release) g_bench.coll->release(&calls[j]);
  int lead = g_bench.proc == 0 && t->tid == 0;
  switch (o->average) {
  case 0:
    pr.sec = combine(t, lead ? sec : 0.0, ncclSum);
    break;
  case 2:
    pr.sec = combine(t, sec, ncclMin);
    break;
  case 3:
    pr.sec = combine(t, sec, ncclMax);
    break;
  default:
    pr.sec = combine(t, sec, ncclSum) / g_bench.nranks;
    break;
  }
  pr.wrong = (long)combine(t, (double)pr.wrong, ncclSum);
  return pr;
}

static void format_time(char* out, size_t len, double us) {
  snprintf(out, len, us < 1e4 ? "%7.2f" : us < 1e5 ? "%7.1f" : "%7.0f", us);
}

static void print_header(void) {
  printf("#\n#%52s%22s%10s%23s%9s\n", "", "out-of-place", "", "in-place", "");
  printf("#%11s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
  for (int p = 0; p < 2; p++) printf("  %7s  %6s  %6s %6s", "time", "algbw", "busbw", "#wrong");
  printf("\n#%11s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "");
  for (int p = 0; p < 2; p++) printf("  %7s  %6s  %6s  %5s", "(us)", "(GB/s)", "(GB/s)", "");
  printf("\n");
}

static void run_size(struct bench_thread* t, struct bench_call* calls, size_t bytes,
                     ncclDataType_t type, ncclRedOp_t op, int root) {
  const struct bench_coll* coll = g_bench.coll;
  const struct bench_opts* o = &g_bench.opts;
  size_t ts = bench_type_size(type), count = bytes / ts;
  char line[512];
  struct bench_counts c0;
  coll->get_counts(count, g_bench.nranks, 0, &c0);
  size_t shown = (c0.send_count > c0.recv_count ? c0.send_count : c0.recv_count) * ts;
  int n = snprintf(line, sizeof(line), "%12zu  %12zu  %8s  %6s  %6d", shown, c0.param_count,
                   bench_type_name(type), coll->has_op ? bench_op_name(op) : "none",
                   coll->has_root ? root : -1);
  for (int place = 0; place < 2; place++) {
    if (place == 1 && coll->no_inplace) {
      n += snprintf(line + n, sizeof(line) - n, "  %7s  %6s  %6s  %5s", "N/A", "N/A", "N/A", "N/A");
      continue;
    }
    make_calls(t, calls, count, type, op, root, place);
    struct place_result pr = run_place(t, calls, place);
    double algbw =
        pr.sec > 0 ? coll->alg_bytes(c0.param_count, ts, g_bench.nranks) / 1e9 / pr.sec : 0;
    double busbw = algbw * coll->bus_factor(g_bench.nranks);
    char tm[32], wr[32];
    format_time(tm, sizeof(tm), pr.sec * 1e6);
    snprintf(wr, sizeof(wr), "%ld", pr.wrong);
    int checked = o->check && !(place == 1 && coll->inplace_unchecked);
    n += snprintf(line + n, sizeof(line) - n, "  %7s  %6.2f  %6.2f  %5s", tm, algbw, busbw,
                  checked ? wr : "N/A");
    t->wrong_total += pr.wrong;
    t->bw_sum += busbw;
    t->bw_count++;
  }
  if (g_bench.proc == 0 && t->tid == 0) printf("%s\n", line);
}

static void warmup(struct bench_thread* t, struct bench_call* calls, ncclDataType_t type,
                   ncclRedOp_t op, int root) {
  const struct bench_opts* o = &g_bench.opts;
  make_calls(t, calls, o->max_bytes / bench_type_size(type), type, op, root, 0);
  for (int j = 0; j < t->nranks; j++)
    if (g_bench.coll->prepare && g_bench.coll->prepare(&calls[j]) != 0)
      bench_fail(&t->ranks[j], "prepare", ncclSystemError);
  for (int w = 0; w < o->warmup; w++) launch(t, calls);
  sync_all(t);
  for (int j = 0; j < t->nranks; j++)
    if (g_bench.coll->release) g_bench.coll->release(&calls[j]);
}

static void sweep_sizes(struct bench_thread* t, struct bench_call* calls, ncclDataType_t type,
                        ncclRedOp_t op, int root) {
  const struct bench_opts* o = &g_bench.opts;
  int lead = t->tid == 0;
  if (lead && o->timeout > 0) alarm((unsigned)o->timeout);
  warmup(t, calls, type, op, root);
  for (size_t b = o->min_bytes; b <= o->max_bytes;) {
    if (lead && o->timeout > 0) alarm((unsigned)o->timeout);
    run_size(t, calls, b, type, op, root);
    size_t next = o->step_factor > 1.0 ? (size_t)((double)b * o->step_factor) : b + o->step_bytes;
    if (next <= b) break;
    b = next;
  }
  if (lead && o->timeout > 0) alarm(0);
}

void bench_sweep(struct bench_thread* t) {
  const struct bench_coll* coll = g_bench.coll;
  const struct bench_opts* o = &g_bench.opts;
  struct bench_call* calls = calloc((size_t)t->nranks, sizeof(*calls));
  if (g_bench.proc == 0 && t->tid == 0) print_header();
  for (int cycle = 0; o->cycles == 0 || cycle < o->cycles; cycle++) {
    for (int ty = 0; ty < ncclNumTypes; ty++) {
      if (o->all_types ? 0 : ty != (int)o->type) continue;
      int op_all = coll->has_op && o->all_ops;
      for (int op = 0; op < ncclNumOps; op++) {
        if (op_all ? 0 : op != (int)(coll->has_op ? o->op : ncclSum)) continue;
        int root_all = coll->has_root && o->all_roots;
        for (int root = 0; root < g_bench.nranks; root++) {
          if (root_all ? 0 : root != (coll->has_root ? o->root : 0)) continue;
          sweep_sizes(t, calls, (ncclDataType_t)ty, (ncclRedOp_t)op, root);
        }
      }
    }
  }
  free(calls);
}
