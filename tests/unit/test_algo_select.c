/* SPDX-License-Identifier: BSD-3-Clause */
/* A call's own algorithm selection (task algo_mask, from ncclCollConfig_t.algSelection) decides
 * the algorithm of the task's plan (core/plan.c), whatever the cost model prefers and whatever
 * NCCL_ALGO says; and the per-call thread-block limits narrow the comm's (tune_task_cta). */
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "core/algo.h"
#include "core/comm.h"
#include "core/plan_choose.h"
#include "core/tune.h"

static struct ncclComm fake_comm(int nranks) {
  struct ncclComm c;
  memset(&c, 0, sizeof c);
  c.nranks = nranks;
  c.engine = &cpu_engine;
  c.plan.path = PLAN_PATH_SHM;
  c.plan.printed = 1;
  return c;
}

/* The algorithm core's plan gives the task (ncclSuccess), or the plan's refusal. */
static ncclResult_t choose(struct ncclComm* c, struct task* t, enum algo_id* got) {
  ncclResult_t res = plan_tasks(c, t, 1);
  *got = t->plan.algo;
  return res;
}

static struct task allreduce(size_t count, unsigned mask) {
  struct task t;
  memset(&t, 0, sizeof t);
  t.coll = COLL_ALLREDUCE;
  t.count = count;
  t.dtype = ncclFloat32;
  t.algo_mask = mask;
  return t;
}

TEST(mask_decides) {
  struct ncclComm c = fake_comm(8);
  size_t counts[] = {1, 1000, 1 << 20, 1 << 26};
  enum algo_id ids[] = {ALGO_RING, ALGO_TREE, ALGO_ONESHOT, ALGO_TWOSHOT};
  for (int k = 0; k < 4; k++) {
    for (int a = 0; a < 4; a++) {
      struct task t = allreduce(counts[k], 1u << ids[a]);
      enum algo_id got = ALGO_COUNT;
      CHECK_RES(choose(&c, &t, &got), ncclSuccess);
      CHECK_EQ(got, ids[a]);
    }
  }
}

TEST(mask_overrides_env) {
  setenv("NCCL_ALGO", "allreduce:ring", 1); /* read at the first plan of this process */
  struct ncclComm c = fake_comm(4);
  struct task t = allreduce(1000, 0);
  enum algo_id got = ALGO_COUNT;
  CHECK_RES(choose(&c, &t, &got), ncclSuccess);
  CHECK_EQ(got, ALGO_RING);
  t.algo_mask = 1u << ALGO_TREE;
  CHECK_RES(choose(&c, &t, &got), ncclSuccess);
  CHECK_EQ(got, ALGO_TREE);
  /* A mask with nothing the collective has: the usage error of an empty choice. */
  t.coll = COLL_ALLGATHER;
  t.algo_mask = 1u << ALGO_TREE;
  CHECK_RES(choose(&c, &t, &got), ncclInvalidUsage);
}

TEST(task_cta_limits) {
  struct tune_cta_limits comm = {2, 32, NCCL_CTA_POLICY_DEFAULT};
  struct task t;
  memset(&t, 0, sizeof t);
  struct tune_cta_limits l = tune_task_cta(comm, &t);
  CHECK(l.min == 2 && l.max == 32 && l.policy == NCCL_CTA_POLICY_DEFAULT);
  t.cta_min = 4, t.cta_max = 8, t.cta_policy = NCCL_CTA_POLICY_EFFICIENCY + 1;
  l = tune_task_cta(comm, &t);
  CHECK(l.min == 4 && l.max == 8 && l.policy == NCCL_CTA_POLICY_EFFICIENCY);
  t.cta_min = 0, t.cta_max = 64; /* never above the comm's */
  l = tune_task_cta(comm, &t);
  CHECK(l.min == 2 && l.max == 32);
  t.cta_min = 40, t.cta_max = 0; /* a minimum above the comm's maximum is cut to it */
  l = tune_task_cta(comm, &t);
  CHECK(l.min == 32 && l.max == 32);
  /* The block count of a kernel follows: within [min, max] of the call. */
  t.cta_min = 3, t.cta_max = 5;
  l = tune_task_cta(comm, &t);
  struct tune_blocks_in in = {1e9, 450, 7, 131072, l.min, l.max, 0};
  int b = tune_blocks(&in);
  CHECK(b >= 3 && b <= 5);
  in.bytes = 1;
  CHECK_EQ(tune_blocks(&in), 3);
}
