/* SPDX-License-Identifier: BSD-3-Clause */
/* The built-in TCP network's data path (see net_tcp.h): registration (host memory only; the
 * handle records nothing the sockets need), isend/irecv/test, the helper threads that move pieces
 * of large messages over the data sockets, and net_tcp_wait for a progress thread.
 *
 * Requests of a comm carry a sequence number in posting order. The control socket moves the
 * message of request `ctrl_seq`: a sender writes its header (and inline bytes); a receiver reads
 * the next header and matches it to the first unmatched buffer of that request with the same tag
 * (a grouped receive takes one message per buffer), then reads inline bytes or hands the pieces
 * to the helpers. A request is done once its control part is done and no piece is pending. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "util/check.h"
#include "transport/net_handle.h"
#include "transport/net_tcp.h"

struct tcp_mr {
  char* base;
  size_t size;
};

void net_tcp_comm_fail(struct tcp_comm* c, int why, int err, ncclResult_t res) {
  int no = 0;
  if (!__atomic_compare_exchange_n(&c->failing, &no, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return;
  c->err_errno = err;
  c->err_res = res;
  __atomic_store_n(&c->err, why, __ATOMIC_RELEASE);
  if (why > 0)
    INFO(LOG_NET, "Socket: the connection %s %s broke: %s%s%s", c->is_send ? "to" : "from", c->peer,
         sock_err_str((enum sock_err)why), why == SOCK_SYSERR ? ": " : "",
         why == SOCK_SYSERR ? strerror(err) : "");
  net_tcp_wake();
}

/* The comm's failure as a result, or ncclSuccess while it is healthy. */
static ncclResult_t failed(struct tcp_comm* c) {
  return __atomic_load_n(&c->err, __ATOMIC_ACQUIRE) ? c->err_res : ncclSuccess;
}

/* After send/recv returned k <= 0: 0 to retry later (would block), 1 to go on (EINTR), -1 after
 * recording the comm's failure. */
static int io_error(struct tcp_comm* c, ssize_t k) {
  if (k == 0) {
    net_tcp_comm_fail(c, SOCK_EOF, 0, ncclRemoteError);
    return -1;
  }
  if (errno == EINTR) return 1;
  if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
  int e = errno;
  if (e == ECONNRESET || e == EPIPE)
    net_tcp_comm_fail(c, SOCK_RESET, e, ncclRemoteError);
  else
    net_tcp_comm_fail(c, SOCK_SYSERR, e, e == ETIMEDOUT ? ncclRemoteError : ncclSystemError);
  return -1;
}

/* ---- helper threads ---------------------------------------------------------------------- */

/* Moves what it can of a piece: 1 done, 0 would block, -1 failed. */
static int piece_move(struct tcp_comm* c, int fd, struct tcp_piece* p) {
  while (p->len > 0) {
    ssize_t k = c->is_send ? send(fd, p->ptr, p->len, MSG_DONTWAIT | MSG_NOSIGNAL)
                           : recv(fd, p->ptr, p->len, MSG_DONTWAIT);
    if (k > 0) {
      p->ptr += k;
      p->len -= (size_t)k;
      continue;
    }
    int r = io_error(c, k);
    if (r <= 0) return r;
  }
  return 1;
}

/* One thread of a device's pool: the data sockets it moves the pieces of (socks, under lock), an
 * eventfd that new pieces and the end ring. A pass takes the sockets with a piece queued under
 * the lock, moves them outside it (busy), and waits in poll for those that would block. */
struct tcp_helper {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t idle; /* busy went to 0 */
  int wake_fd;
  int stop;
  int busy;
  struct tcp_sock** socks;
  int nsocks, cap;
};

/* A device's pools (under pools_mu), one for its receive comms and one for its send comms, so
 * that both directions of a peer move at once as with threads of their own: their threads and
 * how many comms have their sockets in each. */
static struct tcp_pool {
  struct tcp_helper** t;
  int n, comms;
} pools[TCP_MAX_DEVS][2];
static pthread_mutex_t pools_mu = PTHREAD_MUTEX_INITIALIZER;

static void helper_poke(struct tcp_helper* h) {
  uint64_t one = 1;
  if (write(h->wake_fd, &one, sizeof one) < 0) { /* the counter is full: a wakeup is pending */
  }
}

