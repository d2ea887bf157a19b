/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hypercube_perf - an all-gather made of ncclSend/ncclRecv exchanges along
 * the dimensions of a hypercube: at step k each rank swaps the 2^k blocks it
 * holds with rank ^ 2^k. Needs a power-of-two rank count. Size = total bytes,
 * busbw = algbw * (n-1)/n.
 */
#include "driver.h"

static void get_counts(size_t count, int nranks, int rank, struct bench_counts* c) {
  c->param_count = c->send_count = count / nranks;
  c->recv_count = c->send_count * nranks;
  c->send_inplace = (size_t)rank * c->send_count;
  c->recv_inplace = 0;
}

static double alg_bytes(size_t count, size_t ts, int nranks) {
  return (double)(count * ts) * nranks;
}

static double bus_factor(int nranks) {
  return (double)(nranks - 1) / nranks;
}

/* Step 0 puts the own block in place; steps 1..log2(n) exchange. */
static int nsteps(int nranks) {
  int s = 1;
  while ((1 << (s - 1)) < nranks) s++;
  return s;
}

static ncclResult_t run(const struct bench_call* c, int step) {
  size_t n = c->counts.param_count, ts = bench_type_size(c->type);
  char* rb = c->recvbuff;
  ncclResult_t res = ncclSuccess, end;
  if (step == 0) {
    char* own = rb + (size_t)c->rank * n * ts;
    if ((const char*)c->sendbuff == own || n == 0) return ncclSuccess;
    if ((res = ncclGroupStart()) != ncclSuccess) return res;
    res = ncclSend(c->sendbuff, n, c->type, c->rank, c->comm, c->stream);
    if (res == ncclSuccess) res = ncclRecv(own, n, c->type, c->rank, c->comm, c->stream);
    end = ncclGroupEnd();
    return res != ncclSuccess ? res : end;
  }
  int mask = 1 << (step - 1), peer = c->rank ^ mask;
  size_t mine = (size_t)(c->rank & ~(mask - 1)), theirs = (size_t)(peer & ~(mask - 1));
  if ((res = ncclGroupStart()) != ncclSuccess) return res;
  res = ncclSend(rb + mine * n * ts, n * (size_t)mask, c->type, peer, c->comm, c->stream);
  if (res == ncclSuccess)
    res = ncclRecv(rb + theirs * n * ts, n * (size_t)mask, c->type, peer, c->comm, c->stream);
  end = ncclGroupEnd();
  return res != ncclSuccess ? res : end;
}

static int expected(const struct bench_call* c, size_t i, double* v) {
  size_t n = c->counts.param_count;
  *v = bench_input(c->type, c->op, (int)(i / n), c->nranks, i % n);
  return 1;
}

static const struct bench_coll coll = {.name = "hypercube_perf",
                                       .pow2_ranks = 1,
                                       .get_counts = get_counts,
                                       .alg_bytes = alg_bytes,
                                       .bus_factor = bus_factor,
                                       .nsteps = nsteps,
                                       .run = run,
                                       .expected = expected};

int main(int argc, char** argv) {
  return bench_main(&coll, argc, argv);
}
