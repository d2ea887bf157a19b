/* SPDX-License-Identifier: BSD-3-Clause */
/* The watch's insides, shared by its two files: watch.c (what the watch knows: operations, dead
 * peers, hang reports) and watch_link.c (how it talks: the TCP connections to the neighbours, the
 * wire format, the thread that serves every comm of the process). Who may include: those two.
 *
 * Wire: every message is a 16-byte header {magic, type, len, from} and len bytes.
 *   BEAT   every WATCH_BEAT_S on both connections (a silent connection for MONEL_PEER_TIMEOUT
 *          means the peer's host is gone)
 *   BYE    the peer destroyed its comm cleanly: its silence or EOF means nothing
 *   DEAD   {rank, pid, host, why}: a rank is gone; forwarded away from where it came, so it
 *          goes around the ring both ways and stops at the dead rank's neighbours
 *   HANG   {origin, key, stuck op, n states}: goes once around the ring (next direction), each
 *          rank filling its state; back at the origin it becomes
 *   REPORT the same, once more around the ring; every rank logs it once.
 * Ranks 0..n-1 are in rank order: the ring needs no topology, only a way around. */
#ifndef MONEL_CORE_WATCH_IMPL_H
#define MONEL_CORE_WATCH_IMPL_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "nccl.h"
#include "core/watch_report.h"

struct ncclComm;

#define WATCH_MAGIC     0x6d776174u /* "mwat" */
#define WATCH_BEAT_S    1.0
#define WATCH_POLL_MS   100
#define WATCH_CONNECT_S 30.0
/* The largest body of a message but a hang report's (hang_msg_bytes): a fingerprint batch
 * (core/fingerprint.c) stays far below. A header claiming more ends the connection. */
#define WATCH_BODY_MAX (1u << 20)

enum { MSG_HELLO = 1, MSG_BEAT, MSG_BYE, MSG_DEAD, MSG_HANG, MSG_REPORT };
enum { IN = 0, OUT = 1 }; /* connection from the previous rank, to the next */

struct watch_hdr {
  uint32_t magic, type, len, from;
};

struct dead_msg {
  int32_t rank, pid;
  char host[64];
  char why[160];
};

struct watch_link {
  int fd;
  int peer;
  int bye;     /* the peer said goodbye */
  double seen; /* last time a byte came */
  char* buf;   /* bytes received, not yet a whole message */
  size_t len, cap;
};

/* An operation as the ring of struct watch holds it (struct wop, packed). */
struct wrec {
  uint32_t ver; /* seqlock (util/seqslot.h) */
  int32_t root;
  uint64_t seq, coll_index, count;
  uint32_t what; /* coll | dtype << 8 | (RED_* + 1, 0: none) << 16 | p2p << 24 */
  uint32_t pad;
};

struct watch {
  struct ncclComm* comm;
  struct watch* next;
  struct watch_link link[2];
  double beat_sent;
  struct wrec ops[WATCH_OPS]; /* written without a lock: watch.c, op_put and op_get */
  uint64_t nops, ncoll;       /* atomics written by the thread that runs the operations */
  /* Engines without a progress hook: atomics written by the thread that runs the operations
   * (done <= issued at every moment), read by the watch thread. */
  uint64_t issued, done;
  /* thread side */
  uint64_t last_done;
  double last_move;
  double pid_check;
  uint64_t hang_key_sent, hang_key_logged;
  struct fp* fp; /* mismatched calls (core/fingerprint.c); NULL when off */
  int dead;      /* atomic: a peer is gone (dead_text says who) */
  char dead_text[384];
};

/* watch_link.c: send one message (-1 if the connection is closed or broken); read and handle
 * what a connection has (a closed or silent connection is a dead peer); connect the ring of a
 * comm (collective); add a watch to the thread's list (starting the thread) and remove it (the
 * last one stops the thread). */
int watch_send(struct watch_link* l, int type, int from, const void* body, uint32_t len);
/* The largest body a peer of this comm may send (WATCH_BODY_MAX, or a hang report's size). */
size_t watch_body_max(const struct watch* w);
void watch_link_service(struct watch* w, int dir, double now);
ncclResult_t watch_connect(struct watch* w);
ncclResult_t watch_thread_add(struct watch* w);
void watch_thread_remove(struct watch* w);

/* watch.c: act on one message from direction dir; a peer found dead here; the periodic look at
 * one comm (links, beats, pids, hangs), called by the thread with the list locked. */
void watch_handle(struct watch* w, int dir, const struct watch_hdr* h, void* body);
void watch_found_dead(struct watch* w, int rank, const char* why);
void watch_service(struct watch* w, double now);

#endif
