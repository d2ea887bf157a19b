/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU engine's side of a transport FIFO: wait for a slot (spin briefly, yield, then sleep on
 * a futex, checking that the peer is alive and the comm not aborted), fill or drain it, post. */
#ifndef MONEL_CPU_FIFO_H
#define MONEL_CPU_FIFO_H
#include <string.h>
#include "core/comm.h"
#include "cpu/prof.h"
#include "transport/transport.h"

/* What a wait reports when it fails: which operation was waiting. */
struct wait_ctx {
  struct ncclComm* comm;
  const struct task* task;
};

/* Sender: wait for a free slot and return it. */
ncclResult_t fifo_send_slot(struct conn* c, const struct wait_ctx* w, void** slot);
/* Receiver: wait for a filled slot and return it with its size. */
ncclResult_t fifo_recv_slot(struct conn* c, const struct wait_ctx* w, const void** slot,
                            size_t* bytes);
/* Wake a side that sleeps on *addr. */
void fifo_wake(uint32_t* addr);
/* Wake whoever a waiting word names (`who`, transport.h): the thread sleeping on *addr, or the
 * proxy thread through its doorbell. */
void fifo_notify(uint32_t* addr, uint32_t who);
/* Map the cell and the first FIFO_PREFAULT_BYTES of data of every slot of a point-to-point
 * connection into this process now (where the kernel can), so that the first small messages
 * of each size do not each pay a page fault. */
void fifo_prefault(struct conn* c);

/* The operations of every slot, inline: posting and taking a small message costs a few stores
 * and loads, no call. */

static inline int fifo_reached(const uint32_t* word, uint32_t target) {
  return (int32_t)(__atomic_load_n(word, __ATOMIC_ACQUIRE) - target) >= 0;
}

/* Store a counter, then wake the other side if it sleeps on it (both sides order their store
 * and load with SEQ_CST, so that one of them sees the other's). */
static inline void fifo_publish(uint32_t* word, uint32_t value, uint32_t* waiting) {
  __atomic_store_n(word, value, __ATOMIC_SEQ_CST);
  uint32_t who = __atomic_load_n(waiting, __ATOMIC_SEQ_CST);
  if (who) fifo_notify(word, who);
}

/* The sender reads head only when the head it saw last leaves no free slot. */
static inline int fifo_send_ready(struct conn* c) {
  uint32_t need = c->pos - (uint32_t)c->nslots + 1;
  if ((int32_t)(c->head_seen - need) >= 0) return 1;
  c->head_seen = __atomic_load_n(&c->ctrl->head, __ATOMIC_ACQUIRE);
  return (int32_t)(c->head_seen - need) >= 0;
}

static inline void fifo_advance(struct conn* c) {
  c->pos++;
  if (++c->slot == (uint32_t)c->nslots) c->slot = 0;
}

/* n <= FIFO_INLINE_BYTES bytes, without a call to the C library. */
static inline void fifo_copy_small(unsigned char* d, const unsigned char* s, size_t n) {
  if (n >= 16) {
    memcpy(d, s, 16);
    if (n > 32) memcpy(d + 16, s + 16, 16);
    memcpy(d + n - 16, s + n - 16, 16);
  } else if (n >= 8) {
    memcpy(d, s, 8);
    memcpy(d + n - 8, s + n - 8, 8);
  } else if (n >= 4) {
    memcpy(d, s, 4);
    memcpy(d + n - 4, s + n - 4, 4);
  } else {
    for (size_t i = 0; i < n; i++) d[i] = s[i];
  }
}

/* Size, then the cell's sequence number, then tail (the data is in place): whoever sees one of
 * the last two sees everything before it. */
static inline void fifo_post(struct conn* c, struct fifo_cell* cell, size_t bytes) {
  if (__builtin_expect(c->prof != NULL, 0)) cpu_prof_sent(c, bytes);
  cell->bytes = bytes;
  fifo_advance(c);
  __atomic_store_n(&cell->seq, c->pos, __ATOMIC_RELEASE);
  fifo_publish(&c->ctrl->tail, c->pos, &c->ctrl->tail_waiting);
}

