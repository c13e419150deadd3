//! Static checks for what the hardware cannot do or does unreliably (docs/shbin-and-picasso.md §4.9).
//!
//! [`validate`] decodes a program as uploaded and returns [`Diagnostic`]s sorted by address;
//! [`validate_instructions`] does the same on typed instructions (for an assembler, before
//! encoding). The checks:
//!
//! * per reachable instruction: unknown opcodes, different input registers in one instruction,
//!   a MAD/MADI descriptor index of 32 or more, a descriptor that was not uploaded, a relative
//!   index on a source that is not a float uniform, o7-o15 in a geometry shader, EMIT/SETEMIT in
//!   a vertex shader, SETEMIT with vertex slot 3;
//! * along paths: two MOVA executed one after the other, BREAK outside any loop, running past
//!   the end of the program, states from which END can never be reached, and (vertex shaders
//!   only) output components written twice, configured output components not written before
//!   END, and temporary components read before they are written.
//!
//! The path checks run on the [`flow`] graph: every state (PC and the three control stacks) the
//! exact control-flow machine can reach when every condition and loop trip count is unknown.
//! Forward dataflow over that graph gives, per state, the output components written on some
//! path (union) and the output and temporary components written on every path (intersection).
//! Because conditions are not tracked (two tests of the same flag or bool uniform are treated as
//! independent), a path-dependent diagnostic can come from a path no input takes.
//!
//! Both engines start every vertex invocation with zeroed registers, so a read before a write is
//! deterministic in this project; it is reported because the hardware keeps register values
//! from earlier vertices.

use std::collections::BTreeMap;
use std::fmt;

use crate::flow::explore::{self as flow, Exit, FlowGraph};
use crate::isa::{
    self, DstReg, Instruction, LANE_NAMES, MAD_OPDESC_LIMIT, OPDESC_COUNT, OperandDescriptor,
    PROGRAM_WORDS, RegisterFile, SimpleOp,
};

pub use crate::program::ShaderKind;
use crate::program::ShaderProgram;

/// What [`validate`] checks.
#[derive(Clone, Copy, Debug)]
pub struct ValidationInput<'a> {
    /// Program memory as uploaded (at most 4096 words; further words are ignored).
    pub code: &'a [u32],
    /// Operand descriptors as uploaded (at most 128; further entries are ignored). A descriptor
    /// that is not uploaded reads as 0.
    pub opdescs: &'a [u32],
    /// The entry point (word address).
    pub entry: u16,
    /// The shader stage.
    pub stage: ShaderKind,
    /// The configured output registers: (o-index, lane mask with bit 0 = x .. bit 3 = w). Empty
    /// when unknown: then the "configured output not written" check is skipped.
    pub outputs: &'a [(u8, u8)],
}

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// The hardware hangs or computes something else than this project does, on the path
    /// described.
    Error,
    /// Suspicious, or handled deterministically here but not necessarily on the hardware.
    Warning,
}

/// What a diagnostic is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DiagnosticKind {
    /// A MOVA directly followed (in execution) by another MOVA: freezes the GPU.
    ConsecutiveMova,
    /// One instruction reads two different input registers: only one reads reliably.
    DifferentInputRegisters,
    /// An opcode with no known meaning (executes as NOP here).
    UnknownOpcode,
    /// An output component written a second time on some path (vertex shaders).
    OutputWrittenTwice,
    /// A configured output component not written on some path reaching END (vertex shaders).
    OutputNotWritten,
    /// A temporary component read before it is written on some path (vertex shaders).
    ReadBeforeWrite,
    /// MAD/MADI with a descriptor index of 32 or more (its field has 5 bits).
    MadOpdescOutOfRange,
    /// An instruction uses an operand descriptor beyond the uploaded ones (read as 0).
    OpdescNotUploaded,
    /// A relative index on a wide source that is not a float uniform: the hardware ignores it.
    RelativeIndexOnNonUniform,
    /// An output register the stage does not have (o7-o15 in a geometry shader).
    OutputNotInStage,
    /// EMIT or SETEMIT in a vertex shader (executed as no-ops here).
    EmitInVertexShader,
    /// SETEMIT with vertex slot 3: the next EMIT fails.
    SetEmitVertexOutOfRange,
    /// BREAK or BREAKC with no active loop: hangs the GPU.
    BreakOutsideLoop,
    /// Execution can reach an address outside the uploaded program without END (or the entry
    /// point is outside it).
    RunsPastProgram,
    /// From this point no path reaches END: the invocation loops forever.
    NeverEnds,
    /// The control-flow analysis hit its state limit; path-dependent checks were skipped.
    AnalysisIncomplete,
}

