//! What the rasterizer receives per vertex: the shader's output registers renamed by the
//! output map into semantics (docs/gpu.md, "Output mapping"). Slot i of the map is the i-th
//! register enabled in the output mask; each of its four components names a semantic.

use crate::program::Vec4;

use super::regs::{RegisterFile, bits, id};

/// Semantics an output component can carry (codes 0x00-0x17; others are unused).
pub const SEMANTICS: usize = 0x18;

/// The code of an unused component.
pub const UNUSED_SEMANTIC: u8 = 0x1F;

/// Semantic codes.
#[allow(missing_docs)]
pub mod semantic {
    pub const POSITION: usize = 0x00;
    pub const QUATERNION: usize = 0x04;
    pub const COLOR: usize = 0x08;
    pub const TEXCOORD0: usize = 0x0C;
    pub const TEXCOORD1: usize = 0x0E;
    pub const TEXCOORD0_W: usize = 0x10;
    pub const VIEW: usize = 0x12;
    pub const TEXCOORD2: usize = 0x16;
}

/// A vertex as the rasterizer sees it: one value per semantic code.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OutputVertex {
    /// Values by semantic code; a semantic the map never assigns reads 1.0.
    pub attributes: [f32; SEMANTICS],
}

impl Default for OutputVertex {
    fn default() -> OutputVertex {
        OutputVertex {
            attributes: [1.0; SEMANTICS],
        }
    }
}

impl OutputVertex {
    /// Position x, y, z, w (clip space).
    pub fn position(&self) -> Vec4 {
        self.vec4(semantic::POSITION)
    }

    /// Colour r, g, b, a.
    pub fn color(&self) -> Vec4 {
        self.vec4(semantic::COLOR)
    }

    /// The normal quaternion.
    pub fn quaternion(&self) -> Vec4 {
        self.vec4(semantic::QUATERNION)
    }

    fn vec4(&self, first: usize) -> Vec4 {
        let a = &self.attributes;
        [a[first], a[first + 1], a[first + 2], a[first + 3]]
    }
}

/// The output map of the stage that feeds the rasterizer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputMap {
    /// For each slot: the output register and the semantic of each of its components.
    pub slots: Vec<(usize, [u8; 4])>,
}

impl OutputMap {
    /// The map the registers describe for a stage whose output mask is `mask`: at most
    /// SH_OUTMAP_TOTAL slots (7 at most), slot i taking the i-th register of the mask.
    pub fn configure(regs: &RegisterFile, mask: u16) -> OutputMap {
        let total = (bits(regs.get(id::SH_OUTMAP_TOTAL), 0, 3) as usize).min(7);
        let slots = (0..16)
            .filter(|&r| mask & (1 << r) != 0)
            .take(total)
            .enumerate()
            .map(|(slot, register)| {
                let word = regs.get(id::SH_OUTMAP_O0 + slot as u16);
                let semantics = [0, 8, 16, 24].map(|at| bits(word, at, 5) as u8);
                (register, semantics)
            })
            .collect();
        OutputMap { slots }
    }

    /// The vertex the output registers `outputs` make.
    pub fn map(&self, outputs: &[Vec4; 16]) -> OutputVertex {
        let mut vertex = OutputVertex::default();
        for &(register, semantics) in &self.slots {
            for (c, &code) in semantics.iter().enumerate() {
                if let Some(value) = vertex.attributes.get_mut(code as usize) {
                    *value = outputs[register][c];
                }
            }
        }
        vertex
    }

    /// Whether any component carries `code`.
    pub fn has(&self, code: usize) -> bool {
        self.slots
            .iter()
            .any(|(_, semantics)| semantics.contains(&(code as u8)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_the_enabled_registers_of_the_mask() {
        // The documented pitfall: mask 0x11, O0 = position, O1 = colour: O1 is o4.
        let mut regs = RegisterFile::default();
        regs.write(id::SH_OUTMAP_TOTAL, 2, 0xF);
        regs.write(id::SH_OUTMAP_O0, 0x0302_0100, 0xF);
        regs.write(id::SH_OUTMAP_O0 + 1, 0x0B0A_0908, 0xF);
        let map = OutputMap::configure(&regs, 0x11);
        assert_eq!(map.slots, [(0, [0, 1, 2, 3]), (4, [8, 9, 10, 11])]);
        let mut outputs = [[0.0; 4]; 16];
        outputs[0] = [1.0, 2.0, 3.0, 4.0];
        outputs[4] = [0.5, 0.25, 0.125, 0.0];
        outputs[1] = [9.0; 4];
        let vertex = map.map(&outputs);
        assert_eq!(vertex.position(), [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(vertex.color(), [0.5, 0.25, 0.125, 0.0]);
        // Unassigned semantics read 1.0.
        assert_eq!(vertex.attributes[semantic::TEXCOORD0], 1.0);
    }
}
