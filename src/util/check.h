/* SPDX-License-Identifier: BSD-3-Clause */
/* Error-check macros shared by all host code. WARN once where an error starts; propagate quietly.
 */
#ifndef MONEL_UTIL_CHECK_H
#define MONEL_UTIL_CHECK_H
#include <errno.h>
#include <string.h>
#include "nccl.h"
#include "util/log.h"

/* Propagate a failing ncclResult_t to the caller. */
#define NCCLCHECK(call)                                                                            \
  do {                                                                                             \
    ncclResult_t res_ = (call);                                                                    \
    if (res_ != ncclSuccess && res_ != ncclInProgress) return res_;                                \
  } while (0)

/* Store a failing result in `res` and jump to `label` (the function's cleanup). */
#define NCCLCHECKGOTO(call, res, label)                                                            \
  do {                                                                                             \
    (res) = (call);                                                                                \
    if ((res) != ncclSuccess && (res) != ncclInProgress) goto label;                               \
  } while (0)

/* A system call that returns -1 and sets errno. */
#define SYSCHECK(call, what)                                                                       \
  do {                                                                                             \
    if ((call) == -1) {                                                                            \
      WARN("%s failed: %s", what, strerror(errno));                                                \
      return ncclSystemError;                                                                      \
    }                                                                                              \
  } while (0)

#define SYSCHECKGOTO(call, what, res, label)                                                       \
  do {                                                                                             \
    if ((call) == -1) {                                                                            \
      WARN("%s failed: %s", what, strerror(errno));                                                \
      (res) = ncclSystemError;                                                                     \
      goto label;                                                                                  \
    }                                                                                              \
  } while (0)

/* Allocation that zeroes; fails with ncclSystemError. */
#define NCCLCALLOC(ptr, n)                                                                         \
  do {                                                                                             \
    (ptr) = calloc((n), sizeof(*(ptr)));                                                           \
    if ((ptr) == NULL) {                                                                           \
      WARN("out of host memory allocating %zu bytes", (size_t)(n) * sizeof(*(ptr)));               \
      return ncclSystemError;                                                                      \
    }                                                                                              \
  } while (0)

#endif
