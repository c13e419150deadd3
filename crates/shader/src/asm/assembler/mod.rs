//! The assembler state machine: one pass over each file's lines, then the relocations.
//!
//! It follows picasso 2.7's observable behaviour (what it accepts, how it allocates operand
//! descriptors, uniforms and constants, where it pads with NOPs) so that the same source gives
//! the same SHBIN bytes; the deliberate differences are listed in the module docs of
//! [`crate::asm`].
//!
//! This file holds the state and the line loop; `operands` parses operands and shares
//! operand descriptors, `instructions` writes each format's words, `directives` handles the
//! directives.

use std::collections::{BTreeMap, HashMap};

use super::error::{AsmError, AsmWarning, Location};
use super::text::{
    Args, Span, atoi, excerpt, excerpt_chars, is_identifier, parse_float, parse_integer,
};
use crate::isa::{self, Swizzle};

mod directives;
mod instructions;
mod operands;

// Register numbers in picasso's unified operand space.
const TEMP: i32 = 0x10;
const FLOAT_UNIFORM: i32 = 0x20;
const INT_UNIFORM: i32 = 0x80;
const BOOL_UNIFORM: i32 = 0x88;
const UNIFORM_END: i32 = 0x98;

/// The largest vertex-shader program picasso accepts: it checks `size > 512` before appending,
/// so 513 words fit.
pub const MAX_VERTEX_SHADER_WORDS: usize = 512;
/// Nesting limit of `.proc`, `if`, `for` and `.constfa` blocks.
const MAX_NESTING: usize = 32;
/// Uniform, constant and output table limits per DVLE (and of the global uniform table).
const MAX_UNIFORMS: usize = 0x60;
const MAX_CONSTANTS: usize = 0x60;
const MAX_OUTPUTS: usize = 16;
/// The most characters of a `#line` directive's file name that diagnostics quote.
const MAX_LINE_FILE_CHARS: usize = 256;

/// The kind of a declared uniform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UniformKind {
    /// `.bool`.
    Bool,
    /// `.ivec`.
    Int,
    /// `.fvec` (and `.in` inputs).
    Float,
}

/// A uniform or input in a DVLE's (or the global) table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Uniform {
    /// The name as written (`$` kept; it becomes `.` in the SHBIN symbol table).
    pub name: String,
    /// First register in the unified space (inputs 0x00-0x0F, c 0x20-0x7F, i 0x80-0x83, b 0x88-0x97).
    pub pos: i32,
    /// Number of registers.
    pub size: i32,
    /// Its kind.
    pub kind: UniformKind,
}

/// A constant table entry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConstantValue {
    /// A float vector (f32 values as picasso parsed them; converted to float24 on output).
    Float([f32; 4]),
    /// An int vector.
    Int([u8; 4]),
    /// A bool.
    Bool(bool),
}

/// A constant: its register in the unified space and its value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Constant {
    /// Register (c: 0x20-0x7F, i: 0x80-0x83, b: 0x88-0x97).
    pub reg: i32,
    /// Value.
    pub value: ConstantValue,
}

/// Everything one DVLE collects while its file is assembled.
#[derive(Clone, Debug)]
pub struct DvleData {
    /// The file that created it.
    pub file: String,
    /// The entry procedure name.
    pub entrypoint: String,
    /// `.nodvle`: contributes procedures only.
    pub nodvle: bool,
    /// A geometry shader.
    pub geometry: bool,
    /// A "compat" geometry shader (`.gsh` without arguments, or `setemit` in a vertex file):
    /// it shares the vertex shaders' uniform space.
    pub compat_geometry: bool,
    /// Merge VS and GS output maps (a GS with `dummy` outputs).
    pub merge: bool,
    /// Input registers declared by `.in`.
    pub input_mask: u16,
    /// Output registers declared by `.out`.
    pub output_mask: u16,
    /// `.gsh` mode: 0 point, 1 variable, 2 fixed.
    pub gs_type: u8,
    /// Fixed mode: first uniform of the vertex array.
    pub gs_fixed_start: u8,
    /// Variable mode: number of fully defined vertices.
    pub gs_variable_num: u8,
    /// Fixed mode: number of vertices.
    pub gs_fixed_num: u8,
    /// Uniforms and inputs, in declaration order.
    pub uniforms: Vec<Uniform>,
    /// Constants, in declaration order.
    pub constants: Vec<Constant>,
    /// Outputs: (semantic code, register, component mask bit0 = x).
    pub outputs: Vec<(u16, u16, u16)>,
    /// Output components claimed so far (4 bits per register).
    output_used: u64,
    /// Entry point and end, after relocation.
    pub entry: (usize, usize),
}

