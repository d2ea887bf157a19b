/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * monelrun: start the ranks of a Monel job as local processes.
 *
 *   monelrun -n N prog args...                    N ranks on this host
 *   monelrun -n N --hosts H --host-index I --comm-id host:port prog args...
 *                                                 this host's share of an H-host job
 *   monelrun -n N --fake-hosts H [--fake-layout block] prog args...
 *                                                 N ranks here, as if on H hosts (MONEL_HOST_ID)
 *   monelrun prog args...                         under mpirun/torchrun/srun: run prog as that rank
 *
 * Each rank gets MONEL_RANK, MONEL_NRANKS, MONEL_LOCAL_RANK, MONEL_LOCAL_SIZE and NCCL_COMM_ID.
 * Its stdout and stderr come back through pipes, one line at a time, prefixed with "[rank] ".
 * When a rank fails, the others are stopped (SIGTERM, then SIGKILL after a grace period) and
 * monelrun exits with the failed rank's status (128 + signal when it was killed).
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/random.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <fcntl.h>

#define GRACE_MS           2000 /* SIGTERM -> SIGKILL */
#define DRAIN_MS           2000 /* how long output of exited ranks may still trickle in */
#define LINE_BUF_BYTES     8192
#define MAX_LOCAL          4096
#define SLURM_DEFAULT_PORT 29501 /* rank 0's bootstrap port under srun without MONEL_PORT */

struct stream {
  int fd;     /* read end of the rank's pipe, -1 once closed */
  int out_fd; /* 1 or 2 */
  int rank;   /* global rank, for the prefix */
  char* buf;  /* pending bytes of an unfinished line */
  size_t len;
  bool midline; /* a too-long line was partly written: no prefix for the next piece */
};

struct proc {
  pid_t pid;
  int rank;
  bool alive;
};

struct options {
  int nlocal;     /* -n, 0 when not given */
  int hosts;      /* --hosts */
  int host_index; /* --host-index */
  const char* comm_id;
  int fake_hosts; /* --fake-hosts, 0 when not given */
  int fake_block; /* --fake-layout block: consecutive ranks share a fake host */
  char** argv;    /* program and its arguments */
};

struct job {
  struct options opt;
  char comm_id[256];
  bool set_comm_id; /* false: NCCL_COMM_ID from the environment passes through */
  struct proc* procs;
  struct stream* streams; /* 2 per rank: stdout, stderr */
  int nalive;
  int sigfd;
  int failed;         /* index of the first failed rank, -1 if none */
  int fail_status;    /* raw wait status of that rank */
  int user_signal;    /* signal that asked monelrun to stop, 0 if none */
  long long kill_at;  /* monotonic ms at which survivors get SIGKILL, 0 if not stopping */
  long long drain_at; /* monotonic ms at which remaining pipes are abandoned, 0 if unset */
};

