/* SPDX-License-Identifier: BSD-3-Clause */
/* The host side of the exact-check matrix, shared by matrix.c (the case list, the modes, the
 * watchdog, the summary, the options) and matrix_case.c (one case on one rank: buffers, input,
 * call, check, report; the loops over the cases). */
#ifndef MONEL_TESTS_GPU_MATRIX_RUN_H
#define MONEL_TESTS_GPU_MATRIX_RUN_H
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include "nccl.h"
#include "matrix.h"

enum { MODE_ALL, MODE_THREADS, MODE_PROCS };
extern const char* const mode_names[3];
extern const char* const coll_names[MX_NCOLLS];
extern const char* const op_names[MX_NOPS];

extern struct options {
  int mode, n, quick, every_root, graph, allow_unsupported, plant, verbose, timeout, share_gpus;
  int threads; /* mode procs: rank-threads per process (1: the process is one rank) */
  int device;  /* 1: GPUs and the fill/check kernels; 0: host memory and the CPU engine */
  unsigned colls, dtypes, ops;
  size_t counts[8], large;
  int ncounts;
  enum cudaStreamCaptureMode capture;
} opt;

/* A case of the list that every rank walks through in the same order. */
struct tcase {
  struct mx_case c;
  int inplace, plant;
};
extern struct tcase* cases;
extern int ncases;

/* One rank: its comm, buffers and results, what the current case uses, and its tallies. */
struct rank {
  int rank, dev;
  ncclComm_t comm;
  cudaStream_t stream;
  char *sbuf, *rbuf; /* (n * largest count + MX_GUARD) elements of 8 bytes each */
  void* dscalar;
  struct mx_result *dres, *hres; /* device results (host memory on the CPU engine) and a copy */
  size_t* vmat;                  /* AlltoAllv: 4 matrices of n*n */
  /* the current case */
  ncclRedOp_t op;
  int op_created;
  char *sendbuff, *recvbuff, *in_base;
  size_t in_len;
  struct mx_region reg[MX_MAXREGIONS];
  const char* reg_name[MX_MAXREGIONS];
  int nreg;
  cudaGraphExec_t exec;
  cudaGraph_t graph; /* captured, not instantiated yet */
  /* tallies */
  long ncase[MX_NCOLLS], nfail[MX_NCOLLS];
  int unsupported[MX_NCOLLS];
  double secs[MX_NCOLLS];
  int fail_lines;
  /* for the watchdog */
  atomic_int cur; /* case index; -1 idle, -2 initialisation, -3 final tally, -4 release */
  atomic_llong since_ms;
};
extern struct rank* ranks; /* the ranks of this process */
extern int nlocal;

typedef ncclResult_t (*alltoallv_fn)(const void*, const size_t*, const size_t*, void*,
                                     const size_t*, const size_t*, void*, size_t, ncclDataType_t,
                                     ncclComm_t, cudaStream_t);
extern alltoallv_fn p_alltoallv; /* ncclAlltoAllv of monel.h, when the library has it */

/* The first message of an unsupported collective (an ncclInvalidUsage that says why). */
extern char unsup_msg[MX_NCOLLS][512];

double now_s(void);
/* Prints "FAIL matrix ...: <message>" and ends the process at once (other threads may be inside
 * the library). */
void die(const char* fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
const char* last_error(ncclComm_t comm);
void describe(const struct tcase* t, char* out, size_t len);
int is_rooted(int coll);
void set_device(struct rank* k);
void progress(struct rank* k, int idx);

/* Every case, this thread driving all ranks of the process in one group per case (mode all), or
 * one rank (modes threads and procs). */
void run_all(void);
void run_one(struct rank* k);

#define CK(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (cudaError_t)(call);                                                          \
    if (e_ != cudaSuccess) die("%s:%d %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
  } while (0)

#endif
