/* The net transport's side of the proxy thread. A "link" is one direction of data between two
 * ranks over the network this process uses (net.h: the built-in TCP one or a plugin): the
 * FIFO of this side in local memory, registered with the network, and two connections, the
 * data connection (sender -> receiver: slots, then a goodbye) and the back connection
 * (receiver -> sender: a failure or a goodbye). The sender's link sends filled slots and frees
 * each when its send completes; the receiver's link receives straight into free slots, publishes
 * tail like a local sender would (store, then wake a sleeping waiter).
 *
 * Links exist from setup()/connect() until free(); the proxy thread establishes the connections
 * (the network's connect/accept never block) and moves the slots. free() first flushes what the
 * executor posted, says goodbye, and waits (bounded) for the peer to answer or close.
 * Who may call: proxy/ (the progress thread). */
#ifndef MONEL_TRANSPORT_NET_LINK_H
#define MONEL_TRANSPORT_NET_LINK_H

/* One non-blocking pass over every live link; returns 1 if any byte or counter moved. */
int net_link_progress(void);
/* Sleep until the network may have news (a socket of the TCP network is ready, or one of its
 * helper threads finished a piece), at most `ms` milliseconds; with a plugin, a short sleep.
 * Changes of the local counters do not wake it: callers sleep briefly. */
void net_link_wait(int ms);
/* In a child after fork(): drop the parent's links without touching them. */
void net_link_forget(void);

#endif
