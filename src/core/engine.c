/* SPDX-License-Identifier: BSD-3-Clause */
/* Which device a rank uses by default. Without the CUDA engine (or with MONEL_ENGINE=cpu) there
 * is none and ranks run on the CPU engine. */
#include <string.h>
#include "core/engine.h"
#include "util/param.h"

int engine_gpu_allowed(void) {
#ifdef MONEL_HAVE_CUDA
  return strcmp(param_str(PARAM_ENGINE), "cpu") != 0;
#else
  return 0;
#endif
}

int engine_default_device(void) {
#ifdef MONEL_HAVE_CUDA
  if (engine_gpu_allowed()) return gpu_engine.current_device();
#endif
  return -1;
}

/* GPUs a rank of this process may use: 0 without the CUDA engine, with MONEL_ENGINE=cpu or
 * without a GPU. */
int engine_gpu_count(void) {
#ifdef MONEL_HAVE_CUDA
  if (engine_gpu_allowed()) return gpu_engine.device_count();
#endif
  return 0;
}

int engine_gpu_of_busid(const char* busid) {
#ifdef MONEL_HAVE_CUDA
  if (engine_gpu_allowed() && gpu_engine.device_of_busid) return gpu_engine.device_of_busid(busid);
#endif
  (void)busid;
  return -1;
}
