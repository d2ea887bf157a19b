/* The watch (watch.h): a ring of TCP connections per comm, looked after by one thread per process.
 *
 * Wire: every message is a 16-byte header {magic, type, len, from} and len bytes.
 *   BEAT   every WATCH_BEAT_S on both connections (a silent connection for MONEL_PEER_TIMEOUT
 *          means the peer's host is gone)
 *   BYE    the peer destroyed its comm cleanly: its silence or EOF means nothing
 *   DEAD   {rank, pid, host, why}: a rank is gone; forwarded away from where it came, so it
 *          goes around the ring both ways and stops at the dead rank's neighbours
 *   HANG   {origin, key, stuck op, n states}: goes once around the ring (next direction), each
 *          rank filling its state; back at the origin it becomes
 *   REPORT the same, once more around the ring; every rank logs it once.
 * Ranks 0..n-1 are in rank order: the ring needs no topology, only a way around. */
#include "core/watch.h"
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "boot/boot.h"
#include "util/check.h"
#include "core/comm.h"
#include "util/param.h"
#include "core/watch_report.h"
#include "core/fingerprint.h"
#include "os/auth.h"
#include "os/socket.h"

#define WATCH_MAGIC     0x6d776174u /* "mwat" */
#define WATCH_BEAT_S    1.0
#define WATCH_POLL_MS   100
#define WATCH_CONNECT_S 30.0

enum { MSG_HELLO = 1, MSG_BEAT, MSG_BYE, MSG_DEAD, MSG_HANG, MSG_REPORT };
enum { IN = 0, OUT = 1 }; /* connection from the previous rank, to the next */

struct hdr {
  uint32_t magic, type, len, from;
};

struct dead_msg {
  int32_t rank, pid;
  char host[64];
  char why[160];
};

struct link {
  int fd;
  int peer;
  int bye;     /* the peer said goodbye */
  double seen; /* last time a byte came */
  char* buf;   /* bytes received, not yet a whole message */
  size_t len, cap;
};

struct watch {
  struct ncclComm* comm;
  struct watch* next;
  struct link link[2];
  double beat_sent;
  pthread_mutex_t lock; /* ops, ncoll, issued/done of engines that complete in run() */
  struct wop ops[WATCH_OPS];
  uint64_t nops, ncoll;
  uint64_t issued, done; /* engines without a progress hook */
  /* thread side */
  uint64_t last_done;
  double last_move;
  double pid_check;
  uint64_t hang_key_sent, hang_key_logged;
  struct fp* fp; /* mismatched calls (core/fingerprint.c); NULL when off */
  int dead;      /* atomic: a peer is gone (dead_text says who) */
  char dead_text[384];
};

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watch* list;
static pthread_t thread;
static int running;
static int* stop_flag; /* the running thread's own: a thread being joined never sees a new one's */

static void progress_of(struct watch* w, int fresh, uint64_t* issued, uint64_t* done) {
  struct ncclComm* comm = w->comm;
  if (comm->engine && comm->engine->progress) {
    comm->engine->progress(comm, fresh, issued, done);
    return;
  }
  pthread_mutex_lock(&w->lock);
  *issued = w->issued, *done = w->done;
  pthread_mutex_unlock(&w->lock);
}

/* The oldest operation after `done` (caller holds w->lock); NULL if none is recorded. */
static const struct wop* pending_op(struct watch* w, uint64_t done) {
  const struct wop* best = NULL;
  uint64_t first = w->nops > WATCH_OPS ? w->nops - WATCH_OPS : 0;
  for (uint64_t i = first; i < w->nops; i++) {
    const struct wop* o = &w->ops[i % WATCH_OPS];
    if (o->seq > done && (best == NULL || o->seq < best->seq)) best = o;
  }
  return best;
}

static const struct wop* op_at_coll(struct watch* w, uint64_t coll_index) {
  uint64_t first = w->nops > WATCH_OPS ? w->nops - WATCH_OPS : 0;
  for (uint64_t i = first; i < w->nops; i++) {
    const struct wop* o = &w->ops[i % WATCH_OPS];
    if (!wop_is_p2p(o) && o->coll_index == coll_index) return o;
  }
  return NULL;
}

