/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-thread groups. See group.h. */
#include <stdlib.h>
#include <string.h>
#include "util/check.h"
#include "core/group.h"
#include "core/watch.h"
#include "core/plan_choose.h"
#include "core/profiler.h"

#define GROUP_MAX_COMMS  4096
#define GROUP_STACK_JOBS 8 /* jobs of a group that group_end keeps on its stack */

struct group {
  int depth;
  int ncomms; /* comms with queued tasks */
  struct ncclComm** comms;
  int ninits; /* deferred setup work (grouped init, split) */
  struct group_job* inits;
  ncclResult_t error; /* first error seen while enqueueing */
};

static __thread struct group grp;

/* The calling thread's group, for the functions every operation goes through. Not inlined: in a
 * shared library each use of grp can cost a __tls_get_addr call (the compiler looked it up again
 * after every call, 9 times per grouped operation); a function takes this pointer once. */
__attribute__((noinline)) static struct group* group_self(void) {
  return &grp;
}

int group_depth(void) {
  return grp.depth;
}

ncclResult_t group_start(void) {
  group_self()->depth++;
  return ncclSuccess;
}

static ncclResult_t push(struct ncclComm*** list, int* n, struct ncclComm* comm) {
  for (int i = 0; i < *n; i++)
    if ((*list)[i] == comm) return ncclSuccess;
  if (*n == GROUP_MAX_COMMS) {
    WARN("more than %d communicators in one group", GROUP_MAX_COMMS);
    return ncclInvalidUsage;
  }
  if (*list == NULL) NCCLCALLOC(*list, GROUP_MAX_COMMS);
  (*list)[(*n)++] = comm;
  return ncclSuccess;
}

static ncclResult_t add_task(struct ncclComm* comm, const struct task* task) {
  if (comm->ntasks == comm->tasks_cap) {
    int cap = comm->tasks_cap ? 2 * comm->tasks_cap : 16;
    struct task* t = realloc(comm->tasks, cap * sizeof *t);
    if (!t) {
      WARN("out of host memory queueing an operation");
      return ncclSystemError;
    }
    comm->tasks = t, comm->tasks_cap = cap;
  }
  comm->tasks[comm->ntasks++] = *task;
  return ncclSuccess;
}

/* Forget a comm's queued tasks, releasing what they own. */
static void drop_tasks(struct ncclComm* comm) {
  if (comm->prof) profiler_group_drop(comm);
  for (int i = 0; i < comm->ntasks; i++)
    if (comm->tasks[i].vrows) task_release(&comm->tasks[i]);
  comm->ntasks = 0;
}

/* Plan the tasks (core/plan.c: every rank refuses alike, before anything runs) and tell the watch
 * (core/watch.c) what runs; then hand them to the comm's engine. */
static ncclResult_t engine_plan(struct ncclComm* comm, struct task* tasks, int ntasks) {
  if (comm->prof) profiler_group_end_begins(comm);
  NCCLCHECK(plan_tasks(comm, tasks, ntasks));
  return watch_issue(comm, tasks, ntasks);
}

static ncclResult_t engine_go(struct ncclComm* comm, struct task* tasks, int ntasks) {
  if (comm->prof) profiler_run_begin(comm, tasks, ntasks);
  ncclResult_t res = comm->engine->run(comm, tasks, ntasks);
  if (!comm->engine->enqueue_only) watch_complete(comm);
  if (comm->prof) profiler_run_end(comm, tasks, ntasks);
  return res;
}

/* Whether the engine must prepare comm for these tasks first (struct engine prepare). */
static int needs_prepare(const struct ncclComm* comm, const struct task* tasks, int ntasks) {
  return comm->engine->prepare_needed && comm->engine->prepare_needed(comm, tasks, ntasks);
}

static ncclResult_t prepare_job(void* comm) {
  return ((struct ncclComm*)comm)->engine->prepare(comm);
}

