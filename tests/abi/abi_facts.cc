/* SPDX-License-Identifier: BSD-3-Clause */
// The C++ build of abi_facts.c: adds the facts only C++ can see (exact types of
// fields, constants and function signatures, through typeid).
#include "abi_facts.c"
