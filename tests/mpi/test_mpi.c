/* SPDX-License-Identifier: BSD-3-Clause */
/* A user's MPI program on Monel, started by a real mpirun (tests/mpi/run): rank 0's
 * ncclGetUniqueId travels by MPI_Bcast, as NCCL's documentation shows, every rank joins with
 * ncclCommInitRank, and MPI's own collectives are the reference: each result of Monel's must equal
 * MPI's bit for bit. Host memory (the CPU engine); with MONEL_HOST_ID set per rank the ranks of
 * different "hosts" talk over the network.
 *
 * Covered: AllReduce (8 integer and floating types x sum, prod, max, min x counts 0..64K+3, in
 * and out of place), Broadcast and Reduce from every root, AllGather, ReduceScatter, AlltoAll,
 * Gather and Scatter from every root, Send/Recv around the ring in one group, and ncclCommSplit
 * against MPI_Comm_split (rank, size and an AllReduce on the part). Integers take random bits
 * (their sums wrap the same in any order); floating sums and products take small values that
 * every order adds exactly (mp_value). Rank 0 prints one PASS or FAIL line for the whole job;
 * every rank exits 1 if any rank failed. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"

struct ty {
  ncclDataType_t nccl;
  MPI_Datatype mpi;
  int floating;
};

static int me, nranks, cases, fails;

/* Random bits per (rank, seed, element): the same on every run. */
static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

/* count elements of rank r's input for op (ncclSum for data that is only moved). */
static void fill(void* buf, const struct ty* t, int op, int r, int seed, size_t count) {
  size_t sz = mp_size(t->nccl);
  for (size_t i = 0; i < count; i++) {
    uint64_t x = mix(((uint64_t)seed << 40) ^ ((uint64_t)r << 32) ^ i);
    if (t->floating && (op == ncclSum || op == ncclProd))
      mp_store(buf, i, t->nccl, mp_value(t->nccl, op, r, i));
    else if (t->floating) /* max, min, moved data: whole numbers, never NaN */
      mp_store(buf, i, t->nccl, (double)(int)(x % 2001) - 1000);
    else
      memcpy((char*)buf + i * sz, &x, sz);
  }
}

/* One case: got must equal want over bytes. */
static void check(const char* what, const void* got, const void* want, size_t bytes) {
  cases++;
  const unsigned char *g = got, *w = want;
  for (size_t j = 0; j < bytes; j++)
    if (g[j] != w[j]) {
      fprintf(stderr, "rank %d: %s: byte %zu is 0x%02x, MPI has 0x%02x\n", me, what, j, g[j], w[j]);
      fails++;
      return;
    }
}

/* A call that must succeed; a failure ends the job (the ranks would wait on each other). */
#define CALL(x)                                                                                    \
  do {                                                                                             \
    ncclResult_t r_ = (x);                                                                         \
    if (r_ != ncclSuccess) {                                                                       \
      fprintf(stderr, "rank %d: %s: %s (%s)\n", me, #x, ncclGetErrorString(r_),                    \
              ncclGetLastError(NULL));                                                             \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                \
    }                                                                                              \
  } while (0)

static const struct ty types[] = {
    {ncclInt8, MPI_INT8_T, 0},     {ncclUint8, MPI_UINT8_T, 0},  {ncclInt32, MPI_INT32_T, 0},
    {ncclUint32, MPI_UINT32_T, 0}, {ncclInt64, MPI_INT64_T, 0},  {ncclUint64, MPI_UINT64_T, 0},
    {ncclFloat32, MPI_FLOAT, 1},   {ncclFloat64, MPI_DOUBLE, 1},
};
#define NTYPES (sizeof types / sizeof types[0])
static const size_t counts[] = {0, 1, 7, 1023, (1 << 16) + 3};
#define NCOUNTS  (sizeof counts / sizeof counts[0])
#define MAXCOUNT ((size_t)(1 << 16) + 3)
static const int ops[] = {ncclSum, ncclProd, ncclMax, ncclMin};
static MPI_Op mpi_op(int op) {
  return op == ncclSum ? MPI_SUM : op == ncclProd ? MPI_PROD : op == ncclMax ? MPI_MAX : MPI_MIN;
}

/* Buffers for a count of up to MAXCOUNT elements per rank, times nranks where a collective
 * gathers: send, Monel's result, MPI's result. */
static char *sendb, *recvb, *wantb;

