/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_perf - ncclReduce to -r root; busbw = algbw. Only the root is checked.
 */
#include "driver.h"

static void get_counts(size_t count, int nranks, int rank, struct bench_counts* c) {
  c->send_count = c->recv_count = c->param_count = count;
  c->send_inplace = c->recv_inplace = 0;
}

static double alg_bytes(size_t count, size_t ts, int nranks) {
  return (double)(count * ts);
}

static double bus_factor(int nranks) {
  return 1.0;
}

static ncclResult_t run(const struct bench_call* c, int step) {
  return ncclReduce(c->sendbuff, c->recvbuff, c->counts.param_count, c->type, c->op, c->root,
                    c->comm, c->stream);
}

static int expected(const struct bench_call* c, size_t i, double* v) {
  if (c->rank != c->root) return 0;
  *v = bench_reduce_all(c->type, c->op, c->nranks, i);
  return 1;
}

static const struct bench_coll coll = {.name = "reduce_perf",
                                       .has_op = 1,
                                       .has_root = 1,
                                       .get_counts = get_counts,
                                       .alg_bytes = alg_bytes,
                                       .bus_factor = bus_factor,
                                       .run = run,
                                       .expected = expected};

int main(int argc, char** argv) {
  return bench_main(&coll, argc, argv);
}
