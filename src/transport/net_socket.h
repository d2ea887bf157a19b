/* The TCP transport's side of the proxy thread. A "link" is one direction of data between two
 * ranks: one TCP connection and the FIFO of this side, in local memory. The sender's link sends
 * filled slots as frames (header with the slot size, then the bytes) and receives credits (the
 * receiver's head); the receiver's link writes frames straight into its FIFO's slots, publishes
 * tail like a local sender would (store, then wake a sleeping waiter) and sends head back.
 *
 * Links exist from a successful connect()/connected() until free(); free() first flushes what
 * the executor posted, says goodbye, and waits (bounded) for the peer to close its side.
 * Who may call: proxy/ (the progress thread). */
#ifndef MONEL_TRANSPORT_NET_SOCKET_H
#define MONEL_TRANSPORT_NET_SOCKET_H

/* One non-blocking pass over every live link; returns 1 if any byte or counter moved. */
int net_socket_progress(void);
/* Sleep until a socket of a live link is readable (or writable where a frame is half sent), at
 * most `ms` milliseconds. Changes of the local counters do not wake it: callers sleep briefly.
 * One caller at a time (it keeps its poll list between calls). */
void net_socket_wait(int ms);
/* In a child after fork(): drop the parent's links without touching them. */
void net_socket_forget(void);

#endif