static void allreduce(ncclComm_t comm) {
  char what[128];
  for (size_t ti = 0; ti < NTYPES; ti++)
    for (int oi = 0; oi < 4; oi++)
      for (size_t ci = 0; ci < NCOUNTS; ci++)
        for (int inplace = 0; inplace < 2; inplace++) {
          const struct ty* t = &types[ti];
          size_t n = counts[ci], bytes = n * mp_size(t->nccl);
          fill(sendb, t, ops[oi], me, (int)(ti * 8 + oi), n);
          MPI_Allreduce(sendb, wantb, (int)n, t->mpi, mpi_op(ops[oi]), MPI_COMM_WORLD);
          void* out = recvb;
          if (inplace) memcpy(out = recvb, sendb, bytes);
          CALL(ncclAllReduce(inplace ? out : sendb, out, n, t->nccl, (ncclRedOp_t)ops[oi], comm,
                             NULL));
          snprintf(what, sizeof what, "AllReduce %s %s count %zu%s", mp_type_name(t->nccl),
                   mp_op_names[ops[oi]], n, inplace ? " in place" : "");
          check(what, out, wantb, bytes);
        }
}

/* Data that is only moved: Broadcast, Gather, Scatter from every root; AllGather; AlltoAll. */
static void moves(ncclComm_t comm) {
  const struct ty* t = &types[2]; /* int32 */
  char what[128];
  for (size_t ci = 1; ci < NCOUNTS; ci++) {
    size_t n = counts[ci], bytes = n * 4;
    int c = (int)n;
    for (int root = 0; root < nranks; root++) {
      fill(recvb, t, ncclSum, me, 100 + root, n);
      memcpy(wantb, recvb, bytes);
      MPI_Bcast(wantb, c, MPI_INT32_T, root, MPI_COMM_WORLD);
      CALL(ncclBroadcast(recvb, recvb, n, t->nccl, root, comm, NULL));
      snprintf(what, sizeof what, "Broadcast count %zu root %d", n, root);
      check(what, recvb, wantb, bytes);

      fill(sendb, t, ncclSum, me, 200 + root, n);
      MPI_Gather(sendb, c, MPI_INT32_T, wantb, c, MPI_INT32_T, root, MPI_COMM_WORLD);
      CALL(ncclGather(sendb, recvb, n, t->nccl, root, comm, NULL));
      snprintf(what, sizeof what, "Gather count %zu root %d", n, root);
      if (me == root) check(what, recvb, wantb, bytes * (size_t)nranks);

      fill(sendb, t, ncclSum, me, 300 + root, n * (size_t)nranks);
      MPI_Scatter(sendb, c, MPI_INT32_T, wantb, c, MPI_INT32_T, root, MPI_COMM_WORLD);
      CALL(ncclScatter(sendb, recvb, n, t->nccl, root, comm, NULL));
      snprintf(what, sizeof what, "Scatter count %zu root %d", n, root);
      check(what, recvb, wantb, bytes);
    }
    fill(sendb, t, ncclSum, me, 400, n);
    MPI_Allgather(sendb, c, MPI_INT32_T, wantb, c, MPI_INT32_T, MPI_COMM_WORLD);
    CALL(ncclAllGather(sendb, recvb, n, t->nccl, comm, NULL));
    snprintf(what, sizeof what, "AllGather count %zu", n);
    check(what, recvb, wantb, bytes * (size_t)nranks);

    fill(sendb, t, ncclSum, me, 500, n * (size_t)nranks);
    MPI_Alltoall(sendb, c, MPI_INT32_T, wantb, c, MPI_INT32_T, MPI_COMM_WORLD);
    CALL(ncclAlltoAll(sendb, recvb, n, t->nccl, comm, NULL));
    snprintf(what, sizeof what, "AlltoAll count %zu", n);
    check(what, recvb, wantb, bytes * (size_t)nranks);

    /* Send to the next rank, receive from the previous, in one group. */
    int next = (me + 1) % nranks, prev = (me + nranks - 1) % nranks;
    fill(sendb, t, ncclSum, me, 600, n);
    MPI_Sendrecv(sendb, c, MPI_INT32_T, next, 7, wantb, c, MPI_INT32_T, prev, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    CALL(ncclGroupStart());
    CALL(ncclSend(sendb, n, t->nccl, next, comm, NULL));
    CALL(ncclRecv(recvb, n, t->nccl, prev, comm, NULL));
    CALL(ncclGroupEnd());
    snprintf(what, sizeof what, "Send/Recv ring count %zu", n);
    check(what, recvb, wantb, bytes);
  }
}

/* Reduce from every root and ReduceScatter, on a floating and an integer type. */
static void reductions(ncclComm_t comm) {
  char what[128];
  static const int which[] = {6, 7, 4}; /* float, double, int64 */
  for (int k = 0; k < 3; k++) {
    const struct ty* t = &types[which[k]];
    size_t sz = mp_size(t->nccl);
    for (size_t ci = 1; ci < NCOUNTS; ci++) {
      size_t n = counts[ci];
      for (int root = 0; root < nranks; root++) {
        fill(sendb, t, ncclSum, me, 700 + root, n);
        MPI_Reduce(sendb, wantb, (int)n, t->mpi, MPI_SUM, root, MPI_COMM_WORLD);
        CALL(ncclReduce(sendb, recvb, n, t->nccl, ncclSum, root, comm, NULL));
        snprintf(what, sizeof what, "Reduce %s count %zu root %d", mp_type_name(t->nccl), n, root);
        if (me == root) check(what, recvb, wantb, n * sz);
      }
      fill(sendb, t, ncclSum, me, 800, n * (size_t)nranks);
      MPI_Reduce_scatter_block(sendb, wantb, (int)n, t->mpi, MPI_SUM, MPI_COMM_WORLD);
      CALL(ncclReduceScatter(sendb, recvb, n, t->nccl, ncclSum, comm, NULL));
      snprintf(what, sizeof what, "ReduceScatter %s count %zu", mp_type_name(t->nccl), n);
      check(what, recvb, wantb, n * sz);
    }
  }
}

/* ncclCommSplit and MPI_Comm_split with the same color and key: the same groups in the same
 * order. The last rank of three or more stays out (NCCL_SPLIT_NOCOLOR / MPI_UNDEFINED). */
static void split(ncclComm_t comm) {
  int out = nranks >= 3 && me == nranks - 1;
  int color = me % 2, key = nranks - me;
  MPI_Comm part;
  MPI_Comm_split(MPI_COMM_WORLD, out ? MPI_UNDEFINED : color, key, &part);
  ncclComm_t sub = NULL;
  CALL(ncclCommSplit(comm, out ? NCCL_SPLIT_NOCOLOR : color, key, &sub, NULL));
  cases++;
  if (out) {
    if (sub != NULL || part != MPI_COMM_NULL) {
      fprintf(stderr, "rank %d: split: left out, yet a communicator came back\n", me);
      fails++;
    }
    return;
  }
  int r = -1, n = -1, mr, mn;
  CALL(ncclCommUserRank(sub, &r));
  CALL(ncclCommCount(sub, &n));
  MPI_Comm_rank(part, &mr);
  MPI_Comm_size(part, &mn);
  if (r != mr || n != mn) {
    fprintf(stderr, "rank %d: split: Monel says rank %d of %d, MPI %d of %d\n", me, r, n, mr, mn);
    fails++;
  }
  const struct ty* t = &types[4]; /* int64 */
  size_t cnt = 1023;
  fill(sendb, t, ncclSum, me, 900, cnt);
  MPI_Allreduce(sendb, wantb, (int)cnt, t->mpi, MPI_SUM, part);
  CALL(ncclAllReduce(sendb, recvb, cnt, t->nccl, ncclSum, sub, NULL));
  check("AllReduce on the split communicator", recvb, wantb, cnt * 8);
  CALL(ncclCommDestroy(sub));
  MPI_Comm_free(&part);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  ncclUniqueId id;
  if (me == 0) CALL(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  CALL(ncclCommInitRank(&comm, nranks, id, me));
  int r = -1, n = -1;
  CALL(ncclCommUserRank(comm, &r));
  CALL(ncclCommCount(comm, &n));
  cases++;
  if (r != me || n != nranks) {
    fprintf(stderr, "rank %d: the communicator says rank %d of %d, MPI %d of %d\n", me, r, n, me,
            nranks);
    fails++;
  }
  size_t big = MAXCOUNT * 8 * (size_t)nranks;
  sendb = malloc(big);
  recvb = malloc(big);
  wantb = malloc(big);
  if (!sendb || !recvb || !wantb) MPI_Abort(MPI_COMM_WORLD, 1);
  allreduce(comm);
  moves(comm);
  reductions(comm);
  split(comm);
  CALL(ncclCommDestroy(comm));
  int all_fails = 0, all_cases = 0;
  MPI_Reduce(&fails, &all_fails, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&cases, &all_cases, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Bcast(&all_fails, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (me == 0)
    printf("%s mpi %d ranks: %d checks against MPI on all ranks, %d failed\n",
           all_fails ? "FAIL" : "PASS", nranks, all_cases, all_fails);
  free(sendb);
  free(recvb);
  free(wantb);
  MPI_Finalize();
  return all_fails ? 1 : 0;
}
