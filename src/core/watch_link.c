/* SPDX-License-Identifier: BSD-3-Clause */
/* The watch's connections (watch_impl.h): a TCP connection to the next and from the previous
 * rank of every comm, the messages on them, and the one thread per process that serves them all.
 * What the messages mean is watch.c's. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "boot/boot.h"
#include "util/check.h"
#include "util/param.h"
#include "core/comm.h"
#include "core/watch_impl.h"
#include "os/auth.h"
#include "os/pending.h"
#include "os/socket.h"

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watch* list;
static pthread_t thread;
static int running;
static int* stop_flag; /* the running thread's own: a thread being joined never sees a new one's */

/* ---- sending and receiving ------------------------------------------------------------------ */

int watch_send(struct watch_link* l, int type, int from, const void* body, uint32_t len) {
  if (l->fd < 0) return -1;
  struct watch_hdr h = {WATCH_MAGIC, (uint32_t)type, len, (uint32_t)from};
  double deadline = sock_time_now() + 2.0;
  enum sock_err err;
  if (sock_send_all(l->fd, &h, sizeof h, deadline, NULL, &err) != ncclSuccess) return -1;
  if (len && sock_send_all(l->fd, body, len, deadline, NULL, &err) != ncclSuccess) return -1;
  return 0;
}

size_t watch_body_max(const struct watch* w) {
  size_t hang = hang_msg_bytes(w->comm->nranks);
  return hang > WATCH_BODY_MAX ? hang : WATCH_BODY_MAX;
}

/* Reads what is there, holding at most `most` bytes (the rest waits in the socket until the
 * messages before it are handled); returns -1 on EOF or error. */
