/* SPDX-License-Identifier: BSD-3-Clause */
/* Part of net_conformance.c (included once, after its helpers): net.h's wait and wake, with
 * which a progress thread sleeps on a network and is woken. */
#ifndef MONEL_TESTS_NET_CONFORMANCE_WAIT_H
#define MONEL_TESTS_NET_CONFORMANCE_WAIT_H
#include <pthread.h>

static const struct net* waker;
static void* wake_once(void* arg) {
  (void)arg;
  waker->wake();
  return NULL;
}

/* One message of `size` bytes, its requests driven only between waits without a time limit:
 * a network whose wait misses a completion hangs here (the runner's timeout fails the test). */
static int message_between_waits(const struct net* n, struct pair* p, int k, size_t size) {
  char* src = filled(k, size);
  char* dst = calloc(size ? size : 1, 1);
  void* reqs[2] = {NULL, NULL};
  int tag = k, waits = 0;
  CHECK(dst != NULL);
  while (reqs[1] == NULL) {
    void* d = dst;
    size_t room = size;
    CHECK_RES(n->irecv(p->r, 1, &d, &room, &tag, NULL, NULL, &reqs[1]), ncclSuccess);
  }
  while (reqs[0] == NULL)
    CHECK_RES(n->isend(p->s, src, size, k, NULL, NULL, &reqs[0]), ncclSuccess);
  for (;;) {
    for (int i = 0; i < 2; i++) {
      int done = 0;
      size_t got[8] = {0};
      if (reqs[i] == NULL) continue;
      CHECK_RES(n->test(reqs[i], &done, got), ncclSuccess);
      if (done) {
        CHECK_EQ(got[0], size);
        reqs[i] = NULL;
      }
    }
    if (reqs[0] == NULL && reqs[1] == NULL) break;
    n->wait(-1);
    waits++;
  }
  check_bytes(dst, k, size);
  free(src);
  free(dst);
  return waits;
}

/* wait and wake (net.h): both or neither, and Monel's networks have them (a plugin has neither:
 * NCCL's plugin API has no such calls). A wake before a wait is kept for it; a wake from another
 * thread ends a wait; messages small and large complete with the requests tested only after
 * waits without a time limit (each would hang on a lost event). */
TEST(net_wait_and_wake) {
  const struct net* n = the_net();
  CHECK((n->wait == NULL) == (n->wake == NULL));
  if (strcmp(n->name, "Socket") == 0 || strcmp(n->name, "UCX") == 0) CHECK(n->wait != NULL);
  if (n->wait == NULL) {
    printf("%s has no wait and wake: a progress thread polls it\n", n->name);
    return;
  }
  struct pair p;
  pair_open(n, &p);
  n->wake();
  n->wait(-1);
  waker = n;
  pthread_t t;
  CHECK(pthread_create(&t, NULL, wake_once, NULL) == 0);
  n->wait(-1);
  CHECK(pthread_join(t, NULL) == 0);
  const size_t sizes[] = {0, 1000, 1 << 20, 8u << 20};
  for (int i = 0; i < (int)(sizeof sizes / sizeof *sizes); i++) {
    int waits = message_between_waits(n, &p, i + 1, sizes[i]);
    printf("%zu bytes: %d waits\n", sizes[i], waits);
  }
  pair_close(n, &p);
}

#endif
