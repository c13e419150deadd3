//! A test case: a program of typed instructions with their operand descriptors, and the
//! uniforms and invocations it runs on. It becomes a SHBIN file (for the engines and the
//! reproducer) and a `picajit run` input document, and both read back to the same values.

use std::collections::BTreeMap;

use crate::float24::{F24, Precision, convert_f32};
use crate::isa::{
    self, Instruction, MAD_OPDESC_LIMIT, OPDESC_COUNT, OperandDescriptor, PROGRAM_WORDS,
};
use crate::program::{DEFAULT_INPUT, InputRegisters, ShaderKind, ShaderProgram, Uniforms, Vec4};
use crate::shbin::{Dvle, OutputEntry, OutputSemantic, Shbin};

use super::DifftestError;

/// One program word: an instruction and, for those that have one, its operand descriptor (the
/// instruction's own descriptor index is assigned when the program is encoded).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Op {
    /// The instruction.
    pub instruction: Instruction,
    /// Its operand descriptor (ignored for instructions without one).
    pub descriptor: OperandDescriptor,
}

impl Op {
    /// An instruction without an operand descriptor.
    pub const fn plain(instruction: Instruction) -> Op {
        Op {
            instruction,
            descriptor: OperandDescriptor(0),
        }
    }

    /// Whether the instruction has an operand descriptor.
    pub const fn has_descriptor(&self) -> bool {
        self.instruction.desc().is_some()
    }
}

/// A program as the generator builds it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TestProgram {
    /// Vertex or geometry shader.
    pub stage: ShaderKind,
    /// The code, from address 0.
    pub ops: Vec<Op>,
    /// Where invocations start (the DVLE's entry; its range runs to the end of the code).
    pub entry: u16,
    /// The output registers of the DVLE's output table (bit n = on; never empty).
    pub outputs: u16,
}

/// How one register lane is given: as f32 bits (converted by the precision mode, like a JSON
/// number or `"0x..."` string) or as a raw float24 (kept exactly, like `"f24:0x..."`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lane {
    /// f32 bits.
    F32(u32),
    /// A raw float24 (the low 24 bits).
    F24(u32),
}

impl Lane {
    /// The register value under `precision`, exactly as the `run` input parser computes it.
    pub fn value(self, precision: Precision) -> f32 {
        match self {
            Lane::F32(bits) => convert_f32(f32::from_bits(bits), precision),
            Lane::F24(bits) => F24::from_bits_truncated(bits).to_f32(),
        }
    }

    /// The `run` input spelling: `"0xXXXXXXXX"` or `"f24:0xXXXXXX"`.
    pub fn json(self) -> String {
        match self {
            Lane::F32(bits) => format!("0x{bits:08x}"),
            Lane::F24(bits) => format!("f24:0x{:06x}", bits & 0xFF_FFFF),
        }
    }

    /// Raw float24 zero.
    pub const ZERO: Lane = Lane::F24(0);
}

/// A register value of four lanes.
pub type LaneVec = [Lane; 4];

/// The input registers of one invocation and the float uniforms written before it (geometry
/// shaders only; those writes persist).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TestInvocation {
    /// v-registers given (the others are (0, 0, 0, 1); indices above 15 are ignored).
    pub registers: BTreeMap<u8, LaneVec>,
    /// c-registers written before the invocation.
    pub uniform_writes: BTreeMap<u8, LaneVec>,
}

/// The uniforms and invocations of a test case.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TestInputs {
    /// Float uniforms given (the others are 0; indices above 95 are ignored).
    pub floats: BTreeMap<u8, LaneVec>,
    /// i0-i3.
    pub ints: [[u8; 4]; 4],
    /// b0-b15 (bit n = bn).
    pub bools: u16,
    /// One entry per vertex (or geometry-shader invocation, run in order on one state).
    pub invocations: Vec<TestInvocation>,
}

