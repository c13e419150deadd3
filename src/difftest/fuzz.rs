//! The per-input logic of the cargo-fuzz targets (`fuzz/`), here so that ordinary tests run it
//! too.
//!
//! * [`check_bytes`]: the bytes choose a precision mode and drive the program generator (each
//!   byte one decision, so the fuzzer's mutations map to program changes); the interpreter and
//!   the JIT run the case and must agree.
//! * [`check_shbin`]: the bytes are a SHBIN file. Parsing must never panic; a file that parses
//!   has each DVLE loaded as a program and validated, is printed as source where it can be,
//!   and is written back into a file that parses again.
//! * [`check_raw_words`]: the bytes are arbitrary code words, operand descriptors, an entry
//!   point and a stage (no generator in between: every encoding, every flow target, programs
//!   that run on into the zero words past them); both engines run them and must agree bit for
//!   bit, errors to the address and geometry-shader state after every invocation included.

use crate::exec::{ExecConfig, GeometryResult, GeometryState, ShaderEngine};
use crate::float24::Precision;
use crate::isa::{OPDESC_COUNT, PROGRAM_WORDS};
use crate::program::{InputRegisters, ShaderKind, ShaderProgram, Uniforms};
use crate::shbin;

use super::DifftestError;
use super::case::{Lane, TestCase};
use super::compare::{
    Differ, describe, geometry_difference, interpreter, jit, state_difference, vertex_difference,
};
use super::generate::{GeneratorOptions, generate};
use super::rng::{Entropy, mix64};
use super::values::{LOOP_COUNTS, LOOP_STARTS, LOOP_STEPS, Palette, address_lane};

/// The instruction budget of fuzzed invocations (small: most inputs are short programs, and a
/// program that never ends should cost little).
pub const FUZZ_BUDGET: u64 = 2_000;
/// The most code words of a fuzzed program.
pub const FUZZ_MAX_LEN: usize = 48;

/// The precision mode and test case that `bytes` describe.
pub fn case_from_bytes(bytes: &[u8]) -> (Precision, TestCase) {
    let (first, rest) = bytes.split_first().map_or((0, &[][..]), |(f, r)| (*f, r));
    let precision = Precision::ALL[usize::from(first) % Precision::ALL.len()];
    let mut entropy = Entropy::from_bytes(rest);
    let case = generate(
        &mut entropy,
        &GeneratorOptions {
            max_len: FUZZ_MAX_LEN,
            unstructured_percent: 10,
        },
    );
    (precision, case)
}

/// Runs the case `bytes` describe on the interpreter and the JIT; returns how many invocations
/// ran, or what differed.
pub fn check_bytes(bytes: &[u8]) -> Result<usize, DifftestError> {
    let (precision, case) = case_from_bytes(bytes);
    let config = ExecConfig {
        precision,
        instruction_budget: FUZZ_BUDGET,
    };
    let mut differ = Differ::new(&interpreter, &jit, config);
    let comparison = differ
        .compare(&case)
        .map_err(|e| DifftestError::Finding(format!("precision {precision}: {e}")))?;
    match comparison.mismatch {
        None => Ok(comparison.invocations),
        Some(mismatch) => Err(DifftestError::Finding(format!(
            "precision {precision}: the engines differ at {}\nprogram: {:?}\ninputs: {}",
            describe(&mismatch),
            case.program,
            case.inputs.to_json(case.program.stage)
        ))),
    }
}

/// What [`check_shbin`] saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShbinCheck {
    /// The file does not parse (the error is the parser's).
    Rejected(String),
    /// The file parsed; this many DVLEs were loaded and validated.
    Loaded {
        /// DVLEs loaded as programs.
        programs: usize,
        /// Validation diagnostics over all of them.
        diagnostics: usize,
    },
}

