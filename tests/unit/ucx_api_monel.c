/* SPDX-License-Identifier: BSD-3-Clause */
/* Monel's side of tests/unit/test_ucx_api.c: the list of sizes, offsets and values computed
 * from src/transport/ucx_api.h (UCX's header is not included here: the two declare the same
 * names). */
#include <stddef.h>
#include "transport/ucx_api.h"
#include "ucx_api_item.h"

#define SZ(t)     {#t, (long long)sizeof(t)},
#define OFF(t, f) {#t "." #f, (long long)offsetof(t, f)},
#define VAL(v)    {#v, (long long)(v)},
const struct ucx_item ucx_items_monel[] = {
#include "ucx_api_list.h"
    {NULL, 0}};
