#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Strangers at every listening port of a job, each port visited before the job accepts anything
there (tests/strangers/run).

Usage: stranger.py --ranks N --log FILE [--idle K] -- job command...

Starts the job with hold_listen.c preloaded: each TCP listen() of the job waits until this script
has sent the new port its strangers, so every listener (the bootstrap root, each rank's bootstrap,
the watch ring, the TCP network's listeners) has them in its accept queue ahead of any connection
of the job, however short the listener's life. At each port, in this order:
  - a client that speaks Monel's handshake (os/auth.h) with a MAC made without the job's key;
  - 64 KB of random bytes (as much as the socket takes at once), then a close;
  - a huge length-like header, then a close;
  - idle connections kept open until the job ends (--idle, 1 by default; every listener reads
    its new connections through a table that, when full, drops the unfinished connection that
    sent the fewest bytes (os/pending.h), so idle ones cannot keep the job out);
  - a flood of 20 connect-and-close.
The job's output goes to FILE. Then every wrong-secret client must have been closed by the job and
logged under the name of one kind of listener ("<kind>: closed a connection from <its address>"),
every port's own; every kind must have been met (the root once, each rank's bootstrap and watch
once per rank, the TCP network at least once). With more idle connections than the largest table
holds, every kind must have dropped some to make room (each rank's bootstrap listener, a
process's first listen(), by itself). Prints what each kind met; exits 1 on any failure
or when the job exits with an error (its results are the caller's to check)."""
import argparse, os, re, resource, socket, struct, subprocess, sys, threading

AUTH_MAGIC = 0x414C4E4D  # "MNLA", little endian on the wire
FLOOD = 20


USED = set()  # the wrong-secret clients' own ports: each names one client in the job's log
USED_LOCK = threading.Lock()


def conn(host, port, unique=False):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    while True:
        s = socket.socket(fam, socket.SOCK_STREAM)
        if not unique:
            break
        s.bind((host, 0))  # not connected yet: closing it reaches no one
        with USED_LOCK:
            if s.getsockname()[1] not in USED:
                USED.add(s.getsockname()[1])
                break
        s.close()
    s.connect((host, port))  # the kernel completes it: the port listens (its listen() is held)
    return s


def addr_str(s):
    host, port = s.getsockname()[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def visit(host, port, rec, idle, nidle):
    """Everything a stranger does at one port, while its listen() is held."""
    w = conn(host, port, unique=True)
    w.sendall(struct.pack("<I", AUTH_MAGIC) + os.urandom(16) + os.urandom(32))  # hello, a bad MAC
    rec["client"] = addr_str(w)
    g = conn(host, port)
    g.setblocking(False)
    try:  # not accepted yet: only as much as the socket buffers take without waiting
        rec["garbage"] = g.send(os.urandom(65536))
    except BlockingIOError:
        rec["garbage"] = 0
    g.close()
    h = conn(host, port)
    h.sendall(struct.pack("<IIQ", 0xFFFFFFFF, 0xFFFFFFFF, 1 << 62) * 4)
    h.close()
    for _ in range(nidle):
        idle.append(conn(host, port))
    for _ in range(FLOOD):
        conn(host, port).close()
    return w


def await_close(w, rec):
    """The job answers the wrong-secret client's hello (48 bytes), then must hang up."""
    got = 0
    try:
        while True:
            b = w.recv(4096)
            if not b:
                break
            got += len(b)
    except OSError:
        pass
    rec["answered"] = got
    w.close()


def serve(conn_u, recs, idle, nidle, waiters, lock):
    f = conn_u.makefile("rb")
    pid, host, port = f.readline().decode().split()
    rec = dict(pid=int(pid), host=host, port=int(port))
    with lock:  # a process's first listen() is its bootstrap listener's (boot_socket.c)
        rec["first"] = all(r["pid"] != rec["pid"] for r in recs)
        recs.append(rec)
    rec["idle"] = nidle
    try:
        w = visit(host, int(port), rec, idle, nidle)
    except OSError as e:
        rec["error"] = f"{type(e).__name__}: {e}"
        w = None
    if w is not None:
        t = threading.Thread(target=await_close, args=(w, rec))
        t.start()
        with lock:
            waiters.append(t)
    conn_u.sendall(b"go\n")
    conn_u.close()


def accept_loop(srv, recs, idle, nidle, waiters, lock):
    while True:
        try:
            c, _ = srv.accept()
        except OSError:
            return
        t = threading.Thread(target=serve, args=(c, recs, idle, nidle, waiters, lock), daemon=True)
        t.start()
        with lock:
            waiters.append(t)


KINDS = ("bootstrap root", "bootstrap rank", "watch", "Socket network listener")


def listener(k):
    return k if k.endswith("listener") else k + " listener"


def kind_of(log, pid, client):
    """The listener of process pid that logged closing the client ('bootstrap rank 2' counts as
    'bootstrap rank')."""
    m = re.search(rf":{pid}:[0-9]+ NCCL (?:WARN|INFO) ([^:\n]+): closed a connection from " +
                  re.escape(client) + r"(?![0-9])", log)
    if m is None:
        return None
    return re.sub(r" [0-9]+$", "", m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--idle", type=int, default=1)
    ap.add_argument("--hold-lib", required=True)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # idle connections are fds here
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    sock_path = a.log + ".hold"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(sock_path)
    srv.listen(64)
    recs, idle, waiters, lock = [], [], [], threading.Lock()
    threading.Thread(target=accept_loop, args=(srv, recs, idle, a.idle, waiters, lock),
                     daemon=True).start()
    env = dict(os.environ, LD_PRELOAD=a.hold_lib, STRANGER_HOLD_SOCK=sock_path)
    with open(a.log, "w") as out:
        job = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                               start_new_session=True)
        rc = job.wait()
    srv.close()
    with lock:
        ts = list(waiters)
    for t in ts:  # every process of the job is gone: each wrong-secret client reads its end
        t.join()
    for s in idle:
        s.close()
    os.unlink(sock_path)
    log = open(a.log, errors="replace").read()
    met = {k: 0 for k in KINDS}
    bad = []
    for r in sorted(recs, key=lambda r: (r["pid"], r["port"])):
        if "error" in r:
            bad.append(f"pid {r['pid']} port {r['port']}: {r['error']}")
            continue
        k = kind_of(log, r["pid"], r["client"])
        print(f"stranger: pid {r['pid']} {r['host']}:{r['port']}: {k or 'NOT LOGGED'}; "
              f"wrong-secret client {r['client']} answered {r['answered']} bytes then closed; "
              f"{r['garbage']} random bytes, a huge header, {r['idle']} idle, {FLOOD} flood connects")
        if k is None:
            bad.append(f"the wrong-secret client {r['client']} at port {r['port']} (pid "
                       f"{r['pid']}) was not logged as closed")
        elif k in met:
            met[k] += 1
        if k is not None and r["first"] != (k == "bootstrap rank"):
            bad.append(f"port {r['port']} of pid {r['pid']} is a {k} listener, but the first "
                       f"listen() of a process should be a rank's bootstrap listener")
    want = {"bootstrap root": 1, "bootstrap rank": a.ranks, "watch": a.ranks}
    for k in KINDS:
        print(f"stranger: the {listener(k)}(s) met strangers at {met[k]} port(s)")
        if k in want and met[k] != want[k]:
            bad.append(f"{met[k]} {listener(k)}(s) met strangers where {want[k]} were expected")
        if k not in want and met[k] < 1:
            bad.append(f"no {listener(k)} met strangers")
    # With more idle connections than a table holds (64 at the root and the watch, nranks + 64 at
    # a rank's bootstrap listener, 256 at the TCP network), the job got in only because each of
    # those listeners dropped idle ones.
    full, ranks_full = {k: 0 for k in KINDS}, set()
    for m in re.finditer(r":([0-9]+):[0-9]+ NCCL (?:WARN|INFO) ([^:\n]+): closed a connection from "
                         r"[^ ]+ (?:that is not a rank of this job: )?it had not finished its "
                         r"handshake and hello when more connections came", log):
        k = re.sub(r" [0-9]+$", "", m.group(2))
        full[k] = full.get(k, 0) + 1
        if k == "bootstrap rank":
            ranks_full.add(int(m.group(1)))
    if a.idle > 1:
        print("stranger: idle connections dropped to make room: " +
              ", ".join(f"{k} {full[k]}" for k in KINDS) +
              f"; bootstrap rank listeners that dropped some: {len(ranks_full)}")
        if a.idle > 256:
            for k in ("bootstrap root", "watch", "Socket network listener"):
                if full[k] < 1:
                    bad.append(f"no {listener(k)} dropped an idle connection to make room")
            if len(ranks_full) != a.ranks:
                bad.append(f"{len(ranks_full)} bootstrap rank listener(s) dropped idle connections "
                           f"to make room where all {a.ranks} should have")
    print(f"stranger: {len(recs)} ports held, the job exited with {rc}")
    if rc != 0:
        bad.append(f"the job exited with {rc}")
    for b in bad:
        print(f"stranger: FAIL {b}")
    sys.exit(1 if bad else 0)


main()
