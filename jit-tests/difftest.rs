//! The differential tester: its generator (deterministic, covering every opcode and the
//! control-flow shapes, always picasso-expressible), a clean run in each precision mode, the
//! shrinker and reproducer on a deliberately wrong engine, the fuzz checks, and the command.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use picajit::asm::{AsmOptions, SourceFile, assemble};
use picajit::difftest::case::TestCase;
use picajit::difftest::compare::{Differ, EngineFactory, compare_engines, interpreter, jit};
use picajit::difftest::fuzz::{ShbinCheck, check_bytes, check_raw_words, check_shbin, raw_case};
use picajit::difftest::generate::{GeneratorOptions, generate};
use picajit::difftest::reproducer::write_reproducer;
use picajit::difftest::rng::{Entropy, program_seed};
use picajit::difftest::runner::{DEFAULT_BUDGET, RunOptions, case_for, run};
use picajit::difftest::shrink::shrink;
use picajit::engine::EngineError;
use picajit::exec::{
    EmitConfig, EmitSink, ExecConfig, ExecError, GeometryState, ShaderEngine, VertexResult,
};
use picajit::float24::Precision;
use picajit::isa::{Instruction, Mnemonic, RelIndex, UnaryOp};
use picajit::program::{InputRegisters, ShaderKind, ShaderProgram, Uniforms, Vec4};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("picajit-difftest-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Program `index` of a run seeded `seed`, without the unstructured share (so picasso
/// source can express it).
fn structured_case(seed: u64, index: u64, max_len: usize) -> TestCase {
    let mut entropy = Entropy::from_seed(program_seed(seed, index));
    let options = GeneratorOptions {
        max_len,
        unstructured_percent: 0,
    };
    generate(&mut entropy, &options)
}

fn config(precision: Precision) -> ExecConfig {
    ExecConfig {
        precision,
        instruction_budget: DEFAULT_BUDGET,
    }
}

#[test]
fn the_generator_is_deterministic_for_a_seed() {
    for index in 0..50 {
        assert_eq!(
            case_for(7, index, 64),
            case_for(7, index, 64),
            "program {index}"
        );
    }
    let differing = (0..50)
        .filter(|&i| case_for(7, i, 64) != case_for(8, i, 64))
        .count();
    assert!(differing > 45, "another seed gives other programs");
    for index in 0..50 {
        assert!(case_for(3, index, 20).program.ops.len() <= 20);
    }
}

#[test]
fn long_programs_fit_descriptor_memory_and_picasso_source() {
    for index in 0..30 {
        let case = structured_case(9, index, 512);
        assert!(case.program.ops.len() <= 512);
        let program = case.program.to_program();
        assert!(program.is_ok(), "program {index}: {program:?}");
        let setemit3 = case
            .program
            .ops
            .iter()
            .any(|op| matches!(op.instruction, Instruction::SetEmit { vertex: 3, .. }));
        assert!(
            setemit3 || case.program.to_source().is_ok(),
            "program {index}"
        );
    }
}

#[test]
fn the_generator_covers_every_opcode_and_addressing_form() {
    let mut mnemonics = BTreeSet::new();
    let mut rels = BTreeSet::new();
    let mut stages = BTreeSet::new();
    let (mut negated, mut swizzled, mut partial_mask, mut setemit3) = (0, 0, 0, 0);
    let (mut deep_ifs, mut deep_loops, mut tail_chains) = (0, 0, 0);
    let (mut entries, mut unknown_opcodes) = (0, 0);
    for index in 0..600 {
        let case = case_for(11, index, 64);
        stages.insert(format!("{:?}", case.program.stage));
        entries += usize::from(case.program.entry != 0);
        unknown_opcodes += case
            .program
            .ops
            .iter()
            .filter(|op| matches!(op.instruction, Instruction::Unknown { .. }))
            .count();
        for op in &case.program.ops {
            mnemonics.insert(format!("{:?}", op.instruction.info().mnemonic));
            let rel = match op.instruction {
                Instruction::Binary { rel, .. }
                | Instruction::Unary { rel, .. }
                | Instruction::Mova { rel, .. }
                | Instruction::Cmp { rel, .. }
                | Instruction::Mad { rel, .. } => rel,
                _ => RelIndex::None,
            };
            rels.insert(format!("{rel:?}"));
            if op.has_descriptor() {
                let d = op.descriptor;
                negated += usize::from(d.negate(0) || d.negate(1));
                swizzled += usize::from(d.swizzle(0) != picajit::isa::Swizzle::IDENTITY);
                partial_mask += usize::from(d.dest_mask().0 != 0xF);
            }
            if matches!(op.instruction, Instruction::SetEmit { vertex: 3, .. }) {
                setemit3 += 1;
            }
        }
        let (ifs, loops) = static_nesting(&case);
        deep_ifs += usize::from(ifs > 8);
        deep_loops += usize::from(loops > 4);
        tail_chains += usize::from(longest_tail_call_chain(&case) >= 4);
    }
    let every: BTreeSet<String> = [
        Mnemonic::Add,
        Mnemonic::Dp3,
        Mnemonic::Dp4,
        Mnemonic::Dph,
        Mnemonic::Dst,
        Mnemonic::Ex2,
        Mnemonic::Lg2,
        Mnemonic::Litp,
        Mnemonic::Mul,
        Mnemonic::Sge,
        Mnemonic::Slt,
        Mnemonic::Flr,
        Mnemonic::Max,
        Mnemonic::Min,
        Mnemonic::Rcp,
        Mnemonic::Rsq,
        Mnemonic::Mova,
        Mnemonic::Mov,
        Mnemonic::Dphi,
        Mnemonic::Dsti,
        Mnemonic::Sgei,
        Mnemonic::Slti,
        Mnemonic::Break,
        Mnemonic::Nop,
        Mnemonic::End,
        Mnemonic::Breakc,
        Mnemonic::Call,
        Mnemonic::Callc,
        Mnemonic::Callu,
        Mnemonic::Ifu,
        Mnemonic::Ifc,
        Mnemonic::Loop,
        Mnemonic::Emit,
        Mnemonic::SetEmit,
        Mnemonic::Jmpc,
        Mnemonic::Jmpu,
        Mnemonic::Cmp,
        Mnemonic::Madi,
        Mnemonic::Mad,
    ]
    .iter()
    .map(|m| format!("{m:?}"))
    .collect();
    let missing: Vec<_> = every.difference(&mnemonics).collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
    assert_eq!(rels.len(), 4, "every index register and none: {rels:?}");
    assert_eq!(stages.len(), 2, "vertex and geometry shaders");
    assert!(negated > 100 && swizzled > 100 && partial_mask > 100);
    assert!(setemit3 > 0, "SETEMIT with vertex id 3");
    assert!(deep_ifs > 0, "IF nesting beyond the 8-deep stack");
    assert!(deep_loops > 0, "LOOP nesting beyond the 4-deep stack");
    assert!(
        tail_chains > 0,
        "four procedures each ending in a call of the next"
    );
    assert!(entries > 10, "main at a non-zero entry point");
    assert!(
        unknown_opcodes > 0,
        "unknown opcodes in the unstructured share"
    );
}

#[test]
fn generated_inputs_drive_addresses_into_every_region() {
    // Final a0 and aL values over many vertex invocations: offsets that land inside c0-c95,
    // past c95 or below c0, and outside -128..127 (which count as 0).
    let (mut inside, mut beyond, mut out_of_range, mut big_al, mut budget) = (0, 0, 0, 0, 0);
    for index in 0..600 {
        let case = case_for(21, index, 64);
        if case.program.stage != ShaderKind::Vertex {
            continue;
        }
        let engine = interpreter(
            case.program.to_program().unwrap(),
            config(Precision::F24Truncate),
        )
        .unwrap();
        let uniforms = case.inputs.uniforms(Precision::F24Truncate);
        for invocation in 0..case.inputs.invocations.len() {
            let registers = case.inputs.registers(invocation, Precision::F24Truncate);
            match engine.run_vertex(&uniforms, &registers) {
                Ok(result) => {
                    for a in result.flow.a0 {
                        match a {
                            1..=95 => inside += 1,
                            -128..=0 | 96..=127 => beyond += 1,
                            _ => out_of_range += 1,
                        }
                    }
                    big_al += usize::from(result.flow.al > 127);
                }
                Err(ExecError::InstructionBudget { .. }) => budget += 1,
                Err(_) => {}
            }
        }
    }
    assert!(
        inside > 50 && beyond > 50 && out_of_range > 50,
        "{inside} {beyond} {out_of_range}"
    );
    assert!(big_al > 50, "{big_al}");
    assert!(budget > 5, "some programs never end: {budget}");
}

/// The longest chain of called ranges each ending in a call of the next.
fn longest_tail_call_chain(case: &TestCase) -> usize {
    let call_range = |at: usize| match case.program.ops.get(at)?.instruction {
        Instruction::CondFlow {
            op: picajit::isa::CondFlowOp::Call | picajit::isa::CondFlowOp::Callc,
            target,
            count,
            ..
        }
        | Instruction::BoolFlow {
            op: picajit::isa::BoolFlowOp::Callu,
            target,
            count,
            ..
        } if count > 0 => Some((usize::from(target), usize::from(count))),
        _ => None,
    };
    (0..case.program.ops.len())
        .map(|at| {
            let mut length = 0;
            let mut next = call_range(at);
            while let Some((target, count)) = next {
                length += 1;
                if length > 8 {
                    break;
                }
                next = call_range(target + count - 1);
            }
            length
        })
        .max()
        .unwrap_or(0)
}

/// The deepest static nesting of IF and LOOP blocks.
fn static_nesting(case: &TestCase) -> (usize, usize) {
    let mut open: Vec<(bool, usize)> = Vec::new();
    let (mut ifs, mut loops) = (0, 0);
    for (at, op) in case.program.ops.iter().enumerate() {
        open.retain(|&(_, end)| end > at);
        match op.instruction {
            Instruction::CondFlow {
                op: picajit::isa::CondFlowOp::Ifc,
                target,
                count,
                ..
            }
            | Instruction::BoolFlow {
                op: picajit::isa::BoolFlowOp::Ifu,
                target,
                count,
                ..
            } => open.push((true, usize::from(target) + usize::from(count))),
            Instruction::Loop { target, .. } => open.push((false, usize::from(target) + 1)),
            _ => {}
        }
        ifs = ifs.max(open.iter().filter(|o| o.0).count());
        loops = loops.max(open.iter().filter(|o| !o.0).count());
    }
    (ifs, loops)
}

#[test]
fn generated_programs_are_picasso_source_that_reassembles_to_the_same_behaviour() {
    let mut identical = 0;
    let mut checked = 0;
    let mut unstructured = 0;
    for index in 0..300 {
        // The default share of unstructured programs has no source; the same programs
        // without it do.
        unstructured += usize::from(case_for(5, index, 64).program.to_source().is_err());
        let case = structured_case(5, index, 64);
        let has_setemit3 = case
            .program
            .ops
            .iter()
            .any(|op| matches!(op.instruction, Instruction::SetEmit { vertex: 3, .. }));
        let source = match case.program.to_source() {
            Ok(source) => source,
            Err(e) if has_setemit3 => {
                assert!(e.to_string().contains("vertex 3"), "{e}");
                continue;
            }
            Err(e) => panic!("program {index}: {e}\n{:?}", case.program),
        };
        let files = [SourceFile {
            name: format!("p{index}.pica"),
            text: source.clone(),
        }];
        let assembly = assemble(&files, AsmOptions { auto_nop: false })
            .unwrap_or_else(|e| panic!("program {index}: {e}\n{source}"));
        let tested = case.program.to_shbin().unwrap();
        identical += usize::from(assembly.shbin == tested);
        assert_eq!(
            assembly.shbin.code.len(),
            tested.code.len(),
            "program {index}"
        );
        // The reassembled program behaves exactly like the tested one, unless it can run past
        // the code into zero words (`add o0, v0, v0` with descriptor 0, which the assembler
        // may have allocated differently).
        let ends = matches!(
            case.program.ops.last().map(|op| op.instruction),
            Some(Instruction::Simple {
                op: picajit::isa::SimpleOp::End,
                ..
            })
        );
        if !ends {
            continue;
        }
        let reassembled = ShaderProgram::from_shbin(&assembly.shbin, 0).unwrap();
        let original = case.program.to_program().unwrap();
        let a = interpreter(original, config(Precision::F24Truncate)).unwrap();
        let b = interpreter(reassembled, config(Precision::F24Truncate)).unwrap();
        let comparison = compare_engines(
            a.as_ref(),
            b.as_ref(),
            &case.inputs,
            config(Precision::F24Truncate),
        );
        assert_eq!(comparison.mismatch, None, "program {index}\n{source}");
        checked += 1;
    }
    assert!(checked > 280, "{checked}");
    assert!(
        unstructured > 3 && unstructured < 40,
        "{unstructured} unstructured"
    );
    eprintln!("{identical} of {checked} reassembled byte for byte");
}

#[test]
fn a_difftest_run_finds_no_mismatch_in_any_precision_mode() {
    let options = RunOptions {
        programs: 300,
        seed: 2024,
        precisions: Precision::ALL.to_vec(),
        out_dir: temp_dir("clean"),
        threads: 2,
        ..RunOptions::default()
    };
    let summary = run(&options, &[&jit], &|_| {}).unwrap();
    let report = summary.report();
    assert_eq!(summary.total().mismatches, 0, "{report}");
    assert_eq!(summary.modes.len(), 3);
    let last = report.lines().last().unwrap();
    assert!(
        last.starts_with("900 programs, ") && last.ends_with(" invocations, 0 mismatches"),
        "{last}"
    );
    for (_, mode) in &summary.modes {
        assert_eq!(mode.programs, 300);
        assert!(mode.invocations >= 300);
    }
}

/// A deliberately wrong engine: the interpreter, except that it flips the lowest bit of o0.x
/// whenever the program contains an RCP.
struct RcpFlipper {
    inner: Box<dyn ShaderEngine>,
    has_rcp: bool,
}

impl ShaderEngine for RcpFlipper {
    fn name(&self) -> &'static str {
        "flipper"
    }
    fn program(&self) -> &ShaderProgram {
        self.inner.program()
    }
    fn config(&self) -> ExecConfig {
        self.inner.config()
    }
    fn run_vertex(&self, u: &Uniforms, v: &InputRegisters) -> Result<VertexResult, ExecError> {
        let mut result = self.inner.run_vertex(u, v)?;
        if self.has_rcp {
            result.outputs[0][0] = f32::from_bits(result.outputs[0][0].to_bits() ^ 1);
        }
        Ok(result)
    }
    fn run_geometry(
        &self,
        state: &mut GeometryState,
        u: &Uniforms,
        v: &InputRegisters,
        sink: &mut dyn EmitSink,
    ) -> Result<(), ExecError> {
        let mut flipped = FlipSink {
            inner: sink,
            flip: self.has_rcp,
        };
        self.inner.run_geometry(state, u, v, &mut flipped)
    }
}