/// Parses `bytes` as a SHBIN file and, when it parses, loads and validates every DVLE, prints
/// the file as source (or learns why it cannot be) and checks that writing it back gives a file
/// that parses. Only a rewritten file that no longer parses is a failure; everything else a
/// malformed file can do is an answer.
pub fn check_shbin(bytes: &[u8]) -> Result<ShbinCheck, DifftestError> {
    let parsed = match shbin::parse(bytes) {
        Ok(parsed) => parsed,
        Err(e) => return Ok(ShbinCheck::Rejected(e.to_string())),
    };
    let mut programs = 0;
    let mut diagnostics = 0;
    for (index, dvle) in parsed.dvles.iter().enumerate() {
        if let Ok(program) = ShaderProgram::from_shbin(&parsed, index) {
            programs += 1;
            diagnostics +=
                crate::validate::validate_program(&program, &dvle.output_registers()).len();
        }
    }
    let _ = crate::asm::to_source(&parsed);
    let rewritten = shbin::write(&parsed);
    if let Err(e) = shbin::parse(&rewritten) {
        return Err(DifftestError::Finding(format!(
            "a parsed file, written back, no longer parses: {e}"
        )));
    }
    Ok(ShbinCheck::Loaded {
        programs,
        diagnostics,
    })
}

/// The most code words a raw-words input uploads (the rest of memory is zero words).
pub const RAW_MAX_WORDS: usize = 64;
/// The instruction budget of raw-words invocations (small: arbitrary words rarely reach END).
pub const RAW_BUDGET: u64 = 600;

/// A raw-words input: the program and settings its bytes describe.
#[derive(Clone, Debug, PartialEq)]
pub struct RawCase {
    /// The program.
    pub program: ShaderProgram,
    /// Precision mode and budget.
    pub config: ExecConfig,
    /// The uniforms (all invocations).
    pub uniforms: Uniforms,
    /// One input set per vertex or geometry-shader invocation.
    pub invocations: Vec<InputRegisters>,
}

/// The raw-words case `bytes` describe:
///
/// * byte 0: bits 0-1 the precision mode (of three), bit 2 a geometry shader, bit 3 an entry
///   anywhere in memory (otherwise inside the uploaded code), bits 4-5 one to four invocations;
/// * bytes 1-2: the entry point (little-endian, wrapped);
/// * byte 3: how many operand descriptors follow (up to 128), four bytes each;
/// * the rest: code words, four bytes each (little-endian), at most [`RAW_MAX_WORDS`];
///
/// missing bytes read as zero. The uniforms and inputs come from a hash of all the bytes, rich
/// in float24 edge cases, with loop counters and addresses that make loops and relative reads
/// go somewhere.
pub fn raw_case(bytes: &[u8]) -> RawCase {
    let byte = |i: usize| bytes.get(i).copied().unwrap_or(0);
    let word = |at: usize| u32::from_le_bytes([byte(at), byte(at + 1), byte(at + 2), byte(at + 3)]);
    let flags = byte(0);
    let precision = Precision::ALL[usize::from(flags & 3) % Precision::ALL.len()];
    let stage = if flags & 4 != 0 {
        ShaderKind::Geometry
    } else {
        ShaderKind::Vertex
    };
    let descriptor_count = usize::from(byte(3)).min(OPDESC_COUNT);
    let descriptors: Vec<u32> = (0..descriptor_count).map(|k| word(4 + 4 * k)).collect();
    let code_at = 4 + 4 * descriptor_count;
    let code_words = bytes
        .len()
        .saturating_sub(code_at)
        .div_ceil(4)
        .min(RAW_MAX_WORDS);
    let code: Vec<u32> = (0..code_words).map(|k| word(code_at + 4 * k)).collect();
    let raw_entry = u32::from(u16::from_le_bytes([byte(1), byte(2)]));
    let entry = if flags & 8 != 0 || code.is_empty() {
        raw_entry % PROGRAM_WORDS as u32
    } else {
        raw_entry % code.len() as u32
    };

    let mut entropy = Entropy::from_seed(mix64(xxhash_rust::xxh3::xxh3_64(bytes)));
    let output_mask = 1 + entropy.below(0xFFFF) as u16;
    let program = ShaderProgram::new(&code, &descriptors, entry, stage, output_mask)
        .expect("at most 64 words, 128 descriptors and an entry inside memory");
    let palette = Palette::new(&mut entropy);
    let mut uniforms = Uniforms::default();
    for (n, register) in uniforms.float.iter_mut().enumerate() {
        *register = std::array::from_fn(|_| {
            let lane: Lane = if n < 4 && entropy.chance(70) {
                address_lane(&mut entropy)
            } else {
                palette.lane(&mut entropy)
            };
            lane.value(precision)
        });
    }
    for int in &mut uniforms.int {
        *int = [
            entropy.pick(LOOP_COUNTS).unwrap_or(0),
            entropy.pick(LOOP_STARTS).unwrap_or(0),
            entropy.pick(LOOP_STEPS).unwrap_or(0),
            0,
        ];
    }
    uniforms.bools = entropy.below(1 << 16) as u16;
    let invocations = (0..=usize::from(flags >> 4 & 3))
        .map(|_| {
            std::array::from_fn(|_| {
                let lanes = palette.vector(&mut entropy);
                lanes.map(|lane| lane.value(precision))
            })
        })
        .collect();
    RawCase {
        program,
        config: ExecConfig {
            precision,
            instruction_budget: RAW_BUDGET,
        },
        uniforms,
        invocations,
    }
}

