//! The per-input logic of the cargo-fuzz targets (`fuzz/`), here so that ordinary tests run it
//! too.
//!
//! * [`check_bytes`]: the bytes choose a precision mode and drive the program generator (each
//!   byte one decision, so the fuzzer's mutations map to program changes); the interpreter and
//!   the JIT run the case and must agree.
//! * [`check_shbin`]: the bytes are a SHBIN file. Parsing must never panic; a file that parses
//!   has each DVLE loaded as a program and validated, is printed as source where it can be,
//!   and is written back into a file that parses again.

use crate::exec::ExecConfig;
use crate::float24::Precision;
use crate::program::ShaderProgram;
use crate::shbin;

use super::DifftestError;
use super::case::TestCase;
use super::compare::{Differ, describe, interpreter, jit};
use super::generate::{GeneratorOptions, generate};
use super::rng::Entropy;

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
