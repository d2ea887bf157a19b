/* SPDX-License-Identifier: BSD-3-Clause */
/* The watch: every communicator of more than one rank keeps two TCP connections, to the previous
 * and to the next rank in rank order, and one thread per process looks after them for every
 * comm. Through them a rank learns, while its user thread is elsewhere:
 *  - that a peer died: a connection closed without a goodbye, a peer of this host whose pid is
 *    gone, or MONEL_PEER_TIMEOUT seconds without a heartbeat (a host that vanished). The news
 *    travels around the ring both ways, so every rank knows within a second or two. With
 *    operations pending, the comm fails at once (comm_fail: ncclRemoteError, a sentence naming
 *    the rank, host, pid and the operation that waits on it; the engine's abort makes kernels
 *    leave their waits); when idle, its next operation fails.
 *  - why an operation hangs: when a rank's oldest pending operation has not finished for
 *    MONEL_HANG_TIMEOUT seconds, a token goes around the ring collecting every rank's state, and
 *    every rank logs one WARN: which ranks have not called that collective, or called a different
 *    one (op, count, type or root differ: a mismatch), and what each rank waits on.
 * Who may call: core/ (comm init and free, group runs). */
#ifndef MONEL_CORE_WATCH_H
#define MONEL_CORE_WATCH_H
#include <stdint.h>
#include "nccl.h"

struct ncclComm;
struct task;

/* Collective: every rank of the comm calls it after its engine is set up. */
ncclResult_t watch_start(struct ncclComm* comm);
/* Before the comm's engine goes: says goodbye to the neighbours (unless the comm aborted or
 * failed) and forgets the comm. Accepts a comm that never started its watch. */
void watch_stop(struct ncclComm* comm);
/* Operations handed to the engine (before run()): recorded for reports; fails the comm if a
 * peer is already known dead. */
ncclResult_t watch_issue(struct ncclComm* comm, const struct task* tasks, int ntasks);
/* After run() of an engine that completes its operations before returning (the CPU engine). */
void watch_complete(struct ncclComm* comm);

#endif
