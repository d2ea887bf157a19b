/* SPDX-License-Identifier: BSD-3-Clause */
/* Part of net_conformance.c (included once, after its helpers): what is particular to net_tcp's
 * data sockets and helper threads: a large message cut over several sockets, small ones on the
 * control socket alone, the 64-socket bound, and how many helper threads a connection gets
 * (NCCL_SOCKET_NTHREADS, or the rule for ranks that share the machine's cores). */
#ifndef MONEL_TESTS_NET_CONFORMANCE_SOCKS_H
#define MONEL_TESTS_NET_CONFORMANCE_SOCKS_H
#include "topo/host.h"

/* Sockets of this process whose TCP connection received at least `min` bytes. */
static int sockets_that_received(unsigned long long min) {
  int count = 0;
  DIR* d = opendir("/proc/self/fd");
  CHECK(d != NULL);
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    int fd = atoi(e->d_name);
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (e->d_name[0] == '.' || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) continue;
    if (len >= offsetof(struct tcp_info, tcpi_bytes_received) + sizeof ti.tcpi_bytes_received &&
        ti.tcpi_bytes_received >= min)
      count++;
  }
  closedir(d);
  return count;
}

/* Threads of this process named `name`. */
static int threads_named(const char* name) {
  int count = 0;
  char path[300], comm[32];
  DIR* d = opendir("/proc/self/task");
  CHECK(d != NULL);
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE* f = fopen(path, "r");
    if (f == NULL) continue;
    if (fgets(comm, sizeof comm, f) != NULL && strncmp(comm, name, strlen(name)) == 0) count++;
    fclose(f);
  }
  closedir(d);
  return count;
}

/* threads_named once no thread that was joined is still listed: pthread_join returns when the
 * kernel clears the thread's id, a moment before its /proc entry goes, so the count is read again
 * until it equals `want` or 5 s have passed (a thread that stays is still seen). */
static int threads_settled(const char* name, int want) {
  double t0 = test_now();
  int n = threads_named(name);
  while (n != want && test_now() - t0 < 5.0) {
    sched_yield();
    n = threads_named(name);
  }
  return n;
}

static void socket_params(const char* nthreads, const char* nsocks) {
  setenv("NCCL_SOCKET_NTHREADS", nthreads, 1);
  setenv("NCCL_NSOCKS_PERTHREAD", nsocks, 1);
  param_reload();
}

/* 4 helper threads x 2 sockets: one 64 MB message goes in 8 pieces of 8 MB, one per data
 * socket, moved by 4 threads on each side: the device's receive pool and its send pool. */
TEST(tcp_one_message_over_several_sockets) {
  socket_params("4", "2");
  struct pair p;
  CHECK_EQ(threads_settled("monel-tcp", 0), 0);
  pair_open(&net_tcp, &p);
  struct tcp_handle h;
  memcpy(&h, p.handle, sizeof h);
  CHECK_EQ(h.nthreads, 4);
  CHECK_EQ(h.nsocks, 2);
  CHECK_EQ(sockets_that_received(8u << 20), 0);
  one_message(&net_tcp, &p, 9, 64u << 20, 64u << 20);
  CHECK_EQ(sockets_that_received(8u << 20), 8); /* the receiver's 8 data sockets, 8 MB each */
  CHECK_EQ(sockets_that_received(9u << 20), 0);
  CHECK_EQ(threads_settled("monel-tcp", 8), 8); /* the device's two pools, started by the message */
  pair_close(&net_tcp, &p);
  CHECK_EQ(threads_settled("monel-tcp", 0), 0);
}

/* The helpers are the device's, not a connection's: 6 connections with a large message each in
 * flight at once share its two pools (receive, send), which grow by NCCL_SOCKET_NTHREADS a
 * connection up to MONEL_SOCKET_POOL_MAX; every message arrives whole, and the pools end with the
 * last connection. */
