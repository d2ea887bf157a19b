/* SPDX-License-Identifier: BSD-3-Clause */
/* Every tag of boot_send/boot_recv, in one place, so that no two users of a comm's bootstrap
 * share one. Messages between two ranks with the same tag arrive in order; a user that sets up
 * a connection sends its descriptor on the tag and the acknowledgement on tag + 1 (the tree
 * takes two per tree). Values are four ASCII letters (the last one 0 where the tag is a base),
 * so a tag reads in a trace. */
#ifndef MONEL_BOOT_TAGS_H
#define MONEL_BOOT_TAGS_H

enum boot_tag {
  BOOT_TAG_SPLIT_ID = 0x53504c49,    /* "SPLI" core/split.c: a new comm's id, from its first rank */
  BOOT_TAG_CPU_RING = 0x434f4e00,    /* "CON"  cpu/engine.c: ring FIFO descriptor; + 1: ack */
  BOOT_TAG_CPU_P2P = 0x50325000,     /* "P2P"  cpu/p2p.c: point-to-point FIFO; + 1: ack */
  BOOT_TAG_CPU_ONESHOT = 0x4f534800, /* "OSH"  cpu/oneshot.c: the same FIFOs; + 1: ack */
  BOOT_TAG_CPU_TREE = 0x54524500,    /* "TRE"  cpu/tree.c: + 2 * tree: descriptor; + 1: ack */
  BOOT_TAG_GPU_FIFO = 0x47464600,    /* "GFF"  gpu/connect.c: my FIFO, to the previous rank */
  BOOT_TAG_GPU_NET = 0x474e4500,     /* "GNE"  gpu/net.c: my receive handles, to my sender */
  BOOT_TAG_GPU_NET_P2P = 0x474e5000, /* "GNP"  gpu/net.c: the same for a pair's first use */
  BOOT_TAG_ONESIDED = 0x4f4e4500,    /* "ONE"  api/onesided.c: puts and signals, host route */
};

#endif
