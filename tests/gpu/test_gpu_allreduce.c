/* SPDX-License-Identifier: BSD-3-Clause */
/* AllReduce on GPUs, checked exactly: every dtype x op (sum, prod, max, min, avg, premulsum with a
 * host and a device scalar) x counts {0, 1, 1023, 100003, 1M+3} x in/out-of-place, with
 * ncclCommInitAll (one thread drives every GPU in one group) and with one thread per GPU
 * (ncclCommInitRank); CUDA graph capture and replay; four AllReduces per comm alternating
 * between two streams; then a bandwidth figure. Inputs are small integers, so every order of
 * reduction gives the same bits.
 * Usage: test_gpu_allreduce [check|bench|streams] (default: check and bench; streams: the
 * two-stream check alone). Prints PASS/FAIL/SKIP. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "nccl.h"
#include "util/dtype.h"

#include "gpu_check.h"

/* One rank's buffers and op for a case. */
struct rank_case {
  ncclComm_t comm;
  int dev, rank, nranks;
  cudaStream_t stream;
  void *send, *recv, *dscalar;
  ncclRedOp_t op;
  void* host;
};

static void prepare(struct rank_case* rc, int op, ncclDataType_t dt, size_t count, int inplace) {
  size_t bytes = count * dtype_size(dt);
  CK(cudaSetDevice(rc->dev));
  for (size_t i = 0; i < count; i++) put(rc->host, dt, i, input_value(op, dt, rc->rank, i));
  CK(cudaMemcpy(inplace ? rc->recv : rc->send, rc->host, bytes, cudaMemcpyHostToDevice));
  if (!inplace) CK(cudaMemset(rc->recv, 0xa5, bytes));
  rc->op = base_op(op);
  if (op == OP_PREMUL_HOST || op == OP_PREMUL_DEV) {
    unsigned char sc[8];
    put(sc, dt, 0, scalar_for(rc->nranks));
    if (op == OP_PREMUL_HOST) {
      NK(ncclRedOpCreatePreMulSum(&rc->op, sc, dt, ncclScalarHostImmediate, rc->comm));
    } else {
      CK(cudaMemcpy(rc->dscalar, sc, 8, cudaMemcpyHostToDevice));
      NK(ncclRedOpCreatePreMulSum(&rc->op, rc->dscalar, dt, ncclScalarDevice, rc->comm));
    }
  }
  CK(cudaDeviceSynchronize()); /* the copies above are not ordered with the test's streams */
}

static void enqueue(struct rank_case* rc, ncclDataType_t dt, size_t count, int inplace) {
  NK(ncclAllReduce(inplace ? rc->recv : rc->send, rc->recv, count, dt, rc->op, rc->comm,
                   rc->stream));
}

static int verify(struct rank_case* rc, int op, ncclDataType_t dt, size_t count, int inplace,
                  void* want) {
  size_t bytes = count * dtype_size(dt);
  CK(cudaSetDevice(rc->dev));
  CK(cudaStreamSynchronize(rc->stream));
  CK(cudaMemcpy(rc->host, rc->recv, bytes, cudaMemcpyDeviceToHost));
  if (rc->op >= ncclNumOps) NK(ncclRedOpDestroy(rc->op, rc->comm));
  if (memcmp(rc->host, want, bytes) == 0) return 0;
  size_t es = dtype_size(dt), i = 0;
  while (memcmp((char*)rc->host + i * es, (char*)want + i * es, es) == 0) i++;
  printf("FAIL rank %d %s %s count %zu %s: first difference at element %zu\n", rc->rank,
         dtype_name(dt), op_names[op], count, inplace ? "in-place" : "out-of-place", i);
  return 1;
}

static size_t big_count(void) {
  return getenv("MONEL_TEST_BIG") ? (64u << 20) + 3 : (1u << 20) + 3;
}

static void alloc_rank(struct rank_case* rc, size_t max_bytes) {
  CK(cudaSetDevice(rc->dev));
  CK(cudaStreamCreateWithFlags(&rc->stream, cudaStreamNonBlocking));
  CK(cudaMalloc(&rc->send, max_bytes));
  CK(cudaMalloc(&rc->recv, max_bytes));
  CK(cudaMalloc(&rc->dscalar, 16));
  rc->host = malloc(max_bytes);
}

static void free_rank(struct rank_case* rc) {
  CK(cudaSetDevice(rc->dev));
  CK(cudaFree(rc->send));
  CK(cudaFree(rc->recv));
  CK(cudaFree(rc->dscalar));
  CK(cudaStreamDestroy(rc->stream));
  free(rc->host);
}