/// A program and what it runs on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TestCase {
    /// The program.
    pub program: TestProgram,
    /// The uniforms and invocations.
    pub inputs: TestInputs,
}

fn lanes(values: &LaneVec, precision: Precision) -> Vec4 {
    values.map(|lane| lane.value(precision))
}

impl TestInputs {
    /// The uniforms before the first invocation.
    pub fn uniforms(&self, precision: Precision) -> Uniforms {
        let mut uniforms = Uniforms::default();
        for (&index, values) in &self.floats {
            if let Some(register) = uniforms.float.get_mut(usize::from(index)) {
                *register = lanes(values, precision);
            }
        }
        uniforms.int = self.ints;
        uniforms.bools = self.bools;
        uniforms
    }

    /// The input registers of invocation `index`.
    pub fn registers(&self, index: usize, precision: Precision) -> InputRegisters {
        let mut registers = [DEFAULT_INPUT; 16];
        if let Some(invocation) = self.invocations.get(index) {
            for (&n, values) in &invocation.registers {
                if let Some(register) = registers.get_mut(usize::from(n)) {
                    *register = lanes(values, precision);
                }
            }
        }
        registers
    }

    /// Applies the uniform writes of invocation `index`.
    pub fn apply_writes(&self, index: usize, uniforms: &mut Uniforms, precision: Precision) {
        if let Some(invocation) = self.invocations.get(index) {
            for (&n, values) in &invocation.uniform_writes {
                if let Some(register) = uniforms.float.get_mut(usize::from(n)) {
                    *register = lanes(values, precision);
                }
            }
        }
    }

    /// The `picajit run` input document for a shader of `stage`.
    pub fn to_json(&self, stage: ShaderKind) -> String {
        let vector = |values: &LaneVec| {
            let items: Vec<String> = values.iter().map(|l| format!("\"{}\"", l.json())).collect();
            format!("[{}]", items.join(", "))
        };
        let mut uniforms: Vec<String> = self
            .floats
            .iter()
            .map(|(n, v)| format!("\"c{n}\": {}", vector(v)))
            .collect();
        for (n, value) in self.ints.iter().enumerate() {
            if *value != [0; 4] {
                uniforms.push(format!(
                    "\"i{n}\": [{}, {}, {}, {}]",
                    value[0], value[1], value[2], value[3]
                ));
            }
        }
        for n in 0..16 {
            if self.bools & (1 << n) != 0 {
                uniforms.push(format!("\"b{n}\": true"));
            }
        }
        let key = match stage {
            ShaderKind::Vertex => "vertices",
            ShaderKind::Geometry => "invocations",
        };
        let invocations: Vec<String> = self
            .invocations
            .iter()
            .map(|inv| {
                let fields: Vec<String> = inv
                    .registers
                    .iter()
                    .map(|(n, v)| format!("\"v{n}\": {}", vector(v)))
                    .chain(
                        inv.uniform_writes
                            .iter()
                            .map(|(n, v)| format!("\"c{n}\": {}", vector(v))),
                    )
                    .collect();
                format!("    {{{}}}", fields.join(", "))
            })
            .collect();
        format!(
            "{{\"uniforms\": {{{}}},\n \"{key}\": [\n{}\n]}}\n",
            uniforms.join(", "),
            invocations.join(",\n")
        )
    }
}

/// The `.out` semantic picasso accepts for register `n` (o7-o15 can only be dummies).
fn semantic(n: u16) -> OutputSemantic {
    // Codes 0-6 are the real semantics in register order; the SHBIN table decodes them.
    if n <= 6 {
        OutputSemantic::from_code(n)
    } else {
        OutputSemantic::Dummy
    }
}

