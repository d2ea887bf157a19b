/* SPDX-License-Identifier: BSD-3-Clause */
/* One rank of the check that a rank's descriptors and threads stay within a bound once it has
 * talked to every peer, started by monelrun (every rank its own fake host, or namespace hosts):
 * AllReduce of 8 B and 4 MB and a Broadcast of 4 MB (the plan's algorithms), an AlltoAll of
 * 256 KB per peer (above a FIFO slot, so every connection carries full slots), and a Send/Recv
 * with every peer in one group, each checked exactly. It then prints the descriptors
 * (/proc/self/fd), threads (/proc/self/task) and resident memory it holds, after init and after
 * the operations; tests/net/run compares them across rank counts and against
 * the limits given as the first two arguments (0: no limit). With a third argument `init` it
 * only times the init and prints what the rank holds after it (many ranks on few cores).
 * Exit 0 when every value was right and both limits hold.
 * Usage: monelrun ... net_fds MAX_FDS MAX_THREADS [init] */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "common.h"

#define PER_PEER (1 << 16) /* floats per peer in the AlltoAll: 256 KB */
#define BIG      (1 << 20) /* floats in the AllReduce and the Broadcast: 4 MB */

static int count_dir(const char* path) {
  DIR* d = opendir(path);
  int n = 0;
  for (struct dirent* e; d && (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

/* Descriptors, without the directory stream's own. */
static int count_fds(void) {
  return count_dir("/proc/self/fd") - 1;
}

/* The kinds of descriptors held ("socket 40, anon_inode:[eventfd] 2, ..."), for a failure's
 * message: what a readlink of each names, up to its first ':' or the whole path. */
static void fd_kinds(char* out, size_t len) {
  char kinds[32][48];
  int counts[32] = {0}, k = 0;
  DIR* d = opendir("/proc/self/fd");
  for (struct dirent* e; d && (e = readdir(d)) != NULL;) {
    char path[300], target[256];
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n < 0) continue;
    target[n] = '\0';
    char* colon = strchr(target, ':');
    if (colon && strncmp(target, "anon_inode", 10) != 0) *colon = '\0';
    int g = 0;
    while (g < k && strcmp(kinds[g], target) != 0) g++;
    if (g == k && k < 32) snprintf(kinds[k++], sizeof kinds[0], "%.47s", target);
    if (g < k) counts[g]++;
  }
  if (d) closedir(d);
  out[0] = '\0';
  for (int g = 0; g < k; g++) {
    size_t at = strlen(out);
    snprintf(out + at, len - at, "%s%s %d", g ? ", " : "", kinds[g], counts[g]);
  }
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

static int expect(int rank, const char* what, const float* b, size_t i, float want) {
  if (b[i] == want) return 0;
  fprintf(stderr, "rank %d: %s element %zu is %g, expected %g\n", rank, what, i, b[i], want);
  return 1;
}

static int collectives(ncclComm_t comm, int rank, int n, float* a, float* b) {
  for (size_t i = 0; i < BIG; i++) a[i] = (float)(rank + 1 + (int)(i % 7));
  MP_CHECK(ncclAllReduce(a, b, 2, ncclFloat32, ncclSum, comm, NULL));
  MP_CHECK(ncclAllReduce(a, b, BIG, ncclFloat32, ncclSum, comm, NULL));
  for (size_t i = 0; i < BIG; i++)
    if (expect(rank, "AllReduce", b, i, (float)(n * (n + 1) / 2 + n * (int)(i % 7)))) return 1;
  MP_CHECK(ncclBroadcast(a, b, BIG, ncclFloat32, n - 1, comm, NULL));
  for (size_t i = 0; i < BIG; i++)
    if (expect(rank, "Broadcast", b, i, (float)(n + (int)(i % 7)))) return 1;
  return 0;
}

/* Element i of the block that rank `from` sends to rank `to`. */
static float block_value(int from, int to, size_t i) {
  return (float)(from * 1000 + to + (int)(i % 5));
}

static int every_peer(ncclComm_t comm, int rank, int n, float* a, float* b) {
  for (int p = 0; p < n; p++)
    for (size_t i = 0; i < PER_PEER; i++) a[(size_t)p * PER_PEER + i] = block_value(rank, p, i);
  MP_CHECK(ncclAlltoAll(a, b, PER_PEER, ncclFloat32, comm, NULL));
  for (int p = 0; p < n; p++)
    for (size_t i = 0; i < PER_PEER; i++)
      if (expect(rank, "AlltoAll", b, (size_t)p * PER_PEER + i, block_value(p, rank, i))) return 1;
  memset(b, 0, sizeof(float) * (size_t)n * PER_PEER);
  MP_CHECK(ncclGroupStart());
  for (int p = 0; p < n; p++) {
    if (p == rank) continue;
    MP_CHECK(ncclSend(a + (size_t)p * PER_PEER, 1024, ncclFloat32, p, comm, NULL));
    MP_CHECK(ncclRecv(b + (size_t)p * PER_PEER, 1024, ncclFloat32, p, comm, NULL));
  }
  MP_CHECK(ncclGroupEnd());
  for (int p = 0; p < n; p++)
    for (size_t i = 0; p != rank && i < 1024; i++)
      if (expect(rank, "Send/Recv", b, (size_t)p * PER_PEER + i, block_value(p, rank, i))) return 1;
  return 0;
}

int main(int argc, char** argv) {
  const char *r = getenv("MONEL_RANK"), *nr = getenv("MONEL_NRANKS");
  if (!r || !nr || argc < 3) {
    fprintf(stderr, "usage: monelrun -n N --fake-hosts N net_fds MAX_FDS MAX_THREADS\n");
    return 2;
  }
  int rank = atoi(r), n = atoi(nr), max_fds = atoi(argv[1]), max_threads = atoi(argv[2]);
  ncclUniqueId id;
  ncclComm_t comm;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  MP_CHECK(ncclGetUniqueId(&id));
  MP_CHECK(ncclCommInitRank(&comm, n, id, rank));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  int fd0 = count_fds(), th0 = count_dir("/proc/self/task");
  long rss0 = rss_kb();
  double init_s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  if (argc > 3 && strcmp(argv[3], "init") == 0) {
    printf("net_fds rank %d/%d: init %.3f s; after init descriptors %d threads %d rss_kb %ld\n",
           rank, n, init_s, fd0, th0, rss0);
    MP_CHECK(ncclCommDestroy(comm));
    return 0;
  }
  size_t len = (size_t)n * PER_PEER > BIG ? (size_t)n * PER_PEER : BIG;
  float *a = malloc(sizeof(float) * len), *b = malloc(sizeof(float) * len);
  if (!a || !b || collectives(comm, rank, n, a, b) != 0 || every_peer(comm, rank, n, a, b) != 0)
    return 1;
  int fd1 = count_fds(), th1 = count_dir("/proc/self/task");
  long rss1 = rss_kb();
  printf("net_fds rank %d/%d: init %.3f s; after init descriptors %d threads %d rss_kb %ld; after "
         "every peer descriptors %d threads %d rss_kb %ld\n",
         rank, n, init_s, fd0, th0, rss0, fd1, th1, rss1);
  int bad = (max_fds > 0 && fd1 > max_fds) || (max_threads > 0 && th1 > max_threads);
  if (bad || getenv("NET_FDS_KINDS") != NULL) {
    char kinds[2048];
    fd_kinds(kinds, sizeof kinds);
    fprintf(stderr,
            "rank %d of %d: holds %d descriptors (%s) and %d threads after talking to every "
            "peer; the bound is %d descriptors and %d threads\n",
            rank, n, fd1, kinds, th1, max_fds, max_threads);
  }
  MP_CHECK(ncclCommDestroy(comm));
  free(a);
  free(b);
  return bad;
}