/// Passes emitted vertices on with the lowest bit of o0.x flipped when `flip` is set.
struct FlipSink<'a> {
    inner: &'a mut dyn EmitSink,
    flip: bool,
}

impl EmitSink for FlipSink<'_> {
    fn vertex(&mut self, config: EmitConfig, outputs: &[Vec4; 16]) {
        let mut outputs = *outputs;
        if self.flip {
            outputs[0][0] = f32::from_bits(outputs[0][0].to_bits() ^ 1);
        }
        self.inner.vertex(config, &outputs);
    }

    fn primitive(&mut self, winding: bool, slots: &[[Vec4; 16]; 3]) {
        self.inner.primitive(winding, slots);
    }
}

fn flipper(
    program: ShaderProgram,
    config: ExecConfig,
) -> Result<Box<dyn ShaderEngine>, EngineError> {
    let has_rcp = program.code[..program.code_len].iter().any(|&word| {
        matches!(
            picajit::isa::decode(word),
            Instruction::Unary {
                op: UnaryOp::Rcp,
                ..
            }
        )
    });
    Ok(Box::new(RcpFlipper {
        inner: interpreter(program, config)?,
        has_rcp,
    }))
}

#[test]
fn the_shrinker_reduces_a_planted_bug_to_a_tiny_reproducer() {
    let factory: &EngineFactory = &flipper;
    let mut differ = Differ::new(&interpreter, factory, config(Precision::F24Nearest));
    let mut shrunk_cases = 0;
    for index in 0..400 {
        let case = case_for(99, index, 64);
        if case.program.stage != ShaderKind::Vertex
            || case.program.to_source().is_err()
            || differ.compare(&case).unwrap().mismatch.is_none()
        {
            continue;
        }
        let mut still_fails = |c: &TestCase| {
            c.program.to_source().is_ok()
                && differ
                    .compare(c)
                    .map(|r| r.mismatch.is_some())
                    .unwrap_or(false)
        };
        let shrunk = shrink(&case, 4000, &mut still_fails);
        assert!(
            shrunk.program.instruction_count() <= 3,
            "program {index} shrank only to {:?}",
            shrunk.program
        );
        assert!(shrunk.program.ops.iter().any(|op| matches!(
            op.instruction,
            Instruction::Unary {
                op: UnaryOp::Rcp,
                ..
            }
        )));
        assert_eq!(shrunk.inputs.invocations.len(), 1);
        assert!(differ.compare(&shrunk).unwrap().mismatch.is_some());

        let dir = temp_dir(&format!("shrunk{index}"));
        let reproducer = write_reproducer(&dir, "case", &shrunk, &differ).unwrap();
        assert_eq!(reproducer.program, dir.join("case.pica"));
        assert!(
            reproducer.command.contains("picajit asm --no-nop"),
            "{}",
            reproducer.command
        );
        assert!(reproducer.command.contains("--precision f24-rne"));
        // A test double is no engine of the command line: the hint compares with the JIT.
        assert!(
            reproducer.command.contains("--engine jit "),
            "{}",
            reproducer.command
        );
        assert!(!reproducer.differing_output.is_empty());
        // The written source reassembles and still shows the bug with the written input.
        let text = std::fs::read_to_string(&reproducer.program).unwrap();
        assert!(text.contains("rcp "), "{text}");
        let files = [SourceFile {
            name: "case.pica".into(),
            text,
        }];
        let shbin = assemble(&files, AsmOptions { auto_nop: false })
            .unwrap()
            .shbin;
        let program = ShaderProgram::from_shbin(&shbin, 0).unwrap();
        let json = std::fs::read_to_string(&reproducer.input).unwrap();
        let input =
            picajit::document::input::parse_input(&json, Precision::F24Nearest, ShaderKind::Vertex)
                .unwrap();
        let mut uniforms = Uniforms::default();
        input.apply_uniforms(&mut uniforms);
        let a = interpreter(program.clone(), config(Precision::F24Nearest)).unwrap();
        let b = flipper(program, config(Precision::F24Nearest)).unwrap();
        let registers = input.invocations[0].registers;
        assert_ne!(
            a.run_vertex(&uniforms, &registers).unwrap().outputs[0][0].to_bits(),
            b.run_vertex(&uniforms, &registers).unwrap().outputs[0][0].to_bits()
        );
        shrunk_cases += 1;
        if shrunk_cases == 3 {
            break;
        }
    }
    assert_eq!(
        shrunk_cases, 3,
        "the planted bug shows in generated programs"
    );
}

