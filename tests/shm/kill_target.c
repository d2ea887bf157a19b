/* SPDX-License-Identifier: BSD-3-Clause */
/* A job for tests/shm/run to kill with SIGKILL at a chosen point: ranks as threads of this process
 * or as forked processes, in a loop of comm inits (init), a loop of AllReduces (coll), or in an
 * AllReduce that rank 1 never joins (hang). Each rank appends "<pid> <rank>" to the ready file
 * once it reached the point; then the job runs until it is killed.
 * Usage: shm_kill_target threads|procs init|coll|hang NRANKS READY_FILE */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common.h"

struct job {
  const char* phase;
  const char* ready;
};

static void say_ready(const struct job* j, int rank) {
  char line[64];
  int n = snprintf(line, sizeof line, "%d %d\n", (int)getpid(), rank);
  int fd = open(j->ready, O_WRONLY | O_APPEND | O_CREAT, 0600);
  if (fd >= 0) {
    if (write(fd, line, (size_t)n) != n) perror("write ready file");
    close(fd);
  }
}

static int rank_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  const struct job* j = arg;
  const size_t count = 1 << 18; /* 1 MB of floats: the ring's shared FIFOs are set up */
  float* buf = calloc(count, sizeof(float));
  ncclComm_t comm;
  if (buf == NULL) return 1;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  if (strcmp(j->phase, "hang") == 0) {
    say_ready(j, rank);
    if (rank != 1) MP_CHECK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, NULL));
    for (;;) pause();
  }
  MP_CHECK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, NULL));
  say_ready(j, rank);
  for (;;) {
    if (strcmp(j->phase, "init") == 0) { /* a fresh comm of a derived id: init over and over */
      ncclComm_t next;
      MP_CHECK(ncclCommSplit(comm, 0, rank, &next, NULL));
      MP_CHECK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, next, NULL));
      MP_CHECK(ncclCommDestroy(comm));
      comm = next;
    } else {
      MP_CHECK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, NULL));
    }
  }
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s threads|procs init|coll|hang NRANKS READY_FILE\n", argv[0]);
    return 2;
  }
  struct job j = {argv[2], argv[4]};
  int n = atoi(argv[3]);
  return strcmp(argv[1], "threads") == 0 ? mp_run_threads(n, rank_main, &j)
                                         : mp_run(n, rank_main, &j);
}
