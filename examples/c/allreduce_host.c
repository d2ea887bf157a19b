/* SPDX-License-Identifier: BSD-3-Clause */
/* One rank per process on host memory (Monel's CPU engine): each rank contributes
 * (rank + 1) * (i % 7 + 1) at index i, then an AllReduce (sum of floats) and a check of every
 * element against n(n+1)/2 * (i % 7 + 1), exact in float.
 *
 * monelrun gives each rank MONEL_RANK, MONEL_NRANKS and a shared NCCL_COMM_ID, so every rank's
 * ncclGetUniqueId returns the same id and no id has to be sent.
 *
 * Build against an installed Monel:
 *   cc allreduce_host.c $(pkg-config --cflags --libs monel) -o allreduce_host
 *   (or CMake: find_package(Monel) and Monel::nccl, see CMakeLists.txt here)
 * Run:   MONEL_ENGINE=cpu monelrun -n 4 ./allreduce_host [count]
 * Exits 0 when every value is right, 1 otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "monel.h"
#include "nccl.h"

#define NCCL_OK(call)                                                                              \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != ncclSuccess) {                                                                       \
      fprintf(stderr, "error: %s: %s (%s) (line %d)\n", #call, ncclGetErrorString(r_),             \
              ncclGetLastError(NULL), __LINE__);                                                   \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

/* The file of the libnccl.so.2 this process loaded, from /proc/self/maps: Monel's, or another
 * NCCL found first (LD_LIBRARY_PATH, LD_PRELOAD, the run path). */
static void loaded_library(char* out, size_t size) {
  char line[4096];
  snprintf(out, size, "(not found)");
  FILE* f = fopen("/proc/self/maps", "r");
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    char* path = strchr(line, '/');
    if (path && strstr(path, "libnccl.so")) {
      path[strcspn(path, "\n")] = '\0';
      snprintf(out, size, "%s", path);
      break;
    }
  }
  fclose(f);
}

static int env_int(const char* name, int* out) {
  const char* v = getenv(name);
  if (!v) return 0;
  *out = atoi(v);
  return 1;
}

int main(int argc, char** argv) {
  size_t count = argc > 1 ? strtoull(argv[1], NULL, 0) : (1u << 16) + 3;
  int rank = 0, nranks = 0;
  if (!env_int("MONEL_RANK", &rank) || !env_int("MONEL_NRANKS", &nranks) || nranks < 1) {
    fprintf(stderr,
            "error: MONEL_RANK and MONEL_NRANKS are not set: start the ranks with "
            "monelrun -n N %s\n",
            argv[0]);
    return 1;
  }
  float* send = malloc(count * sizeof *send);
  float* recv = malloc(count * sizeof *recv);
  if (!send || !recv) {
    fprintf(stderr, "error: out of host memory\n");
    return 1;
  }
  for (size_t i = 0; i < count; i++) send[i] = (float)((rank + 1) * (int)(i % 7 + 1));

  ncclUniqueId id;
  ncclComm_t comm;
  NCCL_OK(ncclGetUniqueId(&id));
  NCCL_OK(ncclCommInitRank(&comm, nranks, id, rank));
  const char* engine = "?";
  NCCL_OK(ncclMonelCommGetEngine(comm, &engine));
  /* On the CPU engine the stream is ignored and the call is complete when it returns. */
  NCCL_OK(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, NULL));

  size_t wrong = 0;
  for (size_t i = 0; i < count; i++) {
    float want = (float)(nranks * (nranks + 1) / 2 * (int)(i % 7 + 1));
    if (recv[i] != want && wrong++ < 5)
      fprintf(stderr, "rank %d: recv[%zu] = %g, expected %g\n", rank, i, recv[i], want);
  }
  const char* version = "?";
  NCCL_OK(ncclMonelGetVersionString(&version));
  NCCL_OK(ncclCommDestroy(comm));
  char library[1024];
  loaded_library(library, sizeof library);
  printf("allreduce_host: rank %d of %d, %zu floats, %zu wrong (engine %s; %s; %s)\n", rank, nranks,
         count, wrong, engine, version, library);
  free(send);
  free(recv);
  return wrong ? 1 : 0;
}
