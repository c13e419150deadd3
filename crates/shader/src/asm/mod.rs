//! A picasso-compatible assembler: PICA200 shader source to SHBIN.
//!
//! The syntax is picasso 2.7's (docs/shbin-and-picasso.md §3): one DVLE per input
//! file (procedures are shared across files), `.proc`/`.end`, `ifc`/`ifu` with `.else`, `for`,
//! `.alias`, `.fvec`/`.ivec`/`.bool`, `.constf`/`.constfa`/`.consti`, `.setf`/`.seti`/`.setb`,
//! `.in`, `.out`, `.entry`, `.nodvle` and `.gsh`. The assembler reproduces picasso's observable
//! behaviour so the same source gives the same bytes: automatic inverted opcodes, operand
//! descriptor sharing and the MAD-below-32 swap, padding NOPs, uniform and constant allocation,
//! the DVLE tables and the header file.
//!
//! Every error names file, line and column. Deliberate differences from picasso:
//!
//! * `v15` is accepted (picasso rejects it through an off-by-one).
//! * Float constants: NaN becomes the canonical float24 NaN (picasso writes infinity) and values
//!   of 2^64 and above become infinity (picasso writes an f24 NaN pattern for [2^64, 2^65)).
//! * Stricter parsing where picasso silently accepts garbage: trailing characters after a
//!   register number, number or register offset (`c5[a0.x-1]` is an error, not `c5`), upper-case
//!   register letters, and unknown `setemit` flags (which picasso reports but ignores) are
//!   errors; register numbers are decimal (picasso reads `c010` as octal).
//! * Two outputs on o0 and o8 never collide (picasso's 32-bit collision mask wraps).

mod assembler;
mod error;
pub mod source;
pub mod text;

pub use assembler::{Assembler, MAX_VERTEX_SHADER_WORDS};
pub use error::{AsmError, AsmWarning, Location};
pub use source::{Unrepresentable, to_source};

use crate::float24::F24;
use crate::shbin::{
    Constant, Dvle, GsConfig, GsMode, OutputEntry, OutputSemantic, PICASSO_DVLE_VERSION,
    ShaderKind, Shbin, UniformEntry,
};
use assembler::{ConstantValue, DvleData, UniformKind};

/// One source file.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// The name used in diagnostics.
    pub name: String,
    /// The text.
    pub text: String,
}

/// Assembler settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsmOptions {
    /// Insert padding NOPs where flow control needs them (picasso's default; `--no-nop` turns
    /// them off, and each missing NOP becomes a warning).
    pub auto_nop: bool,
}

impl Default for AsmOptions {
    fn default() -> AsmOptions {
        AsmOptions { auto_nop: true }
    }
}

/// The result of a successful assembly.
#[derive(Clone, Debug)]
pub struct Assembly {
    /// The SHBIN model (write it with [`crate::shbin::write`]).
    pub shbin: Shbin,
    /// The C header picasso's `-h` writes.
    pub header: String,
    /// Warnings (assembly succeeded).
    pub warnings: Vec<AsmWarning>,
    /// The source line of each code word.
    pub origins: Vec<Location>,
}

/// Assembles `files` (one DVLE per file, in order) into a SHBIN.
pub fn assemble(files: &[SourceFile], options: AsmOptions) -> Result<Assembly, AsmError> {
    let mut assembler = Assembler::new(options.auto_nop);
    for file in files {
        assembler.assemble_file(&file.name, &file.text)?;
    }
    assembler.finish()?;
    let dvles = assembler
        .dvles
        .iter()
        .filter(|d| !d.nodvle)
        .map(dvle_model)
        .collect();
    let shbin = Shbin {
        code: assembler.code.clone(),
        opdescs: assembler.opdescs.iter().map(|&(desc, _)| desc).collect(),
        opdesc_extra: vec![0; assembler.opdescs.len()],
        dvles,
    };
    let header = header(&assembler);
    Ok(Assembly {
        shbin,
        header,
        warnings: assembler.warnings,
        origins: assembler.origins,
    })
}