/* ---- sending and receiving ------------------------------------------------------------------ */

static int send_msg(struct link* l, int type, int from, const void* body, uint32_t len) {
  if (l->fd < 0) return -1;
  struct hdr h = {WATCH_MAGIC, (uint32_t)type, len, (uint32_t)from};
  double deadline = sock_time_now() + 2.0;
  enum sock_err err;
  if (sock_send_all(l->fd, &h, sizeof h, deadline, NULL, &err) != ncclSuccess) return -1;
  if (len && sock_send_all(l->fd, body, len, deadline, NULL, &err) != ncclSuccess) return -1;
  return 0;
}

/* Reads what is there; returns -1 on EOF or error. */
static int pump(struct link* l) {
  for (;;) {
    if (l->cap - l->len < 4096) {
      size_t cap = l->cap ? 2 * l->cap : 8192;
      char* b = realloc(l->buf, cap);
      if (b == NULL) return -1;
      l->buf = b, l->cap = cap;
    }
    ssize_t r = recv(l->fd, l->buf + l->len, l->cap - l->len, MSG_DONTWAIT);
    if (r > 0) {
      l->len += (size_t)r;
      l->seen = sock_time_now();
      continue;
    }
    if (r == 0) return -1;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  }
}

static int fp_send(void* ctx, uint32_t type, const void* body, uint32_t len) {
  struct watch* w = ctx;
  return send_msg(&w->link[OUT], (int)type, w->comm->rank, body, len);
}

/* ---- a dead peer ---------------------------------------------------------------------------- */

static void tell_dead(struct watch* w, const struct dead_msg* d, int skip_dir) {
  for (int dir = 0; dir < 2; dir++)
    if (dir != skip_dir && w->link[dir].peer != d->rank)
      (void)send_msg(&w->link[dir], MSG_DEAD, w->comm->rank, d, sizeof *d);
}

/* The comm fails now if an operation waits; otherwise its next operation fails (watch_issue). */
static void fail_if_pending(struct watch* w) {
  struct ncclComm* comm = w->comm;
  uint64_t issued = 0, done = 0;
  progress_of(w, 1, &issued, &done);
  if (issued <= done || !comm->engine || !comm->engine->enqueue_only) return;
  char op[160] = "an operation";
  pthread_mutex_lock(&w->lock);
  const struct wop* o = pending_op(w, done);
  if (o) wop_describe(o, op, sizeof op);
  pthread_mutex_unlock(&w->lock);
  comm_fail(comm, ncclRemoteError, "%s; rank %d (host %s) was waiting in %s", w->dead_text,
            comm->rank, comm->peers[comm->rank].host, op);
}

static void peer_dead(struct watch* w, const struct dead_msg* d, int from_dir) {
  if (__atomic_load_n(&w->dead, __ATOMIC_ACQUIRE)) return;
  snprintf(w->dead_text, sizeof w->dead_text, "peer rank %d (host %s, pid %d) %s", d->rank, d->host,
           d->pid, d->why);
  __atomic_store_n(&w->dead, 1, __ATOMIC_RELEASE);
  tell_dead(w, d, from_dir);
  fail_if_pending(w);
}

static void found_dead(struct watch* w, int rank, const char* why) {
  struct dead_msg d;
  memset(&d, 0, sizeof d);
  const struct peer_info* p = &w->comm->peers[rank];
  d.rank = rank, d.pid = p->pid;
  snprintf(d.host, sizeof d.host, "%s", p->host);
  snprintf(d.why, sizeof d.why, "%s", why);
  peer_dead(w, &d, -1);
}

/* ---- hang reports --------------------------------------------------------------------------- */

static void fill_state(struct watch* w, struct wstate* st, uint64_t key_coll) {
  uint64_t issued = 0, done = 0;
  progress_of(w, 1, &issued, &done);
  memset(st, 0, sizeof *st);
  st->filled = 1;
  st->issued = issued, st->done = done;
  pthread_mutex_lock(&w->lock);
  st->ncoll = w->ncoll;
  const struct wop* o = key_coll ? op_at_coll(w, key_coll) : NULL;
  if (o) st->has_op = 1, st->op = *o;
  const struct wop* p = issued > done ? pending_op(w, done) : NULL;
  if (p) st->has_wait = 1, st->wait = *p;
  pthread_mutex_unlock(&w->lock);
}

