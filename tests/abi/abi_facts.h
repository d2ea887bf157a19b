/* SPDX-License-Identifier: BSD-3-Clause */
/* The ABI fact tables: one producer per (header, language), see abi_facts.c. */
#ifndef MONEL_TESTS_ABI_FACTS_H
#define MONEL_TESTS_ABI_FACTS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Receives one fact: a name such as "off.ncclConfig_t.netName" and its value
 * as text. */
typedef void (*abi_emit_fn)(void* ctx, const char* name, const char* value);

void abi_facts_nvidia_c(abi_emit_fn emit, void* ctx);
void abi_facts_nvidia_cxx(abi_emit_fn emit, void* ctx);
void abi_facts_monel_c(abi_emit_fn emit, void* ctx);
void abi_facts_monel_cxx(abi_emit_fn emit, void* ctx);

#ifdef __cplusplus
}
#endif

#endif