static void usage(FILE* f) {
  fprintf(f,
          "usage: monelrun -n N [--hosts H --host-index I --comm-id host:port] prog [args...]\n"
          "       monelrun prog [args...]   (under mpirun or torchrun)\n"
          "\n"
          "Starts N ranks of prog as local processes. Each rank gets MONEL_RANK, MONEL_NRANKS,\n"
          "MONEL_LOCAL_RANK, MONEL_LOCAL_SIZE and NCCL_COMM_ID (127.0.0.1:<free port> unless\n"
          "NCCL_COMM_ID is already set). Output is prefixed with \"[rank] \". If a rank fails,\n"
          "the others are stopped and monelrun exits with that rank's status.\n"
          "\n"
          "  -n N                ranks on this host\n"
          "  --hosts H           hosts in the job (default 1)\n"
          "  --host-index I      this host's index, 0..H-1: it runs ranks I*N .. I*N+N-1\n"
          "  --comm-id host:port address of rank 0's bootstrap (needed when H > 1)\n"
          "  --fake-hosts F      test aid: the N ranks here act as F hosts, rank r getting\n"
          "                      MONEL_HOST_ID=host<f>: shared memory within a fake host,\n"
          "                      TCP between fake hosts\n"
          "  --fake-layout L     cyclic (default): f = r %% F; block: f = r * F / N\n"
          "  -h, --help          this text\n"
          "\n"
          "Without -n, under Open MPI (OMPI_COMM_WORLD_RANK/SIZE), torchrun (RANK, WORLD_SIZE,\n"
          "MASTER_ADDR, MASTER_PORT) or Slurm's srun (SLURM_PROCID, SLURM_NTASKS), prog runs\n"
          "once as that rank. Unless NCCL_COMM_ID is set, torchrun style sets\n"
          "NCCL_COMM_ID=MASTER_ADDR:(MASTER_PORT+1) and srun sets it to the first node of\n"
          "SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST) and port MONEL_PORT (default %d).\n"
          "Under mpirun, NCCL_COMM_ID must be set (mpirun -x NCCL_COMM_ID=node0:29500 ...).\n",
          SLURM_DEFAULT_PORT);
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool parse_int(const char* s, int lo, int hi, int* out) {
  char* end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return false;
  *out = (int)v;
  return true;
}

static const char* option_value(int argc, char** argv, int* i) {
  if (*i + 1 >= argc) {
    fprintf(stderr, "monelrun: option %s needs a value (see monelrun -h)\n", argv[*i]);
    exit(2);
  }
  return argv[++*i];
}

static void bad_value(const char* name, const char* value) {
  fprintf(stderr, "monelrun: invalid value '%s' for %s (see monelrun -h)\n", value, name);
  exit(2);
}

static void parse_args(int argc, char** argv, struct options* opt) {
  memset(opt, 0, sizeof(*opt));
  opt->hosts = 1;
  int i = 1;
  for (; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      exit(0);
    } else if (!strcmp(a, "-n") || !strcmp(a, "-np")) {
      const char* v = option_value(argc, argv, &i);
      if (!parse_int(v, 1, MAX_LOCAL, &opt->nlocal)) bad_value(a, v);
    } else if (!strcmp(a, "--hosts")) {
      const char* v = option_value(argc, argv, &i);
      if (!parse_int(v, 1, 1 << 20, &opt->hosts)) bad_value(a, v);
    } else if (!strcmp(a, "--host-index")) {
      const char* v = option_value(argc, argv, &i);
      if (!parse_int(v, 0, 1 << 20, &opt->host_index)) bad_value(a, v);
    } else if (!strcmp(a, "--comm-id")) {
      opt->comm_id = option_value(argc, argv, &i);
    } else if (!strcmp(a, "--fake-hosts")) {
      const char* v = option_value(argc, argv, &i);
      if (!parse_int(v, 1, MAX_LOCAL, &opt->fake_hosts)) bad_value(a, v);
    } else if (!strcmp(a, "--fake-layout")) {
      const char* v = option_value(argc, argv, &i);
      if (strcmp(v, "cyclic") != 0 && strcmp(v, "block") != 0) bad_value(a, v);
      opt->fake_block = !strcmp(v, "block");
    } else if (!strcmp(a, "--")) {
      i++;
      break;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "monelrun: unknown option %s (see monelrun -h)\n", a);
      exit(2);
    } else {
      break;
    }
  }
  if (i >= argc) {
    fprintf(stderr, "monelrun: no program given (see monelrun -h)\n");
    exit(2);
  }
  opt->argv = argv + i;
  if (opt->host_index >= opt->hosts) {
    fprintf(stderr, "monelrun: --host-index %d is out of range for --hosts %d\n", opt->host_index,
            opt->hosts);
    exit(2);
  }
  if (opt->fake_hosts && (opt->hosts > 1 || opt->nlocal == 0)) {
    fprintf(stderr, "monelrun: --fake-hosts needs -n and a job on this host only (no --hosts)\n");
    exit(2);
  }
  if ((long long)opt->hosts * (opt->nlocal ? opt->nlocal : 1) > INT_MAX) {
    fprintf(stderr, "monelrun: too many ranks in total\n");
    exit(2);
  }
}

