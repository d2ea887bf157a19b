/* The CUDA engine: connects the ring at init (one FIFO per channel, owned by the receiving rank
 * on its GPU and mapped by the sending rank through peer access or CUDA IPC), then enqueues one
 * kernel per operation on the user's stream. run() never waits for peers, never allocates and
 * never synchronises, so a group may enqueue for several comms from one thread and a CUDA graph
 * may capture it. */
#include <stdlib.h>
#include <string.h>
#include "boot/boot.h"
#include "core/check.h"
#include "core/param.h"
#include "gpu/gpu.h"
#include "util/dtype.h"

#define TAG_FIFO 0x47464600 /* "GFF": my FIFO descriptor, sent to the previous rank */
#define NSLOTS 8
#define BYTES_PER_CHANNEL (128 << 10) /* a message gets one more channel per this many bytes */

struct fifo_desc {
  int pid;
  int dev;
  void* ptr;                /* valid in the same process */
  cudaIpcMemHandle_t ipc;   /* valid in another process */
};

static int same_process(const struct ncclComm* comm, int peer) {
  const struct peer_info *me = &comm->peers[comm->rank], *p = &comm->peers[peer];
  return me->host_hash == p->host_hash && me->pid == p->pid;
}

/* Can this rank write into the next rank's GPU memory? Says why not. */
static ncclResult_t check_next(struct ncclComm* comm, int next) {
  const struct peer_info *me = &comm->peers[comm->rank], *p = &comm->peers[next];
  if (me->host_hash != p->host_hash) {
    WARN("rank %d (host %s) and rank %d (host %s) are on different hosts: the GPU engine connects "
         "GPUs of one host only so far (set MONEL_ENGINE=cpu to use the CPU engine)",
         comm->rank, me->host, next, p->host);
    return ncclInvalidUsage;
  }
  if (param_int(PARAM_P2P_DISABLE) == 1) {
    WARN("NCCL_P2P_DISABLE=1: the GPU engine moves data between GPUs with peer access only and "
         "has no host-memory path yet; unset NCCL_P2P_DISABLE (or set MONEL_ENGINE=cpu)");
    return ncclInvalidUsage;
  }
  if (p->cuda_dev == me->cuda_dev) return ncclSuccess;
  int can = 0;
  CUDACHECK(cudaDeviceCanAccessPeer(&can, me->cuda_dev, p->cuda_dev));
  if (!can) {
    WARN("rank %d (GPU %d) cannot access the memory of rank %d (GPU %d): the GPU engine needs "
         "peer access (NVLink or PCIe P2P) between neighbouring GPUs so far",
         comm->rank, me->cuda_dev, next, p->cuda_dev);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

static ncclResult_t connect_ring(struct ncclComm* comm, struct gpu_comm* g) {
  int n = comm->nranks, next = (comm->rank + 1) % n, prev = (comm->rank + n - 1) % n;
  struct fifo_desc mine, theirs;
  memset(&mine, 0, sizeof mine);
  mine.pid = comm->peers[comm->rank].pid;
  mine.dev = comm->cuda_dev;
  mine.ptr = g->fifo;
  if (!same_process(comm, prev)) CUDACHECK(cudaIpcGetMemHandle(&mine.ipc, g->fifo));
  NCCLCHECK(check_next(comm, next));
  NCCLCHECK(boot_send(comm->boot, prev, TAG_FIFO, &mine, sizeof mine));
  NCCLCHECK(boot_recv(comm->boot, next, TAG_FIFO, &theirs, sizeof theirs));
  if (same_process(comm, next)) {
    if (theirs.dev != comm->cuda_dev) {
      cudaError_t e = cudaDeviceEnablePeerAccess(theirs.dev, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled)
        (void)cudaGetLastError();
      else
        CUDACHECK(e);
    }
    g->next_fifo = theirs.ptr;
  } else {
    void* p = NULL;
    CUDACHECK(cudaIpcOpenMemHandle(&p, theirs.ipc, cudaIpcMemLazyEnablePeerAccess));
    g->next_fifo = p;
    g->next_ipc = 1;
  }
  INFO(LOG_INIT | LOG_P2P, "comm %p rank %d GPU ring: send to rank %d (GPU %d) via %s, %d channels x "
       "%d slots x %zu bytes", (void*)comm, comm->rank, next, theirs.dev,
       g->next_ipc ? "CUDA IPC" : "peer access", g->nchannels_max, g->nslots, g->slot_bytes);
  return ncclSuccess;
}

static ncclResult_t init_on_device(struct ncclComm* comm, struct gpu_comm* g) {
  CUDACHECK(cudaSetDevice(comm->cuda_dev));
  int64_t maxc = param_int(PARAM_MAX_NCHANNELS), minc = param_int(PARAM_MIN_NCHANNELS);
  int nch = maxc > 0 ? (int)maxc : DEV_MAX_CHANNELS;
  if (minc > nch) nch = (int)minc;
  if (nch > DEV_MAX_CHANNELS) nch = DEV_MAX_CHANNELS;
  if (nch < 1) nch = 1;
  int64_t buff = param_int(PARAM_BUFFSIZE);
  if (buff < NSLOTS * 4096) buff = NSLOTS * 4096;
  g->nchannels_max = nch;
  g->nslots = NSLOTS;
  g->slot_bytes = ((size_t)buff / NSLOTS) & ~(size_t)127;
  g->fifo_bytes = DEV_FIFO_HEADER + (size_t)g->nslots * g->slot_bytes;
  size_t total = comm->nranks > 1 ? g->fifo_bytes * (size_t)nch : 256;
  CUDACHECK(cudaMalloc((void**)&g->fifo, total));
  CUDACHECK(cudaMemset(g->fifo, 0, total));
  CUDACHECK(cudaMalloc((void**)&g->steps, sizeof(uint64_t) * 2 * DEV_MAX_CHANNELS));
  CUDACHECK(cudaMemset(g->steps, 0, sizeof(uint64_t) * 2 * DEV_MAX_CHANNELS));
  CUDACHECK(cudaDeviceSynchronize());
  if (comm->nranks > 1) NCCLCHECK(connect_ring(comm, g));
  return ncclSuccess;
}

static ncclResult_t gpu_comm_init(struct ncclComm* comm) {
  struct gpu_comm* g = NULL;
  NCCLCALLOC(g, 1);
  comm->engine_state = g;
  int saved = -1;
  if (cudaGetDevice(&saved) != cudaSuccess) saved = -1;
  ncclResult_t res = init_on_device(comm, g);
  if (saved >= 0) cudaSetDevice(saved);
  return res;
}

static int pick_channels(const struct gpu_comm* g, size_t bytes) {
  size_t want = (bytes + BYTES_PER_CHANNEL - 1) / BYTES_PER_CHANNEL;
  int64_t minc = param_int(PARAM_MIN_NCHANNELS);
  if (minc > 0 && want < (size_t)minc) want = (size_t)minc;
  if (want > (size_t)g->nchannels_max) want = (size_t)g->nchannels_max;
  return want < 1 ? 1 : (int)want;
}

static ncclResult_t launch_allreduce(struct ncclComm* comm, struct gpu_comm* g, struct task* t) {
  if (t->count == 0) return ncclSuccess;
  struct dev_allreduce_args a;
  memset(&a, 0, sizeof a);
  a.in = t->sendbuff;
  a.out = t->recvbuff;
  a.count = t->count;
  a.rank = comm->rank;
  a.nranks = comm->nranks;
  a.nchannels = pick_channels(g, t->count * dtype_size(t->dtype));
  a.nslots = g->nslots;
  a.slot_bytes = g->slot_bytes;
  a.dtype = (int)t->dtype;
  a.op = t->op.kind;
  memcpy(a.scalar, t->op.scalar, sizeof a.scalar);
  a.device_scalar = t->op.device_scalar;
  a.steps = g->steps;
  for (int c = 0; c < a.nchannels && comm->nranks > 1; c++) {
    a.ch[c].recv_fifo = g->fifo + (size_t)c * g->fifo_bytes;
    a.ch[c].send_fifo = g->next_fifo + (size_t)c * g->fifo_bytes;
  }
  cudaError_t e = dev_allreduce_launch(&a, t->stream);
  if (e != cudaSuccess) {
    WARN("AllReduce #%llu on rank %d: the kernel launch failed: %s", (unsigned long long)t->seq,
         comm->rank, cudaGetErrorString(e));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

static ncclResult_t gpu_run(struct ncclComm* comm, struct task* tasks, int ntasks) {
  struct gpu_comm* g = comm->engine_state;
  int saved = -1;
  if (cudaGetDevice(&saved) != cudaSuccess) saved = -1;
  if (saved != comm->cuda_dev) CUDACHECK(cudaSetDevice(comm->cuda_dev));
  ncclResult_t res = ncclSuccess;
  for (int i = 0; i < ntasks && res == ncclSuccess; i++) {
    struct task* t = &tasks[i];
    if (t->coll == COLL_ALLREDUCE) {
      res = launch_allreduce(comm, g, t);
    } else {
      WARN("%s #%llu: the GPU engine does not support %s yet (set MONEL_ENGINE=cpu for host "
           "buffers)", coll_name(t->coll), (unsigned long long)t->seq, coll_name(t->coll));
      res = ncclInvalidUsage;
    }
  }
  if (saved >= 0 && saved != comm->cuda_dev) cudaSetDevice(saved);
  return res;
}

static void gpu_abort(struct ncclComm* comm) {
  /* Kernels already enqueued run to completion; a kernel waiting on a dead peer is not
   * interrupted yet. */
  (void)comm;
}

static void gpu_comm_free(struct ncclComm* comm) {
  struct gpu_comm* g = comm->engine_state;
  if (g == NULL) return;
  int saved = -1;
  if (cudaGetDevice(&saved) != cudaSuccess) saved = -1;
  if (cudaSetDevice(comm->cuda_dev) == cudaSuccess) {
    /* Our kernels must be done before our FIFOs go; peers touch them only before that. */
    if (!comm_aborted(comm)) (void)cudaDeviceSynchronize();
    if (g->next_ipc && g->next_fifo) (void)cudaIpcCloseMemHandle(g->next_fifo);
    if (!comm_aborted(comm)) {
      if (g->fifo) (void)cudaFree(g->fifo);
      if (g->steps) (void)cudaFree(g->steps);
    }
    (void)cudaGetLastError();
  }
  if (saved >= 0) cudaSetDevice(saved);
  free(g);
  comm->engine_state = NULL;
}

const struct engine gpu_engine = {
    .name = "gpu",
    .enqueue_only = 1,
    .comm_init = gpu_comm_init,
    .run = gpu_run,
    .abort = gpu_abort,
    .comm_free = gpu_comm_free,
};
