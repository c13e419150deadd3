//! SHBIN → picasso source that assembles back to the identical binary.
//!
//! The source keeps every code word in place (padding NOPs become explicit `nop`s, so the
//! assembler never has to insert one), rebuilds the block structure from the flow-control
//! words (`.proc` for every call target and entry point, `for`, `ifc`/`ifu` with `.else`, labels
//! for jumps), prints each operand from the final operand-descriptor table (the assembler's
//! first-fit sharing then allocates the same descriptors in the same order), declares uniforms
//! in an order (with hidden `_fill` uniforms for gaps) that gives them the same registers, and
//! writes constants with `.setf`/`.seti`/`.setb`.
//!
//! Binaries that picasso syntax cannot express (unknown opcodes, relative indexing of a
//! non-uniform, overlapping blocks, set ignored bits, ...) are reported, not approximated.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::{self, Write};

use crate::isa::{
    self, BinaryOp, BoolFlowOp, CondCombine, CondFlowOp, Condition, DstReg, Instruction,
    OperandDescriptor, RelIndex, SimpleOp, SrcReg, Swizzle, UnaryOp, split_rel,
};
use crate::shbin::{
    Constant, Dvle, GsConfig, GsMode, OutputEntry, OutputSemantic, PICASSO_DVLE_VERSION,
    ShaderKind, Shbin, UniformEntry,
};

use super::MAX_VERTEX_SHADER_WORDS;
use super::text::excerpt;

/// Why a binary has no picasso source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unrepresentable {
    /// What cannot be expressed, and where.
    pub reason: String,
}

impl fmt::Display for Unrepresentable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no picasso source reproduces this binary: {}",
            self.reason
        )
    }
}

impl std::error::Error for Unrepresentable {}

fn fail<T>(reason: impl Into<String>) -> Result<T, Unrepresentable> {
    Err(Unrepresentable {
        reason: reason.into(),
    })
}

/// One source file per DVLE, in DVLE order.
pub fn to_source(shbin: &Shbin) -> Result<Vec<String>, Unrepresentable> {
    check_container(shbin)?;
    let code: Vec<Instruction> = shbin.code.iter().map(|&w| isa::decode(w)).collect();
    let structure = Structure::build(shbin, &code)?;
    let hosts = assign_code(shbin, &code, &structure)?;
    let mut spaces = UniformSpaces::default();
    let mut files = Vec::new();
    for (index, dvle) in shbin.dvles.iter().enumerate() {
        let mut text = format!(
            "; DVLE {index}: {} shader, disassembled by picajit\n",
            dvle.kind.name()
        );
        text += &declarations(index, dvle, &structure, &mut spaces)?;
        if let Some(range) = hosts.get(&index) {
            text += &code_text(shbin, &code, &structure, range.clone())?;
        }
        files.push(text);
    }
    Ok(files)
}

fn check_container(shbin: &Shbin) -> Result<(), Unrepresentable> {
    if shbin.dvles.is_empty() {
        return fail("the file has no DVLE");
    }
    if shbin.opdesc_extra.iter().any(|&w| w != 0) {
        return fail("an operand descriptor's second word is not 0");
    }
    for (i, dvle) in shbin.dvles.iter().enumerate() {
        if dvle.version != PICASSO_DVLE_VERSION {
            return fail(format!(
                "DVLE {i} has version {:#x}, not picasso's {PICASSO_DVLE_VERSION:#x}",
                dvle.version
            ));
        }
        if !dvle.labels.is_empty() {
            return fail(format!("DVLE {i} has a label table"));
        }
        if dvle.end < dvle.entry || dvle.end as usize > shbin.code.len() {
            return fail(format!(
                "DVLE {i}'s entry range {:#x}..{:#x} is not within the code",
                dvle.entry, dvle.end
            ));
        }
    }
    Ok(())
}

/// A block of the reconstructed source.
#[derive(Clone, Debug, PartialEq, Eq)]
enum BlockKind {
    /// `.proc name` ... `.end`.
    Proc(String),
    /// `for` (the LOOP word at the start) ... `.end`.
    For,
    /// `ifc`/`ifu` (the word at the start) ... [`.else` at `else_at`] ... `.end`.
    If { else_at: Option<usize> },
}

#[derive(Clone, Debug)]
struct Block {
    start: usize,
    end: usize,
    kind: BlockKind,
}

