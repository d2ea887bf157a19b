/* SPDX-License-Identifier: BSD-3-Clause */
/* Mismatched calls caught (on by default; MONEL_CHECK_CALLS=0 turns it off): each rank
 * fingerprints the operations it is asked for, and the watch ring (watch.c) carries the
 * fingerprints to the other ranks, off the critical path: the user's thread only hashes two words
 * per collective and stores the result, without a lock; the watch thread sends and compares.
 *  - Collectives (everything but Send/Recv): kind, count, type, op and root must be the same on
 *    every rank at the same position in the comm's sequence of collectives (AlltoAllv: kind and
 *    type). A chain hash over the sequence goes with the latest records to the next rank, which
 *    compares them with its own: any two neighbours that disagree are found, and so every pair.
 *  - Send/Recv: the k-th Send from rank a to rank b carries as many bytes as b's k-th Recv from a.
 *    AlltoAllv: a's sendcounts[b] equal b's recvcounts[a] (bytes). A chain per ordered pair is
 *    forwarded around the ring to its receiver, at any comm size: a rank keeps the newest record
 *    of each pair passing through it (the chain covers the older ones) and passes a bounded
 *    number on per message, so its memory grows with the pairs that talk, not with n^2.
 * A difference fails the comm on every rank with ncclInvalidUsage and a sentence naming both
 * ranks and both calls. Who may call: core/watch.c. */
#ifndef MONEL_CORE_FINGERPRINT_H
#define MONEL_CORE_FINGERPRINT_H
#include <stdint.h>
#include "nccl.h"

struct ncclComm;
struct task;
struct fp;

#define FP_MSG_DATA     101 /* watch message types carried for the fingerprints */
#define FP_MSG_MISMATCH 102
#define FP_SEND_S       0.05

/* Sends a message of the watch to the next rank; returns 0 when sent. */
typedef int (*fp_send_fn)(void* ctx, uint32_t type, const void* body, uint32_t len);

/* The watch's record of this rank's collective number coll_index (1, 2, ...) into *out; 0 when
 * it has none. */
struct wop;
typedef int (*fp_op_fn)(void* ctx, uint64_t coll_index, struct wop* out);

/* NULL when the check is off (MONEL_CHECK_CALLS=0) or the comm has one rank. */
struct fp* fp_create(struct ncclComm* comm);
void fp_free(struct fp* f);
/* Where the mismatch sentences take the calls from (without it they name collective numbers). */
void fp_set_ops(struct fp* f, fp_op_fn op_of, void* ctx);
/* The user's thread, for every operation handed to the engine, in call order. */
void fp_issue(struct fp* f, const struct task* t);
/* The watch thread, now and then (now: seconds, sock_time_now): compares what waited, and sends
 * what is new at most every FP_SEND_S. */
void fp_service(struct fp* f, double now, fp_send_fn send, void* ctx);
/* The watch thread: a message of type FP_MSG_* from the previous rank. */
void fp_on_msg(struct fp* f, uint32_t type, const void* body, uint32_t len, fp_send_fn send,
               void* ctx);

#endif
