//! A shader program as the engines run it, and the values it runs on.
//!
//! [`ShaderProgram`] is program memory (4096 code words, 128 operand descriptors), the entry
//! point and the stage; [`Uniforms`] the float, int and bool uniforms; [`InputRegisters`] the
//! v-registers of one invocation. These types are shared by every engine.

use crate::float24::F24;
use crate::isa::{OPDESC_COUNT, PROGRAM_WORDS};
pub use crate::shbin::ShaderKind;
use crate::shbin::{Constant, Dvle, Shbin};

/// Four register lanes (x, y, z, w), each the f32 holding a float24 value.
pub type Vec4 = [f32; 4];

/// The value missing input components default to, and the value of an unset attribute.
pub const DEFAULT_INPUT: Vec4 = [0.0, 0.0, 0.0, 1.0];

/// The 16 input registers v0-v15 of one invocation.
pub type InputRegisters = [Vec4; 16];

/// Program memory plus what selects one program in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShaderProgram {
    /// All 4096 words of program memory. Words past the uploaded code are 0 (the memory model:
    /// nothing was uploaded there; 0 decodes as `add o0, v0, v0` with descriptor 0).
    pub code: Box<[u32; PROGRAM_WORDS]>,
    /// How many words were uploaded (the rest of `code` is 0).
    pub code_len: usize,
    /// All 128 operand descriptors (missing ones are 0).
    pub opdescs: [u32; OPDESC_COUNT],
    /// How many descriptors were uploaded.
    pub opdesc_len: usize,
    /// The word address where invocations start.
    pub entry: u16,
    /// Vertex or geometry shader.
    pub stage: ShaderKind,
    /// The output registers the stage sends on (bit n = on): a geometry shader's EMIT copies
    /// these, and outputs report them.
    pub output_mask: u16,
}

/// Why code cannot be loaded into program memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProgramError {
    /// More than 4096 code words.
    CodeTooLong(usize),
    /// More than 128 operand descriptors.
    TooManyOpdescs(usize),
    /// The entry point is outside program memory.
    EntryOutOfRange(u32),
    /// The SHBIN file has no DVLE with this index.
    NoSuchDvle {
        /// The index asked for.
        index: usize,
        /// How many DVLEs the file has.
        count: usize,
    },
}

impl std::fmt::Display for ProgramError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProgramError::CodeTooLong(n) => {
                write!(
                    f,
                    "{n} code words do not fit program memory ({PROGRAM_WORDS} words)"
                )
            }
            ProgramError::TooManyOpdescs(n) => {
                write!(
                    f,
                    "{n} operand descriptors do not fit descriptor memory ({OPDESC_COUNT})"
                )
            }
            ProgramError::EntryOutOfRange(e) => {
                write!(
                    f,
                    "entry point {e:#x} is outside program memory ({PROGRAM_WORDS} words)"
                )
            }
            ProgramError::NoSuchDvle { index, count } => {
                write!(
                    f,
                    "there is no DVLE {index}: the file has {count} (numbered from 0)"
                )
            }
        }
    }
}

impl std::error::Error for ProgramError {}

impl ShaderProgram {
    /// Loads `code` and `opdescs` into fresh program memory.
    pub fn new(
        code: &[u32],
        opdescs: &[u32],
        entry: u32,
        stage: ShaderKind,
        output_mask: u16,
    ) -> Result<ShaderProgram, ProgramError> {
        if code.len() > PROGRAM_WORDS {
            return Err(ProgramError::CodeTooLong(code.len()));
        }
        if opdescs.len() > OPDESC_COUNT {
            return Err(ProgramError::TooManyOpdescs(opdescs.len()));
        }
        if entry as usize >= PROGRAM_WORDS {
            return Err(ProgramError::EntryOutOfRange(entry));
        }
        let mut memory = Box::new([0u32; PROGRAM_WORDS]);
        memory[..code.len()].copy_from_slice(code);
        let mut descriptors = [0u32; OPDESC_COUNT];
        descriptors[..opdescs.len()].copy_from_slice(opdescs);
        Ok(ShaderProgram {
            code: memory,
            code_len: code.len(),
            opdescs: descriptors,
            opdesc_len: opdescs.len(),
            entry: entry as u16,
            stage,
            output_mask,
        })
    }