/// The block structure and labels of the code.
struct Structure {
    blocks: Vec<Block>,
    /// Procedure names by (start, size).
    procs: BTreeMap<(usize, usize), String>,
    /// Addresses that get a label.
    labels: BTreeSet<usize>,
}

fn proc_name(start: usize, size: usize) -> String {
    format!("proc_{start:03x}_{size}")
}

impl Structure {
    fn build(shbin: &Shbin, code: &[Instruction]) -> Result<Structure, Unrepresentable> {
        let len = code.len();
        let mut procs = BTreeMap::new();
        let mut blocks = Vec::new();
        let mut labels = BTreeSet::new();
        for dvle in &shbin.dvles {
            let (start, size) = (dvle.entry as usize, (dvle.end - dvle.entry) as usize);
            procs
                .entry((start, size))
                .or_insert_with(|| proc_name(start, size));
        }
        for (at, inst) in code.iter().enumerate() {
            match *inst {
                Instruction::CondFlow {
                    op: CondFlowOp::Call | CondFlowOp::Callc,
                    target,
                    count,
                    ..
                }
                | Instruction::BoolFlow {
                    op: BoolFlowOp::Callu,
                    target,
                    count,
                    ..
                } => {
                    let (start, size) = (target as usize, count as usize);
                    if start + size > len {
                        return fail(format!(
                            "the call at {at:#05x} targets {start:#05x}+{size}, beyond the code"
                        ));
                    }
                    procs
                        .entry((start, size))
                        .or_insert_with(|| proc_name(start, size));
                }
                Instruction::CondFlow {
                    op: CondFlowOp::Ifc,
                    target,
                    count,
                    ..
                }
                | Instruction::BoolFlow {
                    op: BoolFlowOp::Ifu,
                    target,
                    count,
                    ..
                } => {
                    let (target, count) = (target as usize, count as usize);
                    if target <= at || target + count > len {
                        return fail(format!(
                            "the IF at {at:#05x} has target {target:#05x} and count {count}"
                        ));
                    }
                    let else_at = (count > 0).then_some(target);
                    blocks.push(Block {
                        start: at,
                        end: target + count,
                        kind: BlockKind::If { else_at },
                    });
                }
                Instruction::Loop { target, .. } => {
                    let last = target as usize;
                    if last <= at || last >= len {
                        return fail(format!("the LOOP at {at:#05x} ends at {last:#05x}"));
                    }
                    blocks.push(Block {
                        start: at,
                        end: last + 1,
                        kind: BlockKind::For,
                    });
                }
                Instruction::CondFlow {
                    op: CondFlowOp::Jmpc,
                    target,
                    ..
                }
                | Instruction::BoolFlow {
                    op: BoolFlowOp::Jmpu,
                    target,
                    ..
                } => {
                    if target as usize > len {
                        return fail(format!(
                            "the jump at {at:#05x} targets {target:#05x}, beyond the code"
                        ));
                    }
                    labels.insert(target as usize);
                }
                _ => {}
            }
        }
        for (&(start, size), name) in &procs {
            blocks.push(Block {
                start,
                end: start + size,
                kind: BlockKind::Proc(name.clone()),
            });
        }
        // Outer blocks first: by start, then the longer one, then a proc before an IF/for that
        // starts at the same word (the proc contains its first instruction).
        blocks.sort_by_key(|b| {
            (
                b.start,
                std::cmp::Reverse(b.end),
                !matches!(b.kind, BlockKind::Proc(_)),
            )
        });
        blocks.dedup_by(|a, b| a.start == b.start && a.end == b.end && a.kind == b.kind);
        let structure = Structure {
            blocks,
            procs,
            labels,
        };
        structure.check_nesting()?;
        Ok(structure)
    }

    /// Blocks must nest, and an `.else` may not fall inside a nested block.
    fn check_nesting(&self) -> Result<(), Unrepresentable> {
        let mut open: Vec<&Block> = Vec::new();
        for block in &self.blocks {
            while open.last().is_some_and(|top| top.end <= block.start) {
                open.pop();
            }
            if let Some(top) = open.last() {
                if block.end > top.end {
                    return fail(format!(
                        "blocks {:#05x}..{:#05x} and {:#05x}..{:#05x} overlap",
                        top.start, top.end, block.start, block.end
                    ));
                }
                if let BlockKind::If { else_at: Some(at) } = top.kind
                    && block.start < at
                    && block.end > at
                {
                    return fail(format!(
                        "the else at {at:#05x} falls inside the block at {:#05x}",
                        block.start
                    ));
                }
            }
            if block.start == block.end && !matches!(block.kind, BlockKind::Proc(_)) {
                return fail(format!("an empty block at {:#05x}", block.start));
            }
            open.push(block);
        }
        Ok(())
    }