/// Runs the raw-words case `bytes` describe ([`raw_case`]) on the interpreter and the JIT;
/// returns how many invocations ran, or what differed: outputs, a0/aL/cmp, errors (kind and
/// address), what a geometry shader emitted and its state after each invocation.
pub fn check_raw_words(bytes: &[u8]) -> Result<usize, DifftestError> {
    let case = raw_case(bytes);
    let names = ["interp", "jit"];
    let prepare = |factory: &super::compare::EngineFactory| {
        factory(case.program.clone(), case.config).map_err(DifftestError::Engine)
    };
    let reference: Box<dyn ShaderEngine> = prepare(&interpreter)?;
    let candidate: Box<dyn ShaderEngine> = prepare(&jit)?;
    let finding = |invocation: usize, difference: String| {
        DifftestError::Finding(format!(
            "raw words, invocation {invocation}: {difference}\nprogram: {:?}\nconfig: {:?}",
            case.program, case.config
        ))
    };
    let mut states = [GeometryState::default(), GeometryState::default()];
    for (index, inputs) in case.invocations.iter().enumerate() {
        match case.program.stage {
            ShaderKind::Vertex => {
                let a = reference.run_vertex(&case.uniforms, inputs);
                let b = candidate.run_vertex(&case.uniforms, inputs);
                if let Some(difference) = vertex_difference(&a, &b, names) {
                    return Err(finding(index, difference));
                }
                if let (Err(x), Err(y)) = (&a, &b)
                    && x != y
                {
                    return Err(finding(index, format!("errors differ: {x} / {y}")));
                }
            }
            ShaderKind::Geometry => {
                let [sa, sb] = &mut states;
                let mut emitted = [GeometryResult::default(), GeometryResult::default()];
                let [ea, eb] = &mut emitted;
                let a = reference.run_geometry(sa, &case.uniforms, inputs, ea);
                let b = candidate.run_geometry(sb, &case.uniforms, inputs, eb);
                if let Some(difference) =
                    geometry_difference((&a, &emitted[0]), (&b, &emitted[1]), names)
                {
                    return Err(finding(index, difference));
                }
                if a != b {
                    return Err(finding(index, format!("outcomes differ: {a:?} / {b:?}")));
                }
                if let Some(difference) = state_difference(&states[0], &states[1], names) {
                    return Err(finding(index, difference));
                }
            }
        }
    }
    Ok(case.invocations.len())
}