    /// The program of DVLE `index` of a SHBIN file. The output mask is the registers of the
    /// DVLE's output table, or every output register of the stage when the table is empty.
    pub fn from_shbin(shbin: &Shbin, index: usize) -> Result<ShaderProgram, ProgramError> {
        let dvle = shbin.dvles.get(index).ok_or(ProgramError::NoSuchDvle {
            index,
            count: shbin.dvles.len(),
        })?;
        let registers = dvle.output_registers();
        let output_mask = if registers.is_empty() {
            ((1u32 << dvle.kind.output_count()) - 1) as u16
        } else {
            registers
                .iter()
                .fold(0u16, |mask, &(reg, _)| mask | 1 << reg)
        };
        ShaderProgram::new(
            &shbin.code,
            &shbin.opdescs,
            dvle.entry,
            dvle.kind,
            output_mask,
        )
    }

    /// The output registers sent on, in register order.
    pub fn output_registers(&self) -> impl Iterator<Item = usize> + '_ {
        (0..16).filter(|&n| self.output_mask & (1 << n) != 0)
    }
}

/// The float uniform registers c0-c95.
pub const FLOAT_UNIFORMS: usize = 96;

/// The uniforms of one shader unit.
#[derive(Clone, Debug, PartialEq)]
pub struct Uniforms {
    /// c0-c95.
    pub float: [Vec4; FLOAT_UNIFORMS],
    /// i0-i3: x = iteration count − 1, y = initial aL, z = aL increment, w unused.
    pub int: [[u8; 4]; 4],
    /// b0-b15, bit n = bn.
    pub bools: u16,
}

impl Default for Uniforms {
    fn default() -> Uniforms {
        Uniforms {
            float: [[0.0; 4]; FLOAT_UNIFORMS],
            int: [[0; 4]; 4],
            bools: 0,
        }
    }
}

impl Uniforms {
    /// Whether the float uniforms of `registers` (bit n: cn) are those of `floats` bit for bit
    /// (NaN payloads and the sign of zero count, as they do in results): for a cache of what
    /// is derived from the uniforms a program reads.
    pub fn floats_are(&self, floats: &[Vec4; FLOAT_UNIFORMS], registers: u128) -> bool {
        /// The bytes of some float uniforms.
        fn bytes(floats: &[Vec4]) -> &[u8] {
            // SAFETY: the slice is plain f32s with no padding; any byte of it may be read.
            unsafe { std::slice::from_raw_parts(floats.as_ptr().cast(), size_of_val(floats)) }
        }
        if registers.count_ones() > 32 {
            // Most of them: one comparison of everything.
            return bytes(&self.float) == bytes(floats);
        }
        // Each register as one 128-bit word; the set's two halves walked apart (no 128-bit
        // bit scans on the way).
        let word =
            |v: &Vec4| u128::from_ne_bytes(bytes(std::slice::from_ref(v)).try_into().unwrap());
        for (half, base) in [(registers as u64, 0), ((registers >> 64) as u64, 64)] {
            let mut left = half;
            while left != 0 {
                let n = base + left.trailing_zeros() as usize;
                left &= left - 1;
                if n < FLOAT_UNIFORMS && word(&self.float[n]) != word(&floats[n]) {
                    return false;
                }
            }
        }
        true
    }

    /// Sets float uniform `index` from raw float24 values (float24 upload mode: kept exactly,
    /// subnormals included).
    pub fn set_float_f24(&mut self, index: usize, value: [F24; 4]) {
        self.float[index] = value.map(F24::to_f32);
    }

