/* SPDX-License-Identifier: BSD-3-Clause */
/* Part of net_conformance.c (included once, after its helpers): between two processes, the
 * messages of one connection are matched in order while the connections are still being set
 * up. Each round connects as a net link does (transport/net_link.c): the sender connects and
 * sends its first message at once, and its second after a few progress calls (fewer or more
 * each round); the receiver accepts, posts both receives with one tag and connects back. The
 * receives must take the messages in the order they were sent. Over UCX the peer is reached
 * through the one interface Monel listens on, as between two hosts: UCX 1.13 over TCP, on its
 * own, matches the second message with the first receive in about one such round in three
 * (docs/NET.md, "UCX: message order"), which the UCX network must not let through. */
#ifndef MONEL_TESTS_NET_CONFORMANCE_ORDER_H
#define MONEL_TESTS_NET_CONFORMANCE_ORDER_H
#include <sys/wait.h>
#include "os/socket.h"

#define ORDER_ROUNDS 40
#define ORDER_TAG    9
static const size_t order_size[2] = {16, 12}; /* told apart by size, and by content */

static void pipe_put(int fd, const void* p, size_t n) {
  CHECK(write(fd, p, n) == (ssize_t)n);
}

static void pipe_get(int fd, void* p, size_t n) {
  CHECK(read(fd, p, n) == (ssize_t)n);
}

/* The receiving process of one round: listens, accepts, posts both receives, connects back,
 * and checks what each receive took. */
static void order_receiver(int round, int to, int from) {
  const struct net* n = the_net();
  unsigned char handle[NET_HANDLE_BYTES], back[NET_HANDLE_BYTES];
  void *l = NULL, *r = NULL, *bs = NULL, *reqs[2] = {NULL, NULL};
  char* dst[2];
  size_t got[2] = {0, 0};
  CHECK_RES(n->listen(0, KEY, handle, &l), ncclSuccess);
  pipe_put(to, handle, sizeof handle);
  pipe_get(from, back, sizeof back);
  double t0 = test_now();
  while (r == NULL) {
    CHECK_RES(n->accept(l, &r), ncclSuccess);
    CHECK(test_now() - t0 < LIMIT_S);
  }
  for (int i = 0; i < 2; i++) {
    int tag = ORDER_TAG;
    size_t room = 64;
    dst[i] = calloc(room, 1);
    CHECK(dst[i] != NULL);
    while (reqs[i] == NULL) {
      void* d = dst[i];
      CHECK_RES(n->irecv(r, 1, &d, &room, &tag, NULL, NULL, &reqs[i]), ncclSuccess);
      CHECK(test_now() - t0 < LIMIT_S);
    }
  }
  while (bs == NULL) {
    CHECK_RES(n->connect(0, KEY, back, &bs), ncclSuccess);
    CHECK(test_now() - t0 < LIMIT_S);
  }
  wait_all(n, reqs, 2, got);
  for (int i = 0; i < 2; i++) {
    if (got[i] != order_size[i])
      fprintf(stderr,
              "round %d: receive %d took a %zu-byte message, the %zu-byte one was sent %s\n", round,
              i, got[i], order_size[i], i == 0 ? "first" : "second");
    CHECK_EQ(got[i], order_size[i]);
    check_bytes(dst[i], round * 2 + i, order_size[i]);
    free(dst[i]);
  }
  char ack = 1; /* on the back connection, as a link's receiver says goodbye */
  while (reqs[0] == NULL) {
    CHECK_RES(n->isend(bs, &ack, 1, ORDER_TAG, NULL, NULL, &reqs[0]), ncclSuccess);
    CHECK(test_now() - t0 < LIMIT_S);
  }
  wait_all(n, reqs, 1, NULL);
  CHECK_RES(n->close_send(bs), ncclSuccess);
  CHECK_RES(n->close_recv(r), ncclSuccess);
  CHECK_RES(n->close_listen(l), ncclSuccess);
}

