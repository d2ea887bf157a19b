/* SPDX-License-Identifier: BSD-3-Clause */
/* One rank of the forced-plan check (tests/plan/run starts it under monelrun): every collective
 * that the forced algorithm runs on the CPU engine (NCCL_ALGO and NCCL_PROTO come from the
 * environment), over dtypes {int8, float32, bfloat16} x ops {sum, max, avg} x counts {0, 1, 7,
 * 1023, 64K+3} x in/out of place x roots {0, last}, checked exactly (the full matrix of every
 * dtype and op is tests/mp/test_algo.c's and gpu_matrix's). Prints "PASS forced <what> rank r/n (k
 * cases)" or the first wrong elements and exits 1. Usage: forced COLLS [quick]   (COLLS: a comma
 * list of allreduce, broadcast, reduce, allgather, reducescatter; quick: float32 alone, for many
 * ranks on few cores) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"

static const size_t counts[] = {0, 1, 7, 1023, (1 << 16) + 3};
static const ncclDataType_t dtypes[] = {ncclInt8, ncclFloat32, ncclBfloat16};
static const int ops[] = {ncclSum, ncclMax, ncclAvg};
#define N(a) (sizeof a / sizeof a[0])

enum { AR, BC, RED, AG, RS, NCOLL };
static const char* names[NCOLL] = {"allreduce", "broadcast", "reduce", "allgather",
                                   "reducescatter"};

static int rank, nranks, bad;

static void wrong(const char* what, size_t i, double got, double want) {
  if (bad++ < 5)
    fprintf(stderr, "rank %d/%d %s: element %zu is %g, expected %g (NCCL_ALGO=%s NCCL_PROTO=%s)\n",
            rank, nranks, what, i, got, want, getenv("NCCL_ALGO"), getenv("NCCL_PROTO"));
}

static unsigned char pat(int root, size_t j) {
  return (unsigned char)(root * 29 + j * 13 + (j >> 9) + 7);
}

/* One case; returns 1 if it ran. */
static int run_case(ncclComm_t comm, int coll, ncclDataType_t dt, int op, size_t count, int inplace,
                    int root, char* send, char* recv) {
  size_t es = mp_size(dt), n = (size_t)nranks;
  char what[160];
  if (bad) return 0; /* the first failure says it all */
  snprintf(what, sizeof what, "%s %s %s count %zu %s root %d", names[coll], mp_type_name(dt),
           mp_op_names[op], count, inplace ? "in-place" : "out-of-place", root);
  ncclResult_t r = ncclSuccess;
  if (coll == BC) {
    char* in = inplace ? recv : send;
    if (rank == root)
      for (size_t j = 0; j < count * es; j++) in[j] = (char)pat(root, j);
    r = ncclBroadcast(in, recv, count, dt, root, comm, NULL);
    for (size_t j = 0; r == ncclSuccess && j < count * es; j++)
      if ((unsigned char)recv[j] != pat(root, j))
        wrong(what, j, (unsigned char)recv[j], pat(root, j));
  } else if (coll == AG) {
    char* in = inplace ? recv + (size_t)rank * count * es : send;
    for (size_t i = 0; i < count; i++) mp_store(in, i, dt, mp_value(dt, ncclSum, rank, i));
    r = ncclAllGather(in, recv, count, dt, comm, NULL);
    for (size_t k = 0; r == ncclSuccess && k < n * count; k++) {
      double want = mp_value(dt, ncclSum, (int)(k / count), k % count);
      if (mp_load(recv, k, dt) != want) wrong(what, k, mp_load(recv, k, dt), want);
    }
  } else {
    size_t in_count = coll == RS ? n * count : count;
    for (size_t i = 0; i < in_count; i++) mp_store(send, i, dt, mp_value(dt, op, rank, i));
    char* out = !inplace ? recv : coll == RS ? send + (size_t)rank * count * es : send;
    if (coll == AR)
      r = ncclAllReduce(send, out, count, dt, (ncclRedOp_t)op, comm, NULL);
    else if (coll == RED)
      r = ncclReduce(send, out, count, dt, (ncclRedOp_t)op, root, comm, NULL);
    else
      r = ncclReduceScatter(send, out, count, dt, (ncclRedOp_t)op, comm, NULL);
    int checks = r == ncclSuccess && !(coll == RED && rank != root);
    for (size_t i = 0; checks && i < count; i++) {
      size_t k = coll == RS ? (size_t)rank * count + i : i;
      double got = mp_load(out, i, dt), want = mp_expected(dt, op, nranks, k, 1);
      if (!mp_equal(dt, op, got, want)) wrong(what, i, got, want);
    }
  }
  if (r != ncclSuccess) {
    fprintf(stderr, "rank %d/%d %s: %s: %s\n", rank, nranks, what, ncclGetErrorString(r),
            ncclGetLastError(comm));
    bad++;
  }
  return 1;
}

int main(int argc, char** argv) {
  const char* r = getenv("MONEL_RANK");
  const char* nr = getenv("MONEL_NRANKS");
  if (argc < 2 || argc > 3 || r == NULL || nr == NULL) {
    fprintf(stderr, "usage: monelrun -n N forced COLLS [quick] (COLLS: allreduce,broadcast,...)\n");
    return 2;
  }
  int quick = argc == 3 && strcmp(argv[2], "quick") == 0;
  rank = atoi(r), nranks = atoi(nr);
  int want[NCOLL] = {0};
  char list[256];
  snprintf(list, sizeof list, "%s", argv[1]);
  for (char *save = NULL, *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    int c = 0;
    while (c < NCOLL && strcmp(w, names[c]) != 0) c++;
    if (c == NCOLL) {
      fprintf(stderr, "forced: \"%s\" is not a collective\n", w);
      return 2;
    }
    want[c] = 1;
  }
  ncclUniqueId id;
  ncclComm_t comm;
  MP_CHECK(ncclGetUniqueId(&id));
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  size_t most = (counts[N(counts) - 1] * (size_t)nranks + 8) * 8;
  char* send = malloc(most);
  char* recv = malloc(most);
  int cases = 0;
  for (int c = 0; c < NCOLL && bad == 0; c++) {
    if (!want[c]) continue;
    int reduces = c == AR || c == RED || c == RS;
    for (size_t d = quick ? 1 : 0; d < (quick ? 2 : N(dtypes)); d++) /* dtypes[1]: float32 */
      for (size_t o = 0; o < (reduces ? N(ops) : 1); o++)
        for (size_t k = 0; k < N(counts); k++)
          for (int inplace = 0; inplace < 2; inplace++)
            for (int ri = 0; ri < ((c == BC || c == RED) ? 2 : 1); ri++) {
              int root = ri == 0 ? 0 : nranks - 1;
              memset(recv, 0x5a, most);
              cases += run_case(comm, c, dtypes[d], ops[o], counts[k], inplace, root, send, recv);
            }
  }
  MP_CHECK(ncclCommDestroy(comm));
  free(send);
  free(recv);
  if (bad) return 1;
  printf("PASS forced %s rank %d/%d (%d cases)\n", argv[1], rank, nranks, cases);
  return 0;
}
