/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared memory segments without a name in the file system: see shm.h.
 *
 * A segment is a memfd (anonymous tmpfs file) that its creator keeps open until every peer has
 * mapped it. Its handle string is "memfd:<pid>:<fd>:<inode>"; a peer of the same host opens it as
 * /proc/<pid>/fd/<fd> and checks the inode and the size, so a recycled fd number or a pid of
 * another pid namespace is refused rather than mapped. Nothing is ever created under /dev/shm: a
 * job killed at any moment, by any signal, leaves nothing behind; the kernel frees the memory
 * when the last process that maps it is gone. */
#include "os/shm.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/log.h"

#define HANDLE_PREFIX "memfd:"

static ncclResult_t map_fd(int fd, const char* name, size_t len, void** ptr) {
  void* mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mem == MAP_FAILED) {
    WARN("mmap of shared memory %s (%zu bytes) failed: %s", name, len, strerror(errno));
    return ncclSystemError;
  }
  *ptr = mem;
  return ncclSuccess;
}

static int parse_handle(const char* name, int* pid, int* fd, uint64_t* ino) {
  if (strncmp(name, HANDLE_PREFIX, strlen(HANDLE_PREFIX)) != 0) return -1;
  return sscanf(name + strlen(HANDLE_PREFIX), "%d:%d:%" SCNu64, pid, fd, ino) == 3 ? 0 : -1;
}

ncclResult_t os_shm_create(size_t len, char name[OS_SHM_NAME], void** ptr) {
  struct stat st;
  int fd = memfd_create("monel-shm", MFD_CLOEXEC);
  if (fd < 0) {
    WARN("memfd_create failed: %s; shared memory between ranks of one host needs Linux 3.17 or "
         "later and a free file descriptor",
         strerror(errno));
    return ncclSystemError;
  }
  if (ftruncate(fd, (off_t)len) != 0 || fstat(fd, &st) != 0) {
    WARN("could not size shared memory to %zu bytes: %s (is memory or the tmpfs limit exhausted?)",
         len, strerror(errno));
    close(fd);
    return ncclSystemError;
  }
  snprintf(name, OS_SHM_NAME, HANDLE_PREFIX "%d:%d:%" PRIu64, (int)getpid(), fd,
           (uint64_t)st.st_ino);
  ncclResult_t res = map_fd(fd, name, len, ptr);
  if (res != ncclSuccess) {
    close(fd);
    name[0] = '\0';
  }
  return res;
}

ncclResult_t os_shm_open(const char* name, size_t len, void** ptr) {
  int pid = 0, nfd = 0, fd = -1;
  uint64_t ino = 0;
  char path[64];
  struct stat st;
  ncclResult_t res = ncclSystemError;
  if (parse_handle(name, &pid, &nfd, &ino) != 0) {
    WARN("shared memory handle '%.48s' from a peer is malformed; every rank must run the same "
         "Monel version",
         name);
    return ncclSystemError;
  }
  snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, nfd);
  fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    WARN("could not open the shared memory of pid %d (%s): %s; ranks that share a host must run "
         "as the same user in the same pid namespace (a container per rank needs a shared pid "
         "namespace) and stay dumpable",
         pid, path, strerror(errno));
    return ncclSystemError;
  }
  if (fstat(fd, &st) != 0 || (uint64_t)st.st_ino != ino || (uint64_t)st.st_size < len) {
    WARN("%s is not the shared memory the peer offered (inode or size differs): the peer's pid "
         "is of another pid namespace; run the ranks of one host in one pid namespace",
         path);
    goto out;
  }
  res = map_fd(fd, name, len, ptr);
out:
  close(fd);
  return res;
}

void os_shm_unmap(void* ptr, size_t len) {
  if (ptr) munmap(ptr, len);
}

void os_shm_unlink(const char* name) {
  int pid = 0, fd = -1;
  uint64_t ino = 0;
  struct stat st;
  if (name == NULL || parse_handle(name, &pid, &fd, &ino) != 0 || pid != (int)getpid()) return;
  /* close only the memfd we made (a child after fork, or a reused number, is left alone) */
  if (fstat(fd, &st) == 0 && (uint64_t)st.st_ino == ino) close(fd);
}
