//! The run document: the JSON input of `picajit run` (uniforms, vertices or geometry-shader
//! invocations) and its JSON output, a library module so that the command line, the
//! differential tester's reproducers and the corpus tests share one definition of both.

pub mod input;
pub mod output;

use crate::exec::{GeometryState, ShaderEngine};
use crate::program::{ShaderKind, Uniforms};

/// Runs every vertex (or geometry-shader invocation) of `run_input` on `interp` and returns
/// the output document of `picajit run`. `dvle` gives the constants applied before the input's
/// uniforms.
pub fn run_document(
    interp: &dyn ShaderEngine,
    dvle: &crate::shbin::Dvle,
    run_input: &input::RunInput,
    options: output::OutputOptions,
) -> String {
    let mut uniforms = Uniforms::from_constants(dvle);
    run_input.apply_uniforms(&mut uniforms);
    let outputs: Vec<usize> = interp.program().output_registers().collect();
    match dvle.kind {
        ShaderKind::Vertex => {
            let results: Vec<_> = run_input
                .invocations
                .iter()
                .map(|inv| interp.run_vertex(&uniforms, &inv.registers))
                .collect();
            output::vertex_document(&results, &outputs, options)
        }
        ShaderKind::Geometry => {
            let mut state = GeometryState::default();
            let results: Vec<_> = run_input
                .invocations
                .iter()
                .map(|inv| {
                    for &(n, v) in &inv.uniform_writes {
                        uniforms.float[n] = v;
                    }
                    let result =
                        interp.run_geometry_collected(&mut state, &uniforms, &inv.registers);
                    (result, state.registers.flow)
                })
                .collect();
            output::geometry_document(&results, &outputs, options)
        }
    }
}
