//! The random program generator.
//!
//! Programs are built as typed [`Instruction`]s with their operand descriptors, in the shapes
//! picasso source can express (so every one has a `.pica` reproducer):
//!
//! * every known opcode and format, random write masks, swizzles and negation, every register
//!   file, relative addressing of uniforms through a0.x, a0.y and aL, whose values (MOVA from
//!   uniforms holding chosen addresses, loop counters from int uniforms) land inside c0-c95,
//!   past c95 (reads 1.0) and outside -128..127 (counts as 0);
//! * structured IF (with and without ELSE), LOOP and procedure blocks, nested, sometimes beyond
//!   the stack depths (IF 8, LOOP 4, CALL 4: the ring buffers overwrite), blocks ending on the
//!   same instruction, a JMP, CALL or BREAK as a block's last instruction, tail calls whose
//!   returns cascade (the 4-pop quirk), calls of a procedure's suffix or prefix, END inside a
//!   procedure, BREAK outside a loop, forward and backward jumps;
//! * geometry shaders with SETEMIT (vertex id 3 now and then: EMIT then fails) and EMIT.
//!
//! Sometimes the procedures come first and main starts at a non-zero entry point. Picasso
//! cannot express SETEMIT with vertex id 3 (a few programs have it) nor the
//! [`GeneratorOptions::unstructured_percent`] share of programs whose flow targets are redrawn
//! at random and some of whose words get encodings picasso never writes; their reproducers
//! are SHBIN files. Every decision comes from an [`Entropy`], whose zero answer is always the
//! simple, terminating choice.

use std::collections::BTreeSet;

use crate::isa::{
    BinaryOp, BoolFlowOp, CompareOp, CondCombine, CondFlowOp, Condition, DestMask, DstReg,
    Instruction, OperandDescriptor, RegisterFile, RelIndex, SimpleOp, SrcReg, Swizzle, UnaryOp,
};
use crate::program::ShaderKind;

mod inputs;
mod unstructured;

use inputs::inputs;
use unstructured::{roughen, set_target, unstructure};

use super::case::{Op, TestCase, TestInputs, TestInvocation, TestProgram};
use super::rng::Entropy;
use super::values::{self, LOOP_COUNTS, LOOP_STARTS, LOOP_STEPS, Palette};

/// The longest program the generator builds: all of program memory (a geometry shader; a
/// vertex shader stops at [`MAX_VERTEX_PROGRAM_LEN`]).
pub const MAX_PROGRAM_LEN: usize = crate::isa::PROGRAM_WORDS;
/// The longest vertex shader the generator builds (picasso's vertex-shader limit).
pub const MAX_VERTEX_PROGRAM_LEN: usize = crate::asm::MAX_VERTEX_SHADER_WORDS;
/// The shortest `max_len` the generator accepts.
pub const MIN_PROGRAM_LEN: usize = 4;

/// What the generator builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GeneratorOptions {
    /// The most code words of a program ([`MIN_PROGRAM_LEN`]..=[`MAX_PROGRAM_LEN`]; a vertex
    /// shader has at most [`MAX_VERTEX_PROGRAM_LEN`]).
    pub max_len: usize,
    /// The percentage of programs whose flow targets are then partly redrawn at random:
    /// overlapping scopes, IF and CALL ranges across blocks, recursion, a LOOP ending at
    /// itself. Picasso cannot express these, so their reproducers are SHBIN files.
    pub unstructured_percent: u64,
}

/// The share of unstructured programs in a default run.
pub const DEFAULT_UNSTRUCTURED_PERCENT: u64 = 5;

impl Default for GeneratorOptions {
    fn default() -> GeneratorOptions {
        GeneratorOptions {
            max_len: 64,
            unstructured_percent: DEFAULT_UNSTRUCTURED_PERCENT,
        }
    }
}

