/* TCP bootstrap: rendezvous through the root (boot_root.c), then peer-to-peer messages.
 *
 * Every rank listens on its own socket. A message to a peer goes over this rank's outgoing
 * connection to it (opened on first use, a hello with the job secret first); each message is a
 * header (secret, source rank, kind, tag, size) and a body of at most BOOT_MSG_MAX bytes. A
 * progress thread per rank accepts incoming connections and reads every incoming message into a
 * queue, so sends never wait for the matching receive and messages of tags not asked for yet wait
 * in the queue. Hellos of new incoming connections are read without blocking, so a peer slow to
 * speak after connecting (a loaded machine) is neither dropped nor stalls the others.
 *
 * Death: a receive that finds no message queued first opens this rank's outgoing connection to
 * the peer (a dead peer refuses it), and the progress thread watches every outgoing connection: a
 * peer that exits closes or resets it even when it never connected to us. A peer that closed or
 * refused our connection is declared gone once its own connection to us (which may still hold
 * messages it sent before exiting) reached EOF too, or, when it never connected to us, once no
 * incoming connection is left unidentified (or SETTLE_S passed). Receives from a gone peer fail
 * naming it; messages it sent before are still delivered. boot_abort shuts every socket down,
 * which wakes every blocked call. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <poll.h>
#include <unistd.h>
#include "boot/boot_impl.h"
#include "util/check.h"
#include "util/log.h"
#include "util/param.h"

#define BOOT_MSG_MAX   ((uint64_t)1 << 30)
#define PEER_CONNECT_S 5.0
/* After a peer closed our connection: longest wait for an unidentified incoming connection that
 * might be its own connection to us. */
#define SETTLE_S 2.0
/* Spare slots for incoming connections whose hello has not arrived yet (beyond one per rank). */
#define INCOMING_SPARE 16
#define ABORTED(b)     __atomic_load_n(&(b)->aborted, __ATOMIC_SEQ_CST)

struct peer_hello {
  uint32_t magic;
  int32_t rank;
  uint64_t secret;
};

struct msg_hdr {
  uint64_t secret;
  int32_t src;
  int32_t tag;
  uint32_t kind;
  uint32_t pad;
  uint64_t size;
};

struct sock_msg {
  struct sock_msg* next;
  int src, kind, tag;
  size_t size;
  char data[];
};

struct peer {
  pthread_mutex_t send_mu; /* serializes connect + writes on out_fd */
  int out_fd;              /* written under send_mu and mu; read by the progress thread under mu */
  int in_fd;               /* owned by the progress thread; published under mu */
  int out_eof;             /* progress thread: the peer closed our outgoing connection ... */
  double out_eof_at;       /* ... at this time */
  enum sock_err out_why;   /* ... this way */
  int refused;             /* atomic: connecting to the peer failed (it is gone) ... */
  enum sock_err refused_why; /* ... this way (written before refused) */
  int dead;                  /* under mu */
  enum sock_err why;
};

/* An accepted connection whose hello is still arriving (progress thread only). */
struct incoming {
  int fd;
  size_t got;
  double since;
  struct auth_srv auth; /* the handshake comes first */
  unsigned char bytes[sizeof(struct peer_hello)];
};

struct boot_sock {
  struct boot base;
  uint64_t secret;
  int64_t timeout;
  int listen_fd;
  int wake_fd;
  union sock_addr* addrs;
  struct peer* peers;
  struct incoming* inc; /* progress thread only */
  int ninc, inc_max;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct sock_msg *head, *tail;
  volatile int aborted;
  atomic_int stop;
  int progress_started;
  pthread_t progress;
  struct boot_root* root; /* NCCL_COMM_ID: rank 0 runs the root */
};

static void wake(struct boot_sock* b) {
  uint64_t one = 1;
  if (write(b->wake_fd, &one, sizeof(one)) < 0) { /* the counter cannot overflow in practice */
  }
}

static void mark_dead(struct boot_sock* b, int peer, enum sock_err why) {
  pthread_mutex_lock(&b->mu);
  if (!b->peers[peer].dead) b->peers[peer].dead = 1, b->peers[peer].why = why;
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
}

static void enqueue(struct boot_sock* b, struct sock_msg* m) {
  pthread_mutex_lock(&b->mu);
  if (b->tail != NULL)
    b->tail->next = m;
  else
    b->head = m;
  b->tail = m;
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
}

