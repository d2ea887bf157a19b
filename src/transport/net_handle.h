/* SPDX-License-Identifier: BSD-3-Clause */
/* Opaque handles for the objects a network hands out (comms, requests, registrations): a
 * generation-checked table, so that a stale handle (used after close, or a request tested after
 * it finished) or a made-up one is refused with a sentence instead of touching freed memory.
 * Handles are never NULL and never valid pointers. new/free take a lock; get does not.
 * Who may call: the network implementations (net_tcp*.c, net_plugin.c). */
#ifndef MONEL_TRANSPORT_NET_HANDLE_H
#define MONEL_TRANSPORT_NET_HANDLE_H

enum net_kind {
  NET_KIND_LISTEN = 1,
  NET_KIND_SEND,
  NET_KIND_RECV,
  NET_KIND_REQUEST,
  NET_KIND_MR,
  NET_KIND_CONNECTING /* a connect() in progress, named in the handle between its calls */
};

/* A handle for obj, or NULL when the table is full (WARNs). */
void* net_handle_new(void* obj, enum net_kind kind);
/* The object behind a live handle of that kind, else NULL (silent: the caller WARNs). */
void* net_handle_get(const void* handle, enum net_kind kind);
/* Ends a handle; a stale or NULL one is ignored. */
void net_handle_free(const void* handle);
/* A word for logs: "send comm", "request", ... */
const char* net_kind_name(enum net_kind kind);

#endif
