//! Adversarial program shapes for the JIT's compile cost (used by `jit-tests/compile_bounds.rs`
//! and `benches/compile_cost.rs`): each builds a program of about `words` code words whose
//! control flow stresses one part of the compiler.
#![allow(dead_code)]

use picajit::asm::{AsmOptions, SourceFile, assemble};
use picajit::program::{ShaderKind, ShaderProgram};

use crate::common::Builder;

/// One adversarial shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `loop i0, pc+1` / `breakc cmp.x` pairs: every BREAKC can go to every loop end.
    LoopsBreaks,
    /// Picasso source: `for i0` / `breakc cmp.x` / `.end` repeated in a geometry shader.
    PicassoForBreakc,
    /// A straight line of MAD and DP4, then END.
    Straight,
    /// A straight line without END: the zero words past it run on and wrap at 4096.
    NoEnd,
    /// IFU scopes that all have the same else address (and many different ends).
    SharedIfEnds,
    /// CALLs of procedures that all end at the same address (many return addresses).
    SharedCallEnds,
    /// LOOPs that all end at the same address (many body entries).
    SharedLoopEnds,
    /// Procedures of four words that call each other and themselves, tail calls included: the
    /// CALL ring overflows and returns cascade.
    RecursiveCalls,
    /// A conditional jump, IF, CALL or LOOP to a pseudo-random address at every word.
    JumpsEverywhere,
    /// A straight line of the costliest data instructions: EX2/LG2 (host calls), LITP, RCP/RSQ,
    /// DPH, relative addressing through a0 and aL, MOVA, CMP.
    Heavy,
}

impl Shape {
    /// Every shape.
    pub const ALL: [Shape; 10] = [
        Shape::LoopsBreaks,
        Shape::PicassoForBreakc,
        Shape::Straight,
        Shape::NoEnd,
        Shape::SharedIfEnds,
        Shape::SharedCallEnds,
        Shape::SharedLoopEnds,
        Shape::RecursiveCalls,
        Shape::JumpsEverywhere,
        Shape::Heavy,
    ];

    /// Whether the program is the same content repeated whatever its size (so its cost per
    /// word is comparable across sizes); the others mix in a size-dependent share of other
    /// code (the zero words past them, the procedures they call).
    pub fn repeats(self) -> bool {
        matches!(
            self,
            Shape::LoopsBreaks
                | Shape::PicassoForBreakc
                | Shape::Straight
                | Shape::Heavy
                | Shape::SharedLoopEnds
                | Shape::RecursiveCalls
        )
    }

    /// The shape's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Shape::LoopsBreaks => "loops-breaks",
            Shape::PicassoForBreakc => "picasso-for-breakc",
            Shape::Straight => "straight",
            Shape::NoEnd => "no-end",
            Shape::SharedIfEnds => "shared-if-ends",
            Shape::SharedCallEnds => "shared-call-ends",
            Shape::SharedLoopEnds => "shared-loop-ends",
            Shape::RecursiveCalls => "recursive-calls",
            Shape::JumpsEverywhere => "jumps-everywhere",
            Shape::Heavy => "heavy",
        }
    }

    /// The shape called `name`.
    pub fn named(name: &str) -> Option<Shape> {
        Shape::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The program of about `words` words (at least 8, at most 4096): a vertex shader up to
    /// 512 words (picasso's limit), a geometry shader beyond.
    pub fn program(self, words: usize) -> ShaderProgram {
        let mut program = self.build(words);
        if self != Shape::PicassoForBreakc {
            program.stage = stage_for(words);
        }
        program
    }

    /// [`Shape::program`] as a shader of `stage` (memory holds 4096 words whatever the stage).
    pub fn program_as(self, words: usize, stage: ShaderKind) -> ShaderProgram {
        let mut program = self.build(words);
        program.stage = stage;
        program
    }

    fn build(self, words: usize) -> ShaderProgram {
        let words = words.clamp(8, 4096);
        match self {
            Shape::LoopsBreaks => loops_breaks(words),
            Shape::PicassoForBreakc => picasso_for_breakc(words),
            Shape::Straight => straight(words, true),
            Shape::NoEnd => straight(words, false),
            Shape::SharedIfEnds => shared_if_ends(words),
            Shape::SharedCallEnds => shared_call_ends(words),
            Shape::SharedLoopEnds => shared_loop_ends(words),
            Shape::RecursiveCalls => recursive_calls(words),
            Shape::JumpsEverywhere => jumps_everywhere(words),
            Shape::Heavy => heavy(words),
        }
    }
}

