#!/usr/bin/env python3
"""Strangers at every listening port of a running job: tests/strangers/run starts the job and this
script with the job's pid (monelrun's). Until the group is gone (or --seconds pass), it finds the TCP
ports the job's processes listen on (ss) and sends each: 64 KB of random bytes, a huge length-like
header, an idle connection kept open to the end, a flood of connect-and-close, and a client that
speaks Monel's handshake (os/auth.h) with a wrong secret, which must be closed by the job.
Prints what it did; exits 1 if a wrong-secret client was not closed."""
import os, re, socket, struct, subprocess, sys, threading, time

AUTH_MAGIC = 0x414C4E4D  # "MNLA", little endian on the wire


def job_pids(root):
    """The root process and all its descendants (monelrun gives each rank a group of its own)."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    pids, grew = ({root} if root in parent else set()), True
    while grew:
        more = {p for p, pp in parent.items() if pp in pids} - pids
        grew = bool(more)
        pids |= more
    return pids


def listening(pids):
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    ports = set()
    for line in out.splitlines():
        m = re.search(r"\s(\S+):(\d+)\s", line)
        owners = {int(p) for p in re.findall(r"pid=(\d+)", line)}
        if m and owners & pids:
            host = m.group(1).strip("[]")
            ports.add(("127.0.0.1" if host in ("*", "0.0.0.0") else host, int(m.group(2))))
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
    """Everything a stranger does to one port (a thread per port: ports open and close fast)."""
    try:
        s = conn(addr)
        s.sendall(os.urandom(65536))
        s.close()
        stats["garbage"] += 1
        s = conn(addr)
        s.sendall(struct.pack("<IIQ", 0xFFFFFFFF, 0xFFFFFFFF, 1 << 62) * 4)
        s.close()
        stats["header"] += 1
        r = wrong_secret(addr)
        stats["wrong"] += 1
        if r != "closed":
            bad.append(f"{addr}: {r}")
        idle.append(conn(addr))
        stats["idle"] += 1
        for _ in range(20):
            conn(addr).close()
            stats["flood"] += 1
    except OSError:
        pass  # the port closed meanwhile (a bootstrap root that served its job)


def main():
    root, seconds = int(sys.argv[1]), float(sys.argv[2])
    end = time.time() + seconds
    idle, hit, stats, bad = [], set(), dict(garbage=0, header=0, idle=0, flood=0, wrong=0), []
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
        time.sleep(0.02)  # a new port may open at any time: look again soon
    for t in threads:
        t.join()
    for s in idle:
        s.close()
    print(f"stranger: {len(hit)} ports: {stats['garbage']} x 64 KB random, {stats['header']} huge "
          f"headers, {stats['idle']} idle connections, {stats['flood']} flood connects, "
          f"{stats['wrong']} wrong-secret clients")
    for b in bad:
        print(f"stranger: FAIL wrong-secret client not closed at {b}")
    sys.exit(1 if bad or not hit else 0)


main()
