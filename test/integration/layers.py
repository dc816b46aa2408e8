#!/usr/bin/env python3
"""Which compiled file calls which (nm: a symbol one object leaves
undefined and another defines), for the layering rules of softverbs-layers.sh.

layers.py cycles OBJ...      every circle of calls among the objects, one
                             line each with the names that tie it; exit 1
                             when there is one
layers.py order DOC OBJ...   the objects' files, as the rows of DOC's
                             tables name them (| `file.c` |), in that order:
                             a call to a file listed later, or to one not
                             listed, is printed; exit 1 when there is one
layers.py down DIR=RANK...   OBJ...: each object's folder has a rank (its
                             path contains DIR); a call from a lower rank to
                             a higher one, or between two folders of one
                             rank, is printed; exit 1 when there is one
layers.py files SPEC OBJ...  SPEC: the files from the ground up, comma-
                             separated, files of one rank joined by '+'
                             (a,b+c,d; named without libtool's prefix); a
                             call to a file not below the caller, or to or
                             from one not listed, is printed; exit 1 when
                             there is one
"""
import collections
import os
import subprocess
import sys


def symbols(objs):
    defs, undef = {}, {}
    for o in objs:
        out = subprocess.run(['nm', o], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in 'TDBRVW':
                defs.setdefault(p[2], o)
            elif len(p) == 2 and p[0] == 'U':
                undef.setdefault(o, set()).add(p[1])
    calls = collections.defaultdict(lambda: collections.defaultdict(set))
    for o, names in undef.items():
        for n in names:
            if n in defs and defs[n] != o:
                calls[o][defs[n]].add(n)
    return calls


def name(o):
    return os.path.basename(o).rsplit('.', 1)[0]


def sccs(nodes, calls):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        # iterative Tarjan: deep call chains must not hit Python's limit
        work = [(v, iter(calls[v]))]
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        while work:
            u, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = n[0]; n[0] += 1
                    stack.append(w); on.add(w)
                    work.append((w, iter(calls[w])))
                elif w in on:
                    low[u] = min(low[u], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[u])
            if low[u] == index[u]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == u:
                        break
                out.append(comp)

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def cycles(objs):
    calls = symbols(objs)
    bad = 0
    for comp in sccs(sorted(objs), calls):
        if len(comp) < 2:
            continue
        bad += 1
        members = set(comp)
        ties = ['%s -> %s (%s)' % (name(a), name(b), ' '.join(sorted(calls[a][b])))
                for a in sorted(comp) for b in sorted(calls[a]) if b in members]
        print('circle of %d files: %s' % (len(comp), '; '.join(ties)))
    return 1 if bad else 0


def down(ranks, objs):
    def rank(o):
        for d, r in ranks:
            if '/%s/' % d in o:
                return d, r
        return None, None
    calls = symbols(objs)
    bad = 0
    for a in sorted(calls):
        da, ra = rank(a)
        for b in sorted(calls[a]):
            db, rb = rank(b)
            if ra is None or rb is None or da == db or ra > rb:
                continue
            bad += 1
            print('%s/%s -> %s/%s (%s)' % (da, name(a), db, name(b),
                                          ' '.join(sorted(calls[a][b]))))
    return 1 if bad else 0


def below(pos, objs, listed):
    """Each call must go to a file of a lower position (pos: a file's name,
    without libtool's prefix, to its position); the others are printed,
    with listed naming what holds the positions. 1 when there is one"""
    def stem(o):
        return name(o).split('-', 1)[-1]
    calls = symbols(objs)
    bad = 0
    for a in sorted(calls):
        for b in sorted(calls[a]):
            na, nb = stem(a), stem(b)
            if na in pos and nb in pos and pos[nb] < pos[na]:
                continue
            bad += 1
            where = 'is not below it' if nb in pos and na in pos else \
                    'is not in %s' % listed if nb not in pos else \
                    'calls from a file not in %s' % listed
            print('%s -> %s (%s): %s' % (na, nb, ' '.join(sorted(calls[a][b])),
                                        where))
    return 1 if bad else 0


def order(doc, objs):
    import re
    with open(doc) as f:
        rows = re.findall(r'^\| `([A-Za-z0-9_]+)\.c`', f.read(), re.M)
    return below({n: i for i, n in enumerate(rows)}, objs, 'the table')


def files(spec, objs):
    """spec: the files from the ground up, comma-separated, those of one
    rank joined by '+' (sv_a,sv_b+sv_c,sv_d)"""
    pos = {}
    for r, group in enumerate(spec.split(',')):
        for n in group.split('+'):
            pos[n] = r
    return below(pos, objs, 'the list')


def main(argv):
    if len(argv) > 3 and argv[1] == 'order':
        return order(argv[2], argv[3:])
    if len(argv) > 3 and argv[1] == 'files':
        return files(argv[2], argv[3:])
    if len(argv) > 2 and argv[1] == 'cycles':
        return cycles(argv[2:])
    if len(argv) > 2 and argv[1] == 'down':
        ranks = [(a.split('=')[0], int(a.split('=')[1]))
                 for a in argv[2:] if '=' in a and not a.endswith('.o')]
        objs = [a for a in argv[2:] if a.endswith('.o')]
        return down(ranks, objs)
    sys.stderr.write(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
