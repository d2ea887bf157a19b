/* SPDX-License-Identifier: BSD-3-Clause */
/* Part of net_conformance.c (included once, after its helpers): the plugin loader's rules
 * (chosen, expect: also used by the UCX network's choice), the v8 interface's limits through
 * the adapter, and the test plugin's own count of requests in flight at close. */
#ifndef MONEL_TESTS_NET_CONFORMANCE_PLUGIN_H
#define MONEL_TESTS_NET_CONFORMANCE_PLUGIN_H

/* ---- the loader -------------------------------------------------------------------------- */

/* In a child with these settings: the name of the network net_get chose, or "error N". */
static void chosen(const char* plugin, const char* net, char* out, size_t len) {
  int fds[2];
  CHECK(pipe(fds) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (plugin)
      setenv("NCCL_NET_PLUGIN", plugin, 1);
    else
      unsetenv("NCCL_NET_PLUGIN");
    if (net)
      setenv("NCCL_NET", net, 1);
    else
      unsetenv("NCCL_NET");
    param_reload();
    const struct net* n = NULL;
    int dev = -1;
    ncclResult_t res = net_get(&n, &dev);
    char buf[128];
    int k = res == ncclSuccess ? snprintf(buf, sizeof buf, "%s", n->name)
                               : snprintf(buf, sizeof buf, "error %d", (int)res);
    if (write(fds[1], buf, (size_t)k) != k) _exit(2);
    _exit(0);
  }
  close(fds[1]);
  ssize_t k = read(fds[0], out, len - 1);
  out[k > 0 ? k : 0] = '\0';
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void expect(const char* plugin, const char* net, const char* want) {
  char got[128];
  chosen(plugin, net, got, sizeof got);
  printf("NCCL_NET_PLUGIN=%s NCCL_NET=%s: %s\n", plugin ? plugin : "(unset)", net ? net : "(unset)",
         got);
  CHECK(strcmp(got, want) == 0);
}

/* NCCL_NET_PLUGIN names the test plugin by path (the runner also puts its folder on
 * LD_LIBRARY_PATH, so that "testv8" finds libnccl-net-testv8.so). */
TEST(plugin_loader_rules) {
  const char* path = getenv("NCCL_NET_PLUGIN");
  CHECK(path != NULL && strchr(path, '/') != NULL);
  expect(path, NULL, "TestV8");
  expect("testv8", NULL, "TestV8");                /* NAME -> libnccl-net-NAME.so */
  expect("libnccl-net-testv8.so", NULL, "TestV8"); /* a full library name, as is */
  expect("nosuch,testv8", NULL, "TestV8");         /* a list, tried in order */
  expect("none", NULL, "Socket");
  expect("NONE", NULL, "Socket");
  expect("nosuch", NULL, "Socket");    /* not found: the built-in network */
  expect("libm.so.6", NULL, "Socket"); /* no ncclNetPlugin_v* symbol */
  expect(path, "Socket", "Socket");    /* NCCL_NET=Socket forces the built-in one */
  expect(path, "testv8", "TestV8");    /* by name, any case */
  expect(path, "IB", "error 5");       /* a name nobody has: ncclInvalidUsage */
  expect("none", "TestV8", "error 5");
  void* lib = dlopen("libnccl-net.so", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL)
    expect(NULL, NULL, "Socket"); /* unset: libnccl-net.so, absent here */
  else
    dlclose(lib);
}

/* v8 carries int sizes: a larger send is refused with a sentence; the v8 properties say so. */
TEST(plugin_v8_limits) {
  const struct net* n = the_net();
  struct net_props props;
  struct pair p;
  CHECK_RES(n->get_properties(0, &props), ncclSuccess);
  CHECK_EQ(props.max_bytes, INT_MAX);
  pair_open(n, &p);
  void* req = NULL;
  char byte = 0;
  CHECK(n->isend(p.s, &byte, (size_t)INT_MAX + 1, 0, NULL, NULL, &req) == ncclInvalidArgument);
  CHECK(req == NULL);
  one_message(n, &p, 1, 1000, (size_t)INT_MAX + 4096); /* a receive bound above 2^31-1 is fine */
  pair_close(n, &p);
}

/* The test plugin counts the requests in flight when a comm is closed (its report line in
 * MONEL_TEST_PLUGIN_LOG: "send|recv BYTES MSGS POSTED FLUSHES DEV FAILED"): 0 after a message
 * that completed on both ends; 2 receives and 1 send when they were posted and never completed
 * (the close contract broken, the connection up: FAILED 0); 1 receive and FAILED 1 when the
 * sender closed first and the receive failed. */
static void plugin_report(const char* log, char* got, size_t len) {
  FILE* f = fopen(log, "r");
  size_t k = 0;
  got[0] = '\0';
  if (f != NULL) {
    k = fread(got, 1, len - 1, f);
    fclose(f);
  }
  got[k] = '\0';
  printf("%s", got);
}

TEST(plugin_counts_requests_at_close) {
  const struct net* n = the_net();
  char log[] = "/tmp/plugin-close-XXXXXX", got[512], buf[64] = {0};
  int fd = mkstemp(log);
  CHECK(fd >= 0);
  close(fd);
  setenv("MONEL_TEST_PLUGIN_LOG", log, 1);
  struct pair p;
  pair_open(n, &p);
  one_message(n, &p, 1, 10, 10);
  pair_close(n, &p);
  plugin_report(log, got, sizeof got);
  CHECK(strcmp(got, "send 10 1 0 0 0 0\nrecv 10 1 0 0 0 0\n") == 0);
  CHECK(truncate(log, 0) == 0);
  pair_open(n, &p); /* two receives and a send of another tag, never completed */
  void *r[2] = {NULL, NULL}, *s = NULL;
  for (int i = 0; i < 2; i++) {
    void* d = buf + 8 * i;
    size_t room = 8;
    int tag = 5;
    CHECK_RES(n->irecv(p.r, 1, &d, &room, &tag, NULL, NULL, &r[i]), ncclSuccess);
    CHECK(r[i] != NULL);
  }
  CHECK_RES(n->isend(p.s, buf + 32, 8, 6, NULL, NULL, &s), ncclSuccess);
  CHECK(s != NULL);
  CHECK_RES(n->close_recv(p.r), ncclSuccess);
  CHECK_RES(n->close_send(p.s), ncclSuccess);
  CHECK_RES(n->close_listen(p.l), ncclSuccess);
  plugin_report(log, got, sizeof got);
  CHECK(strcmp(got, "recv 0 0 2 0 0 0\nsend 0 0 1 0 0 0\n") == 0);
  CHECK(truncate(log, 0) == 0);
  pair_open(n, &p); /* the sender closes first: the receive fails */
  void* d = buf;
  size_t room = 8;
  int tag = 7, done = 0;
  CHECK_RES(n->close_send(p.s), ncclSuccess);
  ncclResult_t res = n->irecv(p.r, 1, &d, &room, &tag, NULL, NULL, &r[0]); /* may fail already */
  CHECK(res != ncclSuccess || r[0] != NULL);
  double t0 = test_now();
  while (res == ncclSuccess && !done) {
    res = n->test(r[0], &done, NULL);
    CHECK(test_now() - t0 < LIMIT_S);
  }
  CHECK(res == ncclRemoteError && !done);
  CHECK_RES(n->close_recv(p.r), ncclSuccess); /* the failed receive is still the plugin's */
  CHECK_RES(n->close_listen(p.l), ncclSuccess);
  plugin_report(log, got, sizeof got);
  CHECK(strcmp(got, "send 0 0 0 0 0 0\nrecv 0 0 1 0 0 1\n") == 0);
  unsetenv("MONEL_TEST_PLUGIN_LOG");
  unlink(log);
}

#endif
