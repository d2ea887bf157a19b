/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sendrecv_perf - each rank sends to rank+1 and receives from rank-1 (a ring
 * shift) with ncclSend/ncclRecv in one group; busbw = algbw.
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
  int next = (c->rank + 1) % c->nranks, prev = (c->rank + c->nranks - 1) % c->nranks;
  ncclResult_t res = ncclGroupStart();
  if (res == ncclSuccess)
    res = ncclSend(c->sendbuff, c->counts.param_count, c->type, next, c->comm, c->stream);
  if (res == ncclSuccess)
    res = ncclRecv(c->recvbuff, c->counts.param_count, c->type, prev, c->comm, c->stream);
  ncclResult_t end = ncclGroupEnd();
  return res != ncclSuccess ? res : end;
}

static int expected(const struct bench_call* c, size_t i, double* v) {
  *v = bench_input(c->type, c->op, (c->rank + c->nranks - 1) % c->nranks, c->nranks, i);
  return 1;
}

static const struct bench_coll coll = {.name = "sendrecv_perf",
                                       .inplace_unchecked = 1,
                                       .get_counts = get_counts,
                                       .alg_bytes = alg_bytes,
                                       .bus_factor = bus_factor,
                                       .run = run,
                                       .expected = expected};

int main(int argc, char** argv) {
  return bench_main(&coll, argc, argv);
}