impl DvleData {
    fn new(file: &str) -> DvleData {
        DvleData {
            file: file.to_string(),
            entrypoint: "main".to_string(),
            nodvle: false,
            geometry: false,
            compat_geometry: false,
            merge: false,
            input_mask: 0,
            output_mask: 0,
            gs_type: 0,
            gs_fixed_start: 0,
            gs_variable_num: 0,
            gs_fixed_num: 0,
            uniforms: Vec::new(),
            constants: Vec::new(),
            outputs: Vec::new(),
            output_used: 0,
            entry: (0, 0),
        }
    }

    /// Whether the DVLE allocates uniforms from its own geometry-shader space.
    fn uses_gsh_space(&self) -> bool {
        self.geometry && !self.compat_geometry
    }

    fn max_output(&self) -> i32 {
        if self.geometry { 7 } else { 16 }
    }
}

/// A uniform allocator: globals grow up from `start`, file-local constants down from `end`.
#[derive(Clone, Copy, Debug)]
struct Alloc {
    start: i32,
    end: i32,
    bound: i32,
    top: i32,
}

impl Alloc {
    const fn new(start: i32, end: i32) -> Alloc {
        Alloc {
            start,
            end,
            bound: end,
            top: end,
        }
    }

    fn clear_local(&mut self) {
        self.end = self.top;
    }

    fn global(&mut self, size: i32) -> Option<i32> {
        if self.start + size > self.bound {
            return None;
        }
        let pos = self.start;
        self.start += size;
        Some(pos)
    }

    fn local(&mut self, size: i32) -> Option<i32> {
        let pos = self.end - size;
        if pos < self.start {
            return None;
        }
        self.bound = self.bound.min(pos);
        self.end = pos;
        Some(pos)
    }
}

/// The float, int and bool allocators of one uniform space.
#[derive(Clone, Copy, Debug)]
struct AllocBundle {
    float: Alloc,
    int: Alloc,
    bool: Alloc,
}

impl AllocBundle {
    const fn vertex() -> AllocBundle {
        AllocBundle {
            float: Alloc::new(FLOAT_UNIFORM, INT_UNIFORM),
            int: Alloc::new(INT_UNIFORM, INT_UNIFORM + 4),
            bool: Alloc::new(BOOL_UNIFORM, UNIFORM_END),
        }
    }

    /// A geometry shader's space: floats from `first_free`, bools up to b14 (b15 is the
    /// first-invocation flag).
    const fn geometry(first_free: i32) -> AllocBundle {
        AllocBundle {
            float: Alloc::new(first_free, INT_UNIFORM),
            int: Alloc::new(INT_UNIFORM, INT_UNIFORM + 4),
            bool: Alloc::new(BOOL_UNIFORM, UNIFORM_END - 1),
        }
    }

    fn get(&mut self, kind: UniformKind) -> &mut Alloc {
        match kind {
            UniformKind::Float => &mut self.float,
            UniformKind::Int => &mut self.int,
            UniformKind::Bool => &mut self.bool,
        }
    }
}

/// An open block.
#[derive(Clone, Debug)]
enum Block {
    Proc { name: String },
    For,
    If { else_start: Option<usize> },
    ConstArray,
}

#[derive(Clone, Debug)]
struct OpenBlock {
    block: Block,
    /// Code position where the block started (the IF/LOOP instruction, or the proc's first word).
    pos: usize,
}

/// An alias: a register with a swizzle and negation applied on use.
#[derive(Clone, Copy, Debug)]
struct Alias {
    reg: i32,
    /// Negation bit (bit 0) and selector (bits 1-8), as in an operand-descriptor source.
    source: u32,
}

/// A parsed operand.
#[derive(Clone, Copy, Debug)]
struct Operand {
    reg: i32,
    /// Negation (bit 0) and selector (bits 1-8).
    source: u32,
    /// Index register: 0 none, 1 a0.x, 2 a0.y, 3 aL.
    index: u32,
}

const IDENTITY_SOURCE: u32 = (Swizzle::IDENTITY.0 as u32) << 1;

