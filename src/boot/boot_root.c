/* SPDX-License-Identifier: BSD-3-Clause */
/* The bootstrap root: a thread that listens at the id's address, collects one hello per rank
 * (checking magic, secret, rank and size), and sends every rank the table of all ranks' listening
 * addresses. Hellos are read from all new connections at once (non-blocking), so a rank that is
 * slow to speak after connecting (a loaded machine) neither stalls the others nor is dropped; a
 * connection that stays silent for BOOT_HELLO_WAIT_S is dropped, and so is the unfinished one that
 * sent the fewest bytes when PENDING_MAX are being read (os/pending.h: idle strangers cannot keep a
 * rank out). Bad connections are dropped with a WARN and the root keeps serving. When
 * MONEL_BOOT_TIMEOUT passes first it tells the waiting ranks which ranks never arrived. Either way
 * the thread exits after one job. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include "boot/boot_impl.h"
#include "os/pending.h"
#include "util/check.h"
#include "util/log.h"
#include "util/param.h"

/* Connections whose handshake and hello are read at once; when more come, the oldest of them is
 * dropped (os/pending.h), so idle strangers cannot keep a rank out. */
#define PENDING_MAX 64

/* What a rank sends the root once it proved the key: a length word, then its hello. */
#define ROOT_MSG_BYTES (sizeof(uint32_t) + sizeof(struct boot_hello))
_Static_assert(ROOT_MSG_BYTES <= PEND_HELLO_MAX, "a rank's message fits a pending entry");

struct boot_root {
  struct boot_root* next; /* registry */
  pid_t pid;
  uint64_t secret;
  unsigned char key[AUTH_KEY_BYTES];
  int listen_fd;
  union sock_addr addr;
  int64_t timeout;
  int nranks; /* 0 until the first valid hello */
  int arrived;
  /* The ranks that arrived, in arrival order, and an open-addressing set of their ranks (slot:
   * index into arrivals + 1, 0 when empty). Both grow with the connections that came, never with
   * the rank count a hello names, so a hello cannot make the root allocate for ranks that do not
   * exist; the table of every rank's address is built once all of them are here. */
  struct arrival {
    int rank;
    int fd;
    union sock_addr addr;
  } * arrivals;
  int* slots;
  int nslots; /* a power of two, at least twice arrived; 0 before the first */
  pthread_t thread;
  atomic_int done;
};

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static struct boot_root* registry;

static void root_free(struct boot_root* r) {
  if (r == NULL) return;
  sock_close(&r->listen_fd);
  for (int i = 0; i < r->arrived; i++) sock_close(&r->arrivals[i].fd);
  free(r->arrivals);
  free(r->slots);
  free(r);
}

static int slot_of(const struct boot_root* r, int rank) {
  unsigned mask = (unsigned)r->nslots - 1, i = ((unsigned)rank * 2654435761u) & mask;
  while (r->slots[i] != 0 && r->arrivals[r->slots[i] - 1].rank != rank) i = (i + 1) & mask;
  return (int)i;
}

static int has_arrived(const struct boot_root* r, int rank) {
  return r->nslots != 0 && r->slots[slot_of(r, rank)] != 0;
}

/* Room for one more arrival (the list doubles, the set stays at most half full); 0 on success. */
static int arrival_room(struct boot_root* r) {
  if ((r->arrived & (r->arrived - 1)) == 0) { /* 0, 1, 2, 4, ...: the list is full */
    size_t cap = r->arrived ? 2 * (size_t)r->arrived : 1;
    struct arrival* a = realloc(r->arrivals, cap * sizeof(*a));
    if (a == NULL) return -1;
    r->arrivals = a;
  }
  if (2 * (r->arrived + 1) > r->nslots) {
    int n = r->nslots ? 2 * r->nslots : 8;
    int* old = r->slots;
    r->slots = calloc((size_t)n, sizeof(int));
    if (r->slots == NULL) {
      r->slots = old;
      return -1;
    }
    r->nslots = n;
    for (int i = 0; i < r->arrived; i++) r->slots[slot_of(r, r->arrivals[i].rank)] = i + 1;
    free(old);
  }
  return 0;
}