    /// Top-level units: ranges that become one `.proc` each (a top-level procedure, or a run of
    /// code outside every procedure wrapped in a hidden one).
    fn units(&self, len: usize) -> Vec<(usize, usize, Option<String>)> {
        let mut units = Vec::new();
        let mut at = 0;
        let mut top_procs: Vec<&Block> = Vec::new();
        for block in &self.blocks {
            if top_procs.last().is_some_and(|p| block.start < p.end) {
                continue;
            }
            if matches!(block.kind, BlockKind::Proc(_)) {
                top_procs.push(block);
            }
        }
        for proc in top_procs {
            if proc.start > at {
                units.push((at, proc.start, None));
            }
            if let BlockKind::Proc(name) = &proc.kind {
                units.push((proc.start, proc.end, Some(name.clone())));
            }
            at = at.max(proc.end);
        }
        if at < len {
            units.push((at, len, None));
        }
        units
    }
}

/// Which DVLE file hosts each range of code. The assembler checks the vertex-shader size limit
/// and the output registers against the DVLE of the file, and SETEMIT turns a vertex DVLE into a
/// geometry one, so each unit goes to the first file at or after the previous one that accepts it.
fn assign_code(
    shbin: &Shbin,
    code: &[Instruction],
    structure: &Structure,
) -> Result<HashMap<usize, std::ops::Range<usize>>, Unrepresentable> {
    let units = structure.units(code.len());
    // Jumps must stay within one file: merge units a jump crosses.
    let unit_of = |address: usize| {
        units
            .iter()
            .position(|u| address >= u.0 && address < u.1.max(u.0 + 1))
    };
    let mut group_end: Vec<usize> = (0..units.len()).collect();
    for (at, inst) in code.iter().enumerate() {
        if let Instruction::CondFlow {
            op: CondFlowOp::Jmpc,
            target,
            ..
        }
        | Instruction::BoolFlow {
            op: BoolFlowOp::Jmpu,
            target,
            ..
        } = *inst
        {
            let (Some(a), Some(b)) = (
                unit_of(at),
                unit_of((target as usize).min(code.len().saturating_sub(1))),
            ) else {
                continue;
            };
            let (lo, hi) = (a.min(b), a.max(b));
            for end in group_end.iter_mut().take(hi + 1).skip(lo) {
                *end = (*end).max(hi);
            }
        }
    }
    let mut hosts: HashMap<usize, std::ops::Range<usize>> = HashMap::new();
    let mut file = 0;
    let mut unit = 0;
    while unit < units.len() {
        let mut last = group_end[unit];
        let mut k = unit;
        while k <= last {
            last = last.max(group_end[k]);
            k += 1;
        }
        let (start, end) = (units[unit].0, units[last].1);
        let words = &code[start..end];
        let needs_geometry = words
            .iter()
            .any(|i| matches!(i, Instruction::SetEmit { .. }));
        let needs_vertex = words
            .iter()
            .any(|i| i.dst().is_some_and(|d| d.raw() >= 7 && d.raw() < 16));
        let fits = |dvle: &Dvle| match dvle.kind {
            ShaderKind::Vertex => !needs_geometry && end <= MAX_VERTEX_SHADER_WORDS + 1,
            ShaderKind::Geometry => !needs_vertex,
        };
        while file < shbin.dvles.len() && !fits(&shbin.dvles[file]) {
            file += 1;
        }
        if file == shbin.dvles.len() {
            return fail(format!(
                "no DVLE's file can hold the code at {start:#05x}..{end:#05x}"
            ));
        }
        let range = hosts.entry(file).or_insert(start..start);
        range.end = end;
        unit = last + 1;
    }
    Ok(hosts)
}