    /// Sets or clears bool uniform `index`.
    pub fn set_bool(&mut self, index: usize, value: bool) {
        if value {
            self.bools |= 1 << index;
        } else {
            self.bools &= !(1 << index);
        }
    }

    /// The uniforms a DVLE's constant table sets (float constants are raw float24 values,
    /// applied exactly as libctru uploads them in float24 mode); everything else is 0.
    pub fn from_constants(dvle: &Dvle) -> Uniforms {
        let mut uniforms = Uniforms::default();
        uniforms.apply_constants(dvle);
        uniforms
    }

    /// Applies a DVLE's constant table over the current values.
    pub fn apply_constants(&mut self, dvle: &Dvle) {
        for constant in &dvle.constants {
            match *constant {
                Constant::Bool { index, value } => self.set_bool(index as usize, value),
                Constant::Int { index, value } => self.int[index as usize] = value,
                Constant::Float { index, value } => self.set_float_f24(index as usize, value),
            }
        }
    }

    /// Bool uniform `index`.
    pub const fn bool(&self, index: usize) -> bool {
        self.bools & (1 << index) != 0
    }
}

/// The address and condition registers at the end of an invocation, compared between engines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FlowRegisters {
    /// a0.x and a0.y.
    pub a0: [i32; 2],
    /// The loop counter aL.
    pub al: i32,
    /// cmp.x and cmp.y.
    pub cmp: [bool; 2],
}

/// The arithmetic the relative-addressing rule needs: `i32` values for the interpreter, IR values
/// for the JIT (docs/execution-model.md §4).
pub trait IndexOps {
    /// A 32-bit integer.
    type Int: Copy;
    /// A truth value.
    type Bit: Copy;
    /// A constant.
    fn int(&mut self, value: i32) -> Self::Int;
    /// Wrapping addition.
    fn add(&mut self, a: Self::Int, b: Self::Int) -> Self::Int;
    /// Bitwise and with a constant.
    fn and(&mut self, a: Self::Int, mask: i32) -> Self::Int;
    /// Whether `low <= a <= high`.
    fn within(&mut self, a: Self::Int, low: i32, high: i32) -> Self::Bit;
    /// `if condition { a } else { b }`.
    fn select(&mut self, condition: Self::Bit, a: Self::Int, b: Self::Int) -> Self::Int;
}

/// The number of float-uniform slots a relative index can name (7 bits); slots 96-127 read
/// (1, 1, 1, 1).
pub const UNIFORM_INDEX_SLOTS: usize = 128;

/// The float-uniform slot that `c[base + offset]` reads (docs/execution-model.md §4): an offset
/// (a0.x, a0.y or aL) outside -128..127 counts as 0, and the sum wraps at 7 bits. A slot above
/// 95 reads (1, 1, 1, 1).
pub fn relative_uniform_slot<O: IndexOps>(ops: &mut O, base: u8, offset: O::Int) -> O::Int {
    let in_range = ops.within(offset, -128, 127);
    let zero = ops.int(0);
    let offset = ops.select(in_range, offset, zero);
    let base = ops.int(base as i32);
    let index = ops.add(base, offset);
    ops.and(index, UNIFORM_INDEX_SLOTS as i32 - 1)
}

/// [`IndexOps`] on plain integers.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExactIndex;

impl IndexOps for ExactIndex {
    type Int = i32;
    type Bit = bool;

    #[inline]
    fn int(&mut self, value: i32) -> i32 {
        value
    }
    #[inline]
    fn add(&mut self, a: i32, b: i32) -> i32 {
        a.wrapping_add(b)
    }
    #[inline]
    fn and(&mut self, a: i32, mask: i32) -> i32 {
        a & mask
    }
    #[inline]
    fn within(&mut self, a: i32, low: i32, high: i32) -> bool {
        (low..=high).contains(&a)
    }
    #[inline]
    fn select(&mut self, condition: bool, a: i32, b: i32) -> i32 {
        if condition { a } else { b }
    }
}
