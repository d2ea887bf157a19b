/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * args.c - parses the nccl-tests 2.x command line.
 */
#define _GNU_SOURCE
#include "args.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

/* "32M", "1G", "8" -> bytes. */
static size_t parse_size(const char* s) {
  char* end = NULL;
  double v = strtod(s, &end);
  switch (end && *end ? *end : ' ') {
  case 'G':
  case 'g':
    v *= 1024.0 * 1024.0 * 1024.0;
    break;
  case 'M':
  case 'm':
    v *= 1024.0 * 1024.0;
    break;
  case 'K':
  case 'k':
    v *= 1024.0;
    break;
  default:
    break;
  }
  return v < 0 ? 0 : (size_t)v;
}

static void usage(const char* prog) {
  printf(
      "USAGE: %s\n"
      "  -t,--nthreads <num threads>            threads per process (default 1)\n"
      "  -g,--ngpus <gpus per thread>           devices (ranks) per thread (default 1)\n"
      "  -b,--minbytes <min size in bytes>      (default 32M)\n"
      "  -e,--maxbytes <max size in bytes>      (default 32M)\n"
      "  -i,--stepbytes <increment size>        (default 1M)\n"
      "  -f,--stepfactor <increment factor>     (default disabled)\n"
      "  -n,--iters <iteration count>           (default 20)\n"
      "  -m,--agg_iters <aggregated iteration count> (default 1)\n"
      "  -w,--warmup_iters <warmup iteration count> (default 5)\n"
      "  -N,--run_cycles <cycle count>          run & print each cycle (default 1; 0=infinite)\n"
      "  -p,--parallel_init <0/1>               (default 0)\n"
      "  -c,--check <check iteration count>     (default 1)\n"
      "  -o,--op <sum/prod/min/max/avg/all>     (default sum)\n"
      "  -d,--datatype <nccltype/all>           (default float)\n"
      "  -r,--root <root/all>                   (default 0)\n"
      "  -z,--blocking <0/1>                    sync after each collective (default 0)\n"
      "  -y,--stream_null <0/1>                 use the NULL stream (default 0)\n"
      "  -T,--timeout <time in seconds>         (default 0 = none)\n"
      "  -G,--cudagraph <num graph launches>    (default 0)\n"
      "  -C,--report_cputime <0/1>              (default 0)\n"
      "  -a,--average <0/1/2/3>                 time across ranks: 0=rank0 1=avg 2=min 3=max "
      "(default 1)\n"
      "  -R,--local_register <0/1/2>            1=ncclCommRegister 2=symmetric window (default 0)\n"
      "  -u, -I, -J                             accepted, not supported by this bench\n"
      "  -h,--help\n",
      prog);
}

static void once_unsupported(char flag) {
  static char said[128];
  if (!said[(unsigned char)flag & 127]) {
    said[(unsigned char)flag & 127] = 1;
    fprintf(stderr, "# Flag -%c is accepted but not supported by this bench; ignored\n", flag);
  }
}

static void parse_choice(struct bench_opts* o, int c, const char* arg, const char* prog) {
  switch (c) {
  case 'o':
    if (strcmp(arg, "all") == 0)
      o->all_ops = 1;
    else if (strcmp(arg, "mulsum") == 0 || bench_op_parse(arg, &o->op) != 0) {
      fprintf(stderr, "invalid op '%s'\n", arg);
      exit(1);
    }
    break;
  case 'd':
    if (strcmp(arg, "all") == 0)
      o->all_types = 1;
    else if (bench_type_parse(arg, &o->type) != 0) {
      fprintf(stderr, "invalid datatype '%s'\n", arg);
      exit(1);
    }
    break;
  default:
    if (strcmp(arg, "all") == 0)
      o->all_roots = 1;
    else
      o->root = atoi(arg);
    break;
  }
  (void)prog;
}