#[test]
fn a_run_with_a_wrong_engine_reports_the_same_findings_on_any_thread_count() {
    let out_dir = temp_dir("wrong");
    let options = |threads| RunOptions {
        programs: 40,
        seed: 5,
        out_dir: out_dir.clone(),
        threads,
        ..RunOptions::default()
    };
    let one = run(&options(1), &[&flipper], &|_| {}).unwrap();
    let two = run(&options(2), &[&flipper], &|_| {}).unwrap();
    assert_eq!(one, two);
    let total = one.total();
    assert!(total.mismatches > 0, "{}", one.report());
    assert_eq!(one.findings.len() as u64, total.mismatches);
    let report = one.report();
    assert!(report.contains("MISMATCH: program "), "{report}");
    assert!(report.contains("picajit run "), "{report}");
    assert!(
        report
            .lines()
            .last()
            .unwrap()
            .ends_with(&format!(", {} mismatches", total.mismatches))
    );
    let first = &one.findings[0];
    let pica = out_dir.join(format!("mismatch-5-{}.pica", first.index));
    let shbin = out_dir.join(format!("mismatch-5-{}.shbin", first.index));
    assert!(pica.exists() || shbin.exists(), "{report}");
    assert!(
        out_dir
            .join(format!("mismatch-5-{}.json", first.index))
            .exists()
    );
}

