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

/* Tell the other side that this side failed (it stops waiting with an error). */
void fifo_close(struct conn* c);

#endif
