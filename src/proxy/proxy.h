/* SPDX-License-Identifier: BSD-3-Clause */
/* The host progress thread. One per process, shared by every communicator that has a network
 * (net_socket) connection: it moves slots between the local FIFOs and the network so that the
 * engines wait on local memory only. A communicator takes the thread with
 * proxy_acquire() before its first network connection and gives it back with proxy_release() after
 * freeing its connections; the thread stops when no communicator holds it. With nothing in
 * flight it sleeps until the network has news or an engine rings its doorbell (proxy_kick).
 * Who may call: the engines (cpu/, gpu/). */
#ifndef MONEL_PROXY_PROXY_H
#define MONEL_PROXY_PROXY_H
#include "nccl.h"

/* Idempotent per holder (a communicator): starts the thread if needed. */
ncclResult_t proxy_acquire(const void* holder);
/* No-op for a holder that never acquired; stops and joins the thread after the last one. */
void proxy_release(const void* holder);
/* The doorbell: an engine moved a counter of a network FIFO whose waiting word says that the
 * proxy thread sleeps (FIFO_WAITING_PROXY, transport.h): wake it. Cheap when it is awake. */
void proxy_kick(void);
/* The GPU engine is about to enqueue kernels that its network FIFOs carry: the thread, which may
 * sleep on the doorbell after a long idle spell (a kernel's tail announces nothing), wakes and
 * polls closely again. Cheap when it is awake (one atomic add). */
void proxy_expect_gpu_work(void);

#endif