/* Pieces move while the comm is healthy, and on a receive comm whose sender ended the stream
 * (the pieces of its last messages are still on the data sockets) until a data socket fails. */
static int pieces_move(struct tcp_comm* c) {
  if (__atomic_load_n(&c->pieces_dead, __ATOMIC_ACQUIRE)) return 0;
  return !__atomic_load_n(&c->err, __ATOMIC_ACQUIRE) ||
         __atomic_load_n(&c->peer_done, __ATOMIC_ACQUIRE);
}

/* Moves the head piece of socket k (owned by the calling thread): 1 moved it whole, 0 would
 * block, -1 failed (the comm's pieces stop), 2 left alone (its comm's pieces stopped). */
static int sock_step(struct tcp_helper* h, struct tcp_sock* k) {
  struct tcp_comm* c = k->comm;
  if (!pieces_move(c)) return 2;
  struct tcp_piece* p = &k->q[k->head % TCP_QUEUE]; /* only this thread moves head */
  int r = piece_move(c, k->fd, p);
  if (r < 0) {
    __atomic_store_n(&c->pieces_dead, 1, __ATOMIC_RELEASE);
    net_tcp_wake();
  }
  if (r != 1) return r;
  struct tcp_req* req = p->req;
  pthread_mutex_lock(&h->lock);
  k->head++;
  pthread_mutex_unlock(&h->lock);
  if (__atomic_sub_fetch(&req->pending, 1, __ATOMIC_ACQ_REL) == 0) net_tcp_wake();
  return 1;
}

static void* helper_main(void* arg) {
  struct tcp_helper* h = arg;
  struct tcp_sock** work = NULL;
  struct pollfd* fds = NULL;
  int room = 0;
  pthread_mutex_lock(&h->lock);
  while (!h->stop) {
    if (room < h->nsocks + 1) {
      int want = h->cap + 1;
      struct tcp_sock** w = realloc(work, sizeof *w * (size_t)want);
      struct pollfd* f = w ? realloc(fds, sizeof *f * (size_t)want) : NULL;
      if (w) work = w;
      if (f) fds = f;
      if (w == NULL || f == NULL) { /* no memory for this pass: wait for the next wakeup */
        pthread_mutex_unlock(&h->lock);
        struct pollfd one = {.fd = h->wake_fd, .events = POLLIN};
        (void)poll(&one, 1, 100);
        pthread_mutex_lock(&h->lock);
        continue;
      }
      room = want;
    }
    int nw = 0;
    for (int i = 0; i < h->nsocks; i++)
      if (h->socks[i]->head != h->socks[i]->tail) work[nw++] = h->socks[i];
    h->busy = 1;
    pthread_mutex_unlock(&h->lock);
    int nf = 0, moved = 0;
    for (int i = 0; i < nw; i++) {
      int r = sock_step(h, work[i]);
      if (r == 0)
        fds[nf++] =
            (struct pollfd){.fd = work[i]->fd, .events = work[i]->comm->is_send ? POLLOUT : POLLIN};
      moved |= r == 1;
    }
    pthread_mutex_lock(&h->lock);
    h->busy = 0;
    pthread_cond_broadcast(&h->idle);
    if (moved || h->stop) continue;
    /* the sockets that would block are this thread's until a comm leaves the pool, which waits
     * for busy to be 0 only: poll on their numbers, never on the sockets themselves */
    pthread_mutex_unlock(&h->lock);
    fds[nf++] = (struct pollfd){.fd = h->wake_fd, .events = POLLIN};
    if (poll(fds, (nfds_t)nf, -1) > 0 && (fds[nf - 1].revents & POLLIN)) {
      uint64_t v;
      if (read(h->wake_fd, &v, sizeof v) < 0) { /* nothing to do: it was drained already */
      }
    }
    pthread_mutex_lock(&h->lock);
  }
  pthread_mutex_unlock(&h->lock);
  free(work);
  free(fds);
  return NULL;
}

static void helper_end(struct tcp_helper* h) {
  pthread_mutex_lock(&h->lock);
  h->stop = 1;
  pthread_mutex_unlock(&h->lock);
  helper_poke(h);
  pthread_join(h->thread, NULL);
  close(h->wake_fd);
  pthread_cond_destroy(&h->idle);
  pthread_mutex_destroy(&h->lock);
  free(h->socks);
  free(h);
}

