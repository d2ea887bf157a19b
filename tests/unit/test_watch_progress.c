/* SPDX-License-Identifier: BSD-3-Clause */
/* The watch's reading of a GPU comm's progress counters (core/watch_report.h
 * watch_progress_from): what counts as pending after eager launches, graph replays, a running
 * block of a partly finished operation, and nothing at all. */
#include "core/watch_report.h"
#include "harness.h"

static void expect(uint64_t eager, uint64_t done_seq, int running, uint64_t want_issued,
                   uint64_t want_done) {
  uint64_t issued = 99, done = 99;
  watch_progress_from(eager, done_seq, running, &issued, &done);
  if (issued != want_issued || done != want_done) {
    fprintf(stderr, "eager %llu done_seq %llu running %d: issued %llu done %llu, want %llu %llu\n",
            (unsigned long long)eager, (unsigned long long)done_seq, running,
            (unsigned long long)issued, (unsigned long long)done, (unsigned long long)want_issued,
            (unsigned long long)want_done);
    exit(1);
  }
}

TEST(idle_comm_has_nothing_pending) {
  expect(0, 0, 0, 0, 0);
  expect(7, 7, 0, 7, 7);
}

TEST(eager_launch_not_finished_is_pending) {
  expect(3, 2, 0, 3, 2); /* queued behind other work, not started */
  expect(3, 2, 1, 3, 2); /* started: op 2 was over before op 3 could start */
}

TEST(running_block_of_finished_seq_is_pending) {
  /* Some blocks of op 2 finished (done_seq 2) while others still wait (a mismatch): op 2 is not
   * over. */
  expect(2, 2, 1, 2, 1);
}

TEST(graph_replay_is_pending_while_it_runs) {
  expect(0, 0, 1, 1, 0); /* the first replay, no block finished yet */
  expect(0, 1, 1, 1, 0); /* later replays of a graph holding op 1 */
  expect(0, 1, 0, 1, 1); /* over */
  expect(4, 5, 1, 5, 4); /* a graph captured after the last eager launch */
}
