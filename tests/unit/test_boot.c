/* SPDX-License-Identifier: BSD-3-Clause */
/* Bootstrap tests: TCP rendezvous (threads and processes), NCCL_COMM_ID on IPv4 and IPv6, bad
 * connections to the root, rendezvous timeout, dead peers (with and without a connection, and
 * a peer that exits right after sending), abort, and the in-process bootstrap. */
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "boot/boot.h"
#include "boot/boot_impl.h"
#include "util/log.h"
#include "util/param.h"
#include "os/auth.h"
#include "os/socket.h"
#include "harness.h"

#define BIG (5u << 20)

/* The common workload; returns 0 when every check passed, else the failing line. */
static int workload(struct boot* b) {
  int r = boot_rank(b), n = boot_nranks(b), next = (r + 1) % n, prev = (r + n - 1) % n;
  uint64_t* ag = calloc((size_t)n, sizeof(*ag));
  unsigned char* big = malloc(BIG);
  int fail = 0;
  if (ag == NULL || big == NULL) return __LINE__;
  for (int round = 0; round < 3 && !fail; round++) {
    ag[r] = (uint64_t)r * 1000003u + (uint64_t)round;
    if (boot_allgather(b, ag, sizeof(*ag)) != ncclSuccess) fail = __LINE__;
    for (int i = 0; i < n && !fail; i++)
      if (ag[i] != (uint64_t)i * 1000003u + (uint64_t)round) fail = __LINE__;
  }
  if (!fail && boot_barrier(b) != ncclSuccess) fail = __LINE__;
  /* tags sent 1,2,3 and received 3,1,2 */
  for (int t = 1; t <= 3 && !fail; t++) {
    int v = r * 10 + t;
    if (boot_send(b, next, t, &v, sizeof(v)) != ncclSuccess) fail = __LINE__;
  }
  int order[3] = {3, 1, 2};
  for (int k = 0; k < 3 && !fail; k++) {
    int v = -1;
    if (boot_recv(b, prev, order[k], &v, sizeof(v)) != ncclSuccess || v != prev * 10 + order[k])
      fail = __LINE__;
  }
  for (size_t i = 0; i < BIG; i++) big[i] = (unsigned char)(i * 7 + (size_t)r);
  if (!fail && boot_send(b, next, 99, big, BIG) != ncclSuccess) fail = __LINE__;
  memset(big, 0, BIG);
  if (!fail && boot_recv(b, prev, 99, big, BIG) != ncclSuccess) fail = __LINE__;
  for (size_t i = 0; i < BIG && !fail; i++)
    if (big[i] != (unsigned char)(i * 7 + (size_t)prev)) fail = __LINE__;
  if (!fail && boot_barrier(b) != ncclSuccess) fail = __LINE__;
  free(ag);
  free(big);
  return fail;
}

struct rank_arg {
  ncclUniqueId id;
  int rank, nranks;
  int init_res;
  int fail;
  char err[512];
};

static void* rank_main(void* p) {
  struct rank_arg* a = p;
  struct boot* b = NULL;
  a->init_res = boot_init(&a->id, a->rank, a->nranks, &b);
  if (a->init_res != ncclSuccess) {
    snprintf(a->err, sizeof(a->err), "%s", log_last_error() ? log_last_error() : "");
    return NULL;
  }
  a->fail = workload(b);
  boot_free(b);
  return NULL;
}

/* Run ranks [0, started) of an nranks job as threads; every result lands in args. */
static void run_threads(const ncclUniqueId* id, int nranks, int started, struct rank_arg* args) {
  pthread_t t[16];
  for (int i = 0; i < started; i++) {
    memset(&args[i], 0, sizeof(args[i]));
    args[i].id = *id, args[i].rank = i, args[i].nranks = nranks;
    CHECK(pthread_create(&t[i], NULL, rank_main, &args[i]) == 0);
  }
  for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
}

