/* SPDX-License-Identifier: BSD-3-Clause */
/* Fuzz target: NCCL topology XML (topo/xml.c) as NCCL_TOPO_FILE hands it over, then the system
 * built from what parsed (topo/topo.c): every GPU's choice of network devices, and the tree
 * written back out and read again, which must give the same text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "topo/topo.h"
#include "topo/xml.h"

static char* render(const struct topo_xml* x, size_t* len) {
  char* buf = NULL;
  FILE* f = open_memstream(&buf, len);
  if (f == NULL) return NULL;
  topo_xml_write(x, f);
  fclose(f);
  return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  struct topo_xml* x = NULL;
  char why[256];
  if (topo_xml_parse((const char*)data, size, &x, why, sizeof why) != ncclSuccess) {
    if (x != NULL || why[0] == '\0') abort(); /* a refusal always says why */
    return 0;
  }
  size_t n1 = 0, n2 = 0;
  char* a = render(x, &n1);
  struct topo_xml* y = NULL;
  if (a == NULL || topo_xml_parse(a, n1, &y, why, sizeof why) != ncclSuccess) abort();
  char* b = render(y, &n2);
  if (b == NULL || n1 != n2 || memcmp(a, b, n1) != 0) abort();
  free(a);
  free(b);
  topo_xml_free(y);
  struct topo_opts o;
  struct topo_system* s = NULL;
  topo_opts_default(&o);
  if (topo_system_make(x, &o, &s) == ncclSuccess) {
    for (int g = 0; g < s->ngpus; g++) {
      int dev = topo_channel_dev(s, g, 0);
      if (s->nnets > 0 && dev < 0) abort();
    }
    topo_system_free(s);
  }
  return 0;
}
