import sys, glob, collections, statistics as st
d = sys.argv[1]
files = glob.glob(d + "/trace-*.txt")
ev = []
peersets = {}
for f in files:
    rows = [tuple(int(x) for x in l.split()) for l in open(f)]
    peers = set(r[1] for r in rows)
    ev.append((f, rows, peers))
n = len(files)
allr = set(range(n))
S = collections.defaultdict(dict); SD = collections.defaultdict(dict); R = collections.defaultdict(dict); W = collections.defaultdict(dict)
for f, rows, peers in ev:
    me = (allr - peers)
    me = me.pop() if len(me) == 1 else None
    if me is None: print("cannot tell rank of", f, peers); continue
    for is_send, peer, tag, step, e, t in rows:
        key = (me, peer, tag) if is_send else (peer, me, tag)
        if e == 0: S[key][step] = t
        elif e == 1: SD[key][step] = t
        elif e == 2: R[key][step] = t
        elif e == 3: W[key][step] = t
def q(v):
    v = sorted(v); 
    return "med %.1f p10 %.1f p90 %.1f (n=%d)" % (v[len(v)//2]/1e3, v[len(v)//10]/1e3, v[9*len(v)//10]/1e3, len(v)) if v else "-"
hop=[]; wait=[]; sdone=[]; per=[]
for key in S:
    steps = sorted(S[key]);
    steps = steps[30:]
    for k in steps:
        if k in R[key]: hop.append(R[key][k]-S[key][k])
        if k in SD[key]: sdone.append(SD[key][k]-S[key][k])
        if k in W[key] and k in R[key]: wait.append(R[key][k]-W[key][k])
        if k+1 in S[key]: per.append(S[key][k+1]-S[key][k])
print(d, "ranks", n, "conns", len(S))
print(" send posted -> received in (other proxy, tail stored):", q(hop))
print(" send posted -> send complete:", q(sdone))
print(" receiver kernel waiting (want seen) -> received in:", q(wait))
print(" period between a connection's sends:", q(per))
# per rank, per op: last receive in -> next send post on this rank (GPU: fold, end, next kernel, copy)
gpu=[]
ranks = sorted(set(k[0] for k in S))
for me in ranks:
    outs = [k for k in S if k[0]==me]; ins = [k for k in R if k[1]==me]
    steps = sorted(set.intersection(*[set(S[k]) for k in outs]))[30:-1]
    for k in steps:
        try:
            lastin = max(R[i][k] for i in ins); firstout = min(S[o][k+1] for o in outs)
            spread = max(S[o][k] for o in outs) - min(S[o][k] for o in outs)
            gpu.append((firstout-lastin, spread))
        except (KeyError, ValueError): pass
print(" rank: last receive in of op k -> first send of op k+1:", q([g[0] for g in gpu]))
print(" rank: spread of one op's sends over its peers:", q([g[1] for g in gpu]))
