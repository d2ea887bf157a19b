/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * args.h - the command line of the benches (nccl-tests 2.x flags and defaults).
 */
#ifndef MONEL_BENCH_ARGS_H
#define MONEL_BENCH_ARGS_H

#include <stddef.h>

#include "nccl.h"

struct bench_opts {
  int nthreads, ngpus;
  size_t min_bytes, max_bytes, step_bytes;
  double step_factor; /* > 1: multiply; else add step_bytes */
  int iters, warmup, agg_iters, cycles, parallel_init, check;
  int all_ops, all_types, all_roots;
  ncclRedOp_t op;
  ncclDataType_t type;
  int root;
  int blocking, stream_null, timeout, graph, report_cputime, average, local_register;
};

/* Parses argv; prints help and exits on -h or a bad flag. */
void bench_parse_args(struct bench_opts* o, const char* prog, int argc, char** argv);

#endif
