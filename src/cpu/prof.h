/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU engine's network transfers as profiler events (core/profiler.h): a ProxyOp per
 * (operation, peer, direction) whose FIFO crosses the network, started when the operation
 * begins on it with the number of slots it will move there (nSteps) and the slot size
 * (chunkSize), and a ProxyStep per slot:
 *   send:    started when the engine has filled the slot and hands it to the network,
 *            ProxyStepSendWait (transSize: its bytes), stopped once its send completed;
 *   receive: started when its slot is free to receive into (the link keeps receives posted on
 *            free slots), ProxyStepRecvWait (transSize: the slot size), ProxyStepRecvGPUWait
 *            when the engine takes the data (transSize: its bytes), stopped when the engine
 *            gives the slot back.
 * A ProxyOp stops with its last step; an operation that asked for these events waits at its
 * end until its sends completed, so every event of an operation ends before its Coll/P2p.
 * Shared-memory FIFOs report nothing (NCCL reports proxy events for the network only).
 * A step of an operation that asks for NetPlugin events is also the parent of the net plugin's
 * events: its reference (core/profiler.h) is in the link's table for its slot while it is open
 * (conn.net_phandles), and the network thread passes it to the slot's isend/irecv.
 * Cost when no profiler or no proxy event is asked for: one test per operation, and per slot
 * one test of conn->prof (NULL) in fifo.h. */
#ifndef MONEL_CPU_PROF_H
#define MONEL_CPU_PROF_H
#include <stdint.h>
#include "core/comm.h"
#include "core/profiler.h"
#include "transport/transport.h"

/* Whether t asks for proxy events (one test per operation when no profiler is loaded). */
static inline int cpu_prof_wanted(const struct ncclComm* comm, const struct task* t) {
  return comm->prof != NULL && profiler_proxy_on(comm, t);
}
/* t moves `nsteps` slots through c (is_send: c is a sender's) after those already declared on
 * it: starts its ProxyOp on a network FIFO (channel: the channel or tree it belongs to), or,
 * when t itself does not ask (a batch whose tasks' masks differ), only keeps its messages
 * apart. No-op for shared memory, a NULL c, or no steps. Call when the operation (or a task
 * of its batch) is cpu_prof_wanted. */
void cpu_prof_op(struct ncclComm* comm, const struct task* t, struct conn* c, int is_send,
                 int channel, uint64_t nsteps);
/* After the operation(s) (ok: it succeeded): waits for the sends of the profiled FIFOs to
 * complete, then stops every event still open and detaches the state from the FIFOs. A wait
 * that fails returns its error (w names the operation). */
ncclResult_t cpu_prof_finish(struct ncclComm* comm, const struct task* t, int ok);

/* fifo.h's hooks, called only when c->prof is set: a slot of `bytes` posted (sender, before
 * the position advances), taken (receiver), given back (receiver, before it advances). */
void cpu_prof_sent(struct conn* c, uint64_t bytes);
void cpu_prof_taken(struct conn* c, uint64_t bytes);
void cpu_prof_released(struct conn* c);

#endif