/// Allocation state of the vertex shaders' shared uniform space across files.
#[derive(Default)]
struct UniformSpaces {
    /// Declared names: name → (position, size, directive).
    declared: HashMap<String, (i32, i32, &'static str)>,
    /// Next free position per directive.
    next: HashMap<&'static str, i32>,
    fillers: usize,
}

/// The directive that declares a uniform-table entry (`.fvec`, `.ivec`, `.bool` or `.in`), or
/// `None` when its registers are not one range of one register file.
pub fn uniform_directive(entry: &UniformEntry) -> Option<&'static str> {
    classify(entry.first, entry.last).map(|(directive, _)| directive)
}

/// The directive and unified position of a uniform-table entry.
fn classify(first: u16, last: u16) -> Option<(&'static str, i32)> {
    let kind = |r: u16| match r {
        0x00..=0x0F => Some(".in"),
        0x10..=0x6F => Some(".fvec"),
        0x70..=0x73 => Some(".ivec"),
        0x78..=0x87 => Some(".bool"),
        _ => None,
    };
    let directive = kind(first)?;
    if kind(last)? != directive || last < first {
        return None;
    }
    let pos = if directive == ".in" {
        first as i32
    } else {
        first as i32 + 0x10
    };
    Some((directive, pos))
}

fn space_start(directive: &str, gs_first: i32) -> i32 {
    match directive {
        ".fvec" => gs_first,
        ".ivec" => 0x80,
        _ => 0x88,
    }
}

fn register_name(directive: &str, pos: i32) -> String {
    match directive {
        ".fvec" => format!("c{}", pos - 0x20),
        ".ivec" => format!("i{}", pos - 0x80),
        ".bool" => format!("b{}", pos - 0x88),
        _ => format!("v{pos}"),
    }
}