static struct tcp_helper* helper_start(int dev) {
  struct tcp_helper* h = calloc(1, sizeof *h);
  if (h == NULL) return NULL;
  pthread_mutex_init(&h->lock, NULL);
  pthread_cond_init(&h->idle, NULL);
  h->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  int err = h->wake_fd < 0 ? errno : pthread_create(&h->thread, NULL, helper_main, h);
  if (err != 0) {
    if (h->wake_fd >= 0) close(h->wake_fd);
    pthread_cond_destroy(&h->idle);
    pthread_mutex_destroy(&h->lock);
    free(h);
    WARN("Socket: could not start a helper thread for network device %d: %s", dev, strerror(err));
    return NULL;
  }
  pthread_setname_np(h->thread, "monel-tcp");
  return h;
}

/* Socket k joins thread h of the pool. */
static int helper_adopt(struct tcp_helper* h, struct tcp_sock* k) {
  pthread_mutex_lock(&h->lock);
  if (h->nsocks == h->cap) {
    int cap = h->cap ? 2 * h->cap : 8;
    struct tcp_sock** s = realloc(h->socks, sizeof *s * (size_t)cap);
    if (s == NULL) {
      pthread_mutex_unlock(&h->lock);
      return -1;
    }
    h->socks = s, h->cap = cap;
  }
  h->socks[h->nsocks++] = k;
  k->owner = h;
  pthread_mutex_unlock(&h->lock);
  return 0;
}

/* Socket k leaves its thread: once this returns, the thread does not touch it. */
static void helper_release(struct tcp_sock* k) {
  struct tcp_helper* h = k->owner;
  if (h == NULL) return;
  pthread_mutex_lock(&h->lock);
  for (int i = 0; i < h->nsocks; i++)
    if (h->socks[i] == k) {
      h->socks[i] = h->socks[--h->nsocks];
      break;
    }
  while (h->busy) pthread_cond_wait(&h->idle, &h->lock);
  pthread_mutex_unlock(&h->lock);
  k->owner = NULL;
}

/* The comm's data sockets join its device's pool of its direction, which grows by the comm's
 * threads up to net_tcp_pool_max: socket s goes to thread (base + s / nsocks), base turning with
 * every comm so that the comms' sockets spread over the pool. */
static struct tcp_pool* pool_of(const struct tcp_comm* c) {
  return &pools[c->dev >= 0 && c->dev < TCP_MAX_DEVS ? c->dev : 0][c->is_send ? 1 : 0];
}

static ncclResult_t helpers_join(struct tcp_comm* c) {
  static unsigned turn;
  struct tcp_pool* pl = pool_of(c);
  ncclResult_t res = ncclSuccess;
  int most = net_tcp_pool_max(c->nthreads);
  pthread_mutex_lock(&pools_mu);
  /* NCCL_SOCKET_NTHREADS more threads for each comm, up to the pool's bound */
  int64_t want = (int64_t)c->nthreads * (pl->comms + 1);
  if (want > most) want = most;
  if (pl->n < want) {
    struct tcp_helper** t = realloc(pl->t, sizeof *t * (size_t)want);
    if (t == NULL) {
      res = ncclSystemError;
      goto out;
    }
    pl->t = t;
    while (pl->n < want) {
      struct tcp_helper* h = helper_start(c->dev);
      if (h == NULL) {
        res = ncclSystemError;
        goto out;
      }
      pl->t[pl->n++] = h;
    }
  }
  unsigned base = turn++;
  for (int s = 0; s < c->ndata; s++) {
    c->socks[s].comm = c;
    struct tcp_helper* h = pl->t[(base + (unsigned)(s / c->nsocks)) % (unsigned)pl->n];
    if (helper_adopt(h, &c->socks[s]) != 0) {
      for (int i = 0; i < s; i++) helper_release(&c->socks[i]);
      res = ncclSystemError;
      goto out;
    }
  }
  pl->comms++;
  c->helpers_joined = 1;
out:
  pthread_mutex_unlock(&pools_mu);
  if (res != ncclSuccess)
    WARN("Socket: no helper thread for the connection with %s (out of memory or threads)", c->peer);
  return res;
}

