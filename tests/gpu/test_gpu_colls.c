/* SPDX-License-Identifier: BSD-3-Clause */
/* Broadcast, Reduce, AllGather and ReduceScatter on GPUs, checked exactly: every dtype, every op
 * for the reducing ones (sum, prod, max, min, avg, premulsum with a host and a device scalar),
 * counts {0, 1, 1023, 256K+3}, in place and out of place (NCCL's definitions: AllGather in place
 * when sendbuff == recvbuff + rank*count, ReduceScatter when recvbuff == sendbuff + rank*count),
 * roots varying, with ncclCommInitAll (one thread drives every GPU in one group).
 * Usage: test_gpu_colls. Prints PASS/FAIL/SKIP. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_check.h"

enum { C_BCAST, C_REDUCE, C_ALLGATHER, C_REDUCESCATTER, NCOLLS };
static const char* coll_names[NCOLLS] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter"};

struct rank_buf {
  ncclComm_t comm;
  int dev;
  cudaStream_t stream;
  void *send, *recv, *dscalar, *host;
  ncclRedOp_t op;
};

/* Input and output of rank r for a case: where the input goes, which buffers the call gets. */
struct place {
  char *in, *sendbuff, *recvbuff;
  size_t in_count, out_count;
};

static struct place place_of(struct rank_buf* b, int coll, size_t count, size_t es, int r, int n,
                             int inplace) {
  struct place p;
  p.in_count = coll == C_REDUCESCATTER ? count * n : count;
  p.out_count = coll == C_ALLGATHER ? count * n : count;
  p.recvbuff = b->recv;
  if (!inplace) {
    p.in = p.sendbuff = b->send;
  } else if (coll == C_ALLGATHER) {
    p.in = p.sendbuff = (char*)b->recv + (size_t)r * count * es;
  } else if (coll == C_REDUCESCATTER) {
    p.in = p.sendbuff = b->recv;
    p.recvbuff = (char*)b->recv + (size_t)r * count * es;
  } else {
    p.in = p.sendbuff = b->recv;
  }
  return p;
}