/// Generates one test case.
pub fn generate(entropy: &mut Entropy, options: &GeneratorOptions) -> TestCase {
    let stage = if entropy.chance(25) {
        ShaderKind::Geometry
    } else {
        ShaderKind::Vertex
    };
    let longest = match stage {
        ShaderKind::Vertex => MAX_VERTEX_PROGRAM_LEN,
        ShaderKind::Geometry => MAX_PROGRAM_LEN,
    };
    let max_len = options.max_len.clamp(MIN_PROGRAM_LEN, longest);
    let style = Style::new(entropy);
    let mut generator = Generator {
        entropy,
        stage,
        style,
        ops: Vec::new(),
        limit: 0,
        jumps: Vec::new(),
        calls: Vec::new(),
        procs: Vec::new(),
        current_proc: None,
        descriptors: [
            (DescriptorKind::Mad, Vec::new()),
            (DescriptorKind::Mova, Vec::new()),
            (DescriptorKind::Other, Vec::new()),
        ],
        entry: 0,
    };
    generator.program(max_len);
    let mut program = generator.finish();
    if generator.entropy.chance(options.unstructured_percent) {
        unstructure(generator.entropy, &mut program);
        roughen(generator.entropy, &mut program);
    }
    let inputs = inputs(generator.entropy, &program);
    TestCase { program, inputs }
}

/// Per-program knobs, so that programs differ in character and not only in detail.
#[derive(Clone, Copy, Debug)]
struct Style {
    /// How many temporaries are in use (few: values flow between instructions).
    temps: u8,
    /// How often a statement is flow control rather than data.
    flow: u32,
    /// Build IF chains deeper than the IF stack.
    deep_ifs: bool,
    /// Build LOOP nests deeper than the LOOP stack.
    deep_loops: bool,
    /// Allow backward jumps (loops made of jumps; some never end).
    backward_jumps: bool,
    /// How often a source is relatively addressed.
    relative: u64,
    /// Whether SETEMIT may name vertex 3 (EMIT then fails; picasso cannot express it, so few
    /// programs do).
    invalid_emit: bool,
}

impl Style {
    fn new(entropy: &mut Entropy) -> Style {
        Style {
            temps: 2 + entropy.below(7) as u8 + if entropy.chance(10) { 8 } else { 0 },
            flow: [6, 14, 24, 40][entropy.index(4)],
            deep_ifs: entropy.chance(8),
            deep_loops: entropy.chance(8),
            backward_jumps: entropy.chance(15),
            relative: [5, 20, 45][entropy.index(3)],
            invalid_emit: entropy.chance(12),
        }
    }
}

/// A procedure: its range and the starts of its top-level statements (where a call of one of
/// its suffixes or prefixes keeps the blocks nested).
#[derive(Clone, Debug)]
struct Proc {
    start: usize,
    end: usize,
    boundaries: Vec<usize>,
    /// Whether calls take suffixes (ending with the procedure) rather than prefixes.
    suffixes: bool,
}

/// What a descriptor is for: MAD's can only be among the first 32, MOVA's must write only
/// a0.x and a0.y, and the rest are free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DescriptorKind {
    Mad = 0,
    Mova = 1,
    Other = 2,
}

/// Block depths at a statement.
#[derive(Clone, Copy, Debug, Default)]
struct Scope {
    ifs: usize,
    loops: usize,
    depth: usize,
}

/// Statement kinds, in the order of the weights in [`Generator::statement`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Statement {
    Data,
    Compare,
    AddressLoad,
    If,
    Loop,
    Call,
    Jump,
    Break,
    End,
    Nop,
    Emit,
    SetEmit,
    DotGroup,
}

const STATEMENTS: [Statement; 13] = [
    Statement::Data,
    Statement::Compare,
    Statement::AddressLoad,
    Statement::If,
    Statement::Loop,
    Statement::Call,
    Statement::Jump,
    Statement::Break,
    Statement::End,
    Statement::Nop,
    Statement::Emit,
    Statement::SetEmit,
    Statement::DotGroup,
];

struct Generator<'g, 'a> {
    entropy: &'g mut Entropy<'a>,
    stage: ShaderKind,
    style: Style,
    ops: Vec<Op>,
    /// No statement is placed at or beyond this address (the end of the current region).
    limit: usize,
    /// Jumps whose targets are chosen once the code is laid out.
    jumps: Vec<usize>,
    /// Calls (address, procedure) whose targets are set once the procedures are laid out.
    calls: Vec<(usize, usize)>,
    procs: Vec<Proc>,
    current_proc: Option<usize>,
    /// The distinct descriptors used so far, by [`DescriptorKind`] (in its order).
    descriptors: [(DescriptorKind, Vec<u32>); 3],
    /// Where main starts.
    entry: usize,
}

