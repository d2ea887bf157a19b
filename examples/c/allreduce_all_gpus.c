/* SPDX-License-Identifier: BSD-3-Clause */
/* One process, every local GPU: ncclCommInitAll makes one communicator per GPU, then a single
 * thread enqueues an AllReduce (sum of floats) on each GPU inside one ncclGroupStart/End, waits
 * for every stream and checks every element.
 *
 * GPU g contributes (g + 1) * (i % 7 + 1) at index i, so the result is
 * n(n+1)/2 * (i % 7 + 1) on n GPUs, exact in float.
 *
 * Build: part of Monel's CMake build when CUDA is found (build/bin/allreduce_all_gpus), or by
 * hand: cc allreduce_all_gpus.c -I include -I $CUDA/include -L build/lib -lnccl \
 *          -L $CUDA/lib64 -lcudart
 * Run:   LD_LIBRARY_PATH=build/lib build/bin/allreduce_all_gpus [count]
 * Exits 0 when every value is right, 1 otherwise. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include "nccl.h"

#define CUDA_OK(call)                                                                              \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "error: %s: %s (line %d)\n", #call, cudaGetErrorString(e_), __LINE__);       \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)
#define NCCL_OK(call)                                                                              \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != ncclSuccess) {                                                                       \
      fprintf(stderr, "error: %s: %s (%s) (line %d)\n", #call, ncclGetErrorString(r_),             \
              ncclGetLastError(NULL), __LINE__);                                                   \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static float input(int gpu, size_t i) {
  return (float)((gpu + 1) * (int)(i % 7 + 1));
}

int main(int argc, char** argv) {
  size_t count = argc > 1 ? strtoull(argv[1], NULL, 0) : (1u << 20) + 3;
  int ngpus = 0;
  cudaError_t ce = cudaGetDeviceCount(&ngpus);
  if (ce != cudaSuccess || ngpus < 1) {
    fprintf(stderr, "error: this example needs at least one GPU (%s)\n",
            ce != cudaSuccess ? cudaGetErrorString(ce) : "none found");
    return 1;
  }

  ncclComm_t* comms = calloc(ngpus, sizeof *comms);
  cudaStream_t* streams = calloc(ngpus, sizeof *streams);
  float** send = calloc(ngpus, sizeof *send);
  float** recv = calloc(ngpus, sizeof *recv);
  float* host = malloc(count * sizeof *host);
  if (!comms || !streams || !send || !recv || !host) {
    fprintf(stderr, "error: out of host memory\n");
    return 1;
  }

  /* devlist NULL: GPUs 0..ngpus-1. */
  NCCL_OK(ncclCommInitAll(comms, ngpus, NULL));

  for (int g = 0; g < ngpus; g++) {
    CUDA_OK(cudaSetDevice(g));
    CUDA_OK(cudaStreamCreateWithFlags(&streams[g], cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc((void**)&send[g], count * sizeof(float)));
    CUDA_OK(cudaMalloc((void**)&recv[g], count * sizeof(float)));
    for (size_t i = 0; i < count; i++) host[i] = input(g, i);
    CUDA_OK(cudaMemcpy(send[g], host, count * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(recv[g], 0xff, count * sizeof(float))); /* NaNs until overwritten */
  }

  /* One thread, every GPU: the group lets the calls wait for each other. */
  NCCL_OK(ncclGroupStart());
  for (int g = 0; g < ngpus; g++)
    NCCL_OK(ncclAllReduce(send[g], recv[g], count, ncclFloat, ncclSum, comms[g], streams[g]));
  NCCL_OK(ncclGroupEnd());

  for (int g = 0; g < ngpus; g++) {
    CUDA_OK(cudaSetDevice(g));
    CUDA_OK(cudaStreamSynchronize(streams[g]));
  }

  int bad = 0;
  float tri = (float)(ngpus * (ngpus + 1) / 2);
  for (int g = 0; g < ngpus; g++) {
    CUDA_OK(cudaSetDevice(g));
    CUDA_OK(cudaMemcpy(host, recv[g], count * sizeof(float), cudaMemcpyDeviceToHost));
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < count; i++) {
      float want = tri * (float)(i % 7 + 1);
      if (host[i] != want && wrong++ == 0) first = i;
    }
    if (wrong) {
      printf("GPU %d: %zu of %zu values wrong; first at %zu: %g, expected %g\n", g, wrong, count,
             first, host[first], tri * (float)(first % 7 + 1));
      bad = 1;
    } else {
      printf("GPU %d: %zu floats, result[0..6] = %g %g %g %g %g %g %g\n", g, count, host[0],
             count > 1 ? host[1] : 0.0f, count > 2 ? host[2] : 0.0f, count > 3 ? host[3] : 0.0f,
             count > 4 ? host[4] : 0.0f, count > 5 ? host[5] : 0.0f, count > 6 ? host[6] : 0.0f);
    }
  }

  int version = 0;
  ncclGetVersion(&version);
  for (int g = 0; g < ngpus; g++) {
    cudaSetDevice(g);
    cudaFree(send[g]);
    cudaFree(recv[g]);
    cudaStreamDestroy(streams[g]);
    ncclCommDestroy(comms[g]);
  }
  printf("%s: AllReduce over %d GPUs with ncclCommInitAll (NCCL API version code %d)\n",
         bad ? "FAIL" : "OK", ngpus, version);
  free(comms);
  free(streams);
  free(send);
  free(recv);
  free(host);
  return bad;
}
