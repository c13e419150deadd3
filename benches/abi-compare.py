#!/usr/bin/env python3
"""The C ABI against the peer (Azahar's shader JIT through ../shared/tools/peer-bench), as an
emulator calls it: one vertex at a time, and batches of 16 in the emulator's vertex layout.

For each corpus program (DVLE 0, a vertex shader) this assembles the SHBIN, compiles
benches/c/abi_bench.c against target/release/libpicajit.a, and alternates rounds of
`peer-bench` and `abi_bench` on the same SHBIN and input in the same minute, keeping the best of
each (the peer's README protocol). The input is the corpus fixture's vertices whose inputs are
all finite (as benches/peer-compare.py's "finite"; the peer skips the float24 rules, so
unusual values say nothing about the per-call cost).

    cargo build --release
    python3 benches/abi-compare.py [PROGRAM ...]        # default: the whole corpus

Environment: ROUNDS (default 3), ENGINES (default "jit,auto"), PRECISIONS (default "f24,f32"),
PEER (the peer-bench path), OUT (default target/abi-compare), CC (default cc). Prints the
table: ns/vertex, and the peer's time over ours (above 1: picajit is faster); the raw numbers
are in OUT/results.json.
"""
import importlib.util
import json
import math
import os
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIB = os.path.join(ROOT, 'target', 'release', 'libpicajit.a')
OUT = os.environ.get('OUT', os.path.join(ROOT, 'target', 'abi-compare'))
ROUNDS = int(os.environ.get('ROUNDS', '3'))
ENGINES = os.environ.get('ENGINES', 'jit,auto').split(',')
PRECISIONS = os.environ.get('PRECISIONS', 'f24,f32').split(',')
CC = os.environ.get('CC', 'cc')

_spec = importlib.util.spec_from_file_location('peer_compare', os.path.join(ROOT, 'benches', 'peer-compare.py'))
peer_compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peer_compare)


def f32_bits(value):
    """A run document's scalar as f32 bits (docs/run-format: numbers, inf, nan, 0x f32 bits,
    f24:0x float24 words, read as a float24 register holds them)."""
    if isinstance(value, (int, float)):
        return struct.unpack('<I', struct.pack('<f', float(value)))[0]
    if value in ('inf', '-inf', 'nan'):
        return struct.unpack('<I', struct.pack('<f', float(value)))[0]
    if value.startswith('f24:0x'):
        word = int(value[6:], 16)
        sign, exponent, mantissa = word >> 23, (word >> 16) & 0x7F, word & 0xFFFF
        if exponent == 0:
            return sign << 31
        if exponent == 0x7F:
            return sign << 31 | 0xFF << 23 | mantissa << 7
        return sign << 31 | (exponent - 63 + 127) << 23 | mantissa << 7
    if value.startswith('0x'):
        return int(value, 16)
    raise ValueError(f'unknown value {value!r}')


def vector(items):
    bits = [f32_bits(x) for x in (0, 0, 0, 1)]
    for lane, item in enumerate(items):
        bits[lane] = f32_bits(item)
    return bits


def write_input(json_path, bin_path):
    """INPUT.bin for abi_bench (its read_input comment gives the layout)."""
    d = json.load(open(json_path))
    floats, ints, bools_set, bool_values = [], [], 0, 0
    for name, value in d.get('uniforms', {}).items():
        kind, index = name[0], int(name[1:])
        if kind == 'c':
            floats.append((index, vector(value)))
        elif kind == 'i':
            ints.append((index, (list(value) + [0, 0, 0, 0])[:4]))
        elif kind == 'b':
            bools_set |= 1 << index
            bool_values |= int(bool(value)) << index
        else:
            raise ValueError(f'uniform {name}')
    out = struct.pack('<I', len(floats))
    for index, bits in floats:
        out += struct.pack('<I4I', index, *bits)
    out += struct.pack('<I', len(ints))
    for index, v in ints:
        out += struct.pack('<I4B', index, *v)
    out += struct.pack('<III', bools_set, bool_values, len(d['vertices']))
    for vertex in d['vertices']:
        registers = [vector([]) for _ in range(16)]
        for name, value in vertex.items():
            registers[int(name[1:])] = vector(value)
        for bits in registers:
            out += struct.pack('<4I', *bits)
    open(bin_path, 'wb').write(out)


def compile_bench():
    exe = os.path.join(OUT, 'abi_bench')
    subprocess.run([CC, '-O2', '-std=c99', '-I', os.path.join(ROOT, 'include'),
                    os.path.join(ROOT, 'benches', 'c', 'abi_bench.c'), LIB,
                    '-lpthread', '-ldl', '-lm', '-o', exe], check=True)
    return exe


def measure(programs, exe):
    rows = {}
    for prog in programs:
        shbin = peer_compare.assemble(prog, OUT)
        fixture = os.path.join(ROOT, 'corpus', 'programs', prog, 'dvle0.input.json')
        if not os.path.exists(fixture) or '"v' not in open(fixture).read():
            continue
        finite = os.path.join(OUT, prog + '.finite.json')
        if not peer_compare.finite_input(fixture, finite):
            continue
        inbin = os.path.join(OUT, prog + '.input.bin')
        write_input(finite, inbin)
        best = {}
        for _ in range(ROUNDS):
            peer = peer_compare.run_peer(shbin, finite)
            if not peer:
                break
            peer_compare.keep(best, 'peer', peer[0]['jit_ns'])
            for precision in PRECISIONS:
                for engine in ENGINES:
                    r = subprocess.run([exe, shbin, inbin, engine, precision, '2048', '100'],
                                       capture_output=True, text=True, check=True)
                    ours = json.loads(r.stdout.strip().splitlines()[-1])
                    for k in ('run_vertex_ns', 'vertices16_ns', 'vertices_ns'):
                        peer_compare.keep(best, f'{precision} {engine} {k}', ours[k])
        if 'peer' in best:
            rows[prog] = best
            print(prog, json.dumps(best), file=sys.stderr, flush=True)
    return rows


def table(rows):
    cols = [(p, e, k) for p in PRECISIONS for e in ENGINES for k in ('run_vertex_ns', 'vertices16_ns')]
    print(f"{'program':18} {'peer':>6} | " + ' '.join(f'{p} {e} {k.split("_")[0]:>10}' for p, e, k in cols))
    ratios = {}
    for prog, b in sorted(rows.items()):
        cells = []
        for p, e, k in cols:
            v = b.get(f'{p} {e} {k}')
            cells.append(f'{v:7.1f} ({b["peer"] / v:4.2f}x)'.rjust(len(f'{p} {e} {k.split("_")[0]:>10}')))
            ratios.setdefault((p, e, k), []).append(b['peer'] / v)
        print(f"{prog:18} {b['peer']:6.1f} | " + ' '.join(cells))
    for (p, e, k), r in ratios.items():
        g = math.exp(sum(map(math.log, r)) / len(r))
        print(f'{p} {e} {k}: geomean peer/ours {g:.2f}x over {len(r)} programs (best {max(r):.2f}x, worst {min(r):.2f}x)')


if __name__ == '__main__':
    os.makedirs(OUT, exist_ok=True)
    exe = compile_bench()
    programs = sys.argv[1:] or sorted(os.listdir(os.path.join(ROOT, 'corpus', 'programs')))
    results = measure(programs, exe)
    json.dump(results, open(os.path.join(OUT, 'results.json'), 'w'), indent=1)
    table(results)
