/* SPDX-License-Identifier: BSD-3-Clause */
/* One-sided operations: ncclPutSignal, ncclSignal, ncclWaitSignal.
 *
 * A put is a small header (window id, offset, size, signal) followed by the data; ncclWaitSignal
 * takes the headers from each peer it waits for, lands the data of each in its own window at the
 * offset named, and counts the signals. A signal for another (index, context) than the one being
 * waited for is counted and kept for a later wait. Windows are registered collectively, in the
 * same order on every rank, so the id of the caller's handle names the same window on the
 * target. Three routes, chosen per (pair, signal index, context) alike on both ranks of a pair,
 * so a signal never goes one way while its wait looks for it the other:
 *
 * - Messages (the CPU engine): header and data over the comm's point-to-point paths (shared
 *   memory between processes of a host, the network between hosts). A put bigger than the
 *   path's buffer completes only when the target's ncclWaitSignal takes it.
 * - Direct (an engine on streams, where it says so for the pair, struct engine signal_direct: on
 *   the GPU engine, ranks of one host; indices below ENGINE_SIGNAL_SIGS and ENGINE_SIGNAL_CTXS):
 *   nothing travels as a message: a put is a copy into the peer's part of the window (mapped at
 *   registration) and a signal a stream write into the peer's signal words; ncclWaitSignal is a
 *   stream wait on this rank's words.
 * - Host (an engine on streams, every other pair, e.g. across hosts): the put waits for its
 *   stream's earlier work, copies the data to the host and sends header and data over the comm's
 *   bootstrap connections, whose sends never wait for the receiver (they are buffered there), so
 *   two ranks that put to each other before they wait cannot block each other, whatever the
 *   number of puts; ncclWaitSignal takes them on the host and copies each into its window in
 *   stream order, waiting for the copy before it frees the host copy. (The kernels' FIFOs, with
 *   2 slots per peer and channel that only the target's queued receives free, could not promise
 *   that.) */
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "core/comm.h"
#include "core/comm_ext.h"
#include "core/group.h"
#include "util/check.h"
#include "util/dtype.h"

#define PUT_MAGIC 0x4d6f5075u /* "MoPu" */

struct put_hdr {
  uint32_t magic;
  int32_t win_id; /* -1: a signal alone */
  int32_t sig, ctx;
  uint64_t offset, bytes;
};

static int on_cpu(const struct ncclComm* comm) {
  return strcmp(comm->engine->name, "cpu") == 0;
}
/* An engine whose operations run later on streams, with what one-sided calls need of it. */
static int on_stream(const struct ncclComm* comm) {
  const struct engine* e = comm->engine;
  return e->stream_wait && e->copy;
}

/* A message route's header (CPU engine), kept until its group ran. */
static void hdr_release(void* p, cudaStream_t s) {
  (void)s;
  free(p);
}

static ncclResult_t check_common(ncclComm_t comm, int peer, int sig, int ctx, unsigned flags,
                                 const char* fn) {
  NCCLCHECK(api_check_usable(comm, fn));
  NCCLCHECK(api_check_rank(peer, comm->nranks, "peer", fn));
  if (sig < 0 || ctx < 0) {
    WARN("%s: sigIdx %d and ctx %d must not be negative", fn, sig, ctx);
    return ncclInvalidArgument;
  }
  if (flags != 0) {
    WARN("%s: flags is 0x%x; no flag is defined yet, pass 0", fn, flags);
    return ncclInvalidArgument;
  }
  if (!on_cpu(comm) && !on_stream(comm)) {
    WARN("%s: one-sided operations do not run on the %s engine", fn, comm->engine->name);
    return ncclInvalidUsage;
  }
  if (group_depth() == 0) comm_onesided_release(comm); /* every earlier group has run */
  return ncclSuccess;
}

static ncclResult_t copy(ncclComm_t comm, void* dst, const void* src, size_t bytes,
                         cudaStream_t stream) {
  if (on_stream(comm)) return comm->engine->copy(dst, src, bytes, stream, "ncclPutSignal");
  memcpy(dst, src, bytes);
  return ncclSuccess;
}