/// A deterministic pseudo-random sequence (xorshift64*).
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Lcg {
        Lcg(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn stage_for(words: usize) -> ShaderKind {
    if words <= 512 {
        ShaderKind::Vertex
    } else {
        ShaderKind::Geometry
    }
}

/// A data instruction that varies with `k`: MAD and DP4 on temporaries, inputs and uniforms.
fn data_line(k: usize) -> String {
    let r = |n: usize| n % 12;
    match k % 4 {
        0 => format!("mad r{}, v{}, c{}, r{}", r(k), k % 8, k % 90, r(k + 3)),
        1 => format!("dp4 r{}.x, c{}, r{}", r(k), k % 90, r(k + 5)),
        2 => format!(
            "mad r{}.xyz, r{}, r{}, v{}",
            r(k + 1),
            r(k),
            r(k + 7),
            k % 8
        ),
        _ => format!("dp4 o{}.y, c{}, r{}", k % 7, (k * 7) % 90, r(k)),
    }
}

/// `loop i0, pc+1; breakc cmp.x` pairs, then END.
pub fn loops_breaks(words: usize) -> ShaderProgram {
    let mut b = Builder::new();
    b.op("cmp c0, lt, lt, v0");
    while (b.here() as usize) + 2 < words {
        let at = b.here();
        b.op(&format!("loop i0, {}", at + 1));
        b.op("breakc cmp.x");
    }
    b.op("end");
    b.program(stage_for(words))
}

/// The picasso source of [`Shape::PicassoForBreakc`] with `count` loops.
pub fn for_breakc_source(count: usize) -> String {
    let mut text = String::from(
        ".gsh point c0\n.fvec limit\n.ivec counter\n.out outPos position\n.proc main\n\
         \tcmp limit, lt, lt, v0\n",
    );
    for _ in 0..count {
        text += "\tfor counter\n\t\tbreakc cmp.x\n\t.end\n";
    }
    text += "\tmov outPos, v0\n\tend\n.end\n";
    text
}

/// [`for_breakc_source`] assembled, with as many loops as fit in `words` words.
pub fn picasso_for_breakc(words: usize) -> ShaderProgram {
    let assemble_count = |count: usize| {
        let file = SourceFile {
            name: "for-breakc.g.pica".to_string(),
            text: for_breakc_source(count),
        };
        let shbin = assemble(&[file], AsmOptions::default())
            .unwrap_or_else(|e| panic!("for/breakc source: {e}"))
            .shbin;
        ShaderProgram::from_shbin(&shbin, 0).expect("one DVLE")
    };
    // Each loop is the same number of words: measure it on one.
    let one = assemble_count(1).code_len;
    let two = assemble_count(2).code_len;
    let per_loop = two - one;
    let count = (words.saturating_sub(one)) / per_loop + 1;
    assemble_count(count.max(1))
}

/// MAD/DP4 words, then END (or no END: the program runs on through the zero words).
pub fn straight(words: usize, with_end: bool) -> ShaderProgram {
    let mut b = Builder::new();
    let data = if with_end { words - 1 } else { words };
    for k in 0..data {
        b.op(&data_line(k));
    }
    if with_end {
        b.op("end");
    }
    b.program(stage_for(words))
}

/// `ifu bK, X, n` at every word before X = words - 2 with varying n: the IF stack overflows,
/// every scope has the else address X, and the ends X + n are spread over the memory after it.
pub fn shared_if_ends(words: usize) -> ShaderProgram {
    let mut b = Builder::new();
    let x = words as u16 - 2;
    let mut k = 0;
    while b.here() < x {
        let count = 1 + (k * 37) % 200;
        b.op(&format!("ifu b{}, {x}, {count}", k % 15));
        k += 1;
    }
    b.op(&data_line(0));
    b.op("end");
    b.program(stage_for(words))
}

/// Procedures `[s, E)` for the last 255 starts `s` below `E = words / 2`: main (after `E`)
/// calls them from about `words / 2` sites (CALLU, so any subset runs), and every call ends at
/// `E`, which holds END.
pub fn shared_call_ends(words: usize) -> ShaderProgram {
    let mut b = Builder::new();
    let half = words / 2;
    let end = half as u16;
    // Main: callu to start s with count end - s, from half + 1 on.
    let mut calls = Vec::new();
    let span = (half - 1).min(255);
    for k in 0..half.saturating_sub(2) {
        let start = end - 1 - (k % span) as u16;
        calls.push(format!("callu b{}, {start}, {}", k % 15, end - start));
    }
    for k in 0..half {
        b.op(&data_line(k));
    }
    b.op("end");
    let entry = b.here();
    for call in calls {
        b.op(&call);
    }
    b.op("end");
    b.program_at(entry as u32, stage_for(words))
}

/// LOOPs that all end at the same address: `loop iK, D` at every word before D.
pub fn shared_loop_ends(words: usize) -> ShaderProgram {
    let mut b = Builder::new();
    let d = words as u16 - 3;
    let mut k = 0;
    while b.here() < d {
        b.op(&format!("loop i{}, {d}", k % 4));
        k += 1;
    }
    b.op("breakc cmp.y");
    b.op(&data_line(1));
    b.op("end");
    b.program(stage_for(words))
}

/// Procedures of four words at 4k: `mad; callc cmp.x, P; callu bK, Q; callc cmp.y, R` (the last
/// a tail call whose return is the next procedure's start), P, Q, R pseudo-random procedures
/// including itself. Main calls the first and ends.
pub fn recursive_calls(words: usize) -> ShaderProgram {
    let mut b = Builder::new();
    let procs = (words - 2) / 4;
    let mut rng = Lcg::new(7);
    let start = |p: u64| (p * 4) as u16;
    for p in 0..procs as u64 {
        let [x, y, z] = [0; 3].map(|_| start(rng.below(procs as u64)));
        let own = start(p);
        let pick = |r: u16, k: u64| if k.is_multiple_of(5) { own } else { r };
        b.op(&data_line(p as usize));
        b.op(&format!("callc cmp.x, {}, 4", pick(x, p)));
        b.op(&format!("callu b{}, {}, 4", p % 15, pick(y, p + 1)));
        b.op(&format!("callc cmp.y, {}, 4", pick(z, p + 2)));
    }
    let entry = b.here();
    b.op("call 0, 4");
    b.op("end");
    b.program_at(entry as u32, stage_for(words))
}

/// At every word a flow instruction to a pseudo-random address: JMPC, JMPU, IFU, CALLU, LOOP,
/// BREAKC, with data, EMIT and SETEMIT (vertex 3 now and then: EMIT then fails) between; END in
/// the middle and at the end.
pub fn jumps_everywhere(words: usize) -> ShaderProgram {
    let mut b = Builder::new();
    let mut rng = Lcg::new(11);
    let last = words as u64 - 1;
    for k in 0..last {
        let target = rng.below(last);
        let count = 1 + rng.below(16);
        let line = match rng.below(10) {
            0 => format!("jmpc cmp.x, {target}"),
            1 => format!("jmpu b{}, {target}", k % 15),
            2 => format!("ifu b{}, {target}, {count}", k % 15),
            3 => format!("callu b{}, {target}, {count}", k % 15),
            4 => format!("loop i{}, {target}", k % 4),
            5 => "breakc cmp.y".to_string(),
            6 => "cmp c1, lt, ge, v1".to_string(),
            7 if rng.below(4) == 0 => format!("setemit {}, prim", rng.below(4)),
            7 => "emit".to_string(),
            _ => data_line(k as usize),
        };
        if k == last / 2 {
            b.op("end");
        } else {
            b.op(&line);
        }
    }
    b.op("end");
    b.program(stage_for(words))
}

/// The costliest data instructions in a straight line, then END.
pub fn heavy(words: usize) -> ShaderProgram {
    let mut b = Builder::new();
    for k in 0..words - 1 {
        let r = |n: usize| n % 12;
        let line = match k % 12 {
            0 => format!("ex2 r{}, r{}.x", r(k), r(k + 1)),
            1 => format!("lg2 r{}.y, r{}.z", r(k), r(k + 2)),
            2 => format!("litp r{}, r{}", r(k), r(k + 3)),
            3 => format!("rcp r{}.z, r{}.w", r(k), r(k + 4)),
            4 => format!("rsq r{}.w, r{}.x", r(k), r(k + 5)),
            5 => format!("mova a0.xy, r{}", r(k)),
            6 => format!("dph r{}, c{}[a0.x], r{}", r(k), k % 90, r(k + 6)),
            7 => format!(
                "mad r{}, r{}, c{}[aL], -r{}",
                r(k),
                r(k + 1),
                k % 90,
                r(k + 7)
            ),
            8 => format!("cmp r{}, lt, ge, r{}", r(k), r(k + 8)),
            9 => format!("mul o{}.xz, c{}[a0.y], r{}.yxwz", k % 7, k % 90, r(k)),
            10 => format!("flr r{}, -r{}", r(k), r(k + 9)),
            _ => format!("max r{}, c{}, r{}", r(k), k % 90, r(k + 10)),
        };
        b.op(&line);
    }
    b.op("end");
    b.program(stage_for(words))
}
