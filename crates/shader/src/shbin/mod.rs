//! The SHBIN container (DVLB / DVLP / DVLE), as produced by picasso and read by libctru.
//!
//! A file is a DVLB header listing N DVLEs, one DVLP holding the shared program code and operand
//! descriptors, then the N DVLEs: one per entry point (vertex or geometry shader), each with its
//! constant, label, output, uniform and symbol tables. The layout is section 2 of the project's
//! PICA reference.
//!
//! * [`parse`] reads a file into a [`Shbin`]. It never panics: every offset and count is checked
//!   (with overflow-checked arithmetic) and every problem is a [`ShbinError`] naming the field and
//!   its byte offset. Semantic problems (an entry point beyond the code, an output written twice)
//!   are not parse errors; they are the validator's business.
//! * [`write()`] produces picasso's layout.
//!
//! # Symbols
//!
//! Uniform and label names live in each DVLE's symbol table. [`parse`] resolves them into
//! [`UniformEntry::name`] / [`Label::name`] **and** keeps the raw table in [`Dvle::symbols`].
//! [`write()`] starts from [`Dvle::symbols`] and points each name at its first NUL-terminated
//! occurrence there that starts a string, appending the names it does not find. So a parsed file
//! is rewritten with its symbol table unchanged, and `parse(&write(&s)) == Ok(s)` holds whenever
//! every name already occurs in `s.symbols` (call [`Dvle::rebuild_symbols`] on a hand-built
//! model to make it so).
//!
//! Names are decoded with [`String::from_utf8_lossy`]: a name that is not UTF-8 parses (with
//! U+FFFD replacements) rather than failing; such a name no longer matches its bytes, so a
//! rewrite appends the replaced form to the symbol table. Names cannot contain NUL.

mod error;
mod reader;
mod writer;

use std::fmt;

use crate::float24::F24;

pub use error::{Location, ShbinError, SymbolProblem, Table};
pub use reader::parse;
pub use writer::write;

/// Size of the DVLP header in bytes.
pub const DVLP_HEADER_SIZE: usize = 0x28;
/// Size of the DVLE header in bytes.
pub const DVLE_HEADER_SIZE: usize = 0x40;
/// The largest code size a DVLP may declare, in words (the shader program memory).
pub const MAX_CODE_WORDS: u32 = 4096;
/// The largest number of operand descriptors a DVLP may declare (the descriptor memory).
pub const MAX_OPDESCS: u32 = 128;
/// The DVLE version picasso writes.
pub const PICASSO_DVLE_VERSION: u16 = 0x1002;

/// A whole SHBIN file: the shared program and its entry points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shbin {
    /// The program code, one instruction word each (at most [`MAX_CODE_WORDS`]).
    pub code: Vec<u32>,
    /// The operand descriptors: the first word of each 8-byte entry (at most [`MAX_OPDESCS`]).
    pub opdescs: Vec<u32>,
    /// The second word of each operand descriptor entry, kept for an exact rewrite. [`write()`]
    /// writes 0 for entries this vector is too short for.
    pub opdesc_extra: Vec<u32>,
    /// The executables (entry points) sharing the program.
    pub dvles: Vec<Dvle>,
}

/// Which shader unit a DVLE is for (DVLE byte 0x06).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShaderKind {
    /// A vertex shader (0).
    Vertex,
    /// A geometry shader (1).
    Geometry,
}

impl ShaderKind {
    /// `"vertex"` or `"geometry"`.
    pub const fn name(self) -> &'static str {
        match self {
            ShaderKind::Vertex => "vertex",
            ShaderKind::Geometry => "geometry",
        }
    }

    /// How many output registers the stage has (o0-o15 for vertex, o0-o6 for geometry shaders).
    pub const fn output_count(self) -> usize {
        match self {
            ShaderKind::Vertex => 16,
            ShaderKind::Geometry => 7,
        }
    }

    /// The byte stored in the DVLE header.
    pub fn code(self) -> u8 {
        match self {
            ShaderKind::Vertex => 0,
            ShaderKind::Geometry => 1,
        }
    }

    /// The kind stored as `code`, if any.
    pub fn from_code(code: u8) -> Option<ShaderKind> {
        match code {
            0 => Some(ShaderKind::Vertex),
            1 => Some(ShaderKind::Geometry),
            _ => None,
        }
    }
}

