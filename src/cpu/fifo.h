/* The CPU engine's side of a transport FIFO: wait for a slot (spin briefly, yield, then sleep on
 * a futex, checking that the peer is alive and the comm not aborted), fill or drain it, post. */
#ifndef MONEL_CPU_FIFO_H
#define MONEL_CPU_FIFO_H
#include "core/comm.h"
#include "transport/transport.h"

/* What a wait reports when it fails: which operation was waiting. */
struct wait_ctx {
  struct ncclComm* comm;
  const struct task* task;
};

/* Sender: wait for a free slot and return it. */
ncclResult_t fifo_send_slot(struct conn* c, const struct wait_ctx* w, void** slot);
/* Sender: publish the slot returned by fifo_send_slot, holding `bytes`. */
void fifo_send_post(struct conn* c, size_t bytes);
/* Receiver: wait for a filled slot and return it with its size. */
ncclResult_t fifo_recv_slot(struct conn* c, const struct wait_ctx* w, const void** slot,
                            size_t* bytes);
/* Receiver: give the slot back to the sender. */
void fifo_recv_release(struct conn* c);

/* Non-blocking forms for a progress loop over many connections: 1 and the slot when one is
 * ready, 0 when not (nothing changes then). Post and release as above. */
int fifo_send_try(struct conn* c, void** slot);
int fifo_recv_try(struct conn* c, const void** slot, size_t* bytes);
/* Fails (and WARNs once, naming the op and the peer) if the comm was aborted, the peer closed
 * the connection or the peer process is gone. */
ncclResult_t fifo_check(const struct conn* c, const struct wait_ctx* w);

/* A progress loop's waiting when a round moved nothing: spin, then yield, then sleep at most
 * 1 ms on the counter of `c` that this side waits for (send: head, receive: tail). Call
 * fifo_idle_reset after a round that moved something. fifo_idle returns 1 when the peers
 * should be checked with fifo_check (about every MONEL_PEER_CHECK_MS). */
struct fifo_idle {
  int64_t rounds;
  double last_check;
};
void fifo_idle_reset(struct fifo_idle* idle);
int fifo_idle(struct fifo_idle* idle, struct conn* c, int is_send);

/* Tell the other side that this side failed (it stops waiting with an error). */
void fifo_close(struct conn* c);

#endif
