//! The assembler state machine: one pass over each file's lines, then the relocations.
//!
//! It follows picasso 2.7's observable behaviour (what it accepts, how it allocates operand
//! descriptors, uniforms and constants, where it pads with NOPs) so that the same source gives
//! the same SHBIN bytes; the deliberate differences are listed in the module docs of
//! [`crate::asm`].

use std::collections::{BTreeMap, HashMap};

use super::error::{AsmError, AsmWarning, Location};
use super::text::{
    Args, Span, atoi, excerpt, excerpt_chars, is_identifier, parse_float, parse_integer,
};
use crate::isa::{self, Swizzle};

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

    // ---------------------------------------------------------------- operands

    /// Parses a register operand: `-name[index+offset].swizzle`, an alias or a register.
    fn operand(&mut self, span: Span, allow_index: bool) -> AsmResult<Operand> {
        let mut text = span;
        let mut source = IDENTITY_SOURCE;
        if let Some(rest) = text.text.strip_prefix('-') {
            text = text.slice(1, 1 + rest.len());
            source |= 1;
        }
        let mut offset = 0;
        let mut index = 0;
        let mut name = text;
        let mut after = None;
        if let Some(open) = text.text.find('[') {
            let Some(close) = text.text[open..].find(']').map(|c| c + open) else {
                return self.error(span, format!("missing closing bracket: {}", span));
            };
            name = text.slice(0, open);
            after = Some(text.from(close + 1));
            let inside = text.slice(open + 1, close).trim();
            let (register, number) = match inside.text.split_once('+') {
                Some((register, number)) => (Some(register.trim()), number.trim()),
                None if index_register(inside.text) > 0 => (Some(inside.text), ""),
                None => (None, inside.text),
            };
            if let Some(register) = register {
                if !allow_index {
                    return self.error(
                        inside,
                        format!("index register not allowed here: {}", inside),
                    );
                }
                index = index_register(register);
                if index == 0 {
                    return self.error(
                        inside,
                        format!("invalid index register: {}", excerpt(register)),
                    );
                }
            }
            if !number.is_empty() {
                match number.parse::<i32>() {
                    Ok(n) if n >= 0 => offset = n,
                    _ => {
                        return self.error(
                            inside,
                            format!("invalid register offset: {}", excerpt(number)),
                        );
                    }
                }
            }
        }
        // The swizzle follows the first '.' after the brackets (or in the name).
        let swizzle_text = match after {
            None => name.text.find('.').map(|dot| {
                let swizzle = name.from(dot + 1);
                name = name.slice(0, dot);
                swizzle
            }),
            Some(after) => match after.text.find('.') {
                Some(dot) if after.text[..dot].trim().is_empty() => Some(after.from(dot + 1)),
                None if after.text.trim().is_empty() => None,
                _ => {
                    return self.error(after, format!("garbage after the register: {}", after));
                }
            },
        };
        if let Some(swizzle) = swizzle_text {
            match parse_swizzle(swizzle.text) {
                Some(selector) => source = (selector << 1) | (source & 1),
                None => {
                    return self.error(swizzle, format!("invalid swizzling mask: {}", swizzle));
                }
            }
        }
        if let Some(alias) = self.aliases.get(name.text).copied() {
            let negate = (source ^ alias.source) & 1;
            let user = (source >> 1) as u8;
            let base = Swizzle((alias.source >> 1) as u8);
            let composed = Swizzle::from_components(std::array::from_fn(|lane| {
                base.component(Swizzle(user).component(lane))
            }));
            return Ok(Operand {
                reg: alias.reg + offset,
                source: negate | ((composed.0 as u32) << 1),
                index,
            });
        }
        let bytes = name.text.as_bytes();
        let valid_prefix =
            bytes.len() >= 2 && b"ovrcib".contains(&bytes[0]) && bytes[1].is_ascii_digit();
        let number = if valid_prefix {
            name.text[1..].parse::<i32>().ok().filter(|n| *n <= 255)
        } else {
            None
        };
        let Some(number) = number else {
            return self.error(name, format!("invalid register: {}", name));
        };
        let reg = match bytes[0] {
            b'o' => {
                if number >= self.dvle().max_output() {
                    return self.error(name, format!("invalid output register: {}", name));
                }
                number
            }
            b'v' if number < 16 => number,
            b'r' if number < 16 => TEMP + number,
            b'c' if number < 96 => FLOAT_UNIFORM + number,
            b'i' if number < 4 => INT_UNIFORM + number,
            b'b' if number < 16 => BOOL_UNIFORM + number,
            kind => {
                let what = match kind {
                    b'v' => "input",
                    b'r' => "temporary",
                    b'c' => "floating-point vector uniform",
                    b'i' => "integer vector uniform",
                    _ => "boolean uniform",
                };
                return self.error(name, format!("invalid {what} register: {}", name));
            }
        };
        if index != 0 && !(FLOAT_UNIFORM..INT_UNIFORM).contains(&reg) {
            return self.error(
                span,
                "index register not allowed with this kind of register",
            );
        }
        Ok(Operand {
            reg: reg + offset,
            source,
            index,
        })
    }

    /// A destination register and its write mask (opdesc bit order: x = bit 3).
    fn destination(&mut self, span: Span) -> AsmResult<(i32, u32)> {
        let operand = self.operand(span, false)?;
        if !(0..TEMP + 16).contains(&operand.reg) {
            return self.error(span, format!("invalid destination register: {}", span));
        }
        Ok((
            operand.reg,
            self.mask_from_source(operand.source, true, span.column),
        ))
    }

    /// The component mask a swizzle names. Warns when the letters are not in x, y, z, w order
    /// (a destination mask cannot reorder).
    fn mask_from_source(&mut self, source: u32, reverse: bool, column: usize) -> u32 {
        let swizzle = Swizzle((source >> 1) as u8);
        let components: [usize; 4] = std::array::from_fn(|lane| swizzle.component(lane));
        if components.windows(2).any(|pair| pair[0] > pair[1]) {
            self.warn(
                column,
                "arbitrary swizzling has no effect for destination mask",
            );
        }
        components
            .iter()
            .fold(0, |mask, &c| mask | 1 << if reverse { 3 - c } else { c })
    }

    /// A source in a wide (7-bit) slot: v0-v15, r0-r15 or c0-c95.
    fn wide(&self, span: Span, operand: &Operand, n: usize) -> AsmResult<()> {
        if (0..INT_UNIFORM).contains(&operand.reg) {
            Ok(())
        } else {
            self.error(
                span,
                format!(
                    "invalid source{n} register: {}: source{n} accepts v0-v15, r0-r15 and c0-c95{}",
                    operand_name(span, operand),
                    flow_only(operand)
                ),
            )
        }
    }

    /// A source in a narrow (5-bit) slot: v0-v15 or r0-r15. `other_uniform` says whether the
    /// instruction's wide source is a uniform already; `advice` says where a uniform goes
    /// instead (`; ...`).
    fn narrow(
        &self,
        span: Span,
        operand: &Operand,
        n: usize,
        other_uniform: bool,
        advice: &str,
    ) -> AsmResult<()> {
        if !(0..FLOAT_UNIFORM).contains(&operand.reg) {
            let why = if operand.reg >= INT_UNIFORM {
                flow_only(operand).to_string()
            } else if other_uniform {
                "; an instruction reads at most one uniform (c0-c95): copy the other into a \
                 temporary first (mov r0, ...)"
                    .to_string()
            } else {
                advice.to_string()
            };
            return self.error(
                span,
                format!(
                    "invalid source{n} register: {}: source{n} accepts v0-v15 and r0-r15{why}",
                    operand_name(span, operand)
                ),
            );
        }
        if operand.index != 0 {
            return self.error(
                span,
                format!(
                    "index register not allowed in source{n}: only the uniform (c0-c95) operand can be indexed"
                ),
            );
        }
        Ok(())
    }

    fn different_inputs(&self, at: Span, regs: &[i32]) -> AsmResult<()> {
        let inputs: Vec<i32> = regs.iter().copied().filter(|&r| r < TEMP).collect();
        if inputs.windows(2).any(|w| w[0] != w[1]) || (inputs.len() == 3 && inputs[0] != inputs[2])
        {
            return self.error(
                at,
                "source operands must be different input registers (v0..v15)",
            );
        }
        Ok(())
    }

    // ---------------------------------------------------------------- operand descriptors

    /// Finds a compatible descriptor (equal on the bits both users care about) or appends one.
    fn opdesc(&mut self, at: Span, opcode: u32, desc: u32, mask: u32) -> AsmResult<u32> {
        let mask = mask & !unused_selector_bits(opcode, desc);
        for (index, (existing, existing_mask)) in self.opdescs.iter_mut().enumerate() {
            let common = mask & *existing_mask;
            if desc & common == *existing & common {
                *existing = (*existing & !mask) | (desc & mask);
                *existing_mask |= mask;
                return Ok(index as u32);
            }
        }
        if self.opdescs.len() == isa::OPDESC_COUNT {
            return self.error(
                at,
                format!(
                    "too many operand descriptors (limit is {})",
                    isa::OPDESC_COUNT
                ),
            );
        }
        self.opdescs.push((desc, mask));
        Ok(self.opdescs.len() as u32 - 1)
    }

    /// MAD/MADI can only address descriptors 0-31: move a higher one into the lowest slot no
    /// MAD uses yet, renumbering the format-1 instructions that used either slot.
    fn mad_opdesc(&mut self, at: Span, index: u32) -> AsmResult<u32> {
        let index = if index >= isa::MAD_OPDESC_LIMIT as u32 {
            let Some(free) = (0..32).find(|slot| self.mad_used & (1 << slot) == 0) else {
                return self.error(at, "opdesc allocation error");
            };
            self.opdescs.swap(free as usize, index as usize);
            for word in &mut self.code {
                let opcode = *word >> 26;
                if opcode < 0x20 || opcode & !1 == 0x2E {
                    let current = *word & 0x7F;
                    let renumbered = if current == free {
                        index
                    } else if current == index {
                        free
                    } else {
                        current
                    };
                    *word = (*word & !0x7F) | renumbered;
                }
            }
            free
        } else {
            index
        };
        self.mad_used |= 1 << index;
        Ok(index)
    }

    // ---------------------------------------------------------------- instructions

    fn format1(
        &mut self,
        command: Span,
        name: &str,
        args: &mut Args,
        invertible: bool,
    ) -> AsmResult<()> {
        let dest_text = self.next(args, command)?;
        let src1_text = self.next(args, dest_text)?;
        let src2_text = self.next(args, src1_text)?;
        self.no_more(args)?;
        let (dest, dest_mask) = self.destination(dest_text)?;
        let src1 = self.operand(src1_text, true)?;
        let src2 = self.operand(src2_text, true)?;
        let base_name = name.trim_end_matches('i');
        let base = opcode_of(base_name);
        let inverted = invertible && src1.reg < FLOAT_UNIFORM && src2.reg >= FLOAT_UNIFORM;
        let uniform1 = src1.reg >= FLOAT_UNIFORM;
        if inverted {
            self.narrow(src1_text, &src1, 1, true, "")?;
            self.wide(src2_text, &src2, 2)?;
        } else {
            self.wide(src1_text, &src1, 1)?;
            let advice = format!(
                "; a uniform (c0-c95) goes in source1 ({name} has no inverted form, and its \
                 operands commute): swap the operands"
            );
            self.narrow(src2_text, &src2, 2, uniform1, &advice)?;
        }
        self.different_inputs(command, &[src1.reg, src2.reg])?;
        let desc = dest_mask | src1.source << 4 | src2.source << 13;
        let index = self.opdesc(command, base, desc, opdesc_mask(true, 2))?;
        let word = if inverted {
            opcode_of(&format!("{base_name}i")) << 26
                | index
                | (src2.reg as u32) << 7
                | (src1.reg as u32) << 14
                | src2.index << 19
                | (dest as u32) << 21
        } else {
            base << 26
                | index
                | (src2.reg as u32) << 7
                | (src1.reg as u32) << 12
                | src1.index << 19
                | (dest as u32) << 21
        };
        self.emit(word);
        Ok(())
    }

    fn format1u(&mut self, command: Span, name: &str, args: &mut Args) -> AsmResult<()> {
        let dest_text = self.next(args, command)?;
        let src1_text = self.next(args, dest_text)?;
        self.no_more(args)?;
        let (dest, dest_mask) = self.destination(dest_text)?;
        let src1 = self.operand(src1_text, true)?;
        self.wide(src1_text, &src1, 1)?;
        let opcode = opcode_of(name);
        let index = self.opdesc(
            command,
            opcode,
            dest_mask | src1.source << 4,
            opdesc_mask(true, 1),
        )?;
        self.emit(
            opcode << 26 | index | (src1.reg as u32) << 12 | src1.index << 19 | (dest as u32) << 21,
        );
        Ok(())
    }

    fn mova(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let target = self.next(args, command)?;
        let src1_text = self.next(args, target)?;
        self.no_more(args)?;
        let mask = match target.text.to_ascii_lowercase().as_str() {
            "a0" | "a0.x" => 0b1000,
            "a1" | "a0.y" => 0b0100,
            "a01" | "a0.xy" => 0b1100,
            _ => {
                return self.error(
                    target,
                    format!("invalid destination register for mova: {}", target),
                );
            }
        };
        let src1 = self.operand(src1_text, true)?;
        self.wide(src1_text, &src1, 1)?;
        let index = self.opdesc(command, 0x12, mask | src1.source << 4, opdesc_mask(true, 1))?;
        self.emit(0x12 << 26 | index | (src1.reg as u32) << 12 | src1.index << 19);
        Ok(())
    }

    fn cmp(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let src1_text = self.next(args, command)?;
        let x_text = self.next(args, src1_text)?;
        let y_text = self.next(args, x_text)?;
        let src2_text = self.next(args, y_text)?;
        self.no_more(args)?;
        let src1 = self.operand(src1_text, true)?;
        self.wide(src1_text, &src1, 1)?;
        let cmp_x = self.compare_op(x_text)?;
        let cmp_y = self.compare_op(y_text)?;
        let src2 = self.operand(src2_text, false)?;
        self.narrow(
            src2_text,
            &src2,
            2,
            src1.reg >= FLOAT_UNIFORM,
            "; a uniform (c0-c95) goes in source1: swap the operands and mirror the comparisons \
             (lt and gt, le and ge trade places; eq and ne stay)",
        )?;
        let index = self.opdesc(
            command,
            0x2E,
            src1.source << 4 | src2.source << 13,
            opdesc_mask(false, 2),
        )?;
        self.emit(
            0x2E << 26
                | index
                | (src2.reg as u32) << 7
                | (src1.reg as u32) << 12
                | src1.index << 19
                | cmp_y << 21
                | cmp_x << 24,
        );
        Ok(())
    }

    fn compare_op(&self, span: Span) -> AsmResult<u32> {
        match span.text.to_ascii_lowercase().as_str() {
            "eq" => Ok(0),
            "ne" => Ok(1),
            "lt" => Ok(2),
            "le" => Ok(3),
            "gt" => Ok(4),
            "ge" => Ok(5),
            _ => self.error(span, format!("invalid conditional operator: {}", span)),
        }
    }

    fn mad(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let dest_text = self.next(args, command)?;
        let src1_text = self.next(args, dest_text)?;
        let src2_text = self.next(args, src1_text)?;
        let src3_text = self.next(args, src2_text)?;
        self.no_more(args)?;
        let (dest, dest_mask) = self.destination(dest_text)?;
        let src1 = self.operand(src1_text, false)?;
        self.narrow(
            src1_text,
            &src1,
            1,
            false,
            "; a uniform (c0-c95) goes in source2 or source3 (mad d, a, b, c computes a * b + c: \
             swap a and b)",
        )?;
        let src2 = self.operand(src2_text, true)?;
        let src3 = self.operand(src3_text, true)?;
        let inverted = src2.reg < FLOAT_UNIFORM
            && (src3.reg >= FLOAT_UNIFORM || (src3.index != 0 && src2.index == 0));
        if inverted {
            self.narrow(src2_text, &src2, 2, true, "")?;
            self.wide(src3_text, &src3, 3)?;
        } else {
            self.wide(src2_text, &src2, 2)?;
            self.narrow(src3_text, &src3, 3, src2.reg >= FLOAT_UNIFORM, "")?;
        }
        self.different_inputs(command, &[src1.reg, src2.reg, src3.reg])?;
        let desc = dest_mask | src1.source << 4 | src2.source << 13 | src3.source << 22;
        let found = self.opdesc(command, 0x38, desc, opdesc_mask(true, 3))?;
        let index = self.mad_opdesc(command, found)?;
        let word = if inverted {
            0x30 << 26
                | index
                | (src3.reg as u32) << 5
                | (src2.reg as u32) << 12
                | (src1.reg as u32) << 17
                | src3.index << 22
                | (dest as u32) << 24
        } else {
            0x38 << 26
                | index
                | (src3.reg as u32) << 5
                | (src2.reg as u32) << 10
                | (src1.reg as u32) << 17
                | src2.index << 22
                | (dest as u32) << 24
        };
        self.emit(word);
        Ok(())
    }

    fn target<'a>(&self, span: Span<'a>) -> AsmResult<Span<'a>> {
        if span.text.is_empty() || !is_identifier(span.text) {
            return self.error(span, format!("invalid target: {}", span));
        }
        Ok(span)
    }

    fn relocation(&self, span: Span) -> Relocation {
        Relocation {
            at: self.code.len(),
            name: span.text.to_string(),
            location: self.location(span.column),
        }
    }

    fn call(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let name = self.next(args, command)?;
        self.no_more(args)?;
        let name = self.target(name)?;
        self.proc_relocations.push(self.relocation(name));
        self.emit(0x24 << 26);
        Ok(())
    }

    fn open(&mut self, at: Span, block: Block) -> AsmResult<()> {
        if self.stack.len() == MAX_NESTING {
            return self.error(at, "too many nested blocks");
        }
        self.stack.push(OpenBlock {
            block,
            pos: self.code.len(),
        });
        Ok(())
    }

    fn for_loop(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let reg_text = self.next(args, command)?;
        self.no_more(args)?;
        let reg = self.operand(reg_text, false)?;
        if !(INT_UNIFORM..BOOL_UNIFORM).contains(&reg.reg) {
            return self.error(
                reg_text,
                format!("invalid integer vector uniform: {}", reg_text),
            );
        }
        self.open(command, Block::For)?;
        self.emit(0x29 << 26 | ((reg.reg - INT_UNIFORM) as u32) << 22);
        Ok(())
    }

    /// A condition: `cmp.x`, `!cmp.y`, `a && b`, `a || b` (also `&`, `|`). Returns the bits
    /// 22-25 of a format-2 word.
    fn condition(&self, span: Span) -> AsmResult<u32> {
        let mut flags = 1 << 24 | 1 << 25;
        let flag = |text: Span, flags: &mut u32| -> AsmResult<u32> {
            let trimmed = text.trim();
            let bangs = trimmed.text.len() - trimmed.text.trim_start_matches('!').len();
            let name = trimmed.text[bangs..].to_ascii_lowercase();
            let negation = (bangs & 1) as u32;
            match name.as_str() {
                "cmp.x" => {
                    *flags ^= negation << 25;
                    Ok(0)
                }
                "cmp.y" => {
                    *flags ^= negation << 24;
                    Ok(1)
                }
                _ => self.error(trimmed, format!("invalid condition register: {}", trimmed)),
            }
        };
        match span.text.find(['&', '|']) {
            Some(at) => {
                let kind = span.text.as_bytes()[at];
                let second_start = if span.text.as_bytes().get(at + 1) == Some(&kind) {
                    at + 2
                } else {
                    at + 1
                };
                let second = flag(span.from(second_start), &mut flags)?;
                let first = flag(span.slice(0, at), &mut flags)?;
                if first == second {
                    return self.error(span, "condition register checked twice");
                }
                if kind == b'&' {
                    flags |= 1 << 22;
                }
            }
            None => {
                let which = flag(span, &mut flags)?;
                flags |= (which + 2) << 22;
            }
        }
        Ok(flags)
    }

    fn format2(&mut self, command: Span, name: &str, args: &mut Args) -> AsmResult<()> {
        let condition_text = self.next(args, command)?;
        let flags = self.condition(condition_text)?;
        let opcode = opcode_of(name);
        match name {
            "breakc" => self.no_more(args)?,
            "callc" | "jmpc" => {
                let target = self.next(args, condition_text)?;
                self.no_more(args)?;
                let target = self.target(target)?;
                let relocation = self.relocation(target);
                if name == "callc" {
                    self.proc_relocations.push(relocation);
                } else {
                    self.label_relocations.push(relocation);
                }
            }
            _ => {
                self.no_more(args)?;
                self.open(command, Block::If { else_start: None })?;
            }
        }
        self.emit(opcode << 26 | flags);
        Ok(())
    }

    fn format3(&mut self, command: Span, name: &str, args: &mut Args) -> AsmResult<()> {
        let mut reg_text = self.next(args, command)?;
        let mut negation = 0;
        if let Some(rest) = reg_text.text.strip_prefix('!') {
            if name != "jmpu" {
                let what = if name == "callu" { "CALLU" } else { "IFU" };
                return self.error(
                    reg_text,
                    format!("Inverting the condition is not supported by {what}"),
                );
            }
            negation = 1;
            reg_text = reg_text.slice(1, 1 + rest.len());
        }
        let reg = self.operand(reg_text, false)?;
        if !(BOOL_UNIFORM..UNIFORM_END).contains(&reg.reg) {
            return self.error(reg_text, format!("invalid boolean uniform: {}", reg_text));
        }
        if name == "ifu" {
            self.no_more(args)?;
            self.open(command, Block::If { else_start: None })?;
        } else {
            let target = self.next(args, reg_text)?;
            self.no_more(args)?;
            let target = self.target(target)?;
            let relocation = self.relocation(target);
            if name == "callu" {
                self.proc_relocations.push(relocation);
            } else {
                self.label_relocations.push(relocation);
            }
        }
        self.emit(opcode_of(name) << 26 | ((reg.reg - BOOL_UNIFORM) as u32) << 22 | negation);
        Ok(())
    }

    fn setemit(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let vertex_text = self.next(args, command)?;
        let flags_text = args.comma();
        self.no_more(args)?;
        let vertex = match parse_integer(vertex_text.text) {
            Some(v) if (0..=2).contains(&v) => v as u32,
            Some(v) => return self.error(vertex_text, format!("Value out of range (0..2): {v}")),
            None => return self.error(vertex_text, format!("Invalid value: {}", vertex_text)),
        };
        let (mut primitive, mut invert) = (false, false);
        if let Some(flags) = flags_text {
            let mut words = Args::new(flags);
            while let Some(flag) = words.space() {
                match flag.text.to_ascii_lowercase().as_str() {
                    "prim" | "primitive" => primitive = true,
                    "inv" | "invert" => invert = true,
                    _ => return self.error(flag, format!("unknown setemit flag: {}", flag)),
                }
            }
        }
        let dvle = self.dvle();
        if !dvle.geometry {
            dvle.geometry = true;
            dvle.compat_geometry = true;
        }
        self.emit(0x2B << 26 | (invert as u32) << 22 | (primitive as u32) << 23 | vertex << 24);
        Ok(())
    }

    // ---------------------------------------------------------------- directives

    fn directive(&mut self, command: Span, name: &str, mut args: Args) -> AsmResult<()> {
        let args = &mut args;
        match name {
            "proc" => self.dir_proc(command, args),
            "else" => self.dir_else(command, args),
            "end" => self.dir_end(command, args),
            "alias" => self.dir_alias(command, args),
            "fvec" => self.dir_uniform(command, args, UniformKind::Float),
            "ivec" => self.dir_uniform(command, args, UniformKind::Int),
            "bool" => self.dir_uniform(command, args, UniformKind::Bool),
            "constf" => self.dir_const(command, args, UniformKind::Float),
            "consti" => self.dir_const(command, args, UniformKind::Int),
            "constfa" => self.dir_constfa(command, args),
            "in" => self.dir_in(command, args),
            "out" => self.dir_out(command, args),
            "entry" => {
                let entry = self.next_space(args, command)?;
                self.no_more(args)?;
                if !is_identifier(entry.text) {
                    return self.error(entry, format!("invalid identifier: {}", entry));
                }
                self.dvle().entrypoint = entry.text.to_string();
                Ok(())
            }
            "nodvle" => {
                self.no_more(args)?;
                self.dvle().nodvle = true;
                Ok(())
            }
            "gsh" => self.dir_gsh(command, args),
            "setf" => self.dir_set(command, args, UniformKind::Float),
            "seti" => self.dir_set(command, args, UniformKind::Int),
            "setb" => self.dir_setb(command, args),
            _ => self.error(command, format!("invalid instruction: {}", command)),
        }
    }

    fn dir_proc(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let name = self.next(args, command)?;
        self.no_more(args)?;
        if let Some(&(start, _)) = self.procs.get(name.text) {
            // The files of one SHBIN share their procedures (picasso's rule): two files that
            // each define `main` are one program with two `main`s, not two programs.
            let first = self
                .origins
                .get(start)
                .map_or_else(String::new, |at| format!(", its code starts at {at}"));
            return self.error(
                name,
                format!(
                    "proc already exists: {name}{first} (the files of one SHBIN share their \
                     procedures: give each its own name)"
                ),
            );
        }
        self.open(
            command,
            Block::Proc {
                name: name.text.to_string(),
            },
        )
    }

    fn pad(&mut self, column: usize) {
        if self.auto_nop {
            self.emit(0x21 << 26);
        } else {
            self.warn(column, "a padding NOP is required here");
        }
    }

    /// Whether the last instruction is one that may not end a block.
    fn ends_badly(&self, for_block: bool) -> bool {
        let Some(&last) = self.code.last() else {
            return false;
        };
        let opcode = last >> 26;
        matches!(opcode, 0x2C | 0x2D | 0x24 | 0x25 | 0x26)
            || (for_block && matches!(opcode, 0x20 | 0x23))
    }

    fn dir_else(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        self.no_more(args)?;
        let Some(open) = self.stack.last().cloned() else {
            return self.error(command, ".else with unmatched IF");
        };
        match open.block {
            Block::If { else_start: None } => {}
            Block::If {
                else_start: Some(_),
            } => return self.error(command, "spurious .else"),
            _ => return self.error(command, ".else with unmatched IF"),
        }
        if self.last_was_end {
            self.pad(command.column);
            self.last_was_end = false;
        } else if self.ends_badly(false) || self.code.len() - open.pos < 2 {
            self.pad(command.column);
        }
        let here = self.code.len();
        if let Some(top) = self.stack.last_mut() {
            top.block = Block::If {
                else_start: Some(here),
            };
        }
        let word = &mut self.code[open.pos];
        *word = (*word & !(0xFFF << 10)) | ((here as u32 & 0xFFF) << 10);
        Ok(())
    }

    fn dir_end(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        self.no_more(args)?;
        let Some(open) = self.stack.pop() else {
            return self.error(command, ".end with unmatched block");
        };
        let is_array = matches!(open.block, Block::ConstArray);
        if !is_array && self.last_was_end {
            self.pad(command.column);
            self.last_was_end = false;
        } else if !is_array && !self.code.is_empty() {
            let minimum = if matches!(open.block, Block::Proc { .. }) {
                1
            } else {
                2
            };
            if self.ends_badly(matches!(open.block, Block::For))
                || self.code.len() - open.pos < minimum
            {
                self.pad(command.column);
            }
        }
        let here = self.code.len();
        match open.block {
            Block::Proc { name } => {
                self.procs.insert(name, (open.pos, here - open.pos));
            }
            Block::For => {
                let word = &mut self.code[open.pos];
                *word = (*word & !(0xFFF << 10)) | (((here as u32).wrapping_sub(1) & 0xFFF) << 10);
                self.last_was_end = true;
            }
            Block::If { else_start } => {
                let word = &mut self.code[open.pos];
                match else_start {
                    None => *word = (*word & !(0xFFF << 10)) | ((here as u32 & 0xFFF) << 10),
                    // As picasso: the else length is ORed in unmasked.
                    Some(start) => *word = (*word & !0x3FF) | (here - start) as u32,
                }
                if let Some(start) = else_start
                    && here - start > 0xFF
                {
                    self.warn(
                        command.column,
                        "else block longer than 255 instructions: its count field overflows",
                    );
                }
                self.last_was_end = true;
            }
            Block::ConstArray => self.finish_const_array(command)?,
        }
        Ok(())
    }

    fn finish_const_array(&mut self, command: Span) -> AsmResult<()> {
        let name = std::mem::take(&mut self.const_array_name);
        if self.aliases.contains_key(&name) {
            return self.error(
                command,
                format!("identifier already used: {}", excerpt(&name)),
            );
        }
        let mut values = std::mem::take(&mut self.const_array);
        if let Some(size) = self.const_array_size.take() {
            values.resize(values.len().max(size), [0.0; 4]);
        }
        if values.is_empty() {
            return self.error(
                command,
                format!(
                    "no elements have been specified in array '{}'",
                    excerpt(&name)
                ),
            );
        }
        let Some(pos) = self.space().float.local(values.len() as i32) else {
            return self.error(
                command,
                format!(
                    "not enough space for local constant array '{}'",
                    excerpt(&name)
                ),
            );
        };
        let dvle = self.dvle();
        if dvle.constants.len() + values.len() > MAX_CONSTANTS {
            return self.error(command, "too many local constants");
        }
        for (i, value) in values.into_iter().enumerate() {
            dvle.constants.push(Constant {
                reg: pos + i as i32,
                value: ConstantValue::Float(value),
            });
        }
        self.define(name, pos);
        Ok(())
    }

    fn dir_alias(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let name = self.next_space(args, command)?;
        let reg_text = self.next_space(args, name)?;
        self.no_more(args)?;
        if !is_identifier(name.text) || name.text.is_empty() {
            return self.error(name, format!("invalid alias name: {}", name));
        }
        let bytes = name.text.as_bytes();
        if bytes.len() >= 2 && b"ovrcibOVRCIB".contains(&bytes[0]) && bytes[1].is_ascii_digit() {
            return self.error(name, "cannot redefine register");
        }
        let reg = self.operand(reg_text, false)?;
        if self.aliases.contains_key(name.text) {
            return self.error(name, format!("identifier already used: {}", name));
        }
        self.aliases.insert(
            name.text.to_string(),
            Alias {
                reg: reg.reg,
                source: reg.source,
            },
        );
        Ok(())
    }

    fn dir_uniform(&mut self, command: Span, args: &mut Args, kind: UniformKind) -> AsmResult<()> {
        let shared = !self.dvle().uses_gsh_space();
        while let Some(arg) = args.comma() {
            let (name, size) = match arg.text.find('[') {
                Some(open) => {
                    let Some(close) = arg.text[open..].find(']').map(|c| c + open) else {
                        return self.error(arg, format!("missing closing bracket: {}", arg));
                    };
                    let size_text = arg.slice(open + 1, close).trim();
                    let size = atoi(size_text.text);
                    if size < 1 {
                        return self.error(size_text, format!("invalid uniform size: {}", arg));
                    }
                    (arg.slice(0, open).trim(), size as i32)
                }
                None => (arg, 1),
            };
            if name.text.is_empty() || !is_identifier(name.text) {
                return self.error(name, format!("invalid uniform name: {}", name));
            }
            if self.aliases.contains_key(name.text) {
                return self.error(name, format!("identifier already used: {}", name));
            }
            let mut pos = None;
            if shared
                && let Some(existing) = self.global_uniforms.iter().find(|u| u.name == name.text)
            {
                if existing.kind != kind {
                    return self.error(name, format!("mismatched uniform type: {}", name));
                }
                if existing.size != size {
                    return self.error(
                        name,
                        format!(
                            "uniform '{}' previously declared as having size {}",
                            name.text, existing.size
                        ),
                    );
                }
                pos = Some(existing.pos);
            }
            let pos = match pos {
                Some(pos) => pos,
                None => {
                    if self.global_uniforms.len() == MAX_UNIFORMS {
                        return self.error(name, format!("too many global uniforms: {}", name));
                    }
                    match self.space().get(kind).global(size) {
                        Some(pos) => pos,
                        None => {
                            return self.error(
                                name,
                                format!("not enough uniform space: {}[{size}]", name),
                            );
                        }
                    }
                }
            };
            let uniform = Uniform {
                name: name.text.to_string(),
                pos,
                size,
                kind,
            };
            if shared {
                self.global_uniforms.push(uniform.clone());
            }
            if !name.text.starts_with('_') {
                let dvle = self.dvle();
                if dvle.uniforms.len() == MAX_UNIFORMS {
                    return self.error(name, format!("too many referenced uniforms: {}", name));
                }
                dvle.uniforms.push(uniform);
            }
            self.define(name.text.to_string(), pos);
        }
        let _ = command;
        Ok(())
    }

    /// `(x, y, z, w)` after a name: the four texts.
    fn four_values<'a>(&self, args: &mut Args<'a>, at: Span) -> AsmResult<[Span<'a>; 4]> {
        let a = self.next(args, at)?;
        let b = self.next(args, a)?;
        let c = self.next(args, b)?;
        let rest = args.rest();
        let Some(close) = rest.text.find(')') else {
            return self.error(rest, "invalid syntax: missing ')'");
        };
        let d = rest.slice(0, close).trim();
        let trailing = rest.from(close + 1).trim();
        if !trailing.is_empty() {
            return self.error(trailing, format!("garbage found: {}", trailing));
        }
        *args = Args::new(rest.from(rest.text.len()));
        Ok([a, b, c, d])
    }

    fn floats(&self, texts: [Span; 4]) -> AsmResult<[f32; 4]> {
        let mut values = [0f32; 4];
        for (value, text) in values.iter_mut().zip(texts) {
            match parse_float(text.text) {
                Some(v) => *value = v as f32,
                None => return self.error(text, format!("invalid number: {}", text)),
            }
        }
        Ok(values)
    }

    fn ints(&self, texts: [Span; 4]) -> AsmResult<[u8; 4]> {
        let mut values = [0u8; 4];
        for (value, text) in values.iter_mut().zip(texts) {
            match parse_integer(text.text) {
                Some(v) => *value = (v & 0xFF) as u8,
                None => return self.error(text, format!("invalid integer: {}", text)),
            }
        }
        Ok(values)
    }

    fn dir_const(&mut self, command: Span, args: &mut Args, kind: UniformKind) -> AsmResult<()> {
        let Some(name) = args.paren() else {
            return self.error(command, "missing parameter");
        };
        let texts = self.four_values(args, name)?;
        if self.aliases.contains_key(name.text) {
            return self.error(name, format!("identifier already used: {}", name));
        }
        if name.text.is_empty() || !is_identifier(name.text) {
            return self.error(name, format!("invalid identifier: {}", name));
        }
        let value = match kind {
            UniformKind::Float => ConstantValue::Float(self.floats(texts)?),
            _ => ConstantValue::Int(self.ints(texts)?),
        };
        let Some(pos) = self.space().get(kind).local(1) else {
            return self.error(
                name,
                format!("not enough space for local constant '{}'", name),
            );
        };
        let dvle = self.dvle();
        if dvle.constants.len() == MAX_CONSTANTS {
            return self.error(name, "too many local constants");
        }
        dvle.constants.push(Constant { reg: pos, value });
        self.define(name.text.to_string(), pos);
        Ok(())
    }

    fn dir_constfa(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let in_array = matches!(
            self.stack.last(),
            Some(OpenBlock {
                block: Block::ConstArray,
                ..
            })
        );
        if !in_array {
            let declaration = self.next(args, command)?;
            self.no_more(args)?;
            let Some(open) = declaration.text.find('[') else {
                return self.error(
                    declaration,
                    format!("missing opening bracket: {}", declaration),
                );
            };
            let Some(close) = declaration.text[open..].find(']').map(|c| c + open) else {
                return self.error(
                    declaration,
                    format!("missing closing bracket: {}", declaration),
                );
            };
            let trailing = declaration.from(close + 1).trim();
            if !trailing.is_empty() {
                return self.error(trailing, format!("garbage found: {}", trailing));
            }
            let size_text = declaration.slice(open + 1, close).trim();
            self.const_array_size = None;
            if !size_text.is_empty() {
                let size = atoi(size_text.text);
                if size <= 0 {
                    return self.error(size_text, format!("invalid array size: {}", declaration));
                }
                self.const_array_size = Some(size as usize);
            }
            let name = declaration.slice(0, open).trim();
            if name.text.is_empty() || !is_identifier(name.text) {
                return self.error(name, format!("invalid array name: {}", name));
            }
            self.const_array_name = name.text.to_string();
            self.const_array.clear();
            return self.open(command, Block::ConstArray);
        }
        if self.const_array_size == Some(self.const_array.len()) {
            return self.error(
                command,
                format!(
                    "too many elements in the array, expected {}",
                    self.const_array.len()
                ),
            );
        }
        let rest = args.rest().trim();
        let Some(inner) = rest.text.strip_prefix('(') else {
            return self.error(rest, "invalid syntax: expected (x, y, z, w)");
        };
        let mut values = Args::new(rest.slice(1, 1 + inner.len()));
        let texts = self.four_values(&mut values, rest)?;
        let value = self.floats(texts)?;
        self.const_array.push(value);
        Ok(())
    }

    fn dir_set(&mut self, command: Span, args: &mut Args, kind: UniformKind) -> AsmResult<()> {
        let Some(name) = args.paren() else {
            return self.error(command, "missing parameter");
        };
        let texts = self.four_values(args, name)?;
        let reg = self.operand(name, false)?;
        let value = match kind {
            UniformKind::Float => {
                if !(FLOAT_UNIFORM..INT_UNIFORM).contains(&reg.reg) {
                    return self.error(
                        name,
                        format!("invalid floating point vector uniform: {}", name),
                    );
                }
                ConstantValue::Float(self.floats(texts)?)
            }
            _ => {
                if !(INT_UNIFORM..INT_UNIFORM + 4).contains(&reg.reg) {
                    return self.error(name, format!("invalid integer vector uniform: {}", name));
                }
                ConstantValue::Int(self.ints(texts)?)
            }
        };
        let dvle = self.dvle();
        if dvle.constants.len() == MAX_CONSTANTS {
            return self.error(name, "too many local constants");
        }
        dvle.constants.push(Constant {
            reg: reg.reg,
            value,
        });
        Ok(())
    }

    fn dir_setb(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let name = self.next_space(args, command)?;
        let value_text = self.next_space(args, name)?;
        self.no_more(args)?;
        let reg = self.operand(name, false)?;
        if !(BOOL_UNIFORM..UNIFORM_END).contains(&reg.reg) {
            return self.error(name, format!("invalid boolean uniform: {}", name));
        }
        let value = match value_text.text.to_ascii_lowercase().as_str() {
            "true" | "on" | "1" => true,
            "false" | "off" | "0" => false,
            _ => {
                return self.error(value_text, format!("invalid bool value: {}", value_text));
            }
        };
        let dvle = self.dvle();
        if dvle.constants.len() == MAX_CONSTANTS {
            return self.error(name, "too many local constants");
        }
        dvle.constants.push(Constant {
            reg: reg.reg,
            value: ConstantValue::Bool(value),
        });
        Ok(())
    }

    fn dir_in(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let name = self.next_space(args, command)?;
        let reg_text = args.space();
        self.no_more(args)?;
        if name.text.is_empty() || !is_identifier(name.text) {
            return self.error(name, format!("invalid identifier: {}", name));
        }
        if self.aliases.contains_key(name.text) {
            return self.error(name, format!("identifier already used: {}", name));
        }
        let reg = match reg_text {
            Some(text) => {
                let reg = self.operand(text, false)?;
                if !(0..TEMP).contains(&reg.reg) {
                    return self.error(text, format!("invalid input register: {}", text));
                }
                reg.reg
            }
            None => match (0..16).find(|&n| self.dvle().input_mask & (1 << n) == 0) {
                Some(n) => n,
                None => return self.error(name, "too many inputs"),
            },
        };
        let dvle = self.dvle();
        if dvle.uniforms.len() == MAX_UNIFORMS {
            return self.error(name, "too many uniforms in DVLE");
        }
        dvle.input_mask |= 1 << reg;
        dvle.uniforms.push(Uniform {
            name: name.text.to_string(),
            pos: reg,
            size: 1,
            kind: UniformKind::Float,
        });
        self.define(name.text, reg);
        Ok(())
    }

    fn dir_out(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let name = self.next_space(args, command)?;
        let type_text = self.next_space(args, name)?;
        let reg_text = args.space();
        self.no_more(args)?;
        let name = if name.text == "-" {
            None
        } else if name.text.is_empty() || !is_identifier(name.text) {
            return self.error(name, format!("invalid identifier: {}", name));
        } else {
            Some(name)
        };
        let mut register = None;
        let mut source = IDENTITY_SOURCE;
        let mut type_name = type_text;
        if let Some(text) = reg_text {
            let reg = self.operand(text, false)?;
            if !(0..self.dvle().max_output()).contains(&reg.reg) {
                return self.error(text, format!("invalid output register: {}", text));
            }
            register = Some(reg.reg);
            source = reg.source;
        } else if let Some(dot) = type_text.text.find('.') {
            let mask_text = type_text.from(dot + 1);
            type_name = type_text.slice(0, dot);
            match parse_swizzle(mask_text.text) {
                Some(selector) => source = selector << 1,
                None => {
                    return self.error(mask_text, format!("invalid output mask: {}", mask_text));
                }
            }
        }
        let column = reg_text.unwrap_or(type_text).column;
        let mask = self.mask_from_source(source, false, column);
        let Some(semantic) = output_semantic(type_name.text) else {
            return self.error(type_name, format!("invalid output type: {}", type_name));
        };
        let dvle = self.dvle();
        let register = match register {
            Some(reg) => {
                if dvle.output_used & ((mask as u64) << (4 * reg)) != 0 {
                    return self.error(
                        type_text,
                        "this output collides with another one previously defined",
                    );
                }
                Some(reg)
            }
            None => (0..dvle.max_output()).find(|&n| dvle.output_mask & (1 << n) == 0),
        };
        let Some(register) = register.filter(|_| dvle.outputs.len() < MAX_OUTPUTS) else {
            return self.error(type_text, "too many outputs");
        };
        if let Some(name) = name
            && self.aliases.contains_key(name.text)
        {
            return self.error(name, format!("identifier already used: {}", name));
        }
        if register >= 7 && semantic != DUMMY_OUTPUT {
            return self.error(
                type_text,
                format!("this register (o{register}) can only be a dummy output"),
            );
        }
        let dvle = self.dvle();
        dvle.outputs.push((semantic, register as u16, mask as u16));
        dvle.output_mask |= 1 << register;
        dvle.output_used |= (mask as u64) << (4 * register);
        if semantic == DUMMY_OUTPUT && dvle.uses_gsh_space() {
            dvle.merge = true;
        }
        if let Some(name) = name {
            self.define(name.text.to_string(), register);
        }
        Ok(())
    }

    fn dir_gsh(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let Some(mode_text) = args.space() else {
            let dvle = self.dvle();
            dvle.geometry = true;
            dvle.compat_geometry = true;
            return Ok(());
        };
        let dvle = self.dvle();
        if dvle.geometry {
            return self.error(command, ".gsh had already been used");
        }
        if !dvle.constants.is_empty() || !dvle.uniforms.is_empty() || dvle.output_mask != 0 {
            return self.error(
                command,
                ".gsh must be used before any constant, uniform or output is declared",
            );
        }
        let mode = match mode_text.text.to_ascii_lowercase().as_str() {
            "point" => 0,
            "variable" | "subdivision" => 1,
            "fixed" | "particle" => 2,
            _ => {
                return self.error(
                    mode_text,
                    format!("invalid geometry shader mode: {}", mode_text),
                );
            }
        };
        self.dvle().geometry = true;
        self.dvle().gs_type = mode;
        let first_text = self.next_space(args, mode_text)?;
        let first = self.operand(first_text, false)?.reg;
        if !(FLOAT_UNIFORM..INT_UNIFORM).contains(&first) {
            return self.error(
                first_text,
                format!("invalid float uniform register: {}", first_text),
            );
        }
        self.spaces[1] = AllocBundle::geometry(first);
        let count = |this: &Self, text: Span| -> AsmResult<u8> {
            match parse_integer(text.text) {
                Some(n) if (0..=255).contains(&n) => Ok(n as u8),
                Some(n) => this.error(text, format!("Value out of range (0..255): {n}")),
                None => this.error(text, format!("Invalid value: {}", text)),
            }
        };
        match mode {
            0 => self.no_more(args)?,
            1 => {
                let number = self.next_space(args, first_text)?;
                self.no_more(args)?;
                let number = count(self, number)?;
                self.dvle().gs_variable_num = number;
            }
            _ => {
                let start_text = self.next_space(args, first_text)?;
                let number_text = self.next_space(args, start_text)?;
                self.no_more(args)?;
                let start = self.operand(start_text, false)?.reg;
                let number = count(self, number_text)?;
                if !(FLOAT_UNIFORM..INT_UNIFORM).contains(&start) {
                    return self.error(
                        start_text,
                        format!("invalid float uniform register: {}", start_text),
                    );
                }
                if start >= first {
                    return self.error(
                        start_text,
                        format!(
                            "specified location overlaps uniform allocation pool: {}",
                            start_text
                        ),
                    );
                }
                let dvle = self.dvle();
                dvle.gs_fixed_start = (start - FLOAT_UNIFORM) as u8;
                dvle.gs_fixed_num = number;
            }
        }
        Ok(())
    }
}

