/* SPDX-License-Identifier: BSD-3-Clause */
/* A record written by one thread and read by others without a lock (a seqlock per slot): the
 * slot's version is odd while the writer changes it; a reader keeps what it read only when the
 * version was even and the same before and after. The caller moves the record's members as
 * relaxed atomics between begin and end, so that no access is a data race. For the thread that
 * runs every operation recording it for the watch thread, which reads it now and then
 * (core/watch.c): the writer pays plain stores, no atomic exchange. */
#ifndef MONEL_UTIL_SEQSLOT_H
#define MONEL_UTIL_SEQSLOT_H
#include <stdint.h>

/* The writer (one thread per slot): begin, store the members, end with begin's value. */
static inline uint32_t seqslot_write_begin(uint32_t* ver) {
  uint32_t v = *ver;
  __atomic_store_n(ver, v + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  return v;
}
static inline void seqslot_write_end(uint32_t* ver, uint32_t v) {
  __atomic_store_n(ver, v + 2, __ATOMIC_RELEASE);
}

/* A reader: begin, load the members, and keep them if end (with begin's value) says 1. */
static inline uint32_t seqslot_read_begin(const uint32_t* ver) {
  return __atomic_load_n(ver, __ATOMIC_ACQUIRE);
}
static inline int seqslot_read_end(const uint32_t* ver, uint32_t v) {
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return !(v & 1u) && __atomic_load_n(ver, __ATOMIC_RELAXED) == v;
}

#endif