void net_tcp_comm_stop(struct tcp_comm* c) {
  if (c->helpers_joined) {
    struct tcp_pool* pl = pool_of(c);
    for (int s = 0; s < c->ndata; s++) helper_release(&c->socks[s]);
    pthread_mutex_lock(&pools_mu);
    if (--pl->comms == 0) { /* the last comm of the pool: its threads end */
      for (int t = 0; t < pl->n; t++) helper_end(pl->t[t]);
      free(pl->t);
      pl->t = NULL, pl->n = 0;
    }
    pthread_mutex_unlock(&pools_mu);
    c->helpers_joined = 0;
  }
  for (int i = 0; i < NET_MAX_REQUESTS; i++)
    if (c->reqs[i].used) net_handle_free(c->reqs[i].handle);
}

/* Cuts a large message into pieces over consecutive data sockets; the receiver makes the same
 * cut from the size in the header. */
static ncclResult_t pieces_queue(struct tcp_comm* c, struct tcp_req* r, char* data, size_t size) {
  size_t n = size / TCP_CHUNK_MIN;
  if (n < 1) n = 1;
  if (n > (size_t)c->ndata) n = (size_t)c->ndata;
  size_t per = (size + n - 1) / n;
  if (!c->helpers_joined) {
    ncclResult_t res = helpers_join(c);
    if (res != ncclSuccess) {
      net_tcp_comm_fail(c, -1, 0, res);
      return res;
    }
  }
  __atomic_add_fetch(&r->pending, (int)n, __ATOMIC_ACQ_REL);
  for (size_t j = 0; j < n; j++) {
    size_t off = j * per;
    int s = (int)((c->next_sock + j) % (size_t)c->ndata);
    struct tcp_sock* k = &c->socks[s];
    struct tcp_helper* h = k->owner;
    pthread_mutex_lock(&h->lock);
    k->q[k->tail % TCP_QUEUE] =
        (struct tcp_piece){.ptr = data + off, .len = size - off < per ? size - off : per, .req = r};
    k->tail++;
    pthread_mutex_unlock(&h->lock);
    helper_poke(h);
  }
  c->next_sock = (uint32_t)((c->next_sock + n) % (size_t)c->ndata);
  return ncclSuccess;
}

/* ---- the control socket -------------------------------------------------------------------- */

static struct tcp_req* req_by_seq(struct tcp_comm* c, uint64_t seq) {
  for (int i = 0; i < NET_MAX_REQUESTS; i++)
    if (c->reqs[i].used && c->reqs[i].seq == seq) return &c->reqs[i];
  return NULL;
}

/* Bytes of a message that follow its header on the control socket: all of it up to
 * TCP_INLINE_MAX, or on a comm without data sockets. */
static size_t inline_bytes(const struct tcp_comm* c, uint64_t size) {
  return size <= TCP_INLINE_MAX || c->ndata == 0 ? (size_t)size : 0;
}

