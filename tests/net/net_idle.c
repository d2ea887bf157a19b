/* SPDX-License-Identifier: BSD-3-Clause */
/* One rank of the network path's resource check, started by monelrun with every rank its own
 * (fake) host, so that every connection between ranks goes through the network (TCP):
 *   1. AllReduce (8 B and 1 MB, on whatever algorithm the runner forces), then one Send/Recv of
 *      1 MB with each neighbour by rank, checked exactly; prints the descriptors this rank holds
 *      after init and after the operations (tests/net/run compares them across rank counts:
 *      peers this rank never talks to must cost it nothing);
 *   2. then the comm sits idle for IDLE_MS: the threads of the network path (the progress
 *      thread monel-proxy, the TCP helper threads monel-tcp) must stay asleep: together at most
 *      MAX_SLEEPS wakeups (voluntary context switches) and MAX_CPU_MS of CPU time. A thread that
 *      polls with a timeout of 1 ms wakes about 1000 times a second.
 * Exit 0 when both hold and every value was right. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common.h"
#include "thread_sample.h"

#define IDLE_MS    1000
#define MAX_SLEEPS 50 /* generous: a handful of wakeups as the last messages complete */
#define MAX_CPU_MS 10.0
#define BIG        (1 << 18) /* floats: 1 MB, above the TCP network's 64 KB inline limit */

static int count_fds(void) {
  DIR* d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent* e; d && (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n - 1; /* the directory stream's own descriptor */
}

static int is_net_thread(const char* name) {
  return strcmp(name, "monel-proxy") == 0 || strcmp(name, "monel-tcp") == 0;
}

static int operations(ncclComm_t comm, int rank, int n, float* a, float* b) {
  for (int i = 0; i < BIG; i++) a[i] = (float)(rank + 1);
  MP_CHECK(ncclAllReduce(a, b, 2, ncclFloat32, ncclSum, comm, NULL));
  MP_CHECK(ncclAllReduce(a, b, BIG, ncclFloat32, ncclSum, comm, NULL));
  for (int i = 0; i < BIG; i++)
    if (b[i] != (float)(n * (n + 1) / 2)) {
      fprintf(stderr, "rank %d: AllReduce element %d is %g, expected %d\n", rank, i, b[i],
              n * (n + 1) / 2);
      return 1;
    }
  MP_CHECK(ncclGroupStart());
  MP_CHECK(ncclSend(a, BIG, ncclFloat32, (rank + 1) % n, comm, NULL));
  MP_CHECK(ncclRecv(b, BIG, ncclFloat32, (rank + n - 1) % n, comm, NULL));
  MP_CHECK(ncclGroupEnd());
  for (int i = 0; i < BIG; i++)
    if (b[i] != (float)((rank + n - 1) % n + 1)) {
      fprintf(stderr, "rank %d: received element %d is %g, expected %d\n", rank, i, b[i],
              (rank + n - 1) % n + 1);
      return 1;
    }
  MP_CHECK(ncclAllReduce(a, b, 2, ncclFloat32, ncclSum, comm, NULL)); /* all past the Send/Recv */
  return 0;
}

int main(void) {
  const char *r = getenv("MONEL_RANK"), *nr = getenv("MONEL_NRANKS");
  if (!r || !nr) {
    fprintf(stderr, "usage: monelrun -n N --fake-hosts N net_idle\n");
    return 2;
  }
  int rank = atoi(r), n = atoi(nr);
  ncclUniqueId id;
  ncclComm_t comm;
  MP_CHECK(ncclGetUniqueId(&id));
  MP_CHECK(ncclCommInitRank(&comm, n, id, rank));
  int fd0 = count_fds();
  float *a = malloc(sizeof(float) * BIG), *b = malloc(sizeof(float) * BIG);
  if (!a || !b || operations(comm, rank, n, a, b) != 0) return 1;
  int fd1 = count_fds();
  static struct sample s0, s1;
  sample_take(&s0);
  usleep(IDLE_MS * 1000); /* the idle interval being measured */
  sample_take(&s1);
  long long ns = 0;
  long sleeps = 0;
  int threads = 0;
  for (int i = 0; i < s1.n; i++) {
    int j = sample_find(&s0, s1.tid[i]);
    if (!is_net_thread(s1.name[i]) || j < 0) continue;
    threads++;
    ns += s1.ns[i] - s0.ns[j];
    sleeps += s1.sleeps[i] - s0.sleeps[j];
  }
  printf("net_idle rank %d/%d: descriptors %d after init, %d after the operations (+%d); "
         "network-path threads %d: %.2f ms CPU, %ld sleeps in %d ms idle\n",
         rank, n, fd0, fd1, fd1 - fd0, threads, ns / 1e6, sleeps, IDLE_MS);
  int bad = threads == 0 || sleeps > MAX_SLEEPS || ns / 1e6 > MAX_CPU_MS;
  if (bad)
    fprintf(stderr,
            "rank %d: the network path is not idle: %d threads (monel-proxy, monel-tcp) woke %ld "
            "times (at most %d) and used %.2f ms of CPU (at most %.0f) in %d ms without work\n",
            rank, threads, sleeps, MAX_SLEEPS, ns / 1e6, MAX_CPU_MS, IDLE_MS);
  MP_CHECK(ncclCommDestroy(comm));
  free(a);
  free(b);
  return bad;
}