/* Accept one pending connection; its hello is read by incoming_read. Call with a free slot. */
static void accept_peer(struct boot_sock* b) {
  int fd = -1;
  if (sock_conn_accept(b->listen_fd, &fd, NULL) != ncclSuccess) return;
  b->inc[b->ninc++] = (struct incoming){.fd = fd, .got = 0, .since = sock_time_now(), .auth = {0}};
}

/* Read what has arrived of an incoming connection's hello. Returns 1 while it is incomplete, 0
 * when the connection became its rank's in_fd or was dropped. */
static int incoming_read(struct boot_sock* b, struct incoming* c) {
  struct peer_hello h = {0};
  const char* bad = NULL;
  char where[64];
  int step = auth_srv_step(&c->auth, c->fd, b->base.key, &bad);
  if (step != 0) {
    if (step < 0) {
      snprintf(where, sizeof where, "bootstrap rank %d", b->base.rank);
      auth_stranger(where, c->fd, bad);
      sock_close(&c->fd);
    }
    return step > 0;
  }
  ssize_t k = recv(c->fd, c->bytes + c->got, sizeof(c->bytes) - c->got, MSG_DONTWAIT);
  if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 1;
  if (k <= 0) {
    bad = k == 0 ? sock_err_str(SOCK_EOF) : sock_err_str(SOCK_RESET);
  } else {
    c->got += (size_t)k;
    if (c->got < sizeof(c->bytes)) return 1;
    memcpy(&h, c->bytes, sizeof(h));
    if (h.magic != BOOT_MAGIC_TCP || h.secret != b->secret || h.rank < 0 ||
        h.rank >= b->base.nranks)
      bad = "bad hello";
  }
  if (bad == NULL) {
    pthread_mutex_lock(&b->mu);
    if (b->peers[h.rank].in_fd < 0) b->peers[h.rank].in_fd = c->fd, c->fd = -1;
    pthread_mutex_unlock(&b->mu);
    if (c->fd >= 0) {
      WARN("bootstrap rank %d: rank %d connected twice; dropped the second connection",
           b->base.rank, h.rank);
      sock_close(&c->fd);
    }
    return 0;
  }
  WARN("bootstrap rank %d: dropped an incoming connection that is not a peer of this job (%s); "
       "check that nothing else connects to the bootstrap ports",
       b->base.rank, bad);
  sock_close(&c->fd);
  return 0;
}

/* Read the hellos that have arrived (all of them when `ready` is NULL, else those whose ready
 * entry is set) and drop connections silent for longer than the bootstrap timeout. */
static void incoming_progress(struct boot_sock* b, const struct pollfd* ready) {
  int kept = 0;
  double now = sock_time_now();
  for (int i = 0; i < b->ninc; i++) {
    struct incoming* c = &b->inc[i];
    int more = ready == NULL || ready[i].revents ? incoming_read(b, c) : 1;
    if (more && now - c->since > (double)b->timeout) {
      WARN("bootstrap rank %d: dropped an incoming connection that sent no hello within %lld s",
           b->base.rank, (long long)b->timeout);
      sock_close(&c->fd);
      more = 0;
    }
    if (more) b->inc[kept++] = *c;
  }
  b->ninc = kept;
}

/* Read one message from peer p's incoming connection into the queue. */
static void read_message(struct boot_sock* b, int p) {
  struct msg_hdr h;
  struct sock_msg* m = NULL;
  enum sock_err err = SOCK_OK;
  int fd = b->peers[p].in_fd;
  double dl = sock_time_now() + (double)b->timeout;
  if (sock_recv_all(fd, &h, sizeof(h), dl, &b->aborted, &err) != ncclSuccess) goto gone;
  if (h.secret != b->secret || h.src != p || h.size > BOOT_MSG_MAX) {
    WARN("bootstrap rank %d: malformed message on the connection from rank %d (size %llu, max "
         "%llu); dropped the connection",
         b->base.rank, p, (unsigned long long)h.size, (unsigned long long)BOOT_MSG_MAX);
    err = SOCK_SYSERR;
    goto gone;
  }
  m = malloc(sizeof(*m) + h.size);
  if (m == NULL) {
    WARN("bootstrap rank %d: out of host memory for a %llu-byte message from rank %d", b->base.rank,
         (unsigned long long)h.size, p);
    err = SOCK_SYSERR;
    goto gone;
  }
  m->next = NULL, m->src = p, m->kind = (int)h.kind, m->tag = h.tag, m->size = h.size;
  if (sock_recv_all(fd, m->data, h.size, dl, &b->aborted, &err) != ncclSuccess) goto gone;
  enqueue(b, m);
  return;
gone:
  free(m);
  pthread_mutex_lock(&b->mu);
  b->peers[p].in_fd = -1;
  pthread_mutex_unlock(&b->mu);
  close(fd);
  mark_dead(b, p, err);
}

