/* A record written by one thread and copied by others without a lock (a seqlock per slot): the
 * slot's version is odd while the writer changes it; a reader keeps its copy only when the
 * version was even and the same before and after. The words move as relaxed atomics, so no
 * access is a data race. Records are whole 64-bit words, at most SEQSLOT_MAX_BYTES. For the
 * thread that runs every operation recording it for the watch thread, which reads it now and
 * then (core/watch.c, core/fingerprint.c): the writer pays plain stores, no atomic exchange. */
#ifndef MONEL_UTIL_SEQSLOT_H
#define MONEL_UTIL_SEQSLOT_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SEQSLOT_MAX_BYTES 64

/* The writer (one thread per slot): rec (bytes, a multiple of 8) into words. */
static inline void seqslot_write(uint32_t* ver, uint64_t* words, const void* rec, size_t bytes) {
  uint64_t w[SEQSLOT_MAX_BYTES / sizeof(uint64_t)];
  uint32_t v = *ver;
  memcpy(w, rec, bytes);
  __atomic_store_n(ver, v + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  for (size_t k = 0; k < bytes / sizeof(uint64_t); k++)
    __atomic_store_n(&words[k], w[k], __ATOMIC_RELAXED);
  __atomic_store_n(ver, v + 2, __ATOMIC_RELEASE);
}

/* Any thread: a whole copy of the slot into rec; 0 (rec untouched) while it is being written. */
static inline int seqslot_read(const uint32_t* ver, const uint64_t* words, void* rec,
                               size_t bytes) {
  uint64_t w[SEQSLOT_MAX_BYTES / sizeof(uint64_t)];
  uint32_t v = __atomic_load_n(ver, __ATOMIC_ACQUIRE);
  for (size_t k = 0; k < bytes / sizeof(uint64_t); k++)
    w[k] = __atomic_load_n(&words[k], __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  if ((v & 1u) || __atomic_load_n(ver, __ATOMIC_RELAXED) != v) return 0;
  memcpy(rec, w, bytes);
  return 1;
}

#endif
