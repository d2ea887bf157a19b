/* What one rank holds and spends, run under monelrun (MONEL_RANK, MONEL_NRANKS): after init, and
 * again after a few AllReduce sizes and one Send/Recv with each ring neighbour, the open file
 * descriptors (/proc/self/fd), the threads (/proc/self/task) and the resident memory; then the CPU
 * time all of its threads spend while the comm sits idle for --idle seconds (utime + stime of
 * /proc/self/task/<tid>/stat, per thread name), and while one AllReduce of --bytes runs --iters
 * times. One line per rank.
 * Usage: monelrun -n N [--fake-hosts F] rank_footprint [--idle S] [--bytes B] [--iters K] */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "nccl.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != ncclSuccess) {                                                                       \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, ncclGetErrorString(r_),                       \
              ncclGetLastError(NULL));                                                             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static int count_dir(const char* path) {
  DIR* d = opendir(path);
  int n = 0;
  for (struct dirent* e; d && (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

static long rss_kb(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0) kb = atol(line + 6);
  if (f) fclose(f);
  return kb;
}

/* CPU ticks of every thread of this process; names[i]/ticks[i] per thread (at most 64). */
static int thread_ticks(char names[][32], long* ticks, int max) {
  DIR* d = opendir("/proc/self/task");
  int n = 0;
  for (struct dirent* e; d && n < max && (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    char path[300], buf[1024];
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
    FILE* f = fopen(path, "r");
    if (!f) continue;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    char *open = strchr(buf, '('), *close = strrchr(buf, ')');
    if (!open || !close) continue;
    snprintf(names[n], 32, "%.*s", (int)(close - open - 1), open + 1);
    long ut = 0, st = 0;
    /* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
     */
    sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &ut, &st);
    ticks[n++] = ut + st;
  }
  if (d) closedir(d);
  return n;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* CPU ms per thread name between two samples, as "name 12 ms, name2 0 ms". */
static void cpu_between(char* out, size_t len, char a[][32], long* ta, int na, char b[][32],
                        long* tb, int nb) {
  long hz = sysconf(_SC_CLK_TCK);
  out[0] = '\0';
  long total = 0;
  for (int i = 0; i < nb; i++) {
    long before = 0;
    for (int j = 0; j < na; j++)
      if (strcmp(a[j], b[i]) == 0) before = ta[j];
    total += tb[i] - before;
    size_t at = strlen(out);
    snprintf(out + at, len - at, "%s%s %ld", at ? ", " : "", b[i], (tb[i] - before) * 1000 / hz);
  }
  size_t at = strlen(out);
  snprintf(out + at, len - at, " (total %ld ms)", total * 1000 / hz);
}

int main(int argc, char** argv) {
  double idle = 2;
  size_t bytes = 1 << 20;
  int iters = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--idle")) idle = atof(argv[i + 1]);
    if (!strcmp(argv[i], "--bytes")) bytes = (size_t)atoll(argv[i + 1]);
    if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
  }
  const char *r = getenv("MONEL_RANK"), *nr = getenv("MONEL_NRANKS");
  if (!r || !nr) {
    fprintf(stderr, "usage: monelrun -n N rank_footprint [--idle S] [--bytes B] [--iters K]\n");
    return 2;
  }
  int rank = atoi(r), n = atoi(nr);
  ncclUniqueId id;
  ncclComm_t comm;
  CHECK(ncclGetUniqueId(&id));
  CHECK(ncclCommInitRank(&comm, n, id, rank));
  int fd0 = count_dir("/proc/self/fd"), th0 = count_dir("/proc/self/task");
  long rss0 = rss_kb();
  size_t most = bytes > (64 << 20) ? bytes : (64 << 20);
  float* buf = calloc(most / sizeof(float), sizeof(float));
  for (size_t sz = 8; sz <= (2 << 20); sz *= 64)
    CHECK(ncclAllReduce(buf, buf, sz / sizeof(float), ncclFloat32, ncclSum, comm, NULL));
  if (n > 1) { /* one message each way with each ring neighbour (by rank) */
    CHECK(ncclGroupStart());
    CHECK(ncclSend(buf, 1024, ncclFloat32, (rank + 1) % n, comm, NULL));
    CHECK(ncclRecv(buf + 1024, 1024, ncclFloat32, (rank + n - 1) % n, comm, NULL));
    CHECK(ncclGroupEnd());
  }
  int fd1 = count_dir("/proc/self/fd"), th1 = count_dir("/proc/self/task");
  long rss1 = rss_kb();
  char na[64][32], nb[64][32], nc[64][32], cpu_idle[1024], cpu_busy[1024];
  long ta[64], tb[64], tc[64];
  int ka = thread_ticks(na, ta, 64);
  double t0 = now_s();
  usleep((useconds_t)(idle * 1e6)); /* the idle period being measured */
  int kb = thread_ticks(nb, tb, 64);
  double t1 = now_s();
  for (int i = 0; i < iters; i++)
    CHECK(ncclAllReduce(buf, buf, bytes / sizeof(float), ncclFloat32, ncclSum, comm, NULL));
  double t2 = now_s();
  int kc = thread_ticks(nc, tc, 64);
  cpu_between(cpu_idle, sizeof cpu_idle, na, ta, ka, nb, tb, kb);
  cpu_between(cpu_busy, sizeof cpu_busy, nb, tb, kb, nc, tc, kc);
  printf("rank %d/%d: after init fds %d threads %d rss %ld MB; after AllReduce 8 B, 512 B, 32 KB, "
         "2 MB and "
         "Send/Recv fds %d threads %d rss %ld MB; CPU ms idle %.1f s: %s; %d x AllReduce %zu B in "
         "%.3f s: %s\n",
         rank, n, fd0, th0, rss0 / 1024, fd1, th1, rss1 / 1024, t1 - t0, cpu_idle, iters, bytes,
         t2 - t1, cpu_busy);
  CHECK(ncclCommDestroy(comm));
  free(buf);
  return 0;
}