impl Assembly {
    /// The hardware errata and suspicious code in the assembled program, as warnings at the
    /// source lines: [`crate::validate`] run on every DVLE (two consecutive MOVA, outputs written
    /// twice or never, reads before writes, ...).
    pub fn validation_warnings(&self) -> Vec<AsmWarning> {
        let mut warnings = Vec::new();
        for (index, dvle) in self.shbin.dvles.iter().enumerate() {
            let Ok(program) = crate::program::ShaderProgram::from_shbin(&self.shbin, index) else {
                continue;
            };
            for diagnostic in crate::validate::validate_program(&program, &dvle.output_registers())
            {
                let location = self
                    .origins
                    .get(diagnostic.address as usize)
                    .cloned()
                    .unwrap_or_default();
                warnings.push(AsmWarning {
                    location,
                    message: format!("DVLE {index}: {}", diagnostic.message),
                });
            }
        }
        warnings
    }
}

/// The SHBIN model of one DVLE.
fn dvle_model(data: &DvleData) -> Dvle {
    let mut uniforms: Vec<_> = data.uniforms.iter().collect();
    uniforms.sort_by_key(|u| u.pos);
    let uniforms: Vec<UniformEntry> = uniforms
        .iter()
        .map(|u| {
            let first = if u.pos >= 0x20 { u.pos - 0x10 } else { u.pos };
            UniformEntry {
                name: u.name.replace('$', "."),
                first: first as u16,
                last: (first + u.size - 1) as u16,
            }
        })
        .collect();
    let symbols = uniforms
        .iter()
        .flat_map(|u| u.name.bytes().chain([0]))
        .collect();
    let constants = data
        .constants
        .iter()
        .map(|c| match c.value {
            ConstantValue::Float(v) => Constant::Float {
                index: (c.reg - 0x20) as u8,
                value: v.map(F24::from_f32_picasso),
            },
            ConstantValue::Int(v) => Constant::Int {
                index: (c.reg - 0x80) as u8,
                value: v,
            },
            ConstantValue::Bool(v) => Constant::Bool {
                index: (c.reg - 0x88) as u8,
                value: v,
            },
        })
        .collect();
    let outputs = data
        .outputs
        .iter()
        .map(|&(code, register, mask)| OutputEntry {
            semantic: OutputSemantic::from_code(code),
            register,
            mask,
            unknown: 0,
        })
        .collect();
    Dvle {
        version: PICASSO_DVLE_VERSION,
        kind: if data.geometry {
            ShaderKind::Geometry
        } else {
            ShaderKind::Vertex
        },
        merge_outmaps: data.merge,
        entry: data.entry.0 as u32,
        end: data.entry.1 as u32,
        input_mask: data.input_mask,
        output_mask: data.output_mask,
        gs: GsConfig {
            mode: GsMode::from_code(data.gs_type).unwrap_or(GsMode::Point),
            fixed_start: data.gs_fixed_start,
            variable_vertices: data.gs_variable_num,
            fixed_vertices: data.gs_fixed_num,
        },
        constants,
        labels: Vec::new(),
        outputs,
        uniforms,
        symbols,
    }
}

/// picasso's header: a define per vertex-shader-space uniform in declaration order (names
/// starting with `_` skipped), prefixed `VSH_` or `GSH_` after the first DVLE's type.
fn header(assembler: &Assembler) -> String {
    let prefix = match assembler.dvles.first() {
        Some(d) if d.geometry => "GSH",
        _ => "VSH",
    };
    let mut out = String::from("// Generated by picasso\n#pragma once\n");
    for u in assembler
        .global_uniforms
        .iter()
        .filter(|u| !u.name.starts_with('_'))
    {
        let name = &u.name;
        match u.kind {
            UniformKind::Float => {
                out += &format!("#define {prefix}_FVEC_{name} 0x{:02X}\n", u.pos - 0x20)
            }
            UniformKind::Int => {
                out += &format!("#define {prefix}_IVEC_{name} 0x{:02X}\n", u.pos - 0x80)
            }
            UniformKind::Bool if u.size == 1 => {
                out += &format!("#define {prefix}_FLAG_{name} BIT({})\n", u.pos - 0x88)
            }
            UniformKind::Bool => {
                out += &format!(
                    "#define {prefix}_FLAG_{name}(_n) BIT({}+(_n))\n",
                    u.pos - 0x88
                )
            }
        }
        out += &format!("#define {prefix}_ULEN_{name} {}\n", u.size);
    }
    out
}

#[cfg(test)]
mod tests;
