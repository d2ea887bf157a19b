/* SPDX-License-Identifier: BSD-3-Clause */
/* The watch (core/watch.c) on the CPU engine: an operation that hangs is explained on every rank.
 *  - missing: 3 ranks run an AllReduce, then ranks 0 and 1 call a second one that rank 2 never
 *    calls. With MONEL_HANG_TIMEOUT=1, every rank (rank 2 too) logs one report naming rank 2 as
 *    the rank that has not called it.
 *  - mismatch: 2 ranks call AllReduce with different counts; the report says so.
 * Each rank reads its own log (NCCL_DEBUG_FILE, one per pid) from a thread of the test; once the
 * report is there, that thread revokes the comm (ncclCommRevoke), which makes the blocked call
 * return, and the rank then aborts the comm. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common.h"
#include "harness.h"

#define SLOT 1024

struct watch_case {
  int nranks;
  int skip_rank;    /* rank that never calls the second AllReduce (-1: none) */
  size_t count[8];  /* count of the second AllReduce per rank */
  const char* want; /* words every rank's report must hold */
  char* seen;       /* shared: nranks slots of SLOT bytes, the report each rank logged */
  char logdir[64];
};

struct reader {
  const struct watch_case* c;
  ncclComm_t comm;
  int rank;
  int found;
};

/* Finds the report in this process's log file; then revokes the comm. */
static void* read_log(void* arg) {
  struct reader* r = arg;
  char path[128], line[SLOT];
  snprintf(path, sizeof path, "%s/log.%d", r->c->logdir, (int)getpid());
  double t0 = test_now();
  while (!r->found && test_now() - t0 < 60) {
    FILE* f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
      if (strstr(line, "hang:")) {
        snprintf(r->c->seen + (size_t)r->rank * SLOT, SLOT, "%s", line);
        r->found = 1;
        break;
      }
    if (f) fclose(f);
    if (!r->found) usleep(20000); /* polling a file: there is no event to wait on */
  }
  ncclCommRevoke(r->comm, NCCL_REVOKE_DEFAULT);
  return NULL;
}

static int watch_rank(int rank, int nranks, ncclUniqueId id, void* arg) {
  const struct watch_case* c = arg;
  alarm(90);
  ncclComm_t comm;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  size_t n = 1 << 20;
  float* buf = calloc(4 * n, sizeof(float));
  MP_CHECK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm, NULL));
  struct reader r = {c, comm, rank, 0};
  pthread_t th;
  if (pthread_create(&th, NULL, read_log, &r) != 0) return 1;
  if (rank != c->skip_rank)
    (void)ncclAllReduce(buf, buf, c->count[rank], ncclFloat, ncclSum, comm, NULL);
  pthread_join(th, NULL);
  ncclCommAbort(comm);
  free(buf);
  if (!r.found) {
    fprintf(stderr, "rank %d: no hang report in its log\n", rank);
    return 1;
  }
  return 0;
}

static void watch_run(struct watch_case* c) {
  snprintf(c->logdir, sizeof c->logdir, "/tmp/monel-watch-%d", (int)getpid());
  CHECK(mkdir(c->logdir, 0700) == 0);
  char file[128];
  snprintf(file, sizeof file, "%s/log.%%p", c->logdir);
  setenv("NCCL_DEBUG", "WARN", 1);
  setenv("NCCL_DEBUG_FILE", file, 1);
  setenv("MONEL_HANG_TIMEOUT", "1", 1);
  c->seen = mmap(NULL, (size_t)c->nranks * SLOT, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                 -1, 0);
  CHECK(c->seen != MAP_FAILED);
  memset(c->seen, 0, (size_t)c->nranks * SLOT);
  int failed = mp_run(c->nranks, watch_rank, c);
  int ok = 0;
  for (int r = 0; r < c->nranks; r++) {
    const char* s = c->seen + (size_t)r * SLOT;
    fprintf(stderr, "rank %d logged: %s", r, s[0] ? s : "(nothing)\n");
    ok += strstr(s, c->want) != NULL;
  }
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf %s", c->logdir);
  CHECK(system(cmd) == 0);
  CHECK_EQ(failed, 0);
  CHECK_EQ(ok, c->nranks);
}

TEST(hang_report_names_missing_rank) {
  struct watch_case c = {.nranks = 3, .skip_rank = 2, .count = {1 << 20, 1 << 20, 1 << 20}};
  c.want = "Ranks that have not called it: 2 (host";
  watch_run(&c);
}

TEST(hang_report_names_mismatch) {
  struct watch_case c = {.nranks = 2, .skip_rank = -1, .count = {1 << 20, 4 << 20}};
  c.want = "Mismatch: ranks asked for a different operation at that point: rank ";
  setenv("MONEL_CHECK_CALLS", "0", 1); /* the hang report's own mismatch line, not the check */
  watch_run(&c);
}