fn declarations(
    index: usize,
    dvle: &Dvle,
    structure: &Structure,
    shared: &mut UniformSpaces,
) -> Result<String, Unrepresentable> {
    let mut text = String::new();
    let mut entries = Vec::new();
    for u in &dvle.uniforms {
        let Some((directive, pos)) = classify(u.first, u.last) else {
            return fail(format!(
                "DVLE {index}: uniform '{}' has registers {:#x}..{:#x}",
                excerpt(&u.name),
                u.first,
                u.last
            ));
        };
        let name = u.name.replace('.', "$");
        if !super::text::is_identifier(&name) || name.is_empty() || name.starts_with('_') {
            return fail(format!(
                "DVLE {index}: uniform name '{}' cannot be declared",
                excerpt(&u.name)
            ));
        }
        entries.push((directive, pos, (u.last - u.first) as i32 + 1, name));
    }
    // A geometry shader with its own uniform space, or a "compat" one sharing the vertex space:
    // a GS whose uniforms all match earlier vertex-space declarations is taken as compat.
    let geometry = dvle.kind == ShaderKind::Geometry;
    let has_dummy = dvle
        .outputs
        .iter()
        .any(|o| o.semantic == OutputSemantic::Dummy);
    let compat = geometry
        && dvle.gs.mode == GsMode::Point
        && !dvle.merge_outmaps
        && (has_dummy
            || entries.iter().any(|(d, pos, size, name)| {
                *d != ".in" && shared.declared.get(name) == Some(&(*pos, *size, d))
            }));
    let mut local = UniformSpaces::default();
    let space = if geometry && !compat {
        &mut local
    } else {
        &mut *shared
    };
    let mut gs_first = 0x20;
    if geometry && !compat {
        let first_float = entries.iter().filter(|e| e.0 == ".fvec").map(|e| e.1).min();
        gs_first = match dvle.gs.mode {
            GsMode::Fixed => {
                let start = 0x20 + dvle.gs.fixed_start as i32;
                let first = first_float.unwrap_or(start + 1);
                if start >= first {
                    return fail(format!(
                        "DVLE {index}: the fixed-mode array overlaps the uniforms"
                    ));
                }
                first
            }
            _ => first_float.unwrap_or(0x20),
        };
        text += &gsh_declaration(&dvle.gs, &register_name(".fvec", gs_first));
        text.push('\n');
    } else if geometry {
        text += ".gsh\n";
    }
    if (!geometry || compat)
        && (
            dvle.gs.fixed_start,
            dvle.gs.variable_vertices,
            dvle.gs.fixed_vertices,
        ) != (0, 0, 0)
        || (compat && dvle.gs.mode != GsMode::Point)
    {
        return fail(format!(
            "DVLE {index}: geometry-shader fields set on a shader that cannot have them"
        ));
    }
    let entry = (dvle.entry as usize, (dvle.end - dvle.entry) as usize);
    text += &format!(".entry {}\n", structure.procs[&entry]);

    let mut input_mask = 0u16;
    entries.sort_by_key(|e| e.1);
    for (directive, pos, size, name) in &entries {
        if *directive == ".in" {
            if *size != 1 {
                return fail(format!(
                    "DVLE {index}: input '{}' spans several registers",
                    excerpt(name)
                ));
            }
            input_mask |= 1 << pos;
            text += &format!(".in {name} v{pos}\n");
            continue;
        }
        if let Some(&(p, s, d)) = space.declared.get(name) {
            if (p, s, d) != (*pos, *size, *directive) {
                return fail(format!(
                    "DVLE {index}: uniform '{}' is declared elsewhere at another register",
                    excerpt(name)
                ));
            }
            text += &format!("{directive} {name}[{size}]\n");
            continue;
        }
        let next = *space
            .next
            .entry(directive)
            .or_insert_with(|| space_start(directive, gs_first));
        if *pos < next {
            return fail(format!(
                "DVLE {index}: uniform '{}' at {} cannot be allocated there (next free is {})",
                excerpt(name),
                register_name(directive, *pos),
                register_name(directive, next)
            ));
        }
        if *pos > next {
            space.fillers += 1;
            text += &format!(
                "{directive} _fill{}_{}[{}]\n",
                index,
                space.fillers,
                pos - next
            );
        }
        text += &format!("{directive} {name}[{size}]\n");
        space.next.insert(directive, pos + size);
        space
            .declared
            .insert(name.clone(), (*pos, *size, directive));
    }
    if input_mask != dvle.input_mask {
        return fail(format!(
            "DVLE {index}: the input mask {:#x} does not match the inputs",
            dvle.input_mask
        ));
    }
    let mut output_mask = 0u16;
    for output in &dvle.outputs {
        if output.unknown != 0 || output.mask == 0 || output.mask > 0xF {
            return fail(format!(
                "DVLE {index}: output o{} has mask {:#x}",
                output.register, output.mask
            ));
        }
        if let OutputSemantic::Other(code) = output.semantic {
            return fail(format!("DVLE {index}: output semantic {code}"));
        }
        text += &output_declaration(output);
        text.push('\n');
        output_mask |= 1 << output.register;
    }
    if output_mask != dvle.output_mask {
        return fail(format!(
            "DVLE {index}: the output mask {:#x} does not match the outputs",
            dvle.output_mask
        ));
    }
    let merge = geometry && !compat && has_dummy;
    if merge != dvle.merge_outmaps {
        return fail(format!(
            "DVLE {index}: the merge flag does not follow from the outputs"
        ));
    }
    for constant in &dvle.constants {
        text += &constant_declaration(constant)?;
        text.push('\n');
    }
    Ok(text)
}

/// The `.gsh` directive of a geometry shader's mode, `first_free` being the first float
/// uniform it allocates from (`.gsh point c0`, `.gsh fixed c8 c0 4`).
pub fn gsh_declaration(gs: &GsConfig, first_free: &str) -> String {
    match gs.mode {
        GsMode::Point => format!(".gsh point {first_free}"),
        GsMode::Variable => format!(".gsh variable {first_free} {}", gs.variable_vertices),
        GsMode::Fixed => format!(
            ".gsh fixed {first_free} c{} {}",
            gs.fixed_start, gs.fixed_vertices
        ),
    }
}

/// The `.out` directive of an output-table entry, without a name: `.out - position o0`,
/// `.out - texcoord0 o2.xy` (a semantic picasso has no name for prints as `unknown(7)`, and
/// only the mask's four lane bits are shown).
pub fn output_declaration(output: &OutputEntry) -> String {
    let letters: String = (0..4)
        .filter(|c| output.mask & (1 << c) != 0)
        .map(|c| isa::LANE_NAMES[c])
        .collect();
    let suffix = if output.mask & 0xF == 0xF {
        String::new()
    } else {
        format!(".{letters}")
    };
    format!(".out - {} o{}{suffix}", output.semantic, output.register)
}