/* Asks the kernel for a free TCP port on the loopback interface. */
static int pick_free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  int port = -1;
  if (bind(fd, (struct sockaddr*)&sa, sizeof(sa)) == 0 &&
      getsockname(fd, (struct sockaddr*)&sa, &len) == 0)
    port = ntohs(sa.sin_port);
  close(fd);
  return port;
}

static void resolve_comm_id(struct job* job) {
  if (job->opt.comm_id) {
    snprintf(job->comm_id, sizeof(job->comm_id), "%s", job->opt.comm_id);
    job->set_comm_id = true;
    return;
  }
  if (getenv("NCCL_COMM_ID")) return; /* passes through unchanged */
  if (job->opt.hosts > 1) {
    fprintf(stderr,
            "monelrun: a job on %d hosts needs --comm-id host:port (or NCCL_COMM_ID), "
            "the same on every host\n",
            job->opt.hosts);
    exit(2);
  }
  int port = pick_free_port();
  if (port < 0) {
    fprintf(stderr, "monelrun: could not find a free TCP port on 127.0.0.1: %s\n", strerror(errno));
    exit(1);
  }
  snprintf(job->comm_id, sizeof(job->comm_id), "127.0.0.1:%d", port);
  job->set_comm_id = true;
  /* every rank of this job is started here: they can share a random secret (MONEL_JOB_SECRET),
   * so that nobody else who reaches the port can join */
  unsigned char key[16];
  char hex[2 * sizeof key + 1];
  if (!getenv("MONEL_JOB_SECRET") && getrandom(key, sizeof key, 0) == (ssize_t)sizeof key) {
    for (size_t i = 0; i < sizeof key; i++) snprintf(hex + 2 * i, 3, "%02x", key[i]);
    setenv("MONEL_JOB_SECRET", hex, 1);
  }
}

static void set_int_env(const char* name, long v) {
  char s[32];
  snprintf(s, sizeof(s), "%ld", v);
  setenv(name, s, 1);
}

static void exec_or_die(char** argv) {
  execvp(argv[0], argv);
  fprintf(stderr, "monelrun: cannot run %s: %s\n", argv[0], strerror(errno));
  _exit(127);
}

/* The first host of a Slurm host list ("node[07-09,12],gpu3" -> "node07"): the text before the
 * first top-level comma, each bracket replaced by its first number as written. */
static bool slurm_first_host(const char* list, char* out, size_t cap) {
  size_t o = 0;
  for (const char* p = list; *p && *p != ','; p++) {
    if (*p == '[') {
      for (p++; *p && *p != '-' && *p != ',' && *p != ']'; p++)
        if (o + 1 < cap) out[o++] = *p;
      while (*p && *p != ']') p++;
      if (!*p) return false; /* unclosed bracket */
    } else if (o + 1 < cap) {
      out[o++] = *p;
    }
  }
  out[o] = '\0';
  return o > 0 && o + 1 < cap;
}

/* Tasks on node `node` from Slurm's per-node counts ("2(x3),1": nodes 0-2 run 2, node 3 runs 1);
 * -1 if the list does not reach that node or cannot be read. */
static int slurm_tasks_on(const char* counts, int node) {
  const char* p = counts;
  while (*p) {
    char* end = NULL;
    long c = strtol(p, &end, 10), reps = 1;
    if (end == p || c < 1) return -1;
    p = end;
    if (*p == '(') {
      if (p[1] != 'x') return -1;
      reps = strtol(p + 2, &end, 10);
      if (end == p + 2 || *end != ')' || reps < 1) return -1;
      p = end + 1;
    }
    if (node < reps) return (int)c;
    node -= (int)reps;
    if (*p == ',')
      p++;
    else if (*p)
      return -1;
  }
  return -1;
}

