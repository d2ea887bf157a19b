/* SPDX-License-Identifier: BSD-3-Clause */
/* NCCL's topology XML (NCCL_TOPO_FILE, NCCL_TOPO_DUMP_FILE): a tree of elements with attributes
 * and no text. The reader accepts every file NCCL's reader accepts; it is more lenient in blank
 * space (tabs, newlines between attributes) and in an `<?xml ...?>` declaration, and refuses what
 * is not a well-formed tree (an unclosed element, a close tag of another name, text between
 * elements, a repeated attribute) with a sentence that names the line. Values are kept as written
 * (NCCL decodes no entities). The writer produces NCCL's dump layout: two spaces per level,
 * `<name a="v"/>` for an element without children, attributes in the order they were set.
 * Pure (no globals); called by topo/ and its tests. */
#ifndef MONEL_TOPO_XML_H
#define MONEL_TOPO_XML_H
#include <stddef.h>
#include <stdio.h>
#include "nccl.h"

struct topo_attr {
  char* name;
  char* value;
};

struct topo_xml {
  char* name;
  struct topo_attr* attrs;
  int nattrs;
  struct topo_xml** kids;
  int nkids;
  int cap_kids;
  struct topo_xml* parent;
  int keep; /* in use on this host (topo.c trims the rest); never read from or written to files */
};

/* Parses text[0..len) into *out. On failure *out is NULL, why holds a sentence, and the result
 * is ncclInvalidArgument. No log lines (the fuzzer calls it). */
ncclResult_t topo_xml_parse(const char* text, size_t len, struct topo_xml** out, char* why,
                            size_t whylen);
/* Reads and parses a file; a file that cannot be read or parsed is a WARN naming it. */
ncclResult_t topo_xml_load(const char* path, struct topo_xml** out);
/* Writes the tree in the dump layout. */
ncclResult_t topo_xml_write(const struct topo_xml* x, FILE* f);
ncclResult_t topo_xml_save(const struct topo_xml* x, const char* path);

/* A new element, or NULL when out of memory. */
struct topo_xml* topo_xml_new(const char* name);
/* Adds kid to parent's children: last, or (sorted_by_busid) in the order of their busid. */
ncclResult_t topo_xml_add(struct topo_xml* parent, struct topo_xml* kid, int sorted_by_busid);
/* Takes x out of its parent's children (x itself is kept). */
void topo_xml_unlink(struct topo_xml* x);
void topo_xml_free(struct topo_xml* x);

/* The value of attribute name, or NULL. */
const char* topo_xml_get(const struct topo_xml* x, const char* name);
/* Sets (replaces or appends) an attribute. */
ncclResult_t topo_xml_set(struct topo_xml* x, const char* name, const char* value);
/* Sets it only when x lacks it (what a file says wins over what detection finds). */
ncclResult_t topo_xml_fill(struct topo_xml* x, const char* name, const char* value);
/* The first element of that name in x's subtree (x included, depth first) whose attribute attr
 * equals value (attr NULL: any), or NULL. */
struct topo_xml* topo_xml_find(struct topo_xml* x, const char* name, const char* attr,
                               const char* value);
/* The first child of x of that name, or NULL. */
struct topo_xml* topo_xml_child(const struct topo_xml* x, const char* name);

#endif
