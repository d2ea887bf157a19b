/* SPDX-License-Identifier: BSD-3-Clause */
/* Point-to-point kernel: each block moves its channel's part of every message of one
 * (peer, direction) list, in order, through the FIFO the receiver owns for (sender, channel)
 * (dev.h), or the sender's mirror of it when the two are on different hosts. Sends and receives of
 * a pair run in different blocks, so two ranks that send to each other at once never wait on
 * themselves, and lists of different peers never wait on each other.
 *
 *   rank 0: [send->1 ch0][send->1 ch1][recv<-1 ch0][recv<-1 ch1][self ch0]
 *   rank 1: [send->0 ch0][send->0 ch1][recv<-0 ch0][recv<-0 ch1]
 *
 * Cost: a message is cut in nch parts (chosen by the host, dev_p2p_op) streamed in parallel, each
 * in slots of slot_bytes with up to nslots in flight: latency alpha + bytes / (nch * link share).
 * Messages to myself are plain copies. Every block of a launch must be resident at once for
 * progress (at most the comm's block budget, no more than 64, one per SM; registers for 8
 * packs in flight per thread): a batch that needs more runs in several launches (gpu/p2p.c). */
#include "device/dev.h"
#include "device/prims.cuh"

/* [lo, hi) of part c of a message of `bytes` cut in nch parts of whole 16-byte packs. */
__device__ static inline void p2p_part(size_t bytes, int nch, int c, size_t* lo, size_t* hi) {
  size_t per = (bytes + nch - 1) / nch;
  per = (per + 15) & ~(size_t)15;
  *lo = (size_t)c * per < bytes ? (size_t)c * per : bytes;
  *hi = *lo + per < bytes ? *lo + per : bytes;
}

__global__ void __launch_bounds__(DEV_NTHREADS, 1) p2p_kernel(struct dev_p2p_args a) {
  __shared__ struct fifo_state cs;
  dev_after_previous();
  const struct dev_p2p_block bk = a.blocks[blockIdx.x];
  const int c = bk.ch, peer = bk.peer, tid = threadIdx.x;
  block_started(&a.ctl);
  if (bk.kind == DEV_P2P_SELF) {
    for (int k = 0; k < bk.nops; k++) {
      const struct dev_p2p_op src = a.ops[bk.first + 2 * k], dst = a.ops[bk.first + 2 * k + 1];
      size_t bytes = DEV_P2P_BYTES(src.len), lo, hi;
      int nch = DEV_P2P_NCHOF(src.len);
      if (c >= nch || src.buf == dst.buf) continue;
      p2p_part(bytes, nch, c, &lo, &hi);
      move<uint8_t, RED_SUM>(NULL, (const uint8_t*)src.buf + lo, (uint8_t*)dst.buf + lo, NULL,
                             hi - lo, false, 0, 1);
    }
    block_finished(&a.ctl);
    return;
  }
  const bool is_send = bk.kind == DEV_P2P_SEND;
  struct fifo_ctx rc;
  const struct dev_peer pe = a.peers[peer]; /* the comm's peer table (dev.h) */
  rc.send_fifo = is_send ? pe.send_fifo + (size_t)c * a.fifo_bytes : NULL;
  rc.recv_fifo = is_send ? NULL : pe.recv_fifo + (size_t)c * a.fifo_bytes;
  rc.nslots = a.nslots;
  rc.slot_bytes = a.slot_bytes;
  rc.delta = pe.slot_delta;
  rc.hostmem = pe.recv_hostmem && rc.delta == 0;
  rc.abort = a.ctl.abort;
  uint64_t* steps = a.steps + DEV_STEP_WORDS * ((size_t)peer * a.nch + c);
  if (tid == 0) {
    cs.sent = steps[0];
    cs.recvd = steps[1];
    cs.head_seen = steps[2];
    cs.aborted = 0;
  }
  __syncthreads();
  for (int k = 0; k < bk.nops; k++) {
    const struct dev_p2p_op op = a.ops[bk.first + k];
    int nch = DEV_P2P_NCHOF(op.len);
    if (c >= nch) continue;
    size_t lo, hi;
    p2p_part(DEV_P2P_BYTES(op.len), nch, c, &lo, &hi);
    for (size_t at = lo; at < hi; at += a.slot_bytes) {
      size_t len = hi - at < a.slot_bytes ? hi - at : a.slot_bytes;
      fifo_step<uint8_t, RED_SUM>(&cs, &rc, is_send ? VERB_SEND : VERB_RECV, (const uint8_t*)op.buf,
                                  (uint8_t*)op.buf, at, at, len, 0, 1);
      if (cs.aborted) goto out;
    }
  }
  if (tid == 0) {
    if (is_send)
      steps[0] = cs.sent, steps[2] = cs.head_seen;
    else
      steps[1] = cs.recvd;
  }
out:
  block_finished(&a.ctl);
}

extern "C" cudaError_t dev_p2p_launch(const struct dev_p2p_args* a, cudaStream_t stream,
                                      const struct dev_launch_ex* ex) {
  if (ex) return dev_launch_by(ex, p2p_kernel, a->nblocks, DEV_NTHREADS, a, stream);
  p2p_kernel<<<a->nblocks, DEV_NTHREADS, 0, stream>>>(*a);
  return cudaGetLastError();
}

extern "C" cudaError_t dev_p2p_preload(void) {
  return dev_preload_fn(p2p_kernel);
}
