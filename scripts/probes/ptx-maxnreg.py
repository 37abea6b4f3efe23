#!/usr/bin/env python3
"""Adds `.maxnreg N` to the PTX entries whose names match a regular
expression, for `bench --ptx` experiments on ptxas's register choice:

    scripts/probes/ptx-maxnreg.py IN.ptx OUT.ptx N 'sgemm_naive.*_(agents|persistent)'

ptxas's own choice for a persistent schedule of naive SGEMM is 32
registers, too few to keep the baseline's 16 loads in flight next to the
task loop's state (its SASS issues each load just before its FMA); with
`.maxnreg 64` it issues them all first. Prints each entry it changed.
"""
import re
import sys

if len(sys.argv) != 5:
    sys.exit(__doc__)
source, target, limit, pattern = sys.argv[1], sys.argv[2], int(sys.argv[3]), re.compile(sys.argv[4])
text = open(source).read()
out, changed = [], []
# An entry's directives go between its parameter list's ')' and its '{'.
for piece in re.split(r'(\.visible \.entry [A-Za-z_0-9$]+\((?:.|\n)*?\n\))', text):
    out.append(piece)
    name = re.match(r'\.visible \.entry ([A-Za-z_0-9$]+)\(', piece)
    if name and pattern.fullmatch(name.group(1)):
        out.append(f'\n.maxnreg {limit}')
        changed.append(name.group(1))
open(target, 'w').write(''.join(out))
print(f'.maxnreg {limit}: ' + (' '.join(changed) or 'no entry matched'))