static void log_report(struct watch* w, const struct hang_msg* m) {
  if (w->hang_key_logged == m->key) return;
  w->hang_key_logged = m->key;
  char text[1000];
  watch_report_text(w->comm, m, text, sizeof text);
  WARN("%s", text);
}

static void on_hang(struct watch* w, struct hang_msg* m, uint32_t len, int type) {
  struct ncclComm* comm = w->comm;
  if (len != hang_msg_bytes(comm->nranks) || m->nranks != comm->nranks) return;
  if (type == MSG_HANG) {
    if (m->origin == comm->rank) { /* around once: every state is in */
      log_report(w, m);
      (void)send_msg(&w->link[OUT], MSG_REPORT, comm->rank, m, len);
      return;
    }
    fill_state(w, &m->st[comm->rank], m->stuck.coll_index);
    (void)send_msg(&w->link[OUT], MSG_HANG, comm->rank, m, len);
  } else if (m->origin != comm->rank) {
    log_report(w, m);
    (void)send_msg(&w->link[OUT], MSG_REPORT, comm->rank, m, len);
  }
}

static void check_hang(struct watch* w, double now) {
  int64_t limit = param_int(PARAM_HANG_TIMEOUT);
  uint64_t issued = 0, done = 0;
  progress_of(w, 0, &issued, &done);
  if (issued <= done || done != w->last_done) {
    w->last_done = done, w->last_move = now;
    return;
  }
  if (limit <= 0 || now - w->last_move < (double)limit) return;
  struct ncclComm* comm = w->comm;
  size_t len = hang_msg_bytes(comm->nranks);
  struct hang_msg* m = calloc(1, len);
  if (m == NULL) return;
  pthread_mutex_lock(&w->lock);
  const struct wop* o = pending_op(w, done);
  if (o) m->stuck = *o;
  pthread_mutex_unlock(&w->lock);
  m->key = wop_is_p2p(&m->stuck) ? (m->stuck.seq << 20 | (uint64_t)comm->rank) << 1
                                 : m->stuck.coll_index << 1 | 1;
  if (o && m->key != w->hang_key_sent && m->key != w->hang_key_logged) {
    w->hang_key_sent = m->key;
    m->origin = comm->rank, m->nranks = comm->nranks;
    m->waited_s = (uint32_t)(now - w->last_move);
    fill_state(w, &m->st[comm->rank], wop_is_p2p(&m->stuck) ? 0 : m->stuck.coll_index);
    if (comm->nranks == 1) {
      log_report(w, m);
    } else {
      (void)send_msg(&w->link[OUT], MSG_HANG, comm->rank, m, (uint32_t)len);
    }
  }
  free(m);
}

/* ---- the thread ----------------------------------------------------------------------------- */

static void handle(struct watch* w, int dir, const struct hdr* h, void* body) {
  struct link* l = &w->link[dir];
  switch (h->type) {
  case MSG_BYE:
    l->bye = 1;
    break;
  case MSG_DEAD:
    if (h->len == sizeof(struct dead_msg)) peer_dead(w, body, dir);
    break;
  case MSG_HANG:
  case MSG_REPORT:
    on_hang(w, body, h->len, (int)h->type);
    break;
  default:
    fp_on_msg(w->fp, h->type, body, h->len, fp_send, w);
    break;
  }
}

static void service_link(struct watch* w, int dir, double now) {
  struct link* l = &w->link[dir];
  if (l->fd < 0) return;
  int gone = pump(l) < 0;
  size_t at = 0;
  while (l->len - at >= sizeof(struct hdr)) {
    struct hdr h;
    memcpy(&h, l->buf + at, sizeof h);
    if (h.magic != WATCH_MAGIC) {
      gone = 1;
      break;
    }
    if (l->len - at < sizeof h + h.len) break;
    handle(w, dir, &h, l->buf + at + sizeof h);
    at += sizeof h + h.len;
  }
  memmove(l->buf, l->buf + at, l->len - at);
  l->len -= at;
  if (gone) {
    sock_close(&l->fd);
    if (!l->bye)
      found_dead(w, l->peer,
                 "closed its connection without a goodbye: the process exited or was killed");
    return;
  }
  double limit = (double)param_int(PARAM_PEER_TIMEOUT);
  if (!l->bye && limit > 0 && now - l->seen > limit) {
    char why[160];
    snprintf(why, sizeof why,
             "sent nothing for %.0f s: its host is unreachable or the process is stopped",
             now - l->seen);
    sock_close(&l->fd);
    found_dead(w, l->peer, why);
  }
}