void bench_parse_args(struct bench_opts* o, const char* prog, int argc, char** argv) {
  static const struct option longs[] = {{"nthreads", 1, 0, 't'},
                                        {"ngpus", 1, 0, 'g'},
                                        {"minbytes", 1, 0, 'b'},
                                        {"maxbytes", 1, 0, 'e'},
                                        {"stepbytes", 1, 0, 'i'},
                                        {"stepfactor", 1, 0, 'f'},
                                        {"iters", 1, 0, 'n'},
                                        {"agg_iters", 1, 0, 'm'},
                                        {"warmup_iters", 1, 0, 'w'},
                                        {"run_cycles", 1, 0, 'N'},
                                        {"parallel_init", 1, 0, 'p'},
                                        {"check", 1, 0, 'c'},
                                        {"op", 1, 0, 'o'},
                                        {"datatype", 1, 0, 'd'},
                                        {"root", 1, 0, 'r'},
                                        {"blocking", 1, 0, 'z'},
                                        {"stream_null", 1, 0, 'y'},
                                        {"timeout", 1, 0, 'T'},
                                        {"cudagraph", 1, 0, 'G'},
                                        {"report_cputime", 1, 0, 'C'},
                                        {"average", 1, 0, 'a'},
                                        {"local_register", 1, 0, 'R'},
                                        {"help", 0, 0, 'h'},
                                        {0, 0, 0, 0}};
  memset(o, 0, sizeof(*o));
  o->nthreads = o->ngpus = 1;
  o->min_bytes = o->max_bytes = 32u << 20;
  o->step_bytes = 1u << 20;
  o->step_factor = 1.0;
  o->iters = 20;
  o->warmup = 5;
  o->agg_iters = 1;
  o->cycles = 1;
  o->check = 1;
  o->op = ncclSum;
  o->type = ncclFloat32;
  o->average = 1;
  int c;
  while ((c = getopt_long(argc, argv, "t:g:b:e:i:f:n:m:w:N:p:c:o:d:r:z:y:T:G:C:a:R:u:I:J:h", longs,
                          NULL)) != -1) {
    switch (c) {
    case 't':
      o->nthreads = atoi(optarg);
      break;
    case 'g':
      o->ngpus = atoi(optarg);
      break;
    case 'b':
      o->min_bytes = parse_size(optarg);
      break;
    case 'e':
      o->max_bytes = parse_size(optarg);
      break;
    case 'i':
      o->step_bytes = parse_size(optarg);
      break;
    case 'f':
      o->step_factor = strtod(optarg, NULL);
      break;
    case 'n':
      o->iters = atoi(optarg);
      break;
    case 'm':
      o->agg_iters = atoi(optarg);
      break;
    case 'w':
      o->warmup = atoi(optarg);
      break;
    case 'N':
      o->cycles = atoi(optarg);
      break;
    case 'p':
      o->parallel_init = atoi(optarg);
      break;
    case 'c':
      o->check = atoi(optarg);
      break;
    case 'o':
    case 'd':
    case 'r':
      parse_choice(o, c, optarg, prog);
      break;
    case 'z':
      o->blocking = atoi(optarg);
      break;
    case 'y':
      o->stream_null = atoi(optarg);
      break;
    case 'T':
      o->timeout = atoi(optarg);
      break;
    case 'G':
      o->graph = atoi(optarg);
      break;
    case 'C':
      o->report_cputime = atoi(optarg);
      break;
    case 'a':
      o->average = atoi(optarg);
      break;
    case 'R':
      o->local_register = atoi(optarg);
      break;
    case 'u':
    case 'I':
    case 'J':
      once_unsupported((char)c);
      break;
    case 'h':
      usage(prog);
      exit(0);
    default:
      usage(prog);
      exit(1);
    }
  }
  if (o->nthreads < 1 || o->ngpus < 1 || o->iters < 1 || o->agg_iters < 1 || o->warmup < 0 ||
      o->min_bytes > o->max_bytes || (o->step_factor <= 1.0 && o->step_bytes == 0)) {
    fprintf(stderr, "invalid arguments (threads, gpus, iters >= 1; minbytes <= maxbytes; "
                    "a step)\n");
    exit(1);
  }
}
