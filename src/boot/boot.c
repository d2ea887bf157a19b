/* SPDX-License-Identifier: BSD-3-Clause */
/* Bootstrap entry points: dispatch to the TCP or the in-process implementation, and the
 * collectives (allgather, barrier) written once over the implementations' send/recv. */
#include <stdlib.h>
#include <string.h>
#include "boot/boot_impl.h"
#include "util/check.h"
#include "util/log.h"

int boot_id_is_local(const ncclUniqueId* id) {
  struct boot_id b;
  memcpy(&b, id, sizeof(b));
  return b.magic == BOOT_MAGIC_LOCAL;
}

ncclResult_t boot_init(const ncclUniqueId* id, int rank, int nranks, struct boot** out) {
  struct boot_id b;
  if (id == NULL || out == NULL || nranks < 1 || rank < 0 || rank >= nranks) {
    WARN("bootstrap: invalid arguments (rank %d of %d); pass 0 <= rank < nranks and a unique id",
         rank, nranks);
    return ncclInvalidArgument;
  }
  memcpy(&b, id, sizeof(b));
  *out = NULL;
  if (b.magic == BOOT_MAGIC_LOCAL) return boot_local_init(&b, rank, nranks, out);
  if (b.magic == BOOT_MAGIC_TCP) return boot_socket_init(&b, rank, nranks, out);
  WARN("bootstrap: the unique id is not a Monel id (magic 0x%x); pass every rank the id that "
       "ncclGetUniqueId filled, unchanged",
       b.magic);
  return ncclInvalidArgument;
}

int boot_rank(const struct boot* b) {
  return b->rank;
}
int boot_nranks(const struct boot* b) {
  return b->nranks;
}

static ncclResult_t check_peer(const struct boot* b, int peer, const void* data, size_t size) {
  if (peer < 0 || peer >= b->nranks || (data == NULL && size > 0)) {
    WARN("bootstrap: invalid peer %d (nranks %d) or NULL buffer", peer, b->nranks);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t boot_send(struct boot* b, int peer, int tag, const void* data, size_t size) {
  NCCLCHECK(check_peer(b, peer, data, size));
  return b->ops->send(b, peer, BOOT_KIND_USER, tag, data, size);
}

ncclResult_t boot_recv(struct boot* b, int peer, int tag, void* data, size_t size) {
  NCCLCHECK(check_peer(b, peer, data, size));
  return b->ops->recv(b, peer, BOOT_KIND_USER, tag, data, size);
}

/* Ring: at step s, pass on the slot received at step s-1 (own slot first). */
ncclResult_t boot_allgather(struct boot* b, void* data, size_t size) {
  int n = b->nranks, r = b->rank;
  int next = (r + 1) % n, prev = (r + n - 1) % n;
  char* base = data;
  for (int s = 0; s < n - 1; s++) {
    int send_slot = (r - s + n) % n, recv_slot = (r - s - 1 + n) % n;
    NCCLCHECK(b->ops->send(b, next, BOOT_KIND_ALLGATHER, 0, base + (size_t)send_slot * size, size));
    NCCLCHECK(b->ops->recv(b, prev, BOOT_KIND_ALLGATHER, 0, base + (size_t)recv_slot * size, size));
  }
  return ncclSuccess;
}

ncclResult_t boot_barrier(struct boot* b) {
  ncclResult_t res = ncclSuccess;
  char* bytes = calloc((size_t)b->nranks, 1);
  if (bytes == NULL) return ncclSystemError;
  NCCLCHECKGOTO(boot_allgather(b, bytes, 1), res, out);
out:
  free(bytes);
  return res;
}

void boot_abort(struct boot* b) {
  if (b != NULL) b->ops->abort(b);
}

const unsigned char* boot_key(const struct boot* b) {
  return b->key;
}

void boot_free(struct boot* b) {
  if (b != NULL) b->ops->free(b);
}

ncclResult_t boot_msg_deliver(const struct boot* base, int peer, int tag, void* msg,
                              const void* got, size_t got_size, void* data, size_t size) {
  ncclResult_t res = ncclSuccess;
  if (got_size != size) {
    WARN("bootstrap rank %d: message from rank %d (tag %d) has %zu bytes where %zu were expected; "
         "the ranks disagree about the protocol",
         base->rank, peer, tag, got_size, size);
    res = ncclInternalError;
  } else if (size > 0) {
    memcpy(data, got, size);
  }
  free(msg);
  return res;
}
