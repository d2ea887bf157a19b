/* SPDX-License-Identifier: BSD-3-Clause */
/* See common.h. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"
#include "util/dtype.h"

const char* mp_op_names[7] = {"sum", "prod", "max", "min", "avg", "premulsum", "premulsum_dev"};

/* The ranks are forked before the id exists and get it through a pipe: ncclGetUniqueId starts
 * the bootstrap root thread, and a process must not fork while another of its threads may hold
 * a lock (the child could inherit it held and hang). */
int mp_run(int nranks, rank_fn fn, void* arg) {
  pid_t pids[64];
  int pipes[64][2];
  fflush(stdout);
  fflush(stderr);
  for (int r = 0; r < nranks; r++) {
    if (pipe(pipes[r]) != 0) return nranks;
    pids[r] = fork();
    if (pids[r] == 0) {
      ncclUniqueId id;
      close(pipes[r][1]);
      size_t got = 0;
      while (got < sizeof id) {
        ssize_t n = read(pipes[r][0], (char*)&id + got, sizeof id - got);
        if (n <= 0) _exit(99); /* the parent could not make an id */
        got += (size_t)n;
      }
      _exit(fn(r, nranks, id, arg));
    }
    close(pipes[r][0]);
  }
  ncclUniqueId id;
  int ok = ncclGetUniqueId(&id) == ncclSuccess;
  if (!ok) fprintf(stderr, "ncclGetUniqueId failed: %s\n", ncclGetLastError(NULL));
  for (int r = 0; r < nranks; r++) {
    if (ok && write(pipes[r][1], &id, sizeof id) != (ssize_t)sizeof id) ok = 0;
    close(pipes[r][1]);
  }
  int failed = 0;
  for (int r = 0; r < nranks; r++) {
    int st = 0;
    waitpid(pids[r], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "rank %d of %d failed (status 0x%x)\n", r, nranks, st);
      failed++;
    }
  }
  return failed;
}

struct thread_arg {
  int rank, nranks, res;
  ncclUniqueId id;
  rank_fn fn;
  void* arg;
};

static void* thread_main(void* p) {
  struct thread_arg* a = p;
  a->res = a->fn(a->rank, a->nranks, a->id, a->arg);
  return NULL;
}

int mp_run_threads(int nranks, rank_fn fn, void* arg) {
  struct thread_arg* a = calloc((size_t)nranks, sizeof *a);
  pthread_t* t = calloc((size_t)nranks, sizeof *t);
  ncclUniqueId id;
  int failed = nranks;
  if (a == NULL || t == NULL || ncclGetUniqueId(&id) != ncclSuccess) goto out;
  for (int r = 0; r < nranks; r++) {
    a[r] = (struct thread_arg){r, nranks, 0, id, fn, arg};
    pthread_create(&t[r], NULL, thread_main, &a[r]);
  }
  failed = 0;
  for (int r = 0; r < nranks; r++) {
    pthread_join(t[r], NULL);
    failed += a[r].res != 0;
  }
out:
  free(a);
  free(t);
  return failed;
}

size_t mp_size(ncclDataType_t dt) {
  return dtype_size(dt);
}
const char* mp_type_name(ncclDataType_t dt) {
  return dtype_name(dt);
}

static int is_unsigned(ncclDataType_t dt) {
  return dt == ncclUint8 || dt == ncclUint32 || dt == ncclUint64;
}

double mp_value(ncclDataType_t dt, int op, int r, size_t i) {
  if (op == ncclProd) return ((size_t)r == i % 11) ? 2 : 1; /* product 1 or 2 */
  if (op == ncclMax || op == ncclMin)
    return (double)((r * 5 + i * 3) % 7) - (is_unsigned(dt) ? 0 : 3);
  if (is_unsigned(dt)) return (double)((r + i) % 3);
  return (double)((r + i) % 3) - 1; /* -1, 0, 1: partial sums of 8 ranks stay exact */
}

