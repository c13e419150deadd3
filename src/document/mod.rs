//! The run document: the JSON input of `picajit run` (uniforms, vertices or geometry-shader
//! invocations) and its JSON output, a library module so that the command line, the
//! differential tester's reproducers and the corpus tests share one definition of both.

pub mod input;
pub mod output;

use std::io::{self, Write};

use crate::exec::{GeometryState, ShaderEngine};
use crate::program::{ShaderKind, Uniforms};

/// Runs every vertex (or geometry-shader invocation) of `run_input` on `engine` and writes the
/// output document of `picajit run` to `out` as it goes: each vertex's result, and each vertex
/// a geometry shader emits, is written when the engine produces it and then dropped, so memory
/// does not grow with the number of vertices or emitted vertices. `dvle` gives the constants
/// applied before the input's uniforms. Give `out` a buffer: the document is written in small
/// pieces.
pub fn write_run(
    out: &mut dyn Write,
    engine: &dyn ShaderEngine,
    dvle: &crate::shbin::Dvle,
    run_input: &input::RunInput,
    options: output::OutputOptions,
) -> io::Result<()> {
    let mut uniforms = Uniforms::from_constants(dvle);
    run_input.apply_uniforms(&mut uniforms);
    let outputs: Vec<usize> = engine.program().output_registers().collect();
    let mut writer = output::RunWriter::begin(out, dvle.kind, &outputs, options)?;
    match dvle.kind {
        ShaderKind::Vertex => {
            for invocation in &run_input.invocations {
                writer.vertex(&engine.run_vertex(&uniforms, &invocation.registers))?;
            }
        }
        ShaderKind::Geometry => {
            let mut state = GeometryState::default();
            for invocation in &run_input.invocations {
                for &(n, v) in &invocation.uniform_writes {
                    uniforms.float[n] = v;
                }
                writer.begin_invocation()?;
                let mut sink = writer.emit_sink();
                let result =
                    engine.run_geometry(&mut state, &uniforms, &invocation.registers, &mut sink);
                let emitted = sink.finish()?;
                writer.end_invocation(emitted, &state.registers.flow, result.err().as_ref())?;
            }
        }
    }
    writer.finish()
}

/// [`write_run`] into a string: the whole document at once (for tests and reproducers, whose
/// documents are small).
pub fn run_document(
    engine: &dyn ShaderEngine,
    dvle: &crate::shbin::Dvle,
    run_input: &input::RunInput,
    options: output::OutputOptions,
) -> String {
    let mut out = Vec::new();
    write_run(&mut out, engine, dvle, run_input, options).expect("writing to a Vec never fails");
    String::from_utf8(out).expect("the document is ASCII")
}