impl DiagnosticKind {
    /// How serious this kind of finding is.
    pub const fn severity(self) -> Severity {
        use DiagnosticKind::*;
        match self {
            UnknownOpcode
            | ReadBeforeWrite
            | OpdescNotUploaded
            | RelativeIndexOnNonUniform
            | EmitInVertexShader
            | AnalysisIncomplete => Severity::Warning,
            ConsecutiveMova
            | DifferentInputRegisters
            | OutputWrittenTwice
            | OutputNotWritten
            | MadOpdescOutOfRange
            | OutputNotInStage
            | SetEmitVertexOutOfRange
            | BreakOutsideLoop
            | RunsPastProgram
            | NeverEnds => Severity::Error,
        }
    }
}

/// One finding, at one instruction address.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Diagnostic {
    /// The word address of the instruction concerned.
    pub address: u16,
    /// What it is about.
    pub kind: DiagnosticKind,
    /// A sentence for people.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    /// `0x012: two consecutive MOVA instructions freeze the GPU ...`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#05x}: {}", self.address, self.message)
    }
}

/// How many abstract control states [`validate`] explores before giving up on path checks.
pub const STATE_LIMIT: usize = 200_000;

/// Checks a program as uploaded. The result is sorted by address (then kind) and has no
/// duplicates.
pub fn validate(input: &ValidationInput) -> Vec<Diagnostic> {
    let code = &input.code[..input.code.len().min(PROGRAM_WORDS)];
    let program: Vec<Instruction> = isa::decode_words(code);
    validate_instructions(
        &program,
        input.opdescs,
        input.entry,
        input.stage,
        input.outputs,
    )
}

/// Checks a loaded program (its uploaded code and descriptors) against the configured output
/// registers `(o-index, lane mask)`.
pub fn validate_program(program: &ShaderProgram, outputs: &[(u8, u8)]) -> Vec<Diagnostic> {
    validate(&ValidationInput {
        code: &program.code[..program.code_len],
        opdescs: &program.opdescs[..program.opdesc_len],
        entry: program.entry,
        stage: program.stage,
        outputs,
    })
}

/// Checks a program of typed instructions (for instance an assembler's output before encoding,
/// where a MAD descriptor index can exceed its field). Same checks and result as [`validate`].
pub fn validate_instructions(
    program: &[Instruction],
    opdescs: &[u32],
    entry: u16,
    stage: ShaderKind,
    outputs: &[(u8, u8)],
) -> Vec<Diagnostic> {
    let ctx = Context {
        program: &program[..program.len().min(PROGRAM_WORDS)],
        opdescs: &opdescs[..opdescs.len().min(OPDESC_COUNT)],
        entry,
        stage,
        outputs,
    };
    run(&ctx, STATE_LIMIT)
}

/// Everything the checks look at.
struct Context<'a> {
    program: &'a [Instruction],
    opdescs: &'a [u32],
    entry: u16,
    stage: ShaderKind,
    outputs: &'a [(u8, u8)],
}

impl Context<'_> {
    fn descriptor(&self, index: u8) -> OperandDescriptor {
        OperandDescriptor(self.opdescs.get(index as usize).copied().unwrap_or(0))
    }
}

/// Collects diagnostics; those about components are merged per (address, kind).
#[derive(Default)]
struct Report {
    list: Vec<Diagnostic>,
    /// (address, kind) → components (bit 4·register + lane), for the component diagnostics.
    components: BTreeMap<(u16, DiagnosticKind), u64>,
    /// (address, kind) → the other addresses involved (MOVA successors, run-past targets).
    targets: BTreeMap<(u16, DiagnosticKind), Vec<u32>>,
}

impl Report {
    fn push(&mut self, address: u16, kind: DiagnosticKind, message: String) {
        self.list.push(Diagnostic {
            address,
            kind,
            message,
        });
    }

    fn components(&mut self, address: u16, kind: DiagnosticKind, bits: u64) {
        if bits != 0 {
            *self.components.entry((address, kind)).or_default() |= bits;
        }
    }

