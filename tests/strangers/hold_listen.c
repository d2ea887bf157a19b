/* SPDX-License-Identifier: BSD-3-Clause */
/* A test aid for tests/strangers/run, preloaded into every process of a job (LD_PRELOAD): each
 * TCP listen() of the job is held until the strangers had their turn at the new port. It tells
 * the stranger (stranger.py, at the Unix socket named by STRANGER_HOLD_SOCK) "pid host port",
 * and returns only once the stranger answers "go": by then every stranger connection to the
 * port is in its accept queue, ahead of any connection of the job that learns the port from
 * this listener (so each kind of listener meets the strangers first, without a race). Without
 * STRANGER_HOLD_SOCK it is a plain listen(); any failure to reach the stranger aborts the
 * process, so a test can never pass without its strangers. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void die(const char* what) {
  fprintf(stderr, "hold_listen (pid %d): %s: %s\n", (int)getpid(), what, strerror(errno));
  abort();
}

static void hold(const char* path, const struct sockaddr_storage* a) {
  char host[INET6_ADDRSTRLEN], line[128], reply[8];
  int port;
  if (a->ss_family == AF_INET) {
    const struct sockaddr_in* in = (const struct sockaddr_in*)a;
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else {
    const struct sockaddr_in6* in6 = (const struct sockaddr_in6*)a;
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
  }
  struct sockaddr_un u = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof u.sun_path) die("STRANGER_HOLD_SOCK is too long");
  strcpy(u.sun_path, path);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0 || connect(s, (struct sockaddr*)&u, sizeof u) != 0) die("cannot reach the stranger");
  int n = snprintf(line, sizeof line, "%d %s %d\n", (int)getpid(), host, port);
  if (write(s, line, (size_t)n) != n) die("cannot tell the stranger");
  size_t got = 0;
  while (got < 3) {
    ssize_t k = read(s, reply + got, 3 - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) die("the stranger did not answer");
    got += (size_t)k;
  }
  if (memcmp(reply, "go\n", 3) != 0) die("the stranger answered something else");
  close(s);
}

int listen(int fd, int backlog) {
  static int (*real)(int, int);
  if (real == NULL) real = (int (*)(int, int))dlsym(RTLD_NEXT, "listen");
  int r = real(fd, backlog);
  const char* path = getenv("STRANGER_HOLD_SOCK");
  struct sockaddr_storage a;
  socklen_t len = sizeof a;
  if (r != 0 || path == NULL || getsockname(fd, (struct sockaddr*)&a, &len) != 0 ||
      (a.ss_family != AF_INET && a.ss_family != AF_INET6))
    return r;
  int saved = errno;
  hold(path, &a);
  errno = saved;
  return r;
}
