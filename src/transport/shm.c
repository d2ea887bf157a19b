/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared-memory transport between ranks of one host. Between processes the FIFO is a memfd
 * segment (os/shm.h: never named in /dev/shm), whose handle the receiver lets go as soon as the
 * sender has mapped it; between threads of one process it is the same memory shared by pointer,
 * freed by whichever side lets go last. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/check.h"
#include "topo/host.h"
#include "os/shm.h"
#include "transport/transport.h"

struct shm_desc {
  int pid;
  uint32_t nslots;
  uint64_t slot_size;
  uint64_t len;
  uint64_t addr; /* same process: the memory itself */
  char name[64];
};

static void attach(struct conn* c, void* mem, int nslots, size_t slot_size) {
  c->ctrl = mem;
  c->slots = (char*)mem + FIFO_CTRL_BYTES;
  c->nslots = nslots;
  c->slot_size = slot_size;
  c->pos = 0;
  c->slot = 0;
  c->head_seen = 0;
}

static int shm_can_connect(const struct peer_info* me, const struct peer_info* peer) {
  return me->host_hash == peer->host_hash;
}

static ncclResult_t shm_setup(struct conn* c, int nslots, size_t slot_size, void* out) {
  struct shm_desc d;
  memset(&d, 0, sizeof d);
  d.pid = getpid();
  d.nslots = nslots;
  d.slot_size = slot_size;
  d.len = fifo_mem_bytes(nslots, slot_size);
  void* mem = NULL;
  char name[OS_SHM_NAME];
  NCCLCHECK(os_shm_create(d.len, name, &mem));
  snprintf(d.name, sizeof d.name, "%s", name);
  snprintf(c->name, sizeof c->name, "%s", name);
  c->map = mem;
  c->map_len = d.len;
  c->owner = 1;
  attach(c, mem, nslots, slot_size);
  c->ctrl->refs = 1;
  d.addr = (uint64_t)(uintptr_t)mem;
  memcpy(out, &d, sizeof d);
  return ncclSuccess;
}

static ncclResult_t shm_connect(struct conn* c, const void* in) {
  struct shm_desc d;
  memcpy(&d, in, sizeof d);
  if (c->peer_pid == -1) {
    /* Same process: share the receiver's mapping. */
    attach(c, (void*)(uintptr_t)d.addr, (int)d.nslots, d.slot_size);
    __atomic_add_fetch(&c->ctrl->refs, 1, __ATOMIC_ACQ_REL);
    c->map = c->ctrl;
    c->map_len = d.len;
    return ncclSuccess;
  }
  void* mem = NULL;
  if (os_shm_open(d.name, d.len, &mem) != ncclSuccess) {
    WARN("could not map the shared memory %s of peer rank %d (pid %d)", d.name, c->peer, d.pid);
    return ncclSystemError;
  }
  c->map = mem;
  c->map_len = d.len;
  attach(c, mem, (int)d.nslots, d.slot_size);
  return ncclSuccess;
}

static ncclResult_t shm_connected(struct conn* c) {
  os_shm_unlink(c->name);
  c->name[0] = '\0';
  return ncclSuccess;
}

static void shm_free(struct conn* c) {
  if (c == NULL) return;
  os_shm_unlink(c->name);
  c->name[0] = '\0';
  if (c->map) {
    /* Both sides of a same-process pair hold one mapping; the last one unmaps it. */
    if (c->peer_pid != -1 ||
        __atomic_sub_fetch(&((struct fifo_ctrl*)c->map)->refs, 1, __ATOMIC_ACQ_REL) == 0)
      os_shm_unmap(c->map, c->map_len);
  }
  c->map = NULL;
  c->ctrl = NULL;
}

const struct transport shm_transport = {
    .name = "shm",
    .can_connect = shm_can_connect,
    .setup = shm_setup,
    .connect = shm_connect,
    .connected = shm_connected,
    .free = shm_free,
};
