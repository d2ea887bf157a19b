#!/usr/bin/env python3
# thr.py SECONDS: per-thread CPU time (ms) and context switches of every all_reduce_perf process over SECONDS
import os, sys, time, collections
def snap():
    d = {}
    for pid in os.listdir('/proc'):
        if not pid.isdigit(): continue
        try:
            if open(f'/proc/{pid}/comm').read().strip() != 'all_reduce_perf': continue
            for tid in os.listdir(f'/proc/{pid}/task'):
                st = open(f'/proc/{pid}/task/{tid}/stat').read()
                name = st[st.index('(')+1:st.rindex(')')]
                f = st[st.rindex(')')+2:].split()
                cpu = int(f[11]) + int(f[12])
                cs = [0, 0]
                for l in open(f'/proc/{pid}/task/{tid}/status'):
                    if l.startswith('voluntary_ctxt_switches'): cs[0] = int(l.split()[1])
                    if l.startswith('nonvoluntary_ctxt_switches'): cs[1] = int(l.split()[1])
                d[(pid, tid)] = (name, cpu, cs[0], cs[1], int(f[36]))
        except (FileNotFoundError, ProcessLookupError, ValueError):
            pass
    return d
s = float(sys.argv[1])
a = snap(); time.sleep(s); b = snap()
hz = os.sysconf('SC_CLK_TCK')
by = collections.defaultdict(lambda: [0, 0, 0, 0])
per_pid = collections.Counter()
for k, v in b.items():
    if k not in a: continue
    name = v[0]; o = a[k]
    key = (k[0], name)
    by[key][0] += (v[1] - o[1]) * 1000 / hz
    by[key][1] += v[2] - o[2]
    by[key][2] += v[3] - o[3]
    by[key][3] += 1
    per_pid[k[0]] += 1
for (pid, name), (ms, vcs, ncs, nt) in sorted(by.items()):
    if ms == 0 and vcs == 0: continue
    print(f'pid {pid} {name:16s} threads {nt:3d} cpu {ms/s:7.1f} ms/s  vcs {vcs/s:9.0f}/s  ncs {ncs/s:7.0f}/s')
print('threads per process:', dict(per_pid))