/// The geometry shader mode (DVLE byte 0x14).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GsMode {
    /// Point mode (0): one primitive's vertices per invocation.
    Point,
    /// Variable-size primitive (subdivision) mode (1).
    Variable,
    /// Fixed-size primitive (particle) mode (2).
    Fixed,
}

impl GsMode {
    /// The byte stored in the DVLE header.
    pub fn code(self) -> u8 {
        match self {
            GsMode::Point => 0,
            GsMode::Variable => 1,
            GsMode::Fixed => 2,
        }
    }

    /// The mode stored as `code`, if any.
    pub fn from_code(code: u8) -> Option<GsMode> {
        match code {
            0 => Some(GsMode::Point),
            1 => Some(GsMode::Variable),
            2 => Some(GsMode::Fixed),
            _ => None,
        }
    }
}

/// The geometry shader configuration bytes 0x14-0x17 of a DVLE (present, usually zero, in
/// vertex shader DVLEs too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GsConfig {
    /// The mode (byte 0x14).
    pub mode: GsMode,
    /// Fixed mode: the first float uniform (c-index) of the vertex array (byte 0x15).
    pub fixed_start: u8,
    /// Variable mode: the number of fully defined vertices (byte 0x16).
    pub variable_vertices: u8,
    /// Fixed mode: the number of vertices (byte 0x17).
    pub fixed_vertices: u8,
}

impl Default for GsConfig {
    /// Point mode with all counts zero (what a vertex shader DVLE holds).
    fn default() -> GsConfig {
        GsConfig {
            mode: GsMode::Point,
            fixed_start: 0,
            variable_vertices: 0,
            fixed_vertices: 0,
        }
    }
}

/// One executable: an entry point into the shared code and its tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dvle {
    /// The version half-word (picasso writes [`PICASSO_DVLE_VERSION`]).
    pub version: u16,
    /// Vertex or geometry shader.
    pub kind: ShaderKind,
    /// Whether the vertex and geometry shader output maps are merged (byte 0x07).
    pub merge_outmaps: bool,
    /// The entry point, in words. Not checked against the code size here.
    pub entry: u32,
    /// The end of the entry procedure, in words.
    pub end: u32,
    /// Bit n set: input register v*n* is used.
    pub input_mask: u16,
    /// Bit n set: output register o*n* is used.
    pub output_mask: u16,
    /// The geometry shader configuration.
    pub gs: GsConfig,
    /// The constant table: uniform values set when the program is loaded.
    pub constants: Vec<Constant>,
    /// The label table (picasso writes none).
    pub labels: Vec<Label>,
    /// The output table: which output register components carry which semantic.
    pub outputs: Vec<OutputEntry>,
    /// The uniform table: named uniform register ranges.
    pub uniforms: Vec<UniformEntry>,
    /// The raw symbol table bytes (see the module documentation).
    pub symbols: Vec<u8>,
}

impl Dvle {
    /// A DVLE with no constants, labels or uniforms (a program made outside the assembler):
    /// picasso's version, the geometry configuration zero, its symbol table built.
    pub fn plain(
        kind: ShaderKind,
        entry: u32,
        end: u32,
        output_mask: u16,
        outputs: Vec<OutputEntry>,
    ) -> Dvle {
        let mut dvle = Dvle {
            version: PICASSO_DVLE_VERSION,
            kind,
            merge_outmaps: false,
            entry,
            end,
            input_mask: 0,
            output_mask,
            gs: GsConfig::default(),
            constants: Vec::new(),
            labels: Vec::new(),
            outputs,
            uniforms: Vec::new(),
            symbols: Vec::new(),
        };
        dvle.rebuild_symbols();
        dvle
    }

