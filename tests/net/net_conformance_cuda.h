/* SPDX-License-Identifier: BSD-3-Clause */
/* CUDA memory through the interface (included by net_conformance.c): reg_mr with NET_PTR_CUDA
 * where a device's properties allow it (NET_PTR_CUDA, or cuda_copy), refused with a NULL handle
 * elsewhere; and, through the plugin adapter, a plugin that advertises NCCL_PTR_CUDA: its CUDA
 * registrations and its iflush. No GPU here: the test plugin's CUDA mode
 * (MONEL_TEST_PLUGIN_CUDA=1) moves host memory registered as CUDA memory, which is what these
 * tests give it. */

static int is_test_plugin(const struct net* n) {
  return strcmp(n->name, "TestV8") == 0;
}

/* Every network: a device that cannot register GPU memory refuses it and says so with a NULL
 * handle; the test plugin in its CUDA mode takes it. */
TEST(net_cuda_registration) {
  const struct net* n = the_net();
  struct net_props props;
  struct pair p;
  char buf[64];
  void* mh = (void*)1;
  CHECK_RES(n->get_properties(0, &props), ncclSuccess);
  int can = (props.ptr_support & NET_PTR_CUDA) || props.cuda_copy;
  printf("%s: pointers 0x%x, cuda_copy %d\n", n->name, props.ptr_support, props.cuda_copy);
  if (can && !is_test_plugin(n)) return; /* a real GPU network wants device memory */
  pair_open(n, &p);
  ncclResult_t res = n->reg_mr(p.s, buf, sizeof buf, NET_PTR_CUDA, &mh);
  if (can) {
    CHECK_RES(res, ncclSuccess);
    CHECK(mh != NULL);
    CHECK_RES(n->dereg_mr(p.s, mh), ncclSuccess);
  } else {
    CHECK(res == ncclInvalidArgument);
    CHECK(mh == NULL);
  }
  pair_close(n, &p);
}

/* Tests a flush request until done; the number of tests it took. */
static int flush_tests(const struct net* n, void* req) {
  double t0 = test_now();
  for (int tests = 1;; tests++) {
    int done = 0;
    size_t size = 0;
    CHECK_RES(n->test(req, &done, &size), ncclSuccess);
    if (done) return tests;
    CHECK(test_now() - t0 < LIMIT_S);
  }
}

/* The adapter with a plugin that advertises NCCL_PTR_CUDA: the properties say NET_PTR_CUDA,
 * CUDA registrations reach the plugin (which moves a message into one), iflush reaches the
 * plugin's (its request completes on the plugin's third test), a receive of nothing needs no
 * flush, a flush of host memory is the plugin's error, and a flush beyond the 32 requests of
 * its comm is refused by the adapter. */
TEST(plugin_cuda_memory) {
  setenv("MONEL_TEST_PLUGIN_CUDA", "1",
         1); /* before the plugin is loaded, in this test's process */
  const struct net* n = the_net();
  struct net_props props;
  struct pair p;
  size_t len = 100000, none = 0;
  char *sbuf = filled(3, len), *rbuf = calloc(len, 1), host[64];
  void *flush = (void*)1, *hmh = NULL, *d = rbuf;
  CHECK(rbuf != NULL);
  CHECK_RES(n->get_properties(0, &props), ncclSuccess);
  CHECK_EQ(props.ptr_support, NET_PTR_HOST | NET_PTR_CUDA);
  pair_open(n, &p);
  CHECK_RES(n->reg_mr(p.s, sbuf, len, NET_PTR_CUDA, &p.smh), ncclSuccess);
  CHECK_RES(n->reg_mr(p.r, rbuf, len, NET_PTR_CUDA, &p.rmh), ncclSuccess);
  one_message(n, &p, 3, len, len);
  CHECK_RES(n->iflush(p.r, 1, &d, &len, &p.rmh, &flush), ncclSuccess);
  CHECK(flush != NULL);
  CHECK_EQ(flush_tests(n, flush), 3);
  CHECK_RES(n->iflush(p.r, 1, &d, &none, &p.rmh, &flush), ncclSuccess);
  CHECK(flush == NULL);
  CHECK_RES(n->reg_mr(p.r, host, sizeof host, NET_PTR_HOST, &hmh), ncclSuccess);
  d = host;
  CHECK(n->iflush(p.r, 1, &d, &len, &hmh, &flush) != ncclSuccess);
  CHECK_RES(n->dereg_mr(p.r, hmh), ncclSuccess);
  /* 32 receives in flight: no room for a flush */
  void* reqs[2 * NET_MAX_REQUESTS] = {NULL};
  for (int i = 0; i < NET_MAX_REQUESTS; i++) {
    int tag = 9;
    d = rbuf;
    CHECK_RES(n->irecv(p.r, 1, &d, &len, &tag, &p.rmh, NULL, &reqs[i]), ncclSuccess);
    CHECK(reqs[i] != NULL);
  }
  d = rbuf;
  CHECK(n->iflush(p.r, 1, &d, &len, &p.rmh, &flush) == ncclInternalError);
  for (int i = 0; i < NET_MAX_REQUESTS; i++)
    while (reqs[NET_MAX_REQUESTS + i] == NULL)
      CHECK_RES(n->isend(p.s, sbuf, 0, 9, p.smh, NULL, &reqs[NET_MAX_REQUESTS + i]), ncclSuccess);
  wait_all(n, reqs, 2 * NET_MAX_REQUESTS, NULL);
  pair_close(n, &p);
  free(sbuf);
  free(rbuf);
}

/* Without the plugin's CUDA mode its device does not advertise CUDA memory, and the adapter
 * refuses to register CUDA memory on it: itself, from the properties it read at load, since the
 * plugin is switched to accept it after the load. */
TEST(plugin_cuda_refused) {
  unsetenv("MONEL_TEST_PLUGIN_CUDA");
  const struct net* n = the_net();
  struct net_props props;
  struct pair p;
  char buf[64];
  void* mh = (void*)1;
  CHECK_RES(n->get_properties(0, &props), ncclSuccess);
  CHECK_EQ(props.ptr_support, NET_PTR_HOST);
  CHECK_EQ(props.cuda_copy, 0);
  setenv("MONEL_TEST_PLUGIN_CUDA", "1", 1); /* the plugin would take it from now on */
  pair_open(n, &p);
  CHECK(n->reg_mr(p.r, buf, sizeof buf, NET_PTR_CUDA, &mh) == ncclInvalidArgument);
  CHECK(mh == NULL);
  pair_close(n, &p);
}