static int pump(struct watch_link* l, size_t most) {
  while (l->len < most) {
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
  return 0;
}

/* Hands a message to watch.c with its body 8-byte aligned (a body after one of odd length is
 * not: it is copied). */
static void handle_aligned(struct watch* w, int dir, const struct watch_hdr* h, char* body) {
  if (((uintptr_t)body & 7) == 0) {
    watch_handle(w, dir, h, body);
    return;
  }
  void* copy = malloc(h->len ? h->len : 1);
  if (copy == NULL) return; /* a message dropped: the watch goes on */
  memcpy(copy, body, h->len);
  watch_handle(w, dir, h, copy);
  free(copy);
}

void watch_link_service(struct watch* w, int dir, double now) {
  struct watch_link* l = &w->link[dir];
  if (l->fd < 0) return;
  size_t most = sizeof(struct watch_hdr) + watch_body_max(w);
  int gone = pump(l, most) < 0;
  size_t at = 0;
  while (l->len - at >= sizeof(struct watch_hdr)) {
    struct watch_hdr h;
    memcpy(&h, l->buf + at, sizeof h);
    if (h.magic != WATCH_MAGIC || h.len > most - sizeof h) {
      gone = 1;
      break;
    }
    if (l->len - at < sizeof h + h.len) break;
    handle_aligned(w, dir, &h, l->buf + at + sizeof h);
    at += sizeof h + h.len;
  }
  memmove(l->buf, l->buf + at, l->len - at);
  l->len -= at;
  if (gone) {
    sock_close(&l->fd);
    if (!l->bye)
      watch_found_dead(w, l->peer,
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
    watch_found_dead(w, l->peer, why);
  }
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
    for (struct watch* w = list; w; w = w->next) watch_service(w, now);
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

ncclResult_t watch_thread_add(struct watch* w) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, register_fork_handler);
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

void watch_thread_remove(struct watch* w) {
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

/* Connections to the watch port whose handshake or hello is still arriving: strangers too. */
#define WATCH_PENDING_MAX 64
_Static_assert(sizeof(struct hello) <= PEND_HELLO_MAX, "a watch hello fits a pending entry");

/* This rank's side of its connection to the next rank, stepped without blocking: the handshake,
 * then the hello. 0 when all is out, 1 while more is to move, -1 on failure (*why set). */
static int out_step(struct auth_cli* c, int fd, const unsigned char* key, const struct hello* hi,
                    size_t* sent, const char** why) {
  int r = auth_cli_step(c, fd, key, why);
  while (r == 0 && *sent < sizeof *hi) {
    ssize_t k = send(fd, (const char*)hi + *sent, sizeof *hi - *sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k > 0) {
      *sent += (size_t)k;
    } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return 1;
    } else if (!(k < 0 && errno == EINTR)) {
      *why = k < 0 ? strerror(errno) : "the connection closed";
      return -1;
    }
  }
  return r;
}

/* The previous rank's connection among the complete pending ones (its fd, taken), or -1; the
 * others, ranks of the job that are not the previous one of this comm, are closed. */
static int in_take(struct pend_set* ps, const struct ncclComm* comm, int prev) {
  for (int i = 0; i < ps->n; i++) {
    if (!pend_complete(ps, &ps->p[i])) continue;
    struct hello got;
    memcpy(&got, ps->p[i].hello, sizeof got);
    int fd = ps->p[i].fd;
    int ok = got.comm_hash == comm->comm_hash && got.rank == prev && got.nranks == comm->nranks;
    pend_remove(ps, i--, ok);
    if (ok) return fd;
  }
  return -1;
}

/* Every rank connects to the next and accepts from the previous, at once: this rank's own
 * handshake and hello go out while the listener serves whoever connected (strangers included,
 * each closed and logged), until the previous rank proved the key and said hello. */
static ncclResult_t ring_link(struct watch* w, int lfd, double deadline, const char** why) {
  struct ncclComm* comm = w->comm;
  struct pend tab[WATCH_PENDING_MAX];
  struct pend_set ps = {.p = tab,
                        .max = WATCH_PENDING_MAX,
                        .want = sizeof(struct hello),
                        .limit_s = AUTH_STRANGER_S,
                        .key = boot_key(comm->boot),
                        .where = "watch"};
  struct hello hi = {comm->comm_hash, comm->rank, comm->nranks};
  struct auth_cli cli;
  size_t sent = 0;
  int out = 1, in = -1, ofd = w->link[OUT].fd;
  memset(&cli, 0, sizeof cli);
  for (;;) {
    if (out == 1) out = out_step(&cli, ofd, ps.key, &hi, &sent, why);
    if (out < 0) break;
    pend_accept(&ps, lfd);
    pend_progress(&ps);
    if (in < 0) in = in_take(&ps, comm, w->link[IN].peer);
    if (out == 0 && in >= 0) break;
    if (sock_time_now() > deadline || __atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE)) break;
    struct pollfd fds[2 + WATCH_PENDING_MAX];
    int nfds = 0;
    fds[nfds++] = (struct pollfd){in < 0 ? lfd : -1, POLLIN, 0};
    fds[nfds++] = (struct pollfd){out == 1 ? ofd : -1, cli.stage == 1 ? POLLIN : POLLOUT, 0};
    for (int i = 0; i < ps.n; i++)
      if (!pend_complete(&ps, &ps.p[i])) fds[nfds++] = (struct pollfd){ps.p[i].fd, POLLIN, 0};
    (void)poll(fds, (nfds_t)nfds, 100);
  }
  pend_close_all(&ps);
  w->link[IN].fd = in;
  if (out == 0 && in >= 0) return ncclSuccess;
  if (out == 1) *why = "it did not answer in time";
  if (in < 0 && out >= 0)
    WARN("rank %d: rank %d did not connect its watch connection within %.0f s", comm->rank,
         w->link[IN].peer, WATCH_CONNECT_S);
  return ncclRemoteError;
}

ncclResult_t watch_connect(struct watch* w) {
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
  SYSCHECKGOTO(sock_nonblock(lfd), "fcntl(O_NONBLOCK)", res, out);
  NCCLCHECKGOTO(boot_allgather(comm->boot, addrs, sizeof *addrs), res, out);
  double deadline = sock_time_now() + WATCH_CONNECT_S;
  int next = (me + 1) % n, prev = (me + n - 1) % n;
  w->link[OUT].peer = next, w->link[IN].peer = prev;
  NCCLCHECKGOTO(sock_conn_open(&addrs[next], deadline, &comm->abort_flag, &w->link[OUT].fd, &err),
                res, out);
  const char* why = NULL;
  res = ring_link(w, lfd, deadline, &why);
  if (res != ncclSuccess && why != NULL)
    WARN("rank %d: rank %d's watch port failed the handshake: %s", me, next, why);
  if (res != ncclSuccess) goto out;
  double now = sock_time_now();
  w->link[IN].seen = w->link[OUT].seen = now;
out:
  if (res != ncclSuccess && err != SOCK_OK)
    WARN("rank %d: could not set up its watch connections to ranks %d and %d: %s", me, (me + 1) % n,
         (me + n - 1) % n, sock_err_str(err));
  sock_close(&lfd);
  free(addrs);
  return res;
}
