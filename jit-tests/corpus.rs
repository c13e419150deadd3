//! The shader corpus (`corpus/programs/NAME/`): every program assembles, prints back as source
//! that reassembles to the identical bytes, and matches its golden outputs in every precision
//! mode, through the interpreter and the JIT. Together the programs cover every opcode, directive and addressing form.
//!
//! A program folder holds `*.pica` files (assembled in name order, one DVLE each), fixtures
//! `dvleN.input.json` in the `picajit run` input format, and goldens
//! `dvleN.PRECISION.golden.json` (the `run --bits --state` output of the interpreter).
//! Regenerate the goldens after an intended change with:
//!
//! ```sh
//! PICAJIT_BLESS=1 cargo test --release --test corpus
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use picajit::asm::{AsmOptions, Assembly, SourceFile, assemble, to_source};
use picajit::document::{input::parse_input, output::OutputOptions, run_document};
use picajit::exec::ExecConfig;
use picajit::float24::Precision;
use picajit::interp::Interpreter;
use picajit::isa::{Mnemonic, decode};
use picajit::jit::JitShader;
use picajit::program::ShaderProgram;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus/programs")
}

/// Every program folder, sorted.
fn programs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("corpus/programs exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn files_with(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().ends_with(suffix))
        .collect();
    files.sort();
    files
}

fn sources(dir: &Path) -> Vec<SourceFile> {
    files_with(dir, ".pica")
        .into_iter()
        .map(|path| SourceFile {
            name: format!(
                "{}/{}",
                dir.file_name().unwrap().to_str().unwrap(),
                path.file_name().unwrap().to_str().unwrap()
            ),
            text: std::fs::read_to_string(&path).unwrap(),
        })
        .collect()
}

fn assemble_program(dir: &Path) -> Assembly {
    assemble(&sources(dir), AsmOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_corpus_has_at_least_24_programs() {
    assert!(programs().len() >= 24, "{} programs", programs().len());
}

#[test]
fn every_program_assembles_and_round_trips_through_source() {
    for dir in programs() {
        let assembly = assemble_program(&dir);
        let bytes = picajit::shbin::write(&assembly.shbin);
        let texts = to_source(&assembly.shbin).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let regenerated: Vec<SourceFile> = texts
            .into_iter()
            .enumerate()
            .map(|(i, text)| SourceFile {
                name: format!("dvle{i}.pica"),
                text,
            })
            .collect();
        let again = assemble(&regenerated, AsmOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert_eq!(
            picajit::shbin::write(&again.shbin),
            bytes,
            "{}",
            dir.display()
        );
    }
}

#[test]
fn vertex_programs_fit_and_validate_cleanly() {
    for dir in programs() {
        let assembly = assemble_program(&dir);
        let errors: Vec<String> = assembly
            .validation_warnings()
            .iter()
            .filter(|w| {
                // Path findings (outputs, reads) may come from impossible paths; the errata that
                // hang the hardware must not appear in the corpus.
                w.message.contains("MOVA")
                    || w.message.contains("input registers")
                    || w.message.contains("unknown opcode")
            })
            .map(|w| w.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", dir.display());
    }
}

#[test]
fn golden_outputs_in_every_precision() {
    let bless = std::env::var_os("PICAJIT_BLESS").is_some();
    let mut checked = 0;
    for dir in programs() {
        let assembly = assemble_program(&dir);
        let inputs = files_with(&dir, ".input.json");
        assert!(!inputs.is_empty(), "{} has no fixture", dir.display());
        for input_path in inputs {
            let file = input_path.file_name().unwrap().to_str().unwrap();
            let index: usize = file
                .trim_start_matches("dvle")
                .trim_end_matches(".input.json")
                .parse()
                .unwrap();
            let dvle = &assembly.shbin.dvles[index];
            let text = std::fs::read_to_string(&input_path).unwrap();
            for precision in Precision::ALL {
                let run_input = parse_input(&text, precision, dvle.kind)
                    .unwrap_or_else(|e| panic!("{file}: {e}"));
                let program = ShaderProgram::from_shbin(&assembly.shbin, index).unwrap();
                let config = ExecConfig {
                    precision,
                    ..ExecConfig::default()
                };
                let options = OutputOptions {
                    bits: true,
                    state: true,
                };
                let interp = Interpreter::new(program.clone(), config);
                let document = run_document(&interp, dvle, &run_input, options);
                let jit = JitShader::compile(program, config).unwrap();
                let jit_document = run_document(&jit, dvle, &run_input, options);
                assert_eq!(
                    jit_document, document,
                    "{file} in {precision}: the JIT differs from the interpreter"
                );
                let golden = dir.join(format!("dvle{index}.{}.golden.json", precision.name()));
                if bless {
                    std::fs::write(&golden, &document).unwrap();
                } else {
                    let expected = std::fs::read_to_string(&golden).unwrap_or_else(|_| {
                        panic!(
                            "{} is missing: run PICAJIT_BLESS=1 cargo test --release --test corpus",
                            golden.display()
                        )
                    });
                    assert_eq!(document, expected, "{} changed", golden.display());
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 72, "{checked} golden files");
}

#[test]
fn the_corpus_covers_every_opcode_and_directive() {
    let mut mnemonics = BTreeSet::new();
    let mut text = String::new();
    for dir in programs() {
        let assembly = assemble_program(&dir);
        for &word in &assembly.shbin.code {
            mnemonics.insert(format!("{:?}", decode(word).info().mnemonic));
        }
        for file in sources(&dir) {
            text += &file.text.to_ascii_lowercase();
        }
    }
    let all: BTreeSet<String> = picajit::isa::OPCODES
        .iter()
        .filter(|o| o.mnemonic != Mnemonic::Unknown)
        .map(|o| format!("{:?}", o.mnemonic))
        .collect();
    let missing: Vec<_> = all.difference(&mnemonics).collect();
    assert!(
        missing.is_empty(),
        "opcodes no corpus program uses: {missing:?}"
    );
    let forms = [
        ".proc",
        ".else",
        ".end",
        ".alias",
        ".fvec",
        ".ivec",
        ".bool",
        ".constf",
        ".constfa",
        ".consti",
        ".setf",
        ".seti",
        ".setb",
        ".in",
        ".out",
        ".entry",
        ".nodvle",
        ".gsh point",
        ".gsh variable",
        ".gsh fixed",
        "[a0.x",
        "[a0.y",
        "[al",
        "position",
        "normalquat",
        "color",
        "texcoord0",
        "texcoord0w",
        "texcoord1",
        "texcoord2",
        "view",
        "dummy",
        "jmpu !",
        "cmp.x && ",
        " || ",
        "setemit",
        " eq,",
        " ne,",
        " lt,",
        " le,",
        " gt,",
        " ge,",
    ];
    let missing: Vec<_> = forms.iter().filter(|f| !text.contains(*f)).collect();
    assert!(
        missing.is_empty(),
        "forms no corpus program uses: {missing:?}"
    );
}
