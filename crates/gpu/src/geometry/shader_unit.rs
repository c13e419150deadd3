//! The configuration side of a shader unit (docs/gpu.md, "Shader units"): the program memory
//! and operand descriptors filled through their upload FIFOs, the float uniforms through theirs
//! (float24 or float32 packing), the bool and int uniforms, the entry point, the input
//! permutation and the output mask. The vertex unit and the geometry unit each have one; the
//! pipeline decides which writes reach which (VSH_COM_MODE).

use shader::exec::ExecConfig;
use shader::float24::{F24, Precision, unpack_uniform, unpack_uniform_f32};
use shader::isa::{OPDESC_COUNT, PROGRAM_WORDS};
use shader::program::{ProgramError, ShaderKind, ShaderProgram, Uniforms};

use crate::regs::{bits, id};

/// Float uniforms a unit has (an upload to a higher index is ignored, as the hardware does).
pub const FLOAT_UNIFORMS: usize = 96;

/// One shader unit's configuration.
#[derive(Clone, Debug)]
pub struct ShaderUnit {
    /// Which stage the unit runs.
    pub stage: ShaderKind,
    code: Box<[u32; PROGRAM_WORDS]>,
    opdescs: [u32; OPDESC_COUNT],
    code_index: usize,
    opdesc_index: usize,
    /// The uniforms programs run with.
    pub uniforms: Uniforms,
    float_index: usize,
    float_packing_f32: bool,
    float_words: [u32; 4],
    float_filled: usize,
    /// The entry point (a word address).
    pub entry: u16,
    /// The input permutation: input attribute n goes to register `(permutation >> 4n) & 15`.
    pub permutation: u64,
    /// Which output registers the program writes (o0-o15).
    pub output_mask: u16,
    /// SH_INPUTBUFFER_CONFIG.
    pub input_config: u32,
    /// Counts changes of the program (code, descriptors, entry, output mask), so that the
    /// pipeline prepares a program again only when it changed.
    pub program_version: u64,
    /// Upload words beyond program memory or the descriptor table (ignored).
    pub dropped_uploads: u64,
}

impl ShaderUnit {
    /// A unit with zeroed memory and uniforms.
    pub fn new(stage: ShaderKind) -> ShaderUnit {
        ShaderUnit {
            stage,
            code: Box::new([0; PROGRAM_WORDS]),
            opdescs: [0; OPDESC_COUNT],
            code_index: 0,
            opdesc_index: 0,
            uniforms: Uniforms::default(),
            float_index: 0,
            float_packing_f32: false,
            float_words: [0; 4],
            float_filled: 0,
            entry: 0,
            permutation: 0,
            output_mask: 0,
            input_config: 0,
            program_version: 0,
            dropped_uploads: 0,
        }
    }

    /// Applies a write of `value` (the register's new value) to the unit's register at
    /// `offset` from its block (the `id::SH_*` offsets); `precision` converts float32-packed
    /// uniforms into register values as the engines do.
    pub fn write(&mut self, offset: u16, value: u32, precision: Precision) {
        match offset {
            id::SH_BOOLUNIFORM => self.uniforms.bools = value as u16,
            id::SH_INTUNIFORM_I0..=id::SH_INTUNIFORM_I3 => {
                self.uniforms.int[(offset - id::SH_INTUNIFORM_I0) as usize] = value.to_le_bytes();
            }
            id::SH_INPUTBUFFER_CONFIG => self.input_config = value,
            id::SH_ENTRYPOINT => {
                self.entry = bits(value, 0, 12) as u16;
                self.program_version += 1;
            }
            id::SH_ATTRIBUTES_PERMUTATION_LOW => {
                self.permutation = (self.permutation & !0xFFFF_FFFF) | value as u64;
            }
            id::SH_ATTRIBUTES_PERMUTATION_HIGH => {
                self.permutation = (self.permutation & 0xFFFF_FFFF) | (value as u64) << 32;
            }
            id::SH_OUTMAP_MASK => {
                self.output_mask = value as u16;
                self.program_version += 1;
            }
            id::SH_FLOATUNIFORM_INDEX => {
                self.float_index = bits(value, 0, 8) as usize;
                self.float_packing_f32 = value >> 31 != 0;
                self.float_filled = 0;
            }
            id::SH_FLOATUNIFORM_DATA0..=id::SH_FLOATUNIFORM_DATA7 => {
                self.push_float_word(value, precision)
            }
            id::SH_CODETRANSFER_INDEX => self.code_index = bits(value, 0, 12) as usize,
            id::SH_CODETRANSFER_DATA0..=id::SH_CODETRANSFER_DATA7 => {
                let stored = upload(&mut self.code[..], &mut self.code_index, value);
                self.count_upload(stored);
            }
            id::SH_OPDESCS_INDEX => self.opdesc_index = bits(value, 0, 12) as usize,
            id::SH_OPDESCS_DATA0..=id::SH_OPDESCS_DATA7 => {
                let stored = upload(&mut self.opdescs, &mut self.opdesc_index, value);
                self.count_upload(stored);
            }
            _ => {}
        }
    }

    fn count_upload(&mut self, stored: bool) {
        self.program_version += 1;
        if !stored {
            self.dropped_uploads += 1;
        }
    }

