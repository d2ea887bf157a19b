/* SPDX-License-Identifier: BSD-3-Clause */
/* The host progress thread: see proxy.h. It passes over the live network links and the GPU's
 * network FIFO connections (fifo_net.h) without sleeping while data moves, yields for a while
 * when nothing did, then sleeps in net_link_wait: it first arms the links' waiting words
 * (net_link_arm), so that an executor that posts a slot or frees one rings the doorbell
 * (proxy_kick), makes one more pass to catch what was posted before, and sleeps until a socket
 * or the doorbell wakes it, without a timeout when every link is up and the network has a
 * doorbell (net.h's wait and wake: the built-in TCP and UCX networks), else briefly. While GPU
 * network connections exist it cannot sleep for long: a kernel's tail is a word in host memory
 * that no socket announces, and a graph replay enqueues nothing the host could see. So the thread
 * polls, napping NAP_NS at a time after IDLE_SPINS idle passes, and once nothing has moved for
 * DEEP_AFTER_NS it sleeps on the doorbell DEEP_MS at a time: the GPU engine rings it when it
 * enqueues work (gpu_run), a socket's news wakes it, and a graph replay's first step waits at
 * most DEEP_MS. Napping NAP_NS for ever woke every idle rank's thread thousands of times a second,
 * a CPU cost measured on a GPU host ("The network path's CPU time" in git's history of
 * docs/PERFORMANCE.md at 212cdd8). */
#include "proxy/proxy.h"
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util/check.h"
#include "proxy/fifo_net.h"
#include "transport/net_link.h"

#define IDLE_YIELDS   64     /* passes that yield before the thread sleeps on the sockets */
#define IDLE_SPINS    200000 /* with GPU network connections: idle passes before it naps */
#define NAP_NS        20000
#define DEEP_AFTER_NS 20000000LL /* idle this long (with GPU connections): doorbell sleeps */
#define DEEP_MS       1

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const void** holders;
static int nholders, cap;
static pthread_t thread;
static int running, stop;
static int asleep; /* the thread armed the links to sleep: the first kick wakes it, others not */
static unsigned gpu_work; /* proxy_expect_gpu_work's count: the thread polls afresh when it moves */

/* Sleeps until there may be work (see the top of the file), at most ms milliseconds (< 0: no
 * limit unless the links need one); with GPU connections (gpu) the pass after arming covers them
 * too. 1 if that pass moved something (it did not sleep then). */
static int sleep_until_work(int ms, int gpu) {
  __atomic_store_n(&asleep, 1, __ATOMIC_SEQ_CST); /* before any waiting word names the thread */
  int bounded = net_link_arm(1);
  int moved = net_link_progress();
  if (gpu) moved |= fifo_net_progress();
  if (!moved && !__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) net_link_wait(bounded ? 1 : ms);
  __atomic_store_n(&asleep, 0, __ATOMIC_SEQ_CST);
  net_link_arm(0);
  return moved;
}

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void* proxy_main(void* arg) {
  (void)arg;
  int idle = 0;
  long long napping_since = 0; /* when the naps began (0: not napping) */
  unsigned seen = 0;           /* gpu_work at the last pass */
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    int moved = net_link_progress();
    moved |= fifo_net_progress();
    unsigned work = __atomic_load_n(&gpu_work, __ATOMIC_ACQUIRE);
    if (moved || work != seen) {
      idle = 0, napping_since = 0, seen = work;
    } else if (fifo_net_active()) {
      if (idle < IDLE_SPINS) {
        idle++;
        sched_yield();
      } else if (napping_since == 0 || now_ns() - napping_since < DEEP_AFTER_NS) {
        if (napping_since == 0) napping_since = now_ns();
        struct timespec nap = {0, NAP_NS};
        nanosleep(&nap, NULL);
      } else if (sleep_until_work(DEEP_MS, 1)) {
        idle = 0, napping_since = 0;
      }
    } else if (++idle < IDLE_YIELDS) {
      sched_yield();
    } else if (sleep_until_work(-1, 0)) {
      idle = 0, napping_since = 0;
    }
  }
  return NULL;
}

/* A child of fork() has no progress thread and none of the parent's communicators. */
static void after_fork_child(void) {
  pthread_mutex_init(&lock, NULL);
  holders = NULL, nholders = cap = 0; /* the parent's array stays with the parent */
  running = 0;
  net_link_forget();
  fifo_net_forget();
}

static void register_fork_handler(void) {
  pthread_atfork(NULL, NULL, after_fork_child);
}

ncclResult_t proxy_acquire(const void* holder) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  ncclResult_t res = ncclSuccess;
  pthread_once(&once, register_fork_handler);
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nholders; i++)
    if (holders[i] == holder) goto out;
  if (nholders == cap) {
    int want = cap ? 2 * cap : 8;
    const void** bigger = realloc(holders, sizeof *holders * (size_t)want);
    if (bigger == NULL) {
      WARN("out of host memory registering a communicator with the progress thread");
      res = ncclSystemError;
      goto out;
    }
    holders = bigger;
    cap = want;
  }
  if (!running) {
    __atomic_store_n(&stop, 0, __ATOMIC_RELEASE);
    int err = pthread_create(&thread, NULL, proxy_main, NULL);
    if (err != 0) {
      WARN("could not start the progress thread for TCP connections: %s", strerror(err));
      res = ncclSystemError;
      goto out;
    }
    pthread_setname_np(thread, "monel-proxy");
    running = 1;
  }
  holders[nholders++] = holder;
out:
  pthread_mutex_unlock(&lock);
  return res;
}

void proxy_release(const void* holder) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nholders; i++)
    if (holders[i] == holder) {
      holders[i] = holders[--nholders];
      break;
    }
  if (nholders == 0 && running) {
    __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
    net_link_kick();
    pthread_join(thread, NULL);
    running = 0;
  }
  pthread_mutex_unlock(&lock);
}

/* Only the first kick after the thread armed the links makes the system call: the others find
 * it awake, or about to make a pass that sees their counters. */
void proxy_kick(void) {
  if (__atomic_exchange_n(&asleep, 0, __ATOMIC_ACQ_REL)) net_link_kick();
}

void proxy_expect_gpu_work(void) {
  __atomic_add_fetch(&gpu_work, 1, __ATOMIC_RELEASE);
  proxy_kick();
}
