/* SPDX-License-Identifier: BSD-3-Clause */
/* Mismatched calls on the GPU engine (core/fingerprint.c): one rank of a job started by monelrun
 * (MONEL_RANK, MONEL_NRANKS, NCCL_COMM_ID; with --fake-hosts the ranks are hosts of their own and
 * may share one GPU: rank r uses GPU MONEL_LOCAL_RANK mod count). The last rank calls something
 * else than the others (KIND: count, dtype, op, root, coll, p2p, none); every rank must see
 * ncclInvalidUsage from ncclCommGetAsyncError within 20 s, with a sentence naming the last rank
 * (none: no error within 2 s and 50 matched AllReduces after). Prints PASS or FAIL per rank.
 * Usage: monelrun -n 2 --fake-hosts 2 gpu_test_gpu_mismatch KIND */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gpu_check.h"

#define COUNT 4096

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static ncclResult_t odd_call(const char* kind, int rank, int n, float* b, ncclComm_t comm,
                             cudaStream_t st) {
  int odd = rank == n - 1;
  if (!strcmp(kind, "count"))
    return ncclAllReduce(b, b, odd ? 2 * COUNT : COUNT, ncclFloat, ncclSum, comm, st);
  if (!strcmp(kind, "dtype"))
    return ncclAllReduce(b, b, COUNT, odd ? ncclInt32 : ncclFloat, ncclSum, comm, st);
  if (!strcmp(kind, "op"))
    return ncclAllReduce(b, b, COUNT, ncclFloat, odd ? ncclMax : ncclSum, comm, st);
  if (!strcmp(kind, "root")) return ncclBroadcast(b, b, COUNT, ncclFloat, odd ? 1 : 0, comm, st);
  if (!strcmp(kind, "coll")) {
    if (odd) return ncclBroadcast(b, b, COUNT, ncclFloat, 0, comm, st);
    return ncclAllReduce(b, b, COUNT, ncclFloat, ncclSum, comm, st);
  }
  if (!strcmp(kind, "p2p")) {
    if (rank == 0) return ncclSend(b, COUNT, ncclFloat, n - 1, comm, st);
    if (odd) return ncclRecv(b, 2 * COUNT, ncclFloat, 0, comm, st);
    return ncclSuccess;
  }
  return ncclAllReduce(b, b, COUNT, ncclFloat, ncclSum, comm, st);
}

int main(int argc, char** argv) {
  const char *r = getenv("MONEL_RANK"), *nr = getenv("MONEL_NRANKS");
  const char* lr = getenv("MONEL_LOCAL_RANK");
  if (argc != 2 || r == NULL || nr == NULL) {
    fprintf(stderr, "usage: monelrun -n N [--fake-hosts F] %s count|dtype|op|root|coll|p2p|none\n",
            argv[0]);
    return 2;
  }
  const char* kind = argv[1];
  int rank = atoi(r), n = atoi(nr), ndev = 0, none = !strcmp(kind, "none");
  CK(cudaGetDeviceCount(&ndev));
  CK(cudaSetDevice((lr ? atoi(lr) : rank) % ndev));
  ncclUniqueId id;
  ncclComm_t comm;
  NK(ncclGetUniqueId(&id)); /* with NCCL_COMM_ID, every rank gets the same id */
  NK(ncclCommInitRank(&comm, n, id, rank));
  float* b;
  cudaStream_t st;
  CK(cudaMalloc((void**)&b, 4 * COUNT * sizeof(float)));
  CK(cudaMemset(b, 0, 4 * COUNT * sizeof(float)));
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  NK(ncclAllReduce(b, b, COUNT, ncclFloat, ncclSum, comm, st));
  CK(cudaStreamSynchronize(st));
  ncclResult_t call = odd_call(kind, rank, n, b, comm, st), async = ncclSuccess;
  double t0 = now(), limit = none ? 2.0 : 20.0, seen = -1;
  while (async != ncclInvalidUsage && now() - t0 < limit) {
    if (ncclCommGetAsyncError(comm, &async) != ncclSuccess) break;
    if (async == ncclInvalidUsage) seen = now() - t0;
    if (async != ncclInvalidUsage) usleep(5000); /* raised by the watch thread: poll it */
  }
  if (none)
    for (int i = 0; i < 50 && async == ncclSuccess; i++)
      if (ncclAllReduce(b, b, 1 + i, ncclFloat, ncclSum, comm, st) != ncclSuccess ||
          cudaStreamSynchronize(st) != cudaSuccess ||
          ncclCommGetAsyncError(comm, &async) != ncclSuccess)
        async = ncclInternalError;
  char who[32];
  snprintf(who, sizeof who, "rank %d (host", n - 1);
  const char* text = ncclGetLastError(comm);
  int ok = none
               ? async == ncclSuccess
               : async == ncclInvalidUsage && strstr(text, "mismatched calls") && strstr(text, who);
  printf("%s mismatch %s rank %d: call %d, async %d after %.3f s: %s\n", ok ? "PASS" : "FAIL", kind,
         rank, (int)call, (int)async, seen, none ? "(no error)" : text);
  ncclCommAbort(comm);
  return ok ? 0 : 1;
}