/// The directive that sets a constant-table entry: `.setf c95(0.5, 1, 0, 0)`,
/// `.seti i0(3, 0, 1, 0)`, `.setb b2 true`. Fails for a float24 NaN with a payload, which
/// picasso cannot write.
pub fn constant_declaration(constant: &Constant) -> Result<String, Unrepresentable> {
    Ok(match constant {
        Constant::Float { index: reg, value } => {
            let values: Result<Vec<String>, _> =
                value.iter().map(|v| constant_text(v.bits())).collect();
            format!(".setf c{reg}({})", values?.join(", "))
        }
        Constant::Int { index: reg, value } => {
            format!(
                ".seti i{reg}({}, {}, {}, {})",
                value[0], value[1], value[2], value[3]
            )
        }
        Constant::Bool { index: reg, value } => format!(".setb b{reg} {value}"),
    })
}

/// A float whose picasso conversion gives exactly the float24 `bits`.
fn constant_text(bits: u32) -> Result<String, Unrepresentable> {
    let sign = if bits & 0x80_0000 != 0 { "-" } else { "" };
    let exponent = (bits >> 16) & 0x7F;
    let mantissa = bits & 0xFFFF;
    let magnitude = match (exponent, mantissa) {
        (0, 0) => return Ok(format!("{sign}0")),
        (0x7F, 0) => return Ok(format!("{sign}inf")),
        (0x7F, _) if bits == crate::float24::CANONICAL_NAN_F24 => return Ok("nan".to_string()),
        (0x7F, _) => {
            return fail(format!(
                "the float24 constant {bits:#08x} is a NaN with a payload"
            ));
        }
        // Exponent 0 comes from f32 values in [2^-63, 2^-62) whose top mantissa bits are kept.
        (0, m) => f32::from_bits(((127 - 63) << 23) | m << 7),
        (e, m) => f32::from_bits((e + 64) << 23 | m << 7),
    };
    let mut buffer = ryu::Buffer::new();
    Ok(format!("{sign}{}", buffer.format_finite(magnitude)))
}

fn swizzle_text(swizzle: Swizzle) -> String {
    if swizzle == Swizzle::IDENTITY {
        String::new()
    } else {
        format!(".{swizzle}")
    }
}

fn source(
    reg: SrcReg,
    rel: RelIndex,
    desc: OperandDescriptor,
    slot: usize,
    at: usize,
) -> Result<String, Unrepresentable> {
    let mut text = String::new();
    if desc.negate(slot) {
        text.push('-');
    }
    write!(text, "{reg}").unwrap();
    if let Some(name) = rel.name() {
        if !reg.is_uniform() {
            return fail(format!("{at:#05x}: an index register on {reg}"));
        }
        write!(text, "[{name}]").unwrap();
    }
    text += &swizzle_text(desc.swizzle(slot));
    Ok(text)
}

fn destination(reg: DstReg, desc: OperandDescriptor, at: usize) -> Result<String, Unrepresentable> {
    let mask = desc.dest_mask();
    match mask.0 {
        0 => fail(format!("{at:#05x}: an empty destination mask")),
        0xF => Ok(reg.to_string()),
        _ => Ok(format!("{reg}.{mask}")),
    }
}

/// The condition as picasso writes it; picasso always sets the reference bit of the flag a
/// one-flag condition does not test.
fn condition_text(cond: Condition, at: usize) -> Result<String, Unrepresentable> {
    match cond.combine {
        CondCombine::X if !cond.ref_y => {
            fail(format!("{at:#05x}: an unused condition reference bit is 0"))
        }
        CondCombine::Y if !cond.ref_x => {
            fail(format!("{at:#05x}: an unused condition reference bit is 0"))
        }
        _ => Ok(isa::disasm::condition(cond)),
    }
}

