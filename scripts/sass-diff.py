#!/usr/bin/env python3
"""Which entries' machine code a change moved: assembles two builds' PTX for
sm_90 (ptxas), disassembles them (cuobjdump -sass) and compares each entry
present in both, register numbers and addresses set aside.

    scripts/sass-diff.py OLD.ptx NEW.ptx [--only SUBSTRING] [--order]

Prints, per entry whose SASS differs: its registers before and after, its
instruction count, and the opcodes whose counts moved (`FFMA +4`); with
`--order`, also entries whose opcodes are the same but in another order
(a scheduling change: as likely to matter as a new instruction). Then a
summary line. The PTX of a build is `scripts/suite-ptx.sh release`; copy it
aside before rebuilding. Entry names that embed a source line (shared
arrays' symbols) are compared by name only.

ptxas and cuobjdump come from PATH, else from the PyPI package
nvidia-cuda-nvcc (as scripts/ptx-report.sh finds them).
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile


def tool(name):
    found = shutil.which(name)
    if found:
        return found
    try:
        import nvidia  # the PyPI CUDA packages
    except ImportError:
        sys.exit(f"{name} not found: put CUDA's bin on PATH or pip install nvidia-cuda-nvcc")
    path = os.path.join(list(nvidia.__path__)[0], "cu13", "bin", name)
    if not os.access(path, os.X_OK):
        sys.exit(f"{name} not found at {path}")
    return path


def assemble(ptx, workdir, tag):
    """Registers per entry, and each entry's instructions (normalised)."""
    cubin = os.path.join(workdir, tag + ".cubin")
    run = subprocess.run(
        [tool("ptxas"), "-arch=sm_90", "-v", ptx, "-o", cubin],
        capture_output=True, text=True,
    )
    if run.returncode != 0:
        sys.exit(f"ptxas failed on {ptx}:\n{run.stderr}")
    registers, entry = {}, None
    for line in run.stderr.splitlines():
        m = re.search(r"entry function '(\w+)'", line)
        if m:
            entry = m.group(1)
        m = re.search(r"Used (\d+) registers", line)
        if m and entry:
            registers[entry] = int(m.group(1))
    sass = subprocess.run(
        [tool("cuobjdump"), "-sass", cubin], capture_output=True, text=True, check=True
    ).stdout
    code, entry = {}, None
    for line in sass.splitlines():
        m = re.match(r"\s+Function : (\w+)", line)
        if m:
            entry = m.group(1)
            code[entry] = []
            continue
        m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
        if m and entry:
            text = re.sub(r"\s+", " ", m.group(1))
            # Registers, predicates and branch targets renamed alike.
            text = re.sub(r"\bU?R\d+\b", "R", text)
            text = re.sub(r"\bU?P\d\b", "P", text)
            text = re.sub(r"0x[0-9a-f]+", "0x", text)
            if text != "NOP":
                code[entry].append(text)
    return registers, code


def opcode(instruction):
    parts = instruction.split()
    if parts and parts[0].startswith("@"):
        parts = parts[1:]
    return parts[0] if parts else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--only", help="entries whose name contains this")
    parser.add_argument("--order", action="store_true", help="also list reorderings")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        old_registers, old_code = assemble(args.old, workdir, "old")
        new_registers, new_code = assemble(args.new, workdir, "new")
    names = sorted(set(old_code) & set(new_code))
    if args.only:
        names = [n for n in names if args.only in n]
    changed = reordered = 0
    for name in names:
        before, after = old_code[name], new_code[name]
        if before == after:
            continue
        counts = collections.Counter(map(opcode, after))
        counts.subtract(collections.Counter(map(opcode, before)))
        moved = {op: n for op, n in counts.items() if n}
        if not moved:
            reordered += 1
            if not args.order:
                continue
        else:
            changed += 1
        ops = " ".join(f"{op} {n:+d}" for op, n in sorted(moved.items())) or "same opcodes, reordered"
        print(
            f"{name}: registers {old_registers.get(name)} -> {new_registers.get(name)}, "
            f"{len(before)} -> {len(after)} instructions; {ops}"
        )
    only_one = len(set(old_code) ^ set(new_code))
    print(
        f"{len(names)} entries compared: {changed} with other instructions, {reordered} "
        f"reordered only, {len(names) - changed - reordered} the same"
        + (f"; {only_one} in one build only" if only_one else "")
    )


if __name__ == "__main__":
    main()
