/* Driver calls reached through the runtime (cudaGetDriverEntryPoint*), so the library still loads
 * and runs its CPU engine without a driver, and the capture question every launch asks. */
#include <cuda.h>
#include <pthread.h>
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
static is_capturing_fn is_capturing;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
  is_capturing = (is_capturing_fn)gpu_driver_fn("cuStreamIsCapturing");
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
