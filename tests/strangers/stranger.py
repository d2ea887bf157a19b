#!/usr/bin/env python3
"""Strangers at every listening port of a running job: tests/strangers/run starts the job and this
script with the job's pid (monelrun's). Until the group is gone (or --seconds pass), it finds the TCP
ports the job's processes listen on (/proc/<pid>/net/tcp and the processes' socket fds, every
few milliseconds: the watch's and the network's listeners live for milliseconds) and sends each: 64 KB of random bytes, a huge length-like
header, an idle connection kept open to the end, a flood of connect-and-close, and a client that
speaks Monel's handshake (os/auth.h) with a wrong secret, which must be closed by the job.
Prints what it did; exits 1 if a wrong-secret client was not closed."""
import os, socket, struct, sys, threading, time

START = time.time()
AUTH_MAGIC = 0x414C4E4D  # "MNLA", little endian on the wire


def job_pids(root):
    """The root process and all its descendants (/proc/<pid>/task/<tid>/children)."""
    pids, todo = set(), [root]
    while todo:
        pid = todo.pop()
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        pids.add(pid)
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    todo += [int(c) for c in f.read().split()]
            except OSError:
                pass
    return pids


def socket_inodes(pid):
    """The inodes of the sockets a process has open (its fds)."""
    out = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                out.add(int(link[8:-1]))
    except OSError:
        pass
    return out


def hex_addr(h):
    """An address of /proc/net/tcp{,6} ("0100007F:1F90") as (host, port)."""
    a, p = h.split(":")
    raw = bytes.fromhex(a)
    if len(raw) == 4:
        host = socket.inet_ntop(socket.AF_INET, raw[::-1])
    else:
        host = socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1" if len(raw) == 4 else "::1"
    return host, int(p, 16)


def listening(pids):
    """The TCP ports the processes listen on: their socket inodes in LISTEN state (0A) of
    /proc/<pid>/net/tcp and tcp6 (the processes' own network namespace)."""
    ports = set()
    for pid in pids:
        inodes = socket_inodes(pid)
        for table in ("tcp", "tcp6"):
            try:
                with open(f"/proc/{pid}/net/{table}") as f:
                    rows = f.read().splitlines()[1:]
            except OSError:
                continue
            for row in rows:
                col = row.split()
                if len(col) > 9 and col[3] == "0A" and int(col[9]) in inodes:
                    ports.add(hex_addr(col[1]))
    return ports


def conn(addr, timeout=2.0):
    fam = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(addr)
    return s


def wrong_secret(addr):
    """Returns 'closed' when the job hung up on a client with the wrong key."""
    s = conn(addr, 5.0)
    try:
        s.sendall(struct.pack("<I", AUTH_MAGIC) + os.urandom(16))
        reply = b""
        while len(reply) < 48:
            b = s.recv(48 - len(reply))
            if not b:
                return "closed"  # hung up before answering: fine too
            reply += b
        s.sendall(os.urandom(32))  # a MAC made without the key
        s.sendall(b"\x00" * 64)  # and what a hello would be
        while True:
            b = s.recv(4096)
            if not b:
                return "closed"
    except (ConnectionResetError, BrokenPipeError):
        return "closed"
    except socket.timeout:
        return "still open after 5 s"
    finally:
        s.close()


def visit(addr, idle, stats, bad):
    """Everything a stranger does to one port (a thread per port: ports open and close fast).
    The wrong-secret client goes first: a listener may serve its job and close within ms."""
    try:
        r = wrong_secret(addr)
        stats["wrong"] += 1
        if r != "closed":
            bad.append(f"{addr}: {r}")
        s = conn(addr)
        s.sendall(os.urandom(65536))
        s.close()
        stats["garbage"] += 1
        s = conn(addr)
        s.sendall(struct.pack("<IIQ", 0xFFFFFFFF, 0xFFFFFFFF, 1 << 62) * 4)
        s.close()
        stats["header"] += 1
        idle.append(conn(addr))
        stats["idle"] += 1
        for _ in range(20):
            conn(addr).close()
            stats["flood"] += 1
    except OSError as e:  # the port closed meanwhile (a listener that served its connections)
        stats["gone"].append(f"{addr[1]} {type(e).__name__} at {time.time() - START:.3f} s")


def main():
    root, seconds = int(sys.argv[1]), float(sys.argv[2])
    end = time.time() + seconds
    idle, hit, stats, bad = [], set(), dict(garbage=0, header=0, idle=0, flood=0, wrong=0, gone=[]), []
    threads = []
    while time.time() < end:
        pids = job_pids(root)
        if not pids:
            break
        for addr in listening(pids) - hit:
            hit.add(addr)
            t = threading.Thread(target=visit, args=(addr, idle, stats, bad))
            t.start()
            threads.append(t)
        time.sleep(0.002)  # a new port may open at any time: look again soon
    for t in threads:
        t.join()
    for s in idle:
        s.close()
    print(f"stranger: {len(hit)} ports: {stats['garbage']} x 64 KB random, {stats['header']} huge "
          f"headers, {stats['idle']} idle connections, {stats['flood']} flood connects, "
          f"{stats['wrong']} wrong-secret clients")
    if stats["gone"]:
        print(f"stranger: ports that closed or refused during a visit: {', '.join(stats['gone'])}")
    for b in bad:
        print(f"stranger: FAIL wrong-secret client not closed at {b}")
    sys.exit(1 if bad or not hit else 0)


main()