static void job_threads(const ncclUniqueId* id, int nranks) {
  struct rank_arg args[16];
  run_threads(id, nranks, nranks, args);
  for (int i = 0; i < nranks; i++) {
    if (args[i].init_res != ncclSuccess) fprintf(stderr, "rank %d: %s\n", i, args[i].err);
    CHECK_EQ(args[i].init_res, ncclSuccess);
    CHECK_EQ(args[i].fail, 0);
  }
}

static void tcp_threads(int nranks) {
  ncclUniqueId id;
  CHECK_RES(boot_id_create(&id), ncclSuccess);
  CHECK(!boot_id_is_local(&id));
  job_threads(&id, nranks);
}

TEST(tcp_threads_1) {
  tcp_threads(1);
}
TEST(tcp_threads_2) {
  tcp_threads(2);
}
TEST(tcp_threads_5) {
  tcp_threads(5);
}
TEST(tcp_threads_8) {
  tcp_threads(8);
}

/* Fork nranks rank processes, then make a TCP id and hand it to them through pipes. The forks
 * come first because the id starts the root thread here: a child forked from a multi-threaded
 * process can inherit a lock held by another thread (malloc, sanitizer runtimes) and hang. Each
 * child runs body(b) on its bootstrap and exits with its result (100: init failed). */
static void fork_ranks(int nranks, pid_t* pids, ncclUniqueId* id, int (*body)(struct boot* b)) {
  int pipes[16][2];
  for (int i = 0; i < nranks; i++) {
    CHECK(pipe(pipes[i]) == 0);
    pids[i] = fork();
    CHECK(pids[i] >= 0);
    if (pids[i] == 0) {
      struct boot* b = NULL;
      ncclUniqueId cid;
      for (int j = 0; j <= i; j++) close(pipes[j][1]);
      if (read(pipes[i][0], &cid, sizeof(cid)) != (ssize_t)sizeof(cid)) _exit(99);
      if (boot_init(&cid, i, nranks, &b) != ncclSuccess) _exit(100);
      _exit(body(b));
    }
    close(pipes[i][0]);
  }
  CHECK_RES(boot_id_create(id), ncclSuccess);
  for (int i = 0; i < nranks; i++) {
    CHECK(write(pipes[i][1], id, sizeof(*id)) == (ssize_t)sizeof(*id));
    close(pipes[i][1]);
  }
}

/* Join the root thread that boot_id_create started here (no rank runs in this process). */
static void release_root(const ncclUniqueId* id) {
  struct boot_id raw;
  memcpy(&raw, id, sizeof(raw));
  boot_root_release(raw.secret);
}

static int procs_body(struct boot* b) {
  int fail = workload(b);
  if (fail) fprintf(stderr, "rank %d failed at test_boot.c:%d\n", boot_rank(b), fail);
  boot_free(b);
  return fail ? 101 : 0;
}

