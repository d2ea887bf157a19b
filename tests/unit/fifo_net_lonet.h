/* A small TCP network (transport/net.h) over 127.0.0.1 for test_fifo_net.c: messages are a
 * 16-byte header (size, tag) and the bytes, in order on one socket per connection; requests
 * progress in order, only inside test(). EOF, a reset or a broken pipe is ncclRemoteError; a tag
 * or size other than the receive's is ncclInternalError. It plays the role the built-in TCP
 * network plays in the library, so that the proxy's side of network FIFO connections can be
 * checked between two processes on any machine. */
#ifndef MONEL_TESTS_FIFO_NET_LONET_H
#define MONEL_TESTS_FIFO_NET_LONET_H
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "transport/net.h"

struct lo_req {
  struct lo_comm* c;
  int is_send;
  char* buf;
  size_t size; /* send: bytes; receive: most bytes */
  int tag;
  uint64_t hdr[2];
  size_t at; /* bytes moved so far, header included */
};

struct lo_comm {
  int fd;
  struct lo_req q[NET_MAX_REQUESTS];
  int first, n;
};

static void lo_nodelay_nonblock(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static ncclResult_t lo_devices(int* n) {
  *n = 1;
  return ncclSuccess;
}

static ncclResult_t lo_props(int dev, struct net_props* p) {
  memset(p, 0, sizeof *p);
  strcpy(p->name, "lo");
  p->ptr_support = NET_PTR_HOST;
  return ncclSuccess;
}

static ncclResult_t lo_listen(int dev, void* handle, void** out) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || bind(fd, (struct sockaddr*)&a, sizeof a) || listen(fd, 16) ||
      getsockname(fd, (struct sockaddr*)&a, &len))
    return ncclSystemError;
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  memcpy(handle, &a.sin_port, sizeof a.sin_port);
  struct lo_comm* c = calloc(1, sizeof *c);
  c->fd = fd;
  *out = c;
  return ncclSuccess;
}

static ncclResult_t lo_connect(int dev, void* handle, void** out) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  memcpy(&a.sin_port, handle, sizeof a.sin_port);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (struct sockaddr*)&a, sizeof a)) return ncclRemoteError;
  lo_nodelay_nonblock(fd);
  struct lo_comm* c = calloc(1, sizeof *c);
  c->fd = fd;
  *out = c;
  return ncclSuccess;
}

static ncclResult_t lo_accept(void* listen_comm, void** out) {
  struct lo_comm* l = listen_comm;
  *out = NULL;
  int fd = accept(l->fd, NULL, NULL);
  if (fd < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? ncclSuccess : ncclSystemError;
  lo_nodelay_nonblock(fd);
  struct lo_comm* c = calloc(1, sizeof *c);
  c->fd = fd;
  *out = c;
  return ncclSuccess;
}

static ncclResult_t lo_reg(void* comm, void* data, size_t size, int type, void** mh) {
  *mh = comm;
  return ncclSuccess;
}

static ncclResult_t lo_dereg(void* comm, void* mh) {
  return ncclSuccess;
}

static ncclResult_t lo_post(struct lo_comm* c, int is_send, char* buf, size_t size, int tag,
                            void** request) {
  *request = NULL;
  if (c->n == NET_MAX_REQUESTS) return ncclSuccess;
  struct lo_req* r = &c->q[(c->first + c->n++) % NET_MAX_REQUESTS];
  *r = (struct lo_req){c, is_send, buf, size, tag, {size, (uint64_t)tag}, 0};
  *request = r;
  return ncclSuccess;
}

static ncclResult_t lo_isend(void* comm, void* data, size_t size, int tag, void* mh, void** req) {
  return lo_post(comm, 1, data, size, tag, req);
}

static ncclResult_t lo_irecv(void* comm, int n, void** data, size_t* sizes, int* tags, void** mh,
                             void** req) {
  if (n != 1) return ncclInternalError;
  return lo_post(comm, 0, data[0], sizes[0], tags[0], req);
}

/* Moves the oldest request's bytes; 1 when it is complete. */
static ncclResult_t lo_move(struct lo_req* r, int* complete) {
  *complete = 0;
  for (;;) {
    size_t total = 16 + (size_t)r->hdr[0];
    if (r->at == total) break;
    char* p = r->at < 16 ? (char*)r->hdr + r->at : r->buf + (r->at - 16);
    size_t want = r->at < 16 ? 16 - r->at : total - r->at;
    ssize_t k = r->is_send ? send(r->c->fd, p, want, MSG_NOSIGNAL) : recv(r->c->fd, p, want, 0);
    if (k == 0 && !r->is_send) return ncclRemoteError;
    if (k < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return ncclSuccess;
      return ncclRemoteError;
    }
    r->at += (size_t)k;
    if (!r->is_send && r->at == 16 && (r->hdr[0] > r->size || r->hdr[1] != (uint64_t)r->tag))
      return ncclInternalError;
  }
  *complete = 1;
  return ncclSuccess;
}

static ncclResult_t lo_test(void* request, int* done, size_t* size) {
  struct lo_req* r = request;
  struct lo_comm* c = r->c;
  *done = 0;
  if (r != &c->q[c->first]) return ncclSuccess; /* an older one goes first */
  int complete = 0;
  ncclResult_t res = lo_move(r, &complete);
  if (res != ncclSuccess || !complete) return res;
  if (size) *size = (size_t)r->hdr[0];
  c->first = (c->first + 1) % NET_MAX_REQUESTS;
  c->n--;
  *done = 1;
  return ncclSuccess;
}

static ncclResult_t lo_close(void* comm) {
  struct lo_comm* c = comm;
  close(c->fd);
  free(c);
  return ncclSuccess;
}

static const struct net lo_net = {
    .name = "test-loopback",
    .devices = lo_devices,
    .get_properties = lo_props,
    .listen = lo_listen,
    .connect = lo_connect,
    .accept = lo_accept,
    .reg_mr = lo_reg,
    .dereg_mr = lo_dereg,
    .isend = lo_isend,
    .irecv = lo_irecv,
    .test = lo_test,
    .close_send = lo_close,
    .close_recv = lo_close,
    .close_listen = lo_close,
};

#endif