impl Generator<'_, '_> {
    fn room(&self) -> usize {
        self.limit.saturating_sub(self.ops.len())
    }

    fn push(&mut self, op: Op) -> usize {
        self.ops.push(op);
        self.ops.len() - 1
    }

    /// Main, then the procedures, then an END that catches falling off the last one.
    fn program(&mut self, max_len: usize) {
        // Mostly long programs (more happens per compile), sometimes any length.
        let span = max_len - MIN_PROGRAM_LEN + 1;
        let len = if self.entropy.chance(65) {
            max_len - self.entropy.index(span.div_ceil(3))
        } else {
            MIN_PROGRAM_LEN + self.entropy.index(span)
        };
        let proc_count = if len >= 12 {
            [0, 0, 1, 1, 2, 3, 4][self.entropy.index(7)]
        } else {
            0
        };
        // Each procedure ending in a call of the next: returning from the last pops the whole
        // chain in one step (the fourth pop of a step leaves the PC alone).
        let chain = proc_count >= 4 && self.entropy.chance(50);
        // Reserve one word for the final END; split the rest between main and the procedures.
        let body = len - 1;
        let mut sizes = Vec::new();
        let mut left = body;
        for _ in 0..proc_count {
            // A call's NUM (the procedure's length) is 8 bits: at most 255 words.
            let size = 1 + self.entropy.index((body / (proc_count + 2)).clamp(1, 255));
            sizes.push(size);
            left -= size;
        }
        // Placeholders until each procedure is laid out (calls only need the count now).
        self.procs = vec![
            Proc {
                start: 0,
                end: 0,
                boundaries: Vec::new(),
                suffixes: false,
            };
            proc_count
        ];
        // Main first (procedures follow, inside its DVLE range), or now and then the procedures
        // first and main at a non-zero entry point.
        let procs_first = proc_count > 0 && self.entropy.chance(25);
        if procs_first {
            self.procedures(&sizes, chain);
        }
        self.entry = self.ops.len();
        self.main(left);
        if !procs_first {
            self.procedures(&sizes, chain);
        }
        // Falling off the end runs into zero words until the budget ends the invocation: rare,
        // as the JIT then compiles all of program memory.
        if !self.entropy.chance(1) || self.ops.is_empty() {
            self.push(Op::plain(simple(SimpleOp::End)));
        }
    }

    /// Main: its statements, then usually END (without it, main runs into what follows).
    fn main(&mut self, left: usize) {
        let start = self.ops.len();
        // A geometry shader mostly ends by emitting what it computed.
        let emit_last = self.stage == ShaderKind::Geometry && left >= 3 && self.entropy.chance(60);
        self.limit = start + left.saturating_sub(1 + usize::from(emit_last)).max(1);
        self.statements(Scope::default(), usize::MAX);
        if emit_last {
            self.push(Op::plain(simple(SimpleOp::Emit)));
        }
        if self.entropy.chance(92) || self.ops.len() == start {
            self.push(Op::plain(simple(SimpleOp::End)));
        }
    }

    /// The procedures, each filling at most its planned size.
    fn procedures(&mut self, sizes: &[usize], chain: bool) {
        let proc_count = sizes.len();
        for (index, &size) in sizes.iter().enumerate() {
            self.current_proc = Some(index);
            let start = self.ops.len();
            self.limit = start + size;
            let chained = chain && index + 1 < proc_count;
            let tail_call = (chained || self.entropy.chance(35)) && self.limit - start >= 2;
            if tail_call {
                self.limit -= 1;
            }
            let mut boundaries = self.statements(Scope::default(), usize::MAX);
            if tail_call || self.ops.len() == start {
                boundaries.push(self.ops.len());
                let callee = if chained {
                    Some(index + 1)
                } else {
                    self.callee(true)
                };
                match callee {
                    Some(callee) => self.call(callee),
                    None => {
                        let op = self.data();
                        self.push(op);
                    }
                }
            }
            let suffixes = self.entropy.chance(50);
            self.procs[index] = Proc {
                start,
                end: self.ops.len(),
                boundaries,
                suffixes,
            };
        }
        self.current_proc = None;
    }

