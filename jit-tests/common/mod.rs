//! Shared helpers of the integration tests: a one-line-per-instruction program builder whose
//! syntax is exactly what `isa::disasm::format_instruction` prints (so the two check each other),
//! and shortcuts to run programs.
#![allow(dead_code)]

use picajit::difftest::compare::{geometry_difference, state_difference};
use picajit::exec::{ExecConfig, ExecError, GeometryResult, GeometryState, VertexResult};
use picajit::float24::{F24, Precision};
use picajit::interp::Interpreter;
use picajit::isa::{
    BinaryOp, BoolFlowOp, CompareOp, CondCombine, CondFlowOp, Condition, DestMask, DstReg,
    Instruction, OperandDescriptor, RelIndex, SimpleOp, SrcReg, Swizzle, UnaryOp, encode,
};
use picajit::jit::JitShader;
use picajit::program::{InputRegisters, ShaderKind, ShaderProgram, Uniforms, Vec4};

/// Builds program memory from instruction text, allocating operand descriptors.
#[derive(Default, Clone)]
pub struct Builder {
    pub code: Vec<u32>,
    pub opdescs: Vec<u32>,
}

fn number(text: &str) -> u32 {
    let text = text.trim();
    match text.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => text.parse(),
    }
    .unwrap_or_else(|_| panic!("bad number {text:?}"))
}

fn lanes(text: &str) -> Vec<usize> {
    text.chars()
        .map(|c| match c {
            'x' => 0,
            'y' => 1,
            'z' => 2,
            'w' => 3,
            _ => panic!("bad lane {c:?} in {text:?}"),
        })
        .collect()
}

fn mask(text: Option<&str>) -> DestMask {
    match text {
        None => DestMask::ALL,
        Some(letters) => DestMask(lanes(letters).iter().fold(0, |m, &l| m | (8 >> l))),
    }
}

fn swizzle(text: Option<&str>) -> Swizzle {
    match text {
        None => Swizzle::IDENTITY,
        Some(letters) => {
            let mut c = lanes(letters);
            while c.len() < 4 {
                c.push(*c.last().unwrap());
            }
            Swizzle::from_components([c[0], c[1], c[2], c[3]])
        }
    }
}

fn register_index(text: &str, prefix: char, limit: u8) -> u8 {
    let n: u8 = text
        .strip_prefix(prefix)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("bad register {text:?}"));
    assert!(n < limit, "register {text:?} out of range");
    n
}

struct Source {
    reg: SrcReg,
    rel: RelIndex,
    negate: bool,
    swizzle: Swizzle,
}