#[test]
fn fuzz_difftest_check_holds_on_random_bytes() {
    let mut entropy = Entropy::from_seed(0xF022);
    let mut invocations = 0;
    for _ in 0..1500 {
        let len = entropy.index(160);
        let bytes: Vec<u8> = (0..len).map(|_| entropy.below(256) as u8).collect();
        invocations += check_bytes(&bytes).unwrap_or_else(|e| panic!("{bytes:?}: {e}"));
    }
    assert!(
        invocations >= 1500,
        "every case runs at least one invocation"
    );
    assert!(check_bytes(&[]).is_ok());
}

#[test]
fn fuzz_shbin_check_survives_mutated_files() {
    let mut entropy = Entropy::from_seed(0x5B1);
    let mut seeds: Vec<Vec<u8>> = (0..20)
        .map(|i| picajit::shbin::write(&case_for(1, i, 64).program.to_shbin().unwrap()))
        .collect();
    seeds.push(
        std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/corpus/examples/lit-transform.shbin"
        ))
        .unwrap(),
    );
    let (mut loaded, mut rejected) = (0, 0);
    for round in 0..3000 {
        let mut bytes = seeds[round % seeds.len()].clone();
        for _ in 0..1 + entropy.index(4) {
            if bytes.is_empty() {
                break;
            }
            let at = entropy.index(bytes.len());
            match entropy.index(4) {
                0 => bytes[at] ^= 1 << entropy.below(8),
                1 => bytes[at] = entropy.below(256) as u8,
                2 => bytes.truncate(at),
                _ => bytes.insert(at, entropy.below(256) as u8),
            }
        }
        match check_shbin(&bytes).unwrap_or_else(|e| panic!("round {round}: {e}")) {
            ShbinCheck::Loaded { .. } => loaded += 1,
            ShbinCheck::Rejected(_) => rejected += 1,
        }
    }
    assert!(
        loaded > 300 && rejected > 300,
        "{loaded} loaded, {rejected} rejected"
    );
}