    /// Statements until the region's limit or a random stop; returns their start addresses.
    /// A procedure or main mostly fills its region; a block's body is mostly short, so that
    /// blocks have siblings.
    fn statements(&mut self, scope: Scope, most: usize) -> Vec<usize> {
        let room = self.room();
        let wanted = if scope.depth == 0 && self.entropy.chance(75) {
            room
        } else if scope.depth > 0 && self.entropy.chance(80) {
            self.entropy.index(room.min(6) + 1)
        } else if scope.depth > 0 {
            self.entropy.index(room.min(30) + 1)
        } else {
            self.entropy.index(room + 1)
        }
        .min(most);
        let stop = self.ops.len() + wanted;
        let mut starts = Vec::new();
        while self.ops.len() < stop.min(self.limit) {
            starts.push(self.ops.len());
            self.statement(scope);
        }
        starts
    }

    fn statement(&mut self, scope: Scope) {
        let flow = self.style.flow;
        let in_loop = scope.loops > 0;
        let geometry = self.stage == ShaderKind::Geometry;
        let block_room = self.room() >= 2 && scope.depth < 24;
        let deep_if = self.style.deep_ifs && scope.ifs < 10;
        let deep_loop = self.style.deep_loops && scope.loops < 6;
        // Weights per mille-ish; END and a BREAK outside a loop are rare, as each cuts the
        // invocation short.
        let blocks = |base: u32, deep: bool| match (block_room, deep) {
            (false, _) => 0,
            (true, false) => base,
            (true, true) => base + 240,
        };
        let weights = [
            240,                             // Data
            40,                              // Compare
            24,                              // AddressLoad
            blocks(flow * 2, deep_if),       // If
            blocks(flow * 4 / 3, deep_loop), // Loop
            if self.procs.is_empty() {
                0
            } else {
                flow * 4 / 3
            }, // Call
            flow,                            // Jump
            if in_loop { flow } else { 1 },  // Break
            1,                               // End
            8,                               // Nop
            if geometry { 32 } else { 2 },   // Emit
            if geometry { 32 } else { 0 },   // SetEmit
            24,                              // DotGroup
        ];
        match STATEMENTS[self.entropy.weighted(&weights)] {
            Statement::Data => {
                let op = self.data();
                self.push(op);
            }
            Statement::Compare => {
                let op = self.compare();
                self.push(op);
            }
            Statement::AddressLoad => {
                let op = self.address_load();
                self.push(op);
            }
            Statement::If => self.if_block(scope),
            Statement::Loop => self.loop_block(scope),
            Statement::Call => {
                if let Some(callee) = self.callee(false) {
                    self.call(callee);
                } else {
                    self.push(Op::plain(simple(SimpleOp::Nop)));
                }
            }
            Statement::Jump => self.jump(),
            Statement::Break => {
                let op = if self.entropy.chance(50) {
                    simple(SimpleOp::Break)
                } else {
                    Instruction::CondFlow {
                        op: CondFlowOp::Breakc,
                        cond: self.condition(),
                        target: 0,
                        count: 0,
                        ignored: 0,
                    }
                };
                self.push(Op::plain(op));
            }
            Statement::End => {
                self.push(Op::plain(simple(SimpleOp::End)));
            }
            Statement::Nop => {
                self.push(Op::plain(simple(SimpleOp::Nop)));
            }
            Statement::Emit => {
                self.push(Op::plain(simple(SimpleOp::Emit)));
            }
            Statement::DotGroup => self.dot_group(),
            Statement::SetEmit => {
                let vertex = if self.style.invalid_emit && self.entropy.chance(10) {
                    3
                } else {
                    self.entropy.below(3) as u8
                };
                let op = Instruction::SetEmit {
                    vertex,
                    primitive: self.entropy.chance(40),
                    winding: self.entropy.chance(30),
                    ignored: 0,
                };
                self.push(Op::plain(op));
            }
        }
    }