static int run_case(struct rank_buf* rb, int n, int coll, int op, ncclDataType_t dt, size_t count,
                    int inplace, int root, void* want) {
  size_t es = dtype_size(dt);
  struct place pl[MAXDEV];
  for (int r = 0; r < n; r++) {
    struct rank_buf* b = &rb[r];
    pl[r] = place_of(b, coll, count, es, r, n, inplace);
    int iop = coll == C_BCAST || coll == C_ALLGATHER ? OP_SUM : op;
    CK(cudaSetDevice(b->dev));
    CK(cudaMemset(b->recv, 0xa5, count * n * es));
    for (size_t i = 0; i < pl[r].in_count; i++) put(b->host, dt, i, input_value(iop, dt, r, i));
    CK(cudaMemcpy(pl[r].in, b->host, pl[r].in_count * es, cudaMemcpyHostToDevice));
    b->op = base_op(op);
    if ((coll == C_REDUCE || coll == C_REDUCESCATTER) &&
        (op == OP_PREMUL_HOST || op == OP_PREMUL_DEV)) {
      unsigned char sc[8];
      put(sc, dt, 0, scalar_for(n));
      if (op == OP_PREMUL_HOST) {
        NK(ncclRedOpCreatePreMulSum(&b->op, sc, dt, ncclScalarHostImmediate, b->comm));
      } else {
        CK(cudaMemcpy(b->dscalar, sc, 8, cudaMemcpyHostToDevice));
        NK(ncclRedOpCreatePreMulSum(&b->op, b->dscalar, dt, ncclScalarDevice, b->comm));
      }
    }
    CK(cudaDeviceSynchronize());
  }
  NK(ncclGroupStart());
  for (int r = 0; r < n; r++) {
    struct rank_buf* b = &rb[r];
    switch (coll) {
    case C_BCAST:
      NK(ncclBroadcast(pl[r].sendbuff, pl[r].recvbuff, count, dt, root, b->comm, b->stream));
      break;
    case C_REDUCE:
      NK(ncclReduce(pl[r].sendbuff, pl[r].recvbuff, count, dt, b->op, root, b->comm, b->stream));
      break;
    case C_ALLGATHER:
      NK(ncclAllGather(pl[r].sendbuff, pl[r].recvbuff, count, dt, b->comm, b->stream));
      break;
    default:
      NK(ncclReduceScatter(pl[r].sendbuff, pl[r].recvbuff, count, dt, b->op, b->comm, b->stream));
    }
  }
  NK(ncclGroupEnd());
  int fails = 0;
  for (int r = 0; r < n; r++) {
    struct rank_buf* b = &rb[r];
    CK(cudaSetDevice(b->dev));
    CK(cudaStreamSynchronize(b->stream));
    if (b->op >= ncclNumOps) NK(ncclRedOpDestroy(b->op, b->comm));
    if (coll == C_REDUCE && r != root) continue;
    size_t oc = pl[r].out_count;
    for (size_t i = 0; i < oc; i++) {
      if (coll == C_BCAST)
        put(want, dt, i, input_value(OP_SUM, dt, root, i));
      else if (coll == C_ALLGATHER)
        put(want, dt, i, input_value(OP_SUM, dt, (int)(i / count), i % count));
      else if (coll == C_REDUCE)
        expect_one(want, i, op, dt, i, n);
      else
        expect_one(want, i, op, dt, (size_t)r * count + i, n);
    }
    CK(cudaMemcpy(b->host, pl[r].recvbuff, oc * es, cudaMemcpyDeviceToHost));
    if (memcmp(b->host, want, oc * es) != 0) {
      size_t i = 0;
      while (memcmp((char*)b->host + i * es, (char*)want + i * es, es) == 0) i++;
      printf("FAIL %s rank %d root %d %s %s count %zu %s: first difference at element %zu\n",
             coll_names[coll], r, root, dtype_name(dt), op_names[op], count,
             inplace ? "in-place" : "out-of-place", i);
      fails++;
    }
  }
  return fails;
}

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    printf("SKIP no GPU\n");
    return 0;
  }
  if (n > MAXDEV) n = MAXDEV;
  setvbuf(stdout, NULL, _IOLBF, 0);
  ncclComm_t comms[MAXDEV];
  NK(ncclCommInitAll(comms, n, NULL));
  size_t counts[4] = {0, 1, 1023, (256u << 10) + 3};
  size_t max_bytes = counts[3] * 8 * (size_t)n;
  struct rank_buf rb[MAXDEV];
  for (int r = 0; r < n; r++) {
    memset(&rb[r], 0, sizeof rb[r]);
    rb[r].comm = comms[r], rb[r].dev = r;
    CK(cudaSetDevice(r));
    CK(cudaStreamCreateWithFlags(&rb[r].stream, cudaStreamNonBlocking));
    CK(cudaMalloc(&rb[r].send, max_bytes));
    CK(cudaMalloc(&rb[r].recv, max_bytes));
    CK(cudaMalloc(&rb[r].dscalar, 16));
    rb[r].host = malloc(max_bytes);
  }
  void* want = malloc(max_bytes);
  int total_fails = 0;
  for (int coll = 0; coll < NCOLLS; coll++) {
    int fails = 0, cases = 0;
    int nops = coll == C_REDUCE || coll == C_REDUCESCATTER ? NOPS : 1;
    for (int t = 0; t < NTYPES; t++)
      for (int op = 0; op < nops; op++)
        for (int c = 0; c < 4; c++)
          for (int inplace = 0; inplace < 2; inplace++) {
            int root = (t + op + c + inplace) % n;
            fails += run_case(rb, n, coll, op, types[t], counts[c], inplace, root, want);
            cases++;
          }
    printf("%s %s: %d cases (12 dtypes x %d ops x 4 counts x 2 placements, roots varying) on %d "
           "GPUs, %d failures\n",
           fails ? "FAIL" : "PASS", coll_names[coll], cases, nops, n, fails);
    total_fails += fails;
  }
  for (int r = 0; r < n; r++) {
    CK(cudaSetDevice(r));
    CK(cudaFree(rb[r].send));
    CK(cudaFree(rb[r].recv));
    CK(cudaFree(rb[r].dscalar));
    CK(cudaStreamDestroy(rb[r].stream));
    free(rb[r].host);
    NK(ncclCommDestroy(comms[r]));
  }
  free(want);
  printf("%s test_gpu_colls\n", total_fails ? "FAIL" : "PASS");
  return total_fails ? 1 : 0;
}