fn source(text: &str) -> Source {
    let text = text.trim();
    let (negate, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (body, swz) = match text.rsplit_once('.') {
        Some((body, swz)) if !swz.contains(']') => (body, Some(swz)),
        _ => (text, None),
    };
    let (name, rel) = match body.split_once('[') {
        Some((name, rel)) => {
            let rel = match rel.trim_end_matches(']') {
                "a0.x" => RelIndex::A0X,
                "a0.y" => RelIndex::A0Y,
                "aL" => RelIndex::AL,
                other => panic!("bad index register {other:?}"),
            };
            (name, rel)
        }
        None => (body, RelIndex::None),
    };
    let reg = match name.chars().next() {
        Some('v') => SrcReg::input(register_index(name, 'v', 16)),
        Some('r') => SrcReg::temp(register_index(name, 'r', 16)),
        Some('c') => SrcReg::uniform(register_index(name, 'c', 96)),
        _ => panic!("bad source {name:?}"),
    };
    Source {
        reg,
        rel,
        negate,
        swizzle: swizzle(swz),
    }
}

fn destination(text: &str) -> (DstReg, DestMask) {
    let (name, letters) = match text.trim().split_once('.') {
        Some((name, letters)) => (name, Some(letters)),
        None => (text.trim(), None),
    };
    let reg = match name.chars().next() {
        Some('o') => DstReg::output(register_index(name, 'o', 16)),
        Some('r') => DstReg::temp(register_index(name, 'r', 16)),
        _ => panic!("bad destination {name:?}"),
    };
    (reg, mask(letters))
}

fn condition(text: &str) -> Condition {
    let flag = |t: &str| -> (bool, char) {
        let t = t.trim();
        let (reference, t) = match t.strip_prefix('!') {
            Some(rest) => (false, rest),
            None => (true, t),
        };
        match t {
            "cmp.x" => (reference, 'x'),
            "cmp.y" => (reference, 'y'),
            _ => panic!("bad condition {t:?}"),
        }
    };
    let pair = |a: &str, b: &str, combine| {
        let (rx, _) = flag(a);
        let (ry, _) = flag(b);
        Condition {
            ref_x: rx,
            ref_y: ry,
            combine,
        }
    };
    if let Some((a, b)) = text.split_once("&&") {
        pair(a, b, CondCombine::And)
    } else if let Some((a, b)) = text.split_once("||") {
        pair(a, b, CondCombine::Or)
    } else {
        let (reference, name) = flag(text);
        // The unused reference bit defaults to 1, as picasso encodes it.
        match name {
            'x' => Condition {
                ref_x: reference,
                ref_y: true,
                combine: CondCombine::X,
            },
            _ => Condition {
                ref_x: true,
                ref_y: reference,
                combine: CondCombine::Y,
            },
        }
    }
}

fn compare_op(text: &str) -> CompareOp {
    match text.trim() {
        "eq" => CompareOp::Eq,
        "ne" => CompareOp::Ne,
        "lt" => CompareOp::Lt,
        "le" => CompareOp::Le,
        "gt" => CompareOp::Gt,
        "ge" => CompareOp::Ge,
        "op6" => CompareOp::True(6),
        "op7" => CompareOp::True(7),
        other => panic!("bad comparison {other:?}"),
    }
}

impl Builder {
    pub fn new() -> Builder {
        Builder::default()
    }

    /// The address the next instruction goes to.
    pub fn here(&self) -> u16 {
        self.code.len() as u16
    }

    /// Adds an operand descriptor (reusing an identical one) and returns its index.
    pub fn desc(&mut self, desc: OperandDescriptor) -> u8 {
        if let Some(i) = self.opdescs.iter().position(|&d| d == desc.0) {
            return i as u8;
        }
        self.opdescs.push(desc.0);
        (self.opdescs.len() - 1) as u8
    }

    /// Parses one instruction line (the disassembler's syntax) into a typed instruction.
    pub fn parse(&mut self, line: &str) -> Instruction {
        let line = line.trim();
        let (mnemonic, rest) = line.split_once(' ').unwrap_or((line, ""));
        let args: Vec<&str> = if rest.is_empty() {
            vec![]
        } else {
            rest.split(',').map(str::trim).collect()
        };
        let descriptor = |b: &mut Builder, m: DestMask, srcs: &[&Source]| {
            let mut slots = [(false, Swizzle::IDENTITY); 3];
            for (slot, s) in srcs.iter().enumerate() {
                slots[slot] = (s.negate, s.swizzle);
            }
            b.desc(OperandDescriptor::new(m, slots))
        };
        let binary = |name: &str| -> Option<BinaryOp> {
            Some(match name {
                "add" => BinaryOp::Add,
                "dp3" => BinaryOp::Dp3,
                "dp4" => BinaryOp::Dp4,
                "dph" => BinaryOp::Dph,
                "dst" => BinaryOp::Dst,
                "mul" => BinaryOp::Mul,
                "sge" => BinaryOp::Sge,
                "slt" => BinaryOp::Slt,
                "max" => BinaryOp::Max,
                "min" => BinaryOp::Min,
                "dphi" => BinaryOp::Dphi,
                "dsti" => BinaryOp::Dsti,
                "sgei" => BinaryOp::Sgei,
                "slti" => BinaryOp::Slti,
                _ => return None,
            })
        };
        let unary = |name: &str| -> Option<UnaryOp> {
            Some(match name {
                "ex2" => UnaryOp::Ex2,
                "lg2" => UnaryOp::Lg2,
                "litp" => UnaryOp::Litp,
                "flr" => UnaryOp::Flr,
                "rcp" => UnaryOp::Rcp,
                "rsq" => UnaryOp::Rsq,
                "mov" => UnaryOp::Mov,
                _ => return None,
            })
        };
        if let Some(op) = binary(mnemonic) {
            let (dst, m) = destination(args[0]);
            let (a, b) = (source(args[1]), source(args[2]));
            let desc = descriptor(self, m, &[&a, &b]);
            let rel = if op.is_inverted() { b.rel } else { a.rel };
            return Instruction::Binary {
                op,
                dst,
                src1: a.reg,
                src2: b.reg,
                rel,
                desc,
            };
        }
        if let Some(op) = unary(mnemonic) {
            let (dst, m) = destination(args[0]);
            let a = source(args[1]);
            let desc = descriptor(self, m, &[&a]);
            return Instruction::Unary {
                op,
                dst,
                src1: a.reg,
                rel: a.rel,
                desc,
                ignored: 0,
            };
        }
        let flow_target = |t: &str| number(t) as u16;
        match mnemonic {
            "mova" => {
                let m = mask(args[0].strip_prefix("a0.").or(Some("xy")));
                let a = source(args[1]);
                let desc = descriptor(self, m, &[&a]);
                Instruction::Mova {
                    src1: a.reg,
                    rel: a.rel,
                    desc,
                    ignored: 0,
                }
            }
            "cmp" => {
                let (a, b) = (source(args[0]), source(args[3]));
                let desc = descriptor(self, DestMask::ALL, &[&a, &b]);
                Instruction::Cmp {
                    src1: a.reg,
                    src2: b.reg,
                    rel: a.rel,
                    desc,
                    cmp_x: compare_op(args[1]),
                    cmp_y: compare_op(args[2]),
                }
            }
            "mad" | "madi" => {
                let (dst, m) = destination(args[0]);
                let (a, b, c) = (source(args[1]), source(args[2]), source(args[3]));
                let desc = descriptor(self, m, &[&a, &b, &c]);
                let inverted = mnemonic == "madi";
                let rel = if inverted { c.rel } else { b.rel };
                Instruction::Mad {
                    inverted,
                    dst,
                    src1: a.reg,
                    src2: b.reg,
                    src3: c.reg,
                    rel,
                    desc,
                }
            }
            "nop" | "end" | "emit" | "break" => {
                let op = match mnemonic {
                    "nop" => SimpleOp::Nop,
                    "end" => SimpleOp::End,
                    "emit" => SimpleOp::Emit,
                    _ => SimpleOp::Break,
                };
                Instruction::Simple { op, ignored: 0 }
            }
            "breakc" | "jmpc" | "call" | "callc" | "ifc" => {
                let always = Condition {
                    ref_x: true,
                    ref_y: true,
                    combine: CondCombine::Or,
                };
                let (op, cond, target, count) = match mnemonic {
                    "breakc" => (CondFlowOp::Breakc, condition(args[0]), 0, 0),
                    "jmpc" => (
                        CondFlowOp::Jmpc,
                        condition(args[0]),
                        flow_target(args[1]),
                        0,
                    ),
                    "call" => (
                        CondFlowOp::Call,
                        always,
                        flow_target(args[0]),
                        number(args[1]),
                    ),
                    "callc" => (
                        CondFlowOp::Callc,
                        condition(args[0]),
                        flow_target(args[1]),
                        number(args[2]),
                    ),
                    _ => (
                        CondFlowOp::Ifc,
                        condition(args[0]),
                        flow_target(args[1]),
                        number(args[2]),
                    ),
                };
                Instruction::CondFlow {
                    op,
                    cond,
                    target,
                    count: count as u8,
                    ignored: 0,
                }
            }
            "callu" | "ifu" | "jmpu" => {
                let (inverted, b) = match args[0].strip_prefix('!') {
                    Some(rest) => (true, rest),
                    None => (false, args[0]),
                };
                let bool_id = register_index(b, 'b', 16);
                let target = flow_target(args[1]);
                let (op, count) = match mnemonic {
                    "callu" => (BoolFlowOp::Callu, number(args[2])),
                    "ifu" => (BoolFlowOp::Ifu, number(args[2])),
                    _ => (BoolFlowOp::Jmpu, inverted as u32),
                };
                Instruction::BoolFlow {
                    op,
                    bool_id,
                    target,
                    count: count as u8,
                    ignored: 0,
                }
            }
            "loop" => Instruction::Loop {
                int_id: register_index(args[0], 'i', 4),
                target: flow_target(args[1]),
                count: 0,
                ignored: 0,
            },
            "setemit" => {
                let flags = args.get(1).copied().unwrap_or("");
                Instruction::SetEmit {
                    vertex: number(args[0]) as u8,
                    primitive: flags.contains("prim"),
                    winding: flags.contains("inv"),
                    ignored: 0,
                }
            }
            other => panic!("unknown mnemonic {other:?} in {line:?}"),
        }
    }

    /// Appends one instruction line; returns its address.
    pub fn op(&mut self, line: &str) -> u16 {
        let inst = self.parse(line);
        self.code
            .push(encode(&inst).unwrap_or_else(|e| panic!("{line:?}: {e}")));
        self.here() - 1
    }

    /// Appends several lines (separated by newlines or `;`); `#` starts a comment.
    pub fn ops(&mut self, text: &str) -> &mut Builder {
        for line in text.lines().flat_map(|l| l.split(';')) {
            let line = line.split('#').next().unwrap().trim();
            if !line.is_empty() {
                self.op(line);
            }
        }
        self
    }

    /// Appends a raw word.
    pub fn word(&mut self, word: u32) -> u16 {
        self.code.push(word);
        self.here() - 1
    }

    /// The program, entry 0.
    pub fn program(&self, stage: ShaderKind) -> ShaderProgram {
        self.program_at(0, stage)
    }

    /// The program with another entry point.
    pub fn program_at(&self, entry: u32, stage: ShaderKind) -> ShaderProgram {
        let mask = if stage == ShaderKind::Vertex {
            0xFFFF
        } else {
            0x7F
        };
        ShaderProgram::new(&self.code, &self.opdescs, entry, stage, mask).unwrap()
    }
}

/// An input set from a few registers, the rest (0, 0, 0, 1).
pub fn inputs(values: &[(usize, Vec4)]) -> InputRegisters {
    let mut regs = [[0.0, 0.0, 0.0, 1.0]; 16];
    for &(n, v) in values {
        regs[n] = v;
    }
    regs
}

/// Uniforms from a few float registers.
pub fn uniforms(values: &[(usize, Vec4)]) -> Uniforms {
    let mut u = Uniforms::default();
    for &(n, v) in values {
        u.float[n] = v;
    }
    u
}

/// Compares two engines' vertex results bit for bit (docs/execution-model.md §8): outputs and
/// a0/aL/cmp when both succeed, the error kind when both fail.
#[track_caller]
pub fn assert_same_vertex(
    a: &Result<VertexResult, ExecError>,
    b: &Result<VertexResult, ExecError>,
) {
    match (a, b) {
        (Ok(x), Ok(y)) => {
            let bits = |r: &VertexResult| r.outputs.map(|v| v.map(f32::to_bits));
            assert_eq!(bits(x), bits(y), "outputs differ between engines");
            assert_eq!(x.flow, y.flow, "a0/aL/cmp differ between engines");
        }
        (Err(x), Err(y)) => assert_eq!(x.kind(), y.kind(), "error kinds differ: {x} vs {y}"),
        _ => panic!("one engine failed: {a:?} vs {b:?}"),
    }
}

/// Runs a vertex shader in one precision mode through the interpreter and the JIT, asserts
/// they agree bit for bit, and returns the interpreter's result.
pub fn run_vs(
    b: &Builder,
    p: Precision,
    u: &Uniforms,
    v: &InputRegisters,
) -> Result<VertexResult, ExecError> {
    run_vs_with(
        b.program(ShaderKind::Vertex),
        ExecConfig {
            precision: p,
            ..ExecConfig::default()
        },
        u,
        v,
    )
}

/// [`run_vs`] for a prepared program and settings.
pub fn run_vs_with(
    program: ShaderProgram,
    config: ExecConfig,
    u: &Uniforms,
    v: &InputRegisters,
) -> Result<VertexResult, ExecError> {
    let interp = Interpreter::new(program.clone(), config).run_vertex(u, v);
    let jit = JitShader::compile(program, config)
        .expect("the JIT compiles every program")
        .run_vertex(u, v);
    assert_same_vertex(&interp, &jit);
    interp
}

/// Runs a vertex shader in the default precision with no inputs and returns o0.
pub fn o0(b: &Builder, u: &Uniforms, v: &InputRegisters) -> Vec4 {
    run_vs(b, Precision::F24Truncate, u, v)
        .expect("invocation succeeds")
        .outputs[0]
}

/// Runs a geometry shader over several invocations on both engines, asserts they agree bit for
/// bit (emitted vertices and primitives, before an error too, error kinds and the state after
/// each invocation), and returns the interpreter's results.
pub fn run_gs(
    b: &Builder,
    u: &Uniforms,
    invocations: &[InputRegisters],
) -> (GeometryState, Vec<Result<GeometryResult, ExecError>>) {
    let program = b.program(ShaderKind::Geometry);
    let interp = Interpreter::new(program.clone(), ExecConfig::default());
    let jit =
        JitShader::compile(program, ExecConfig::default()).expect("the JIT compiles every program");
    let mut state = GeometryState::default();
    let mut jit_state = GeometryState::default();
    let mut results = Vec::new();
    let names = ["interp", "jit"];
    for v in invocations {
        let mut emitted = GeometryResult::default();
        let mut jit_emitted = GeometryResult::default();
        let a = interp.run_geometry(&mut state, u, v, &mut emitted);
        let j = jit.run_geometry(&mut jit_state, u, v, &mut jit_emitted);
        if let Some(difference) = geometry_difference((&a, &emitted), (&j, &jit_emitted), names) {
            panic!("the engines' invocations differ: {difference}");
        }
        if let Some(difference) = state_difference(&state, &jit_state, names) {
            panic!("the engines' geometry states differ: {difference}");
        }
        results.push(a.map(|()| emitted));
    }
    (state, results)
}

/// An f32 from a raw float24 pattern.
pub fn f24(bits: u32) -> f32 {
    F24::from_bits(bits).unwrap().to_f32()
}

/// Asserts two vectors have the same bit patterns.
#[track_caller]
pub fn assert_bits(actual: Vec4, expected: Vec4) {
    assert_eq!(
        actual.map(f32::to_bits),
        expected.map(f32::to_bits),
        "{actual:?} vs {expected:?}"
    );
}

/// The shipped example `corpus/examples/lit-transform.shbin`: a vertex shader that transforms
/// v0 by the matrix c0-c3 into o0 (position), lights the color v1 with the normal v2 and the
/// light direction c4 into o1 (color), and passes v3 through to o2 (texcoord0).
pub fn lit_transform_example() -> picajit::shbin::Shbin {
    use picajit::shbin::{
        Constant, Dvle, GsConfig, GsMode, OutputEntry, OutputSemantic, ShaderKind, Shbin,
        UniformEntry,
    };
    let mut b = Builder::new();
    b.ops(
        "dp4 o0.x, c0, v0
         dp4 o0.y, c1, v0
         dp4 o0.z, c2, v0
         dp4 o0.w, c3, v0
         dp3 r0.x, c4, v2
         max r0.x, c95.x, r0.x
         add r0.x, c95.y, r0.x
         mul o1.xyz, r0.x, v1
         mov o1.w, v1
         mov o2.xy, v3
         end",
    );
    let f24 = |x: f32| picajit::float24::F24::from_f32_exact(x).unwrap();
    let output = |semantic, register, mask| OutputEntry {
        semantic,
        register,
        mask,
        unknown: 0,
    };
    let uniform = |name: &str, first, last| UniformEntry {
        name: name.to_string(),
        first,
        last,
    };
    let mut dvle = Dvle {
        version: picajit::shbin::PICASSO_DVLE_VERSION,
        kind: ShaderKind::Vertex,
        merge_outmaps: false,
        entry: 0,
        end: b.code.len() as u32,
        input_mask: 0b1111,
        output_mask: 0b111,
        gs: GsConfig {
            mode: GsMode::Point,
            fixed_start: 0,
            variable_vertices: 0,
            fixed_vertices: 0,
        },
        // c95 = (0, 0.25, 0, 0): the clamp at 0 and an ambient term.
        constants: vec![Constant::Float {
            index: 95,
            value: [f24(0.0), f24(0.25), f24(0.0), f24(0.0)],
        }],
        labels: vec![],
        outputs: vec![
            output(OutputSemantic::Position, 0, 0xF),
            output(OutputSemantic::Color, 1, 0xF),
            output(OutputSemantic::TexCoord0, 2, 0x3),
        ],
        uniforms: vec![
            uniform("inpos", 0x00, 0x00),
            uniform("incolor", 0x01, 0x01),
            uniform("innormal", 0x02, 0x02),
            uniform("intex", 0x03, 0x03),
            uniform("projection", 0x10, 0x13),
            uniform("lightDir", 0x14, 0x14),
        ],
        symbols: vec![],
    };
    dvle.rebuild_symbols();
    Shbin {
        code: b.code.clone(),
        opdescs: b.opdescs.clone(),
        opdesc_extra: vec![0; b.opdescs.len()],
        dvles: vec![dvle],
    }
}

/// A vertex program whose flow follows the vertex everywhere: nested `ifc`/`.else`, a `callc`,
/// a `breakc` that leaves a loop at a per-vertex aL (read relative after the loop), an `ifc`
/// whose body ENDs, and a0 set under one branch and read relative after the branches meet.
/// Run it with i0 = [`DIVERGENT_FLOW_I0`] on [`divergent_flow_vertices`].
pub const DIVERGENT_FLOW: &str = "\
.constf zero(0.0, 0.0, 0.0, 0.0)
.constf one(1.0, 1.0, 1.0, 1.0)
.constf two(2.0, 2.0, 2.0, 2.0)
.constf table0(0.5, 0.25, 0.125, 3.0)
.constf table1(-1.5, 7.0, 1e30, 0.75)
.constf table2(4.0, -0.5, 9.0, 1.0)
.ivec count
.in pos v0
.out opos position
.out ocol color
.out otex texcoord0
.out oview view
.proc main
\tmov r0, one
\tmova a0.x, zero.x
\tcmp zero.xy, gt, gt, pos.xy
\tifc cmp.x
\t\tmul r0, pos, pos
\t\tifc cmp.y
\t\t\tadd r0, two, r0
\t\t.else
\t\t\tmova a0.x, two.x
\t\t.end
\t.else
\t\tadd r0, one, pos
\t\tcallc cmp.y, double
\t.end
\tmov otex, table0[a0.x]
\tfor count
\t\tadd r0, one, r0
\t\tcmp r0.xx, gt, gt, pos.ww
\t\tbreakc cmp.x
\t\tmul r1, table0[aL], r0
\t.end
\tmov ocol, r0
\tmov oview, table0[aL]
\tcmp zero.xy, gt, gt, pos.zz
\tifc cmp.y
\t\tmov opos, r1
\t\tend
\t.end
\tmov opos, pos
\tend
.end
.proc double
\tmul r0, two, r0
.end
";

/// i0 of [`DIVERGENT_FLOW`]: 4 passes from aL = 0, step 1.
pub const DIVERGENT_FLOW_I0: [u8; 4] = [3, 0, 1, 0];

/// Vertices for [`DIVERGENT_FLOW`]: every combination of the signs of x, y and z, and w from 0
/// to 6 (where the loop breaks).
pub fn divergent_flow_vertices() -> Vec<InputRegisters> {
    (0..112)
        .map(|i| {
            let sign = |bit: usize| if i & (1 << bit) != 0 { -1.0 } else { 1.0 };
            let mut v = InputRegisters::default();
            v[0] = [
                sign(0) * (1.0 + i as f32 / 64.0),
                sign(1) * 0.75,
                sign(2) * 2.5,
                (i / 8 % 7) as f32,
            ];
            v
        })
        .collect()
}

/// A small deterministic generator (xorshift64) for the tests' random programs and mutations.
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Replays a scene trace on a fresh software GPU with `engine` on `threads` threads.
pub fn render_trace(
    trace: &picajit::gpu::front::trace::Trace,
    engine: picajit::engine::EngineKind,
    threads: usize,
) -> picajit::gpu::Gpu {
    let config = picajit::gpu::GpuConfig {
        engine,
        threads,
        ..picajit::gpu::GpuConfig::default()
    };
    picajit::gpu::front::trace::replay(trace, picajit::gpu::Gpu::new(config), None, |_, _| {})
        .expect("the scene renders")
        .gpu
}

/// The colour buffer a rendered scene leaves bound.
pub fn color_image(gpu: &picajit::gpu::Gpu) -> picajit::gpu::framebuffer::image::Image {
    gpu.color_image().unwrap().expect("a colour buffer")
}

/// An 8-bit RGBA PNG's width, height and pixels (rows top first).
pub fn read_png(path: &std::path::Path) -> (u32, u32, Vec<[u8; 4]>) {
    let file = std::fs::File::open(path)
        .unwrap_or_else(|e| panic!("{}: {e} (PICAJIT_WRITE_SCENES=1 writes it)", path.display()));
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .unwrap();
    let mut data = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut data).unwrap();
    assert_eq!(
        (info.color_type, info.bit_depth),
        (png::ColorType::Rgba, png::BitDepth::Eight)
    );
    let pixels = data[..info.buffer_size()]
        .chunks_exact(4)
        .map(|p| [p[0], p[1], p[2], p[3]])
        .collect();
    (info.width, info.height, pixels)
}

