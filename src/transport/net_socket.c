/* TCP transport: the same FIFO as shm, but each side keeps its own copy in local memory and the
 * proxy thread moves slots between them (see net_socket.h for the link's life).
 *
 * Wire format, both directions: a 16-byte frame header {type, seq, bytes}, then the payload
 * for DATA (bytes & FIFO_SIZE_BYTES of it; the flag bits above travel in the header). Sender ->
 * receiver: DATA (seq = slot number, bytes = slot size). Receiver -> sender: CREDIT (seq = the
 * receiver's head). Either way: CLOSE (this side failed; seq = fifo_ctrl.lost, the rank whose
 * loss made it stop), BYE (this side freed its end cleanly; it then shuts down writing and waits
 * for the peer's EOF).
 *
 * Setup: the receiver listens on the NCCL_SOCKET_IFNAME interface and puts the address and a
 * random token in the descriptor; the sender connects and presents the token; the receiver
 * accepts in connected() and drops connections with another token. */
#include "transport/net_socket.h"
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "core/check.h"
#include "core/comm.h"
#include "core/param.h"
#include "os/socket.h"
#include "transport/transport.h"

#define NET_MAGIC    0x6d6e6574u /* "mnet" */
#define FREE_DRAIN_S 5.0         /* longest wait in free() for the peer to close its side */

enum frame_type { FRAME_DATA = 1, FRAME_CREDIT, FRAME_CLOSE, FRAME_BYE };

struct frame {
  uint32_t type;
  uint32_t seq;
  uint64_t bytes;
};

struct net_desc {
  uint32_t magic;
  uint32_t nslots;
  uint64_t slot_size;
  uint64_t token;
  union sock_addr addr;
};
_Static_assert(sizeof(struct net_desc) <= CONN_DESC_BYTES, "net descriptor too large");

struct hello {
  uint32_t magic;
  uint32_t zero;
  uint64_t token;
};

struct link {
  struct link* next; /* in the live list */
  pthread_mutex_t lock;
  int fd, listen_fd;
  int is_send, peer;
  uint64_t token;
  void* mem; /* the local FIFO: ctrl, then slots */
  size_t mem_len;
  struct fifo_ctrl* ctrl;
  char* slots;
  uint32_t nslots;
  size_t slot_size;
  uint32_t moved;    /* sender: slots sent; receiver: slots received */
  uint32_t credited; /* receiver: head value last sent */
  int close_sent, bye_sent, peer_bye, freeing;
  struct frame out; /* the frame being written */
  const char* out_data;
  size_t out_off;
  int out_busy;
  struct frame in; /* the frame being read */
  size_t in_off, in_left;
  char where[SOCK_ADDR_STRLEN];
};

static pthread_mutex_t links_lock = PTHREAD_MUTEX_INITIALIZER;
static struct link* links;

