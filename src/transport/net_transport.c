/* SPDX-License-Identifier: BSD-3-Clause */
/* The net transport's vtable (net_socket_transport, transport.h): setup() and connect() create a
 * link (net_link_impl.h) with its local FIFO and hand it to the proxy thread, which makes the
 * connections (net_link.c); free() flushes, says goodbye and frees it. Messages and setup order
 * are described in net_link.c. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "util/check.h"
#include "util/param.h"
#include "os/socket.h"
#include "transport/net_link_impl.h"

static void name_set(void) {
  const struct net* n = __atomic_load_n(&net_link_chosen, __ATOMIC_ACQUIRE); /* others store it */
  snprintf(net_link_name, sizeof net_link_name, "net_socket/%s", n->name);
}

/* The network of this process; names the transport after it. */
static ncclResult_t pick_net(const struct net** net, int* dev) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  NCCLCHECK(net_get(net, dev));
  __atomic_store_n(&net_link_chosen, *net, __ATOMIC_RELEASE);
  pthread_once(&once, name_set);
  return ncclSuccess;
}

static int net_can_connect(const struct peer_info* me, const struct peer_info* peer) {
  (void)me;
  (void)peer;
  return 1;
}

/* A link with its local FIFO, attached to the conn (c->map is the link). */
static ncclResult_t link_create(struct conn* c, int is_send, uint32_t nslots, size_t slot_size) {
  if (nslots < 1 || nslots > FIFO_MAX_SLOTS || slot_size == 0 || slot_size > ((size_t)1 << 30)) {
    WARN("peer rank %d described a network FIFO of %u slots of %zu bytes: both ranks must run "
         "the same Monel build",
         c->peer, nslots, slot_size);
    return ncclInternalError;
  }
  struct link* l = NULL;
  NCCLCALLOC(l, 1);
  size_t fifo = fifo_mem_bytes((int)nslots, slot_size);
  l->mem_len = fifo + PRIV_BYTES;
  l->mem = mmap(NULL, l->mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (l->mem == MAP_FAILED) {
    WARN("could not allocate the %zu-byte FIFO for peer rank %d: %s", l->mem_len, c->peer,
         strerror(errno));
    free(l);
    return ncclSystemError;
  }
  pthread_mutex_init(&l->lock, NULL);
  l->is_send = is_send;
  l->peer = c->peer;
  l->ctrl = l->mem;
  l->slots = (char*)l->mem + FIFO_CTRL_BYTES;
  l->priv = (struct link_priv*)((char*)l->mem + fifo);
  l->nslots = nslots;
  l->slot_size = slot_size;
  l->window = nslots < NET_MAX_REQUESTS - 2 ? nslots : NET_MAX_REQUESTS - 2;
  l->deadline = sock_time_now() + (double)param_int(PARAM_BOOT_TIMEOUT);
  if (c->key != NULL) memcpy(l->key, c->key, sizeof l->key);
  l->keyed = c->key != NULL;
  c->map = l;
  c->map_len = sizeof *l;
  c->ctrl = l->ctrl;
  c->slots = l->slots;
  c->nslots = (int)nslots;
  c->slot_size = slot_size;
  c->pos = 0;
  c->slot = 0;
  c->head_seen = 0;
  c->owner = !is_send;
  c->net_phandles = l->phandle;
  return ncclSuccess;
}

static ncclResult_t net_setup(struct conn* c, int nslots, size_t slot_size, void* out) {
  struct net_desc d;
  const struct net* net = NULL;
  int dev = 0;
  memset(&d, 0, sizeof d);
  NCCLCHECK(pick_net(&net, &dev));
  if (c->net_dev > 0) dev = c->net_dev;
  NCCLCHECK(link_create(c, 0, (uint32_t)nslots, slot_size));
  struct link* l = c->map;
  l->net = net;
  l->dev = dev;
  NCCLCHECK(net_listen_sized(net, dev, link_key(l), net_link_data_max(l), d.handle, &l->listen));
  d.magic = LINK_MAGIC;
  d.nslots = (uint32_t)nslots;
  d.slot_size = slot_size;
  memcpy(out, &d, sizeof d);
  net_link_add(l); /* the proxy thread accepts the sender's connection */
  return ncclSuccess;
}

static ncclResult_t net_connect(struct conn* c, const void* in) {
  struct net_desc d;
  const struct net* net = NULL;
  int dev = 0;
  memcpy(&d, in, sizeof d);
  if (d.magic != LINK_MAGIC) {
    WARN("peer rank %d sent a descriptor that is not a network one: both ranks must run the "
         "same Monel build with the same NCCL_SHM_DISABLE",
         c->peer);
    return ncclInvalidUsage;
  }
  NCCLCHECK(pick_net(&net, &dev));
  if (c->net_dev > 0) dev = c->net_dev;
  NCCLCHECK(link_create(c, 1, d.nslots, d.slot_size));
  struct link* l = c->map;
  l->net = net;
  l->dev = dev;
  memcpy(l->handle, d.handle, NET_HANDLE_BYTES);
  NCCLCHECK(
      net_listen_sized(net, dev, link_key(l), net_link_back_max(), l->priv->hello, &l->listen));
  net_link_add(l); /* the proxy thread connects */
  return ncclSuccess;
}

static ncclResult_t net_connected(struct conn* c) {
  (void)c; /* the proxy thread finishes the connections */
  return ncclSuccess;
}

/* Flush what the executor posted, say goodbye and wait until the peer answers or closes its
 * side. A closed FIFO (an error or an abort) only gets its CLOSE and BYE sent: nobody needs its
 * data. */
static void link_drain(struct link* l) {
  double deadline = sock_time_now() + FREE_DRAIN_S;
  pthread_mutex_lock(&l->lock);
  l->freeing = 1;
  for (;;) {
    net_link_step(l);
    uint32_t closed = __atomic_load_n(&l->ctrl->closed, __ATOMIC_ACQUIRE);
    /* a clean end waits until the link is quiet; after a failure nothing more will complete */
    int clean = closed == 0 || closed == FIFO_CLOSED_GONE;
    int ended = l->is_send ? closed != 0 && l->bye_done : l->bye_done;
    if (l->dead || (closed && !l->up) || (ended && (!clean || net_link_quiet(l))) ||
        sock_time_now() > deadline)
      break;
    pthread_mutex_unlock(&l->lock);
    struct timespec ts = {0, 100 * 1000}; /* the proxy thread progresses the link meanwhile */
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&l->lock);
  }
  pthread_mutex_unlock(&l->lock);
}

static void net_free(struct conn* c) {
  if (c == NULL || c->map == NULL) return;
  struct link* l = c->map;
  if (l->net != NULL) link_drain(l);
  net_link_remove(l);
  if (l->net != NULL) {
    INFO(LOG_NET, "connection %s peer rank %d via %s closed: %llu bytes sent, %llu received",
         l->is_send ? "to" : "from", l->peer, net_link_name, l->sent, l->received);
    net_link_shut(l);
  }
  munmap(l->mem, l->mem_len);
  pthread_mutex_destroy(&l->lock);
  free(l);
  c->map = NULL;
  c->ctrl = NULL;
  c->slots = NULL;
  c->net_phandles = NULL;
}

/* The proxy thread reads the table under the link's lock (net_link_step). */
static void net_sync(struct conn* c) {
  struct link* l = c->map;
  if (l == NULL) return;
  pthread_mutex_lock(&l->lock);
  pthread_mutex_unlock(&l->lock);
}

const struct transport net_socket_transport = {
    .name = net_link_name,
    .can_connect = net_can_connect,
    .setup = net_setup,
    .connect = net_connect,
    .connected = net_connected,
    .free = net_free,
    .sync = net_sync,
};
