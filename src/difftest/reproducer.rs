//! Writing a mismatch down so that anyone can rerun it: `STEM.pica` (picasso source from the
//! SHBIN through [`crate::asm::to_source`], checked to reassemble into a program that still
//! mismatches) or, for the few programs picasso cannot express (or whose reassembly no longer
//! mismatches), the tested `STEM.shbin`; and `STEM.json`
//! in the `picajit run` input format with every value spelled exactly (`"0x..."` f32 bits or
//! `"f24:0x..."`), checked to read back as the values tested.

use std::path::{Path, PathBuf};

use crate::asm::{AsmOptions, SourceFile, assemble};
use crate::document::{input, output, run_document};
use crate::float24::Precision;
use crate::program::{ShaderProgram, Uniforms};
use crate::shbin::{self, Shbin};

use super::DifftestError;
use super::case::TestCase;
use super::compare::Differ;

/// The files of a written reproducer and how to run them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reproducer {
    /// The program: `.pica` source, or `.shbin` when picasso cannot express it.
    pub program: PathBuf,
    /// The `run` input file.
    pub input: PathBuf,
    /// The command line that shows the candidate engine's output (`--engine interp` the
    /// reference's).
    pub command: String,
    /// Whether the reassembled source is byte for byte the binary tested (`None` for a SHBIN
    /// reproducer).
    pub identical_binary: Option<bool>,
    /// The lines of the two engines' `run --bits --state` output that differ.
    pub differing_output: Vec<String>,
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), DifftestError> {
    std::fs::write(path, bytes).map_err(|e| DifftestError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Writes `case` as `DIR/STEM.pica` (or `.shbin`) and `DIR/STEM.json`, after checking both read
/// back as what `differ` found mismatching.
pub fn write_reproducer(
    dir: &Path,
    stem: &str,
    case: &TestCase,
    differ: &Differ,
) -> Result<Reproducer, DifftestError> {
    let config = differ.config();
    let precision = config.precision;
    std::fs::create_dir_all(dir).map_err(|e| DifftestError::Io {
        path: dir.to_path_buf(),
        message: e.to_string(),
    })?;
    let stage = case.program.stage;
    let json = case.inputs.to_json(stage);
    check_input_reads_back(case, &json, precision)?;
    let input_path = dir.join(format!("{stem}.json"));
    write_file(&input_path, json.as_bytes())?;

    let tested = case.program.to_shbin()?;
    let shbin_path = dir.join(format!("{stem}.shbin"));
    // Picasso source when it expresses the program and its reassembly still mismatches (a
    // program that runs past its code reads descriptor 0, which the assembler may allocate
    // differently); the tested SHBIN otherwise.
    let mut written = None;
    if let Ok(source) = case.program.to_source() {
        let pica_path = dir.join(format!("{stem}.pica"));
        let reassembled = reassemble(&pica_path, source.clone())?;
        let program = ShaderProgram::from_shbin(&reassembled, 0)
            .map_err(|e| DifftestError::Reproducer(e.to_string()))?;
        if differ
            .compare_program(program.clone(), &case.inputs)?
            .mismatch
            .is_some()
        {
            write_file(&pica_path, source.as_bytes())?;
            let step = format!(
                "picajit asm --no-nop {} -o {} && ",
                pica_path.display(),
                shbin_path.display()
            );
            let identical = reassembled == tested;
            written = Some((pica_path, reassembled, program, Some(identical), step));
        }
    }
    let (program_path, run_shbin, program, identical, assemble_step) = match written {
        Some(written) => written,
        None => {
            write_file(&shbin_path, &shbin::write(&tested))?;
            let program = case.program.to_program()?;
            (shbin_path.clone(), tested, program, None, String::new())
        }
    };
    if differ
        .compare_program(program.clone(), &case.inputs)?
        .mismatch
        .is_none()
    {
        return Err(DifftestError::Reproducer(format!(
            "{} no longer mismatches",
            program_path.display()
        )));
    }
    let (differing_output, candidate) =
        differing_output(differ, program, &run_shbin, &json, precision)?;
    // The candidate by its command-line name; a test double's name is no engine's, and the
    // JIT is then the engine to compare with.
    let engine = crate::engine::EngineKind::NAMED
        .into_iter()
        .find(|k| k.name() == candidate)
        .map_or("jit", |k| k.name());
    let command = format!(
        "{assemble_step}picajit run {} --input {} --precision {precision} --budget {} --engine {engine} --bits --state",
        shbin_path.display(),
        input_path.display(),
        config.instruction_budget
    );
    Ok(Reproducer {
        program: program_path,
        input: input_path,
        command,
        identical_binary: identical,
        differing_output,
    })
}

/// Assembles the written source as `picajit asm --no-nop` would.
fn reassemble(path: &Path, text: String) -> Result<Shbin, DifftestError> {
    let files = [SourceFile {
        name: path.display().to_string(),
        text,
    }];
    assemble(&files, AsmOptions { auto_nop: false })
        .map(|assembly| assembly.shbin)
        .map_err(|e| DifftestError::Reproducer(format!("the source does not reassemble: {e}")))
}

/// Checks that the `run` input parser reads `json` as exactly the case's uniforms and inputs.
fn check_input_reads_back(
    case: &TestCase,
    json: &str,
    precision: Precision,
) -> Result<(), DifftestError> {
    let stage = case.program.stage;
    let parsed = input::parse_input(json, precision, stage)
        .map_err(|e| DifftestError::Reproducer(format!("the input does not parse: {e}")))?;
    let bits = |v: &[f32; 4]| v.map(f32::to_bits);
    let mut uniforms = Uniforms::default();
    parsed.apply_uniforms(&mut uniforms);
    let mut expected = case.inputs.uniforms(precision);
    let same_uniforms = |a: &Uniforms, b: &Uniforms| {
        a.int == b.int
            && a.bools == b.bools
            && a.float
                .iter()
                .zip(&b.float)
                .all(|(x, y)| bits(x) == bits(y))
    };
    if !same_uniforms(&uniforms, &expected) {
        return Err(DifftestError::Reproducer(
            "the input's uniforms read back differently".to_string(),
        ));
    }
    if parsed.invocations.len() != case.inputs.invocations.len() {
        return Err(DifftestError::Reproducer(
            "the input's invocation count reads back differently".to_string(),
        ));
    }
    for (index, invocation) in parsed.invocations.iter().enumerate() {
        for &(n, v) in &invocation.uniform_writes {
            uniforms.float[n] = v;
        }
        case.inputs.apply_writes(index, &mut expected, precision);
        let registers = case.inputs.registers(index, precision);
        let same_registers = invocation
            .registers
            .iter()
            .zip(&registers)
            .all(|(x, y)| bits(x) == bits(y));
        if !same_registers || !same_uniforms(&uniforms, &expected) {
            return Err(DifftestError::Reproducer(format!(
                "invocation {index} of the input reads back differently"
            )));
        }
    }
    Ok(())
}

/// The lines of both engines' `run --bits --state` documents that differ, and the candidate's
/// name.
fn differing_output(
    differ: &Differ,
    program: ShaderProgram,
    shbin: &Shbin,
    json: &str,
    precision: Precision,
) -> Result<(Vec<String>, &'static str), DifftestError> {
    let Some(dvle) = shbin.dvles.first() else {
        return Err(DifftestError::Reproducer("no DVLE".to_string()));
    };
    let run_input = input::parse_input(json, precision, dvle.kind)
        .map_err(|e| DifftestError::Reproducer(e.to_string()))?;
    let (reference, candidate) = differ.prepare(program)?;
    let options = output::OutputOptions {
        bits: true,
        state: true,
    };
    let a = run_document(reference.as_ref(), dvle, &run_input, options);
    let b = run_document(candidate.as_ref(), dvle, &run_input, options);
    let mut lines = Vec::new();
    for (x, y) in a.lines().zip(b.lines()) {
        if x != y {
            lines.push(format!("{}: {}", reference.name(), x.trim()));
            lines.push(format!("{}: {}", candidate.name(), y.trim()));
        }
    }
    Ok((lines, candidate.name()))
}
