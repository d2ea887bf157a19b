/* SPDX-License-Identifier: BSD-3-Clause */
/* Driver calls reached through the runtime (cudaGetDriverEntryPoint*), so the library still loads
 * and runs its CPU engine without a driver: the capture question every launch asks, and the
 * launch with attributes: a launch-completion event (ncclCollConfig_t.launchCompletionEvent) and
 * programmatic dependent launch (MONEL_LAUNCH_PDL). */
#include <cuda.h>
#include <pthread.h>
#include <string.h>
#include "util/check.h"
#include "util/param.h"
#include "gpu/gpu.h"

void* gpu_driver_fn(const char* name) {
  void* fn = NULL;
  enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q);
#else
  cudaError_t e = cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &q);
#endif
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return NULL;
  }
  return fn;
}

typedef CUresult (*is_capturing_fn)(CUstream, CUstreamCaptureStatus*);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig*, CUfunction, void**, void**);
static is_capturing_fn is_capturing;
static launch_ex_fn launch_ex;
static int driver_version;
static int pdl_max; /* MONEL_LAUNCH_PDL */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
  is_capturing = (is_capturing_fn)gpu_driver_fn("cuStreamIsCapturing");
  launch_ex = (launch_ex_fn)gpu_driver_fn("cuLaunchKernelEx");
  pdl_max = (int)param_int(PARAM_LAUNCH_PDL);
  if (cudaDriverGetVersion(&driver_version) != cudaSuccess) {
    (void)cudaGetLastError();
    driver_version = 0;
  }
}

/* Asked on every launch: the driver's call costs less than the runtime's wrapper around it (which
 * checks the runtime's state first), and the handles are the same (NULL, cudaStreamLegacy and
 * cudaStreamPerThread included). The caller's current device is the stream's. */
int gpu_capturing(cudaStream_t s) {
  pthread_once(&once, load);
  if (is_capturing) {
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    return is_capturing((CUstream)s, &cs) == CUDA_SUCCESS && cs != CU_STREAM_CAPTURE_STATUS_NONE;
  }
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(s, &cs) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return cs != cudaStreamCaptureStatusNone;
}

/* CUDA's launch-completion event (a launch attribute of cuLaunchKernelEx) came with CUDA 12.3: the
 * headers Monel was built with and the driver must both have it. */
#if CUDA_VERSION >= 12030
#define LAUNCH_EVENTS 1
#else
#define LAUNCH_EVENTS 0
#endif

ncclResult_t gpu_launch_events_ok(const char* fn) {
  pthread_once(&once, load);
  if (LAUNCH_EVENTS && launch_ex != NULL && driver_version >= 12030) return ncclSuccess;
  WARN("%s: config->launchCompletionEvent needs CUDA's launch-completion events (CUDA 12.3), "
       "which %s lacks (driver CUDA %d.%d%s); leave it NULL and record an event on the stream "
       "after the call instead",
       fn, LAUNCH_EVENTS ? "the driver" : "this build of Monel", driver_version / 1000,
       driver_version % 1000 / 10, launch_ex == NULL ? ", no cuLaunchKernelEx" : "");
  return ncclInvalidUsage;
}

/* Programmatic dependent launch (CUDA 11.8, compute capability 9.0): the launch attribute lets a
 * kernel begin while the kernel before it on its stream ends; the device side of every kernel
 * (device/prims.cuh dev_after_previous) first waits until its predecessor ended and that kernel's
 * memory is visible, before it touches memory, and then lets its own successor begin. Back to back,
 * small kernels that read and write host memory were faster with it, alone and under MPS (one
 * H200; docs/PERFORMANCE.md at 212cdd8, "What a small operation costs on the GPU"). Only for
 * kernels of at most MONEL_LAUNCH_PDL blocks (default 1: a block that waits holds its SM, and small
 * operations are where the launch shows), and not in stream capture (graphs launch their kernels
 * back to back already). */
#if CUDA_VERSION >= 11080
#define LAUNCH_PDL 1
#else
#define LAUNCH_PDL 0
#endif

static int device_pdl(void) {
  static int known[64]; /* per device: 0 unknown, 1 no, 2 yes */
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
    (void)cudaGetLastError();
    return 0;
  }
  int k = __atomic_load_n(&known[dev], __ATOMIC_RELAXED);
  if (k == 0) {
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
      (void)cudaGetLastError();
      major = 0;
    }
    k = major >= 9 ? 2 : 1;
    __atomic_store_n(&known[dev], k, __ATOMIC_RELAXED);
  }
  return k == 2;
}

/* The launch of one kernel with the attributes ex asks for: CUDA records ex->event once every block
 * of it has begun (struct dev_launch_ex, device/dev.h), and ex->pdl_max: programmatic dependent
 * launch when the grid has at most that many blocks. cuLaunchKernelEx, on the kernel the runtime
 * registered for the current device; the driver numbers the errors a launch returns as the
 * runtime does. */
cudaError_t gpu_launch_with_event(const struct dev_launch_ex* ex, const void* kernel, unsigned grid,
                                  unsigned block, size_t shared_bytes, void* arg,
                                  cudaStream_t stream) {
  pthread_once(&once, load);
  if (launch_ex == NULL) return cudaErrorNotSupported;
  cudaFunction_t fn = NULL;
  cudaError_t e = cudaGetFuncBySymbol(&fn, kernel);
  if (e != cudaSuccess) return e;
  CUlaunchAttribute attr[2];
  unsigned n = 0;
  memset(attr, 0, sizeof attr);
#if LAUNCH_EVENTS
  if (ex->event != NULL) {
    attr[n].id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
    attr[n].value.launchCompletionEvent.event = (CUevent)ex->event;
    attr[n++].value.launchCompletionEvent.flags = CU_EVENT_RECORD_DEFAULT;
  }
#else
  if (ex->event != NULL) return cudaErrorNotSupported;
#endif
#if LAUNCH_PDL
  if (grid <= (unsigned)ex->pdl_max) {
    attr[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr[n++].value.programmaticStreamSerializationAllowed = 1;
  }
#endif
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = grid, cfg.gridDimY = 1, cfg.gridDimZ = 1;
  cfg.blockDimX = block, cfg.blockDimY = 1, cfg.blockDimZ = 1;
  cfg.sharedMemBytes = (unsigned)shared_bytes;
  cfg.hStream = (CUstream)stream;
  cfg.attrs = attr;
  cfg.numAttrs = n;
  void* params[1] = {arg};
  return (cudaError_t)launch_ex(&cfg, (CUfunction)fn, params, NULL);
}

const struct dev_launch_ex* gpu_launch_of(const struct task* t, struct dev_launch_ex* ex) {
  pthread_once(&once, load);
  ex->launch = gpu_launch_with_event;
  ex->event = t->launch_event;
  ex->pdl_max = LAUNCH_PDL && launch_ex != NULL && pdl_max > 0 && driver_version >= 11080 &&
                        device_pdl() && !gpu_capturing(t->stream)
                    ? pdl_max
                    : 0;
  return ex->event != NULL || ex->pdl_max > 0 ? ex : NULL;
}

ncclResult_t gpu_launch_event_record(const struct task* t) {
  if (t->launch_event == NULL) return ncclSuccess;
  cudaError_t e = cudaEventRecord(t->launch_event, t->stream);
  if (e == cudaSuccess) return ncclSuccess;
  (void)cudaGetLastError();
  WARN("%s #%llu: recording config->launchCompletionEvent on its stream failed: %s (the event "
       "must be one of this GPU's)",
       coll_name(t->coll), (unsigned long long)t->seq, cudaGetErrorString(e));
  return ncclInvalidUsage;
}
