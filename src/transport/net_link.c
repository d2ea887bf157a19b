/* SPDX-License-Identifier: BSD-3-Clause */
/* The net transport: the same FIFO as shm, but each side keeps its own copy in local memory and
 * the proxy thread moves slots between them through the network of net.h (see net_link.h for
 * the link's life). The whole FIFO memory, plus a page of the link's own buffers, is registered
 * with each connection, so slots are sent from and received into the FIFO itself.
 *
 * Messages. A slot travels as one message that starts at its cell's `kind` word: {kind,
 * bytes, then the slot's data}, that is 12 + n bytes for a slot of n <= FIFO_INLINE_BYTES (its
 * data is in the cell) and 12 + 48 + n bytes otherwise (the cell's unused inline area, then the
 * data area right after it). The receiver receives message m into slot m % nslots only while
 * that slot is free, so the network's flow control is the FIFO's: a sender's slot is free again
 * once its send completed. A failure (CLOSE, with the rank whose loss made this side stop) or a
 * goodbye (BYE) has the same shape with another kind: sender -> receiver on the data connection,
 * receiver -> sender on the back connection, where the sender always has a receive posted, so
 * it learns at once when its receiver fails, leaves, or its process dies.
 *
 * Setup: the receiver listens and puts the network's handle in the descriptor (setup); the
 * sender listens for the back connection and connects to the receiver (connect); its first
 * message on the data connection is its own handle, with which the receiver connects back. The
 * proxy thread makes these connections (they must not block: a plugin's connect may need the
 * peer's accept to progress), within MONEL_BOOT_TIMEOUT.
 *
 * Closing (net.h's close contract: a receive comm is closed with no receive posted). The
 * receiver keeps receives posted into free slots ahead of the data. Its BYE carries how many
 * receives it ever posted on the data connection (R), and it posts none after it. A sender that
 * got that BYE sends nothing more but BYEs, until it has sent R messages in all: each receive
 * posted ahead completes with one, and the receiver closes once every receive completed. The
 * sender's own receive on the back connection is completed by the receiver's BYE, and it posts
 * none after it. Only a failure (CLOSE, a lost peer) leaves receives posted at close.
 *
 * Profiling: a slot's isend or irecv carries the handle the engine put in the link's table for
 * that slot (conn.net_phandles; read when it is posted), the other messages none. A receive
 * posted ahead into a slot freed before its operation began carries none either. */
#include "transport/net_link.h"
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "util/check.h"
#include "util/param.h"
#include "os/socket.h"
#include "transport/net.h"
#include "transport/net_link_impl.h"
#include "transport/transport.h"

#define TAG_HELLO   0x4d48
#define TAG_SLOT    0x4d53
#define TAG_CTL     0x4d43
#define MSG_OFF     4   /* a slot's message starts at its cell's kind word */
#define MSG_HDR     12  /* kind + bytes */
#define HEAR_BACK_S 2.0 /* see hear_back */

enum msg_kind { MSG_DATA = 1, MSG_CLOSE, MSG_BYE };

static pthread_mutex_t links_lock = PTHREAD_MUTEX_INITIALIZER;
static struct link* links;
const struct net* net_link_chosen; /* the network of this process, once a link used it */
char net_link_name[80] = "net_socket";