/* Sender: publish the slot returned by fifo_send_slot or fifo_send_try, holding `bytes`. */
static inline void fifo_send_post(struct conn* c, size_t bytes) {
  struct fifo_cell* cell = fifo_cell(c->slots, c->slot_size, c->slot);
  size_t len = bytes & FIFO_SIZE_BYTES;
  if (len <= FIFO_INLINE_BYTES)
    fifo_copy_small(cell->data, (unsigned char*)cell + FIFO_CELL_BYTES, len);
  fifo_post(c, cell, bytes);
}

/* Sender: copy `bytes` (flags aside) from src into the free slot (the one fifo_send_slot or
 * fifo_send_try returned) and publish it; small ones go straight into the slot's cell. */
static inline void fifo_send_copy_post(struct conn* c, const void* src, size_t bytes) {
  struct fifo_cell* cell = fifo_cell(c->slots, c->slot_size, c->slot);
  size_t len = bytes & FIFO_SIZE_BYTES;
  if (len <= FIFO_INLINE_BYTES)
    fifo_copy_small(cell->data, src, len);
  else
    memcpy((char*)cell + FIFO_CELL_BYTES, src, len);
  fifo_post(c, cell, bytes);
}

static inline void fifo_recv_take(struct conn* c, const void** slot, size_t* bytes) {
  uint64_t b = fifo_cell(c->slots, c->slot_size, c->slot)->bytes;
  *slot = fifo_payload(c->slots, c->slot_size, c->slot, b);
  *bytes = b;
  if (__builtin_expect(c->prof != NULL, 0)) cpu_prof_taken(c, b);
}

/* Receiver: give the slot back to the sender. */
static inline void fifo_recv_release(struct conn* c) {
  if (__builtin_expect(c->prof != NULL, 0)) cpu_prof_released(c);
  fifo_advance(c);
  fifo_publish(&c->ctrl->head, c->pos, &c->ctrl->head_waiting);
}

/* Non-blocking forms for a progress loop over many connections: 1 and the slot when one is
 * ready, 0 when not (nothing changes then). Post and release as above. */
static inline int fifo_send_try(struct conn* c, void** slot) {
  if (!fifo_send_ready(c)) return 0;
  *slot = fifo_data(c->slots, c->slot_size, c->slot);
  return 1;
}

static inline int fifo_recv_try(struct conn* c, const void** slot, size_t* bytes) {
  if (!fifo_reached(&fifo_cell(c->slots, c->slot_size, c->slot)->seq, c->pos + 1)) return 0;
  fifo_recv_take(c, slot, bytes);
  return 1;
}

/* Fails (and WARNs once, naming the op and the peer) if the comm was aborted, the peer closed
 * the connection or the peer process is gone. A peer found gone, or named by a peer that
 * stopped because it lost it, is remembered for fifo_close. */
ncclResult_t fifo_check(const struct conn* c, const struct wait_ctx* w);

/* A progress loop's waiting when a round moved nothing: spin, then yield, then sleep at most
 * a millisecond on the counter of `c` that this side waits for (send: head, receive: tail),
 * ringing the proxy thread's doorbell every NUDGE_MS while it sleeps (fifo.c). Call
 * fifo_idle_reset after a round that moved something. fifo_idle returns 1 when the peers
 * should be checked with fifo_check (about every MONEL_PEER_CHECK_MS). */
struct fifo_idle {
  int64_t rounds;
  double last_check;
  double last_nudge; /* when it last rang the proxy thread's doorbell (fifo.c NUDGE_MS) */
};
void fifo_idle_reset(struct fifo_idle* idle);
int fifo_idle(struct fifo_idle* idle, struct conn* c, int is_send);

/* Sender: wait until every slot posted so far was sent (head reaches pos). */
ncclResult_t fifo_send_drain(struct conn* c, const struct wait_ctx* w);

/* Tell the other side that this side failed (it stops waiting with an error); lost_rank >= 0:
 * because that rank is gone (the other side names it in its error). */
void fifo_close(struct conn* c, int lost_rank);

#endif