/// A register in picajit's unified operand space, by name (`c4`), or `None` past b15.
fn register_name(reg: i32) -> Option<String> {
    match reg {
        0..TEMP => Some(format!("v{reg}")),
        TEMP..FLOAT_UNIFORM => Some(format!("r{}", reg - TEMP)),
        FLOAT_UNIFORM..INT_UNIFORM => Some(format!("c{}", reg - FLOAT_UNIFORM)),
        INT_UNIFORM..0x84 => Some(format!("i{}", reg - INT_UNIFORM)),
        BOOL_UNIFORM..UNIFORM_END => Some(format!("b{}", reg - BOOL_UNIFORM)),
        _ => None,
    }
}

/// An operand as an error names it: the text, and the register when the text is an alias or
/// has an offset (`tint (c4)`).
fn operand_name(span: Span, operand: &Operand) -> String {
    let text = span.text.trim_start_matches('-');
    let text = text.split('.').next().unwrap_or(text);
    match register_name(operand.reg) {
        Some(name) if name != text => format!("{span} ({name})"),
        Some(_) => span.to_string(),
        None => format!("{span} (past the end of its register file)"),
    }
}

/// For an integer or bool uniform: that only flow control reads it.
fn flow_only(operand: &Operand) -> &'static str {
    if (INT_UNIFORM..UNIFORM_END).contains(&operand.reg) {
        "; i0-i3 and b0-b15 are read only by flow control (for, ifu, callu, jmpu)"
    } else {
        ""
    }
}

/// Which operand-descriptor bits an instruction form cares about (`OPDESC_MASK_*`).
const fn opdesc_mask(dest: bool, sources: usize) -> u32 {
    let mut mask = if dest { 0xF } else { 0 };
    let mut n = 0;
    while n < sources {
        mask |= 0x1FF << (4 + 9 * n);
        n += 1;
    }
    mask
}

/// A jump or call waiting for its target.
#[derive(Clone, Debug)]
struct Relocation {
    at: usize,
    name: String,
    location: Location,
}

/// The whole assembler state.
pub struct Assembler {
    /// Automatic padding NOPs (picasso's default; `--no-nop` turns them into warnings).
    auto_nop: bool,
    /// The program words.
    pub code: Vec<u32>,
    /// The source line of each word (a padding NOP has the line of the directive that added it).
    pub origins: Vec<Location>,
    /// Operand descriptors and the bits each one's users care about.
    pub opdescs: Vec<(u32, u32)>,
    /// Descriptors used by MAD/MADI (bit n = descriptor n).
    mad_used: u32,
    /// The vertex shaders' shared uniform table (duplicates included, as picasso keeps them).
    pub global_uniforms: Vec<Uniform>,
    /// Procedures: name → (start, size).
    pub procs: BTreeMap<String, (usize, usize)>,
    /// Every DVLE, in creation order.
    pub dvles: Vec<DvleData>,
    proc_relocations: Vec<Relocation>,
    spaces: [AllocBundle; 2],
    stack: Vec<OpenBlock>,
    last_was_end: bool,
    const_array: Vec<[f32; 4]>,
    const_array_size: Option<usize>,
    const_array_name: String,
    /// Warnings so far.
    pub warnings: Vec<AsmWarning>,
    // Per file:
    labels: HashMap<String, usize>,
    label_relocations: Vec<Relocation>,
    aliases: HashMap<String, Alias>,
    current_dvle: Option<usize>,
    file: String,
    line: usize,
}

type AsmResult<T> = Result<T, AsmError>;

impl Assembler {
    /// A fresh assembler.
    pub fn new(auto_nop: bool) -> Assembler {
        Assembler {
            auto_nop,
            code: Vec::new(),
            origins: Vec::new(),
            opdescs: Vec::new(),
            mad_used: 0,
            global_uniforms: Vec::new(),
            procs: BTreeMap::new(),
            dvles: Vec::new(),
            proc_relocations: Vec::new(),
            spaces: [AllocBundle::vertex(), AllocBundle::vertex()],
            stack: Vec::new(),
            last_was_end: false,
            const_array: Vec::new(),
            const_array_size: None,
            const_array_name: String::new(),
            warnings: Vec::new(),
            labels: HashMap::new(),
            label_relocations: Vec::new(),
            aliases: HashMap::new(),
            current_dvle: None,
            file: String::new(),
            line: 0,
        }
    }

    /// Names register `reg` (a uniform, constant, input or output name) in this file.
    fn define(&mut self, name: impl Into<String>, reg: i32) {
        self.aliases.insert(
            name.into(),
            Alias {
                reg,
                source: IDENTITY_SOURCE,
            },
        );
    }

