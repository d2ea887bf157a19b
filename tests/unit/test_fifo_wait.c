/* SPDX-License-Identifier: BSD-3-Clause */
/* cpu/fifo.c: an engine thread that sleeps on a FIFO counter rings the proxy thread's doorbell
 * while it sleeps (proxy_kick, about every 10 ms), so that a network event that the proxy
 * thread's own sleep missed costs milliseconds, not a hang: tests/net/run's UCX runs hung that
 * way (ranks waiting for slots, their proxy threads asleep in UCX's poll) until a doorbell
 * rang. It still returns the slot once the sender fills it, and a progress loop's pause
 * (fifo_idle) rings it too. This test's proxy_kick is its own (-Wl,--wrap=proxy_kick): it counts
 * the rings. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/comm.h"
#include "cpu/fifo.h"
#include "harness.h"

static int kicks; /* atomic */

void __wrap_proxy_kick(void);
void __wrap_proxy_kick(void) {
  __atomic_add_fetch(&kicks, 1, __ATOMIC_SEQ_CST);
}

#define SLOT   64
#define NSLOTS 2

struct fifo_mem {
  struct fifo_ctrl* ctrl;
  char* slots;
  struct conn c;
};

static void fifo_make(struct fifo_mem* m) {
  m->ctrl = aligned_alloc(4096, FIFO_CTRL_BYTES);
  m->slots = aligned_alloc(64, NSLOTS * (FIFO_CELL_BYTES + SLOT));
  CHECK(m->ctrl != NULL && m->slots != NULL);
  memset(m->ctrl, 0, FIFO_CTRL_BYTES);
  memset(m->slots, 0, NSLOTS * (FIFO_CELL_BYTES + SLOT));
  memset(&m->c, 0, sizeof m->c);
  m->c.ctrl = m->ctrl;
  m->c.slots = m->slots;
  m->c.nslots = NSLOTS;
  m->c.slot_size = SLOT;
  m->c.peer = 1;
  m->c.peer_pid = -1; /* this process: no liveness probe */
}

static void fifo_drop(struct fifo_mem* m) {
  free(m->ctrl);
  free(m->slots);
}

/* The sender's side of slot 0: 5 bytes in the cell, then the counters. */
static void fill_slot0(struct fifo_mem* m) {
  struct fifo_cell* cell = fifo_cell(m->slots, SLOT, 0);
  memcpy(cell->data, "hello", 5);
  cell->bytes = 5;
  __atomic_store_n(&cell->seq, 1, __ATOMIC_RELEASE);
  fifo_publish(&m->ctrl->tail, 1, &m->ctrl->tail_waiting);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Until `want` rings were counted or 10 s passed: the count. */
static int kicks_reach(int want) {
  double end = now_s() + 10;
  int k;
  while ((k = __atomic_load_n(&kicks, __ATOMIC_SEQ_CST)) < want && now_s() < end) sched_yield();
  return k;
}

struct waiter {
  struct conn* c;
  struct wait_ctx* w;
  ncclResult_t res;
  const void* slot;
  size_t bytes;
};

static void* recv_main(void* arg) {
  struct waiter* x = arg;
  x->res = fifo_recv_slot(x->c, x->w, &x->slot, &x->bytes);
  return NULL;
}

TEST(a_sleeping_receiver_rings_the_proxy_until_its_slot_comes) {
  struct fifo_mem m;
  fifo_make(&m);
  struct ncclComm* comm = calloc(1, sizeof *comm); /* not aborted */
  struct task t;
  memset(&t, 0, sizeof t);
  struct wait_ctx w = {comm, &t};
  struct waiter x = {&m.c, &w, ncclInternalError, NULL, 0};
  __atomic_store_n(&kicks, 0, __ATOMIC_SEQ_CST);
  pthread_t th;
  CHECK_EQ(pthread_create(&th, NULL, recv_main, &x), 0);
  /* Nothing arrives: the receiver sleeps, and rings again and again. */
  CHECK(kicks_reach(5) >= 5);
  fill_slot0(&m);
  pthread_join(th, NULL);
  CHECK_RES(x.res, ncclSuccess);
  CHECK_EQ(x.bytes, 5);
  CHECK(x.slot != NULL && memcmp(x.slot, "hello", 5) == 0);
  free(comm);
  fifo_drop(&m);
}

TEST(a_progress_loop_pausing_on_a_fifo_rings_the_proxy) {
  struct fifo_mem m;
  fifo_make(&m);
  struct fifo_idle idle = {0, 0, 0};
  __atomic_store_n(&kicks, 0, __ATOMIC_SEQ_CST);
  double end = now_s() + 10;
  /* The loop of an engine that found nothing to move: its pauses end in 1 ms sleeps. */
  while (__atomic_load_n(&kicks, __ATOMIC_SEQ_CST) < 3 && now_s() < end)
    (void)fifo_idle(&idle, &m.c, 0);
  CHECK(__atomic_load_n(&kicks, __ATOMIC_SEQ_CST) >= 3);
  fifo_drop(&m);
}