/* The peer closed our outgoing connection, or refused to open one: it exited (or freed its
 * bootstrap). Messages it sent before may still be on its own connection to us (perhaps not
 * accepted yet): take those in now; settle() decides. */
static void out_closed(struct boot_sock* b, int p, enum sock_err why) {
  b->peers[p].out_eof = 1;
  b->peers[p].out_eof_at = sock_time_now();
  b->peers[p].out_why = why;
  struct pollfd l = {.fd = b->listen_fd, .events = POLLIN};
  while (b->ninc < b->inc_max && poll(&l, 1, 0) > 0 && (l.revents & POLLIN)) accept_peer(b);
  incoming_progress(b, NULL);
}

/* Declare gone the peers that closed our connection and have no connection to us that could still
 * deliver messages: when its own connection exists, its EOF decides (read_message). Returns 1
 * while some peer is undecided (the caller polls again soon). */
static int settle(struct boot_sock* b) {
  int undecided = 0;
  double now = sock_time_now();
  for (int p = 0; p < b->base.nranks; p++) {
    struct peer* q = &b->peers[p];
    if (!q->out_eof || q->in_fd >= 0 || q->dead) continue;
    if (b->ninc == 0 || now - q->out_eof_at > SETTLE_S)
      mark_dead(b, p, q->out_why);
    else
      undecided = 1;
  }
  return undecided;
}

/* pollfd entries: [0] wake, [1] listen, then per peer in_fd / out_fd, then incoming. */
static void* progress_main(void* arg) {
  struct boot_sock* b = arg;
  int n = b->base.nranks, base = 2 + 2 * n, wait_ms = -1;
  struct pollfd* fds = calloc((size_t)(base + b->inc_max), sizeof(*fds));
  if (fds == NULL) return NULL;
  while (!atomic_load(&b->stop) && !ABORTED(b)) {
    fds[0] = (struct pollfd){.fd = b->wake_fd, .events = POLLIN};
    fds[1] = (struct pollfd){.fd = b->ninc < b->inc_max ? b->listen_fd : -1, .events = POLLIN};
    pthread_mutex_lock(&b->mu);
    for (int p = 0; p < n; p++) {
      fds[2 + 2 * p] = (struct pollfd){.fd = b->peers[p].in_fd, .events = POLLIN};
      int watch = b->peers[p].out_fd >= 0 && !b->peers[p].dead && !b->peers[p].out_eof;
      fds[3 + 2 * p] = (struct pollfd){.fd = watch ? b->peers[p].out_fd : -1, .events = POLLIN};
    }
    pthread_mutex_unlock(&b->mu);
    int ninc = b->ninc;
    for (int i = 0; i < ninc; i++)
      fds[base + i] = (struct pollfd){.fd = b->inc[i].fd, .events = POLLIN};
    if (ninc > 0 && wait_ms < 0) wait_ms = 1000; /* to drop silent connections */
    if (poll(fds, (nfds_t)(base + ninc), wait_ms) < 0 && errno != EINTR) break;
    if (atomic_load(&b->stop) || ABORTED(b)) break;
    if (fds[0].revents) {
      uint64_t v;
      if (read(b->wake_fd, &v, sizeof(v)) < 0) { /* spurious: nothing to drain */
      }
    }
    incoming_progress(b, fds + base);
    if ((fds[1].revents & POLLIN) && b->ninc < b->inc_max) accept_peer(b);
    for (int p = 0; p < n; p++) {
      if (fds[2 + 2 * p].revents) read_message(b, p);
      if (fds[3 + 2 * p].revents) { /* a peer never writes on our outgoing connection: EOF */
        char c;
        ssize_t k = recv(fds[3 + 2 * p].fd, &c, 1, MSG_DONTWAIT);
        if (k <= 0 && !(k < 0 && (errno == EAGAIN || errno == EINTR)))
          out_closed(b, p, k == 0 ? SOCK_EOF : SOCK_RESET);
      }
      if (!b->peers[p].out_eof && __atomic_load_n(&b->peers[p].refused, __ATOMIC_ACQUIRE))
        out_closed(b, p, b->peers[p].refused_why);
    }
    wait_ms = settle(b) ? 100 : -1;
  }
  free(fds);
  return NULL;
}