fn instruction_text(
    inst: &Instruction,
    opdescs: &[u32],
    structure: &Structure,
    at: usize,
) -> Result<String, Unrepresentable> {
    let desc = |index: u8| OperandDescriptor(opdescs.get(index as usize).copied().unwrap_or(0));
    let label = |target: u16| format!("l_{target:03x}");
    let proc = |target: u16, count: u8| structure.procs[&(target as usize, count as usize)].clone();
    let name = inst.info().name;
    Ok(match *inst {
        Instruction::Binary {
            op,
            dst,
            src1,
            src2,
            rel,
            desc: d,
        } => {
            if op.is_inverted() && !src2.is_uniform() {
                return fail(format!("{at:#05x}: {name} with {src2} in the wide operand"));
            }
            let d = desc(d);
            let (rel1, rel2) = split_rel(rel, op.is_inverted());
            let mnemonic = match op {
                BinaryOp::Dphi => "dph",
                BinaryOp::Dsti => "dst",
                BinaryOp::Sgei => "sge",
                BinaryOp::Slti => "slt",
                _ => name,
            };
            format!(
                "{mnemonic} {}, {}, {}",
                destination(dst, d, at)?,
                source(src1, rel1, d, 0, at)?,
                source(src2, rel2, d, 1, at)?
            )
        }
        Instruction::Unary {
            dst,
            src1,
            rel,
            desc: d,
            ignored,
            op,
        } => {
            if ignored != 0 {
                return fail(format!("{at:#05x}: ignored bits are set"));
            }
            let _: UnaryOp = op;
            let d = desc(d);
            format!(
                "{name} {}, {}",
                destination(dst, d, at)?,
                source(src1, rel, d, 0, at)?
            )
        }
        Instruction::Mova {
            src1,
            rel,
            desc: d,
            ignored,
        } => {
            let d = desc(d);
            let target = match d.dest_mask().0 & 0b1100 {
                0b1000 => "a0.x",
                0b0100 => "a0.y",
                0b1100 => "a0.xy",
                _ => return fail(format!("{at:#05x}: MOVA writes neither a0.x nor a0.y")),
            };
            if ignored != 0 || d.dest_mask().0 & 0b0011 != 0 {
                return fail(format!("{at:#05x}: MOVA with ignored bits or a z/w mask"));
            }
            format!("mova {target}, {}", source(src1, rel, d, 0, at)?)
        }
        Instruction::Cmp {
            src1,
            src2,
            rel,
            desc: d,
            cmp_x,
            cmp_y,
        } => {
            if cmp_x.bits() > 5 || cmp_y.bits() > 5 {
                return fail(format!("{at:#05x}: CMP operator 6 or 7"));
            }
            let d = desc(d);
            format!(
                "cmp {}, {}, {}, {}",
                source(src1, rel, d, 0, at)?,
                cmp_x.name(),
                cmp_y.name(),
                source(src2, RelIndex::None, d, 1, at)?
            )
        }
        Instruction::Mad {
            inverted,
            dst,
            src1,
            src2,
            src3,
            rel,
            desc: d,
        } => {
            if inverted && !src3.is_uniform() && rel == RelIndex::None {
                return fail(format!("{at:#05x}: MADI with {src3} in the wide operand"));
            }
            let d = desc(d);
            let (rel2, rel3) = split_rel(rel, inverted);
            format!(
                "mad {}, {}, {}, {}",
                destination(dst, d, at)?,
                source(src1, RelIndex::None, d, 0, at)?,
                source(src2, rel2, d, 1, at)?,
                source(src3, rel3, d, 2, at)?
            )
        }
        Instruction::Simple { op, ignored } => {
            if ignored != 0 {
                return fail(format!("{at:#05x}: ignored bits are set"));
            }
            match op {
                SimpleOp::Break => "break",
                SimpleOp::Nop => "nop",
                SimpleOp::End => "end",
                SimpleOp::Emit => "emit",
            }
            .to_string()
        }
        Instruction::CondFlow {
            op,
            cond,
            target,
            count,
            ignored,
        } => {
            if ignored != 0 {
                return fail(format!("{at:#05x}: ignored bits are set"));
            }
            match op {
                CondFlowOp::Call => {
                    if cond
                        != (Condition {
                            ref_x: false,
                            ref_y: false,
                            combine: CondCombine::Or,
                        })
                    {
                        return fail(format!("{at:#05x}: CALL with condition bits"));
                    }
                    format!("call {}", proc(target, count))
                }
                CondFlowOp::Callc => format!(
                    "callc {}, {}",
                    condition_text(cond, at)?,
                    proc(target, count)
                ),
                CondFlowOp::Ifc => format!("ifc {}", condition_text(cond, at)?),
                CondFlowOp::Breakc | CondFlowOp::Jmpc => {
                    if count != 0 || (op == CondFlowOp::Breakc && target != 0) {
                        return fail(format!("{at:#05x}: {name} with a count or target"));
                    }
                    if op == CondFlowOp::Breakc {
                        format!("breakc {}", condition_text(cond, at)?)
                    } else {
                        format!("jmpc {}, {}", condition_text(cond, at)?, label(target))
                    }
                }
            }
        }
        Instruction::BoolFlow {
            op,
            bool_id,
            target,
            count,
            ignored,
        } => {
            if ignored != 0 {
                return fail(format!("{at:#05x}: ignored bits are set"));
            }
            match op {
                BoolFlowOp::Callu => format!("callu b{bool_id}, {}", proc(target, count)),
                BoolFlowOp::Ifu => format!("ifu b{bool_id}"),
                BoolFlowOp::Jmpu => {
                    if count > 1 {
                        return fail(format!("{at:#05x}: JMPU with a count"));
                    }
                    let bang = if count == 1 { "!" } else { "" };
                    format!("jmpu {bang}b{bool_id}, {}", label(target))
                }
            }
        }
        Instruction::Loop {
            int_id,
            count,
            ignored,
            ..
        } => {
            if ignored != 0 || count != 0 {
                return fail(format!("{at:#05x}: LOOP with a count or ignored bits"));
            }
            format!("for i{int_id}")
        }
        Instruction::SetEmit {
            vertex,
            primitive,
            winding,
            ignored,
        } => {
            if ignored != 0 || vertex > 2 {
                return fail(format!("{at:#05x}: SETEMIT with vertex 3 or ignored bits"));
            }
            let mut flags = Vec::new();
            if primitive {
                flags.push("prim");
            }
            if winding {
                flags.push("inv");
            }
            if flags.is_empty() {
                format!("setemit {vertex}")
            } else {
                format!("setemit {vertex}, {}", flags.join(" "))
            }
        }
        Instruction::Unknown { word } => {
            return fail(format!("{at:#05x}: unknown opcode in {word:#010x}"));
        }
    })
}

