/* SPDX-License-Identifier: BSD-3-Clause */
/* Monel's declarations of UCX's interface (src/transport/ucx_api.h) against UCX's own header:
 * every size, field offset and constant that the UCX network relies on must be the same, or the
 * UCX network, built without UCX's headers, would hand UCX wrong structs. Built where UCX's
 * header is installed (tests/install-deps installs it for make test). Prints each difference and
 * exits 1 on any. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <ucp/api/ucp.h>
#include "ucx_api_item.h"

#define SZ(t)     {#t, (long long)sizeof(t)},
#define OFF(t, f) {#t "." #f, (long long)offsetof(t, f)},
#define VAL(v)    {#v, (long long)(v)},
static const struct ucx_item ucx_items_ucx[] = {
#include "ucx_api_list.h"
    {NULL, 0}};

int main(void) {
  int n = 0, bad = 0;
  for (; ucx_items_ucx[n].what != NULL; n++) {
    const struct ucx_item *u = &ucx_items_ucx[n], *m = &ucx_items_monel[n];
    if (m->what == NULL || strcmp(u->what, m->what) != 0) {
      printf("FAIL the two lists differ at entry %d (%s)\n", n, u->what);
      return 1;
    }
    if (u->value != m->value) {
      printf("FAIL %s: UCX %lld, Monel %lld\n", u->what, u->value, m->value);
      bad++;
    }
  }
  if (ucx_items_monel[n].what != NULL) {
    printf("FAIL Monel's list is longer than UCX's\n");
    return 1;
  }
  printf("%s %d sizes, offsets and values of UCX %d.%d's header, %d different\n",
         bad ? "FAIL" : "PASS", n, UCP_API_MAJOR, UCP_API_MINOR, bad);
  return bad != 0;
}