/* Under srun: the local size and the comm id (rank 0 runs on the step's first node). */
static void slurm_env(void) {
  const char* node_id = getenv("SLURM_NODEID");
  const char* per_node = getenv("SLURM_STEP_TASKS_PER_NODE");
  if (!per_node) per_node = getenv("SLURM_TASKS_PER_NODE");
  int node = 0, lsize = -1;
  if (node_id && !parse_int(node_id, 0, INT_MAX, &node)) bad_value("SLURM_NODEID", node_id);
  if (per_node) lsize = slurm_tasks_on(per_node, node);
  if (lsize < 0 && getenv("SLURM_NTASKS_PER_NODE") &&
      !parse_int(getenv("SLURM_NTASKS_PER_NODE"), 1, INT_MAX, &lsize))
    bad_value("SLURM_NTASKS_PER_NODE", getenv("SLURM_NTASKS_PER_NODE"));
  if (lsize > 0) set_int_env("MONEL_LOCAL_SIZE", lsize);
  if (getenv("SLURM_LOCALID")) setenv("MONEL_LOCAL_RANK", getenv("SLURM_LOCALID"), 1);
  if (getenv("NCCL_COMM_ID")) return;
  const char* list = getenv("SLURM_STEP_NODELIST");
  if (!list) list = getenv("SLURM_JOB_NODELIST");
  const char* port_s = getenv("MONEL_PORT");
  int port = SLURM_DEFAULT_PORT;
  char host[256], id[300];
  if (port_s && !parse_int(port_s, 1, 65535, &port)) bad_value("MONEL_PORT", port_s);
  if (!list || !slurm_first_host(list, host, sizeof(host))) {
    fprintf(stderr, "monelrun: under srun, the first node of SLURM_STEP_NODELIST or "
                    "SLURM_JOB_NODELIST names rank 0's host; neither is readable: set "
                    "NCCL_COMM_ID=host:port instead\n");
    exit(2);
  }
  snprintf(id, sizeof(id), "%s:%d", host, port);
  setenv("NCCL_COMM_ID", id, 1);
}

/* Under torchrun: NCCL_COMM_ID is MASTER_ADDR:(MASTER_PORT+1) unless set. */
static void torchrun_env(const char* maddr, const char* mport) {
  int port;
  if (!parse_int(mport, 1, 65534, &port)) bad_value("MASTER_PORT", mport);
  if (getenv("NCCL_COMM_ID")) return;
  char id[300];
  bool v6 = strchr(maddr, ':') && maddr[0] != '[';
  snprintf(id, sizeof(id), v6 ? "[%s]:%d" : "%s:%d", maddr, port + 1);
  setenv("NCCL_COMM_ID", id, 1);
}

/* Without -n: translate the environment of an existing launcher and run prog as that rank.
 * Open MPI first, then torchrun (each may run inside a Slurm allocation, whose variables then
 * describe the launcher's own processes), then srun. */