static ncclResult_t engine_run(struct ncclComm* comm, struct task* tasks, int ntasks) {
  NCCLCHECK(engine_plan(comm, tasks, ntasks));
  return engine_go(comm, tasks, ntasks);
}

static ncclResult_t enqueue(struct ncclComm* comm, struct group* g, const struct task* task);

ncclResult_t group_enqueue(struct ncclComm* comm, const struct task* task) {
  struct group* g = group_self();
  if (comm->prof) { /* the API events; the task keeps their handle */
    struct task p = *task;
    profiler_enqueue(comm, &p, g->depth);
    return enqueue(comm, g, &p);
  }
  return enqueue(comm, g, task);
}

static ncclResult_t enqueue(struct ncclComm* comm, struct group* g, const struct task* task) {
  if (g->depth == 0) {
    struct task t = *task;
    ncclResult_t res = needs_prepare(comm, &t, 1) ? comm->engine->prepare(comm) : ncclSuccess;
    if (res == ncclSuccess) res = engine_run(comm, &t, 1);
    task_release(&t);
    if (comm->prof) profiler_group_drop(comm); /* it stopped already unless the plan failed */
    return res;
  }
  ncclResult_t res = add_task(comm, task);
  if (res == ncclSuccess) res = push(&g->comms, &g->ncomms, comm);
  if (res != ncclSuccess && g->error == ncclSuccess) g->error = res;
  return res;
}

ncclResult_t group_add_job(ncclResult_t (*fn)(void*), void* arg) {
  ncclResult_t res = ncclSuccess;
  if (grp.ninits == GROUP_MAX_COMMS) {
    WARN("more than %d communicator creations in one group", GROUP_MAX_COMMS);
    res = ncclInvalidUsage;
  } else if (grp.inits == NULL &&
             (grp.inits = calloc(GROUP_MAX_COMMS, sizeof *grp.inits)) == NULL) {
    res = ncclSystemError;
  } else {
    grp.inits[grp.ninits++] = (struct group_job){fn, arg};
  }
  if (res != ncclSuccess && grp.error == ncclSuccess) grp.error = res;
  return res;
}

static ncclResult_t connect_job(void* comm) {
  return comm_connect(comm);
}

ncclResult_t group_add_init(struct ncclComm* comm) {
  return group_add_job(connect_job, comm);
}

void group_drop_comm(struct ncclComm* comm) {
  for (int i = 0; i < grp.ncomms; i++)
    if (grp.comms[i] == comm) grp.comms[i] = grp.comms[--grp.ncomms];
  for (int i = 0; i < grp.ninits; i++)
    if (grp.inits[i].arg == comm) grp.inits[i--] = grp.inits[--grp.ninits];
  drop_tasks(comm);
}

struct job {
  struct ncclComm* comm;  /* run the comm's tasks, or */
  struct group_job setup; /* setup work when setup.fn is set */
  int is_init;
  int planned; /* the comm's tasks are planned already (res: how that went) */
  ncclResult_t res;
  pthread_t thread;
  int started;
};

static void run_job(struct job* j) {
  if (j->is_init) {
    j->res = j->setup.fn(j->setup.arg);
  } else {
    struct ncclComm* c = j->comm;
    if (!j->planned) j->res = engine_plan(c, c->tasks, c->ntasks);
    if (j->res == ncclSuccess) j->res = engine_go(c, c->tasks, c->ntasks);
    drop_tasks(c);
  }
}

static void* job_main(void* arg) {
  run_job(arg);
  return NULL;
}

/* Whether the comms of these jobs may run one after the other on this thread: engines that only
 * enqueue, none of which waits for peers this time (its run_waits, asked once the tasks are
 * planned: each job's are planned here then). */
static int may_run_inline(struct job* jobs, int n) {
  for (int i = 0; i < n; i++)
    if (jobs[i].is_init || !jobs[i].comm->engine->enqueue_only) return 0;
  int waits = 0;
  for (int i = 0; i < n; i++) {
    struct ncclComm* c = jobs[i].comm;
    jobs[i].planned = 1;
    jobs[i].res = engine_plan(c, c->tasks, c->ntasks);
    if (jobs[i].res == ncclSuccess && c->engine->run_waits)
      waits |= c->engine->run_waits(c, c->tasks, c->ntasks);
  }
  return !waits;
}