    /// IFC or IFU: the header, the THEN block, and maybe an ELSE block.
    fn if_block(&mut self, scope: Scope) {
        let at = self.push(Op::plain(simple(SimpleOp::Nop)));
        let inner = Scope {
            ifs: scope.ifs + 1,
            depth: scope.depth + 1,
            ..scope
        };
        let has_else = self.entropy.chance(40);
        let then_most = if has_else {
            self.room() / 2
        } else {
            usize::MAX
        };
        self.statements(inner, then_most);
        let target = self.ops.len();
        if has_else {
            // The ELSE length is an 8-bit count: cap the block's region.
            let region = self.limit;
            self.limit = region.min(target + 255);
            self.statements(inner, usize::MAX);
            self.limit = region;
        }
        let count = (self.ops.len() - target) as u8;
        let header = if self.entropy.chance(50) {
            Instruction::CondFlow {
                op: CondFlowOp::Ifc,
                cond: self.condition(),
                target: target as u16,
                count,
                ignored: 0,
            }
        } else {
            Instruction::BoolFlow {
                op: BoolFlowOp::Ifu,
                bool_id: self.bool_id(),
                target: target as u16,
                count,
                ignored: 0,
            }
        };
        self.ops[at] = Op::plain(header);
    }

    /// LOOP over a non-empty body.
    fn loop_block(&mut self, scope: Scope) {
        let at = self.push(Op::plain(simple(SimpleOp::Nop)));
        let inner = Scope {
            loops: scope.loops + 1,
            depth: scope.depth + 1,
            ..scope
        };
        self.statements(inner, usize::MAX);
        if self.ops.len() == at + 1 {
            let op = self.data();
            self.push(op);
        }
        self.ops[at] = Op::plain(Instruction::Loop {
            int_id: self.entropy.below(4) as u8,
            target: (self.ops.len() - 1) as u16,
            count: 0,
            ignored: 0,
        });
    }

    /// The procedure a call here goes to: a later one (no recursion), or now and then any.
    fn callee(&mut self, tail: bool) -> Option<usize> {
        let first_later = self.current_proc.map_or(0, |p| p + 1);
        if first_later < self.procs.len() && !self.entropy.chance(8) {
            Some(first_later + self.entropy.index(self.procs.len() - first_later))
        } else if !self.procs.is_empty() && (!tail || self.entropy.chance(30)) {
            Some(self.entropy.index(self.procs.len()))
        } else {
            None
        }
    }

    /// CALL, CALLC or CALLU of `callee` (the target is set in [`Generator::finish`]).
    fn call(&mut self, callee: usize) {
        let op = match self.entropy.index(3) {
            0 => Instruction::CondFlow {
                op: CondFlowOp::Call,
                cond: Condition {
                    ref_x: false,
                    ref_y: false,
                    combine: CondCombine::Or,
                },
                target: 0,
                count: 0,
                ignored: 0,
            },
            1 => Instruction::CondFlow {
                op: CondFlowOp::Callc,
                cond: self.condition(),
                target: 0,
                count: 0,
                ignored: 0,
            },
            _ => Instruction::BoolFlow {
                op: BoolFlowOp::Callu,
                bool_id: self.bool_id(),
                target: 0,
                count: 0,
                ignored: 0,
            },
        };
        let at = self.push(Op::plain(op));
        self.calls.push((at, callee));
    }

    /// JMPC or JMPU (the target is chosen in [`Generator::finish`]).
    fn jump(&mut self) {
        let op = if self.entropy.chance(50) {
            Instruction::CondFlow {
                op: CondFlowOp::Jmpc,
                cond: self.condition(),
                target: 0,
                count: 0,
                ignored: 0,
            }
        } else {
            Instruction::BoolFlow {
                op: BoolFlowOp::Jmpu,
                bool_id: self.bool_id(),
                target: 0,
                count: self.entropy.below(2) as u8,
                ignored: 0,
            }
        };
        let at = self.push(Op::plain(op));
        self.jumps.push(at);
    }