static void connections_share_the_pool(int pool_max, int threads_each) {
  enum { NPAIRS = 6 };
  const size_t size = 8u << 20;
  char v[16];
  snprintf(v, sizeof v, "%d", pool_max);
  setenv("MONEL_SOCKET_POOL_MAX", v, 1);
  socket_params("2", "2");
  struct pair p[NPAIRS];
  char* src[NPAIRS];
  char* dst[NPAIRS];
  void* reqs[2 * NPAIRS];
  size_t sizes[2 * NPAIRS];
  for (int i = 0; i < NPAIRS; i++) {
    pair_open(&net_tcp, &p[i]);
    src[i] = filled(20 + i, size);
    dst[i] = calloc(size, 1);
    CHECK(dst[i] != NULL);
    reqs[2 * i] = reqs[2 * i + 1] = NULL;
  }
  double t0 = test_now();
  for (int i = 0; i < NPAIRS; i++) {
    while (reqs[2 * i] == NULL) {
      CHECK_RES(net_tcp.isend(p[i].s, src[i], size, i, p[i].smh, NULL, &reqs[2 * i]), ncclSuccess);
      CHECK(test_now() - t0 < LIMIT_S);
    }
    size_t room = size;
    while (reqs[2 * i + 1] == NULL) {
      void* d = dst[i];
      int tag = i;
      CHECK_RES(net_tcp.irecv(p[i].r, 1, &d, &room, &tag, &p[i].rmh, NULL, &reqs[2 * i + 1]),
                ncclSuccess);
      CHECK(test_now() - t0 < LIMIT_S);
    }
  }
  wait_all(&net_tcp, reqs, 2 * NPAIRS, sizes);
  CHECK_EQ(threads_settled("monel-tcp", 2 * threads_each), 2 * threads_each);
  for (int i = 0; i < NPAIRS; i++) {
    CHECK_EQ(sizes[2 * i + 1], size);
    check_bytes(dst[i], 20 + i, size);
    free(src[i]);
    free(dst[i]);
  }
  for (int i = 0; i < NPAIRS - 1; i++) pair_close(&net_tcp, &p[i]);
  CHECK_EQ(threads_settled("monel-tcp", 2 * threads_each),
           2 * threads_each); /* one connection holds the pools */
  pair_close(&net_tcp, &p[NPAIRS - 1]);
  CHECK_EQ(threads_settled("monel-tcp", 0), 0);
  unsetenv("MONEL_SOCKET_POOL_MAX");
  param_reload();
}

TEST(tcp_connections_share_the_devices_helpers) {
  connections_share_the_pool(2, 2);   /* bounded: the 6 connections share 2 threads a direction */
  connections_share_the_pool(7, 7);   /* 2 more a connection: 6 x 2 = 12, bounded by 7 */
  connections_share_the_pool(64, 12); /* unbounded: 2 a connection */
}

/* A listen that names its largest message: no data sockets where that fits the control socket
 * (up to 64 KB), else the whole layout (several messages are in flight at once); messages cross
 * whole. */
TEST(tcp_listen_sized_takes_what_its_messages_use) {
  socket_params("2", "2");
  struct pair p;
  struct tcp_handle h;
  pair_open_sized(&net_tcp, &p, 4096);
  memcpy(&h, p.handle, sizeof h);
  CHECK_EQ(h.nthreads, 0);
  CHECK_EQ(h.nsocks, 0);
  one_message(&net_tcp, &p, 31, 4096, 4096);
  pair_close(&net_tcp, &p);
  const size_t slot = 12 + 48 + (128u << 10);
  pair_open_sized(&net_tcp, &p, slot);
  memcpy(&h, p.handle, sizeof h);
  CHECK_EQ(h.nthreads, 2);
  CHECK_EQ(h.nsocks, 2);
  CHECK_EQ(sockets_that_received(64u << 10), 0);
  one_message(&net_tcp, &p, 32, slot, slot);
  CHECK_EQ(sockets_that_received(64u << 10), 2); /* two 64 KB pieces on two data sockets */
  pair_close(&net_tcp, &p);
  pair_open_sized(&net_tcp, &p, (size_t)10 << 20);
  memcpy(&h, p.handle, sizeof h);
  CHECK_EQ(h.nthreads, 2);
  CHECK_EQ(h.nsocks, 2);
  pair_close(&net_tcp, &p);
}

/* Small messages never start helper threads: they travel on the control socket. */
TEST(tcp_small_messages_on_one_socket) {
  socket_params("2", "2");
  struct pair p;
  pair_open(&net_tcp, &p);
  for (int k = 0; k < 10; k++) one_message(&net_tcp, &p, k, TCP_INLINE_MAX, TCP_INLINE_MAX);
  CHECK_EQ(threads_settled("monel-tcp", 0), 0);
  CHECK_EQ(sockets_that_received((unsigned long long)TCP_INLINE_MAX * 10), 1);
  pair_close(&net_tcp, &p);
}

/* NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD is at most 64; a message still crosses whole. */
TEST(tcp_sockets_clamped_to_64) {
  socket_params("16", "8");
  struct pair p;
  pair_open(&net_tcp, &p);
  struct tcp_handle h;
  memcpy(&h, p.handle, sizeof h);
  CHECK_EQ(h.nthreads, 16);
  CHECK_EQ(h.nsocks, 4);
  one_message(&net_tcp, &p, 4, 32u << 20, 32u << 20);
  pair_close(&net_tcp, &p);
  socket_params("1", "1"); /* and the smallest: one data socket, one helper a side */
  pair_open(&net_tcp, &p);
  one_message(&net_tcp, &p, 5, 8u << 20, 8u << 20);
  CHECK_EQ(threads_settled("monel-tcp", 2), 2);
  pair_close(&net_tcp, &p);
}

