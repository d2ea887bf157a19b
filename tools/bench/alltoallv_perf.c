/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alltoallv_perf - ncclAlltoAllv (Monel extension, VCCL's signature) with a
 * deterministic uneven split: rank i sends rank j
 *   c * 2 * ((i + j) % n + 1) / (n + 1)
 * elements, where c is the even per-peer count, so every row and column sums
 * to at most n * c. Size = total bytes per rank, busbw = algbw * (n-1)/n.
 * The function is looked up at run time, so the binary also loads on an NCCL
 * without it; there the same exchange runs as grouped ncclSend/ncclRecv (what
 * programs on NVIDIA's NCCL do), and the preamble says so.
 */
#include <stdio.h>
#include <stdlib.h>

#include "driver.h"
#include "monel.h"

typedef ncclResult_t (*alltoallv_fn)(const void*, const size_t*, const size_t*, void*,
                                     const size_t*, const size_t*, void*, size_t, ncclDataType_t,
                                     ncclComm_t, cudaStream_t);

struct matrices {
  size_t* sc; /* sc[i*n+j]: i sends j */
  size_t* sd;
  size_t* rc; /* rc[i*n+j]: i receives from j */
  size_t* rd;
};

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

static int prepare(struct bench_call* c) {
  size_t n = (size_t)c->nranks, per = c->counts.param_count;
  struct matrices* m = calloc(1, sizeof(*m));
  if (!m) return -1;
  m->sc = calloc(4 * n * n, sizeof(size_t));
  if (!m->sc) {
    free(m);
    return -1;
  }
  m->sd = m->sc + n * n;
  m->rc = m->sd + n * n;
  m->rd = m->rc + n * n;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) m->sc[i * n + j] = per * 2 * ((i + j) % n + 1) / (n + 1);
  for (size_t i = 0; i < n; i++) {
    size_t so = 0, ro = 0;
    for (size_t j = 0; j < n; j++) {
      m->sd[i * n + j] = so;
      so += m->sc[i * n + j];
      m->rc[i * n + j] = m->sc[j * n + i];
      m->rd[i * n + j] = ro;
      ro += m->rc[i * n + j];
    }
  }
  c->priv = m;
  return 0;
}

static void release(struct bench_call* c) {
  struct matrices* m = c->priv;
  if (m) free(m->sc);
  free(m);
  c->priv = NULL;
}

static ncclResult_t run(const struct bench_call* c, int step) {
  static alltoallv_fn fn;
  static int looked;
  if (!looked) {
    fn = (alltoallv_fn)bench_lib_symbol("ncclAlltoAllv");
    looked = 1;
  }
  const struct matrices* m = c->priv;
  if (fn)
    return fn(c->sendbuff, m->sc, m->sd, c->recvbuff, m->rc, m->rd, NULL, 0, c->type, c->comm,
              c->stream);
  if (c->rank == 0 && looked == 1) {
    printf("# ncclAlltoAllv is not in the loaded library: grouped ncclSend/ncclRecv instead\n");
    looked = 2;
  }
  size_t n = (size_t)c->nranks, r = (size_t)c->rank, ts = bench_type_size(c->type);
  ncclResult_t res = ncclGroupStart();
  for (size_t j = 0; j < n && res == ncclSuccess; j++) {
    res = ncclSend((const char*)c->sendbuff + m->sd[r * n + j] * ts, m->sc[r * n + j], c->type,
                   (int)j, c->comm, c->stream);
    if (res == ncclSuccess)
      res = ncclRecv((char*)c->recvbuff + m->rd[r * n + j] * ts, m->rc[r * n + j], c->type, (int)j,
                     c->comm, c->stream);
  }
  ncclResult_t end = ncclGroupEnd();
  return res != ncclSuccess ? res : end;
}

static int expected(const struct bench_call* c, size_t i, double* v) {
  const struct matrices* m = c->priv;
  size_t n = (size_t)c->nranks, r = (size_t)c->rank;
  for (size_t j = 0; j < n; j++) {
    size_t at = m->rd[r * n + j];
    if (i >= at && i < at + m->rc[r * n + j]) {
      *v = bench_input(c->type, c->op, (int)j, c->nranks, m->sd[j * n + r] + (i - at));
      return 1;
    }
  }
  return 0; /* the unused tail of the receive buffer */
}

static const struct bench_coll coll = {.name = "alltoallv_perf",
                                       .inplace_unchecked = 1,
                                       .no_inplace = 1,
                                       .get_counts = get_counts,
                                       .alg_bytes = alg_bytes,
                                       .bus_factor = bus_factor,
                                       .run = run,
                                       .expected = expected,
                                       .prepare = prepare,
                                       .release = release};

int main(int argc, char** argv) {
  return bench_main(&coll, argc, argv);
}