    /// Sets call and jump targets and the output table.
    fn finish(&mut self) -> TestProgram {
        let len = self.ops.len();
        for &(at, callee) in &self.calls.clone() {
            let proc = &self.procs[callee];
            let (mut start, mut end) = (proc.start, proc.end);
            if proc.boundaries.len() > 1 && self.entropy.chance(20) {
                let cut = proc.boundaries[1 + self.entropy.index(proc.boundaries.len() - 1)];
                if proc.suffixes {
                    start = cut;
                } else {
                    end = cut;
                }
            }
            set_target(
                &mut self.ops[at].instruction,
                start as u16,
                (end - start) as u8,
            );
        }
        for &at in &self.jumps.clone() {
            let target = match self.entropy.index(20) {
                0..=11 => (at + 1 + self.entropy.index(8)).min(len - 1),
                12..=16 if self.style.backward_jumps => self.entropy.index(len),
                12..=16 => (at + 1 + self.entropy.index(len - at)).min(len - 1),
                _ if self.style.backward_jumps => self.entropy.index(at + 1),
                _ => (at + 1).min(len - 1),
            };
            set_target(&mut self.ops[at].instruction, target as u16, 0);
        }
        let mut outputs: u16 = 1;
        for op in &self.ops {
            if let Some(dst) = op.instruction.dst()
                && dst.raw() < 16
            {
                outputs |= 1 << dst.raw();
            }
        }
        if self.stage == ShaderKind::Geometry && outputs.count_ones() > 1 && self.entropy.chance(30)
        {
            let registers: Vec<u16> = (0..7).filter(|n| outputs & (1 << n) != 0).collect();
            if let Some(dropped) = self.entropy.pick(&registers) {
                outputs &= !(1 << dropped);
            }
        }
        TestProgram {
            stage: self.stage,
            ops: std::mem::take(&mut self.ops),
            entry: self.entry as u16,
            outputs,
        }
    }

    // ------------------------------------------------------------------ operands

    fn condition(&mut self) -> Condition {
        let combine = [
            CondCombine::Or,
            CondCombine::And,
            CondCombine::X,
            CondCombine::Y,
        ][self.entropy.index(4)];
        // picasso sets the reference bit of the flag a one-flag condition does not test.
        let (ref_x, ref_y) = (self.entropy.chance(50), self.entropy.chance(50));
        match combine {
            CondCombine::X => Condition {
                ref_x,
                ref_y: true,
                combine,
            },
            CondCombine::Y => Condition {
                ref_x: true,
                ref_y,
                combine,
            },
            _ => Condition {
                ref_x,
                ref_y,
                combine,
            },
        }
    }

    /// A bool uniform: b15 (set from the second geometry-shader invocation on) often.
    fn bool_id(&mut self) -> u8 {
        if self.entropy.chance(20) {
            15
        } else {
            self.entropy.below(16) as u8
        }
    }

    /// The one input register an instruction may read (picasso rejects two different ones).
    fn input_register(&mut self) -> u8 {
        if self.entropy.chance(80) {
            self.entropy.below(4) as u8
        } else {
            self.entropy.below(16) as u8
        }
    }

    fn temp(&mut self) -> u8 {
        self.entropy.below(u64::from(self.style.temps)) as u8
    }

    /// A source for a 5-bit field: a temporary or the instruction's input register.
    fn narrow(&mut self, input: u8) -> SrcReg {
        if self.entropy.chance(35) {
            SrcReg::input(input)
        } else {
            SrcReg::temp(self.temp())
        }
    }

    /// A float uniform, often relatively addressed.
    fn uniform(&mut self) -> (SrcReg, RelIndex) {
        let index = match self.entropy.index(20) {
            0..=9 => self.entropy.below(16) as u8,
            10..=12 => 88 + self.entropy.below(8) as u8,
            _ => self.entropy.below(96) as u8,
        };
        let rel = if self.entropy.chance(self.style.relative) {
            [RelIndex::A0X, RelIndex::A0Y, RelIndex::AL][self.entropy.index(3)]
        } else {
            RelIndex::None
        };
        (SrcReg::uniform(index), rel)
    }

    /// A source for the 7-bit field: a uniform (maybe relatively addressed), a temporary or the
    /// input register.
    fn wide(&mut self, input: u8) -> (SrcReg, RelIndex) {
        match self.entropy.index(20) {
            0..=6 => (SrcReg::temp(self.temp()), RelIndex::None),
            7..=11 => (SrcReg::input(input), RelIndex::None),
            _ => self.uniform(),
        }
    }

    fn destination(&mut self) -> DstReg {
        if self.entropy.chance(35) {
            let outputs = match self.stage {
                ShaderKind::Vertex if self.entropy.chance(20) => 16,
                ShaderKind::Vertex => 8,
                ShaderKind::Geometry => 7,
            };
            DstReg::output(self.entropy.below(outputs) as u8)
        } else {
            DstReg::temp(self.temp())
        }
    }

    fn swizzle(&mut self) -> Swizzle {
        match self.entropy.index(20) {
            0..=10 => Swizzle::IDENTITY,
            11..=13 => {
                let c = self.entropy.index(4);
                Swizzle::from_components([c; 4])
            }
            _ => Swizzle(self.entropy.below(256) as u8),
        }
    }