/// The semantic code of the `dummy` output.
pub const DUMMY_OUTPUT: u16 = 9;

fn output_semantic(name: &str) -> Option<u16> {
    Some(match name.to_ascii_lowercase().as_str() {
        "pos" | "position" => 0,
        "nquat" | "normalquat" => 1,
        "clr" | "color" => 2,
        "tcoord0" | "texcoord0" => 3,
        "tcoord0w" | "texcoord0w" => 4,
        "tcoord1" | "texcoord1" => 5,
        "tcoord2" | "texcoord2" => 6,
        "view" => 8,
        "dummy" => DUMMY_OUTPUT,
        _ => return None,
    })
}

/// `a0`/`a0.x` → 1, `a1`/`a0.y` → 2, `a2`/`lcnt`/`aL` → 3, anything else 0.
fn index_register(name: &str) -> u32 {
    match name.to_ascii_lowercase().as_str() {
        "a0" | "a0.x" => 1,
        "a1" | "a0.y" => 2,
        "a2" | "lcnt" | "al" => 3,
        _ => 0,
    }
}

/// A swizzle of 0-4 letters (`xyzw`, `rgba` or `stpq`); missing lanes repeat the last letter
/// (none at all reads as `x`). Returns the 8-bit selector.
fn parse_swizzle(text: &str) -> Option<u32> {
    if text.len() > 4 {
        return None;
    }
    let mut components = [0usize; 4];
    let mut last = 0;
    for (lane, c) in text.chars().enumerate() {
        last = match c.to_ascii_lowercase() {
            'x' | 'r' | 's' => 0,
            'y' | 'g' | 't' => 1,
            'z' | 'b' | 'p' => 2,
            'w' | 'a' | 'q' => 3,
            _ => return None,
        };
        components[lane] = last;
    }
    for slot in components.iter_mut().skip(text.len()) {
        *slot = last;
    }
    Some(Swizzle::from_components(components).0 as u32)
}

