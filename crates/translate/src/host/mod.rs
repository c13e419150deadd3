//! Running translations on a real GPU API, to check them against the interpreter
//! (docs/gpu-shaders.md, "Checked on a real implementation").

pub mod engine;
pub mod gl;
pub mod vulkan;

use std::fmt;

use shader::program::{InputRegisters, Uniforms};

/// The uniform block's size in bytes (std140): c0-c95, i0-i3, b, zero.
pub const BLOCK_BYTES: usize = 96 * 16 + 4 * 16 + 16;

/// What a draw's transform feedback captures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capture {
    /// Each output vertex (vertex shaders, the record form's packets).
    Points,
    /// Whole triangles of the strips a geometry shader outputs (the triangle form).
    Triangles,
}

impl Capture {
    /// The vertices (records) of one captured primitive.
    pub const fn vertices(self) -> usize {
        match self {
            Capture::Points => 1,
            Capture::Triangles => 3,
        }
    }
}

/// Why a host GPU could not run a translation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostError {
    /// No implementation of the API here (no library, no device).
    Unavailable(String),
    /// The driver refused the shader: its log.
    Compile(String),
    /// The driver did not link the program: its log.
    Link(String),
    /// The driver failed otherwise.
    Driver(String),
}

/// A vertex draw's check: transform feedback captured every one of its `vertices`.
fn all_captured(written: u64, vertices: usize) -> Result<(), HostError> {
    if written == vertices as u64 {
        Ok(())
    } else {
        Err(HostError::Driver(format!(
            "the driver captured {written} of {vertices} vertices"
        )))
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::Unavailable(why) => write!(f, "no host GPU API: {why}"),
            HostError::Compile(log) => write!(f, "the driver rejected the shader: {log}"),
            HostError::Link(log) => write!(f, "the driver did not link the shader: {log}"),
            HostError::Driver(what) => write!(f, "the driver failed: {what}"),
        }
    }
}

impl std::error::Error for HostError {}

/// The uniform block's bytes for `uniforms` (docs/gpu-shaders.md, "Interface"): c0-c95 as f32
/// bits, i0-i3 one byte a word, b a bit per uniform, then the word that must be 0.
pub fn block_bytes(uniforms: &Uniforms) -> Vec<u8> {
    let mut out = Vec::with_capacity(BLOCK_BYTES);
    for v in &uniforms.float {
        for lane in v {
            out.extend_from_slice(&lane.to_bits().to_le_bytes());
        }
    }
    for i in &uniforms.int {
        for &byte in i {
            out.extend_from_slice(&u32::from(byte).to_le_bytes());
        }
    }
    out.extend_from_slice(&u32::from(uniforms.bools).to_le_bytes());
    out.resize(BLOCK_BYTES, 0);
    out
}

/// Appends the attribute bytes of one vertex (or point) to `out`: v0-v15 as f32 bits, 256 bytes.
pub fn push_input_bytes(out: &mut Vec<u8>, inputs: &InputRegisters) {
    for lane in inputs.iter().flatten() {
        out.extend_from_slice(&lane.to_bits().to_le_bytes());
    }
}