    fn mask(&mut self) -> DestMask {
        if self.entropy.chance(45) {
            DestMask(1 + self.entropy.below(15) as u8)
        } else {
            DestMask::ALL
        }
    }

    /// A descriptor for `sources` source operands (the unused slots stay 0).
    ///
    /// Descriptor memory holds 128 and MAD reaches only the first 32, so a long program reuses
    /// a descriptor of its kind once it has many.
    fn descriptor(
        &mut self,
        kind: DescriptorKind,
        mask: DestMask,
        sources: usize,
    ) -> OperandDescriptor {
        let mut slots = [(false, Swizzle(0)); 3];
        for slot in slots.iter_mut().take(sources) {
            let negate = self.entropy.chance(20);
            *slot = (negate, self.swizzle());
        }
        let fresh = OperandDescriptor::new(mask, slots).0;
        let pool = &self.descriptors;
        let total = pool.iter().map(|(_, list)| list.len()).sum::<usize>();
        let known = |list: &Vec<u32>| list.contains(&fresh);
        let memory_full = !pool.iter().any(|(_, list)| known(list)) && total >= 124;
        let full = match kind {
            DescriptorKind::Mad => memory_full || (!known(&pool[0].1) && pool[0].1.len() >= 30),
            _ => memory_full,
        };
        let index = kind as usize;
        if full && !self.descriptors[index].1.is_empty() {
            let list = &self.descriptors[index].1;
            let reused = list[self.entropy.index(list.len())];
            return OperandDescriptor(reused);
        }
        if !known(&self.descriptors[index].1) {
            self.descriptors[index].1.push(fresh);
        }
        OperandDescriptor(fresh)
    }

    /// An arithmetic or data-movement instruction (every format-1, 1i, 1u and 5/5i opcode).
    fn data(&mut self) -> Op {
        let input = self.input_register();
        let dst = self.destination();
        let mask = self.mask();
        const BINARY: [BinaryOp; 14] = [
            BinaryOp::Add,
            BinaryOp::Mul,
            BinaryOp::Dp3,
            BinaryOp::Dp4,
            BinaryOp::Dph,
            BinaryOp::Dst,
            BinaryOp::Sge,
            BinaryOp::Slt,
            BinaryOp::Max,
            BinaryOp::Min,
            BinaryOp::Dphi,
            BinaryOp::Dsti,
            BinaryOp::Sgei,
            BinaryOp::Slti,
        ];
        const UNARY: [UnaryOp; 7] = [
            UnaryOp::Mov,
            UnaryOp::Rcp,
            UnaryOp::Rsq,
            UnaryOp::Ex2,
            UnaryOp::Lg2,
            UnaryOp::Flr,
            UnaryOp::Litp,
        ];
        match self.entropy.weighted(&[50, 30, 12, 8]) {
            0 => {
                let op = BINARY[self.entropy.index(BINARY.len())];
                let (src1, src2, rel) = if op.is_inverted() {
                    let src1 = self.narrow(input);
                    let (src2, rel) = self.uniform();
                    (src1, src2, rel)
                } else {
                    let (src1, rel) = self.wide(input);
                    (src1, self.narrow(input), rel)
                };
                self.binary(op, dst, mask, [src1, src2], rel)
            }
            1 => {
                let op = UNARY[self.entropy.index(UNARY.len())];
                let (src1, rel) = self.wide(input);
                Op {
                    instruction: Instruction::Unary {
                        op,
                        dst,
                        src1,
                        rel,
                        desc: 0,
                        ignored: 0,
                    },
                    descriptor: self.descriptor(DescriptorKind::Other, mask, 1),
                }
            }
            2 => {
                let src1 = self.narrow(input);
                let (src2, rel) = self.wide(input);
                let src3 = self.narrow(input);
                Op {
                    instruction: Instruction::Mad {
                        inverted: false,
                        dst,
                        src1,
                        src2,
                        src3,
                        rel,
                        desc: 0,
                    },
                    descriptor: self.descriptor(DescriptorKind::Mad, mask, 3),
                }
            }
            _ => {
                let src1 = self.narrow(input);
                let src2 = self.narrow(input);
                let (src3, rel) = self.uniform();
                Op {
                    instruction: Instruction::Mad {
                        inverted: true,
                        dst,
                        src1,
                        src2,
                        src3,
                        rel,
                        desc: 0,
                    },
                    descriptor: self.descriptor(DescriptorKind::Mad, mask, 3),
                }
            }
        }
    }