/* The slot of a direct signal (sig, ctx) with peer, or -1 when it travels as a message. */
static int direct_slot(const struct ncclComm* comm, int peer, int sig, int ctx) {
  const struct engine* e = comm->engine;
  if (e->signal_direct == NULL || sig >= ENGINE_SIGNAL_SIGS || ctx >= ENGINE_SIGNAL_CTXS ||
      !e->signal_direct(comm, peer))
    return -1;
  return sig * ENGINE_SIGNAL_CTXS + ctx;
}

/* A put or signal with no message: the data copied into peer's part of the window, then the
 * signal written, in stream order. */
static ncclResult_t post_direct(const struct put_hdr* h, const void* data, int peer, int slot,
                                ncclComm_t comm, cudaStream_t stream) {
  if (h->bytes > 0) {
    struct comm_window* cw = comm_window_by_id(comm, h->win_id);
    const struct window_peer* wp = cw && cw->peers ? &cw->peers[peer] : NULL;
    if (wp == NULL || wp->ptr == NULL || h->offset > wp->size || h->bytes > wp->size - h->offset) {
      WARN("ncclPutSignal: rank %d cannot reach bytes [%llu, %llu) of rank %d's part of window "
           "#%d (%s); a window between GPUs of one host must lie in memory from cudaMalloc or "
           "ncclMemAlloc, registered outside a group",
           comm->rank, (unsigned long long)h->offset, (unsigned long long)(h->offset + h->bytes),
           peer, h->win_id, wp == NULL || wp->ptr == NULL ? "not mapped" : "beyond that part");
      return ncclInvalidUsage;
    }
    NCCLCHECK(copy(comm, wp->ptr + h->offset, data, (size_t)h->bytes, stream));
  }
  return comm->engine->signal_raise(comm, peer, slot, stream);
}

/* The host route: once the stream's earlier work is done, header and data (copied to the host)
 * go to peer over the bootstrap (comm_onesided_send), as two messages. */
static ncclResult_t post_host(const struct put_hdr* h, const void* data, int peer, ncclComm_t comm,
                              cudaStream_t stream) {
  const char* fn = h->win_id < 0 ? "ncclSignal" : "ncclPutSignal";
  void* buf = NULL;
  if (h->bytes > 0 && (buf = malloc((size_t)h->bytes)) == NULL) {
    WARN("%s: out of host memory for a put of %llu bytes on rank %d", fn,
         (unsigned long long)h->bytes, comm->rank);
    return ncclSystemError;
  }
  ncclResult_t res = comm->engine->stream_wait(stream, fn);
  if (res == ncclSuccess && buf != NULL) {
    res = copy(comm, buf, data, (size_t)h->bytes, stream);
    if (res == ncclSuccess) res = comm->engine->stream_wait(stream, fn);
  }
  if (res == ncclSuccess) res = comm_onesided_send(comm, peer, h, sizeof *h);
  if (res == ncclSuccess && buf != NULL)
    res = comm_onesided_send(comm, peer, buf, (size_t)h->bytes);
  free(buf);
  return res;
}

/* Sends the header (and the data) to peer; inside a group the header must outlive the call. */
static ncclResult_t post(const struct put_hdr* h, const void* data, int peer, ncclComm_t comm,
                         cudaStream_t stream) {
  if (peer == comm->rank) { /* to myself: land it now (in stream order on a GPU) */
    struct comm_window* cw = h->bytes ? comm_window_by_id(comm, h->win_id) : NULL;
    if (cw) NCCLCHECK(copy(comm, (char*)cw->buff + h->offset, data, (size_t)h->bytes, stream));
    return comm_signal_add(comm, peer, h->sig, h->ctx, 1);
  }
  if (on_stream(comm)) {
    int slot = direct_slot(comm, peer, h->sig, h->ctx);
    return slot >= 0 ? post_direct(h, data, peer, slot, comm, stream)
                     : post_host(h, data, peer, comm, stream);
  }
  struct put_hdr* hp = malloc(sizeof *hp);
  if (hp == NULL) {
    WARN("ncclPutSignal: out of host memory on rank %d", comm->rank);
    return ncclSystemError;
  }
  *hp = *h;
  /* Released at the next one-sided call outside a group, or with the comm: by then the group
   * that sends it has run (CPU) or is queued on the stream (GPU: freed when the stream gets
   * there). */
  ncclResult_t res = comm_onesided_keep(comm, hp, stream, hdr_release);
  if (res != ncclSuccess) {
    hdr_release(hp, stream);
    return res;
  }
  NCCLCHECK(pncclGroupStart());
  res = pncclSend(hp, sizeof *hp, ncclUint8, peer, comm, stream);
  if (res == ncclSuccess && h->bytes > 0)
    res = pncclSend(data, (size_t)h->bytes, ncclUint8, peer, comm, stream);
  ncclResult_t end = pncclGroupEnd();
  if (group_depth() == 0) comm_onesided_release(comm); /* queued or done: release it */
  return res != ncclSuccess ? res : end;
}