/// The code of `range`, with its blocks and labels.
fn code_text(
    shbin: &Shbin,
    code: &[Instruction],
    structure: &Structure,
    range: std::ops::Range<usize>,
) -> Result<String, Unrepresentable> {
    let mut text = String::new();
    let units: Vec<_> = structure
        .units(code.len())
        .into_iter()
        .filter(|u| u.0 >= range.start && u.1 <= range.end)
        .collect();
    let mut hidden = 0;
    for (start, end, name) in units {
        let name = name.unwrap_or_else(|| {
            hidden += 1;
            format!("_code_{start:03x}")
        });
        text += &format!(".proc {name}\n");
        // Blocks strictly inside this unit (the unit's own proc excluded).
        let inner: Vec<&Block> = structure
            .blocks
            .iter()
            .filter(|b| b.start >= start && b.end <= end)
            .filter(|b| {
                !(b.start == start && b.end == end && b.kind == BlockKind::Proc(name.clone()))
            })
            .collect();
        let mut open: Vec<&Block> = Vec::new();
        for (at, inst) in code.iter().enumerate().take(end).skip(start) {
            close_blocks(&mut text, &mut open, at);
            if structure.labels.contains(&at) {
                text += &format!("l_{at:03x}:\n");
            }
            for block in inner.iter().filter(|b| b.start == at) {
                if let BlockKind::Proc(name) = &block.kind {
                    text += &format!(".proc {name}\n");
                }
                open.push(block);
            }
            let indent = "    ".repeat(open.len());
            text += &format!(
                "{indent}{}\n",
                instruction_text(inst, &shbin.opdescs, structure, at)?
            );
        }
        close_blocks(&mut text, &mut open, end);
        if end == code.len() && structure.labels.contains(&end) {
            text += &format!("l_{end:03x}:\n");
        }
        text += ".end\n";
    }
    Ok(text)
}

/// Writes the `.else` and `.end` lines due before address `at`.
fn close_blocks(text: &mut String, open: &mut Vec<&Block>, at: usize) {
    while let Some(top) = open.last() {
        if top.end == at {
            *text += &format!("{}.end\n", "    ".repeat(open.len() - 1));
            open.pop();
            continue;
        }
        if let BlockKind::If { else_at: Some(e) } = top.kind
            && e == at
        {
            *text += &format!("{}.else\n", "    ".repeat(open.len() - 1));
        }
        break;
    }
}
