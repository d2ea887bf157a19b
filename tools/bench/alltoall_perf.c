/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alltoall_perf - ncclAlltoAll; size = total bytes per rank, busbw = algbw * (n-1)/n.
 */
#include "driver.h"

static void get_counts(size_t count, int nranks, int rank, struct bench_counts* c) {
  c->param_count = count / nranks;
  c->send_count = c->recv_count = c->param_count * nranks;
  c->send_inplace = c->recv_inplace = 0;
}

static double alg_bytes(size_t count, size_t ts, int nranks) {
  return (double)(count * ts) * nranks;
}

static double bus_factor(int nranks) {
  return (double)(nranks - 1) / nranks;
}

static ncclResult_t run(const struct bench_call* c, int step) {
  return ncclAlltoAll(c->sendbuff, c->recvbuff, c->counts.param_count, c->type, c->comm, c->stream);
}

/* Block j of the output comes from rank j's block c->rank. */
static int expected(const struct bench_call* c, size_t i, double* v) {
  size_t n = c->counts.param_count;
  *v = bench_input(c->type, c->op, (int)(i / n), c->nranks, (size_t)c->rank * n + i % n);
  return 1;
}

static const struct bench_coll coll = {.name = "alltoall_perf",
                                       .inplace_unchecked = 1,
                                       .get_counts = get_counts,
                                       .alg_bytes = alg_bytes,
                                       .bus_factor = bus_factor,
                                       .run = run,
                                       .expected = expected};

int main(int argc, char** argv) {
  return bench_main(&coll, argc, argv);
}
