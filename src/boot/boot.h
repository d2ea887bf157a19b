/* SPDX-License-Identifier: BSD-3-Clause */
/* Bootstrap: out-of-band rendezvous and messaging between the ranks of a communicator.
 *
 * Two implementations behind one handle:
 *  - TCP (boot_socket.c): ncclGetUniqueId starts a root listener (or, with NCCL_COMM_ID=host:port,
 *    only encodes the address and rank 0 listens there during init); every rank connects to the
 *    root presenting the id's random secret, the root hands out the table of all ranks' listening
 *    addresses, and ranks then talk peer to peer.
 *  - in-process (boot_local.c): ranks that are threads of one process (ncclCommInitAll, splits of
 *    such comms) meet in shared memory of the process.
 *
 * All calls are blocking, thread-safe per handle for distinct (peer, tag) pairs, and return an
 * error (never hang forever) when a peer dies or boot_abort() is called. Messages between a pair
 * of ranks with the same tag arrive in order; messages with other tags may be received in any
 * order (they are queued until asked for). Who may call: core/ (comm init, split, connection
 * setup).
 */
#ifndef MONEL_BOOT_BOOT_H
#define MONEL_BOOT_BOOT_H
#include <stddef.h>
#include <stdint.h>
#include "nccl.h"

struct boot;

/* Fill *id for a new TCP job: starts the root listener thread in this process unless
 * NCCL_COMM_ID is set. The id holds a magic, the root address (IPv4 or IPv6), a 64-bit random
 * job number and a 128-bit random key (MONEL_JOB_SECRET's with NCCL_COMM_ID). */
ncclResult_t boot_id_create(ncclUniqueId* id);

/* Like boot_id_create but always with a root of its own in this process, ignoring NCCL_COMM_ID
 * (for comms derived from another: split, shrink). */
ncclResult_t boot_id_create_private(ncclUniqueId* id);

/* Fill *id for a job whose ranks are threads of this process (nranks of them). */
ncclResult_t boot_id_create_local(ncclUniqueId* id, int nranks);

/* 1 if the id was made by boot_id_create_local. */
int boot_id_is_local(const ncclUniqueId* id);

/* Rendezvous: every rank 0..nranks-1 calls this with the same id. Times out after
 * MONEL_BOOT_TIMEOUT seconds with a message naming the ranks that never arrived. */
ncclResult_t boot_init(const ncclUniqueId* id, int rank, int nranks, struct boot** out);

int boot_rank(const struct boot* b);
int boot_nranks(const struct boot* b);

/* data holds nranks slots of `size` bytes; slot `rank` is this rank's contribution. */
ncclResult_t boot_allgather(struct boot* b, void* data, size_t size);
ncclResult_t boot_barrier(struct boot* b);
/* Point to point; a send does not wait for the matching receive (it is buffered). */
ncclResult_t boot_send(struct boot* b, int peer, int tag, const void* data, size_t size);
/* Receives exactly `size` bytes; a message of another size from that peer/tag is an error. */
ncclResult_t boot_recv(struct boot* b, int peer, int tag, void* data, size_t size);

/* Make every blocked or future call on this handle return ncclRemoteError promptly. */
void boot_abort(struct boot* b);
/* The job's secret key (AUTH_KEY_BYTES bytes, os/auth.h): every connection between the ranks
 * of the comm proves it. */
const unsigned char* boot_key(const struct boot* b);
/* Release everything; accepts NULL. */
void boot_free(struct boot* b);

#endif
