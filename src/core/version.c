/* SPDX-License-Identifier: BSD-3-Clause */
/* Version strings and the NCCL_DEBUG=VERSION banner. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include "util/log.h"
#include "core/version.h"
#include "monel.h"
#include "nccl.h"

#define STR2(x) #x
#define STR(x)  STR2(x)

#ifdef MONEL_HAVE_CUDA
#define BUILD_DESC "build " MONEL_BUILD_TYPE ", CUDA engine: yes"
#else
#define BUILD_DESC "build " MONEL_BUILD_TYPE ", CUDA engine: no (CPU engine only)"
#endif

const char* version_string(void) {
  return "Monel " STR(MONEL_VERSION_MAJOR) "." STR(MONEL_VERSION_MINOR) "." STR(MONEL_VERSION_PATCH) " (NCCL API " STR(
      VERSION_NCCL_MAJOR) "." STR(VERSION_NCCL_MINOR) "." STR(VERSION_NCCL_PATCH) ";"
                                                                                  " " BUILD_DESC
                                                                                  ")";
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void banner(void) {
  if (LOG_ENABLED(LOG_VERSION)) {
    char host[64];
    gethostname(host, sizeof host);
    printf("%s NCCL version %d.%d.%d (%s)\n", host, VERSION_NCCL_MAJOR, VERSION_NCCL_MINOR,
           VERSION_NCCL_PATCH, version_string());
    fflush(stdout);
  }
}
void version_banner(void) {
  pthread_once(&once, banner);
}