    /// The output registers and their combined component masks (bit 0 = x ... bit 3 = w), one
    /// pair per distinct register in ascending order. Entries whose register is above o15 (only
    /// possible in a hand-built model; [`parse`] rejects them) are skipped.
    pub fn output_registers(&self) -> Vec<(u8, u8)> {
        let mut masks = [None::<u8>; 16];
        for entry in &self.outputs {
            if let Some(slot) = masks.get_mut(usize::from(entry.register)) {
                let bits = (entry.mask & 0xF) as u8;
                *slot = Some(slot.unwrap_or(0) | bits);
            }
        }
        (0u8..)
            .zip(masks)
            .filter_map(|(register, mask)| mask.map(|mask| (register, mask)))
            .collect()
    }

    /// Replaces [`Dvle::symbols`] with a compact table of the uniform names then the label
    /// names, each once, NUL-terminated: after this `parse(&write(..))` returns the model
    /// unchanged.
    pub fn rebuild_symbols(&mut self) {
        self.symbols.clear();
        self.symbols = writer::symbol_layout(self).table;
    }
}

/// One constant table entry: a uniform register and the value the loader sets it to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Constant {
    /// Bool uniform b*index* (0-15). Any non-zero stored value reads as `true`.
    Bool {
        /// The b-register index.
        index: u8,
        /// The value.
        value: bool,
    },
    /// Integer uniform i*index* (0-3): x, y, z, w bytes.
    Int {
        /// The i-register index.
        index: u8,
        /// The x, y, z and w bytes.
        value: [u8; 4],
    },
    /// Float uniform c*index* (0-95): x, y, z, w as raw float24 (bits 24-31 of each stored
    /// word are ignored).
    Float {
        /// The c-register index.
        index: u8,
        /// The x, y, z and w components.
        value: [F24; 4],
    },
}

impl Constant {
    /// The type half-word of the entry: 0 bool, 1 int, 2 float.
    pub fn type_code(&self) -> u16 {
        match self {
            Constant::Bool { .. } => 0,
            Constant::Int { .. } => 1,
            Constant::Float { .. } => 2,
        }
    }

    /// The register index within its file.
    pub fn index(&self) -> u8 {
        match *self {
            Constant::Bool { index, .. }
            | Constant::Int { index, .. }
            | Constant::Float { index, .. } => index,
        }
    }
}

/// One output table entry: components of an output register and their semantic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OutputEntry {
    /// What the components carry.
    pub semantic: OutputSemantic,
    /// The o-register index (0-15).
    pub register: u16,
    /// The components: bit 0 = x, bit 1 = y, bit 2 = z, bit 3 = w.
    pub mask: u16,
    /// The fourth half-word (0 in picasso's output), kept for an exact rewrite.
    pub unknown: u16,
}

/// The semantic of an output table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutputSemantic {
    /// 0: clip-space position.
    Position,
    /// 1: normal quaternion.
    NormalQuat,
    /// 2: vertex colour.
    Color,
    /// 3: texture coordinate 0 (s, t).
    TexCoord0,
    /// 4: texture coordinate 0 w.
    TexCoord0W,
    /// 5: texture coordinate 1.
    TexCoord1,
    /// 6: texture coordinate 2.
    TexCoord2,
    /// 8: view vector.
    View,
    /// 9: dummy (geometry shader pass-through).
    Dummy,
    /// Any other code (7 or above 9). [`OutputSemantic::from_code`] only produces it for codes
    /// without a named variant; `Other(0)` and the like rewrite as the named code.
    Other(u16),
}

impl OutputSemantic {
    /// The semantic stored as `code`.
    pub fn from_code(code: u16) -> OutputSemantic {
        match code {
            0 => OutputSemantic::Position,
            1 => OutputSemantic::NormalQuat,
            2 => OutputSemantic::Color,
            3 => OutputSemantic::TexCoord0,
            4 => OutputSemantic::TexCoord0W,
            5 => OutputSemantic::TexCoord1,
            6 => OutputSemantic::TexCoord2,
            8 => OutputSemantic::View,
            9 => OutputSemantic::Dummy,
            other => OutputSemantic::Other(other),
        }
    }

    /// The type half-word stored in the output table.
    pub fn code(self) -> u16 {
        match self {
            OutputSemantic::Position => 0,
            OutputSemantic::NormalQuat => 1,
            OutputSemantic::Color => 2,
            OutputSemantic::TexCoord0 => 3,
            OutputSemantic::TexCoord0W => 4,
            OutputSemantic::TexCoord1 => 5,
            OutputSemantic::TexCoord2 => 6,
            OutputSemantic::View => 8,
            OutputSemantic::Dummy => 9,
            OutputSemantic::Other(code) => code,
        }
    }