static void peer_str(struct boot_sock* b, int p, char* buf, size_t len) {
  sock_addr_to_str(&b->addrs[p], buf, len);
}

/* Open the outgoing connection to peer p if needed; call with send_mu held. A peer that cannot be
 * reached is gone: the failure is recorded for the progress thread, which declares the peer dead
 * once the messages it may have sent before are in (settle). `quiet`: the caller reports. */
static ncclResult_t connect_peer(struct boot_sock* b, int p, int quiet) {
  char where[SOCK_ADDR_STRLEN];
  enum sock_err err = SOCK_OK;
  int fd = -1;
  ncclResult_t res = ncclSuccess;
  if (b->peers[p].out_fd >= 0) return ncclSuccess;
  if (__atomic_load_n(&b->peers[p].refused, __ATOMIC_ACQUIRE)) {
    err = b->peers[p].refused_why;
    res = ncclRemoteError;
    goto fail;
  }
  /* peers listen since before the rendezvous: a refusal that lasts means the peer is gone */
  double dl = sock_time_now() + (b->timeout < PEER_CONNECT_S ? (double)b->timeout : PEER_CONNECT_S);
  struct peer_hello h = {.magic = BOOT_MAGIC_TCP, .rank = b->base.rank, .secret = b->secret};
  const char* why = NULL;
  res = sock_conn_open(&b->addrs[p], dl, &b->aborted, &fd, &err);
  if (res == ncclSuccess && auth_client(fd, b->base.key, dl, &b->aborted, &why) != ncclSuccess) {
    /* the peer died meanwhile, or another process took its port: either way it is gone */
    peer_str(b, p, where, sizeof(where));
    INFO(LOG_BOOTSTRAP, "bootstrap rank %d: peer rank %d at %s failed the handshake: %s",
         b->base.rank, p, where, why);
    res = ncclRemoteError, err = SOCK_EOF;
  }
  if (res == ncclSuccess) res = sock_send_all(fd, &h, sizeof(h), dl, &b->aborted, &err);
  if (res != ncclSuccess) {
    sock_close(&fd);
    if (err != SOCK_SYSERR && !ABORTED(b)) {
      b->peers[p].refused_why = err;
      __atomic_store_n(&b->peers[p].refused, 1, __ATOMIC_RELEASE);
      wake(b);
    }
    goto fail;
  }
  pthread_mutex_lock(&b->mu);
  b->peers[p].out_fd = fd;
  pthread_mutex_unlock(&b->mu);
  wake(b); /* let the progress thread watch it */
  return ncclSuccess;
fail:
  if (ABORTED(b)) return ncclRemoteError;
  if (!quiet || err == SOCK_SYSERR) {
    peer_str(b, p, where, sizeof(where));
    WARN("bootstrap rank %d cannot connect to peer rank %d at %s: %s; the peer process exited or "
         "the network blocks the port",
         b->base.rank, p, where, err == SOCK_SYSERR ? strerror(errno) : sock_err_str(err));
  }
  return res;
}

static struct sock_msg* msg_new(int src, int kind, int tag, const void* data, size_t size) {
  struct sock_msg* m = malloc(sizeof(*m) + size);
  if (m == NULL) return NULL;
  m->next = NULL, m->src = src, m->kind = kind, m->tag = tag, m->size = size;
  if (size > 0) memcpy(m->data, data, size);
  return m;
}