NCCL_API(ncclResult_t, ncclPutSignal, const void* localbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
         unsigned int flags, ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclPutSignal";
  NCCLCHECK(check_common(comm, peer, sigIdx, ctx, flags, fn));
  NCCLCHECK(api_check_dtype(datatype, fn));
  NCCLCHECK(api_check_count(count, datatype, 1, fn));
  size_t bytes = count * dtype_size(datatype);
  if (bytes > 0) NCCLCHECK(api_check_ptr(localbuff, "localbuff", fn));
  struct comm_window* cw = comm_window_of(comm, peerWin);
  if (cw == NULL) {
    WARN("%s: peerWin %p is not a window registered on comm %p", fn, (void*)peerWin, (void*)comm);
    return ncclInvalidArgument;
  }
  if (peerWinOffset > cw->size || bytes > cw->size - peerWinOffset) {
    WARN("%s: %zu bytes at offset %zu do not fit the window's %zu bytes", fn, bytes, peerWinOffset,
         cw->size);
    return ncclInvalidArgument;
  }
  struct put_hdr h = {PUT_MAGIC, cw->id, sigIdx, ctx, peerWinOffset, bytes};
  return post(&h, localbuff, peer, comm, stream);
}

NCCL_API(ncclResult_t, ncclSignal, int peer, int sigIdx, int ctx, unsigned int flags,
         ncclComm_t comm, cudaStream_t stream) {
  NCCLCHECK(check_common(comm, peer, sigIdx, ctx, flags, "ncclSignal"));
  struct put_hdr h = {PUT_MAGIC, -1, sigIdx, ctx, 0, 0};
  return post(&h, NULL, peer, comm, stream);
}

/* The host route's data of h, landed in its window in stream order: the stream waits for the
 * copy before the host copy goes. A put that fits no window is taken and dropped. */
static ncclResult_t land_host(ncclComm_t comm, int peer, cudaStream_t stream,
                              const struct put_hdr* h, struct comm_window* cw, int fits,
                              const char* fn) {
  void* buf = malloc((size_t)h->bytes);
  if (buf == NULL) {
    WARN("%s: out of host memory for a put of %llu bytes on rank %d", fn,
         (unsigned long long)h->bytes, comm->rank);
    return ncclSystemError;
  }
  ncclResult_t res = comm_onesided_recv(comm, peer, buf, (size_t)h->bytes);
  if (res == ncclSuccess && fits) {
    res = copy(comm, (char*)cw->buff + h->offset, buf, (size_t)h->bytes, stream);
    if (res == ncclSuccess) res = comm->engine->stream_wait(stream, fn);
  }
  free(buf);
  return res;
}

/* Receives one put or signal from peer (on its route: messages or the host's) and lands its
 * data; *sig, *ctx: its signal. */
