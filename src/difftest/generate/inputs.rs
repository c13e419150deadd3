//! The inputs of a generated program: its uniforms and its vertices or invocations, rich in the
//! values the float24 rules treat apart.

use super::*;

/// The input registers and float uniforms a program names directly.
pub(super) fn registers_read(program: &TestProgram) -> (BTreeSet<u8>, BTreeSet<u8>) {
    let mut inputs = BTreeSet::new();
    let mut uniforms = BTreeSet::new();
    for op in &program.ops {
        let instruction = op.instruction;
        let sources: Vec<SrcReg> = match instruction {
            Instruction::Binary { src1, src2, .. } | Instruction::Cmp { src1, src2, .. } => {
                vec![src1, src2]
            }
            Instruction::Unary { src1, .. } | Instruction::Mova { src1, .. } => vec![src1],
            Instruction::Mad {
                src1, src2, src3, ..
            } => vec![src1, src2, src3],
            _ => Vec::new(),
        };
        for source in sources {
            match source.raw() {
                raw @ 0x00..=0x0F => {
                    inputs.insert(raw);
                }
                0x10..=0x1F => {}
                raw => {
                    uniforms.insert(raw - 0x20);
                }
            }
        }
    }
    (inputs, uniforms)
}

/// Uniforms and invocations for `program`.
pub(super) fn inputs(entropy: &mut Entropy, program: &TestProgram) -> TestInputs {
    let palette = Palette::new(entropy);
    let (inputs_read, uniforms_read) = registers_read(program);
    let mut result = TestInputs::default();
    // c0-c3 hold addresses for MOVA; c4-c15 and c88-c95 (near the end of the table, where
    // relative reads land) and the uniforms read directly get values.
    for n in 0..4u8 {
        let vector = std::array::from_fn(|_| {
            if entropy.chance(80) {
                values::address_lane(entropy)
            } else {
                palette.lane(entropy)
            }
        });
        result.floats.insert(n, vector);
    }
    for n in (4..16u8).chain(88..96).chain(uniforms_read.iter().copied()) {
        if !result.floats.contains_key(&n) && entropy.chance(85) {
            result.floats.insert(n, palette.vector(entropy));
        }
    }
    for int in &mut result.ints {
        *int = [
            entropy.pick(LOOP_COUNTS).unwrap_or(0),
            entropy.pick(LOOP_STARTS).unwrap_or(0),
            entropy.pick(LOOP_STEPS).unwrap_or(0),
            0,
        ];
    }
    result.bools = entropy.below(1 << 16) as u16;
    // Compiling dominates a JIT's cost, and invocations are cheap: run many per program.
    let count = match program.stage {
        ShaderKind::Vertex => 1 + entropy.index(12),
        ShaderKind::Geometry => 1 + entropy.index(6),
    };
    for _ in 0..count {
        let mut invocation = TestInvocation::default();
        for &n in &inputs_read {
            invocation.registers.insert(n, palette.vector(entropy));
        }
        if program.stage == ShaderKind::Geometry && entropy.chance(25) {
            for _ in 0..1 + entropy.index(2) {
                let n = match uniforms_read.iter().copied().collect::<Vec<_>>().as_slice() {
                    [] => entropy.below(16) as u8,
                    read => entropy.pick(read).unwrap_or(0),
                };
                invocation.uniform_writes.insert(n, palette.vector(entropy));
            }
        }
        result.invocations.push(invocation);
    }
    result
}