/// The files under `dir` (its subfolders too) whose names end in `.extension`, sorted.
pub fn files_under(dir: &std::path::Path, extension: &str) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries =
            std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == extension) {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Every DVLE of the corpus's programs (`corpus/programs/NAME/*.pica`, assembled in name order),
/// labelled `NAME/DVLE`, in folder order.
pub fn corpus_programs() -> Vec<(String, ShaderProgram)> {
    use picajit::asm::{AsmOptions, SourceFile, assemble};
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus/programs");
    let mut dirs: Vec<std::path::PathBuf> = std::fs::read_dir(&root)
        .expect("the corpus exists")
        .map(|e| e.expect("readable").path())
        .collect();
    dirs.sort();
    let mut programs = Vec::new();
    for dir in dirs {
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
            .expect("readable")
            .map(|e| e.expect("readable").path())
            .filter(|p| p.extension().is_some_and(|e| e == "pica"))
            .collect();
        files.sort();
        let sources: Vec<SourceFile> = files
            .iter()
            .map(|path| SourceFile {
                name: path.display().to_string(),
                text: std::fs::read_to_string(path).expect("readable"),
            })
            .collect();
        let shbin = assemble(&sources, AsmOptions::default())
            .expect("corpus programs assemble")
            .shbin;
        for dvle in 0..shbin.dvles.len() {
            let name = dir.file_name().unwrap().to_string_lossy();
            let program = ShaderProgram::from_shbin(&shbin, dvle).expect("loads");
            programs.push((format!("{name}/{dvle}"), program));
        }
    }
    programs
}