static void wake_all(uint32_t* addr) {
  syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* As the FIFO code publishes a counter: store, then wake the other side if it sleeps. */
static void publish(uint32_t* word, uint32_t value, uint32_t* waiting) {
  __atomic_store_n(word, value, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(waiting, __ATOMIC_SEQ_CST)) wake_all(word);
}

static struct fifo_cell* cell_of(struct link* l, uint32_t m) {
  return fifo_cell(l->slots, l->slot_size, m % l->nslots);
}

/* Bytes of the message of a slot holding `bytes` (flags included). */
static size_t msg_bytes(uint64_t bytes) {
  size_t n = (size_t)(bytes & FIFO_SIZE_BYTES);
  return MSG_HDR + (n <= FIFO_INLINE_BYTES ? n : FIFO_INLINE_BYTES + n);
}

size_t net_link_data_max(const struct link* l) {
  size_t slot = MSG_HDR + FIFO_INLINE_BYTES + l->slot_size;
  return slot > NET_HANDLE_BYTES ? slot : NET_HANDLE_BYTES;
}

size_t net_link_back_max(void) {
  return MSG_HDR;
}

static void msg_write(unsigned char* buf, uint32_t kind, uint64_t arg) {
  memcpy(buf, &kind, 4);
  memcpy(buf + 4, &arg, 8);
}

/* Mark the local FIFO closed (unless it already is) and wake whoever waits on it. */
static void mark_closed(struct link* l, uint32_t why) {
  uint32_t open = 0;
  l->close_sent = 1; /* nothing to tell the peer: it knows, or it is gone */
  __atomic_compare_exchange_n(&l->ctrl->closed, &open, why, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  wake_all(&l->ctrl->head);
  wake_all(&l->ctrl->tail);
}

/* The connection ended. Expected after a goodbye or while freeing; otherwise the peer process
 * or its host is gone and the waiting executor reports it (fifo_check names op and peer). */
static void link_lost(struct link* l, const char* what) {
  if (!l->freeing && !l->peer_bye) {
    INFO(LOG_NET, "connection %s peer rank %d through %s lost: %s", l->is_send ? "to" : "from",
         l->peer, l->net->name, what);
    mark_closed(l, FIFO_CLOSED_LOST);
  }
  l->dead = 1;
}

/* A network call; 0 when it failed. A sender whose receiver may still speak on the back
 * connection first hears it out (hear_back): a receiver that fails tells why (CLOSE) there just
 * before it closes, and its data connection may report the close first. */
static int ok(struct link* l, ncclResult_t res, const char* what) {
  if (res == ncclSuccess) return 1;
  if (l->is_send && l->in_req != NULL && !l->freeing && l->broken == NULL) {
    l->broken = what;
    l->broken_at = sock_time_now();
  } else {
    link_lost(l, what);
  }
  return 0;
}

static int stopped(const struct link* l) {
  return l->dead || l->broken != NULL;
}

/* Closes the link's connections (the network frees their pending requests). */
void net_link_shut(struct link* l) {
  const struct net* n = l->net;
  void* send = l->is_send ? l->data : l->back;
  void* recv = l->is_send ? l->back : l->data;
  if (send != NULL) {
    if ((l->is_send ? l->data_mr : l->back_mr) != NULL)
      n->dereg_mr(send, l->is_send ? l->data_mr : l->back_mr);
    n->close_send(send);
  }
  if (recv != NULL) {
    if ((l->is_send ? l->back_mr : l->data_mr) != NULL)
      n->dereg_mr(recv, l->is_send ? l->back_mr : l->data_mr);
    n->close_recv(recv);
  }
  if (l->listen != NULL) n->close_listen(l->listen);
  l->listen = l->data = l->back = l->data_mr = l->back_mr = NULL;
  l->hello_req = l->out_req = l->in_req = NULL;
  memset(l->req, 0, sizeof l->req);
  l->dead = 1;
}

/* Test one request; 1 when it finished (the request is gone), 0 if not yet or after a loss. */
static int done(struct link* l, void** req, size_t* size, const char* what) {
  int d = 0;
  size_t got = 0;
  if (!ok(l, l->net->test(*req, &d, &got), what) || !d) return 0;
  *req = NULL;
  if (size != NULL) *size = got;
  return 1;
}

/* A CLOSE or BYE from the peer (in buf). */
static void peer_said(struct link* l, const unsigned char* buf) {
  uint32_t kind;
  uint64_t arg;
  memcpy(&kind, buf, 4);
  memcpy(&arg, buf + 4, 8);
  if (kind == MSG_CLOSE) {
    if (arg != 0) __atomic_store_n(&l->ctrl->lost, (uint32_t)arg, __ATOMIC_RELEASE);
    mark_closed(l, FIFO_CLOSED_PEER);
  } else if (kind == MSG_BYE) {
    /* Nothing more will come; the link closes once it is quiet (net_link_quiet), at once unless
     * receives must still complete or a sender owes the receiver's posted receives their BYEs. */
    if (l->is_send && !l->peer_bye) l->fill_to = (uint32_t)arg;
    l->peer_bye = 1;
    mark_closed(l, FIFO_CLOSED_GONE);
  } else {
    WARN("peer rank %d sent a message of unknown kind %u over %s: both ranks must run the same "
         "Monel build",
         l->peer, kind, l->net->name);
    link_lost(l, "unknown message");
  }
}

/* Sender: messages posted on the data connection (slots, CLOSE, BYE). */
static uint32_t sent_msgs(const struct link* l) {
  return l->posted + l->ctl_sent;
}

/* After a goodbye: no request of this side is posted any more, and a sender has sent a message
 * for every receive its receiver posted (net.h's close contract). */
int net_link_quiet(const struct link* l) {
  if (l->is_send) return l->out_req == NULL && l->moved == l->posted && sent_msgs(l) >= l->fill_to;
  return l->bye_done && l->moved == l->posted;
}

/* The CLOSE or BYE this side owes its peer, on connection `comm`. */
static int say(struct link* l, void* comm, void* mr, int tag) {
  int moved = 0;
  size_t size = 0;
  if (l->out_req != NULL && done(l, &l->out_req, &size, "a control send failed")) {
    l->sent += size;
    l->bye_done |= l->out_kind == MSG_BYE;
    moved = 1;
  }
  if (l->out_req != NULL || comm == NULL || stopped(l)) return moved;
  uint32_t closed = __atomic_load_n(&l->ctrl->closed, __ATOMIC_ACQUIRE);
  int flushed = !l->is_send || (l->posted == __atomic_load_n(&l->ctrl->tail, __ATOMIC_ACQUIRE) &&
                                l->moved == l->posted);
  if (closed && !l->close_sent)
    l->out_kind = MSG_CLOSE;
  else if ((l->freeing || (!l->is_send && l->peer_bye)) && !l->bye_sent && (closed || flushed))
    l->out_kind = MSG_BYE;
  else if (l->is_send && l->peer_bye && sent_msgs(l) < l->fill_to)
    l->out_kind = MSG_BYE; /* completes one of the receives the receiver posted ahead */
  else
    return moved;
  uint64_t arg = l->out_kind == MSG_CLOSE ? __atomic_load_n(&l->ctrl->lost, __ATOMIC_ACQUIRE)
                 : l->is_send             ? 0
                                          : l->posted; /* receiver's BYE: receives it posted */
  msg_write(l->priv->out, (uint32_t)l->out_kind, arg);
  if (!ok(l, l->net->isend(comm, l->priv->out, MSG_HDR, tag, mr, NULL, &l->out_req),
          "a send failed"))
    return 1;
  if (l->out_req == NULL) return moved; /* not now */
  l->ctl_sent++;
  if (l->out_kind == MSG_CLOSE) l->close_sent = 1;
  if (l->out_kind == MSG_BYE) l->bye_sent = 1;
  return 1;
}

static int registered(struct link* l, void* comm, void** mr) {
  return ok(l, l->net->reg_mr(comm, l->mem, l->mem_len, NET_PTR_HOST, mr),
            "registering the FIFO failed");
}

/* Sender: connect the data connection, accept the back one, send the hello. */
static int send_establish(struct link* l) {
  int moved = 0;
  if (l->data == NULL) {
    if (!ok(l, l->net->connect(l->dev, link_key(l), l->handle, &l->data), "connect failed"))
      return 1;
    if (l->data != NULL && !registered(l, l->data, &l->data_mr)) return 1;
    moved |= l->data != NULL;
  }
  if (l->data != NULL && !l->hello_posted) {
    if (!ok(l,
            l->net->isend(l->data, l->priv->hello, NET_HANDLE_BYTES, TAG_HELLO, l->data_mr, NULL,
                          &l->hello_req),
            "a send failed"))
      return 1;
    l->hello_posted = l->hello_req != NULL;
    moved |= l->hello_posted;
  }
  if (l->back == NULL && l->listen != NULL) {
    if (!ok(l, l->net->accept(l->listen, &l->back), "accept failed")) return 1;
    if (l->back == NULL) return moved;
    if (!registered(l, l->back, &l->back_mr)) return 1;
    l->net->close_listen(l->listen);
    l->listen = NULL;
    moved = 1;
  }
  return moved;
}

/* The sender's data connection failed: a CLOSE or BYE, or the end of the back connection,
 * decides how it ended; after HEAR_BACK_S without either, it is lost. */
static int hear_back(struct link* l) {
  int d = 0;
  size_t size = 0;
  if (l->net->test(l->in_req, &d, &size) != ncclSuccess) {
    link_lost(l, l->broken);
    return 1;
  }
  if (d) {
    l->in_req = NULL;
    l->received += size;
    peer_said(l, l->priv->in);
    if (!l->dead) link_lost(l, l->broken);
    return 1;
  }
  if (sock_time_now() - l->broken_at <= HEAR_BACK_S) return 0;
  link_lost(l, l->broken);
  return 1;
}

static int send_progress(struct link* l) {
  if (l->broken != NULL) return hear_back(l);
  int moved = send_establish(l);
  size_t size = 0;
  if (stopped(l)) return moved;
  if (l->hello_req != NULL && done(l, &l->hello_req, &size, "a send failed"))
    l->sent += size, moved = 1;
  while (!stopped(l) && l->moved != l->posted &&
         done(l, &l->req[l->moved % FIFO_MAX_SLOTS], &size, "a send failed")) {
    l->sent += size;
    l->moved++;
    publish(&l->ctrl->head, l->moved, &l->ctrl->head_waiting);
    moved = 1;
  }
  uint32_t tail = __atomic_load_n(&l->ctrl->tail, __ATOMIC_ACQUIRE);
  while (!stopped(l) && l->hello_posted && !__atomic_load_n(&l->ctrl->closed, __ATOMIC_ACQUIRE) &&
         l->posted != tail && l->posted - l->moved < l->window) {
    struct fifo_cell* cell = cell_of(l, l->posted);
    void** req = &l->req[l->posted % FIFO_MAX_SLOTS];
    void* ph = __atomic_load_n(&l->phandle[l->posted % l->nslots], __ATOMIC_ACQUIRE);
    cell->kind = MSG_DATA;
    if (!ok(l,
            l->net->isend(l->data, (char*)cell + MSG_OFF, msg_bytes(cell->bytes), TAG_SLOT,
                          l->data_mr, ph, req),
            "a send failed") ||
        *req == NULL)
      break;
    l->posted++;
    moved = 1;
  }
  if (!stopped(l) && l->back != NULL && l->in_req == NULL && !l->peer_bye) {
    size_t max = sizeof l->priv->in;
    int tag = TAG_CTL;
    void* buf = l->priv->in;
    if (l->net->irecv(l->back, 1, &buf, &max, &tag, &l->back_mr, NULL, &l->in_req) != ncclSuccess)
      link_lost(l, "a receive failed");
  }
  if (!stopped(l) && l->in_req != NULL) {
    int d = 0;
    if (l->net->test(l->in_req, &d, &size) != ncclSuccess) {
      link_lost(l, "the back connection broke");
    } else if (d) {
      l->in_req = NULL;
      l->received += size;
      peer_said(l, l->priv->in);
      moved = 1;
    }
  }
  if (!stopped(l)) moved |= say(l, l->hello_posted ? l->data : NULL, l->data_mr, TAG_SLOT);
  if (!stopped(l) && !l->freeing && l->peer_bye && net_link_quiet(l)) net_link_shut(l);
  return moved;
}

/* Receiver: accept the data connection, receive the hello, connect the back connection. */
static int recv_establish(struct link* l) {
  int moved = 0;
  size_t size = 0;
  if (l->data == NULL) {
    if (!ok(l, l->net->accept(l->listen, &l->data), "accept failed")) return 1;
    if (l->data == NULL) return 0;
    if (!registered(l, l->data, &l->data_mr)) return 1;
    l->net->close_listen(l->listen);
    l->listen = NULL;
    moved = 1;
  }
  if (!l->hello_posted) {
    size_t max = NET_HANDLE_BYTES;
    int tag = TAG_HELLO;
    void* buf = l->priv->hello;
    if (!ok(l, l->net->irecv(l->data, 1, &buf, &max, &tag, &l->data_mr, NULL, &l->hello_req),
            "a receive failed"))
      return 1;
    l->hello_posted = l->hello_req != NULL;
  }
  if (l->hello_req != NULL && done(l, &l->hello_req, &size, "the connection broke during setup")) {
    if (size != NET_HANDLE_BYTES) {
      WARN("peer rank %d sent a %zu-byte hello over %s, expected %d: both ranks must run the same "
           "Monel build",
           l->peer, size, l->net->name, NET_HANDLE_BYTES);
      link_lost(l, "bad hello");
      return 1;
    }
    l->received += size;
    memcpy(l->handle, l->priv->hello, NET_HANDLE_BYTES);
    l->hello_done = moved = 1;
  }
  if (l->hello_done && l->back == NULL && !l->dead) {
    if (!ok(l, l->net->connect(l->dev, link_key(l), l->handle, &l->back), "connect failed"))
      return 1;
    if (l->back != NULL && !registered(l, l->back, &l->back_mr)) return 1;
    moved |= l->back != NULL;
  }
  return moved;
}

/* A slot message arrived in message m's slot. 0 after a loss. */
static int recv_slot(struct link* l, uint32_t m, size_t size) {
  struct fifo_cell* cell = cell_of(l, m);
  l->received += size;
  if (cell->kind != MSG_DATA) {
    peer_said(l, (unsigned char*)cell + MSG_OFF);
    return 0;
  }
  if (size != msg_bytes(cell->bytes)) {
    WARN("peer rank %d sent a %zu-byte message for a slot of %llu bytes over %s: both ranks must "
         "run the same Monel build",
         l->peer, size, (unsigned long long)(cell->bytes & FIFO_SIZE_BYTES), l->net->name);
    link_lost(l, "bad message");
    return 0;
  }
  if (l->freeing) return 1; /* nobody reads it any more */
  __atomic_store_n(&cell->seq, m + 1, __ATOMIC_RELEASE);
  publish(&l->ctrl->tail, m + 1, &l->ctrl->tail_waiting);
  return 1;
}

/* A receive failed: the connection ended. A peer that failed or left may have said so (CLOSE or
 * BYE) in a later message that overtook a large one it abandoned: look for it first. */
static void recv_failed(struct link* l) {
  for (uint32_t m = l->moved + 1; m != l->posted; m++) {
    void** req = &l->req[m % FIFO_MAX_SLOTS];
    int d = 0;
    size_t size = 0;
    if (l->net->test(*req, &d, &size) != ncclSuccess || !d) break;
    *req = NULL;
    struct fifo_cell* cell = cell_of(l, m);
    if (cell->kind == MSG_CLOSE || cell->kind == MSG_BYE) {
      l->received += size;
      peer_said(l, (unsigned char*)cell + MSG_OFF);
      break;
    }
  }
  link_lost(l, "a receive failed");
}

static int recv_progress(struct link* l) {
  int moved = recv_establish(l);
  while (!l->dead && l->moved != l->posted) {
    int d = 0;
    size_t size = 0;
    void** req = &l->req[l->moved % FIFO_MAX_SLOTS];
    if (l->net->test(*req, &d, &size) != ncclSuccess) {
      recv_failed(l);
      return 1;
    }
    if (!d) break;
    *req = NULL;
    l->moved++;
    moved = 1;
    if (!recv_slot(l, l->moved - 1, size)) break;
  }
  uint32_t head = __atomic_load_n(&l->ctrl->head, __ATOMIC_ACQUIRE);
  size_t max = MSG_HDR + FIFO_INLINE_BYTES + l->slot_size;
  int tag = TAG_SLOT;
  while (!l->dead && l->hello_done && !l->bye_sent && l->posted - l->moved < l->window &&
         (l->freeing ||
          (!__atomic_load_n(&l->ctrl->closed, __ATOMIC_ACQUIRE) && l->posted - head < l->nslots))) {
    void* buf = (char*)cell_of(l, l->posted) + MSG_OFF;
    void** req = &l->req[l->posted % FIFO_MAX_SLOTS];
    void* ph = __atomic_load_n(&l->phandle[l->posted % l->nslots], __ATOMIC_ACQUIRE);
    if (!ok(l, l->net->irecv(l->data, 1, &buf, &max, &tag, &l->data_mr, &ph, req),
            "a receive failed") ||
        *req == NULL)
      break;
    l->posted++;
    moved = 1;
  }
  if (!l->dead) moved |= say(l, l->back, l->back_mr, TAG_CTL);
  if (!l->dead && !l->freeing && l->peer_bye && net_link_quiet(l)) net_link_shut(l);
  return moved;
}

int net_link_step(struct link* l) {
  if (l->dead) return 0;
  int moved = l->is_send ? send_progress(l) : recv_progress(l);
  if (!stopped(l) && !l->up && l->data != NULL && l->back != NULL) {
    l->up = 1;
    INFO(LOG_INIT | LOG_NET, "connection %s peer rank %d is up via %s (device %d)",
         l->is_send ? "to" : "from", l->peer, net_link_name, l->dev);
  }
  if (!stopped(l) && !l->up && sock_time_now() > l->deadline) {
    WARN("could not connect %s peer rank %d through network %s within %d s: it failed or cannot "
         "reach this host (check NCCL_SOCKET_IFNAME or the network plugin's settings)",
         l->is_send ? "to" : "from", l->peer, l->net->name, (int)param_int(PARAM_BOOT_TIMEOUT));
    link_lost(l, "not connected in time");
  }
  return moved;
}

int net_link_progress(void) {
  int moved = 0;
  pthread_mutex_lock(&links_lock);
  for (struct link* l = links; l != NULL; l = l->next) {
    pthread_mutex_lock(&l->lock);
    moved |= net_link_step(l);
    pthread_mutex_unlock(&l->lock);
  }
  pthread_mutex_unlock(&links_lock);
  return moved;
}

void net_link_wait(int ms) {
  const struct net* n = __atomic_load_n(&net_link_chosen, __ATOMIC_ACQUIRE);
  if (n != NULL && n->wait != NULL) {
    n->wait(ms);
  } else { /* no doorbell (a plugin): poll it often */
    struct timespec ts = {0, 200 * 1000};
    nanosleep(&ts, NULL);
  }
}

/* The waiting word of the counter that the executor moves and the proxy thread reads. */
static uint32_t* proxy_waiting(struct link* l) {
  return l->is_send ? &l->ctrl->tail_waiting : &l->ctrl->head_waiting;
}

int net_link_arm(int arm) {
  const struct net* n = __atomic_load_n(&net_link_chosen, __ATOMIC_ACQUIRE);
  int bounded = n == NULL || n->wait == NULL;
  pthread_mutex_lock(&links_lock);
  for (struct link* l = links; l != NULL; l = l->next) {
    pthread_mutex_lock(&l->lock);
    if (!l->dead && (!l->up || l->broken != NULL)) bounded = 1;
    __atomic_store_n(proxy_waiting(l), arm ? FIFO_WAITING_PROXY : 0, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&l->lock);
  }
  pthread_mutex_unlock(&links_lock);
  __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the words before the counters of the next pass */
  return bounded;
}

void net_link_kick(void) {
  const struct net* n = __atomic_load_n(&net_link_chosen, __ATOMIC_ACQUIRE);
  if (n != NULL && n->wake != NULL) n->wake();
}

void net_link_add(struct link* l) {
  pthread_mutex_lock(&links_lock);
  l->next = links;
  links = l;
  pthread_mutex_unlock(&links_lock);
  net_link_kick(); /* a sleeping proxy thread starts connecting it */
}

void net_link_remove(struct link* l) {
  pthread_mutex_lock(&links_lock);
  for (struct link** p = &links; *p != NULL; p = &(*p)->next)
    if (*p == l) {
      *p = l->next;
      break;
    }
  pthread_mutex_unlock(&links_lock);
}

/* In a child after fork(): the parent's links are not ours (their connections are shared with
 * the parent); forget them so that a progress thread of the child never touches them. */
void net_link_forget(void) {
  pthread_mutex_init(&links_lock, NULL);
  links = NULL;
}