static bool launcher_mode(char** argv) {
  const char* orank = getenv("OMPI_COMM_WORLD_RANK");
  const char* osize = getenv("OMPI_COMM_WORLD_SIZE");
  const char* trank = getenv("RANK");
  const char* tsize = getenv("WORLD_SIZE");
  const char* maddr = getenv("MASTER_ADDR");
  const char* mport = getenv("MASTER_PORT");
  const char* srank = getenv("SLURM_PROCID");
  const char* ssize = getenv("SLURM_NTASKS");
  const char *rank, *size, *lrank = NULL, *lsize = NULL;
  if (orank && osize) {
    rank = orank, size = osize;
    lrank = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    lsize = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  } else if (trank && tsize && maddr && mport) {
    rank = trank, size = tsize;
    lrank = getenv("LOCAL_RANK");
    lsize = getenv("LOCAL_WORLD_SIZE");
    torchrun_env(maddr, mport);
  } else if (srank && ssize) {
    rank = srank, size = ssize;
    slurm_env(); /* sets MONEL_LOCAL_RANK/SIZE itself */
  } else {
    return false;
  }
  int r, n;
  if (!parse_int(size, 1, INT_MAX, &n)) bad_value("the launcher's world size", size);
  if (!parse_int(rank, 0, n - 1, &r)) bad_value("the launcher's rank", rank);
  /* Open MPI names no address where rank 0 listens: the user gives one, the same on every rank
   * (torchrun and srun set it above). */
  if (orank && osize && n > 1 && !getenv("NCCL_COMM_ID")) {
    fprintf(stderr,
            "monelrun: under mpirun, set NCCL_COMM_ID=host:port for every rank, host being where "
            "rank 0 runs and port a free one (mpirun -x NCCL_COMM_ID=node0:29500 monelrun ...)\n");
    exit(2);
  }
  set_int_env("MONEL_RANK", r);
  set_int_env("MONEL_NRANKS", n);
  if (lrank) setenv("MONEL_LOCAL_RANK", lrank, 1);
  if (lsize) setenv("MONEL_LOCAL_SIZE", lsize, 1);
  exec_or_die(argv);
  return true;
}

static void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return; /* reader went away: drop the output, keep the job running */
    }
    p += w, n -= (size_t)w;
  }
}

/* Writes one piece of a line; the prefix goes only on the first piece, one write per piece. */
static void emit(struct stream* s, const char* p, size_t n, bool ends_line) {
  char out[LINE_BUF_BYTES + 32];
  size_t k = 0;
  if (!s->midline) k = (size_t)snprintf(out, sizeof(out), "[%d] ", s->rank);
  memcpy(out + k, p, n);
  k += n;
  if (ends_line && (n == 0 || p[n - 1] != '\n')) out[k++] = '\n';
  write_all(s->out_fd, out, k);
  s->midline = !ends_line;
}

static void stream_close(struct stream* s) {
  if (s->fd < 0) return;
  if (s->len > 0) emit(s, s->buf, s->len, true); /* partial last line */
  s->len = 0;
  close(s->fd);
  s->fd = -1;
}

/* Reads what the pipe holds and forwards every complete line. */
static void stream_read(struct stream* s) {
  ssize_t r = read(s->fd, s->buf + s->len, LINE_BUF_BYTES - s->len);
  if (r < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (r <= 0) {
    stream_close(s);
    return;
  }
  s->len += (size_t)r;
  size_t start = 0;
  for (size_t i = 0; i < s->len; i++) {
    if (s->buf[i] != '\n') continue;
    emit(s, s->buf + start, i + 1 - start, true);
    start = i + 1;
  }
  if (start == 0 && s->len == LINE_BUF_BYTES) { /* a line longer than the buffer */
    emit(s, s->buf, s->len, false);
    start = s->len;
  }
  memmove(s->buf, s->buf + start, s->len - start);
  s->len -= start;
}

static void child_setup(struct job* job, int idx, int out_w, int err_w, const sigset_t* old_mask,
                        pid_t parent) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1); /* monelrun died before the line above */
  sigprocmask(SIG_SETMASK, old_mask, NULL);
  signal(SIGPIPE, SIG_DFL);
  if (dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0) _exit(127);
  const struct options* o = &job->opt;
  set_int_env("MONEL_RANK", (long)o->host_index * o->nlocal + idx);
  set_int_env("MONEL_NRANKS", (long)o->hosts * o->nlocal);
  set_int_env("MONEL_LOCAL_RANK", idx);
  set_int_env("MONEL_LOCAL_SIZE", o->nlocal);
  if (job->set_comm_id) setenv("NCCL_COMM_ID", job->comm_id, 1);
  if (o->fake_hosts) {
    int f = o->fake_block ? (int)((long long)idx * o->fake_hosts / o->nlocal) : idx % o->fake_hosts;
    char id[32];
    snprintf(id, sizeof(id), "host%d", f);
    setenv("MONEL_HOST_ID", id, 1);
  }
  exec_or_die(o->argv);
}

