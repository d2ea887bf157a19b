/* SPDX-License-Identifier: BSD-3-Clause */
/* Exported collective and point-to-point calls: check arguments, build a task, queue it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "util/check.h"
#include "core/comm.h"
#include "core/group.h"
#include "core/redop.h"
#include "util/dtype.h"

ncclResult_t api_check_ptr(const void* p, const char* what, const char* fn) {
  if (p == NULL) {
    WARN("%s: %s is NULL", fn, what);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t api_check_dtype(ncclDataType_t dt, const char* fn) {
  if ((int)dt < 0 || (int)dt >= ncclNumTypes) {
    WARN("%s: datatype %d is invalid; use a value of ncclDataType_t below ncclNumTypes (%d)", fn,
         (int)dt, ncclNumTypes);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t api_check_count(size_t count, ncclDataType_t dt, size_t factor, const char* fn) {
  size_t bytes; /* products checked without divisions: this runs on every operation */
  if (factor == 0) factor = 1;
  if (__builtin_mul_overflow(count, dtype_size(dt), &bytes) ||
      __builtin_mul_overflow(bytes, factor, &bytes) || bytes > (size_t)INT64_MAX) {
    WARN("%s: count %zu of %s (x%zu) overflows the size of a buffer", fn, count, dtype_name(dt),
         factor);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t api_check_rank(int rank, int nranks, const char* what, const char* fn) {
  if (rank < 0 || rank >= nranks) {
    WARN("%s: %s %d is out of range [0, %d)", fn, what, rank, nranks);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

/* A live comm that was not aborted, revoked, or failed on its own (a dead peer). */
ncclResult_t api_check_usable(ncclComm_t comm, const char* fn) {
  NCCLCHECK(comm_check(comm, fn, 0));
  if (comm->suspended) {
    WARN("%s: comm %p is suspended (ncclCommSuspend); call ncclCommResume on every rank first", fn,
         (void*)comm);
    return ncclInvalidUsage;
  }
  if (comm_aborted(comm)) {
    WARN("%s: comm %p was aborted or revoked", fn, (void*)comm);
    return ncclInvalidUsage;
  }
  if (__atomic_load_n(&comm->failed, __ATOMIC_ACQUIRE)) {
    ncclResult_t err = __atomic_load_n(&comm->async_error, __ATOMIC_ACQUIRE);
    WARN("%s: comm %p failed earlier and can only be aborted (ncclCommAbort): %s", fn, (void*)comm,
         comm->fail_msg);
    return err != ncclSuccess && err != ncclInProgress ? err : ncclRemoteError;
  }
  return ncclSuccess;
}

/* The checks every operation shares, then the queueing. The count is checked with nranks times
 * it for the collectives whose largest buffer holds a part per rank (AllGather, ReduceScatter,
 * AlltoAll, Gather, Scatter); `root` is checked as the root of the rooted collectives and as the
 * peer of Send and Recv; `opts`, when given, holds a call's own settings (nccl*Config). */
ncclResult_t api_enqueue(enum coll_kind coll, const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t dt, ncclRedOp_t op, int root, ncclComm_t comm,
                         cudaStream_t stream, const char* fn, const struct task* opts) {
  /* A copy of a zero task: GCC zeroes a task initialised in place with `rep stos`, whose start
   * costs more on some CPUs (AMD EPYC) than all the checks below; a copy is a few vector moves. */
  static const struct task no_task;
  struct task t = no_task;
  t.coll = coll, t.sendbuff = sendbuff, t.recvbuff = recvbuff, t.count = count;
  t.dtype = dt, t.root = root, t.stream = stream;
  if (opts) {
    t.algo_mask = opts->algo_mask;
    t.cta_min = opts->cta_min, t.cta_max = opts->cta_max, t.cta_policy = opts->cta_policy;
    t.launch_event = opts->launch_event;
    t.user_tag = opts->user_tag;
  }
  NCCLCHECK(api_check_usable(comm, fn));
  NCCLCHECK(api_check_dtype(dt, fn));
  if (coll == COLL_ALLTOALLV) return ncclInternalError; /* built by ncclAlltoAllv itself */
  int gathers = coll == COLL_ALLGATHER || coll == COLL_REDUCESCATTER || coll == COLL_ALLTOALL ||
                coll == COLL_GATHER || coll == COLL_SCATTER;
  NCCLCHECK(api_check_count(count, dt, gathers ? (size_t)comm->nranks : 1, fn));
  int rooted =
      coll == COLL_BROADCAST || coll == COLL_REDUCE || coll == COLL_GATHER || coll == COLL_SCATTER;
  if (rooted) NCCLCHECK(api_check_rank(root, comm->nranks, "root", fn));
  if (coll == COLL_SEND || coll == COLL_RECV)
    NCCLCHECK(api_check_rank(root, comm->nranks, "peer", fn));
  int reduces = coll == COLL_ALLREDUCE || coll == COLL_REDUCE || coll == COLL_REDUCESCATTER;
  if (reduces) NCCLCHECK(redop_resolve(comm, op, dt, &t.op, fn));
  if (count > 0) {
    if (task_reads_send(coll, comm->rank, root)) NCCLCHECK(api_check_ptr(sendbuff, "sendbuff", fn));
    if (task_writes_recv(coll, comm->rank, root))
      NCCLCHECK(api_check_ptr(recvbuff, "recvbuff", fn));
  }
  if (comm->engine->check_task) NCCLCHECK(comm->engine->check_task(comm, &t, fn));
  t.seq = ++comm->seq;
  TRACE(LOG_COLL, "%s #%llu comm %p count %zu dtype %d root %d", fn, (unsigned long long)t.seq,
        (void*)comm, count, (int)dt, root);
  return group_enqueue(comm, &t);
}

static ncclResult_t enqueue(enum coll_kind coll, const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t dt, ncclRedOp_t op, int root, ncclComm_t comm,
                            cudaStream_t stream, const char* fn) {
  return api_enqueue(coll, sendbuff, recvbuff, count, dt, op, root, comm, stream, fn, NULL);
}

#define NO_OP   ncclSum
#define NO_ROOT 0

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(COLL_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, NO_ROOT, comm, stream,
                 "ncclAllReduce");
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(COLL_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm, stream,
                 "ncclReduce");
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(COLL_BROADCAST, sendbuff, recvbuff, count, datatype, NO_OP, root, comm, stream,
                 "ncclBroadcast");
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream) {
  return enqueue(COLL_BROADCAST, buff, buff, count, datatype, NO_OP, root, comm, stream,
                 "ncclBcast");
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(COLL_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, NO_ROOT, comm,
                 stream, "ncclReduceScatter");
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(COLL_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, NO_OP, NO_ROOT, comm,
                 stream, "ncclAllGather");
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(COLL_ALLTOALL, sendbuff, recvbuff, count, datatype, NO_OP, NO_ROOT, comm, stream,
                 "ncclAlltoAll");
}

NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(COLL_GATHER, sendbuff, recvbuff, count, datatype, NO_OP, root, comm, stream,
                 "ncclGather");
}

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(COLL_SCATTER, sendbuff, recvbuff, count, datatype, NO_OP, root, comm, stream,
                 "ncclScatter");
}

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(COLL_SEND, sendbuff, NULL, count, datatype, NO_OP, peer, comm, stream, "ncclSend");
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  return enqueue(COLL_RECV, NULL, recvbuff, count, datatype, NO_OP, peer, comm, stream, "ncclRecv");
}