static ncclResult_t sock_boot_send(struct boot* base, int p, int kind, int tag, const void* data,
                                   size_t size) {
  struct boot_sock* b = (struct boot_sock*)base;
  ncclResult_t res = ncclSuccess;
  enum sock_err err = SOCK_OK;
  char where[SOCK_ADDR_STRLEN];
  if (ABORTED(b)) return ncclRemoteError;
  if (size > BOOT_MSG_MAX) {
    WARN("bootstrap rank %d: a %zu-byte message is larger than the bootstrap limit of %llu bytes",
         base->rank, size, (unsigned long long)BOOT_MSG_MAX);
    return ncclInvalidArgument;
  }
  if (p == base->rank) {
    struct sock_msg* m = msg_new(p, kind, tag, data, size);
    if (m == NULL) {
      WARN("out of host memory buffering a %zu-byte bootstrap message", size);
      return ncclSystemError;
    }
    enqueue(b, m);
    return ncclSuccess;
  }
  struct msg_hdr h = {
      .secret = b->secret, .src = base->rank, .tag = tag, .kind = (uint32_t)kind, .size = size};
  pthread_mutex_lock(&b->peers[p].send_mu);
  NCCLCHECKGOTO(connect_peer(b, p, 0), res, out);
  double dl = sock_time_now() + (double)b->timeout;
  res = sock_send_all(b->peers[p].out_fd, &h, sizeof(h), dl, &b->aborted, &err);
  if (res == ncclSuccess)
    res = sock_send_all(b->peers[p].out_fd, data, size, dl, &b->aborted, &err);
  if (res != ncclSuccess && !ABORTED(b)) {
    peer_str(b, p, where, sizeof(where));
    WARN("bootstrap rank %d: sending %zu bytes (tag %d) to peer rank %d at %s failed: %s; the peer "
         "process exited or was killed",
         base->rank, size, tag, p, where, sock_err_str(err));
  } /* the progress thread sees the broken connection too and declares the peer gone */
  if (ABORTED(b)) res = ncclRemoteError;
out:
  pthread_mutex_unlock(&b->peers[p].send_mu);
  return res;
}

static struct sock_msg* take(struct boot_sock* b, int src, int kind, int tag) {
  struct sock_msg* prev = NULL;
  for (struct sock_msg* m = b->head; m != NULL; prev = m, m = m->next) {
    if (m->src != src || m->kind != kind || m->tag != tag) continue;
    if (prev != NULL)
      prev->next = m->next;
    else
      b->head = m->next;
    if (b->tail == m) b->tail = prev;
    return m;
  }
  return NULL;
}

static ncclResult_t sock_boot_recv(struct boot* base, int p, int kind, int tag, void* data,
                                   size_t size) {
  struct boot_sock* b = (struct boot_sock*)base;
  struct sock_msg* m = NULL;
  ncclResult_t res = ncclSuccess;
  int dead = 0;
  enum sock_err why = SOCK_OK;
  char where[SOCK_ADDR_STRLEN];
  pthread_mutex_lock(&b->mu);
  m = take(b, p, kind, tag);
  pthread_mutex_unlock(&b->mu);
  if (m == NULL && p != base->rank) { /* an outgoing connection tells us when the peer dies */
    pthread_mutex_lock(&b->peers[p].send_mu);
    res = connect_peer(b, p, 1);
    pthread_mutex_unlock(&b->peers[p].send_mu);
    /* a peer that cannot be reached is declared dead by the progress thread, after the
     * messages it sent before exiting are in */
    if (res != ncclSuccess && res != ncclRemoteError) return res;
    res = ncclSuccess;
  }
  pthread_mutex_lock(&b->mu);
  while (m == NULL && (m = take(b, p, kind, tag)) == NULL && !ABORTED(b) && !b->peers[p].dead)
    pthread_cond_wait(&b->cv, &b->mu);
  dead = b->peers[p].dead, why = b->peers[p].why;
  pthread_mutex_unlock(&b->mu);
  if (m == NULL && ABORTED(b)) return ncclRemoteError;
  if (m == NULL && dead) {
    peer_str(b, p, where, sizeof(where));
    WARN("bootstrap rank %d: peer rank %d (%s) is gone while rank %d waited for its message (tag "
         "%d): %s; the process exited or was killed",
         base->rank, p, where, base->rank, tag, sock_err_str(why));
    return ncclRemoteError;
  }
  if (m == NULL) return ncclRemoteError;
  if (m->size != size) {
    WARN("bootstrap rank %d: message from rank %d (tag %d) has %zu bytes where %zu were expected; "
         "the ranks disagree about the protocol",
         base->rank, p, tag, m->size, size);
    res = ncclInternalError;
    goto out;
  }
  if (size > 0) memcpy(data, m->data, size);
out:
  free(m);
  return res;
}