    fn target(&mut self, address: u16, kind: DiagnosticKind, target: u32) {
        let list = self.targets.entry((address, kind)).or_default();
        if !list.contains(&target) {
            list.push(target);
        }
    }

    fn finish(mut self, program_len: usize) -> Vec<Diagnostic> {
        for ((address, kind), bits) in std::mem::take(&mut self.components) {
            let message = match kind {
                DiagnosticKind::OutputWrittenTwice => format!(
                    "{} written again on some path: each output component must be written \
                     exactly once per invocation",
                    component_list('o', bits)
                ),
                DiagnosticKind::OutputNotWritten => format!(
                    "END reached on some path without writing {}: every configured output \
                     component must be written exactly once per invocation",
                    component_list('o', bits)
                ),
                _ => format!(
                    "{} read before being written on some path (zero here; on the hardware \
                     whatever an earlier vertex left)",
                    component_list('r', bits)
                ),
            };
            self.push(address, kind, message);
        }
        for ((address, kind), mut targets) in std::mem::take(&mut self.targets) {
            targets.sort_unstable();
            let list = targets
                .iter()
                .map(|t| format!("{t:#05x}"))
                .collect::<Vec<_>>()
                .join(", ");
            let message = match kind {
                DiagnosticKind::ConsecutiveMova => format!(
                    "two consecutive MOVA instructions freeze the GPU (the next MOVA is at {list})"
                ),
                _ => format!(
                    "execution can go on at {list}, past the end of the program \
                     ({program_len} words), without reaching END"
                ),
            };
            self.push(address, kind, message);
        }
        let mut list = self.list;
        list.sort();
        list.dedup();
        list
    }
}

