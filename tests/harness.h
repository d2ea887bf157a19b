/* SPDX-License-Identifier: BSD-3-Clause */
/* Monel's small test runner. A test file defines tests with TEST(name) { ... } and includes this
 * header once; main() runs each test in its own process (fork) with a timeout (TEST_TIMEOUT
 * seconds, default 120), prints "ok"/"FAIL" per test, and exits non-zero if any failed.
 * `prog name` runs only the tests whose name contains `name`.
 * CHECK(cond) / CHECK_EQ(a, b) / CHECK_RES(call, expected) fail the test with file:line. */
#ifndef MONEL_TESTS_HARNESS_H
#define MONEL_TESTS_HARNESS_H
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TEST_TIMEOUT
#define TEST_TIMEOUT 120
#endif
#define TEST_MAX 256

typedef void (*test_fn)(void);
static struct {
  const char* name;
  test_fn fn;
} test_list[TEST_MAX];
static int test_count;

#define TEST(tname)                                                                                \
  static void test_##tname(void);                                                                  \
  __attribute__((constructor)) static void register_##tname(void) {                                \
    if (test_count < TEST_MAX) {                                                                   \
      test_list[test_count].name = #tname;                                                         \
      test_list[test_count].fn = test_##tname;                                                     \
      test_count++;                                                                                \
    }                                                                                              \
  }                                                                                                \
  static void test_##tname(void)

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                     \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define CHECK_EQ(a, b)                                                                             \
  do {                                                                                             \
    long long a_ = (long long)(a), b_ = (long long)(b);                                            \
    if (a_ != b_) {                                                                                \
      fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, #a, a_, #b,  \
              b_);                                                                                 \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define CHECK_RES(call, expected) CHECK_EQ((call), (expected))

static double test_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* TEST_TIMEOUT in the environment overrides the file's timeout (sanitizer runs are slower). */
static int test_timeout(void) {
  const char* env = getenv("TEST_TIMEOUT");
  return env && atoi(env) > 0 ? atoi(env) : TEST_TIMEOUT;
}

static int test_run_one(int i) {
  double t0 = test_now();
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    alarm(test_timeout());
    test_list[i].fn();
    fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  kill(-pid, SIGKILL); /* anything the test left behind */
  int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (ok)
    printf("ok   %-40s %.2fs\n", test_list[i].name, test_now() - t0);
  else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    printf("FAIL %-40s timed out after %ds\n", test_list[i].name, test_timeout());
  else if (WIFSIGNALED(status))
    printf("FAIL %-40s killed by signal %d\n", test_list[i].name, WTERMSIG(status));
  else
    printf("FAIL %-40s exit status %d\n", test_list[i].name, WEXITSTATUS(status));
  fflush(stdout);
  return ok;
}

int main(int argc, char** argv) {
  int failed = 0, ran = 0;
  for (int i = 0; i < test_count; i++) {
    if (argc > 1 && strstr(test_list[i].name, argv[1]) == NULL) continue;
    ran++;
    if (!test_run_one(i)) failed++;
  }
  printf("%s: %d tests, %d failed\n", argv[0], ran, failed);
  return failed ? 1 : (ran ? 0 : 1);
}
#endif
