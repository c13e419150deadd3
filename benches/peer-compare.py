#!/usr/bin/env python3
"""picajit against the peer (Azahar's shader JIT through ../shared/tools/peer-bench), side by side.

For each corpus program (DVLE 0, a vertex shader) this assembles the SHBIN, then alternates
rounds of `peer-bench` and `picajit bench` on the same SHBIN and the same input, in the same
minute, keeping the best of each (the peer's README protocol). Two inputs per program: the
corpus fixture (a third of its vertices hold inf/NaN/subnormal values on purpose) and "finite",
the fixture's vertices whose inputs are all finite and within the float24 range.

    cargo build --release
    python3 benches/peer-compare.py [PROGRAM ...]        # default: the whole corpus

Environment: ROUNDS (default 2), VERTS (default 50000), PEER (the peer-bench path),
OUT (the work folder, default target/peer-compare). Prints the table at the end; the raw
numbers are in OUT/results.json. Speeds are ns/vertex, ratios are the peer's time over ours.
"""
import glob
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER = os.environ.get('PEER', os.path.join(ROOT, '..', 'shared', 'tools', 'peer-bench', 'peer-bench'))
BIN = os.path.join(ROOT, 'target', 'release', 'picajit')
OUT = os.environ.get('OUT', os.path.join(ROOT, 'target', 'peer-compare'))
ROUNDS = int(os.environ.get('ROUNDS', '2'))
VERTS = os.environ.get('VERTS', '50000')


def finite_input(src, dst):
    """The fixture's vertices whose inputs are all finite, normal float24 values or zero."""
    d = json.load(open(src))

    def ok(v):
        return all(isinstance(x, (int, float)) and (x == 0 or 1e-18 < abs(x) < 1e18) for x in v)

    d['vertices'] = [v for v in d['vertices'] if all(ok(r) for r in v.values())]
    json.dump(d, open(dst, 'w'))
    return len(d['vertices'])


def picajit(shbin, inp, precision, engines):
    cmd = [BIN, 'bench', shbin, '--dvle', '0', '--input', inp, '--precision', precision,
           '--vertices', VERTS, '--repeat', '3', '--json']
    for e in engines:
        cmd += ['--engine', e]
    d = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    res = d['results'][0]
    return {e['engine']: e for e in res['engines']}, res, d['peak_memory_bytes']


def assemble(prog, out):
    """Corpus program `prog` assembled to `out`/`prog`.shbin; the path."""
    shbin = os.path.join(out, prog + '.shbin')
    sources = sorted(glob.glob(os.path.join(ROOT, 'corpus', 'programs', prog, '*.pica')))
    subprocess.run([BIN, 'asm'] + sources + ['-o', shbin], check=True, capture_output=True)
    return shbin


def keep(best, key, v):
    """Keeps the smaller of `v` and `best[key]` (a missing value changes nothing)."""
    if v is not None and (key not in best or v < best[key]):
        best[key] = v


def run_peer(shbin, inp):
    """One round of the peer on 2048 vertices, best of 100: its RESULT records."""
    p = subprocess.run([PEER, shbin, '--input', inp, '--vertices', '2048', '--repeat', '100'],
                       capture_output=True, text=True)
    return [json.loads(line[len('RESULT '):]) for line in p.stdout.splitlines()
            if line.startswith('RESULT ')]


def measure(programs):
    rows = {}
    for prog in programs:
        shbin = assemble(prog, OUT)
        fixture = os.path.join(ROOT, 'corpus', 'programs', prog, 'dvle0.input.json')
        finite = os.path.join(OUT, prog + '.finite.json')
        inputs = [('fixture', fixture)]
        if finite_input(fixture, finite):
            inputs.append(('finite', finite))
        for kind, inp in inputs:
            best = {}
            for _ in range(ROUNDS):
                for peer in run_peer(shbin, inp):
                    keep(best, 'peer', peer['jit_ns'])
                    keep(best, 'peer compile', peer['compile_ms'])
                engines, res, peak = picajit(shbin, inp, 'f24', ['jit', 'soa-jit', 'vinterp', 'auto'])
                for e, v in engines.items():
                    keep(best, 'f24 ' + e, v['ns_per_vertex'])
                    keep(best, 'f24 ' + e + ' compile', v['compile_ms'])
                    if v.get('threaded'):
                        keep(best, 'f24 ' + e + ' 2 threads', v['threaded']['ns_per_vertex'])
                keep(best, 'peak MiB', peak / 2 ** 20)
                keep(best, 'words', res['code_words'])
                engines, _, _ = picajit(shbin, inp, 'f32', ['soa-jit', 'vinterp', 'auto'])
                for e, v in engines.items():
                    keep(best, 'f32 ' + e, v['ns_per_vertex'])
            rows[kind + '|' + prog] = best
            print(kind, prog, json.dumps(best), file=sys.stderr, flush=True)
    return rows


def table(rows):
    for kind in ('fixture', 'finite'):
        print(f'inputs: {kind}')
        print(f"{'program':18} {'words':>5} {'peer':>7} | f24: {'jit':>7} {'soa-jit':>7} {'vinterp':>7} {'auto':>7}"
              f" | f32: {'soa-jit':>7} {'vinterp':>7} | soa/peer f24    f32 | vint/peer f24  f32 | 2 thr | MiB")
        ratios = {}
        for key, b in sorted(rows.items()):
            k, prog = key.split('|')
            if k != kind or 'peer' not in b:
                continue
            peer = b['peer']
            threads = b['f24 soa-jit'] / b.get('f24 soa-jit 2 threads', float('nan'))
            print(f"{prog:18} {b['words']:5d} {peer:7.1f} |      {b['f24 jit']:7.1f} {b['f24 soa-jit']:7.1f}"
                  f" {b['f24 vinterp']:7.1f} {b['f24 auto']:7.1f} |      {b['f32 soa-jit']:7.1f} {b['f32 vinterp']:7.1f}"
                  f" |   {peer / b['f24 soa-jit']:6.2f}x {peer / b['f32 soa-jit']:6.2f}x |"
                  f"   {peer / b['f24 vinterp']:6.2f}x {peer / b['f32 vinterp']:5.2f}x | {threads:4.2f}x | {b['peak MiB']:.1f}")
            for e in ('f24 jit', 'f24 soa-jit', 'f24 vinterp', 'f24 auto', 'f32 soa-jit', 'f32 vinterp', 'f32 auto'):
                ratios.setdefault(e, []).append(peer / b[e])
        for e, r in ratios.items():
            g = math.exp(sum(map(math.log, r)) / len(r))
            print(f'{kind} {e}: geomean speed vs peer JIT {g:.2f}x over {len(r)} programs'
                  f' (best {max(r):.2f}x, worst {min(r):.2f}x)')
        soa_only = sorted(b['f24 soa-jit compile'] - b['f24 jit compile']
                          for key, b in rows.items() if key.startswith(kind + '|'))
        if soa_only:
            print(f'{kind}: SoA kernel compile (soa-jit prepare minus the scalar JIT it also prepares):'
                  f' median {soa_only[len(soa_only) // 2]:.2f} ms, max {soa_only[-1]:.2f} ms')
        print()


if __name__ == '__main__':
    os.makedirs(OUT, exist_ok=True)
    programs = sys.argv[1:] or sorted(os.listdir(os.path.join(ROOT, 'corpus', 'programs')))
    results = measure(programs)
    json.dump(results, open(os.path.join(OUT, 'results.json'), 'w'), indent=1)
    table(results)
