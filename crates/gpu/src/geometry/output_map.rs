//! The output map (docs/gpu.md, "Output mapping"): the shader's output registers renamed into
//! semantics, the vertex the rasterizer receives. Slot i of the map is the i-th register enabled
//! in the output mask; each of its four components names a semantic.

use shader::program::Vec4;

use crate::raster::OutputVertex;
use crate::regs::{RegisterFile, bits, id};

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
    use crate::regs::semantic;

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
