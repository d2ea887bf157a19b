/* SPDX-License-Identifier: BSD-3-Clause */
/* Part of net_conformance.c (included once, after its helpers): the built-in TCP network and
 * strangers at its listening port. With a key (net.h), a connection must prove it before any
 * other byte is read; whatever fails is closed at once and the job's own connection still gets
 * through. */
#ifndef MONEL_TESTS_NET_CONFORMANCE_AUTH_H
#define MONEL_TESTS_NET_CONFORMANCE_AUTH_H
#include <errno.h>
#include <poll.h>

/* Calls accept (and connect, while p->s is NULL) until both comms of the pair are up. */
static void pair_finish(struct pair* p, double t0) {
  while (p->s == NULL || p->r == NULL) {
    if (p->s == NULL) CHECK_RES(net_tcp.connect(0, KEY, p->handle, &p->s), ncclSuccess);
    if (p->r == NULL) CHECK_RES(net_tcp.accept(p->l, &p->r), ncclSuccess);
    CHECK(test_now() - t0 < LIMIT_S);
  }
}

/* A connection that presents another token is dropped; the right one still gets through. */
TEST(tcp_stranger_dropped) {
  struct pair p;
  memset(&p, 0, sizeof p);
  CHECK_RES(net_tcp.listen(0, KEY, p.handle, &p.l), ncclSuccess);
  unsigned char other[NET_HANDLE_BYTES];
  memcpy(other, p.handle, sizeof other);
  struct tcp_handle h;
  memcpy(&h, other, sizeof h);
  h.token ^= 1;
  memcpy(other, &h, sizeof h);
  void* stranger = NULL;
  double t0 = test_now();
  while (stranger == NULL) {
    CHECK_RES(net_tcp.connect(0, KEY, other, &stranger), ncclSuccess);
    CHECK_RES(net_tcp.accept(p.l, &p.r), ncclSuccess);
    CHECK(p.r == NULL && test_now() - t0 < LIMIT_S);
  }
  for (int i = 0; i < 50; i++) {
    CHECK_RES(net_tcp.accept(p.l, &p.r), ncclSuccess);
    CHECK(p.r == NULL);
  }
  pair_finish(&p, t0);
  one_message(&net_tcp, &p, 1, 100, 100);
  CHECK_RES(net_tcp.close_send(stranger), ncclSuccess);
  pair_close(&net_tcp, &p);
}

/* A connector with another key fails its handshake (connect returns an error, no comm); the
 * listener closed it and still takes the right one. */
TEST(tcp_auth_wrong_key) {
  if (!auth_enabled()) return; /* no libcrypto.so.3 here: no handshake to test */
  static const unsigned char other_key[AUTH_KEY_BYTES] = "not-the-job-key";
  struct pair p;
  memset(&p, 0, sizeof p);
  CHECK_RES(net_tcp.listen(0, KEY, p.handle, &p.l), ncclSuccess);
  unsigned char copy[NET_HANDLE_BYTES];
  memcpy(copy, p.handle, sizeof copy);
  void* stranger = NULL;
  ncclResult_t res = ncclSuccess;
  double t0 = test_now();
  while (res == ncclSuccess) {
    res = net_tcp.connect(0, other_key, copy, &stranger);
    CHECK(stranger == NULL);
    CHECK_RES(net_tcp.accept(p.l, &p.r), ncclSuccess);
    CHECK(p.r == NULL && test_now() - t0 < LIMIT_S);
  }
  CHECK_RES(res, ncclRemoteError);
  pair_finish(&p, t0);
  one_message(&net_tcp, &p, 2, 70000, 70000);
  pair_close(&net_tcp, &p);
}

/* A raw socket to the listener, connected (blocking connect on the loopback). */
static int raw_connect(const struct pair* p) {
  struct tcp_handle h;
  memcpy(&h, p->handle, sizeof h);
  int fd = socket(h.addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CHECK(fd >= 0 && connect(fd, &h.addr.sa, sock_addr_len(&h.addr)) == 0);
  return fd;
}

/* 1 once the listener closed fd (EOF or reset), 0 while it is open. */
static int raw_closed(int fd) {
  char b[64];
  struct pollfd q = {fd, POLLIN, 0};
  if (poll(&q, 1, 0) <= 0) return 0;
  ssize_t k = recv(fd, b, sizeof b, MSG_DONTWAIT);
  return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* Garbage, a fake hello without the handshake and a wrong MAC are closed at once, while an idle
 * connection stays pending; the job's connection comes through beside them. */
TEST(tcp_auth_strangers_closed) {
  struct pair p;
  memset(&p, 0, sizeof p);
  CHECK_RES(net_tcp.listen(0, KEY, p.handle, &p.l), ncclSuccess);
  int garbage = raw_connect(&p), hello = raw_connect(&p), mac = raw_connect(&p);
  int idle = raw_connect(&p);
  char junk[4096];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(i * 131 + 7);
  CHECK(send(garbage, junk, sizeof junk, 0) == (ssize_t)sizeof junk);
  struct tcp_hello th = {.magic = TCP_MAGIC};
  CHECK(send(hello, &th, sizeof th, 0) == (ssize_t)sizeof th);
  uint32_t magic = AUTH_MAGIC;
  CHECK(send(mac, &magic, 4, 0) == 4 && send(mac, junk, AUTH_NONCE_BYTES, 0) == AUTH_NONCE_BYTES);
  int mac_sent = 0, auth = auth_enabled();
  double t0 = test_now();
  while (!raw_closed(garbage) || !raw_closed(hello) || (auth && !raw_closed(mac))) {
    CHECK_RES(net_tcp.accept(p.l, &p.r), ncclSuccess);
    CHECK(p.r == NULL && test_now() - t0 < LIMIT_S);
    struct pollfd q = {mac, POLLIN, 0}; /* the server's answer in: send a MAC without the key */
    if (auth && !mac_sent && poll(&q, 1, 0) == 1 && recv(mac, junk, 48, MSG_WAITALL) == 48)
      mac_sent = send(mac, junk + 48, AUTH_MAC_BYTES, 0) == AUTH_MAC_BYTES;
  }
  pair_finish(&p, t0);
  one_message(&net_tcp, &p, 3, 10, 10);
  CHECK(!raw_closed(idle)); /* it has time until TCP_STRANGER_S */
  close(garbage), close(hello), close(mac), close(idle);
  pair_close(&net_tcp, &p);
}

/* connect() is given a handle whose progress word was made up (a peer's handle is bytes from the
 * network): refused with a sentence, nothing dereferenced. */
TEST(tcp_forged_stage) {
  struct pair p;
  memset(&p, 0, sizeof p);
  CHECK_RES(net_tcp.listen(0, KEY, p.handle, &p.l), ncclSuccess);
  struct tcp_handle h;
  memcpy(&h, p.handle, sizeof h);
  uintptr_t forged[] = {0x1, 0x12345678, (uintptr_t)&h, (uintptr_t)-1};
  for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
    unsigned char copy[NET_HANDLE_BYTES];
    void* s = NULL;
    memcpy(copy, p.handle, sizeof copy);
    h.stage = (void*)forged[i];
    memcpy(copy, &h, sizeof h);
    CHECK_RES(net_tcp.connect(0, KEY, copy, &s), ncclInvalidArgument);
    CHECK(s == NULL);
  }
  pair_finish(&p, test_now());
  pair_close(&net_tcp, &p);
}

#endif