/* Run every job; one inline, several on threads so that they progress together. */
static ncclResult_t run_jobs(struct job* jobs, int n) {
  ncclResult_t res = ncclSuccess;
  if (n == 1 || may_run_inline(jobs, n)) {
    for (int i = 0; i < n; i++) run_job(&jobs[i]);
  } else {
    for (int i = 0; i < n; i++) {
      if (pthread_create(&jobs[i].thread, NULL, job_main, &jobs[i]) == 0) {
        jobs[i].started = 1;
      } else {
        WARN("could not start a thread to run a group's communicator %d of %d", i, n);
        jobs[i].res = ncclSystemError;
        if (jobs[i].comm) comm_abort(jobs[i].comm);
      }
    }
    for (int i = 0; i < n; i++)
      if (jobs[i].started) pthread_join(jobs[i].thread, NULL);
  }
  for (int i = 0; i < n; i++)
    if (jobs[i].res != ncclSuccess && res == ncclSuccess) res = jobs[i].res;
  return res;
}

ncclResult_t group_end(void) {
  struct group* g = group_self();
  if (g->depth == 0) {
    WARN("ncclGroupEnd called without a matching ncclGroupStart");
    return ncclInvalidUsage;
  }
  if (--g->depth > 0) return ncclSuccess;
  ncclResult_t res = g->error;
  g->error = ncclSuccess;
  int n = g->ninits + g->ncomms;
  struct job stack_jobs[GROUP_STACK_JOBS];
  struct job* jobs = n <= GROUP_STACK_JOBS ? stack_jobs : calloc(n, sizeof *jobs);
  if (!jobs) res = ncclSystemError;
  if (res == ncclSuccess && n) {
    /* Inits first: a comm created in this group may also have tasks in it. */
    for (int i = 0; i < g->ninits; i++) jobs[i] = (struct job){.setup = g->inits[i], .is_init = 1};
    if (g->ninits) res = run_jobs(jobs, g->ninits);
    /* Then what the engines must prepare collectively, side by side (one thread may hold
     * several ranks of a comm). */
    int k = 0;
    for (int i = 0; i < g->ncomms; i++) {
      struct ncclComm* c = g->comms[i];
      if (c->ntasks && needs_prepare(c, c->tasks, c->ntasks))
        jobs[k++] = (struct job){.setup = {prepare_job, c}, .is_init = 1};
    }
    if (res == ncclSuccess && k) res = run_jobs(jobs, k);
    k = 0;
    for (int i = 0; i < g->ncomms; i++)
      if (g->comms[i]->ntasks) jobs[k++] = (struct job){.comm = g->comms[i]};
    if (res == ncclSuccess && k) res = run_jobs(jobs, k);
  }
  for (int i = 0; i < g->ncomms; i++) drop_tasks(g->comms[i]);
  g->ncomms = g->ninits = 0;
  if (jobs != stack_jobs) free(jobs);
  return res;
}

ncclResult_t group_simulate_end(float* us) {
  if (grp.depth == 0) {
    WARN("ncclGroupSimulateEnd called without a matching ncclGroupStart");
    return ncclInvalidUsage;
  }
  if (grp.depth > 1) {
    grp.depth--;
    return ncclSuccess;
  }
  double total = 0;
  for (int i = 0; i < grp.ncomms; i++) {
    struct ncclComm* c = grp.comms[i];
    double t = 0;
    for (int k = 0; k < c->ntasks; k++) t += plan_estimate_us(c, &c->tasks[k]);
    if (t > total) total = t; /* comms of a group run side by side */
    drop_tasks(c);
  }
  grp.ncomms = 0;
  *us = (float)total;
  return group_end(); /* grouped inits still happen */
}