/* ---- one thread, all GPUs ---- */
static int check_all(int ndev) {
  ncclComm_t comms[MAXDEV];
  NK(ncclCommInitAll(comms, ndev, NULL));
  struct rank_case rc[MAXDEV];
  /* 100003 elements: the one-shot at 100-400 KB (up to MONEL_ONESHOT_MAX), the ring at 800 KB */
  size_t counts[5] = {0, 1, 1023, 100003, big_count()}, max_bytes = counts[4] * 8;
  for (int r = 0; r < ndev; r++) {
    memset(&rc[r], 0, sizeof rc[r]);
    rc[r].comm = comms[r], rc[r].dev = r, rc[r].rank = r, rc[r].nranks = ndev;
    alloc_rank(&rc[r], max_bytes);
  }
  void* want = malloc(max_bytes);
  int fails = 0, cases = 0;
  for (int t = 0; t < NTYPES; t++)
    for (int op = 0; op < NOPS; op++)
      for (int c = 0; c < 5; c++)
        for (int inplace = 0; inplace < 2; inplace++) {
          ncclDataType_t dt = types[t];
          for (int r = 0; r < ndev; r++) prepare(&rc[r], op, dt, counts[c], inplace);
          NK(ncclGroupStart());
          for (int r = 0; r < ndev; r++) enqueue(&rc[r], dt, counts[c], inplace);
          NK(ncclGroupEnd());
          expected(want, op, dt, counts[c], ndev);
          for (int r = 0; r < ndev; r++) fails += verify(&rc[r], op, dt, counts[c], inplace, want);
          cases++;
        }
  printf("%s InitAll: %d cases (12 dtypes x 7 ops x 5 counts x 2 placements) on %d GPUs, %d "
         "failures\n",
         fails ? "FAIL" : "PASS", cases, ndev, fails);

  /* CUDA graph: capture one AllReduce per GPU, replay with fresh inputs. */
  int gfails = 0;
  cudaGraph_t graph[MAXDEV];
  cudaGraphExec_t exec[MAXDEV];
  size_t gcount = (1 << 20) + 5;
  for (int r = 0; r < ndev; r++) {
    CK(cudaSetDevice(r));
    CK(cudaStreamBeginCapture(rc[r].stream, cudaStreamCaptureModeThreadLocal));
  }
  NK(ncclGroupStart());
  for (int r = 0; r < ndev; r++)
    NK(ncclAllReduce(rc[r].send, rc[r].recv, gcount, ncclFloat32, ncclSum, comms[r], rc[r].stream));
  NK(ncclGroupEnd());
  for (int r = 0; r < ndev; r++) {
    CK(cudaSetDevice(r));
    CK(cudaStreamEndCapture(rc[r].stream, &graph[r]));
  }
  for (int r = 0; r < ndev; r++) {
    CK(cudaSetDevice(r));
    CK(cudaGraphInstantiate(&exec[r], graph[r], 0));
  }
  for (int rep = 0; rep < 5; rep++) {
    for (int r = 0; r < ndev; r++) {
      CK(cudaSetDevice(r));
      for (size_t i = 0; i < gcount; i++)
        ((float*)rc[r].host)[i] = (float)(input_value(OP_SUM, ncclFloat32, r, i) + rep);
      CK(cudaMemcpy(rc[r].send, rc[r].host, gcount * 4, cudaMemcpyHostToDevice));
      CK(cudaDeviceSynchronize());
    }
    for (int r = 0; r < ndev; r++) {
      CK(cudaSetDevice(r));
      CK(cudaGraphLaunch(exec[r], rc[r].stream));
    }
    for (int r = 0; r < ndev; r++) {
      CK(cudaSetDevice(r));
      CK(cudaStreamSynchronize(rc[r].stream));
      CK(cudaMemcpy(rc[r].host, rc[r].recv, gcount * 4, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < gcount; i++) {
        double w = 0;
        for (int q = 0; q < ndev; q++) w += input_value(OP_SUM, ncclFloat32, q, i) + rep;
        if (((float*)rc[r].host)[i] != (float)w) {
          printf("FAIL graph replay %d rank %d element %zu: %g, expected %g\n", rep, r, i,
                 ((float*)rc[r].host)[i], w);
          gfails++;
          break;
        }
      }
    }
  }
  for (int r = 0; r < ndev; r++) {
    CK(cudaGraphExecDestroy(exec[r]));
    CK(cudaGraphDestroy(graph[r]));
  }
  printf("%s CUDA graph: AllReduce captured on %d GPUs, replayed 5 times\n",
         gfails ? "FAIL" : "PASS", ndev);
  for (int r = 0; r < ndev; r++) {
    free_rank(&rc[r]);
    NK(ncclCommDestroy(comms[r]));
  }
  free(want);
  return fails + gfails;
}

/* ---- one comm, two streams ---- */
/* Four AllReduces per comm alternate between two streams, in one group and then one group each;
 * the kernels of a comm share its FIFOs, so Monel must run them one after the other. */
static int check_streams(int ndev) {
  enum { NOPS_S = 4 };
  ncclComm_t comms[MAXDEV];
  NK(ncclCommInitAll(comms, ndev, NULL));
  size_t count = (1 << 20) + 5, bytes = count * 4;
  cudaStream_t st[MAXDEV][2];
  float *send[MAXDEV][NOPS_S], *recv[MAXDEV][NOPS_S];
  float* host = malloc(bytes);
  for (int r = 0; r < ndev; r++) {
    CK(cudaSetDevice(r));
    for (int k = 0; k < 2; k++) CK(cudaStreamCreateWithFlags(&st[r][k], cudaStreamNonBlocking));
    for (int k = 0; k < NOPS_S; k++) {
      CK(cudaMalloc((void**)&send[r][k], bytes));
      CK(cudaMalloc((void**)&recv[r][k], bytes));
      for (size_t i = 0; i < count; i++)
        host[i] = (float)(input_value(OP_SUM, ncclFloat32, r, i) + 3 * k);
      CK(cudaMemcpy(send[r][k], host, bytes, cudaMemcpyHostToDevice));
    }
  }
  int fails = 0;
  for (int grouping = 0; grouping < 2; grouping++) {
    for (int r = 0; r < ndev; r++) {
      CK(cudaSetDevice(r));
      for (int k = 0; k < NOPS_S; k++) CK(cudaMemset(recv[r][k], 0, bytes));
      CK(cudaDeviceSynchronize());
    }
    if (grouping == 0) NK(ncclGroupStart());
    for (int k = 0; k < NOPS_S; k++) {
      if (grouping == 1) NK(ncclGroupStart());
      for (int r = 0; r < ndev; r++)
        NK(ncclAllReduce(send[r][k], recv[r][k], count, ncclFloat32, ncclSum, comms[r],
                         st[r][k % 2]));
      if (grouping == 1) NK(ncclGroupEnd());
    }
    if (grouping == 0) NK(ncclGroupEnd());
    for (int r = 0; r < ndev; r++) {
      CK(cudaSetDevice(r));
      CK(cudaDeviceSynchronize());
      for (int k = 0; k < NOPS_S && !fails; k++) {
        CK(cudaMemcpy(host, recv[r][k], bytes, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; i++) {
          double w = 0;
          for (int q = 0; q < ndev; q++) w += input_value(OP_SUM, ncclFloat32, q, i) + 3 * k;
          if (host[i] != (float)w) {
            printf("FAIL two streams (%s) rank %d op %d element %zu: %g, expected %g\n",
                   grouping ? "one group each" : "one group", r, k, i, host[i], w);
            fails++;
            break;
          }
        }
      }
    }
  }
  for (int r = 0; r < ndev; r++) {
    CK(cudaSetDevice(r));
    for (int k = 0; k < NOPS_S; k++) {
      CK(cudaFree(send[r][k]));
      CK(cudaFree(recv[r][k]));
    }
    for (int k = 0; k < 2; k++) CK(cudaStreamDestroy(st[r][k]));
    NK(ncclCommDestroy(comms[r]));
  }
  free(host);
  printf("%s two streams: 4 AllReduces per comm alternating between 2 streams on %d GPUs, in one "
         "group and one group each\n",
         fails ? "FAIL" : "PASS", ndev);
  return fails;
}

/* ---- one thread per GPU ---- */
struct thread_arg {
  ncclUniqueId id;
  int rank, nranks, fails;
};

static void* rank_main(void* p) {
  struct thread_arg* ta = p;
  struct rank_case rc;
  memset(&rc, 0, sizeof rc);
  rc.dev = ta->rank, rc.rank = ta->rank, rc.nranks = ta->nranks;
  CK(cudaSetDevice(rc.dev));
  NK(ncclCommInitRank(&rc.comm, ta->nranks, ta->id, ta->rank));
  size_t counts[5] = {0, 1, 1023, 100003, big_count()};
  alloc_rank(&rc, counts[4] * 8);
  void* want = malloc(counts[4] * 8);
  for (int t = 0; t < NTYPES; t++)
    for (int op = 0; op < NOPS; op++)
      for (int c = 0; c < 5; c++)
        for (int inplace = 0; inplace < 2; inplace++) {
          ncclDataType_t dt = types[t];
          if (c == 4 && op != OP_SUM && op != OP_PREMUL_DEV) continue; /* keep it short */
          prepare(&rc, op, dt, counts[c], inplace);
          enqueue(&rc, dt, counts[c], inplace);
          expected(want, op, dt, counts[c], ta->nranks);
          ta->fails += verify(&rc, op, dt, counts[c], inplace, want);
        }
  free(want);
  free_rank(&rc);
  NK(ncclCommDestroy(rc.comm));
  return NULL;
}

static int check_threads(int ndev) {
  struct thread_arg ta[MAXDEV];
  pthread_t th[MAXDEV];
  ncclUniqueId id;
  NK(ncclGetUniqueId(&id));
  for (int r = 0; r < ndev; r++) {
    ta[r].id = id, ta[r].rank = r, ta[r].nranks = ndev, ta[r].fails = 0;
    pthread_create(&th[r], NULL, rank_main, &ta[r]);
  }
  int fails = 0;
  for (int r = 0; r < ndev; r++) {
    pthread_join(th[r], NULL);
    fails += ta[r].fails;
  }
  printf("%s thread per GPU: ncclCommInitRank on %d threads, every dtype x op, %d failures\n",
         fails ? "FAIL" : "PASS", ndev, fails);
  return fails;
}

/* ---- bandwidth ---- */
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void sync_all(struct rank_case* rc, int ndev) {
  for (int r = 0; r < ndev; r++) {
    CK(cudaSetDevice(r));
    CK(cudaStreamSynchronize(rc[r].stream));
  }
}

static void bench(int ndev) {
  Dl_info info;
  const char* lib = dladdr((void*)ncclAllReduce, &info) && info.dli_fname ? info.dli_fname : "?";
  ncclComm_t comms[MAXDEV];
  NK(ncclCommInitAll(comms, ndev, NULL));
  struct rank_case rc[MAXDEV];
  size_t sizes[] = {8, 1 << 20, 32 << 20, 256 << 20};
  for (int r = 0; r < ndev; r++) {
    memset(&rc[r], 0, sizeof rc[r]);
    rc[r].dev = r;
    alloc_rank(&rc[r], 256 << 20);
  }
  for (int s = 0; s < 4; s++) {
    size_t count = sizes[s] / 4;
    int iters = sizes[s] >= (32 << 20) ? 20 : 200;
    for (int it = -5; it < iters; it++) {
      if (it == 0) {
        sync_all(rc, ndev);
      }
      static double t0;
      if (it == 0) t0 = now();
      NK(ncclGroupStart());
      for (int r = 0; r < ndev; r++)
        NK(ncclAllReduce(rc[r].send, rc[r].recv, count, ncclFloat32, ncclSum, comms[r],
                         rc[r].stream));
      NK(ncclGroupEnd());
      if (it == iters - 1) {
        sync_all(rc, ndev);
        double us = (now() - t0) / iters * 1e6;
        double algbw = sizes[s] / us / 1e3, busbw = algbw * 2.0 * (ndev - 1) / ndev;
        printf("BENCH %s float sum %zu bytes on %d GPUs: %.1f us/op, algbw %.1f GB/s, busbw %.1f "
               "GB/s\n",
               lib, sizes[s], ndev, us, algbw, busbw);
      }
    }
  }
  for (int r = 0; r < ndev; r++) {
    free_rank(&rc[r]);
    NK(ncclCommDestroy(comms[r]));
  }
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "all";
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf("SKIP no GPU\n");
    return 0;
  }
  if (ndev > MAXDEV) ndev = MAXDEV;
  setvbuf(stdout, NULL, _IOLBF, 0);
  int fails = 0;
  if (strcmp(mode, "streams") == 0) {
    fails += check_streams(ndev);
  } else {
    if (strcmp(mode, "bench") != 0) {
      fails += check_all(ndev);
      fails += check_threads(ndev);
      fails += check_streams(ndev);
    }
    if (strcmp(mode, "check") != 0) bench(ndev);
  }
  printf("%s test_gpu_allreduce\n", fails ? "FAIL" : "PASS");
  return fails ? 1 : 0;
}