/* The sending process of one round. */
static void order_sender(int round, int to, int from) {
  const struct net* n = the_net();
  unsigned char handle[NET_HANDLE_BYTES], back[NET_HANDLE_BYTES];
  void *bl = NULL, *s = NULL, *br = NULL, *reqs[3] = {NULL, NULL, NULL};
  char* src[2] = {filled(round * 2, order_size[0]), filled(round * 2 + 1, order_size[1])};
  CHECK_RES(n->listen(0, KEY, back, &bl), ncclSuccess);
  pipe_get(from, handle, sizeof handle);
  pipe_put(to, back, sizeof back);
  double t0 = test_now();
  while (s == NULL) {
    CHECK_RES(n->connect(0, KEY, handle, &s), ncclSuccess);
    CHECK(test_now() - t0 < LIMIT_S);
  }
  for (int i = 0; i < 2; i++) {
    /* the second message after a few progress calls on the first, fewer or more each round:
     * sent while the connections are still being set up (both ways) */
    for (int k = 0; i == 1 && reqs[0] != NULL && k < round % 20 * 3; k++) {
      int d = 0;
      CHECK_RES(n->test(reqs[0], &d, NULL), ncclSuccess);
      if (d) reqs[0] = NULL;
    }
    while (reqs[i] == NULL) {
      CHECK_RES(n->isend(s, src[i], order_size[i], ORDER_TAG, NULL, NULL, &reqs[i]), ncclSuccess);
      CHECK(test_now() - t0 < LIMIT_S);
    }
  }
  while (br == NULL) {
    CHECK_RES(n->accept(bl, &br), ncclSuccess);
    CHECK(test_now() - t0 < LIMIT_S);
  }
  char ack = 0;
  size_t room = 1, got[3] = {0, 0, 0};
  while (reqs[2] == NULL) {
    void* d = &ack;
    int tag = ORDER_TAG;
    CHECK_RES(n->irecv(br, 1, &d, &room, &tag, NULL, NULL, &reqs[2]), ncclSuccess);
    CHECK(test_now() - t0 < LIMIT_S);
  }
  wait_all(n, reqs, 3, got); /* the ack: the receiver took both */
  CHECK(got[2] == 1 && ack == 1);
  CHECK_RES(n->close_recv(br), ncclSuccess);
  CHECK_RES(n->close_send(s), ncclSuccess);
  CHECK_RES(n->close_listen(bl), ncclSuccess);
  free(src[0]);
  free(src[1]);
}

/* Runs one side of a round in a child process that keeps only its own pipe ends, so that a side
 * that fails ends the other's wait on the pipe. */
static pid_t order_side(void (*side)(int, int, int), int round, int to, int from, int* fds) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid > 0) return pid;
  for (int i = 0; i < 4; i++)
    if (fds[i] != to && fds[i] != from) close(fds[i]);
  side(round, to, from);
  exit(0);
}

TEST(net_order_while_connecting) {
  const char* mode = getenv("NET_CONFORMANCE"); /* the network is chosen in each side */
  char ifname[64];
  union sock_addr addr;
  if (mode != NULL && strcmp(mode, "ucx") == 0 && getenv("UCX_NET_DEVICES") == NULL &&
      sock_iface_find(&addr, ifname, sizeof ifname) == ncclSuccess)
    setenv("UCX_NET_DEVICES", ifname, 1);
  for (int round = 0; round < ORDER_ROUNDS; round++) {
    int fds[4], status = 0; /* down: sender -> receiver (0 read, 1 write); up: the other way */
    CHECK(pipe(fds) == 0 && pipe(fds + 2) == 0);
    pid_t pid[2] = {order_side(order_receiver, round, fds[3], fds[0], fds),
                    order_side(order_sender, round, fds[1], fds[2], fds)};
    for (int i = 0; i < 4; i++) close(fds[i]);
    for (int i = 0; i < 2; i++) {
      CHECK(waitpid(pid[i], &status, 0) == pid[i]);
      CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
  }
  printf("%d rounds, each message taken by its own receive\n", ORDER_ROUNDS);
}

/* The UCX network carries tags 0 to NET_MAX_TAG (net.h) and refuses others with a sentence;
 * the largest one travels. */
TEST(ucx_tag_range) {
  struct pair p;
  char byte = 0;
  void *d = &byte, *req = NULL;
  size_t room = 1;
  pair_open(&net_ucx, &p);
  for (int bad = -1; bad <= NET_MAX_TAG + 1; bad += NET_MAX_TAG + 2) {
    int tag = bad;
    CHECK_RES(net_ucx.isend(p.s, &byte, 1, bad, NULL, NULL, &req), ncclInvalidArgument);
    CHECK_RES(net_ucx.irecv(p.r, 1, &d, &room, &tag, NULL, NULL, &req), ncclInvalidArgument);
    CHECK(req == NULL);
  }
  one_message(&net_ucx, &p, NET_MAX_TAG, 100, 100);
  pair_close(&net_ucx, &p);
}

#endif