/// Raw program memory through both engines: random words, words built from the encodings of
/// flow instructions with targets inside the code (so that control goes around in it), and
/// mutations of generated programs; every input must agree to the error address and state.
#[test]
fn fuzz_raw_words_check_holds_on_random_memory() {
    let mut entropy = Entropy::from_seed(0x4A57);
    let (mut invocations, mut geometry, mut past_code) = (0, 0, 0);
    let generated: Vec<Vec<u32>> = (0..30)
        .map(|i| case_for(2, i, 48).program.encode().unwrap().0)
        .collect();
    for round in 0..2000 {
        let words = 1 + entropy.index(40);
        let descriptors = entropy.index(8);
        let mut bytes = vec![
            entropy.below(256) as u8,
            entropy.below(256) as u8,
            entropy.below(256) as u8,
            descriptors as u8,
        ];
        for _ in 0..descriptors {
            bytes.extend((entropy.below(1 << 32) as u32).to_le_bytes());
        }
        let source = &generated[round % generated.len()];
        for k in 0..words {
            let word = match round % 3 {
                // Anything.
                0 => entropy.below(1 << 32) as u32,
                // A generated program's word, sometimes with bits flipped.
                1 => {
                    let w = source.get(k).copied().unwrap_or(0);
                    if entropy.chance(20) {
                        w ^ 1 << entropy.below(32)
                    } else {
                        w
                    }
                }
                // Flow instructions (opcodes 0x20-0x2F) and data, targets inside the code.
                _ => {
                    if entropy.chance(40) {
                        let opcode = 0x20 + entropy.below(16) as u32;
                        let target = entropy.below(words as u64 + 2) as u32;
                        let count = entropy.below(8) as u32;
                        opcode << 26 | (entropy.below(16) as u32) << 22 | target << 10 | count
                    } else {
                        entropy.below(1 << 32) as u32 & 0x7FFF_FFFF
                    }
                }
            };
            bytes.extend(word.to_le_bytes());
        }
        let case = raw_case(&bytes);
        geometry += usize::from(case.program.stage == ShaderKind::Geometry);
        past_code += usize::from(case.program.code_len < 4096);
        invocations += check_raw_words(&bytes).unwrap_or_else(|e| panic!("round {round}: {e}"));
    }
    assert!(invocations >= 2000);
    assert!(geometry > 700, "{geometry} geometry shaders");
    assert!(past_code > 1900);
    assert!(check_raw_words(&[]).is_ok());
    assert!(check_raw_words(&[0xFF; 600]).is_ok());
}

