/* SPDX-License-Identifier: BSD-3-Clause */
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
/* Sleep until the network may have news (its wait, net.h: a socket of the TCP network is ready,
 * UCX's worker has an event, ...) or net_link_kick is called, at most `ms` milliseconds (< 0:
 * no limit; only after net_link_arm(1) returned 0); with a network without wait (a plugin), a
 * short sleep. */
void net_link_wait(int ms);
/* arm = 1, before sleeping: sets the waiting word of every live link that the executor's side
 * moves (sender: tail; receiver: head) to FIFO_WAITING_PROXY, so that an executor posting or
 * freeing a slot calls net_link_kick (through proxy_kick), then a full fence; the caller makes
 * one more pass (net_link_progress) before it sleeps. Returns 1 when the sleep must be bounded:
 * a link is still connecting or hearing out a broken connection (timers run), or the network
 * has no doorbell (no wait and wake: a plugin). arm = 0, after sleeping: clears those words. */
int net_link_arm(int arm);
/* Wakes a thread sleeping in net_link_wait (the network's wake); also for a new link or a
 * stopping thread. Nothing to do with a network that has no doorbell (its waits are bounded). */
void net_link_kick(void);
/* In a child after fork(): drop the parent's links without touching them. */
void net_link_forget(void);

#endif
