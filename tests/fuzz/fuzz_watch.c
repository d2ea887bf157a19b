/* SPDX-License-Identifier: BSD-3-Clause */
/* Fuzz target: the watch ring's reading of a connection (core/watch_link.c: the framing of
 * {magic, type, len, from} messages, then core/watch.c's handling of each: BYE, DEAD, HANG,
 * REPORT and the fingerprint messages) as rank 1 of 3 reads what its previous rank sent. Each
 * input is what arrives on a fresh connection, which then ends (a peer gone without a goodbye,
 * unless a BYE came). Byte 0 picks whether the fingerprint check is on (bit 0), the rest is the
 * stream. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "core/comm.h"
#include "core/fingerprint.h"
#include "core/watch_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static struct ncclComm comm;
  static struct peer_info peers[3];
  static struct watch w;
  int sv[2];
  if (size < 1) return 0;
  setenv("MONEL_CHECK_CALLS", "1", 0);
  memset(&comm, 0, sizeof comm);
  memset(peers, 0, sizeof peers);
  for (int r = 0; r < 3; r++) peers[r].rank = r, peers[r].pid = 1 << 30; /* no such pid */
  comm.rank = 1, comm.nranks = 3, comm.peers = peers;
  memset(&w, 0, sizeof w);
  w.comm = &comm;
  w.link[IN].peer = 0, w.link[OUT].peer = 2;
  w.link[OUT].fd = -1; /* what it forwards goes nowhere */
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) abort();
  w.link[IN].fd = sv[0];
  w.fp = data[0] & 1 ? fp_create(&comm) : NULL;
  /* the stream in pieces, each read before the next comes (a message across reads) */
  size_t at = 1, piece = 1 + size / 3;
  while (at < size && w.link[IN].fd >= 0) { /* until it hangs up on a malformed stream */
    size_t n = size - at < piece ? size - at : piece;
    if (send(sv[1], data + at, n, MSG_NOSIGNAL) != (ssize_t)n) abort();
    at += n;
    watch_link_service(&w, IN, 1.0);
  }
  close(sv[1]);
  watch_link_service(&w, IN, 1.0);
  if (w.link[IN].fd >= 0) close(w.link[IN].fd);
  free(w.link[IN].buf);
  fp_free(w.fp);
  return 0;
}