static void sock_boot_abort(struct boot* base) {
  struct boot_sock* b = (struct boot_sock*)base;
  pthread_mutex_lock(&b->mu);
  __atomic_store_n(&b->aborted, 1, __ATOMIC_SEQ_CST);
  for (int p = 0; p < base->nranks; p++) {
    if (b->peers[p].in_fd >= 0) shutdown(b->peers[p].in_fd, SHUT_RDWR);
    if (b->peers[p].out_fd >= 0) shutdown(b->peers[p].out_fd, SHUT_RDWR);
  }
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
  wake(b);
}

static void sock_boot_free(struct boot* base) {
  struct boot_sock* b = (struct boot_sock*)base;
  if (b->progress_started) {
    atomic_store(&b->stop, 1);
    wake(b);
    pthread_join(b->progress, NULL);
  }
  for (int p = 0; b->peers != NULL && p < base->nranks; p++) {
    sock_close(&b->peers[p].in_fd);
    sock_close(&b->peers[p].out_fd);
    pthread_mutex_destroy(&b->peers[p].send_mu);
  }
  for (int i = 0; b->inc != NULL && i < b->ninc; i++) sock_close(&b->inc[i].fd);
  free(b->inc);
  for (struct sock_msg *m = b->head, *nx; m != NULL; m = nx) {
    nx = m->next;
    free(m);
  }
  sock_close(&b->listen_fd);
  sock_close(&b->wake_fd);
  boot_root_join(b->root);
  boot_root_release(b->secret);
  pthread_mutex_destroy(&b->mu);
  pthread_cond_destroy(&b->cv);
  free(b->peers);
  free(b->addrs);
  free(b);
}

static const struct boot_ops sock_ops = {.send = sock_boot_send,
                                         .recv = sock_boot_recv,
                                         .abort = sock_boot_abort,
                                         .free = sock_boot_free};

static ncclResult_t sock_boot_alloc(int rank, int nranks, uint64_t secret, struct boot_sock** out) {
  struct boot_sock* b = calloc(1, sizeof(*b));
  if (b == NULL) goto oom;
  b->base.ops = &sock_ops, b->base.rank = rank, b->base.nranks = nranks;
  b->secret = secret;
  b->timeout = param_int(PARAM_BOOT_TIMEOUT);
  b->listen_fd = -1;
  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->cv, NULL);
  b->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  b->peers = calloc((size_t)nranks, sizeof(*b->peers));
  b->addrs = calloc((size_t)nranks, sizeof(*b->addrs));
  b->inc_max = nranks + INCOMING_SPARE;
  b->inc = calloc((size_t)b->inc_max, sizeof(*b->inc));
  if (b->peers == NULL || b->addrs == NULL || b->inc == NULL || b->wake_fd < 0) {
    b->base.nranks = 0; /* no per-peer state was initialized */
    sock_boot_free(&b->base);
    goto oom;
  }
  for (int p = 0; p < nranks; p++) {
    pthread_mutex_init(&b->peers[p].send_mu, NULL);
    b->peers[p].in_fd = b->peers[p].out_fd = -1;
  }
  *out = b;
  return ncclSuccess;
oom:
  WARN("bootstrap rank %d: out of host memory or file descriptors for %d ranks", rank, nranks);
  return ncclSystemError;
}