/// Geometry shaders of up to 4096 words (all of program memory) and vertex shaders of up to
/// 512 (picasso's limit) come out of `--max-len 4096`; they encode, fit descriptor memory and
/// picasso source (when structured), and both engines agree on a few long ones.
#[test]
fn long_geometry_programs_reach_all_of_memory_and_vertex_programs_stop_at_512() {
    let (mut longest_vertex, mut longest_geometry, mut compared) = (0, 0, 0);
    for index in 0..48 {
        let case = structured_case(21, index, 4096);
        let len = case.program.ops.len();
        match case.program.stage {
            ShaderKind::Vertex => {
                assert!(len <= 512, "program {index}: {len} words");
                longest_vertex = longest_vertex.max(len);
            }
            ShaderKind::Geometry => {
                assert!(len <= 4096, "program {index}: {len} words");
                longest_geometry = longest_geometry.max(len);
            }
        }
        let program = case.program.to_program();
        assert!(program.is_ok(), "program {index}: {program:?}");
        let setemit3 = case
            .program
            .ops
            .iter()
            .any(|op| matches!(op.instruction, Instruction::SetEmit { vertex: 3, .. }));
        let source = case.program.to_source();
        assert!(
            setemit3 || source.is_ok(),
            "program {index} ({len} words): {source:?}"
        );
        if case.program.stage == ShaderKind::Geometry && len > 1024 && compared < 3 {
            let mut differ = Differ::new(&interpreter, &jit, config(Precision::F24Truncate));
            let comparison = differ.compare(&case).unwrap();
            assert_eq!(comparison.mismatch, None, "program {index}");
            compared += 1;
        }
    }
    assert!(longest_geometry > 2048, "{longest_geometry}");
    assert!(longest_vertex > 400, "{longest_vertex}");
    assert_eq!(compared, 3);
    let options = |max_len| RunOptions {
        max_len,
        ..RunOptions::default()
    };
    assert!(options(4096).check().is_ok());
    assert!(options(4097).check().is_err());
}

