/* SPDX-License-Identifier: BSD-3-Clause */
/* Fuzz target: what Monel parses of a network connection a peer describes
 * (transport/net_transport.c): the descriptor a receiving rank sends over the bootstrap (magic,
 * FIFO slots and size, the network's handle), taken by the sending rank's connect, then the
 * connection's first step, which hands the handle to the network's connect. With an external
 * net plugin that handle is the plugin's to parse (Monel passes it on unread); here the network
 * is the built-in one, so its connect parses it too (transport/net_tcp.c), with the address
 * made a loopback port where nothing listens (the connection is refused within the call, so no
 * connect is left in progress when the link is freed). Input: the descriptor's bytes (byte 0 bit 0
 * set: its magic made right, so the fields behind it get the bytes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include "transport/net_link_impl.h"
#include "transport/net_tcp.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static union sock_addr dead; /* bound, not listening */
  if (dead.sa.sa_family == 0) {
    setenv("NCCL_NET", "Socket", 1);
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t len = sizeof dead;
    dead.sin.sin_family = AF_INET;
    dead.sin.sin_addr.s_addr = htonl(0x7f000001);
    if (fd < 0 || bind(fd, &dead.sa, sizeof dead.sin) != 0 || getsockname(fd, &dead.sa, &len) != 0)
      abort();
  }
  if (size < 1) return 0;
  unsigned char desc[CONN_DESC_BYTES];
  memset(desc, 0, sizeof desc);
  memcpy(desc, data + 1, size - 1 < sizeof desc ? size - 1 : sizeof desc);
  struct net_desc d;
  memcpy(&d, desc, sizeof d);
  if (data[0] & 1) d.magic = LINK_MAGIC;
  struct tcp_handle h;
  memcpy(&h, d.handle, sizeof h);
  h.addr = dead; /* nothing leaves this machine */
  memcpy(d.handle, &h, sizeof h);
  memcpy(desc, &d, sizeof d);
  struct conn c;
  memset(&c, 0, sizeof c);
  c.peer = 1;
  (void)net_socket_transport.connect(&c, desc);
  if (c.ctrl != NULL) /* nothing to drain: free() takes one step of the link, then ends it */
    __atomic_store_n(&c.ctrl->closed, 1, __ATOMIC_RELEASE);
  net_socket_transport.free(&c);
  return 0;
}