static void ctrl_send(struct tcp_comm* c) {
  struct tcp_req* r;
  int events = 0;
  while (!failed(c) && (r = req_by_seq(c, c->ctrl_seq)) != NULL) {
    size_t inl = inline_bytes(c, r->b[0].size);
    size_t total = sizeof c->hdr + inl;
    if (c->off == 0) c->hdr = (struct tcp_msg_hdr){r->b[0].tag, TCP_MSG_CHECK, r->b[0].size};
    while (c->off < total) {
      struct iovec iov[2];
      int n = 0;
      if (c->off < sizeof c->hdr)
        iov[n++] = (struct iovec){(char*)&c->hdr + c->off, sizeof c->hdr - c->off};
      size_t data_off = c->off > sizeof c->hdr ? c->off - sizeof c->hdr : 0;
      if (inl > data_off) iov[n++] = (struct iovec){r->b[0].data + data_off, inl - data_off};
      struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
      ssize_t k = sendmsg(c->ctrl, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (k > 0) {
        c->off += (size_t)k;
        continue;
      }
      int e = io_error(c, k);
      if (e < 0) goto out;
      if (e == 0) {
        events = POLLOUT;
        goto out;
      }
    }
    r->ctrl_done = 1;
    c->off = 0;
    c->ctrl_seq++;
  }
out:
  __atomic_store_n(&c->poll.events, events, __ATOMIC_RELAXED);
}

/* A header arrived for request r: match it to a buffer. 0 after recording a failure. */
static int ctrl_match(struct tcp_comm* c, struct tcp_req* r) {
  const struct tcp_msg_hdr* h = &c->hdr;
  if (h->check != TCP_MSG_CHECK) {
    WARN("Socket: the peer at %s sent a malformed message header: is another program connected "
         "to this port?",
         c->peer);
    net_tcp_comm_fail(c, -1, 0, ncclRemoteError);
    return 0;
  }
  struct tcp_buf* b = NULL;
  for (int i = 0; i < r->n && b == NULL; i++)
    if (!r->b[i].matched && r->b[i].tag == h->tag) b = &r->b[i];
  if (b == NULL) {
    WARN("Socket: a message with tag %d arrived from %s, but no buffer of the receive posted for "
         "it (%d buffers, first tag %d) waits for that tag: sends and receives must match in order",
         h->tag, c->peer, r->n, r->b[0].tag);
    net_tcp_comm_fail(c, -1, 0, ncclInvalidUsage);
    return 0;
  }
  if (h->size > b->size) {
    WARN("Socket: a message of %llu bytes with tag %d arrived from %s, but its receive buffer "
         "holds %zu bytes: post receives at least as large as the sends",
         (unsigned long long)h->size, h->tag, c->peer, b->size);
    net_tcp_comm_fail(c, -1, 0, ncclInvalidUsage);
    return 0;
  }
  b->matched = 1;
  b->got = (size_t)h->size;
  r->nmatched++;
  c->in = b;
  if (inline_bytes(c, h->size) < h->size &&
      pieces_queue(c, r, b->data, (size_t)h->size) != ncclSuccess)
    return 0;
  return 1;
}

/* Up to n bytes of the control stream into dst, as recv() returns: from the bytes read ahead
 * first; else one recv() into the read-ahead buffer (or straight into dst when n fills it). */
static ssize_t ctrl_read(struct tcp_comm* c, char* dst, size_t n) {
  if (c->ahead_at == c->ahead_len) {
    if (n >= TCP_READ_AHEAD) return recv(c->ctrl, dst, n, MSG_DONTWAIT);
    ssize_t k = recv(c->ctrl, c->ahead, TCP_READ_AHEAD, MSG_DONTWAIT);
    if (k <= 0) return k;
    c->ahead_at = 0, c->ahead_len = (size_t)k;
  }
  size_t k = c->ahead_len - c->ahead_at < n ? c->ahead_len - c->ahead_at : n;
  memcpy(dst, c->ahead + c->ahead_at, k);
  c->ahead_at += k;
  return (ssize_t)k;
}

static void ctrl_recv(struct tcp_comm* c) {
  const size_t hdr = sizeof c->hdr;
  struct tcp_req* r;
  int events = 0;
  while (!failed(c) && (r = req_by_seq(c, c->ctrl_seq)) != NULL) {
    size_t total = c->off < hdr ? hdr : hdr + inline_bytes(c, c->hdr.size);
    if (c->off < total) {
      char* dst = c->off < hdr ? (char*)&c->hdr + c->off : c->in->data + (c->off - hdr);
      ssize_t k = ctrl_read(c, dst, total - c->off);
      if (k <= 0) {
        if (k == 0 && c->off == 0) /* the sender closed after its last message */
          __atomic_store_n(&c->peer_done, 1, __ATOMIC_RELEASE);
        int e = io_error(c, k);
        if (e == 0) events = POLLIN;
        if (e <= 0) break;
        continue;
      }
      c->off += (size_t)k;
      if (c->off == hdr && !ctrl_match(c, r)) break;
      continue;
    }
    c->off = 0; /* the message is in (its pieces may still be on their way) */
    c->in = NULL;
    if (r->nmatched == r->n) {
      r->ctrl_done = 1;
      c->ctrl_seq++;
    }
  }
  __atomic_store_n(&c->poll.events, events, __ATOMIC_RELAXED);
}

static void ctrl_progress(struct tcp_comm* c) {
  if (c->is_send)
    ctrl_send(c);
  else
    ctrl_recv(c);
}

/* ---- the calls ----------------------------------------------------------------------------- */

static struct tcp_comm* comm_get(void* handle, int is_send, const char* call) {
  struct tcp_comm* c = net_handle_get(handle, is_send ? NET_KIND_SEND : NET_KIND_RECV);
  if (c == NULL)
    WARN("Socket: %s was given %p, which is not an open %s comm (closed already?)", call, handle,
         is_send ? "send" : "receive");
  return c;
}

ncclResult_t net_tcp_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  *mhandle = NULL;
  if (net_handle_get(comm, NET_KIND_SEND) == NULL && net_handle_get(comm, NET_KIND_RECV) == NULL) {
    WARN("Socket: reg_mr was given %p, which is not an open send or receive comm", comm);
    return ncclInvalidArgument;
  }
  if (type != NET_PTR_HOST) {
    WARN("Socket: reg_mr was asked to register memory of type %d; this network moves host "
         "memory only (NET_PTR_HOST)",
         type);
    return ncclInvalidArgument;
  }
  struct tcp_mr* mr = NULL;
  NCCLCALLOC(mr, 1);
  mr->base = data;
  mr->size = size;
  *mhandle = net_handle_new(mr, NET_KIND_MR);
  if (*mhandle == NULL) {
    free(mr);
    return ncclSystemError;
  }
  return ncclSuccess;
}

