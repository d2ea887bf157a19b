/* SPDX-License-Identifier: BSD-3-Clause */
/* Groups: ncclGroupStart/End are per thread and nest. Operations and grouped inits collect in the
 * thread's group and run when the outermost ncclGroupEnd is reached; several comms in one group
 * run concurrently (one thread each) so that one thread can drive many ranks. */
#ifndef MONEL_CORE_GROUP_H
#define MONEL_CORE_GROUP_H
#include "core/comm.h"

ncclResult_t group_start(void);
ncclResult_t group_end(void);
int group_depth(void);
/* Queue a task on comm: inside a group it waits for ncclGroupEnd; outside it runs now. */
ncclResult_t group_enqueue(struct ncclComm* comm, const struct task* task);
/* Setup work deferred to ncclGroupEnd, where all of a group's setup jobs run side by side. */
struct group_job {
  ncclResult_t (*fn)(void* arg);
  void* arg;
};
ncclResult_t group_add_job(ncclResult_t (*fn)(void*), void* arg);
/* A comm created inside a group connects at ncclGroupEnd. */
ncclResult_t group_add_init(struct ncclComm* comm);
/* Forget this thread's pending work for comm (ncclCommAbort/Destroy inside a group). */
void group_drop_comm(struct ncclComm* comm);
/* ncclGroupSimulateEnd: estimate the queued operations (microseconds) instead of running them. */
ncclResult_t group_simulate_end(float* us);

#endif