    fn emit(&mut self, word: u32) {
        self.code.push(word);
        self.origins.push(self.location(1));
    }

    fn location(&self, column: usize) -> Location {
        Location {
            file: self.file.clone(),
            line: self.line,
            column,
        }
    }

    fn error<T>(&self, span: Span, message: impl Into<String>) -> AsmResult<T> {
        Err(AsmError {
            location: self.location(span.column),
            message: message.into(),
        })
    }

    fn warn(&mut self, column: usize, message: impl Into<String>) {
        let location = self.location(column);
        self.warnings.push(AsmWarning {
            location,
            message: message.into(),
        });
    }

    fn dvle(&mut self) -> &mut DvleData {
        let index = match self.current_dvle {
            Some(index) => index,
            None => {
                self.dvles.push(DvleData::new(&self.file));
                self.dvles.len() - 1
            }
        };
        self.current_dvle = Some(index);
        &mut self.dvles[index]
    }

    fn space(&mut self) -> &mut AllocBundle {
        let gsh = self.dvle().uses_gsh_space();
        &mut self.spaces[gsh as usize]
    }

    /// Assembles one file.
    pub fn assemble_file(&mut self, name: &str, source: &str) -> AsmResult<()> {
        self.file = name.to_string();
        self.spaces[0].float.clear_local();
        self.spaces[0].int.clear_local();
        self.spaces[0].bool.clear_local();
        self.labels.clear();
        self.label_relocations.clear();
        self.aliases.clear();
        self.current_dvle = None;

        let mut line_number = 1;
        for raw_line in source.split('\n') {
            self.line = line_number;
            line_number += 1;
            let without_comment = match raw_line.find(';') {
                Some(at) => &raw_line[..at],
                None => raw_line,
            };
            let mut line = Span::line(without_comment).trim();
            // Labels: `name:` (several per line).
            while let Some(colon) = line.text.find(':') {
                let label = line.slice(0, colon);
                if !is_identifier(label.text) || label.text.is_empty() {
                    return self.error(label, format!("invalid label name: {}", label));
                }
                if self
                    .labels
                    .insert(label.text.to_string(), self.code.len())
                    .is_some()
                {
                    return self.error(label, format!("duplicate label: {}", label));
                }
                line = line.from(colon + 1).trim();
            }
            if line.is_empty() {
                continue;
            }
            if let Some(directive) = line.text.strip_prefix('#') {
                // `#line N "file"` (or `# N "file"`): the next line is line N of that file.
                let directive = directive.trim_start();
                let directive = directive.strip_prefix("line").unwrap_or(directive).trim();
                let (number, file) = directive.split_once([' ', '\t']).unwrap_or((directive, ""));
                let Some(number) = parse_integer(number).filter(|&n| n >= 0) else {
                    return self.error(line, format!("invalid #line directive: {}", line));
                };
                line_number = number as usize;
                let file = file.trim();
                if !file.is_empty() {
                    // Every later diagnostic quotes it: escaped, and capped.
                    self.file = excerpt_chars(file.trim_matches('"'), MAX_LINE_FILE_CHARS);
                }
                continue;
            }
            let (command, rest) = match line.text.find([' ', '\t']) {
                Some(at) => (line.slice(0, at), line.from(at + 1).trim()),
                None => (line, line.from(line.text.len())),
            };
            self.command(command, Args::new(rest))?;
        }
        if let Some(open) = self.stack.last() {
            let kind = match open.block {
                Block::Proc { .. } => ".proc",
                Block::For => "for",
                Block::If { .. } => "if",
                Block::ConstArray => ".constfa",
            };
            let column = 1;
            return Err(AsmError {
                location: self.location(column),
                message: format!(
                    "unclosed block(s): a {kind} block is still open at the end of the file"
                ),
            });
        }
        self.fix_labels()
    }

    fn fix_labels(&mut self) -> AsmResult<()> {
        for relocation in std::mem::take(&mut self.label_relocations) {
            let Some(&target) = self.labels.get(&relocation.name) else {
                return Err(AsmError {
                    location: relocation.location,
                    message: format!("label '{}' is undefined", excerpt(&relocation.name)),
                });
            };
            let word = &mut self.code[relocation.at];
            *word = (*word & !(0xFFF << 10)) | ((target as u32 & 0xFFF) << 10);
        }
        Ok(())
    }

