/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Allreduce timed the way all_reduce_perf times ncclAllReduce, for side-by-side figures:
 * float sum, sizes from -b to -e bytes multiplied by -f, -w warm-up calls at the largest size,
 * then per size -n timed calls out of place and -n in place; the time of a call is averaged over
 * the calls and then over the ranks. One line per size: bytes, elements, out-of-place us,
 * in-place us. Built only where an MPI compiler is found (tools/bench/mpi.cmake). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t parse_size(const char* s) {
  char* end = NULL;
  double v = strtod(s, &end);
  if (end && (*end == 'K' || *end == 'k')) v *= 1024;
  if (end && (*end == 'M' || *end == 'm')) v *= 1024 * 1024;
  if (end && (*end == 'G' || *end == 'g')) v *= 1024.0 * 1024 * 1024;
  return (size_t)v;
}

/* Seconds per call, averaged over the ranks. */
static double timed(float* send, float* recv, size_t count, int iters, int nranks) {
  void* sb = send == recv ? MPI_IN_PLACE : (void*)send;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++)
    MPI_Allreduce(sb, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double sec = (MPI_Wtime() - t0) / iters, sum = 0;
  MPI_Allreduce(&sec, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum / nranks;
}

int main(int argc, char** argv) {
  size_t min_bytes = 8, max_bytes = 64 << 20;
  double factor = 2;
  int iters = 20, warmup = 5, rank = 0, nranks = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-b") == 0)
      min_bytes = parse_size(argv[i + 1]);
    else if (strcmp(argv[i], "-e") == 0)
      max_bytes = parse_size(argv[i + 1]);
    else if (strcmp(argv[i], "-f") == 0)
      factor = atof(argv[i + 1]);
    else if (strcmp(argv[i], "-n") == 0)
      iters = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-w") == 0)
      warmup = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "usage: %s [-b bytes] [-e bytes] [-f factor] [-n iters] [-w warmup]\n",
              argv[0]);
      return 2;
    }
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  size_t max_count = max_bytes / sizeof(float);
  float* send = malloc((max_count + 1) * sizeof(float));
  float* recv = malloc((max_count + 1) * sizeof(float));
  if (send == NULL || recv == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  for (size_t i = 0; i < max_count; i++) send[i] = (float)((rank + i) % 3) - 1;
  memset(recv, 0, max_count * sizeof(float));
  for (int w = 0; w < warmup; w++)
    MPI_Allreduce(send, recv, (int)max_count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("# MPI_Allreduce float sum, %d ranks\n#%11s %12s %12s %12s\n", nranks, "size(B)",
           "count", "oop(us)", "inplace(us)");
  for (size_t b = min_bytes; b <= max_bytes;) {
    size_t count = b / sizeof(float);
    double oop = timed(send, recv, count, iters, nranks);
    double inp = timed(recv, recv, count, iters, nranks);
    if (rank == 0)
      printf("%12zu %12zu %12.2f %12.2f\n", count * sizeof(float), count, oop * 1e6, inp * 1e6);
    size_t next = (size_t)((double)b * factor);
    if (next <= b) break;
    b = next;
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