/* Peers of this host whose process is gone (a zombie still counts as alive: its connections
 * closed anyway). */
static void check_pids(struct watch* w) {
  struct ncclComm* comm = w->comm;
  const struct peer_info* me = &comm->peers[comm->rank];
  for (int r = 0; r < comm->nranks && !__atomic_load_n(&w->dead, __ATOMIC_ACQUIRE); r++) {
    const struct peer_info* p = &comm->peers[r];
    if (r == comm->rank || p->host_hash != me->host_hash || p->pid <= 0 || p->pid == me->pid)
      continue;
    if (kill(p->pid, 0) == -1 && errno == ESRCH)
      found_dead(w, r, "is no longer running (its pid is gone)");
  }
}

static void service(struct watch* w, double now) {
  if (comm_aborted(w->comm)) return;
  for (int dir = 0; dir < 2; dir++) service_link(w, dir, now);
  fp_service(w->fp, now, fp_send, w);
  /* A peer died while nothing waited: fail once something does (a kernel that started after the
   * news, a graph replay the enqueue path never sees). */
  if (__atomic_load_n(&w->dead, __ATOMIC_ACQUIRE) &&
      !__atomic_load_n(&w->comm->failed, __ATOMIC_ACQUIRE))
    fail_if_pending(w);
  if (now - w->beat_sent >= WATCH_BEAT_S) {
    w->beat_sent = now;
    for (int dir = 0; dir < 2; dir++)
      (void)send_msg(&w->link[dir], MSG_BEAT, w->comm->rank, NULL, 0);
  }
  if (now - w->pid_check >= WATCH_BEAT_S) {
    w->pid_check = now;
    check_pids(w);
  }
  check_hang(w, now);
}

static void* watch_main(void* arg) {
  int* stop = arg;
  struct pollfd fds[64];
  while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
    int nfds = 0;
    pthread_mutex_lock(&list_lock);
    for (struct watch* w = list; w && nfds < 62; w = w->next)
      for (int dir = 0; dir < 2; dir++)
        if (w->link[dir].fd >= 0) fds[nfds++] = (struct pollfd){w->link[dir].fd, POLLIN, 0};
    pthread_mutex_unlock(&list_lock);
    (void)poll(fds, (nfds_t)nfds, WATCH_POLL_MS);
    double now = sock_time_now();
    pthread_mutex_lock(&list_lock);
    for (struct watch* w = list; w; w = w->next) service(w, now);
    pthread_mutex_unlock(&list_lock);
  }
  free(stop);
  return NULL;
}

static void after_fork_child(void) {
  pthread_mutex_init(&list_lock, NULL);
  list = NULL; /* the parent's comms stay with the parent */
  running = 0;
  stop_flag = NULL;
}

static void register_fork_handler(void) {
  pthread_atfork(NULL, NULL, after_fork_child);
}

static ncclResult_t add_to_list(struct watch* w) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&list_lock);
  if (!running) {
    int* stop = calloc(1, sizeof *stop);
    int err = stop ? pthread_create(&thread, NULL, watch_main, stop) : ENOMEM;
    if (err != 0) {
      free(stop);
      WARN("could not start the thread that watches peers: %s", strerror(err));
      res = ncclSystemError;
      goto out;
    }
    stop_flag = stop;
    pthread_setname_np(thread, "monel-watch");
    running = 1;
  }
  w->next = list;
  list = w;
out:
  pthread_mutex_unlock(&list_lock);
  return res;
}