ncclResult_t net_tcp_dereg_mr(void* comm, void* mhandle) {
  struct tcp_mr* mr = net_handle_get(mhandle, NET_KIND_MR);
  if (mr == NULL) {
    WARN("Socket: dereg_mr was given %p, which is not a live registration", mhandle);
    return ncclInvalidArgument;
  }
  net_handle_free(mhandle);
  free(mr);
  return ncclSuccess;
}

/* A free request of the comm, or NULL when NET_MAX_REQUESTS are in flight. */
static ncclResult_t req_new(struct tcp_comm* c, struct tcp_req** out) {
  *out = NULL;
  if (c->inflight == NET_MAX_REQUESTS) return ncclSuccess;
  struct tcp_req* r = NULL;
  for (int i = 0; i < NET_MAX_REQUESTS && r == NULL; i++)
    if (!c->reqs[i].used) r = &c->reqs[i];
  memset(r, 0, sizeof *r);
  r->handle = net_handle_new(r, NET_KIND_REQUEST);
  if (r->handle == NULL) return ncclSystemError;
  r->comm = c;
  r->used = 1;
  r->seq = c->posted++;
  c->inflight++;
  *out = r;
  return ncclSuccess;
}

ncclResult_t net_tcp_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                           void* phandle, void** request) {
  struct tcp_comm* c = comm_get(send_comm, 1, "isend");
  struct tcp_req* r = NULL;
  *request = NULL;
  if (c == NULL) return ncclInvalidArgument;
  NCCLCHECK(failed(c));
  NCCLCHECK(req_new(c, &r));
  if (r == NULL) return ncclSuccess; /* not now */
  r->n = 1;
  r->b[0] = (struct tcp_buf){.data = data, .size = size, .tag = tag};
  if (inline_bytes(c, size) < size) NCCLCHECK(pieces_queue(c, r, data, size));
  ctrl_progress(c);
  *request = r->handle;
  return ncclSuccess;
}

ncclResult_t net_tcp_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                           void** mhandles, void** phandles, void** request) {
  struct tcp_comm* c = comm_get(recv_comm, 0, "irecv");
  struct tcp_req* r = NULL;
  *request = NULL;
  if (c == NULL) return ncclInvalidArgument;
  if (n < 1 || n > TCP_MAX_RECVS) {
    WARN("Socket: irecv was asked to group %d buffers; it takes 1 to %d", n, TCP_MAX_RECVS);
    return ncclInvalidArgument;
  }
  NCCLCHECK(failed(c));
  NCCLCHECK(req_new(c, &r));
  if (r == NULL) return ncclSuccess;
  r->n = n;
  for (int i = 0; i < n; i++)
    r->b[i] = (struct tcp_buf){.data = data[i], .size = sizes[i], .tag = tags[i]};
  ctrl_progress(c);
  *request = r->handle;
  return ncclSuccess;
}

static int complete(struct tcp_req* r) {
  return r->ctrl_done && __atomic_load_n(&r->pending, __ATOMIC_ACQUIRE) == 0;
}

/* A receive whose message is all matched while its pieces still move after the sender ended the
 * stream: not done, and not failed either. */
static int still_moving(struct tcp_comm* c, struct tcp_req* r) {
  return r->ctrl_done && __atomic_load_n(&c->peer_done, __ATOMIC_ACQUIRE) &&
         !__atomic_load_n(&c->pieces_dead, __ATOMIC_ACQUIRE);
}

