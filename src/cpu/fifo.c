/* SPDX-License-Identifier: BSD-3-Clause */
/* Waiting on a FIFO counter. Ranks often outnumber cores, so a waiter spins only a little, then
 * yields, then sleeps on a futex that the other side wakes when it moves the counter. Sleeps are
 * bounded (MONEL_PEER_CHECK_MS) so a waiter notices a dead peer or an abort. */
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "util/check.h"
#include "util/param.h"
#include "cpu/cpu.h"
#include "proxy/proxy.h"

static void futex_wait(uint32_t* addr, uint32_t val, int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  syscall(SYS_futex, addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

void fifo_wake(uint32_t* addr) {
  syscall(SYS_futex, addr, FUTEX_WAKE, 1, NULL, NULL, 0);
}

void fifo_notify(uint32_t* addr, uint32_t who) {
  if (who == FIFO_WAITING_PROXY)
    proxy_kick();
  else
    fifo_wake(addr);
}

/* A process is gone when signalling it fails or it is a zombie. */
static int process_dead(int pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return 1;
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = fopen(path, "r");
  if (!f) return 1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char* close_paren = strrchr(buf, ')');
  return close_paren && close_paren[1] == ' ' && (close_paren[2] == 'Z' || close_paren[2] == 'X');
}

#define FIFO_PREFAULT_BYTES 16384 /* one-shot AllReduce sizes, the small Send/Recv messages */

void fifo_prefault(struct conn* c) {
#ifdef MADV_POPULATE_WRITE
  if (c->slots == NULL) return;
  size_t len =
      FIFO_CELL_BYTES + (c->slot_size < FIFO_PREFAULT_BYTES ? c->slot_size : FIFO_PREFAULT_BYTES);
  for (int i = 0; i < c->nslots; i++) {
    uintptr_t first = (uintptr_t)fifo_cell(c->slots, c->slot_size, (uint32_t)i);
    uintptr_t page = first & ~(uintptr_t)4095;
    madvise((void*)page, first + len - page, MADV_POPULATE_WRITE);
  }
#else
  (void)c;
#endif
}

/* Remember the first peer known to be gone: close_all passes it on to the other peers. */
static void note_lost(struct ncclComm* comm, int rank) {
  struct cpu_comm* cc = comm->engine_state;
  int none = -1;
  __atomic_compare_exchange_n(&cc->lost_rank, &none, rank, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

ncclResult_t fifo_check(const struct conn* c, const struct wait_ctx* w) {
  if (comm_aborted(w->comm)) {
    WARN("%s #%llu on rank %d: the communicator was aborted while waiting on rank %d",
         coll_name(w->task->coll), (unsigned long long)w->task->seq, w->comm->rank, c->peer);
    return ncclRemoteError;
  }
  uint32_t closed = __atomic_load_n(&c->ctrl->closed, __ATOMIC_ACQUIRE);
  int dead = 0;
  if (!closed && c->peer_pid > 0 && process_dead(c->peer_pid)) {
    /* A peer that stopped for an error of its own closed its FIFOs before it exited: say why. */
    dead = 1;
    closed = __atomic_load_n(&c->ctrl->closed, __ATOMIC_ACQUIRE);
  }
  /* A goodbye comes after the peer's last message: a receiver that has not taken what arrived
   * before it yet (its progress loop looks again) is not waiting on a peer that left. */
  if (closed == FIFO_CLOSED_GONE && c->owner && c->slots != NULL &&
      fifo_reached(&fifo_cell(c->slots, c->slot_size, c->slot)->seq, c->pos + 1))
    return ncclSuccess;
  if (closed) {
    const char* host = w->comm->peers[c->peer].host;
    uint32_t lost = __atomic_load_n(&c->ctrl->lost, __ATOMIC_ACQUIRE);
    if (closed == FIFO_CLOSED_LOST) note_lost(w->comm, c->peer);
    if (closed == FIFO_CLOSED_PEER && lost > 0 && lost <= (uint32_t)w->comm->nranks) {
      const struct peer_info* p = &w->comm->peers[lost - 1];
      note_lost(w->comm, (int)lost - 1);
      WARN("%s #%llu on rank %d: peer rank %d stopped this operation because it lost peer rank %d "
           "(host %s, pid %d): that process exited or was killed, or its connection broke",
           coll_name(w->task->coll), (unsigned long long)w->task->seq, w->comm->rank, c->peer,
           (int)lost - 1, p->host, p->pid);
    } else if (closed == FIFO_CLOSED_LOST)
      WARN("%s #%llu on rank %d: the connection with peer rank %d (host %s) broke: the process "
           "exited or was killed, or the network failed",
           coll_name(w->task->coll), (unsigned long long)w->task->seq, w->comm->rank, c->peer,
           host);
    else if (closed == FIFO_CLOSED_GONE)
      WARN("%s #%llu on rank %d: peer rank %d (host %s) destroyed its communicator while this "
           "rank still waits on it: do all ranks call the same operations?",
           coll_name(w->task->coll), (unsigned long long)w->task->seq, w->comm->rank, c->peer,
           host);
    else
      WARN("%s #%llu on rank %d: peer rank %d stopped this operation after an error of its own",
           coll_name(w->task->coll), (unsigned long long)w->task->seq, w->comm->rank, c->peer);
    return ncclRemoteError;
  }
  if (dead) {
    const struct peer_info* p = &w->comm->peers[c->peer];
    note_lost(w->comm, c->peer);
    WARN("%s #%llu on rank %d: peer rank %d (host %s, pid %d) is gone: the process exited or "
         "was killed",
         coll_name(w->task->coll), (unsigned long long)w->task->seq, w->comm->rank, c->peer,
         p->host, p->pid);
    return ncclRemoteError;
  }
  return ncclSuccess;
}

/* Rounds of a progress loop that poll again at once, before fifo_idle pauses between polls. */
#define IDLE_HOT_ROUNDS 64

/* MONEL_CPU_SPIN and MONEL_PEER_CHECK_MS, read once per process. */
static int64_t cfg_spin = -1, cfg_check_ms;

static int64_t wait_params(int64_t* check_ms) {
  int64_t spin = __atomic_load_n(&cfg_spin, __ATOMIC_ACQUIRE);
  if (spin < 0) {
    __atomic_store_n(&cfg_check_ms, param_int(PARAM_PEER_CHECK_MS), __ATOMIC_RELAXED);
    spin = param_int(PARAM_CPU_SPIN);
    __atomic_store_n(&cfg_spin, spin, __ATOMIC_RELEASE);
  }
  *check_ms = __atomic_load_n(&cfg_check_ms, __ATOMIC_RELAXED);
  return spin;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

/* A sleeping waiter wakes the proxy thread every NUDGE_MS (proxy_kick: a system call only while
 * that thread sleeps). The thread sleeps on the network's own wake-up descriptor, and a network
 * may not announce every event there: over UCX's TCP, tests/net/run's 2-host check left its
 * ranks waiting for slots and their proxy threads asleep in UCX's poll in 5 runs of 627 under load,
 * each ended by ringing the doorbells (docs/logs/ucx-wake, in git's history). A pass of the
 * thread makes the network progress, so a lost announcement costs at most NUDGE_MS. An idle comm
 * has no waiter, so its proxy thread stays asleep. */
#define NUDGE_MS 10

/* Wait until (int32)(*word - target) >= 0. While it spins and yields it polls `poll`, a word
 * that reaches target no later than *word (the cell of the slot a receiver waits for); it
 * sleeps on *word, nudging the proxy thread, and checks its peers every MONEL_PEER_CHECK_MS. */
static ncclResult_t wait_counter(uint32_t* word, const uint32_t* poll, uint32_t* waiting,
                                 uint32_t target, const struct conn* c, const struct wait_ctx* w) {
  int64_t check_ms, spin = wait_params(&check_ms);
  for (int64_t i = 0; i < spin; i++) {
    if (fifo_reached(poll, target)) return ncclSuccess;
    __builtin_ia32_pause();
  }
  for (int i = 0; i < 16; i++) {
    if (fifo_reached(poll, target)) return ncclSuccess;
    sched_yield();
  }
  int nap_ms = check_ms < NUDGE_MS ? (int)check_ms : NUDGE_MS;
  double next_check = now_ms() + (double)check_ms;
  for (;;) {
    __atomic_store_n(waiting, 1, __ATOMIC_SEQ_CST);
    uint32_t v = __atomic_load_n(word, __ATOMIC_SEQ_CST);
    if ((int32_t)(v - target) >= 0) break;
    futex_wait(word, v, nap_ms);
    if (fifo_reached(word, target)) break;
    proxy_kick();
    /* A close or an abort (which wake the waiter) at once, a dead peer's process at check time */
    if (__atomic_load_n(&c->ctrl->closed, __ATOMIC_ACQUIRE) || comm_aborted(w->comm) ||
        now_ms() >= next_check) {
      NCCLCHECK(fifo_check(c, w));
      next_check = now_ms() + (double)check_ms;
    }
  }
  __atomic_store_n(waiting, 0, __ATOMIC_RELAXED);
  return ncclSuccess;
}

ncclResult_t fifo_send_slot(struct conn* c, const struct wait_ctx* w, void** slot) {
  if (!fifo_send_ready(c)) {
    uint32_t need = c->pos - (uint32_t)c->nslots + 1;
    NCCLCHECK(wait_counter(&c->ctrl->head, &c->ctrl->head, &c->ctrl->head_waiting, need, c, w));
    c->head_seen = __atomic_load_n(&c->ctrl->head, __ATOMIC_ACQUIRE);
  }
  *slot = fifo_data(c->slots, c->slot_size, c->slot);
  return ncclSuccess;
}

ncclResult_t fifo_recv_slot(struct conn* c, const struct wait_ctx* w, const void** slot,
                            size_t* bytes) {
  const uint32_t* seq = &fifo_cell(c->slots, c->slot_size, c->slot)->seq;
  NCCLCHECK(wait_counter(&c->ctrl->tail, seq, &c->ctrl->tail_waiting, c->pos + 1, c, w));
  fifo_recv_take(c, slot, bytes);
  return ncclSuccess;
}

ncclResult_t fifo_send_drain(struct conn* c, const struct wait_ctx* w) {
  return wait_counter(&c->ctrl->head, &c->ctrl->head, &c->ctrl->head_waiting, c->pos, c, w);
}

void fifo_close(struct conn* c, int lost_rank) {
  if (c->ctrl == NULL) return;
  uint32_t none = 0;
  if (lost_rank >= 0)
    __atomic_compare_exchange_n(&c->ctrl->lost, &none, (uint32_t)lost_rank + 1, 0, __ATOMIC_SEQ_CST,
                                __ATOMIC_SEQ_CST);
  __atomic_store_n(&c->ctrl->closed, FIFO_CLOSED_PEER, __ATOMIC_SEQ_CST);
  fifo_wake(&c->ctrl->head);
  fifo_wake(&c->ctrl->tail);
  /* On a network FIFO the proxy thread tells the peer (net_link.c): wake it if it sleeps. */
  if (__atomic_load_n(&c->ctrl->head_waiting, __ATOMIC_SEQ_CST) == FIFO_WAITING_PROXY ||
      __atomic_load_n(&c->ctrl->tail_waiting, __ATOMIC_SEQ_CST) == FIFO_WAITING_PROXY)
    proxy_kick();
}

void fifo_idle_reset(struct fifo_idle* idle) {
  idle->rounds = 0;
}

int fifo_idle(struct fifo_idle* idle, struct conn* c, int is_send) {
  int64_t check_ms, spin = wait_params(&check_ms);
  int64_t r = idle->rounds++;
  if (r < spin) { /* the caller polls again after each round: at first without a pause */
    if (r >= IDLE_HOT_ROUNDS) __builtin_ia32_pause();
    return 0;
  }
  if (r == spin && idle->last_check == 0) idle->last_check = now_ms();
  if (r < spin + 16 || c == NULL) {
    sched_yield();
  } else {
    uint32_t* word = is_send ? &c->ctrl->head : &c->ctrl->tail;
    uint32_t* waiting = is_send ? &c->ctrl->head_waiting : &c->ctrl->tail_waiting;
    uint32_t target = is_send ? c->pos - (uint32_t)c->nslots + 1 : c->pos + 1;
    __atomic_store_n(waiting, 1, __ATOMIC_SEQ_CST);
    uint32_t v = __atomic_load_n(word, __ATOMIC_SEQ_CST);
    if ((int32_t)(v - target) < 0) futex_wait(word, v, 1);
    __atomic_store_n(waiting, 0, __ATOMIC_RELAXED);
  }
  double t = now_ms();
  if (r >= spin + 16 && c != NULL && t - idle->last_nudge >= NUDGE_MS) { /* as wait_counter */
    proxy_kick();
    idle->last_nudge = t;
  }
  if (t - idle->last_check < (double)check_ms) return 0;
  idle->last_check = t;
  return 1;
}