static void remove_from_list(struct watch* w) {
  pthread_mutex_lock(&list_lock);
  for (struct watch** p = &list; *p; p = &(*p)->next)
    if (*p == w) {
      *p = w->next;
      break;
    }
  int join = list == NULL && running;
  pthread_t th = thread;
  if (join) {
    __atomic_store_n(stop_flag, 1, __ATOMIC_RELEASE);
    running = 0;
  }
  pthread_mutex_unlock(&list_lock);
  if (join) pthread_join(th, NULL); /* it takes list_lock on its way out */
}

/* ---- setup ---------------------------------------------------------------------------------- */

struct hello {
  uint64_t comm_hash;
  int32_t rank, nranks;
};

static ncclResult_t connect_ring(struct watch* w) {
  struct ncclComm* comm = w->comm;
  int n = comm->nranks, me = comm->rank;
  ncclResult_t res = ncclSuccess;
  int lfd = -1;
  union sock_addr* addrs = NULL;
  char ifname[64];
  enum sock_err err = SOCK_OK;
  NCCLCALLOC(addrs, n);
  NCCLCHECKGOTO(sock_iface_find(&addrs[me], ifname, sizeof ifname), res, out);
  NCCLCHECKGOTO(sock_listen_open(&addrs[me], &lfd), res, out);
  NCCLCHECKGOTO(boot_allgather(comm->boot, addrs, sizeof *addrs), res, out);
  double deadline = sock_time_now() + WATCH_CONNECT_S;
  int next = (me + 1) % n, prev = (me + n - 1) % n;
  w->link[OUT].peer = next, w->link[IN].peer = prev;
  NCCLCHECKGOTO(sock_conn_open(&addrs[next], deadline, &comm->abort_flag, &w->link[OUT].fd, &err),
                res, out);
  /* The handshake (os/auth.h) in halves: every rank connects to the next and accepts from the
   * previous, so each finishes its client side only once it answered the previous rank. */
  const unsigned char* key = boot_key(comm->boot);
  const char* why = NULL;
  struct auth_cli cli;
  int client_done = 0;
  if (auth_client_start(w->link[OUT].fd, &cli, deadline, &comm->abort_flag, &why) != ncclSuccess)
    goto auth_fail;
  for (;;) {
    int fd = -1;
    struct auth_srv srv;
    if (auth_accept_half(lfd, key, deadline, &comm->abort_flag, "watch", &srv, &fd) !=
        ncclSuccess) {
      WARN("rank %d: rank %d did not connect its watch connection within %.0f s", me, prev,
           WATCH_CONNECT_S);
      res = ncclRemoteError;
      goto out;
    }
    if (!client_done) {
      struct hello hi = {comm->comm_hash, me, n};
      if (auth_client_finish(w->link[OUT].fd, &cli, key, deadline, &comm->abort_flag, &why) !=
          ncclSuccess) {
        sock_close(&fd);
        goto auth_fail;
      }
      res = sock_send_all(w->link[OUT].fd, &hi, sizeof hi, deadline, NULL, &err);
      if (res != ncclSuccess) sock_close(&fd);
      if (res != ncclSuccess) goto out;
      client_done = 1;
    }
    double hs =
        sock_time_now() + AUTH_STRANGER_S < deadline ? sock_time_now() + AUTH_STRANGER_S : deadline;
    if (auth_server_finish(fd, &srv, key, hs, &comm->abort_flag, &why) != ncclSuccess) {
      auth_stranger("watch", fd, why);
      sock_close(&fd);
      continue;
    }
    struct hello got;
    if (sock_recv_all(fd, &got, sizeof got, hs, NULL, &err) == ncclSuccess &&
        got.comm_hash == comm->comm_hash && got.rank == prev && got.nranks == n) {
      w->link[IN].fd = fd;
      break;
    }
    err = SOCK_OK;
    sock_close(&fd); /* not the previous rank of this comm: keep listening */
  }
  double now = sock_time_now();
  w->link[IN].seen = w->link[OUT].seen = now;
  goto out;
auth_fail:
  WARN("rank %d: rank %d's watch port failed the handshake: %s", me, next, why);
  res = ncclRemoteError;
out:
  if (res != ncclSuccess && err != SOCK_OK)
    WARN("rank %d: could not set up its watch connections to ranks %d and %d: %s", me, (me + 1) % n,
         (me + n - 1) % n, sock_err_str(err));
  sock_close(&lfd);
  free(addrs);
  return res;
}