/// The opcode of a mnemonic the parser accepted, from the ISA's table.
fn opcode_of(name: &str) -> u32 {
    isa::opcode_named(name).unwrap_or_else(|| unreachable!("no opcode for {name}"))
}

/// The selector bits of a descriptor that `opcode` never reads, given the destination mask in
/// `desc` (picasso's `optimizeOpdesc`): they do not take part in descriptor sharing.
fn unused_selector_bits(opcode: u32, desc: u32) -> u32 {
    let lane_bits = |lane: usize| 3u32 << (6 - 2 * lane);
    let (mut unused1, mut unused2, mut unused3) = (0, 0, 0);
    match opcode {
        // ADD MUL SGE SLT FLR MAX MIN MOV MAD: lanes the destination mask does not write.
        0x00 | 0x08 | 0x09 | 0x0A | 0x0B | 0x0C | 0x0D | 0x13 | 0x38 => {
            for lane in 0..4 {
                if desc & (8 >> lane) == 0 {
                    unused1 |= lane_bits(lane);
                }
            }
            unused2 = unused1;
            unused3 = unused1;
        }
        0x01 => {
            unused1 = lane_bits(3);
            unused2 = lane_bits(3);
        }
        0x03 => unused1 = lane_bits(3),
        0x05 | 0x06 | 0x0E | 0x0F => unused1 = lane_bits(1) | lane_bits(2) | lane_bits(3),
        0x12 | 0x2E => {
            if opcode == 0x12 {
                if desc & 8 == 0 {
                    unused1 |= lane_bits(0);
                }
                if desc & 4 == 0 {
                    unused1 |= lane_bits(1);
                }
            }
            unused1 |= lane_bits(2) | lane_bits(3);
        }
        _ => {}
    }
    (unused1 << 5) | (unused2 << 14) | (unused3 << 23)
}
