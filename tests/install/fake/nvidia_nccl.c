/* SPDX-License-Identifier: BSD-3-Clause */
/* A stand-in for NVIDIA's libnccl.so.2 (built with that soname by tests/install/run): it defines
 * the two functions the binding check calls, with results Monel never gives (version 99999,
 * ncclAllReduce returning 77), so that a call bound to it is told apart from one bound to Monel. */
#include <stddef.h>

int ncclGetVersion(int* version) {
  *version = 99999;
  return 0;
}

int ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, int datatype, int op,
                  void* comm, void* stream) {
  (void)sendbuff, (void)recvbuff, (void)count, (void)datatype, (void)op, (void)comm, (void)stream;
  return 77;
}