/* Present ourselves to the root and receive the table of all ranks' addresses. */
static ncclResult_t rendezvous(struct boot_sock* b, const struct boot_id* id,
                               const union sock_addr* me) {
  ncclResult_t res = ncclSuccess;
  enum sock_err err = SOCK_OK;
  int fd = -1, r = b->base.rank, n = b->base.nranks;
  char root[SOCK_ADDR_STRLEN], text[BOOT_REPLY_TEXT_MAX + 1];
  struct boot_hello h = {
      .magic = BOOT_MAGIC_TCP, .secret = b->secret, .rank = r, .nranks = n, .addr = *me};
  uint32_t len = sizeof(h);
  struct boot_reply rep;
  sock_addr_to_str(&id->root, root, sizeof(root));
  double dl = sock_time_now() + (double)b->timeout;
  if (sock_conn_open(&id->root, dl, NULL, &fd, &err) != ncclSuccess) {
    WARN("bootstrap rank %d of %d cannot reach the bootstrap root at %s within %lld s: %s; check "
         "that rank 0 / the process that made the unique id is running and reachable",
         r, n, root, (long long)b->timeout,
         err == SOCK_SYSERR ? strerror(errno) : sock_err_str(err));
    res = ncclSystemError;
    goto out;
  }
  dl = sock_time_now() + (double)b->timeout + 10.0; /* the root answers by its own deadline */
  const char* why = NULL;
  if (auth_client(fd, b->base.key, dl, NULL, &why) != ncclSuccess) {
    WARN("bootstrap rank %d of %d: the root at %s failed the handshake: %s; pass every rank the "
         "unique id (or MONEL_JOB_SECRET) of this job",
         r, n, root, why);
    res = ncclSystemError;
    goto out;
  }
  if (sock_send_all(fd, &len, sizeof(len), dl, NULL, &err) != ncclSuccess ||
      sock_send_all(fd, &h, sizeof(h), dl, NULL, &err) != ncclSuccess ||
      sock_recv_all(fd, &rep, sizeof(rep), dl, NULL, &err) != ncclSuccess)
    goto lost;
  if (rep.magic != BOOT_MAGIC_TCP || rep.nranks != (uint32_t)n ||
      rep.text_len > BOOT_REPLY_TEXT_MAX) {
    err = SOCK_SYSERR;
    goto lost;
  }
  if (rep.status == BOOT_REPLY_TIMEOUT) {
    if (sock_recv_all(fd, text, rep.text_len, dl, NULL, &err) != ncclSuccess) goto lost;
    text[rep.text_len] = '\0';
    WARN("bootstrap rendezvous timed out after %lld s: rank(s) %s of %d never arrived at the root "
         "%s; start every rank or raise MONEL_BOOT_TIMEOUT",
         (long long)b->timeout, text, n, root);
    res = ncclSystemError;
    goto out;
  }
  if (sock_recv_all(fd, b->addrs, sizeof(*b->addrs) * (size_t)n, dl, NULL, &err) != ncclSuccess)
    goto lost;
  goto out;
lost:
  WARN("bootstrap rank %d of %d: the root at %s did not answer (%s); it rejected this rank (wrong "
       "unique id or nranks?) or exited; see the root's log",
       r, n, root, err == SOCK_SYSERR ? "malformed answer" : sock_err_str(err));
  res = ncclSystemError;
out:
  sock_close(&fd);
  return res;
}

ncclResult_t boot_socket_init(const struct boot_id* id, int rank, int nranks, struct boot** out) {
  struct boot_sock* b = NULL;
  ncclResult_t res = ncclSuccess;
  union sock_addr me, root_addr = id->root;
  char str[SOCK_ADDR_STRLEN];
  NCCLCHECK(sock_boot_alloc(rank, nranks, id->secret, &b));
  memcpy(b->base.key, id->key, sizeof b->base.key);
  NCCLCHECKGOTO(sock_iface_find(&me, NULL, 0), res, out);
  NCCLCHECKGOTO(sock_listen_open(&me, &b->listen_fd), res, out);
  if ((id->flags & BOOT_FLAG_COMM_ID) && rank == 0) {
    res = boot_root_start(&root_addr, id->secret, id->key, 0, &b->root);
    if (res != ncclSuccess) {
      char why[256];
      snprintf(why, sizeof why, "%s", log_last_error());
      WARN("NCCL_COMM_ID=%s: rank 0 cannot run the bootstrap root there (%s): it must name an "
           "address of rank 0's host and a port free on it",
           param_str(PARAM_COMM_ID), why);
      goto out;
    }
  }
  NCCLCHECKGOTO(rendezvous(b, id, &me), res, out);
  if (pthread_create(&b->progress, NULL, progress_main, b) != 0) {
    WARN("bootstrap rank %d: cannot start its progress thread; raise the thread limit", rank);
    res = ncclSystemError;
    goto out;
  }
  b->progress_started = 1;
  INFO(LOG_BOOTSTRAP, "bootstrap rank %d of %d: listening at %s, all ranks known", rank, nranks,
       sock_addr_to_str(&me, str, sizeof(str)));
  *out = &b->base;
  b = NULL;
out:
  if (b != NULL) sock_boot_free(&b->base);
  return res;
}