/// `o0.xy, o3.w` for a component set (bit 4·register + lane).
fn component_list(prefix: char, bits: u64) -> String {
    (0..16)
        .filter_map(|reg| {
            let lanes = (bits >> (4 * reg)) & 0xF;
            (lanes != 0).then(|| {
                let names: String = (0..4)
                    .filter(|lane| lanes & (1 << lane) != 0)
                    .map(|lane| LANE_NAMES[lane])
                    .collect();
                format!("{prefix}{reg}.{names}")
            })
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The register components one instruction reads and writes (bit 4·register + lane).
#[derive(Clone, Copy, Debug, Default)]
struct Effects {
    output_writes: u64,
    temp_writes: u64,
    temp_reads: u64,
}

fn effects(ctx: &Context, inst: &Instruction) -> Effects {
    let mut fx = Effects::default();
    let Some(index) = inst.desc() else {
        return fx;
    };
    let desc = ctx.descriptor(index);
    for source in inst.sources(desc) {
        if let (RegisterFile::Temporary, n) = source.reg.file_index() {
            fx.temp_reads |= (source.components(desc) as u64) << (4 * n);
        }
    }
    if let Some(dst) = inst.dst() {
        let lanes = (desc.dest_mask().lanes() as u64) << (4 * (dst.file_index().1));
        match dst.file_index().0 {
            RegisterFile::Output => fx.output_writes = lanes,
            _ => fx.temp_writes = lanes,
        }
    }
    fx
}

/// The checks that look at one instruction alone.
fn instruction_checks(ctx: &Context, address: u16, inst: &Instruction, report: &mut Report) {
    use DiagnosticKind::*;
    match *inst {
        Instruction::Unknown { word } => report.push(
            address,
            UnknownOpcode,
            format!("unknown opcode {:#04x} (executes as NOP)", word >> 26),
        ),
        Instruction::Simple {
            op: SimpleOp::Emit, ..
        } if ctx.stage == ShaderKind::Vertex => report.push(
            address,
            EmitInVertexShader,
            "EMIT in a vertex shader (executed as a no-op)".into(),
        ),
        Instruction::SetEmit { vertex, .. } => {
            if ctx.stage == ShaderKind::Vertex {
                report.push(
                    address,
                    EmitInVertexShader,
                    "SETEMIT in a vertex shader (executed as a no-op)".into(),
                );
            } else if vertex >= 3 {
                report.push(
                    address,
                    SetEmitVertexOutOfRange,
                    format!("SETEMIT vertex {vertex}: the next EMIT fails (slots are 0-2)"),
                );
            }
        }
        _ => {}
    }

    let Some(index) = inst.desc() else {
        return;
    };
    if let Instruction::Mad { inverted, .. } = inst
        && index as usize >= MAD_OPDESC_LIMIT
    {
        let name = if *inverted { "MADI" } else { "MAD" };
        report.push(
            address,
            MadOpdescOutOfRange,
            format!(
                "{name} operand descriptor {index} is out of range: MAD and MADI can only use \
                 descriptors 0-{}",
                MAD_OPDESC_LIMIT - 1
            ),
        );
    } else if index as usize >= ctx.opdescs.len() {
        report.push(
            address,
            OpdescNotUploaded,
            format!(
                "operand descriptor {index} was not uploaded ({} descriptors); it reads as 0",
                ctx.opdescs.len()
            ),
        );
    }

    let desc = ctx.descriptor(index);
    let sources = inst.sources(desc);
    let mut inputs: Vec<u8> = Vec::new();
    for source in &sources {
        let (file, n) = source.reg.file_index();
        if file == RegisterFile::Input && !inputs.contains(&n) {
            inputs.push(n);
        }
        if let Some(name) = source.rel.name()
            && !source.reg.is_uniform()
        {
            report.push(
                address,
                RelativeIndexOnNonUniform,
                format!(
                    "relative index {name} on {} is ignored by the hardware (only c0-c95 can be \
                     offset)",
                    source.reg
                ),
            );
        }
    }
    if inputs.len() > 1 {
        let names: Vec<String> = inputs.iter().map(|n| format!("v{n}")).collect();
        report.push(
            address,
            DifferentInputRegisters,
            format!(
                "reads different input registers {}: only one input register can be read \
                 reliably per instruction",
                names.join(" and ")
            ),
        );
    }

    if ctx.stage == ShaderKind::Geometry
        && let Some(dst) = inst.dst()
        && let (RegisterFile::Output, n) = dst.file_index()
        && n >= GS_OUTPUTS
    {
        report.push(
            address,
            OutputNotInStage,
            format!(
                "{} does not exist in a geometry shader (only o0-o{})",
                DstReg::output(n),
                GS_OUTPUTS - 1
            ),
        );
    }
}

/// Geometry shaders have output registers o0 to o6.
const GS_OUTPUTS: u8 = 7;

fn is_mova(inst: &Instruction) -> bool {
    matches!(inst, Instruction::Mova { .. })
}

/// Runs every check with a given state limit.
fn run(ctx: &Context, limit: usize) -> Vec<Diagnostic> {
    let mut report = Report::default();
    let len = ctx.program.len();
    if ctx.entry as usize >= len {
        report.push(
            ctx.entry,
            DiagnosticKind::RunsPastProgram,
            format!(
                "the entry point {:#05x} is outside the program ({len} words)",
                ctx.entry
            ),
        );
        return report.finish(len);
    }

    let graph = crate::flow::explore::explore(ctx.program, ctx.entry, limit);
    let reachable = if graph.complete {
        graph.addresses()
    } else {
        flow::reachable_addresses(ctx.program, ctx.entry)
    };
    for (address, inst) in ctx.program.iter().enumerate() {
        if reachable[address] {
            instruction_checks(ctx, address as u16, inst, &mut report);
        }
    }
    exit_checks(ctx, &graph, &mut report);

    if graph.complete {
        for node in &graph.nodes {
            let pc = node.state.pc;
            if !is_mova(&ctx.program[pc as usize]) {
                continue;
            }
            for &succ in &node.successors {
                let next = graph.nodes[succ as usize].state.pc;
                if is_mova(&ctx.program[next as usize]) {
                    report.target(pc, DiagnosticKind::ConsecutiveMova, next as u32);
                }
            }
        }
        never_ends(&graph, &mut report);
        if ctx.stage == ShaderKind::Vertex {
            register_checks(ctx, &graph, &mut report);
        }
    } else {
        for address in 0..len {
            let next = (address + 1) % PROGRAM_WORDS;
            if next < len
                && reachable[address]
                && reachable[next]
                && is_mova(&ctx.program[address])
                && is_mova(&ctx.program[next])
            {
                report.target(address as u16, DiagnosticKind::ConsecutiveMova, next as u32);
            }
        }
        report.push(
            ctx.entry,
            DiagnosticKind::AnalysisIncomplete,
            format!(
                "control-flow analysis stopped after {limit} states: the output, \
                 read-before-write, endless-loop and consecutive-MOVA path checks were skipped \
                 or approximated"
            ),
        );
    }
    report.finish(len)
}

/// BREAK outside a loop and running off the end, from the exits the exploration found.
fn exit_checks(ctx: &Context, graph: &FlowGraph, report: &mut Report) {
    for node in &graph.nodes {
        let pc = node.state.pc;
        for exit in &node.exits {
            match *exit {
                Exit::End => {}
                Exit::BreakOutsideLoop => {
                    let name = ctx.program[pc as usize].info().name.to_uppercase();
                    report.push(
                        pc,
                        DiagnosticKind::BreakOutsideLoop,
                        format!("{name} with no active loop hangs the GPU"),
                    );
                }
                Exit::OutsideProgram { target } => {
                    report.target(pc, DiagnosticKind::RunsPastProgram, target)
                }
            }
        }
    }
}

/// Endless loops: the states that cannot finish but are entered from one that can (or are the
/// entry), reported at their instruction.
fn never_ends(graph: &FlowGraph, report: &mut Report) {
    let finish = graph.can_finish();
    let mut entered = vec![false; graph.nodes.len()];
    entered[0] = !finish[0];
    for (id, node) in graph.nodes.iter().enumerate() {
        if finish[id] {
            for &succ in &node.successors {
                entered[succ as usize] |= !finish[succ as usize];
            }
        }
    }
    for (id, node) in graph.nodes.iter().enumerate() {
        if entered[id] {
            report.push(
                node.state.pc,
                DiagnosticKind::NeverEnds,
                "once execution gets here it can never reach END (endless loop)".into(),
            );
        }
    }
}

/// Forward dataflow over the flow graph. Every node's fact is the union (`must == false`) or
/// intersection (`must == true`) over its predecessors of `fact | gen[predecessor]`; the entry
/// also starts from the empty set. Returns the fact on entry to each node.
fn forward(graph: &FlowGraph, gen_bits: &[u64], must: bool) -> Vec<u64> {
    let n = graph.nodes.len();
    let mut facts = vec![if must { u64::MAX } else { 0 }; n];
    if n == 0 {
        return facts;
    }
    facts[0] = 0;
    let mut queued = vec![true; n];
    let mut queue: std::collections::VecDeque<u32> = (0..n as u32).collect();
    while let Some(id) = queue.pop_front() {
        queued[id as usize] = false;
        let out = facts[id as usize] | gen_bits[id as usize];
        for &succ in &graph.nodes[id as usize].successors {
            let old = facts[succ as usize];
            let new = if must { old & out } else { old | out };
            if new != old {
                facts[succ as usize] = new;
                if !queued[succ as usize] {
                    queued[succ as usize] = true;
                    queue.push_back(succ);
                }
            }
        }
    }
    facts
}

/// Output written twice, configured output not written, temporary read before written.
fn register_checks(ctx: &Context, graph: &FlowGraph, report: &mut Report) {
    let fx: Vec<Effects> = ctx.program.iter().map(|i| effects(ctx, i)).collect();
    let at = |node: &flow::FlowNode| fx[node.state.pc as usize];
    let out_gen: Vec<u64> = graph.nodes.iter().map(|n| at(n).output_writes).collect();
    let temp_gen: Vec<u64> = graph.nodes.iter().map(|n| at(n).temp_writes).collect();

    let out_may = forward(graph, &out_gen, false);
    let out_must = forward(graph, &out_gen, true);
    let temp_must = forward(graph, &temp_gen, true);

    let configured = ctx
        .outputs
        .iter()
        .filter(|(reg, _)| *reg < 16)
        .fold(0u64, |acc, &(reg, lanes)| {
            acc | (((lanes & 0xF) as u64) << (4 * reg))
        });

    for (id, node) in graph.nodes.iter().enumerate() {
        let pc = node.state.pc;
        let effects = at(node);
        report.components(
            pc,
            DiagnosticKind::OutputWrittenTwice,
            out_may[id] & effects.output_writes,
        );
        report.components(
            pc,
            DiagnosticKind::ReadBeforeWrite,
            effects.temp_reads & !temp_must[id],
        );
        if node.exits.contains(&Exit::End) {
            report.components(
                pc,
                DiagnosticKind::OutputNotWritten,
                configured & !out_must[id],
            );
        }
    }
}

#[cfg(test)]
mod tests;
