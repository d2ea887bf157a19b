/* SPDX-License-Identifier: BSD-3-Clause */
/* What the watch (watch.c) records of each operation and sends around the ring when one hangs,
 * and the sentence a hang report makes of it (watch_report.c). */
#ifndef MONEL_CORE_WATCH_REPORT_H
#define MONEL_CORE_WATCH_REPORT_H
#include <stddef.h>
#include <stdint.h>

struct ncclComm;

#define WATCH_OPS 256 /* operations a rank remembers */

/* One operation as the user asked for it. coll_index: collectives (everything but Send/Recv)
 * issued on the comm up to and including this one, the same on every rank for the same call. */
struct wop {
  uint64_t seq, coll_index, count;
  int32_t coll, dtype, op; /* enum coll_kind, ncclDataType_t, RED_* or -1 */
  int32_t root;            /* root, or peer of Send/Recv */
  int32_t p2p, pad;
};

/* A rank's state in a hang report: collectives issued, operations issued/finished (seq), the
 * operation it issued as the stuck collective (has_op) and the oldest one it waits on
 * (has_wait). */
struct wstate {
  int32_t filled, has_op, has_wait, pad;
  uint64_t ncoll, issued, done;
  struct wop op, wait;
};

struct hang_msg {
  int32_t origin, nranks;
  uint32_t waited_s, pad;
  uint64_t key; /* names the stuck operation: every rank logs a key once */
  struct wop stuck;
  struct wstate st[];
};

static inline size_t hang_msg_bytes(int nranks) {
  return sizeof(struct hang_msg) + (size_t)nranks * sizeof(struct wstate);
}

static inline int wop_is_p2p(const struct wop* o) {
  return o->p2p;
}

/* An engine's progress in the watch's terms from what a GPU reports (gpu/engine.c): eager, the
 * seq of its last launch outside stream capture; done_seq, the highest seq any block finished;
 * running, whether a block started and has not finished (a graph replay counts). Operations up
 * to *done are over, *issued is the last one known; *issued > *done while anything is pending. A
 * kernel launches only when the one before it is over, so with eager > done_seq the operations up
 * to done_seq are over; while a block runs, the operation at done_seq may be partly done. */
static inline void watch_progress_from(uint64_t eager, uint64_t done_seq, int running,
                                       uint64_t* issued, uint64_t* done) {
  uint64_t over = done_seq;
  if (running && eager <= done_seq) over = done_seq ? done_seq - 1 : 0;
  uint64_t last = eager > done_seq ? eager : done_seq;
  if (running && last <= over) last = over + 1;
  *issued = last, *done = over;
}

/* "AllReduce #12 (count 1024, float32, sum)" */
void wop_describe(const struct wop* o, char* buf, size_t len);
/* The WARN of a hang report: the stuck operation, ranks that have not called it, ranks that
 * called something else at that point (a mismatch), what each rank waits on. */
void watch_report_text(const struct ncclComm* comm, const struct hang_msg* m, char* buf,
                       size_t len);

#endif