static int spawn_rank(struct job* job, int idx, const sigset_t* old_mask) {
  int po[2] = {-1, -1}, pe[2] = {-1, -1};
  if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
    fprintf(stderr, "monelrun: pipe failed: %s\n", strerror(errno));
    return -1;
  }
  int rank = job->opt.host_index * job->opt.nlocal + idx;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "monelrun: fork for rank %d failed: %s\n", rank, strerror(errno));
    return -1;
  }
  if (pid == 0) child_setup(job, idx, po[1], pe[1], old_mask, parent);
  setpgid(pid, pid); /* also here, so that killpg works before the child gets to it */
  close(po[1]);
  close(pe[1]);
  job->procs[idx] = (struct proc){.pid = pid, .rank = rank, .alive = true};
  int fds[2] = {po[0], pe[0]};
  for (int k = 0; k < 2; k++) {
    struct stream* s = &job->streams[2 * idx + k];
    fcntl(fds[k], F_SETFL, fcntl(fds[k], F_GETFL) | O_NONBLOCK);
    *s = (struct stream){.fd = fds[k], .out_fd = k + 1, .rank = rank};
    s->buf = malloc(LINE_BUF_BYTES);
    if (!s->buf) return -1;
  }
  job->nalive++;
  return 0;
}

static void signal_all(struct job* job, int sig) {
  for (int i = 0; i < job->opt.nlocal; i++)
    if (job->procs[i].alive) kill(-job->procs[i].pid, sig);
}

static void start_stopping(struct job* job, int sig) {
  signal_all(job, sig);
  if (!job->kill_at) job->kill_at = now_ms() + GRACE_MS;
}

static void describe(int status, char* out, size_t n) {
  if (WIFSIGNALED(status))
    snprintf(out, n, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else
    snprintf(out, n, "exited with status %d", WEXITSTATUS(status));
}

static void reap(struct job* job) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    for (int i = 0; i < job->opt.nlocal; i++) {
      struct proc* p = &job->procs[i];
      if (p->pid != pid || !p->alive) continue;
      p->alive = false;
      job->nalive--;
      kill(-pid, SIGKILL); /* whatever the rank left behind in its group */
      bool bad = WIFSIGNALED(status) || WEXITSTATUS(status) != 0;
      if (bad && job->failed < 0 && !job->user_signal) {
        char how[160];
        describe(status, how, sizeof(how));
        fprintf(stderr, "monelrun: rank %d (pid %d) %s; stopping the other ranks\n", p->rank,
                (int)pid, how);
        job->failed = i;
        job->fail_status = status;
        start_stopping(job, SIGTERM);
      }
    }
  }
}

static void handle_signals(struct job* job) {
  struct signalfd_siginfo si;
  while (read(job->sigfd, &si, sizeof(si)) == sizeof(si)) {
    int sig = (int)si.ssi_signo;
    if (sig == SIGCHLD) {
      reap(job);
    } else if (!job->user_signal) {
      job->user_signal = sig;
      fprintf(stderr, "monelrun: got %s; passing it to every rank\n", strsignal(sig));
      start_stopping(job, sig);
    } else {
      signal_all(job, SIGKILL); /* asked twice: no more grace */
    }
  }
}

static int open_streams(struct job* job, struct pollfd* pfd, struct stream** which) {
  int n = 0;
  for (int i = 0; i < 2 * job->opt.nlocal; i++) {
    if (job->streams[i].fd < 0) continue;
    pfd[n] = (struct pollfd){.fd = job->streams[i].fd, .events = POLLIN};
    which[n++] = &job->streams[i];
  }
  return n;
}

