/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_scatter_perf - ncclReduceScatter; size = total bytes, busbw = algbw * (n-1)/n.
 */
#include "driver.h"

static void get_counts(size_t count, int nranks, int rank, struct bench_counts* c) {
  c->param_count = c->recv_count = count / nranks;
  c->send_count = c->recv_count * nranks;
  c->send_inplace = 0;
  c->recv_inplace = (size_t)rank * c->recv_count;
}

static double alg_bytes(size_t count, size_t ts, int nranks) {
  return (double)(count * ts) * nranks;
}

static double bus_factor(int nranks) {
  return (double)(nranks - 1) / nranks;
}

static ncclResult_t run(const struct bench_call* c, int step) {
  return ncclReduceScatter(c->sendbuff, c->recvbuff, c->counts.param_count, c->type, c->op, c->comm,
                           c->stream);
}

static int expected(const struct bench_call* c, size_t i, double* v) {
  *v = bench_reduce_all(c->type, c->op, c->nranks, (size_t)c->rank * c->counts.param_count + i);
  return 1;
}

static const struct bench_coll coll = {.name = "reduce_scatter_perf",
                                       .has_op = 1,
                                       .get_counts = get_counts,
                                       .alg_bytes = alg_bytes,
                                       .bus_factor = bus_factor,
                                       .run = run,
                                       .expected = expected};

int main(int argc, char** argv) {
  return bench_main(&coll, argc, argv);
}
