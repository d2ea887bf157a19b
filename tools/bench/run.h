/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * run.h - state shared by the driver (driver.c) and the sweep (sweep.c).
 */
#ifndef MONEL_BENCH_RUN_H
#define MONEL_BENCH_RUN_H

#include <pthread.h>

#include "args.h"
#include "driver.h"

struct bench_rank {
  int rank, dev;
  ncclComm_t comm;
  cudaStream_t stream;
  void* sendbuff;
  void* recvbuff;
  void* statbuf; /* 8 doubles, for combining figures across ranks */
  void* host;    /* host staging of one buffer */
  size_t bytes;  /* size of sendbuff and of recvbuff */
  void* reg[2];
  ncclWindow_t win[2];
};

struct bench_thread {
  int tid, nranks;
  struct bench_rank* ranks;
  long wrong_total; /* over every rank (the same on every thread) */
  double bw_sum;
  int bw_count;
};

struct bench_world {
  const struct bench_coll* coll;
  struct bench_opts opts;
  int nprocs, proc, local_proc, nranks;
  ncclUniqueId id;
  pthread_mutex_t print_lock;
  pthread_barrier_t barrier;
};

extern struct bench_world g_bench;

double bench_now(void);
/* Prints the failure with ncclGetLastError and exits the process (status 2). */
void bench_fail(struct bench_rank* r, const char* what, ncclResult_t res);
/* Runs every size, type, op and root for the ranks of thread t. */
void bench_sweep(struct bench_thread* t);

#endif