/* Copy row `rank` of the four n*n matrices and check that every block fits its buffer's size
 * as an offset of elements. The rows are owned by the task (task_release frees them). */
static ncclResult_t alltoallv_rows(ncclComm_t comm, const size_t* const m[4], ncclDataType_t dt,
                                   size_t** out, size_t* sent, size_t* received, const char* fn) {
  static const char* names[4] = {"sendcounts", "sdispls", "recvcounts", "rdispls"};
  size_t n = (size_t)comm->nranks, row = (size_t)comm->rank * n;
  for (int k = 0; k < 4; k++) NCCLCHECK(api_check_ptr(m[k], names[k], fn));
  size_t* v = malloc(4 * n * sizeof *v);
  if (v == NULL) {
    WARN("%s: out of host memory copying the counts of rank %d", fn, comm->rank);
    return ncclSystemError;
  }
  *sent = *received = 0;
  for (size_t p = 0; p < n; p++) {
    for (int k = 0; k < 4; k++) v[k * n + p] = m[k][row + p];
    for (int k = 0; k < 4; k += 2) {
      if (api_check_count(v[k * n + p], dt, 1, fn) != ncclSuccess ||
          api_check_count(v[(k + 1) * n + p] + v[k * n + p], dt, 1, fn) != ncclSuccess ||
          v[(k + 1) * n + p] + v[k * n + p] < v[k * n + p]) {
        WARN("%s: %s/%s of rank %d for peer %zu overflow a buffer", fn, names[k], names[k + 1],
             comm->rank, p);
        free(v);
        return ncclInvalidArgument;
      }
    }
    *sent += v[p], *received += v[2 * n + p];
  }
  *out = v;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclAlltoAllv, const void* sendbuff, const size_t* sendcounts,
         const size_t* sdispls, void* recvbuff, const size_t* recvcounts, const size_t* rdispls,
         void* relaybuff, size_t relaycount, ncclDataType_t datatype, ncclComm_t comm,
         cudaStream_t stream) {
  const char* fn = "ncclAlltoAllv";
  struct task t;
  size_t sent = 0, received = 0;
  ncclResult_t res = ncclSuccess;
  memset(&t, 0, sizeof t);
  (void)relaybuff, (void)relaycount; /* one host: no relay through a third rank is needed */
  NCCLCHECK(api_check_usable(comm, fn));
  NCCLCHECK(api_check_dtype(datatype, fn));
  const size_t* const m[4] = {sendcounts, sdispls, recvcounts, rdispls};
  NCCLCHECK(alltoallv_rows(comm, m, datatype, &t.vrows, &sent, &received, fn));
  if (sent) NCCLCHECKGOTO(api_check_ptr(sendbuff, "sendbuff", fn), res, out);
  if (received) NCCLCHECKGOTO(api_check_ptr(recvbuff, "recvbuff", fn), res, out);
  t.coll = COLL_ALLTOALLV;
  t.sendbuff = sendbuff;
  t.recvbuff = recvbuff;
  t.dtype = datatype;
  t.stream = stream;
  if (comm->engine->check_task) NCCLCHECKGOTO(comm->engine->check_task(comm, &t, fn), res, out);
  t.seq = ++comm->seq;
  TRACE(LOG_COLL, "%s #%llu comm %p sends %zu receives %zu dtype %d", fn, (unsigned long long)t.seq,
        (void*)comm, sent, received, (int)datatype);
  return group_enqueue(comm, &t);
out:
  task_release(&t);
  return res;
}

NCCL_API(ncclResult_t, ncclGroupStart, void) {
  return group_start();
}
NCCL_API(ncclResult_t, ncclGroupEnd, void) {
  return group_end();
}
