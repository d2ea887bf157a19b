/* Waiting on a FIFO counter. Ranks often outnumber cores, so a waiter spins only a little, then
 * yields, then sleeps on a futex that the other side wakes when it moves the counter. Sleeps are
 * bounded (MONEL_PEER_CHECK_MS) so a waiter notices a dead peer or an abort. */
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "core/check.h"
#include "core/param.h"
#include "cpu/fifo.h"

static void futex_wait(uint32_t* addr, uint32_t val, int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  syscall(SYS_futex, addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void futex_wake(uint32_t* addr) {
  syscall(SYS_futex, addr, FUTEX_WAKE, 1, NULL, NULL, 0);
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

ncclResult_t fifo_check(const struct conn* c, const struct wait_ctx* w) {
  if (comm_aborted(w->comm)) {
    WARN("%s #%llu on rank %d: the communicator was aborted while waiting on rank %d",
         coll_name(w->task->coll), (unsigned long long)w->task->seq, w->comm->rank, c->peer);
    return ncclRemoteError;
  }
  uint32_t closed = __atomic_load_n(&c->ctrl->closed, __ATOMIC_ACQUIRE);
  if (closed) {
    const char* host = w->comm->peers[c->peer].host;
    if (closed == FIFO_CLOSED_LOST)
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
  if (c->peer_pid > 0 && process_dead(c->peer_pid)) {
    const struct peer_info* p = &w->comm->peers[c->peer];
    WARN("%s #%llu on rank %d: peer rank %d (host %s, pid %d) is gone: the process exited or "
         "was killed",
         coll_name(w->task->coll), (unsigned long long)w->task->seq, w->comm->rank, c->peer,
         p->host, p->pid);
    return ncclRemoteError;
  }
  return ncclSuccess;
}

/* Wait until (int32)(*word - target) >= 0. */
static ncclResult_t wait_counter(uint32_t* word, uint32_t* waiting, uint32_t target,
                                 const struct conn* c, const struct wait_ctx* w) {
  static __thread int64_t spin = -1, check_ms;
  if (spin < 0) spin = param_int(PARAM_CPU_SPIN), check_ms = param_int(PARAM_PEER_CHECK_MS);
  for (int64_t i = 0; i < spin; i++) {
    if ((int32_t)(__atomic_load_n(word, __ATOMIC_ACQUIRE) - target) >= 0) return ncclSuccess;
    __builtin_ia32_pause();
  }
  for (int i = 0; i < 16; i++) {
    if ((int32_t)(__atomic_load_n(word, __ATOMIC_ACQUIRE) - target) >= 0) return ncclSuccess;
    sched_yield();
  }
  for (;;) {
    __atomic_store_n(waiting, 1, __ATOMIC_SEQ_CST);
    uint32_t v = __atomic_load_n(word, __ATOMIC_SEQ_CST);
    if ((int32_t)(v - target) >= 0) break;
    futex_wait(word, v, (int)check_ms);
    if ((int32_t)(__atomic_load_n(word, __ATOMIC_ACQUIRE) - target) >= 0) break;
    NCCLCHECK(fifo_check(c, w));
  }
  __atomic_store_n(waiting, 0, __ATOMIC_RELAXED);
  return ncclSuccess;
}

static void publish(uint32_t* word, uint32_t value, uint32_t* waiting) {
  __atomic_store_n(word, value, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(waiting, __ATOMIC_SEQ_CST)) futex_wake(word);
}

ncclResult_t fifo_send_slot(struct conn* c, const struct wait_ctx* w, void** slot) {
  NCCLCHECK(
      wait_counter(&c->ctrl->head, &c->ctrl->head_waiting, c->pos - (uint32_t)c->nslots + 1, c, w));
  *slot = c->slots + (size_t)(c->pos % (uint32_t)c->nslots) * c->slot_size;
  return ncclSuccess;
}

void fifo_send_post(struct conn* c, size_t bytes) {
  c->ctrl->sizes[c->pos % (uint32_t)c->nslots] = bytes;
  c->pos++;
  publish(&c->ctrl->tail, c->pos, &c->ctrl->tail_waiting);
}

ncclResult_t fifo_recv_slot(struct conn* c, const struct wait_ctx* w, const void** slot,
                            size_t* bytes) {
  NCCLCHECK(wait_counter(&c->ctrl->tail, &c->ctrl->tail_waiting, c->pos + 1, c, w));
  uint32_t i = c->pos % (uint32_t)c->nslots;
  *slot = c->slots + (size_t)i * c->slot_size;
  *bytes = c->ctrl->sizes[i];
  return ncclSuccess;
}

void fifo_recv_release(struct conn* c) {
  c->pos++;
  publish(&c->ctrl->head, c->pos, &c->ctrl->head_waiting);
}

void fifo_close(struct conn* c) {
  if (c->ctrl == NULL) return;
  __atomic_store_n(&c->ctrl->closed, 1, __ATOMIC_SEQ_CST);
  futex_wake(&c->ctrl->head);
  futex_wake(&c->ctrl->tail);
}

int fifo_send_try(struct conn* c, void** slot) {
  uint32_t head = __atomic_load_n(&c->ctrl->head, __ATOMIC_ACQUIRE);
  if ((int32_t)(head - (c->pos - (uint32_t)c->nslots + 1)) < 0) return 0;
  *slot = c->slots + (size_t)(c->pos % (uint32_t)c->nslots) * c->slot_size;
  return 1;
}

int fifo_recv_try(struct conn* c, const void** slot, size_t* bytes) {
  uint32_t tail = __atomic_load_n(&c->ctrl->tail, __ATOMIC_ACQUIRE);
  if ((int32_t)(tail - (c->pos + 1)) < 0) return 0;
  uint32_t i = c->pos % (uint32_t)c->nslots;
  *slot = c->slots + (size_t)i * c->slot_size;
  *bytes = c->ctrl->sizes[i];
  return 1;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

void fifo_idle_reset(struct fifo_idle* idle) {
  idle->rounds = 0;
}

int fifo_idle(struct fifo_idle* idle, struct conn* c, int is_send) {
  static __thread int64_t spin = -1, check_ms;
  if (spin < 0) spin = param_int(PARAM_CPU_SPIN), check_ms = param_int(PARAM_PEER_CHECK_MS);
  int64_t r = idle->rounds++;
  if (r == 0 && idle->last_check == 0) idle->last_check = now_ms();
  if (r < spin / 16) {
    for (int i = 0; i < 16; i++) __builtin_ia32_pause();
    return 0;
  }
  if (r < spin / 16 + 16 || c == NULL) {
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
  if (t - idle->last_check < (double)check_ms) return 0;
  idle->last_check = t;
  return 1;
}