    fn push_float_word(&mut self, word: u32, precision: Precision) {
        self.float_words[self.float_filled] = word;
        self.float_filled += 1;
        let needed = if self.float_packing_f32 { 4 } else { 3 };
        if self.float_filled < needed {
            return;
        }
        self.float_filled = 0;
        if self.float_index < FLOAT_UNIFORMS {
            let w = self.float_words;
            self.uniforms.float[self.float_index] = if self.float_packing_f32 {
                unpack_uniform_f32(w, precision)
            } else {
                unpack_uniform([w[0], w[1], w[2]]).map(F24::to_f32)
            };
        }
        self.float_index += 1;
    }

    /// Sets float uniform `index` directly (the geometry-shader input modes write their inputs
    /// into uniforms).
    pub fn set_float(&mut self, index: usize, value: [f32; 4]) {
        if let Some(slot) = self.uniforms.float.get_mut(index) {
            *slot = value;
        }
    }

    /// The program the unit runs now.
    pub fn program(&self) -> Result<ShaderProgram, ProgramError> {
        ShaderProgram::new(
            &self.code[..],
            &self.opdescs,
            self.entry as u32,
            self.stage,
            self.output_mask,
        )
    }

    /// The register input attribute `n` goes to.
    pub fn input_register(&self, n: usize) -> usize {
        ((self.permutation >> (4 * n)) & 0xF) as usize
    }

    /// The number of input attributes the unit takes (SH_INPUTBUFFER_CONFIG bits 0-3, plus 1).
    pub fn input_count(&self) -> usize {
        bits(self.input_config, 0, 4) as usize + 1
    }

    /// The program memory (for the trace writer and tests).
    pub fn code(&self) -> &[u32; PROGRAM_WORDS] {
        &self.code
    }

    /// The operand descriptors.
    pub fn opdescs(&self) -> &[u32; OPDESC_COUNT] {
        &self.opdescs
    }

    /// Loads a whole program at once (restoring a trace's initial state).
    pub fn load_program(&mut self, code: &[u32], opdescs: &[u32]) {
        for (to, &from) in self.code.iter_mut().zip(code) {
            *to = from;
        }
        for (to, &from) in self.opdescs.iter_mut().zip(opdescs) {
            *to = from;
        }
        self.program_version += 1;
    }
}

/// One word of an upload FIFO: stored at `*index` when that is inside `memory`; the index
/// advances either way. Returns whether it was stored.
fn upload(memory: &mut [u32], index: &mut usize, word: u32) -> bool {
    let stored = memory.get_mut(*index).map(|slot| *slot = word).is_some();
    *index += 1;
    stored
}

/// The settings programs of the pipeline are prepared with.
pub fn exec_config(precision: Precision) -> ExecConfig {
    ExecConfig {
        precision,
        ..ExecConfig::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shader::float24::pack_uniform;

    #[test]
    fn float24_uploads_fill_vec4s_and_advance_the_index() {
        let mut unit = ShaderUnit::new(ShaderKind::Vertex);
        unit.write(id::SH_FLOATUNIFORM_INDEX, 5, Precision::F24Truncate);
        let one = F24::ONE;
        let two = F24::from_f32_exact(2.0).unwrap();
        for word in pack_uniform([one, two, F24::ZERO, one]) {
            unit.write(id::SH_FLOATUNIFORM_DATA0 + 3, word, Precision::F24Truncate);
        }
        for word in pack_uniform([two; 4]) {
            unit.write(id::SH_FLOATUNIFORM_DATA0, word, Precision::F24Truncate);
        }
        assert_eq!(unit.uniforms.float[5], [1.0, 2.0, 0.0, 1.0]);
        assert_eq!(unit.uniforms.float[6], [2.0; 4]);
    }

    #[test]
    fn float32_uploads_arrive_w_first_and_indices_past_95_are_ignored() {
        let mut unit = ShaderUnit::new(ShaderKind::Vertex);
        unit.write(id::SH_FLOATUNIFORM_INDEX, 0x8000_0000 | 95, Precision::F32);
        for value in [4.0f32, 3.0, 2.0, 1.0, 9.0, 9.0, 9.0, 9.0] {
            unit.write(id::SH_FLOATUNIFORM_DATA0, value.to_bits(), Precision::F32);
        }
        assert_eq!(unit.uniforms.float[95], [1.0, 2.0, 3.0, 4.0]);
        assert!(unit.uniforms.float.iter().all(|v| *v != [9.0; 4]));
    }

    #[test]
    fn code_and_descriptor_fifos_and_the_permutation() {
        let mut unit = ShaderUnit::new(ShaderKind::Vertex);
        unit.write(id::SH_CODETRANSFER_INDEX, 4094, Precision::F24Truncate);
        for word in [1, 2, 3] {
            unit.write(id::SH_CODETRANSFER_DATA0, word, Precision::F24Truncate);
        }
        assert_eq!(unit.code()[4094..], [1, 2]);
        assert_eq!(unit.dropped_uploads, 1);
        unit.write(id::SH_OPDESCS_INDEX, 1, Precision::F24Truncate);
        unit.write(id::SH_OPDESCS_DATA0 + 7, 0xABC, Precision::F24Truncate);
        assert_eq!(unit.opdescs()[1], 0xABC);
        unit.write(
            id::SH_ATTRIBUTES_PERMUTATION_LOW,
            0x7654_3210,
            Precision::F24Truncate,
        );
        unit.write(
            id::SH_ATTRIBUTES_PERMUTATION_HIGH,
            0xFEDC_BA98,
            Precision::F24Truncate,
        );
        assert_eq!(unit.input_register(0), 0);
        assert_eq!(unit.input_register(9), 9);
        assert_eq!(unit.input_register(15), 15);
    }
}
