/* SPDX-License-Identifier: BSD-3-Clause */
/* A stand-in for PyTorch's libtorch_cuda.so: a library that needs libnccl.so.2 (DT_NEEDED, with a
 * run path to the nvidia wheel's directory, as PyTorch's libraries have) and calls it. */
#include "nccl.h"

int consumer_version(void) {
  int v = 0;
  return ncclGetVersion(&v) == ncclSuccess ? v : -1;
}

/* A null communicator: Monel answers ncclInvalidArgument, the stand-in 77. */
int consumer_allreduce(void) {
  return (int)ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, NULL, NULL);
}