static ncclResult_t take_one(ncclComm_t comm, int peer, cudaStream_t stream, int* sig, int* ctx,
                             const char* fn) {
  struct put_hdr h;
  int host = on_stream(comm);
  NCCLCHECK(host ? comm_onesided_recv(comm, peer, &h, sizeof h)
                 : pncclRecv(&h, sizeof h, ncclUint8, peer, comm, stream));
  if (h.magic != PUT_MAGIC) {
    WARN("%s: rank %d received from rank %d a message that is not a put or a signal; a "
         "ncclSend/ncclRecv between these ranks is interleaved with one-sided calls",
         fn, comm->rank, peer);
    return ncclInvalidUsage;
  }
  *sig = h.sig, *ctx = h.ctx;
  if (h.bytes == 0) return ncclSuccess;
  struct comm_window* cw = comm_window_by_id(comm, h.win_id);
  int fits = cw != NULL && h.offset <= cw->size && h.bytes <= cw->size - h.offset;
  ncclResult_t res = ncclSuccess;
  if (host) {
    res = land_host(comm, peer, stream, &h, cw, fits, fn);
    if (fits || res != ncclSuccess) return res;
  } else {
    if (fits)
      return pncclRecv((char*)cw->buff + h.offset, (size_t)h.bytes, ncclUint8, peer, comm, stream);
    /* Take the data anyway, so that the path stays in step, then fail. */
    void* sink = malloc((size_t)h.bytes);
    res = sink ? pncclRecv(sink, (size_t)h.bytes, ncclUint8, peer, comm, stream) : ncclSystemError;
    free(sink);
  }
  WARN("%s: rank %d got a put of %llu bytes at offset %llu of window #%d from rank %d, which "
       "%s on this rank; register windows in the same order on every rank",
       fn, comm->rank, (unsigned long long)h.bytes, (unsigned long long)h.offset, h.win_id, peer,
       cw ? "does not fit that window" : "has no such window");
  return res != ncclSuccess ? res : ncclInvalidUsage;
}

NCCL_API(ncclResult_t, ncclWaitSignal, int nDesc, ncclWaitSignalDesc_t* signalDescs,
         ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclWaitSignal";
  NCCLCHECK(api_check_usable(comm, fn));
  if (nDesc < 0 || (nDesc > 0 && signalDescs == NULL)) {
    WARN("%s: nDesc is %d with signalDescs %p", fn, nDesc, (void*)signalDescs);
    return ncclInvalidArgument;
  }
  for (int i = 0; i < nDesc; i++) {
    ncclWaitSignalDesc_t* d = &signalDescs[i];
    NCCLCHECK(check_common(comm, d->peer, d->sigIdx, d->ctx, 0, fn));
    if (d->opCnt < 0) {
      WARN("%s: signalDescs[%d].opCnt is %d; it must not be negative", fn, i, d->opCnt);
      return ncclInvalidArgument;
    }
  }
  if (group_depth() > 0) {
    WARN("%s: cannot be called inside ncclGroupStart/ncclGroupEnd on Monel (it must see each put "
         "before taking its data); call it after the group",
         fn);
    return ncclInvalidUsage;
  }
  /* The host route takes puts on the host: the stream's earlier work first (refused in capture
   * before anything is taken). */
  for (int i = 0; i < nDesc; i++)
    if (on_stream(comm) && signalDescs[i].peer != comm->rank &&
        direct_slot(comm, signalDescs[i].peer, signalDescs[i].sigIdx, signalDescs[i].ctx) < 0) {
      NCCLCHECK(comm->engine->stream_wait(stream, fn));
      break;
    }
  for (int i = 0; i < nDesc; i++) {
    ncclWaitSignalDesc_t* d = &signalDescs[i];
    int slot = direct_slot(comm, d->peer, d->sigIdx, d->ctx);
    if (slot >= 0) {
      NCCLCHECK(comm->engine->signal_wait(comm, d->peer, slot, d->opCnt, stream));
      continue;
    }
    int need = d->opCnt - comm_signal_take(comm, d->peer, d->sigIdx, d->ctx, d->opCnt);
    while (need > 0) {
      int sig = -1, ctx = -1;
      NCCLCHECK(take_one(comm, d->peer, stream, &sig, &ctx, fn));
      if (sig == d->sigIdx && ctx == d->ctx)
        need--;
      else
        NCCLCHECK(comm_signal_add(comm, d->peer, sig, ctx, 1));
    }
  }
  return ncclSuccess;
}