static int by_rank(const void* a, const void* b) {
  int x = ((const struct arrival*)a)->rank, y = ((const struct arrival*)b)->rank;
  return (x > y) - (x < y);
}

/* Validate a hello; returns a reason to drop the connection, or NULL to accept it. The secret is
 * checked first: only a rank of this job (it holds the unique id) is kept. The rank count it names
 * bounds no allocation: the root's tables grow with the ranks that arrive. */
static const char* hello_check(struct boot_root* r, const struct boot_hello* h, char* why,
                               size_t n) {
  if (h->magic != BOOT_MAGIC_TCP) return "it is not a Monel bootstrap peer (bad magic)";
  if (h->secret != r->secret)
    return "it presented a wrong secret (a rank of another job, or a stale unique id)";
  if (h->nranks < 1 || h->rank < 0 || h->rank >= h->nranks) {
    snprintf(why, n, "it presented rank %d of %d", h->rank, h->nranks);
    return why;
  }
  if (r->nranks != 0 && h->nranks != r->nranks) {
    snprintf(why, n, "rank %d says nranks %d but the job has %d", h->rank, h->nranks, r->nranks);
    return why;
  }
  if (has_arrived(r, h->rank)) {
    snprintf(why, n, "rank %d arrived twice", h->rank);
    return why;
  }
  if (h->addr.sa.sa_family != AF_INET && h->addr.sa.sa_family != AF_INET6)
    return "its listening address is malformed";
  return NULL;
}

static void drop(struct boot_root* r, int fd, const char* bad) {
  char from[SOCK_ADDR_STRLEN], me[SOCK_ADDR_STRLEN];
  union sock_addr peer;
  socklen_t plen = sizeof(peer);
  memset(&peer, 0, sizeof(peer));
  getpeername(fd, &peer.sa, &plen);
  WARN("bootstrap root %s: dropped a connection from %s: %s; check that every rank got the same "
       "unique id and that nothing else connects to this port",
       sock_addr_to_str(&r->addr, me, sizeof(me)), sock_addr_to_str(&peer, from, sizeof(from)),
       bad);
  close(fd);
}

/* A complete hello arrived on fd: keep the connection as that rank's, or drop it with a WARN. */
static ncclResult_t take_hello(struct boot_root* r, int fd, const struct boot_hello* h) {
  char why[128];
  const char* bad = hello_check(r, h, why, sizeof(why));
  if (bad != NULL) {
    drop(r, fd, bad);
    return ncclSuccess;
  }
  if (arrival_room(r) != 0) {
    WARN("bootstrap root: out of host memory after %d ranks arrived", r->arrived);
    close(fd);
    return ncclSystemError;
  }
  r->nranks = h->nranks;
  r->arrivals[r->arrived] = (struct arrival){.rank = h->rank, .fd = fd, .addr = h->addr};
  r->slots[slot_of(r, h->rank)] = r->arrived + 1;
  r->arrived++;
  INFO(LOG_BOOTSTRAP, "bootstrap root: rank %d of %d arrived (%d/%d)", h->rank, h->nranks,
       r->arrived, h->nranks);
  return ncclSuccess;
}

/* A connection that proved the key and sent its message: keep it as its rank's or drop it.
 * -1 when the root must stop (out of memory). */
static int take_msg(struct boot_root* r, int fd, const unsigned char* bytes) {
  char why[96];
  uint32_t len;
  struct boot_hello h;
  memcpy(&len, bytes, sizeof len);
  memcpy(&h, bytes + sizeof len, sizeof h);
  if (len != sizeof h) {
    snprintf(why, sizeof(why), "it sent a %u-byte message where %zu were expected", len, sizeof h);
    drop(r, fd, why);
    return 0;
  }
  return take_hello(r, fd, &h) == ncclSuccess ? 0 : -1;
}

/* Answer every rank that arrived; with BOOT_REPLY_OK (every rank is here, the arrivals sorted by
 * rank) the answer carries the table of all ranks' addresses. */