    /// After all files: resolve calls and entry points.
    pub fn finish(&mut self) -> AsmResult<()> {
        for relocation in std::mem::take(&mut self.proc_relocations) {
            let Some(&(start, size)) = self.procs.get(&relocation.name) else {
                return Err(AsmError {
                    location: relocation.location,
                    message: format!("procedure '{}' is undefined", excerpt(&relocation.name)),
                });
            };
            if size > 0xFF {
                self.warnings.push(AsmWarning {
                    location: relocation.location.clone(),
                    message: format!(
                        "procedure '{}' has {size} instructions; a call's count field holds 255 at most",
                        excerpt(&relocation.name)
                    ),
                });
            }
            // As picasso: the size is ORed in unmasked (a size above 255 spills into bits 8-9).
            let word = &mut self.code[relocation.at];
            *word = (*word & !0x3F_FFFF) | size as u32 | ((start as u32 & 0xFFF) << 10);
        }
        if self.dvles.iter().all(|d| d.nodvle) {
            return Err(AsmError {
                location: Location {
                    file: self.file.clone(),
                    line: 1,
                    column: 1,
                },
                message: "no DVLEs can be generated from the given input file(s)".to_string(),
            });
        }
        for dvle in self.dvles.iter_mut().filter(|d| !d.nodvle) {
            let Some(&(start, size)) = self.procs.get(&dvle.entrypoint) else {
                return Err(AsmError {
                    location: Location {
                        file: dvle.file.clone(),
                        line: 1,
                        column: 1,
                    },
                    message: format!("entrypoint '{}' is undefined", excerpt(&dvle.entrypoint)),
                });
            };
            dvle.entry = (start, start + size);
        }
        Ok(())
    }

    fn command(&mut self, command: Span, args: Args) -> AsmResult<()> {
        let name = command.text.to_ascii_lowercase();
        if let Some(directive) = name.strip_prefix('.') {
            return self.directive(command, directive, args);
        }
        if self.stack.is_empty() {
            return self.error(command, "instruction outside block");
        }
        self.last_was_end = false;
        if !self.dvle().geometry && self.code.len() > MAX_VERTEX_SHADER_WORDS {
            let size = self.code.len();
            return self.error(
                command,
                format!(
                    "instruction outside vertex shader code memory (max {MAX_VERTEX_SHADER_WORDS} instructions, currently {size})"
                ),
            );
        }
        let mut args = args;
        match name.as_str() {
            "nop" | "end" | "emit" | "break" => {
                self.no_more(&mut args)?;
                let opcode = match name.as_str() {
                    "nop" => 0x21,
                    "end" => 0x22,
                    "emit" => 0x2A,
                    _ => 0x20,
                };
                self.emit(opcode << 26);
                Ok(())
            }
            "add" | "dp3" | "dp4" | "mul" | "max" | "min" => {
                self.format1(command, &name, &mut args, false)
            }
            "dph" | "dphi" | "dst" | "dsti" | "sge" | "sgei" | "slt" | "slti" => {
                self.format1(command, &name, &mut args, true)
            }
            "ex2" | "lg2" | "litp" | "flr" | "rcp" | "rsq" | "mov" => {
                self.format1u(command, &name, &mut args)
            }
            "mova" => self.mova(command, &mut args),
            "cmp" => self.cmp(command, &mut args),
            "mad" | "madi" => self.mad(command, &mut args),
            "call" => self.call(command, &mut args),
            "for" => self.for_loop(command, &mut args),
            "breakc" | "callc" | "ifc" | "jmpc" => self.format2(command, &name, &mut args),
            "callu" | "ifu" | "jmpu" => self.format3(command, &name, &mut args),
            "setemit" => self.setemit(command, &mut args),
            _ => self.error(command, format!("invalid instruction: {}", command)),
        }
    }

    fn next<'a>(&self, args: &mut Args<'a>, at: Span) -> AsmResult<Span<'a>> {
        match args.comma() {
            Some(arg) => Ok(arg),
            None => self.error(
                Span {
                    text: "",
                    column: at.column + at.text.len(),
                },
                "missing parameter",
            ),
        }
    }

    fn next_space<'a>(&self, args: &mut Args<'a>, at: Span) -> AsmResult<Span<'a>> {
        match args.space() {
            Some(arg) => Ok(arg),
            None => self.error(
                Span {
                    text: "",
                    column: at.column + at.text.len(),
                },
                "missing parameter",
            ),
        }
    }

    fn no_more(&self, args: &mut Args) -> AsmResult<()> {
        match args.comma() {
            Some(extra) => self.error(extra, "too many parameters"),
            None => Ok(()),
        }
    }
}