/* NCCL_SOCKET_NTHREADS=0: the control socket alone, no helper thread, and a large message
 * crosses on it whole; unset (and no GPU comm reported), 2 helper threads x 2 data sockets. */
TEST(tcp_control_socket_alone) {
  setenv("NCCL_SOCKET_NTHREADS", "0", 1);
  unsetenv("NCCL_NSOCKS_PERTHREAD");
  param_reload();
  struct pair p;
  struct tcp_handle h;
  pair_open(&net_tcp, &p);
  memcpy(&h, p.handle, sizeof h);
  CHECK_EQ(h.nthreads, 0);
  CHECK_EQ(h.nsocks, 0);
  one_message(&net_tcp, &p, 12, 4u << 20, 4u << 20);
  one_message(&net_tcp, &p, 13, 100, 4u << 20);
  CHECK_EQ(threads_settled("monel-tcp", 0), 0);
  CHECK_EQ(sockets_that_received(4u << 20), 1);
  pair_close(&net_tcp, &p);
  unsetenv("NCCL_SOCKET_NTHREADS");
  param_reload();
  pair_open(&net_tcp, &p);
  memcpy(&h, p.handle, sizeof h);
  CHECK_EQ(h.nthreads, 2);
  CHECK_EQ(h.nsocks, 2);
  pair_close(&net_tcp, &p);
}

/* Without NCCL_SOCKET_NTHREADS (NCCL_NSOCKS_PERTHREAD set), a connection has 2 helper threads
 * until a GPU comm reports its ranks on this machine (net_machine_ranks); then they follow the CPUs
 * and those ranks (topo_socket_threads): 2 while each rank has 8 CPUs or more, else 1, decided by
 * the listener and carried in the handle. A comm with fewer ranks here raises it no more. */
static void layout_of_a_pair(int want, int socks, int k) {
  struct pair p;
  struct tcp_handle h;
  pair_open(&net_tcp, &p);
  memcpy(&h, p.handle, sizeof h);
  CHECK_EQ(h.nthreads, want);
  CHECK_EQ(h.nsocks, socks);
  one_message(&net_tcp, &p, k, 4u << 20, 4u << 20);
  CHECK_EQ(threads_settled("monel-tcp", 2 * want),
           2 * want); /* the two pools, started by the message */
  pair_close(&net_tcp, &p);
}
static void threads_of_a_pair(int want, int k) {
  layout_of_a_pair(want, 2, k);
}

TEST(tcp_threads_follow_ranks_sharing_the_cpus) {
  unsetenv("NCCL_SOCKET_NTHREADS");
  setenv("NCCL_NSOCKS_PERTHREAD", "2", 1);
  param_reload();
  CHECK_EQ(topo_socket_threads(16, 1), 2);
  CHECK_EQ(topo_socket_threads(16, 2), 2);
  CHECK_EQ(topo_socket_threads(16, 3), 1);
  CHECK_EQ(topo_socket_threads(16, 8), 1);
  CHECK_EQ(topo_socket_threads(128, 8), 2);
  CHECK_EQ(topo_socket_threads(2, 1), 1);
  CHECK_EQ(topo_socket_threads(7, 0), 1);
  int cpus = topo_cpus();
  threads_of_a_pair(2, 6); /* no GPU comm reported */
  net_machine_ranks(1);
  threads_of_a_pair(cpus >= TOPO_CORES_FOR_TWO ? 2 : 1, 7);
  net_machine_ranks(cpus); /* one CPU a rank */
  net_machine_ranks(1);
  threads_of_a_pair(1, 8);
  socket_params("3", "2"); /* set: as given, whatever the machine */
  threads_of_a_pair(3, 9);
}

/* Data sockets per thread, NCCL_NSOCKS_PERTHREAD unset, once a GPU comm reported one CPU a rank
 * here: 1, as the threads (topo_socket_threads), whatever NCCL_SOCKET_NTHREADS says; set: as
 * given. */
TEST(tcp_sockets_follow_ranks_sharing_the_cpus) {
  setenv("NCCL_SOCKET_NTHREADS", "1", 1);
  unsetenv("NCCL_NSOCKS_PERTHREAD");
  param_reload();
  net_machine_ranks(topo_cpus()); /* one CPU a rank (the most reported so far, at least) */
  layout_of_a_pair(1, 1, 10);
  socket_params("1", "3");
  layout_of_a_pair(1, 3, 11);
}

#endif
