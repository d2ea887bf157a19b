/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared memory segments between processes of one host, with no name in the file system: one
 * process creates a segment (a memfd) and gets a handle string, peers map it by that handle
 * (through /proc/<pid>/fd), and the creator lets the handle go (os_shm_unlink: closes its fd) once
 * every peer has mapped it. Nothing is created under /dev/shm, so a job killed at any moment
 * leaves nothing behind; the kernel frees the memory with the last mapping. */
#ifndef MONEL_OS_SHM_H
#define MONEL_OS_SHM_H
#include <stddef.h>
#include "nccl.h"

#define OS_SHM_NAME 48

/* Create and map a zeroed segment of len bytes; its handle (for os_shm_open) goes to name. */
ncclResult_t os_shm_create(size_t len, char name[OS_SHM_NAME], void** ptr);
/* Map the segment `name` of len bytes created by another process (needs its creator's handle
 * open: call before the creator's os_shm_unlink). */
ncclResult_t os_shm_open(const char* name, size_t len, void** ptr);
void os_shm_unmap(void* ptr, size_t len);
/* The creator lets the handle go (peers can no longer open it); no-op elsewhere. */
void os_shm_unlink(const char* name);

#endif