static void tcp_procs(int nranks) {
  ncclUniqueId id;
  pid_t pids[16];
  fork_ranks(nranks, pids, &id, procs_body);
  for (int i = 0; i < nranks; i++) {
    int st = 0;
    CHECK(waitpid(pids[i], &st, 0) == pids[i]);
    CHECK(WIFEXITED(st));
    if (WEXITSTATUS(st) != 0) fprintf(stderr, "rank %d exited with %d\n", i, WEXITSTATUS(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
  }
  release_root(&id);
}

TEST(tcp_procs_1) {
  tcp_procs(1);
}
TEST(tcp_procs_2) {
  tcp_procs(2);
}
TEST(tcp_procs_5) {
  tcp_procs(5);
}
TEST(tcp_procs_8) {
  tcp_procs(8);
}

/* A port that was free a moment ago on `host`. */
static int free_port(int family, const char* host) {
  union sock_addr a;
  memset(&a, 0, sizeof(a));
  a.sa.sa_family = (sa_family_t)family;
  if (family == AF_INET6 ? inet_pton(AF_INET6, host, &a.sin6.sin6_addr) != 1
                         : inet_pton(AF_INET, host, &a.sin.sin_addr) != 1)
    return -1;
  int fd = -1;
  if (sock_listen_open(&a, &fd) != ncclSuccess) return -1;
  int port = sock_addr_port(&a);
  close(fd);
  return port;
}

static void comm_id_job(int family, const char* host, const char* fmt) {
  char env[128];
  int port = free_port(family, host);
  if (port < 0 && family == AF_INET6) {
    printf("(no IPv6 loopback here: skipped)\n");
    return;
  }
  CHECK(port > 0);
  snprintf(env, sizeof(env), fmt, port);
  setenv("NCCL_COMM_ID", env, 1);
  param_reload();
  ncclUniqueId id;
  CHECK_RES(boot_id_create(&id), ncclSuccess);
  struct boot_id raw;
  memcpy(&raw, &id, sizeof(raw));
  CHECK(raw.flags & BOOT_FLAG_COMM_ID);
  CHECK_EQ(raw.root.sa.sa_family, family);
  CHECK_EQ(sock_addr_port(&raw.root), port);
  job_threads(&id, 4);
}

TEST(comm_id_ipv4) {
  comm_id_job(AF_INET, "127.0.0.1", "127.0.0.1:%d");
}
TEST(comm_id_ipv6) {
  comm_id_job(AF_INET6, "::1", "[::1]:%d");
}

TEST(addr_parse_and_ifname) {
  union sock_addr a;
  char s[SOCK_ADDR_STRLEN];
  CHECK_RES(sock_addr_parse("127.0.0.1:1234", &a), ncclSuccess);
  CHECK(strcmp(sock_addr_to_str(&a, s, sizeof(s)), "127.0.0.1:1234") == 0);
  CHECK_RES(sock_addr_parse("localhost:80", &a), ncclSuccess);
  CHECK_EQ(sock_addr_port(&a), 80);
  CHECK(sock_addr_parse("nocolon", &a) != ncclSuccess);
  CHECK(sock_addr_parse("[::1:5", &a) != ncclSuccess);
  CHECK(sock_ifname_match("eth,ib", "eth0"));
  CHECK(!sock_ifname_match("eth,ib", "lo"));
  CHECK(!sock_ifname_match("^eth", "eth1"));
  CHECK(sock_ifname_match("^eth", "lo"));
  CHECK(sock_ifname_match("=eth0", "eth0"));
  CHECK(!sock_ifname_match("=eth0", "eth01"));
  CHECK(!sock_ifname_match("^=lo", "lo"));
  setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  param_reload();
  CHECK_RES(sock_iface_find(&a, s, sizeof(s)), ncclSuccess);
  CHECK(strcmp(s, "lo") == 0);
}

/* Connect to the root of `id` and send raw bytes; the root must drop us (EOF) and go on. */
static void poke_root(const ncclUniqueId* id, const void* bytes, size_t n) {
  struct boot_id raw;
  enum sock_err err;
  int fd = -1;
  char c;
  memcpy(&raw, id, sizeof(raw));
  CHECK_RES(sock_conn_open(&raw.root, sock_time_now() + 10, NULL, &fd, &err), ncclSuccess);
  CHECK_RES(sock_send_all(fd, bytes, n, sock_time_now() + 10, NULL, &err), ncclSuccess);
  CHECK(sock_recv_all(fd, &c, 1, sock_time_now() + 10, NULL, &err) != ncclSuccess);
  CHECK(err == SOCK_EOF || err == SOCK_RESET);
  close(fd);
}

TEST(wrong_secret_dropped) {
  ncclUniqueId id, bad;
  struct boot_id raw;
  struct rank_arg a[1];
  CHECK_RES(boot_id_create(&id), ncclSuccess);
  memcpy(&raw, &id, sizeof(raw));
  raw.secret ^= 0x5a5a;
  memset(&bad, 0, sizeof(bad));
  memcpy(&bad, &raw, sizeof(raw));
  run_threads(&bad, 2, 1, a); /* an impostor rank 0 of 2: rejected at once */
  CHECK(a[0].init_res != ncclSuccess);
  CHECK(strstr(a[0].err, "did not answer") != NULL);
  job_threads(&id, 2); /* the real job still completes */
}

TEST(garbage_to_root_rejected) {
  ncclUniqueId id;
  CHECK_RES(boot_id_create(&id), ncclSuccess);
  uint32_t huge[4] = {0xffffffffu, 1, 2, 3};
  poke_root(&id, huge, sizeof(huge)); /* oversized length */
  struct {
    uint32_t len;
    struct boot_hello h;
  } junk;
  memset(&junk, 0xab, sizeof(junk));
  junk.len = sizeof(junk.h);
  poke_root(&id, &junk, sizeof(junk)); /* right size, bad magic */
  job_threads(&id, 3);
}

TEST(rendezvous_timeout_names_missing) {
  struct rank_arg args[3];
  ncclUniqueId id;
  setenv("MONEL_BOOT_TIMEOUT", "2", 1);
  param_reload();
  CHECK_RES(boot_id_create(&id), ncclSuccess);
  double t0 = sock_time_now();
  run_threads(&id, 4, 3, args);
  CHECK(sock_time_now() - t0 < 20);
  for (int i = 0; i < 3; i++) {
    CHECK(args[i].init_res != ncclSuccess);
    if (strstr(args[i].err, "rank(s) 3 of 4 never arrived") == NULL)
      fprintf(stderr, "rank %d error: %s\n", i, args[i].err);
    CHECK(strstr(args[i].err, "rank(s) 3 of 4 never arrived") != NULL);
  }
}

/* A hello that passed the handshake and names a rank count no job has (2^31 - 1) makes the root
 * allocate nothing by that count: it waits for the others and, at its deadline, answers with the
 * first missing ranks. Tables sized by the named count (68 GB) would fail or take the machine. */
TEST(huge_rank_count_allocates_nothing) {
  ncclUniqueId id;
  struct boot_id raw;
  struct boot_reply rep;
  char text[BOOT_REPLY_TEXT_MAX + 1];
  enum sock_err err;
  const char* why = NULL;
  int fd = -1;
  setenv("MONEL_BOOT_TIMEOUT", "1", 1);
  param_reload();
  CHECK_RES(boot_id_create(&id), ncclSuccess);
  memcpy(&raw, &id, sizeof(raw));
  uint32_t len = sizeof(struct boot_hello);
  struct boot_hello h = {
      .magic = BOOT_MAGIC_TCP, .secret = raw.secret, .rank = 2, .nranks = 0x7fffffff};
  h.addr = raw.root;
  double dl = sock_time_now() + 20;
  CHECK_RES(sock_conn_open(&raw.root, dl, NULL, &fd, &err), ncclSuccess);
  CHECK_RES(auth_client(fd, raw.key, dl, NULL, &why), ncclSuccess);
  CHECK_RES(sock_send_all(fd, &len, sizeof(len), dl, NULL, &err), ncclSuccess);
  CHECK_RES(sock_send_all(fd, &h, sizeof(h), dl, NULL, &err), ncclSuccess);
  CHECK_RES(sock_recv_all(fd, &rep, sizeof(rep), dl, NULL, &err), ncclSuccess);
  CHECK_EQ(rep.status, BOOT_REPLY_TIMEOUT);
  CHECK_EQ(rep.nranks, 0x7fffffffu);
  CHECK(rep.text_len <= BOOT_REPLY_TEXT_MAX);
  CHECK_RES(sock_recv_all(fd, text, rep.text_len, dl, NULL, &err), ncclSuccess);
  text[rep.text_len] = '\0';
  CHECK(strncmp(text, "0 1 3 4 5 6 ", 12) == 0);
  close(fd);
  unsetenv("MONEL_BOOT_TIMEOUT");
  param_reload();
}

TEST(unreachable_root_reported) {
  ncclUniqueId id;
  int port = free_port(AF_INET, "127.0.0.1");
  char env[64];
  setenv("MONEL_BOOT_TIMEOUT", "1", 1);
  snprintf(env, sizeof(env), "127.0.0.1:%d", port);
  setenv("NCCL_COMM_ID", env, 1);
  param_reload();
  CHECK_RES(boot_id_create(&id), ncclSuccess);
  /* rank 1 alone: rank 0 never starts, so nobody listens at the root address */
  struct boot* b = NULL;
  CHECK(boot_init(&id, 1, 2, &b) != ncclSuccess);
  CHECK(strstr(log_last_error(), "cannot reach the bootstrap root") != NULL);
}

/* Rank 1 dies after a barrier; rank 0's receive from it must fail naming it. */
static int killed_after_barrier(struct boot* b) {
  int v;
  if (boot_barrier(b) != ncclSuccess) return 101;
  if (boot_rank(b) == 1) raise(SIGKILL);
  ncclResult_t r = boot_recv(b, 1, 5, &v, sizeof(v));
  int named = strstr(log_last_error(), "peer rank 1") != NULL;
  return r == ncclRemoteError && named ? 0 : 102;
}

/* Ranks 1 and 2 die without ever talking to rank 0: rank 1 at once (rank 0 finds nobody to
 * connect to, or its connection is reset), rank 2 a little later (rank 0 is likely waiting on its
 * connection by then). Both receives must fail, not hang. */
static int killed_silent(struct boot* b) {
  int v;
  if (boot_rank(b) == 1) raise(SIGKILL);
  if (boot_rank(b) == 2) {
    usleep(300 * 1000);
    raise(SIGKILL);
  }
  for (int p = 1; p <= 2; p++) {
    char want[32];
    snprintf(want, sizeof(want), "peer rank %d", p);
    if (boot_recv(b, p, 5, &v, sizeof(v)) != ncclRemoteError) return 102;
    if (strstr(log_last_error(), want) == NULL) return 103;
  }
  return 0;
}

/* Rank 1 sends and exits at once (freeing its bootstrap) without waiting for anybody: rank 0
 * still receives what it sent, and only then finds it gone. */
static int finished_sender(struct boot* b) {
  int v = 42, n = 1 << 20;
  char* big = calloc((size_t)n, 1);
  if (big == NULL) return 104;
  if (boot_rank(b) == 1) {
    memset(big, 7, (size_t)n);
    int bad = boot_send(b, 0, 1, &v, sizeof(v)) != ncclSuccess ||
              boot_send(b, 0, 2, big, (size_t)n) != ncclSuccess;
    boot_free(b);
    free(big);
    return bad ? 101 : 0;
  }
  usleep(200 * 1000);
  v = 0;
  int fail = boot_recv(b, 1, 2, big, (size_t)n) != ncclSuccess || big[0] != 7 || big[n - 1] != 7;
  fail = fail || boot_recv(b, 1, 1, &v, sizeof(v)) != ncclSuccess || v != 42;
  fail = fail || boot_recv(b, 1, 3, &v, sizeof(v)) != ncclRemoteError;
  free(big);
  return fail ? 102 : 0;
}

/* Rank 0 must exit 0; the others die by SIGKILL (killed) or exit 0. */
static void run_death_job(int nranks, int (*body)(struct boot* b), int killed) {
  ncclUniqueId id;
  pid_t pids[16];
  fork_ranks(nranks, pids, &id, body);
  for (int i = 0; i < nranks; i++) {
    int st = 0;
    CHECK(waitpid(pids[i], &st, 0) == pids[i]);
    if (i > 0 && killed) {
      CHECK(WIFSIGNALED(st));
      continue;
    }
    CHECK(WIFEXITED(st));
    if (WEXITSTATUS(st) != 0) fprintf(stderr, "rank %d exited with %d\n", i, WEXITSTATUS(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
  }
  release_root(&id);
}

TEST(peer_killed_recv_fails) {
  run_death_job(2, killed_after_barrier, 1);
}
TEST(peer_killed_before_contact) {
  run_death_job(3, killed_silent, 1);
}
TEST(finished_peer_messages_delivered) {
  run_death_job(2, finished_sender, 0);
}

struct abort_arg {
  struct boot* b;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int started;
  int res;
};

static void* blocked_recv(void* p) {
  struct abort_arg* a = p;
  int v;
  pthread_mutex_lock(&a->mu);
  a->started = 1;
  pthread_cond_signal(&a->cv);
  pthread_mutex_unlock(&a->mu);
  a->res = boot_recv(a->b, boot_nranks(a->b) - 1, 7, &v, sizeof(v));
  return NULL;
}

static void* init_only(void* p) {
  struct rank_arg* a = p;
  struct boot** out = (struct boot**)a->err; /* the handle is passed back through err */
  a->init_res = boot_init(&a->id, a->rank, a->nranks, out);
  return NULL;
}

static void abort_unblocks(ncclUniqueId id) {
  struct rank_arg args[2];
  pthread_t t[2];
  struct boot* bs[2];
  for (int i = 0; i < 2; i++) {
    memset(&args[i], 0, sizeof(args[i]));
    args[i].id = id, args[i].rank = i, args[i].nranks = 2;
    CHECK(pthread_create(&t[i], NULL, init_only, &args[i]) == 0);
  }
  for (int i = 0; i < 2; i++) {
    pthread_join(t[i], NULL);
    CHECK_EQ(args[i].init_res, ncclSuccess);
    memcpy(&bs[i], args[i].err, sizeof(bs[i]));
  }
  struct abort_arg a = {.b = bs[0], .res = -1};
  pthread_mutex_init(&a.mu, NULL);
  pthread_cond_init(&a.cv, NULL);
  pthread_t rt;
  CHECK(pthread_create(&rt, NULL, blocked_recv, &a) == 0);
  pthread_mutex_lock(&a.mu);
  while (!a.started) pthread_cond_wait(&a.cv, &a.mu);
  pthread_mutex_unlock(&a.mu);
  double t0 = sock_time_now();
  boot_abort(bs[0]);
  pthread_join(rt, NULL);
  CHECK(sock_time_now() - t0 < 5);
  CHECK_EQ(a.res, ncclRemoteError);
  int v = 0;
  CHECK_RES(boot_send(bs[0], 1, 1, &v, sizeof(v)), ncclRemoteError); /* future calls fail too */
  boot_free(bs[0]);
  boot_free(bs[1]);
}

TEST(abort_unblocks_recv_tcp) {
  ncclUniqueId id;
  CHECK_RES(boot_id_create(&id), ncclSuccess);
  abort_unblocks(id);
}

TEST(abort_unblocks_recv_local) {
  ncclUniqueId id;
  CHECK_RES(boot_id_create_local(&id, 2), ncclSuccess);
  abort_unblocks(id);
}

TEST(local_threads_8) {
  ncclUniqueId id;
  CHECK_RES(boot_id_create_local(&id, 8), ncclSuccess);
  CHECK(boot_id_is_local(&id));
  job_threads(&id, 8);
}

TEST(local_timeout_names_missing) {
  struct rank_arg args[3];
  ncclUniqueId id;
  setenv("MONEL_BOOT_TIMEOUT", "1", 1);
  param_reload();
  CHECK_RES(boot_id_create_local(&id, 4), ncclSuccess);
  run_threads(&id, 4, 3, args);
  for (int i = 0; i < 3; i++) {
    CHECK(args[i].init_res != ncclSuccess);
    CHECK(strstr(args[i].err, "rank(s) 3 of 4 never arrived") != NULL);
  }
}
