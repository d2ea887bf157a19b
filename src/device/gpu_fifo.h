/* SPDX-License-Identifier: BSD-3-Clause */
/* The layout of a GPU engine FIFO, shared by the kernels (device/dev.h) and the proxy thread
 * (proxy/fifo_net.h), which moves the slots of network connections. No CUDA here.
 *
 *   [tail u64][pad to 128][head u64][pad to 192][want u64][pad to 256]
 *   [size u64 x GPU_FIFO_MAX_SLOTS][slot 0]...
 *   tail: steps the sender has posted; head: steps the receiver has released (both only grow).
 *   want: the step the receiver waits for, written when the tail had not reached it yet (before
 *   it polls the tail; a step already there is taken without it): the proxy tests the
 *   connection on every pass while want > steps received, and a network peer that closed its
 *   connection is a failure only while the receiver wants a step it never sent (a peer that
 *   finished and freed its comm is not).
 *   size[s % nslots]: bytes the sender put in the slot of step s, written before tail passes s
 *   (a network sender sends only those bytes).
 * Slots start 256-byte aligned. Who may include: device/, gpu/, proxy/. */
#ifndef MONEL_DEVICE_GPU_FIFO_H
#define MONEL_DEVICE_GPU_FIFO_H

#define GPU_FIFO_TAIL      0
#define GPU_FIFO_HEAD      128
#define GPU_FIFO_WANT      192
#define GPU_FIFO_SIZES     256
#define GPU_FIFO_MAX_SLOTS 64
#define GPU_FIFO_HEADER    (GPU_FIFO_SIZES + 8 * GPU_FIFO_MAX_SLOTS) /* 768 */

#endif