ncclResult_t net_tcp_test(void* request, int* done, size_t* sizes) {
  struct tcp_req* r = net_handle_get(request, NET_KIND_REQUEST);
  *done = 0;
  if (r == NULL) {
    WARN("Socket: test was given %p, which is not a pending request (finished and freed "
         "already, or its comm closed?)",
         request);
    return ncclInvalidArgument;
  }
  struct tcp_comm* c = r->comm;
  /* A request that finished before the comm failed still reports its data. */
  if (!complete(r)) {
    if (!still_moving(c, r)) NCCLCHECK(failed(c));
    ctrl_progress(c);
    if (!complete(r)) return still_moving(c, r) ? ncclSuccess : failed(c);
  }
  *done = 1;
  if (sizes != NULL)
    for (int i = 0; i < r->n; i++) sizes[i] = c->is_send ? r->b[i].size : r->b[i].got;
  net_handle_free(r->handle);
  r->used = 0;
  c->inflight--;
  return ncclSuccess;
}

/* ---- waiting for any comm ------------------------------------------------------------------ */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tcp_poll* reg;
static int wake_fd = -1;

/* In a child after fork(): the parent's comms are not ours. */
static void after_fork_child(void) {
  pthread_mutex_init(&reg_lock, NULL);
  reg = NULL;
  if (wake_fd >= 0) close(wake_fd);
  wake_fd = -1;
}

static void register_fork_handler(void) {
  pthread_atfork(NULL, NULL, after_fork_child);
}

/* The waiters' eventfd, made by the first of net_tcp_poll_add, net_tcp_wait and net_tcp_wake, so
 * that a wakeup that comes before the first wait is kept for it. */
static int wake_fd_get(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  int fd = __atomic_load_n(&wake_fd, __ATOMIC_ACQUIRE);
  if (fd >= 0) return fd;
  pthread_once(&once, register_fork_handler);
  pthread_mutex_lock(&reg_lock);
  if (wake_fd < 0)
    __atomic_store_n(&wake_fd, eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), __ATOMIC_RELEASE);
  fd = wake_fd;
  pthread_mutex_unlock(&reg_lock);
  return fd;
}

void net_tcp_poll_add(struct tcp_poll* p) {
  (void)wake_fd_get();
  pthread_mutex_lock(&reg_lock);
  p->next = reg;
  reg = p;
  pthread_mutex_unlock(&reg_lock);
}

void net_tcp_poll_remove(struct tcp_poll* p) {
  pthread_mutex_lock(&reg_lock);
  for (struct tcp_poll** q = &reg; *q != NULL; q = &(*q)->next)
    if (*q == p) {
      *q = p->next;
      break;
    }
  pthread_mutex_unlock(&reg_lock);
}

void net_tcp_wake(void) {
  int fd = wake_fd_get();
  uint64_t one = 1;
  if (fd >= 0 && write(fd, &one, sizeof one) < 0) { /* full: a wakeup is pending anyway */
  }
}

void net_tcp_wait(int ms) {
  struct pollfd* fds = NULL;
  int n = 0;
  int wfd = wake_fd_get();
  if (wfd < 0 && ms < 0) ms = 1; /* nothing could end the wait */
  pthread_mutex_lock(&reg_lock);
  for (struct tcp_poll* p = reg; p != NULL; p = p->next) n++;
  fds = malloc(sizeof *fds * (size_t)(n + 1));
  n = 0;
  for (struct tcp_poll* p = reg; p != NULL && fds != NULL; p = p->next) {
    int ev = __atomic_load_n(&p->events, __ATOMIC_RELAXED);
    if (ev != 0) fds[n++] = (struct pollfd){.fd = p->fd, .events = (short)ev};
  }
  pthread_mutex_unlock(&reg_lock);
  if (fds == NULL) {
    poll(NULL, 0, 1);
    return;
  }
  if (wfd >= 0) fds[n++] = (struct pollfd){.fd = wfd, .events = POLLIN};
  if (poll(fds, (nfds_t)n, ms) > 0 && wfd >= 0 && (fds[n - 1].revents & POLLIN)) {
    uint64_t v;
    if (read(wfd, &v, sizeof v) < 0) { /* another waiter drained it */
    }
  }
  free(fds);
}
