/* SPDX-License-Identifier: BSD-3-Clause */
/* core/group.c and the engine's prepare hooks (struct engine prepare_needed / prepare): the
 * collective setup some tasks need before run() (the GPU engine's copy-engine path for a call
 * with a per-call NCCL_CTA_POLICY_ZERO). One thread's group holding two ranks of a comm prepares
 * them side by side, each rank's prepare waiting for the other's as a bootstrap exchange does (one
 * after the other would wait forever), and every rank is prepared before any of them runs; a call
 * outside a group prepares inline; tasks that need nothing are not prepared; a failed prepare
 * runs nothing and is the group's result. With an engine whose run() also waits for the other
 * rank this time (struct engine run_waits: the GPU engine's first use of a network peer, which a
 * per-call ZERO call across hosts is too), the ranks are prepared side by side and then run side
 * by side. A fake engine over two bare comms (ranks 0 and 1). */
#include <pthread.h>
#include "harness.h"
#include "core/comm.h"
#include "core/engine.h"
#include "core/group.h"
#include "core/task.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int arrived, run_arrived, want_arrivals, prepared[2], ran[2], ran_unprepared, fail_prepare;

/* A task asks for the preparation when it carries a call's CTA policy (as a per-call ZERO does). */
static int needed(const struct ncclComm* comm, const struct task* tasks, int ntasks) {
  (void)comm;
  for (int i = 0; i < ntasks; i++)
    if (tasks[i].cta_policy) return 1;
  return 0;
}

/* Under lock: counts this rank in *count and waits (at most 10 s) until want_arrivals ranks
 * arrived, as a collective of that many ranks does; 1 when it timed out. */
static int meet(int* count) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  (*count)++;
  pthread_cond_broadcast(&cond);
  int timed_out = 0;
  while (*count < want_arrivals && !timed_out)
    timed_out = pthread_cond_timedwait(&cond, &lock, &until) != 0;
  return timed_out;
}

static ncclResult_t prepare(struct ncclComm* comm) {
  pthread_mutex_lock(&lock);
  int timed_out = meet(&arrived);
  prepared[comm->rank] += !timed_out && !fail_prepare;
  pthread_mutex_unlock(&lock);
  return timed_out || fail_prepare ? ncclSystemError : ncclSuccess;
}

static ncclResult_t run(struct ncclComm* comm, struct task* tasks, int ntasks) {
  pthread_mutex_lock(&lock);
  ran[comm->rank] += ntasks;
  if (needed(comm, tasks, ntasks) && !prepared[comm->rank]) ran_unprepared++;
  pthread_mutex_unlock(&lock);
  return ncclSuccess;
}

static const struct engine fake = {
    .name = "fake",
    .enqueue_only = 1,
    .run = run,
    .prepare_needed = needed,
    .prepare = prepare,
};

/* A run that meets the other rank when run_waits says it will (its first use of a peer). */
static ncclResult_t run_meeting(struct ncclComm* comm, struct task* tasks, int ntasks) {
  if (needed(comm, tasks, ntasks)) {
    pthread_mutex_lock(&lock);
    int timed_out = meet(&run_arrived);
    pthread_mutex_unlock(&lock);
    if (timed_out) return ncclSystemError;
  }
  return run(comm, tasks, ntasks);
}

static const struct engine fake_meeting = {
    .name = "fake-meeting",
    .enqueue_only = 1,
    .run_waits = needed,
    .run = run_meeting,
    .prepare_needed = needed,
    .prepare = prepare,
};

static struct ncclComm comms[2];

static void setup(int arrivals) {
  for (int r = 0; r < 2; r++) {
    free(comms[r].tasks);
    memset(&comms[r], 0, sizeof comms[r]);
    comms[r].engine = &fake;
    comms[r].rank = r;
    comms[r].nranks = 2;
  }
  arrived = run_arrived = 0, want_arrivals = arrivals, fail_prepare = 0;
  memset(prepared, 0, sizeof prepared);
  memset(ran, 0, sizeof ran);
  ran_unprepared = 0;
}

static struct task send_task(int peer, int policy) {
  struct task t;
  memset(&t, 0, sizeof t);
  t.coll = COLL_SEND;
  t.count = 4;
  t.dtype = ncclInt8;
  t.root = peer;
  t.cta_policy = policy;
  return t;
}

TEST(one_thread_two_ranks_prepare_side_by_side) {
  setup(2);
  CHECK_RES(group_start(), ncclSuccess);
  for (int r = 0; r < 2; r++) {
    struct task t = send_task(1 - r, NCCL_CTA_POLICY_ZERO + 1);
    CHECK_RES(group_enqueue(&comms[r], &t), ncclSuccess);
  }
  CHECK_RES(group_end(), ncclSuccess);
  CHECK_EQ(prepared[0], 1);
  CHECK_EQ(prepared[1], 1);
  CHECK_EQ(ran[0], 1);
  CHECK_EQ(ran[1], 1);
  CHECK_EQ(ran_unprepared, 0);
}

TEST(outside_a_group_prepares_inline) {
  setup(1);
  struct task t = send_task(1, NCCL_CTA_POLICY_ZERO + 1);
  CHECK_RES(group_enqueue(&comms[0], &t), ncclSuccess);
  CHECK_EQ(prepared[0], 1);
  CHECK_EQ(ran[0], 1);
  CHECK_EQ(ran_unprepared, 0);
}

TEST(tasks_that_need_nothing_are_not_prepared) {
  setup(1);
  CHECK_RES(group_start(), ncclSuccess);
  for (int r = 0; r < 2; r++) {
    struct task t = send_task(1 - r, 0);
    CHECK_RES(group_enqueue(&comms[r], &t), ncclSuccess);
  }
  CHECK_RES(group_end(), ncclSuccess);
  CHECK_EQ(arrived, 0);
  CHECK_EQ(ran[0] + ran[1], 2);
}

TEST(a_failed_prepare_runs_nothing) {
  setup(2);
  fail_prepare = 1;
  CHECK_RES(group_start(), ncclSuccess);
  for (int r = 0; r < 2; r++) {
    struct task t = send_task(1 - r, NCCL_CTA_POLICY_ZERO + 1);
    CHECK_RES(group_enqueue(&comms[r], &t), ncclSuccess);
  }
  CHECK_RES(group_end(), ncclSystemError);
  CHECK_EQ(ran[0] + ran[1], 0);
  CHECK_EQ(comms[0].ntasks + comms[1].ntasks, 0); /* dropped */
}

TEST(prepared_then_run_side_by_side_when_the_runs_meet) {
  setup(2);
  comms[0].engine = comms[1].engine = &fake_meeting;
  CHECK_RES(group_start(), ncclSuccess);
  for (int r = 0; r < 2; r++) {
    struct task t = send_task(1 - r, NCCL_CTA_POLICY_ZERO + 1);
    CHECK_RES(group_enqueue(&comms[r], &t), ncclSuccess);
  }
  CHECK_RES(group_end(), ncclSuccess); /* one after the other, the first run would time out */
  CHECK_EQ(prepared[0] + prepared[1], 2);
  CHECK_EQ(run_arrived, 2);
  CHECK_EQ(ran[0] + ran[1], 2);
  CHECK_EQ(ran_unprepared, 0);
}
