/* AllReduce on GPUs, checked exactly: every dtype x op (sum, prod, max, min, avg, premulsum with a
 * host and a device scalar) x counts {0, 1, 1023, 1M+3} x in/out-of-place, with ncclCommInitAll
 * (one thread drives every GPU in one group) and with one thread per GPU (ncclCommInitRank);
 * CUDA graph capture and replay; then a bandwidth figure.
 * Inputs are small integers, so every order of reduction gives the same bits.
 * Usage: test_gpu_allreduce [check|bench]   (default: both). Prints PASS/FAIL/SKIP. */
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

#define MAXDEV 16
#define CK(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      printf("FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));            \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define NK(call)                                                                                   \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != ncclSuccess) {                                                                       \
      printf("FAIL %s:%d %s: %s (%s)\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_),        \
             ncclGetLastError(NULL));                                                              \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

enum { OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_AVG, OP_PREMUL_HOST, OP_PREMUL_DEV, NOPS };
static const char* op_names[NOPS] = {"sum", "prod", "max", "min", "avg", "premul", "premul_dev"};
static const ncclDataType_t types[] = {ncclInt8,    ncclUint8,    ncclInt32,      ncclUint32,
                                       ncclInt64,   ncclUint64,   ncclFloat16,    ncclFloat32,
                                       ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
#define NTYPES (int)(sizeof types / sizeof types[0])

static int is_unsigned(ncclDataType_t dt) {
  return dt == ncclUint8 || dt == ncclUint32 || dt == ncclUint64;
}

static double input_value(int op, ncclDataType_t dt, int rank, size_t i) {
  int k = (int)((i * 7 + (size_t)rank * 3) % 5);
  double v;
  if (op == OP_PROD) {
    static const double pv[5] = {1, 2, -1, 1, -2};
    v = pv[k];
  } else {
    v = k - 2;
  }
  return is_unsigned(dt) ? fabs(v) : v;
}

static void put(void* buf, ncclDataType_t dt, size_t i, double v) {
  switch (dt) {
  case ncclInt8: ((int8_t*)buf)[i] = (int8_t)(int64_t)v; break;
  case ncclUint8: ((uint8_t*)buf)[i] = (uint8_t)(uint64_t)(int64_t)v; break;
  case ncclInt32: ((int32_t*)buf)[i] = (int32_t)(int64_t)v; break;
  case ncclUint32: ((uint32_t*)buf)[i] = (uint32_t)(uint64_t)(int64_t)v; break;
  case ncclInt64: ((int64_t*)buf)[i] = (int64_t)v; break;
  case ncclUint64: ((uint64_t*)buf)[i] = (uint64_t)(int64_t)v; break;
  case ncclFloat16: ((uint16_t*)buf)[i] = dtype_float_to_half((float)v); break;
  case ncclFloat32: ((float*)buf)[i] = (float)v; break;
  case ncclFloat64: ((double*)buf)[i] = v; break;
  case ncclBfloat16: ((uint16_t*)buf)[i] = dtype_float_to_bf16((float)v); break;
  case ncclFloat8e4m3: ((uint8_t*)buf)[i] = dtype_float_to_e4m3_sat((float)v); break;
  case ncclFloat8e5m2: ((uint8_t*)buf)[i] = dtype_float_to_e5m2_sat((float)v); break;
  default: break;
  }
}

/* x / n to float with round-to-odd: the final rounding to a narrow type is then the only one. */
static float div_odd(float x, int n) {
  double q = (double)x / (double)n;
  float f = (float)q;
  if ((double)f != q) {
    uint32_t u = dtype_float_bits(f);
    if (fabs((double)f) > fabs(q)) u--;
    f = dtype_bits_float(u | 1u);
  }
  return f;
}

static void put_avg(void* buf, ncclDataType_t dt, size_t i, double sum, int n) {
  if (dt == ncclInt8 || dt == ncclInt32 || dt == ncclInt64)
    put(buf, dt, i, (double)((int64_t)sum / n));
  else if (is_unsigned(dt))
    put(buf, dt, i, (double)((uint64_t)sum / (uint64_t)n));
  else if (dt == ncclFloat32)
    ((float*)buf)[i] = (float)(sum / n);
  else if (dt == ncclFloat64)
    ((double*)buf)[i] = sum / n;
  else
    put(buf, dt, i, div_odd((float)sum, n));
}

static double scalar_for(int nranks) { return nranks <= 4 ? 2.0 : 1.0; }

static void expected(void* buf, int op, ncclDataType_t dt, size_t count, int nranks) {
  double s = scalar_for(nranks);
  for (size_t i = 0; i < count; i++) {
    double acc = 0;
    for (int r = 0; r < nranks; r++) {
      double v = input_value(op, dt, r, i);
      if (op == OP_PREMUL_HOST || op == OP_PREMUL_DEV) v *= s;
      if (r == 0)
        acc = v;
      else if (op == OP_PROD)
        acc *= v;
      else if (op == OP_MAX)
        acc = v > acc ? v : acc;
      else if (op == OP_MIN)
        acc = v < acc ? v : acc;
      else
        acc += v;
    }
    if (op == OP_AVG)
      put_avg(buf, dt, i, acc, nranks);
    else
      put(buf, dt, i, acc);
  }
}

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
  rc->op = op == OP_PROD ? ncclProd : op == OP_MAX ? ncclMax : op == OP_MIN ? ncclMin
         : op == OP_AVG ? ncclAvg : ncclSum;
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

static size_t big_count(void) { return getenv("MONEL_TEST_BIG") ? (64u << 20) + 3 : (1u << 20) + 3; }

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
  size_t counts[4] = {0, 1, 1023, big_count()}, max_bytes = counts[3] * 8;
  for (int r = 0; r < ndev; r++) {
    memset(&rc[r], 0, sizeof rc[r]);
    rc[r].comm = comms[r], rc[r].dev = r, rc[r].rank = r, rc[r].nranks = ndev;
    alloc_rank(&rc[r], max_bytes);
  }
  void* want = malloc(max_bytes);
  int fails = 0, cases = 0;
  for (int t = 0; t < NTYPES; t++)
    for (int op = 0; op < NOPS; op++)
      for (int c = 0; c < 4; c++)
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
  printf("%s InitAll: %d cases (12 dtypes x 7 ops x 4 counts x 2 placements) on %d GPUs, %d "
         "failures\n", fails ? "FAIL" : "PASS", cases, ndev, fails);

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
  size_t counts[4] = {0, 1, 1023, big_count()};
  alloc_rank(&rc, counts[3] * 8);
  void* want = malloc(counts[3] * 8);
  for (int t = 0; t < NTYPES; t++)
    for (int op = 0; op < NOPS; op++)
      for (int c = 0; c < 4; c++)
        for (int inplace = 0; inplace < 2; inplace++) {
          ncclDataType_t dt = types[t];
          if (c == 3 && op != OP_SUM && op != OP_PREMUL_DEV) continue; /* keep it short */
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
        NK(ncclAllReduce(rc[r].send, rc[r].recv, count, ncclFloat32, ncclSum, comms[r], rc[r].stream));
      NK(ncclGroupEnd());
      if (it == iters - 1) {
        sync_all(rc, ndev);
        double us = (now() - t0) / iters * 1e6;
        double algbw = sizes[s] / us / 1e3, busbw = algbw * 2.0 * (ndev - 1) / ndev;
        printf("BENCH %s float sum %zu bytes on %d GPUs: %.1f us/op, algbw %.1f GB/s, busbw %.1f "
               "GB/s\n", lib, sizes[s], ndev, us, algbw, busbw);
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
  if (strcmp(mode, "bench") != 0) {
    fails += check_all(ndev);
    fails += check_threads(ndev);
  }
  if (strcmp(mode, "check") != 0) bench(ndev);
  printf("%s test_gpu_allreduce\n", fails ? "FAIL" : "PASS");
  return fails ? 1 : 0;
}