impl TestProgram {
    /// The code words and operand descriptors: each distinct descriptor once, those of MAD and
    /// MADI first (their field reaches only 0-31).
    pub fn encode(&self) -> Result<(Vec<u32>, Vec<u32>), DifftestError> {
        if self.ops.len() > PROGRAM_WORDS {
            return Err(DifftestError::Encode(format!(
                "{} words do not fit program memory",
                self.ops.len()
            )));
        }
        let is_mad = |op: &Op| matches!(op.instruction, Instruction::Mad { .. });
        let mut table: Vec<u32> = Vec::new();
        for op in self.ops.iter().filter(|op| is_mad(op)) {
            if !table.contains(&op.descriptor.0) {
                table.push(op.descriptor.0);
            }
        }
        if table.len() > MAD_OPDESC_LIMIT {
            return Err(DifftestError::Encode(format!(
                "{} distinct MAD descriptors do not fit its field",
                table.len()
            )));
        }
        for op in self
            .ops
            .iter()
            .filter(|op| op.has_descriptor() && !is_mad(op))
        {
            if !table.contains(&op.descriptor.0) {
                table.push(op.descriptor.0);
            }
        }
        if table.len() > OPDESC_COUNT {
            return Err(DifftestError::Encode(format!(
                "{} distinct operand descriptors do not fit descriptor memory",
                table.len()
            )));
        }
        let mut words = Vec::with_capacity(self.ops.len());
        for (address, op) in self.ops.iter().enumerate() {
            let mut instruction = op.instruction;
            if let Some(index) = table.iter().position(|&d| d == op.descriptor.0) {
                set_descriptor(&mut instruction, index as u8);
            }
            let word = isa::encode(&instruction).map_err(|e| {
                DifftestError::Encode(format!("{address:#05x}: {e} ({instruction:?})"))
            })?;
            words.push(word);
        }
        Ok((words, table))
    }

    /// The SHBIN file: the code, one DVLE (from the entry to the end of the code) with the
    /// output table.
    pub fn to_shbin(&self) -> Result<Shbin, DifftestError> {
        let (code, opdescs) = self.encode()?;
        let outputs = (0..16u16)
            .filter(|n| self.outputs & (1 << n) != 0)
            .map(|register| OutputEntry {
                semantic: semantic(register),
                register,
                mask: 0xF,
                unknown: 0,
            })
            .collect();
        let dvle = Dvle::plain(
            self.stage,
            u32::from(self.entry),
            code.len() as u32,
            self.outputs,
            outputs,
        );
        Ok(Shbin {
            opdesc_extra: vec![0; opdescs.len()],
            code,
            opdescs,
            dvles: vec![dvle],
        })
    }

    /// The program as the engines load it.
    pub fn to_program(&self) -> Result<ShaderProgram, DifftestError> {
        let shbin = self.to_shbin()?;
        ShaderProgram::from_shbin(&shbin, 0).map_err(|e| DifftestError::Encode(e.to_string()))
    }

    /// Picasso source for the program (one file), if picasso syntax can express it.
    pub fn to_source(&self) -> Result<String, DifftestError> {
        let shbin = self.to_shbin()?;
        let mut files =
            crate::asm::to_source(&shbin).map_err(|e| DifftestError::Unrepresentable(e.reason))?;
        match files.len() {
            1 => Ok(files.remove(0)),
            n => Err(DifftestError::Unrepresentable(format!(
                "{n} source files for one DVLE"
            ))),
        }
    }

    /// How many words are not NOP.
    pub fn instruction_count(&self) -> usize {
        self.ops
            .iter()
            .filter(|op| {
                !matches!(
                    op.instruction,
                    Instruction::Simple {
                        op: isa::SimpleOp::Nop,
                        ..
                    }
                )
            })
            .count()
    }
}

/// Points `instruction` at operand descriptor `index`.
fn set_descriptor(instruction: &mut Instruction, index: u8) {
    match instruction {
        Instruction::Binary { desc, .. }
        | Instruction::Unary { desc, .. }
        | Instruction::Mova { desc, .. }
        | Instruction::Cmp { desc, .. }
        | Instruction::Mad { desc, .. } => *desc = index,
        _ => {}
    }
}