fn picajit(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_picajit"))
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn the_command_prints_totals_last_and_rejects_bad_options() {
    let out = temp_dir("cli");
    let output = picajit(&[
        "difftest",
        "--programs",
        "40",
        "--seed",
        "3",
        "--precision",
        "f32",
        "--out",
        out.to_str().unwrap(),
        "--threads",
        "2",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let last = stdout.lines().last().unwrap();
    let words: Vec<&str> = last.split(' ').collect();
    assert_eq!(words.len(), 6, "{last}");
    assert_eq!(
        (words[0], words[1], words[3], words[4], words[5]),
        ("40", "programs,", "invocations,", "0", "mismatches")
    );
    assert!(words[2].parse::<u64>().unwrap() >= 40);

    for (args, expected) in [
        (&["difftest", "--max-len", "2"][..], "--max-len"),
        (&["difftest", "--max-len", "4097"][..], "--max-len"),
        (
            &["difftest", "--precision", "f16"][..],
            "[possible values: f24, f24-rne, f32, all]",
        ),
        (&["difftest", "--programs", "many"][..], "--programs"),
        (&["difftest", "--threads", "0"][..], "--threads"),
    ] {
        let output = picajit(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty());
    }
}

/// An engine whose single-vertex path is right but whose batch path is wrong: the batch of a
/// vertex shader zeroes the last vertex's first output plane value. The differential tester
/// checks every candidate's batch path too, so it must notice.
struct BatchBreaker {
    inner: Box<dyn ShaderEngine>,
}

impl ShaderEngine for BatchBreaker {
    fn name(&self) -> &'static str {
        "batch-breaker"
    }
    fn program(&self) -> &ShaderProgram {
        self.inner.program()
    }
    fn config(&self) -> ExecConfig {
        self.inner.config()
    }
    fn run_vertex(&self, u: &Uniforms, v: &InputRegisters) -> Result<VertexResult, ExecError> {
        self.inner.run_vertex(u, v)
    }
    fn run_batch(
        &self,
        u: &Uniforms,
        io: &mut picajit::exec::BatchIo<'_>,
        errors: &mut Vec<(usize, ExecError)>,
    ) {
        self.inner.run_batch(u, io, errors);
        let last = io.count() - 1;
        if io.outputs.registers().planes() > 0 && !errors.iter().any(|(i, _)| *i == last) {
            let plane = io.outputs.plane_mut(0);
            plane[last] = f32::from_bits(plane[last].to_bits() ^ 1);
        }
    }
    fn run_geometry(
        &self,
        state: &mut GeometryState,
        u: &Uniforms,
        v: &InputRegisters,
        sink: &mut dyn EmitSink,
    ) -> Result<(), ExecError> {
        self.inner.run_geometry(state, u, v, sink)
    }
}

fn batch_breaker(
    program: ShaderProgram,
    config: ExecConfig,
) -> Result<Box<dyn ShaderEngine>, EngineError> {
    Ok(Box::new(BatchBreaker {
        inner: interpreter(program, config)?,
    }))
}

#[test]
fn a_wrong_batch_path_is_a_mismatch() {
    let out_dir = temp_dir("batch-breaker");
    let options = RunOptions {
        programs: 30,
        seed: 11,
        out_dir,
        shrink: false,
        ..RunOptions::default()
    };
    let summary = run(&options, &[&jit, &batch_breaker], &|_| {}).unwrap();
    let total = summary.total();
    assert!(total.mismatches > 0, "{}", summary.report());
    let report = summary.report();
    assert!(report.contains("run_batch"), "{report}");
    assert!(report.contains("batch-breaker"), "{report}");
}

/// The interpreter for vertex shaders; for geometry shaders, the `vulkan` engine's refusal (an
/// engine that does not run that kind of program).
fn vertex_only(
    program: ShaderProgram,
    config: ExecConfig,
) -> Result<Box<dyn ShaderEngine>, EngineError> {
    if program.stage == ShaderKind::Geometry {
        return Err(EngineError::Vulkan(
            picajit::translate::host::engine::GpuError::NoGeometryStage("a device".into()),
        ));
    }
    interpreter(program, config)
}

#[test]
fn programs_an_engine_does_not_run_are_counted_apart_not_as_mismatches() {
    let options = RunOptions {
        programs: 60,
        seed: 5,
        out_dir: temp_dir("vertex-only"),
        ..RunOptions::default()
    };
    let summary = run(&options, &[&vertex_only, &jit], &|_| {}).unwrap();
    let total = summary.total();
    let report = summary.report();
    assert_eq!(total.mismatches, 0, "{report}");
    // The geometry shaders among the programs, counted from the generator itself.
    let geometry = (0..options.programs)
        .filter(|&i| {
            case_for(options.seed, i, options.max_len).program.stage == ShaderKind::Geometry
        })
        .count() as u64;
    assert!(
        geometry > 0,
        "seed 5 generates no geometry shader in 60 programs"
    );
    assert_eq!(total.not_run, geometry, "{report}");
    assert!(
        report.contains(&format!("{geometry} programs not run by every engine")),
        "{report}"
    );
    // The other engine still checked them: their invocations are counted.
    assert!(total.invocations > 60, "{report}");
}

#[test]
fn a_run_with_the_gpu_translation_counts_the_programs_in_each_form() {
    use picajit::program::ShaderKind;
    let options = RunOptions {
        programs: 60,
        seed: 1,
        out_dir: temp_dir("forms"),
        threads: 2,
        count_forms: true,
        ..RunOptions::default()
    };
    let summary = run(&options, &[&jit], &|_| {}).unwrap();
    let mode = &summary.modes[0].1;
    assert_eq!(
        mode.translated, 60,
        "every program is translated, geometry shaders too"
    );
    // The generator makes structured programs and tangled ones: both forms occur.
    assert!(
        mode.general_form > 0 && mode.general_form < mode.translated,
        "{} of {}",
        mode.general_form,
        mode.translated
    );
    assert!(summary.report().contains(&format!(
        "{} of 60 programs took the general form",
        mode.general_form
    )));
    let json = summary.json(&options, &["jit"]);
    assert!(json.contains("\"translated\":60"), "{json}");
    // With an engine that refuses geometry shaders, only the programs every engine ran count.
    let summary = run(&options, &[&vertex_only], &|_| {}).unwrap();
    let vertex = (0..60)
        .filter(|&i| case_for(1, i, options.max_len).program.stage == ShaderKind::Vertex)
        .count() as u64;
    assert!(vertex < 60);
    assert_eq!(summary.modes[0].1.translated, vertex);
}