ncclResult_t watch_start(struct ncclComm* comm) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, register_fork_handler);
  struct watch* w = NULL;
  NCCLCALLOC(w, 1);
  w->comm = comm;
  w->link[IN].fd = w->link[OUT].fd = -1;
  pthread_mutex_init(&w->lock, NULL);
  ncclResult_t res = ncclSuccess;
  if (comm->nranks > 1) NCCLCHECKGOTO(connect_ring(w), res, fail);
  w->fp = fp_create(comm);
  w->last_move = w->beat_sent = w->pid_check = sock_time_now();
  comm->watch = w;
  NCCLCHECKGOTO(add_to_list(w), res, fail);
  return ncclSuccess;
fail:
  comm->watch = NULL;
  fp_free(w->fp);
  for (int dir = 0; dir < 2; dir++) sock_close(&w->link[dir].fd);
  pthread_mutex_destroy(&w->lock);
  free(w);
  return res;
}

void watch_stop(struct ncclComm* comm) {
  struct watch* w = comm->watch;
  if (w == NULL) return;
  remove_from_list(w);
  int clean = !comm_aborted(comm) && !__atomic_load_n(&comm->failed, __ATOMIC_ACQUIRE);
  struct dead_msg d;
  memset(&d, 0, sizeof d);
  d.rank = comm->rank, d.pid = comm->peers ? comm->peers[comm->rank].pid : 0;
  if (comm->peers) snprintf(d.host, sizeof d.host, "%s", comm->peers[comm->rank].host);
  snprintf(d.why, sizeof d.why, "%s", comm_aborted(comm) ? "aborted its communicator" : "failed");
  for (int dir = 0; dir < 2; dir++) {
    if (clean)
      (void)send_msg(&w->link[dir], MSG_BYE, comm->rank, NULL, 0);
    else
      (void)send_msg(&w->link[dir], MSG_DEAD, comm->rank, &d, sizeof d);
    sock_close(&w->link[dir].fd);
    free(w->link[dir].buf);
  }
  fp_free(w->fp);
  pthread_mutex_destroy(&w->lock);
  free(w);
  comm->watch = NULL;
}

static int reduces_op(enum coll_kind c) {
  return c == COLL_ALLREDUCE || c == COLL_REDUCE || c == COLL_REDUCESCATTER;
}

ncclResult_t watch_issue(struct ncclComm* comm, const struct task* tasks, int ntasks) {
  struct watch* w = comm->watch;
  if (w == NULL || ntasks == 0) return ncclSuccess;
  pthread_mutex_lock(&w->lock);
  for (int i = 0; i < ntasks; i++) {
    const struct task* t = &tasks[i];
    struct wop* o = &w->ops[w->nops++ % WATCH_OPS];
    int p2p = t->coll == COLL_SEND || t->coll == COLL_RECV;
    if (!p2p) w->ncoll++;
    *o = (struct wop){t->seq,
                      w->ncoll,
                      t->count,
                      (int32_t)t->coll,
                      (int32_t)t->dtype,
                      reduces_op(t->coll) ? t->op.kind : -1,
                      t->root,
                      p2p,
                      0};
    if (t->seq > w->issued) w->issued = t->seq;
    fp_issue(w->fp, t);
  }
  pthread_mutex_unlock(&w->lock);
  /* The CPU engine finds dead peers itself while it waits. */
  if (!__atomic_load_n(&w->dead, __ATOMIC_ACQUIRE) || !comm->engine->enqueue_only)
    return ncclSuccess;
  char op[160];
  wop_describe(&w->ops[(w->nops - 1) % WATCH_OPS], op, sizeof op);
  comm_fail(comm, ncclRemoteError, "%s; rank %d (host %s) called %s after that", w->dead_text,
            comm->rank, comm->peers[comm->rank].host, op);
  return ncclRemoteError;
}

void watch_complete(struct ncclComm* comm) {
  struct watch* w = comm->watch;
  if (w == NULL) return;
  pthread_mutex_lock(&w->lock);
  w->done = w->issued;
  pthread_mutex_unlock(&w->lock);
}
