/* SPDX-License-Identifier: BSD-3-Clause */
/* The handle table: see net_handle.h. A handle packs (generation, slot, kind) into a pointer-sized
 * word with its low bit set, so it is never NULL nor an aligned pointer. A slot's generation grows
 * each time it is freed, so an old handle to a reused slot no longer matches. */
#include "transport/net_handle.h"
#include <pthread.h>
#include <stdint.h>
#include "util/log.h"

#define SLOTS_LOG2 17
#define SLOTS      (1u << SLOTS_LOG2)

struct slot {
  uint32_t gen;  /* odd while in use */
  uint32_t kind; /* enum net_kind while in use */
  void* obj;
};

static struct slot table[SLOTS];
static uint32_t free_top, next_fresh = 1; /* slot 0 is never used */
static uint32_t free_list[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uintptr_t pack(uint32_t gen, uint32_t idx, uint32_t kind) {
  return ((uintptr_t)gen << 32) | ((uintptr_t)idx << 8) | ((uintptr_t)kind << 1) | 1u;
}

void* net_handle_new(void* obj, enum net_kind kind) {
  uint32_t idx = 0;
  pthread_mutex_lock(&lock);
  if (free_top > 0)
    idx = free_list[--free_top];
  else if (next_fresh < SLOTS)
    idx = next_fresh++;
  if (idx != 0) {
    struct slot* s = &table[idx];
    s->obj = obj;
    s->kind = (uint32_t)kind;
    __atomic_store_n(&s->gen, s->gen | 1u, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&lock);
  if (idx == 0) {
    WARN("more than %u network objects (comms, requests, registrations) are open at once: close "
         "some before opening more",
         SLOTS - 1);
    return NULL;
  }
  return (void*)pack(table[idx].gen, idx, (uint32_t)kind);
}

/* The slot a handle names if it is live (any kind), else NULL. */
static struct slot* lookup(const void* handle) {
  uintptr_t h = (uintptr_t)handle;
  uint32_t idx = (uint32_t)(h >> 8) & 0xffffffu, gen = (uint32_t)(h >> 32);
  if ((h & 1u) == 0 || idx == 0 || idx >= SLOTS || (gen & 1u) == 0) return NULL;
  struct slot* s = &table[idx];
  if (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != gen) return NULL;
  if (((h >> 1) & 0x7fu) != s->kind) return NULL;
  return s;
}

void* net_handle_get(const void* handle, enum net_kind kind) {
  struct slot* s = lookup(handle);
  return s != NULL && s->kind == (uint32_t)kind ? s->obj : NULL;
}

void net_handle_free(const void* handle) {
  pthread_mutex_lock(&lock);
  struct slot* s = lookup(handle);
  if (s != NULL) {
    __atomic_store_n(&s->gen, s->gen + 1, __ATOMIC_RELEASE);
    s->obj = NULL;
    free_list[free_top++] = (uint32_t)(s - table);
  }
  pthread_mutex_unlock(&lock);
}

const char* net_kind_name(enum net_kind kind) {
  switch (kind) {
  case NET_KIND_LISTEN:
    return "listen comm";
  case NET_KIND_SEND:
    return "send comm";
  case NET_KIND_RECV:
    return "receive comm";
  case NET_KIND_REQUEST:
    return "request";
  case NET_KIND_CONNECTING:
    return "connection in progress";
  default:
    return "memory registration";
  }
}
