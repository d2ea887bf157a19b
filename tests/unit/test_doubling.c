/* SPDX-License-Identifier: BSD-3-Clause */
/* algo/doubling.h: recursive doubling AllReduce, played for every rank count 2..64 with values
 * that record how they were made ("x3" an input, "P3" its pre step, "(a+b)" a fold, "A(...)" the
 * post step):
 *  - every rank ends with the same string (the same bits on every rank), which folds each
 *    rank's pre(input) exactly once and applies post once, outermost;
 *  - the hops pair up: r sends to q in its i-th send to q exactly when q receives from r in its
 *    i-th receive from r (both ends of a channel 0 FIFO take the same steps), and a rank
 *    exchanges with log2(n) peers, 2 more or fewer where n is not a power of two;
 *  - the hop counts match the cost the header states;
 *  - AllGather on a power of two: every rank ends with every piece in rank order, each round's
 *    block next to the partner's;
 *  - the default rule (topo_doubling_from): from 8 ranks while each rank on the machine has 2
 *    CPUs, never with fewer (as measured: 8 ranks on 16 cores doubled, 12 did not). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "algo/doubling.h"
#include "topo/host.h"
#include "harness.h"

#define MAXN 64
#define VLEN 4096

struct msg {
  char v[VLEN];
  int raw;
};

/* A FIFO per ordered pair (from, to), a few slots deep. */
#define DEPTH 4
static struct msg box[MAXN][MAXN][DEPTH];
static int box_head[MAXN][MAXN], box_tail[MAXN][MAXN];

static void pre(char* out, const char* v, int raw) {
  char t[VLEN];
  if (raw) { /* "x7" -> "P7" */
    snprintf(t, sizeof t, "P%s", v + 1);
    strcpy(out, t);
  } else if (out != v) {
    strcpy(out, v);
  }
}

static void fold(char* out, const char* lo, int lo_raw, const char* hi, int hi_raw, int last) {
  char a[VLEN], b[VLEN], t[VLEN];
  pre(a, lo, lo_raw);
  pre(b, hi, hi_raw);
  CHECK(strlen(a) + strlen(b) + 8 < VLEN);
  snprintf(t, sizeof t, last ? "A((%s+%s))" : "(%s+%s)", a, b);
  strcpy(out, t);
}

/* Plays the schedule on n ranks; res[r] gets rank r's result. */
static void play(int n, char res[][VLEN]) {
  char val[MAXN][VLEN], in[MAXN][VLEN];
  int hop[MAXN], sent[MAXN] = {0}; /* hop in progress; its send done */
  memset(box_head, 0, sizeof box_head);
  memset(box_tail, 0, sizeof box_tail);
  for (int r = 0; r < n; r++) {
    snprintf(in[r], VLEN, "x%d", r);
    val[r][0] = '\0';
    hop[r] = 0;
  }
  for (int progress = 1; progress;) {
    progress = 0;
    for (int r = 0; r < n; r++) {
      while (hop[r] < doubling_nhops(r, n)) {
        struct doubling_hop d = doubling_hop_of(r, n, hop[r]);
        CHECK(d.peer >= 0 && d.peer < n && d.peer != r);
        const char* mine = d.mine_raw ? in[r] : val[r];
        if (doubling_sends(d.kind) && !sent[r]) {
          int* t = &box_tail[r][d.peer];
          CHECK(*t - box_head[r][d.peer] < DEPTH);
          strcpy(box[r][d.peer][*t % DEPTH].v, mine);
          box[r][d.peer][*t % DEPTH].raw = d.mine_raw;
          (*t)++;
          sent[r] = 1;
          progress = 1;
        }
        if (doubling_receives(d.kind)) {
          int* h = &box_head[d.peer][r];
          if (*h == box_tail[d.peer][r]) break; /* not there yet */
          struct msg* m = &box[d.peer][r][*h % DEPTH];
          (*h)++;
          CHECK_EQ(m->raw, d.theirs_raw); /* both ends agree on what travels */
          if (d.kind == DOUBLING_GIVE) {
            CHECK(!m->raw);
            strcpy(val[r], m->v);
          } else if (d.mine_lower) {
            fold(val[r], mine, d.mine_raw, m->v, m->raw, d.last);
          } else {
            fold(val[r], m->v, m->raw, mine, d.mine_raw, d.last);
          }
        }
        hop[r]++;
        sent[r] = 0;
        progress = 1;
      }
    }
  }
  for (int r = 0; r < n; r++) {
    CHECK_EQ(hop[r], doubling_nhops(r, n)); /* nobody is stuck */
    strcpy(res[r], val[r]);
  }
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++) CHECK_EQ(box_head[a][b], box_tail[a][b]); /* all consumed */
}