static int event_loop(struct job* job) {
  int total = 2 * job->opt.nlocal + 1;
  struct pollfd* pfd = calloc((size_t)total, sizeof(*pfd));
  struct stream** which = calloc((size_t)total, sizeof(*which));
  if (!pfd || !which) return -1;
  for (;;) {
    int n = open_streams(job, pfd, which);
    if (job->nalive == 0 && n == 0) break;
    long long now = now_ms();
    if (job->nalive == 0 && !job->drain_at) job->drain_at = now + DRAIN_MS;
    if (job->drain_at && now >= job->drain_at) break; /* something kept a pipe open */
    if (job->kill_at && now >= job->kill_at && job->nalive > 0) {
      signal_all(job, SIGKILL);
      job->kill_at = now + GRACE_MS; /* check again later, no repeat storm */
    }
    long long next = job->drain_at ? job->drain_at : job->kill_at;
    int timeout = next ? (int)(next > now ? next - now : 0) : -1;
    pfd[n] = (struct pollfd){.fd = job->sigfd, .events = POLLIN};
    int r = poll(pfd, (nfds_t)n + 1, timeout);
    if (r < 0 && errno != EINTR) {
      fprintf(stderr, "monelrun: poll failed: %s\n", strerror(errno));
      break;
    }
    if (r <= 0) continue;
    for (int i = 0; i < n; i++)
      if (pfd[i].revents) stream_read(which[i]);
    if (pfd[n].revents) handle_signals(job);
  }
  for (int i = 0; i < 2 * job->opt.nlocal; i++) stream_close(&job->streams[i]);
  free(pfd);
  free(which);
  return 0;
}

static int exit_code(const struct job* job) {
  if (job->failed >= 0) {
    int st = job->fail_status;
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
  }
  if (job->user_signal) return 128 + job->user_signal;
  return 0;
}

int main(int argc, char** argv) {
  struct job job = {.failed = -1, .sigfd = -1};
  parse_args(argc, argv, &job.opt);
  if (job.opt.nlocal == 0) {
    if (job.opt.hosts > 1 || job.opt.comm_id) {
      fprintf(stderr, "monelrun: --hosts and --comm-id need -n (ranks per host)\n");
      return 2;
    }
    if (!launcher_mode(job.opt.argv)) {
      fprintf(stderr,
              "monelrun: -n N is required outside mpirun, torchrun and srun (see monelrun -h)\n");
      return 2;
    }
  }
  resolve_comm_id(&job);

  sigset_t mask, old_mask;
  sigemptyset(&mask);
  int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT};
  for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) sigaddset(&mask, sigs[i]);
  sigprocmask(SIG_BLOCK, &mask, &old_mask);
  signal(SIGPIPE, SIG_IGN);
  job.sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  job.procs = calloc((size_t)job.opt.nlocal, sizeof(*job.procs));
  job.streams = calloc(2 * (size_t)job.opt.nlocal, sizeof(*job.streams));
  if (job.sigfd < 0 || !job.procs || !job.streams) {
    fprintf(stderr, "monelrun: setup failed: %s\n", strerror(errno));
    return 1;
  }
  for (int i = 0; i < 2 * job.opt.nlocal; i++) job.streams[i].fd = -1;
  for (int i = 0; i < job.opt.nlocal; i++) {
    if (spawn_rank(&job, i, &old_mask) != 0) {
      job.failed = -1;
      start_stopping(&job, SIGTERM);
      event_loop(&job);
      return 1;
    }
  }
  event_loop(&job);
  reap(&job);
  int code = exit_code(&job);
  for (int i = 0; i < 2 * job.opt.nlocal; i++) free(job.streams[i].buf);
  free(job.streams);
  free(job.procs);
  close(job.sigfd);
  return code;
}