    /// A binary operation with a fresh descriptor for `mask`.
    fn binary(
        &mut self,
        op: BinaryOp,
        dst: DstReg,
        mask: DestMask,
        [src1, src2]: [SrcReg; 2],
        rel: RelIndex,
    ) -> Op {
        Op {
            instruction: Instruction::Binary {
                op,
                dst,
                src1,
                src2,
                rel,
                desc: 0,
            },
            descriptor: self.descriptor(DescriptorKind::Other, mask, 2),
        }
    }

    /// Two to four dot products of one kind into one register, as a matrix transform writes
    /// them (`dp4 r0.x, c4, r1` … `dp4 r0.w, c7, r1`, which the JIT computes at once), each
    /// usually writing lanes no other one does; sometimes a mask overlaps another or a later
    /// one reads the register, which must keep the instructions apart.
    fn dot_group(&mut self) {
        let room = self.room().min(4);
        if room < 2 {
            let op = self.data();
            self.push(op);
            return;
        }
        let count = 2 + self.entropy.below(room as u64 - 1) as usize;
        let op =
            [BinaryOp::Dp3, BinaryOp::Dp4, BinaryOp::Dph, BinaryOp::Dphi][self.entropy.index(4)];
        let dst = self.destination();
        let mut lanes = [0u8, 1, 2, 3];
        for i in (1..4).rev() {
            lanes.swap(i, self.entropy.index(i + 1));
        }
        let input = self.input_register();
        let shared = self.narrow(input);
        let (matrix, rel) = self.uniform();
        let (_, first_row) = matrix.file_index();
        for k in 0..count {
            let mut mask = 1 << lanes[k];
            if k + 1 == count && count < 4 && self.entropy.chance(30) {
                mask |= 1 << lanes[count];
            }
            if self.entropy.chance(8) {
                mask = self.mask().0;
            }
            let row = if first_row as usize + k < 96 {
                SrcReg::uniform(first_row + k as u8)
            } else {
                matrix
            };
            let vector = match (dst.file_index(), self.entropy.index(20)) {
                ((RegisterFile::Temporary, n), 0) => SrcReg::temp(n),
                (_, 1..=3) => self.narrow(input),
                _ => shared,
            };
            let (src1, src2) = if op.is_inverted() {
                (vector, row)
            } else {
                (row, vector)
            };
            let op = self.binary(op, dst, DestMask(mask), [src1, src2], rel);
            self.push(op);
        }
    }

    /// CMP with operators 0-5 (picasso has no names for 6 and 7).
    fn compare(&mut self) -> Op {
        let input = self.input_register();
        let (src1, rel) = self.wide(input);
        let src2 = self.narrow(input);
        let cmp_x = CompareOp::from_bits(self.entropy.below(6) as u32);
        let cmp_y = CompareOp::from_bits(self.entropy.below(6) as u32);
        Op {
            instruction: Instruction::Cmp {
                src1,
                src2,
                rel,
                desc: 0,
                cmp_x,
                cmp_y,
            },
            descriptor: self.descriptor(DescriptorKind::Other, DestMask::ALL, 2),
        }
    }

    /// MOVA, mostly from the address uniforms c0-c3.
    fn address_load(&mut self) -> Op {
        let (src1, rel) = if self.entropy.chance(60) {
            let rel = if self.entropy.chance(10) {
                RelIndex::AL
            } else {
                RelIndex::None
            };
            (SrcReg::uniform(self.entropy.below(4) as u8), rel)
        } else {
            let input = self.input_register();
            self.wide(input)
        };
        let mask = DestMask([0b1000, 0b0100, 0b1100][self.entropy.index(3)]);
        Op {
            instruction: Instruction::Mova {
                src1,
                rel,
                desc: 0,
                ignored: 0,
            },
            descriptor: self.descriptor(DescriptorKind::Mova, mask, 1),
        }
    }
}

fn simple(op: SimpleOp) -> Instruction {
    Instruction::Simple { op, ignored: 0 }
}