static void answer_all(struct boot_root* r, uint32_t status, const char* text) {
  struct boot_reply rep = {
      .magic = BOOT_MAGIC_TCP, .status = status, .nranks = (uint32_t)r->nranks};
  union sock_addr* addrs = NULL;
  enum sock_err err;
  rep.text_len = text ? (uint32_t)strlen(text) : 0;
  if (status == BOOT_REPLY_OK) {
    addrs = malloc(sizeof(*addrs) * (size_t)r->nranks);
    if (addrs == NULL) {
      WARN("bootstrap root: out of host memory for the table of %d ranks", r->nranks);
      return; /* the ranks see their connection close */
    }
    for (int i = 0; i < r->nranks; i++) addrs[i] = r->arrivals[i].addr;
  }
  for (int i = 0; i < r->arrived; i++) {
    int fd = r->arrivals[i].fd;
    double dl = sock_time_now() + 10.0;
    if (sock_send_all(fd, &rep, sizeof(rep), dl, NULL, &err) != ncclSuccess) goto lost;
    if (addrs != NULL &&
        sock_send_all(fd, addrs, sizeof(*addrs) * (size_t)r->nranks, dl, NULL, &err) != ncclSuccess)
      goto lost;
    if (text != NULL && sock_send_all(fd, text, rep.text_len, dl, NULL, &err) != ncclSuccess)
      goto lost;
    continue;
  lost:
    INFO(LOG_BOOTSTRAP, "bootstrap root: could not answer rank %d: %s", r->arrivals[i].rank,
         sock_err_str(err));
  }
  free(addrs);
}

static void report_timeout(struct boot_root* r) {
  char text[BOOT_REPLY_TEXT_MAX], me[SOCK_ADDR_STRLEN];
  size_t used = 0;
  sock_addr_to_str(&r->addr, me, sizeof(me));
  if (r->nranks == 0) {
    INFO(LOG_BOOTSTRAP, "bootstrap root %s: no rank arrived within %lld s; the root exits", me,
         (long long)r->timeout);
    return;
  }
  text[0] = '\0';
  qsort(r->arrivals, (size_t)r->arrived, sizeof(*r->arrivals), by_rank);
  /* the missing ranks are the gaps between the sorted arrivals */
  int64_t next = 0; /* 64 bits: the rank after the last may be INT_MAX + 1 */
  for (int a = 0; next < r->nranks && used + 16 < sizeof(text); a++) {
    int64_t upto = a < r->arrived ? r->arrivals[a].rank : r->nranks;
    for (int64_t i = next; i < upto && used + 16 < sizeof(text); i++)
      used += (size_t)snprintf(text + used, sizeof(text) - used, "%s%lld", used ? " " : "",
                               (long long)i);
    next = upto + 1;
  }
  WARN("bootstrap root %s: rendezvous timed out after %lld s: rank(s) %s of %d never arrived; "
       "start every rank or raise MONEL_BOOT_TIMEOUT",
       me, (long long)r->timeout, text, r->nranks);
  answer_all(r, BOOT_REPLY_TIMEOUT, text);
}