void mp_store(void* buf, size_t i, ncclDataType_t dt, double v) {
  switch (dt) {
  case ncclInt8:
    ((int8_t*)buf)[i] = (int8_t)v;
    break;
  case ncclUint8:
    ((uint8_t*)buf)[i] = (uint8_t)v;
    break;
  case ncclInt32:
    ((int32_t*)buf)[i] = (int32_t)v;
    break;
  case ncclUint32:
    ((uint32_t*)buf)[i] = (uint32_t)v;
    break;
  case ncclInt64:
    ((int64_t*)buf)[i] = (int64_t)v;
    break;
  case ncclUint64:
    ((uint64_t*)buf)[i] = (uint64_t)v;
    break;
  case ncclFloat16:
    ((uint16_t*)buf)[i] = dtype_float_to_half((float)v);
    break;
  case ncclFloat32:
    ((float*)buf)[i] = (float)v;
    break;
  case ncclFloat64:
    ((double*)buf)[i] = v;
    break;
  case ncclBfloat16:
    ((uint16_t*)buf)[i] = dtype_float_to_bf16((float)v);
    break;
  case ncclFloat8e4m3:
    ((uint8_t*)buf)[i] = dtype_float_to_e4m3((float)v);
    break;
  case ncclFloat8e5m2:
    ((uint8_t*)buf)[i] = dtype_float_to_e5m2((float)v);
    break;
  default:
    break;
  }
}

double mp_load(const void* buf, size_t i, ncclDataType_t dt) {
  switch (dt) {
  case ncclInt8:
    return ((const int8_t*)buf)[i];
  case ncclUint8:
    return ((const uint8_t*)buf)[i];
  case ncclInt32:
    return ((const int32_t*)buf)[i];
  case ncclUint32:
    return ((const uint32_t*)buf)[i];
  case ncclInt64:
    return (double)((const int64_t*)buf)[i];
  case ncclUint64:
    return (double)((const uint64_t*)buf)[i];
  case ncclFloat16:
    return dtype_half_to_float(((const uint16_t*)buf)[i]);
  case ncclFloat32:
    return ((const float*)buf)[i];
  case ncclFloat64:
    return ((const double*)buf)[i];
  case ncclBfloat16:
    return dtype_bf16_to_float(((const uint16_t*)buf)[i]);
  case ncclFloat8e4m3:
    return dtype_e4m3_to_float(((const uint8_t*)buf)[i]);
  case ncclFloat8e5m2:
    return dtype_e5m2_to_float(((const uint8_t*)buf)[i]);
  default:
    return NAN;
  }
}

double mp_expected(ncclDataType_t dt, int op, int nranks, size_t i, double scalar) {
  double acc = mp_value(dt, op, 0, i) * (op >= 5 ? scalar : 1);
  for (int r = 1; r < nranks; r++) {
    double v = mp_value(dt, op, r, i) * (op >= 5 ? scalar : 1);
    if (op == ncclProd)
      acc *= v;
    else if (op == ncclMax)
      acc = v > acc ? v : acc;
    else if (op == ncclMin)
      acc = v < acc ? v : acc;
    else
      acc += v;
  }
  if (op == ncclAvg) acc = dtype_is_float(dt) ? acc / nranks : trunc(acc / nranks);
  /* Round through the type, as the library stores it. */
  unsigned char tmp[8];
  mp_store(tmp, 0, dt, acc);
  return mp_load(tmp, 0, dt);
}

int mp_equal(ncclDataType_t dt, int op, double got, double want) {
  if (got == want) return 1;
  if (op != ncclAvg || !dtype_is_float(dt)) return 0;
  /* 2 ulp of the type at want's magnitude */
  int mant = dt == ncclFloat64      ? 52
             : dt == ncclFloat32    ? 23
             : dt == ncclFloat16    ? 10
             : dt == ncclBfloat16   ? 7
             : dt == ncclFloat8e4m3 ? 3
                                    : 2;
  double ulp = ldexp(1.0, (want == 0 ? -24 : ilogb(want)) - mant);
  return fabs(got - want) <= 2 * ulp;
}