static void wake_all(uint32_t* addr) {
  syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* As the FIFO code publishes a counter: store, then wake the other side if it sleeps. */
static void publish(uint32_t* word, uint32_t value, uint32_t* waiting) {
  __atomic_store_n(word, value, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(waiting, __ATOMIC_SEQ_CST)) wake_all(word);
}

/* Where slot `seq` holds its `bytes` of data (flags included): its cell, or the slot area. */
static char* payload_at(struct link* l, uint32_t seq, uint64_t bytes) {
  return fifo_payload(l->slots, l->slot_size, seq % l->nslots, bytes);
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
static void link_lost(struct link* l, enum sock_err why, int err) {
  if (!l->freeing && !l->peer_bye) {
    INFO(LOG_NET, "connection with peer rank %d (%s) lost: %s%s%s", l->peer, l->where,
         sock_err_str(why), why == SOCK_SYSERR ? ": " : "",
         why == SOCK_SYSERR ? strerror(err) : "");
    mark_closed(l, FIFO_CLOSED_LOST);
  }
  sock_close(&l->fd);
  l->out_busy = 0;
}

/* A frame header is complete: check it and get ready for its payload. 0 on a protocol error. */
static int frame_begin(struct link* l) {
  struct frame* f = &l->in;
  l->in_left = 0;
  if (f->type == FRAME_DATA) {
    if (l->is_send || f->seq != l->moved || (f->bytes & FIFO_SIZE_BYTES) > l->slot_size) return 0;
    l->in_left = f->bytes & FIFO_SIZE_BYTES;
    return 1;
  }
  if (f->type == FRAME_CREDIT) return l->is_send;
  return f->type == FRAME_CLOSE || f->type == FRAME_BYE;
}

static void frame_end(struct link* l) {
  struct frame* f = &l->in;
  switch (f->type) {
  case FRAME_DATA: {
    struct fifo_cell* cell = fifo_cell(l->slots, l->slot_size, f->seq % l->nslots);
    cell->bytes = f->bytes;
    l->moved++;
    __atomic_store_n(&cell->seq, l->moved, __ATOMIC_RELEASE);
    publish(&l->ctrl->tail, l->moved, &l->ctrl->tail_waiting);
    break;
  }
  case FRAME_CREDIT:
    publish(&l->ctrl->head, f->seq, &l->ctrl->head_waiting);
    break;
  case FRAME_CLOSE:
    if (f->seq) __atomic_store_n(&l->ctrl->lost, f->seq, __ATOMIC_RELEASE);
    mark_closed(l, FIFO_CLOSED_PEER);
    break;
  default: /* BYE */
    l->peer_bye = 1;
    mark_closed(l, FIFO_CLOSED_GONE);
    /* Nothing more will come; unless we are saying goodbye too, close our end now so that the
     * peer's free() sees EOF at once. */
    if (!l->freeing) sock_close(&l->fd), l->out_busy = 0;
    break;
  }
  l->in_off = 0;
}

/* Read what the socket holds, a bounded amount per call so that other links get their turn. */
static int pump_in(struct link* l) {
  int moved = 0;
  for (int round = 0; round < 64 && l->fd >= 0; round++) {
    int in_header = l->in_off < sizeof l->in;
    char* dst = in_header ? (char*)&l->in + l->in_off
                          : payload_at(l, l->in.seq, l->in.bytes) +
                                ((l->in.bytes & FIFO_SIZE_BYTES) - l->in_left);
    size_t want = in_header ? sizeof l->in - l->in_off : l->in_left;
    ssize_t k = recv(l->fd, dst, want, MSG_DONTWAIT);
    if (k == 0) {
      link_lost(l, SOCK_EOF, 0);
      return 1;
    }
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return moved;
      int e = errno;
      link_lost(l, e == ECONNRESET || e == EPIPE ? SOCK_RESET : SOCK_SYSERR, e);
      return 1;
    }
    moved = 1;
    if (in_header) {
      l->in_off += (size_t)k;
      if (l->in_off < sizeof l->in) continue;
      if (!frame_begin(l)) {
        WARN("peer rank %d (%s) sent an invalid frame (type %u, seq %u, %llu bytes) on its TCP "
             "connection: is another program connected to this port?",
             l->peer, l->where, l->in.type, l->in.seq, (unsigned long long)l->in.bytes);
        link_lost(l, SOCK_EOF, 0);
        return 1;
      }
    } else {
      l->in_left -= (size_t)k;
    }
    if (l->in_left == 0) frame_end(l);
  }
  return moved;
}

/* Choose the next frame to write; 0 if there is none. */
static int frame_next(struct link* l) {
  struct frame* f = &l->out;
  uint32_t closed = __atomic_load_n(&l->ctrl->closed, __ATOMIC_ACQUIRE);
  l->out_data = NULL;
  l->out_off = 0;
  f->bytes = 0;
  f->seq = 0;
  if (closed && !l->close_sent) {
    f->type = FRAME_CLOSE;
    f->seq = __atomic_load_n(&l->ctrl->lost, __ATOMIC_ACQUIRE);
    l->close_sent = 1;
  } else if (!closed && l->is_send &&
             __atomic_load_n(&l->ctrl->tail, __ATOMIC_ACQUIRE) != l->moved) {
    f->type = FRAME_DATA;
    f->seq = l->moved;
    f->bytes = fifo_cell(l->slots, l->slot_size, l->moved % l->nslots)->bytes;
    l->out_data = payload_at(l, l->moved, f->bytes);
  } else if (!closed && !l->is_send &&
             __atomic_load_n(&l->ctrl->head, __ATOMIC_ACQUIRE) != l->credited) {
    f->type = FRAME_CREDIT;
    f->seq = l->credited = __atomic_load_n(&l->ctrl->head, __ATOMIC_ACQUIRE);
  } else if (l->freeing && !l->bye_sent) {
    f->type = FRAME_BYE;
    l->bye_sent = 1;
  } else {
    return 0;
  }
  l->out_busy = 1;
  return 1;
}

static void frame_sent(struct link* l) {
  l->out_busy = 0;
  if (l->out.type == FRAME_DATA) l->moved++;
  if (l->out.type == FRAME_BYE) shutdown(l->fd, SHUT_WR);
}

static int pump_out(struct link* l) {
  int moved = 0;
  while (l->fd >= 0 && (l->out_busy || frame_next(l))) {
    size_t hdr = sizeof l->out;
    size_t total = hdr + (l->out_data != NULL ? (size_t)(l->out.bytes & FIFO_SIZE_BYTES) : 0);
    struct iovec iov[2];
    int n = 0;
    if (l->out_off < hdr) {
      iov[n++] = (struct iovec){(char*)&l->out + l->out_off, hdr - l->out_off};
      if (total > hdr) iov[n++] = (struct iovec){(void*)l->out_data, total - hdr};
    } else {
      iov[n++] = (struct iovec){(void*)(l->out_data + (l->out_off - hdr)), total - l->out_off};
    }
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    ssize_t k = sendmsg(l->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return moved;
      int e = errno;
      link_lost(l, e == ECONNRESET || e == EPIPE ? SOCK_RESET : SOCK_SYSERR, e);
      return 1;
    }
    moved = 1;
    l->out_off += (size_t)k;
    if (l->out_off == total) frame_sent(l);
  }
  return moved;
}

static int link_progress(struct link* l) {
  int moved = 0;
  if (l->fd >= 0) moved |= pump_in(l);
  if (l->fd >= 0) moved |= pump_out(l);
  return moved;
}

int net_socket_progress(void) {
  int moved = 0;
  pthread_mutex_lock(&links_lock);
  for (struct link* l = links; l != NULL; l = l->next) {
    pthread_mutex_lock(&l->lock);
    moved |= link_progress(l);
    pthread_mutex_unlock(&l->lock);
  }
  pthread_mutex_unlock(&links_lock);
  return moved;
}

void net_socket_wait(int ms) {
  static struct pollfd* fds;
  static int cap;
  int n = 0;
  pthread_mutex_lock(&links_lock);
  for (struct link* l = links; l != NULL; l = l->next) n++;
  if (n > cap) {
    struct pollfd* bigger = realloc(fds, sizeof *fds * (size_t)n);
    if (bigger != NULL) fds = bigger, cap = n;
  }
  n = 0;
  for (struct link* l = links; l != NULL && n < cap; l = l->next) {
    pthread_mutex_lock(&l->lock);
    fds[n++] = (struct pollfd){.fd = l->fd, .events = POLLIN | (l->out_busy ? POLLOUT : 0)};
    pthread_mutex_unlock(&l->lock);
  }
  pthread_mutex_unlock(&links_lock);
  poll(fds, (nfds_t)n, ms);
}

static void links_add(struct link* l) {
  pthread_mutex_lock(&links_lock);
  l->next = links;
  links = l;
  pthread_mutex_unlock(&links_lock);
}

static void links_remove(struct link* l) {
  pthread_mutex_lock(&links_lock);
  for (struct link** p = &links; *p != NULL; p = &(*p)->next)
    if (*p == l) {
      *p = l->next;
      break;
    }
  pthread_mutex_unlock(&links_lock);
}

/* A host that vanishes sends no FIN: keepalive probes find it when the connection is idle
 * (about 16 s), the user timeout when sent data stays unacknowledged (20 s). */
static void keepalive(int fd) {
  int on = 1, idle = 10, intvl = 2, cnt = 3;
  unsigned user_ms = 20000;
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof user_ms);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

/* In a child after fork(): the parent's links are not ours (their sockets are shared with the
 * parent); forget them so that a progress thread of the child never touches them. */
void net_socket_forget(void) {
  pthread_mutex_init(&links_lock, NULL);
  links = NULL;
}

static int net_can_connect(const struct peer_info* me, const struct peer_info* peer) {
  (void)me;
  (void)peer;
  return 1;
}

/* A link with its local FIFO, attached to the conn (c->map is the link). */
static ncclResult_t link_create(struct conn* c, int is_send, uint32_t nslots, size_t slot_size) {
  if (nslots < 1 || nslots > FIFO_MAX_SLOTS || slot_size == 0 || slot_size > ((size_t)1 << 30)) {
    WARN("peer rank %d described a TCP FIFO of %u slots of %zu bytes: both ranks must run the "
         "same Monel build",
         c->peer, nslots, slot_size);
    return ncclInternalError;
  }
  struct link* l = NULL;
  NCCLCALLOC(l, 1);
  l->mem_len = fifo_mem_bytes((int)nslots, slot_size);
  l->mem = mmap(NULL, l->mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (l->mem == MAP_FAILED) {
    WARN("could not allocate the %zu-byte FIFO for peer rank %d: %s", l->mem_len, c->peer,
         strerror(errno));
    free(l);
    return ncclSystemError;
  }
  pthread_mutex_init(&l->lock, NULL);
  l->fd = l->listen_fd = -1;
  l->is_send = is_send;
  l->peer = c->peer;
  l->ctrl = l->mem;
  l->slots = (char*)l->mem + FIFO_CTRL_BYTES;
  l->nslots = nslots;
  l->slot_size = slot_size;
  snprintf(l->where, sizeof l->where, "?");
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
  return ncclSuccess;
}

static ncclResult_t net_setup(struct conn* c, int nslots, size_t slot_size, void* out) {
  struct net_desc d;
  memset(&d, 0, sizeof d);
  NCCLCHECK(link_create(c, 0, (uint32_t)nslots, slot_size));
  struct link* l = c->map;
  NCCLCHECK(sock_iface_find(&d.addr, NULL, 0));
  NCCLCHECK(sock_listen_open(&d.addr, &l->listen_fd));
  if (getrandom(&l->token, sizeof l->token, 0) != sizeof l->token) {
    WARN("getrandom failed while setting up the TCP connection from peer rank %d: %s", c->peer,
         strerror(errno));
    return ncclSystemError;
  }
  d.magic = NET_MAGIC;
  d.nslots = (uint32_t)nslots;
  d.slot_size = slot_size;
  d.token = l->token;
  memcpy(out, &d, sizeof d);
  return ncclSuccess;
}

static ncclResult_t net_connect(struct conn* c, const void* in) {
  struct net_desc d;
  memcpy(&d, in, sizeof d);
  if (d.magic != NET_MAGIC) {
    WARN("peer rank %d sent a descriptor that is not a TCP one: both ranks must run the same "
         "Monel build with the same NCCL_SHM_DISABLE",
         c->peer);
    return ncclInvalidUsage;
  }
  NCCLCHECK(link_create(c, 1, d.nslots, d.slot_size));
  struct link* l = c->map;
  sock_addr_to_str(&d.addr, l->where, sizeof l->where);
  double deadline = sock_time_now() + (double)param_int(PARAM_BOOT_TIMEOUT);
  enum sock_err err = SOCK_OK;
  if (sock_conn_open(&d.addr, deadline, NULL, &l->fd, &err) != ncclSuccess) {
    WARN("could not open a TCP connection to peer rank %d at %s: %s%s%s; check that the hosts "
         "reach each other on NCCL_SOCKET_IFNAME",
         c->peer, l->where, sock_err_str(err), err == SOCK_SYSERR ? ": " : "",
         err == SOCK_SYSERR ? strerror(errno) : "");
    return ncclRemoteError;
  }
  keepalive(l->fd);
  struct hello h = {NET_MAGIC, 0, d.token};
  if (sock_send_all(l->fd, &h, sizeof h, deadline, NULL, &err) != ncclSuccess) {
    WARN("peer rank %d (%s) dropped the TCP connection during setup: %s", c->peer, l->where,
         sock_err_str(err));
    return ncclRemoteError;
  }
  links_add(l);
  return ncclSuccess;
}

/* Accept connections until one presents our token (strangers are dropped). */
static ncclResult_t accept_token(struct link* l, double deadline) {
  for (;;) {
    struct pollfd p = {.fd = l->listen_fd, .events = POLLIN};
    double left = deadline - sock_time_now();
    if (left <= 0) {
      WARN("peer rank %d never opened its TCP connection to this rank: it failed or cannot "
           "reach this host (check NCCL_SOCKET_IFNAME)",
           l->peer);
      return ncclRemoteError;
    }
    int r = poll(&p, 1, left > 0.1 ? 100 : (int)(left * 1000) + 1);
    if (r <= 0) continue;
    union sock_addr from;
    int fd = -1;
    NCCLCHECK(sock_conn_accept(l->listen_fd, &fd, &from));
    struct hello h;
    enum sock_err err = SOCK_OK;
    ncclResult_t res = sock_recv_all(fd, &h, sizeof h, sock_time_now() + 5.0, NULL, &err);
    if (res == ncclSuccess && h.magic == NET_MAGIC && h.token == l->token) {
      l->fd = fd;
      keepalive(fd);
      sock_addr_to_str(&from, l->where, sizeof l->where);
      return ncclSuccess;
    }
    char who[SOCK_ADDR_STRLEN];
    INFO(LOG_NET, "dropped a connection from %s waiting for peer rank %d: wrong token",
         sock_addr_to_str(&from, who, sizeof who), l->peer);
    close(fd);
  }
}

static ncclResult_t net_connected(struct conn* c) {
  struct link* l = c->map;
  double deadline = sock_time_now() + (double)param_int(PARAM_BOOT_TIMEOUT);
  NCCLCHECK(accept_token(l, deadline));
  sock_close(&l->listen_fd);
  links_add(l);
  return ncclSuccess;
}

/* Flush what the executor posted, say goodbye and wait until the peer closes its end. A closed
 * FIFO (an error or an abort) only gets its CLOSE and BYE written: nobody needs its data. */
static void link_drain(struct link* l) {
  double deadline = sock_time_now() + FREE_DRAIN_S;
  pthread_mutex_lock(&l->lock);
  l->freeing = 1;
  for (;;) {
    link_progress(l);
    int closed = __atomic_load_n(&l->ctrl->closed, __ATOMIC_ACQUIRE) != 0;
    if (l->fd < 0 || sock_time_now() > deadline || (closed && l->bye_sent && !l->out_busy)) break;
    struct pollfd p = {.fd = l->fd, .events = POLLIN | (l->out_busy ? POLLOUT : 0)};
    pthread_mutex_unlock(&l->lock);
    poll(&p, 1, 10);
    pthread_mutex_lock(&l->lock);
  }
  pthread_mutex_unlock(&l->lock);
}

static void net_free(struct conn* c) {
  if (c == NULL || c->map == NULL) return;
  struct link* l = c->map;
  link_drain(l);
  links_remove(l);
  sock_close(&l->fd);
  sock_close(&l->listen_fd);
  munmap(l->mem, l->mem_len);
  pthread_mutex_destroy(&l->lock);
  free(l);
  c->map = NULL;
  c->ctrl = NULL;
  c->slots = NULL;
}

const struct transport net_socket_transport = {
    .name = "net_socket",
    .can_connect = net_can_connect,
    .setup = net_setup,
    .connect = net_connect,
    .connected = net_connected,
    .free = net_free,
};