    /// picasso's `.out` name of the semantic; `"unknown"` for [`OutputSemantic::Other`].
    pub fn name(self) -> &'static str {
        match self {
            OutputSemantic::Position => "position",
            OutputSemantic::NormalQuat => "normalquat",
            OutputSemantic::Color => "color",
            OutputSemantic::TexCoord0 => "texcoord0",
            OutputSemantic::TexCoord0W => "texcoord0w",
            OutputSemantic::TexCoord1 => "texcoord1",
            OutputSemantic::TexCoord2 => "texcoord2",
            OutputSemantic::View => "view",
            OutputSemantic::Dummy => "dummy",
            OutputSemantic::Other(_) => "unknown",
        }
    }
}

impl fmt::Display for OutputSemantic {
    /// The name, with the code for [`OutputSemantic::Other`] (`unknown(7)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutputSemantic::Other(code) => write!(f, "unknown({code})"),
            named => f.write_str(named.name()),
        }
    }
}

/// A register in the uniform table's unified index space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UniformRegister {
    /// v0-v15 (0x00-0x0F): an input declared with `.in`.
    Input(u8),
    /// c0-c95 (0x10-0x6F).
    Float(u8),
    /// i0-i3 (0x70-0x73).
    Int(u8),
    /// b0-b15 (0x78-0x87).
    Bool(u8),
}

impl UniformRegister {
    /// The register at `index` in the unified space, or `None` for the gaps (0x74-0x77) and
    /// anything above 0x87.
    pub fn from_unified(index: u16) -> Option<UniformRegister> {
        let narrow = |base: u16| u8::try_from(index - base).ok();
        match index {
            0x00..=0x0F => narrow(0x00).map(UniformRegister::Input),
            0x10..=0x6F => narrow(0x10).map(UniformRegister::Float),
            0x70..=0x73 => narrow(0x70).map(UniformRegister::Int),
            0x78..=0x87 => narrow(0x78).map(UniformRegister::Bool),
            _ => None,
        }
    }

    /// The index in the unified space.
    pub fn unified(self) -> u16 {
        match self {
            UniformRegister::Input(n) => u16::from(n),
            UniformRegister::Float(n) => 0x10 + u16::from(n),
            UniformRegister::Int(n) => 0x70 + u16::from(n),
            UniformRegister::Bool(n) => 0x78 + u16::from(n),
        }
    }
}

impl fmt::Display for UniformRegister {
    /// Assembler syntax: `v2`, `c4`, `i0`, `b3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UniformRegister::Input(n) => write!(f, "v{n}"),
            UniformRegister::Float(n) => write!(f, "c{n}"),
            UniformRegister::Int(n) => write!(f, "i{n}"),
            UniformRegister::Bool(n) => write!(f, "b{n}"),
        }
    }
}

/// One uniform table entry: a named, inclusive range of registers in the unified index space
/// (see [`UniformRegister`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UniformEntry {
    /// The uniform's name (from the symbol table).
    pub name: String,
    /// The first register (unified index).
    pub first: u16,
    /// The last register (unified index, inclusive).
    pub last: u16,
}

impl UniformEntry {
    /// The register range in assembler syntax: `c4-c7`, `b3`, `i0`, `v2`. An index outside the
    /// unified space prints as `?0x74`.
    pub fn describe(&self) -> String {
        let name = |index: u16| match UniformRegister::from_unified(index) {
            Some(register) => register.to_string(),
            None => format!("?{index:#x}"),
        };
        if self.first == self.last {
            name(self.first)
        } else {
            format!("{}-{}", name(self.first), name(self.last))
        }
    }
}

/// One label table entry (picasso writes none).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    /// The label id.
    pub id: u16,
    /// The second half-word, kept for an exact rewrite.
    pub unknown: u16,
    /// The label's position, in words.
    pub offset: u32,
    /// The size (0xFFFFFFFF = none).
    pub size: u32,
    /// The label's name (from the symbol table).
    pub name: String,
}

#[cfg(test)]
mod tests;
