/* SPDX-License-Identifier: BSD-3-Clause */
/* One AllReduce size in a loop, timed in blocks: the time per operation in ns with one decimal,
 * for per-operation costs below all_reduce_perf's 0.01 us (an 8-byte AllReduce on the CPU engine
 * takes about 0.13 us). Host buffers (the CPU engine), float sum, out of place, each call in its
 * own group as all_reduce_perf makes it. Ranks are processes of monelrun:
 *   MONEL_ENGINE=cpu monelrun -n 2 op_loop [bytes [blocks [calls per block]]]
 * Rank 0 prints the fastest block and the median block. Defaults: 8 B, 15 blocks of 50000. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "nccl.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static int fail(const char* what, ncclResult_t res) {
  fprintf(stderr, "op_loop: %s: %s\n", what, ncclGetErrorString(res));
  return 1;
}

int main(int argc, char** argv) {
  const char *np = getenv("MONEL_NRANKS"), *pr = getenv("MONEL_RANK");
  int nranks = np ? atoi(np) : 1, rank = pr ? atoi(pr) : 0;
  size_t count = (argc > 1 ? (size_t)atol(argv[1]) : 8) / sizeof(float);
  int blocks = argc > 2 ? atoi(argv[2]) : 15, calls = argc > 3 ? atoi(argv[3]) : 50000;
  if (count == 0 || blocks < 1 || calls < 1) {
    fprintf(stderr, "usage: monelrun -n N op_loop [bytes [blocks [calls per block]]]\n");
    return 2;
  }
  ncclUniqueId id;
  ncclComm_t comm;
  ncclResult_t res = ncclGetUniqueId(&id);
  if (res != ncclSuccess) return fail("ncclGetUniqueId", res);
  if ((res = ncclCommInitRank(&comm, nranks, id, rank)) != ncclSuccess)
    return fail("ncclCommInitRank", res);
  float *in = calloc(count, sizeof *in), *out = calloc(count, sizeof *out);
  double* ns = calloc((size_t)blocks, sizeof *ns);
  if (in == NULL || out == NULL || ns == NULL) return 1;
  for (int b = -1; b < blocks; b++) { /* block -1 warms up */
    double t0 = now_s();
    for (int i = 0; i < calls; i++) {
      ncclGroupStart();
      res = ncclAllReduce(in, out, count, ncclFloat, ncclSum, comm, NULL);
      ncclResult_t end = ncclGroupEnd();
      if (res != ncclSuccess || end != ncclSuccess)
        return fail("ncclAllReduce", res != ncclSuccess ? res : end);
    }
    if (b >= 0) ns[b] = (now_s() - t0) / calls * 1e9;
  }
  qsort(ns, (size_t)blocks, sizeof *ns, by_value);
  if (rank == 0)
    printf("op_loop %zu B on %d ranks: fastest block %.1f ns, median block %.1f ns per operation\n",
           count * sizeof(float), nranks, ns[0], ns[blocks / 2]);
  ncclCommDestroy(comm);
  free(in), free(out), free(ns);
  return 0;
}