TEST(every_rank_gets_the_same_whole_reduction) {
  static char res[MAXN][VLEN];
  for (int n = 2; n <= MAXN; n++) {
    play(n, res);
    for (int r = 1; r < n; r++) CHECK(strcmp(res[r], res[0]) == 0);
    CHECK(strncmp(res[0], "A(", 2) == 0);
    CHECK(strstr(res[0] + 1, "A(") == NULL); /* post once */
    CHECK(strchr(res[0], 'x') == NULL);      /* pre applied to every input */
    for (int r = 0; r < n; r++) {            /* each input once */
      char tok[16];
      int count = 0;
      snprintf(tok, sizeof tok, "P%d", r);
      for (const char* s = res[0]; (s = strstr(s, tok)) != NULL; s++)
        if (s[strlen(tok)] < '0' || s[strlen(tok)] > '9') count++;
      CHECK_EQ(count, 1);
    }
  }
}

TEST(hops_pair_up_and_count_as_stated) {
  for (int n = 2; n <= MAXN; n++) {
    int p = doubling_pow2(n), rounds = doubling_rounds(n);
    CHECK(p <= n && 2 * p > n && (1 << rounds) == p);
    for (int r = 0; r < n; r++) {
      int nh = doubling_nhops(r, n);
      CHECK_EQ(nh, r >= p ? 1 : rounds + (r < n - p ? 2 : 0));
      for (int h = 0; h < nh; h++) {
        struct doubling_hop d = doubling_hop_of(r, n, h);
        /* the peer has exactly one hop with me of the matching direction, at the same count */
        int sends_to = 0, recvs_from = 0, my_sends = 0, my_recvs = 0;
        for (int i = 0; i < nh; i++) {
          struct doubling_hop e = doubling_hop_of(r, n, i);
          if (e.peer != d.peer) continue;
          my_sends += doubling_sends(e.kind), my_recvs += doubling_receives(e.kind);
        }
        for (int i = 0; i < doubling_nhops(d.peer, n); i++) {
          struct doubling_hop e = doubling_hop_of(d.peer, n, i);
          if (e.peer != r) continue;
          sends_to += doubling_sends(e.kind), recvs_from += doubling_receives(e.kind);
        }
        CHECK_EQ(my_sends, recvs_from);
        CHECK_EQ(my_recvs, sends_to);
        CHECK(my_sends <= 1 && my_recvs <= 1);
        CHECK_EQ(d.last, d.kind == DOUBLING_EXCHANGE && h == nh - 1 - (r < n - p ? 1 : 0));
      }
    }
  }
  CHECK_EQ(doubling_nhops(0, 1), 0);
  CHECK_EQ(doubling_rounds(8), 3);
  CHECK_EQ(doubling_rounds(9), 3);
  CHECK_EQ(doubling_pow2(7), 4);
}

TEST(allgather_blocks_fill_every_rank) {
  for (int n = 2; n <= MAXN; n *= 2) {
    int have[MAXN][MAXN]; /* have[r][i]: rank r holds piece i (its owner's number + 1) */
    memset(have, 0, sizeof have);
    for (int r = 0; r < n; r++) have[r][r] = r + 1;
    for (int k = 0; (1 << k) < n; k++) {
      int next[MAXN][MAXN];
      memcpy(next, have, sizeof next);
      for (int r = 0; r < n; r++) {
        int q = r ^ (1 << k), b = 1 << k, mine = doubling_gather_first(r, k),
            theirs = doubling_gather_first(q, k);
        CHECK(theirs == mine + b || theirs == mine - b); /* next to mine */
        for (int i = 0; i < b; i++) { /* q's block arrives whole and lands at its place */
          CHECK(have[q][theirs + i] == theirs + i + 1);
          CHECK(have[r][mine + i] == mine + i + 1);
          next[r][theirs + i] = have[q][theirs + i];
        }
      }
      memcpy(have, next, sizeof have);
    }
    for (int r = 0; r < n; r++)
      for (int i = 0; i < n; i++) CHECK_EQ(have[r][i], i + 1);
  }
}

TEST(doubling_needs_two_cpus_a_rank) {
  CHECK_EQ(topo_doubling_from(16, 8), TOPO_DOUBLING_FROM);
  CHECK_EQ(TOPO_DOUBLING_FROM, 8);
  CHECK_EQ(topo_doubling_from(16, 12), 0);
  CHECK_EQ(topo_doubling_from(16, 16), 0);
  CHECK_EQ(topo_doubling_from(128, 8), 8);
  CHECK_EQ(topo_doubling_from(2, 1), 8);
  CHECK_EQ(topo_doubling_from(1, 0), 0); /* no count: this rank alone, one CPU */
}