static void* root_main(void* arg) {
  struct boot_root* r = arg;
  struct pend pend[PENDING_MAX];
  struct pend_set ps = {.p = pend,
                        .max = PENDING_MAX,
                        .want = ROOT_MSG_BYTES,
                        .limit_s = BOOT_HELLO_WAIT_S,
                        .key = r->key,
                        .where = "bootstrap root"};
  struct pollfd fds[1 + PENDING_MAX];
  int stop = 0;
  double deadline = sock_time_now() + (double)r->timeout;
  while (!stop && (r->nranks == 0 || r->arrived < r->nranks)) {
    double left = deadline - sock_time_now();
    if (left <= 0) break;
    fds[0] = (struct pollfd){.fd = r->listen_fd, .events = POLLIN};
    for (int i = 0; i < ps.n; i++) fds[1 + i] = (struct pollfd){.fd = pend[i].fd, .events = POLLIN};
    if (poll(fds, (nfds_t)(1 + ps.n), left > 1.0 ? 1000 : (int)(left * 1000) + 1) < 0) continue;
    int before = r->arrived;
    pend_accept(&ps, r->listen_fd);
    pend_progress(&ps);
    for (int i = 0; i < ps.n && !stop; i++) {
      if (!pend_complete(&ps, &pend[i])) continue;
      int fd = pend[i].fd;
      unsigned char bytes[ROOT_MSG_BYTES];
      memcpy(bytes, pend[i].hello, sizeof bytes);
      pend_remove(&ps, i--, 1);
      stop = take_msg(r, fd, bytes) < 0; /* its fd is kept or closed */
    }
    /* the clock of the job starts when its first rank arrives */
    if (before == 0 && r->arrived >= 1) deadline = sock_time_now() + (double)r->timeout;
  }
  pend_close_all(&ps);
  if (r->nranks != 0 && r->arrived == r->nranks) {
    qsort(r->arrivals, (size_t)r->arrived, sizeof(*r->arrivals), by_rank);
    answer_all(r, BOOT_REPLY_OK, NULL);
    INFO(LOG_BOOTSTRAP, "bootstrap root: all %d ranks arrived; the root exits", r->nranks);
  } else {
    report_timeout(r);
  }
  sock_close(&r->listen_fd);
  for (int i = 0; i < r->arrived; i++) sock_close(&r->arrivals[i].fd);
  atomic_store(&r->done, 1);
  return NULL;
}

ncclResult_t boot_root_start(union sock_addr* addr, uint64_t secret,
                             const unsigned char key[AUTH_KEY_BYTES], int registered,
                             struct boot_root** out) {
  ncclResult_t res = ncclSuccess;
  struct boot_root* r = calloc(1, sizeof(*r));
  if (r == NULL) {
    WARN("bootstrap root: out of host memory");
    return ncclSystemError;
  }
  r->listen_fd = -1;
  r->pid = getpid();
  r->secret = secret;
  memcpy(r->key, key, sizeof r->key);
  r->timeout = param_int(PARAM_BOOT_TIMEOUT);
  NCCLCHECKGOTO(sock_listen_open(addr, &r->listen_fd), res, out);
  SYSCHECKGOTO(sock_nonblock(r->listen_fd), "fcntl(O_NONBLOCK)", res, out);
  r->addr = *addr;
  if (pthread_create(&r->thread, NULL, root_main, r) != 0) {
    WARN("bootstrap root: cannot start its thread; raise the process's thread limit");
    res = ncclSystemError;
    goto out;
  }
  if (registered) {
    pthread_mutex_lock(&registry_mu);
    r->next = registry;
    registry = r;
    pthread_mutex_unlock(&registry_mu);
  }
  *out = r;
  r = NULL;
out:
  root_free(r);
  return res;
}

void boot_root_join(struct boot_root* root) {
  if (root == NULL) return;
  pthread_join(root->thread, NULL);
  root_free(root);
}

/* Unlink the registered roots of this process selected by (secret or done), then join them. */
static void release_where(int by_secret, uint64_t secret) {
  struct boot_root* taken = NULL;
  pid_t me = getpid();
  pthread_mutex_lock(&registry_mu);
  for (struct boot_root** pp = &registry; *pp != NULL;) {
    struct boot_root* r = *pp;
    int pick = r->pid == me && (by_secret ? r->secret == secret : atomic_load(&r->done));
    if (r->pid != me) { /* inherited through fork: the thread does not exist here */
      *pp = r->next;
      continue;
    }
    if (pick) {
      *pp = r->next;
      r->next = taken;
      taken = r;
    } else {
      pp = &r->next;
    }
  }
  pthread_mutex_unlock(&registry_mu);
  while (taken != NULL) {
    struct boot_root* nx = taken->next;
    boot_root_join(taken);
    taken = nx;
  }
}

void boot_root_release(uint64_t secret) {
  release_where(1, secret);
}
void boot_root_reap(void) {
  release_where(0, 0);
}
