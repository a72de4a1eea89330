#!/usr/bin/env python3
"""Inclusive and self shares of the functions under one root function, from `perf script` text
of a `perf record --call-graph dwarf` run (perf report cannot cut stacks at a root).

    perf script -i perf.data > perf.txt; python3 tools/gpu/perf_summary.py perf.txt toroid_run_into_data [TOP]
"""
import collections,re,sys
samples=open(sys.argv[1]).read().split('\n\n')
root=sys.argv[2]
inc=collections.Counter(); selfc=collections.Counter(); n=0
for s in samples:
    lines=[l.strip() for l in s.strip().split('\n')[1:] if l.strip()]
    syms=[]
    for l in lines:
        parts=l.split(' ',1)
        if len(parts)<2: continue
        x=re.sub(r'\+0x[0-9a-f]+.*$','',parts[1]); x=re.sub(r' \(.*$','',x)
        syms.append(x)
    if not any(root in x for x in syms): continue
    n+=1
    cut=[]
    for x in syms:
        cut.append(x)
        if root in x: break
    selfc[cut[0][:110]]+=1
    for x in set(cut): inc[x[:110]]+=1
print("samples in",root,n)
for k,v in inc.most_common(int(sys.argv[3]) if len(sys.argv)>3 else 40):
    if not k.startswith('std::'): print("%5.1f%% %s"%(100*v/n,k))
print("--- self")
for k,v in selfc.most_common(20): print("%5.1f%% %s"%(100*v/n,k))
