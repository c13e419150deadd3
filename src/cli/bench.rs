//! `picajit bench`: compile time and throughput of each engine, and whether they agree.
//!
//! Vertex shaders run the input's vertices, repeated, in batches of [`BATCH`] that reuse one
//! input buffer and one result buffer; geometry shaders run the input's invocation list as
//! consecutive draws (each on a fresh state). Either way memory does not depend on the count
//! asked for. Agreement is checked by one more, untimed, pass per engine that hashes every
//! result (outputs, flow registers, errors, every emitted vertex and triangle) bit for bit.

use std::time::{Duration, Instant};

use xxhash_rust::xxh3::Xxh3Default;

use crate::document::input::RunInput;
use crate::engine::{self, EngineKind};
use crate::exec::{
    EmitConfig, EmitSink, ExecConfig, ExecError, GeometryState, ShaderEngine, VertexResult,
};
use crate::program::{InputRegisters, ShaderKind, ShaderProgram, Uniforms, Vec4};
use crate::shbin::Dvle;

use super::CliError;

/// What one vertex invocation gives.
type VertexOutcome = Result<VertexResult, ExecError>;

/// Vertices per `run_vertices` call.
pub const BATCH: usize = 4096;

/// What to measure.
pub struct BenchSetup<'a> {
    /// The program file's name, for the report.
    pub name: String,
    /// The DVLE index, for the report.
    pub index: usize,
    /// Its DVLE (constants, stage).
    pub dvle: &'a Dvle,
    /// Its program.
    pub program: ShaderProgram,
    /// The input file.
    pub input: &'a RunInput,
    /// Settings.
    pub config: ExecConfig,
    /// Vertices (or invocations) per measured run.
    pub count: u64,
    /// Measured runs per engine (the best is reported).
    pub repeat: u64,
}

/// How one engine did.
struct Measured {
    prepare: Duration,
    best: Duration,
    digest: u128,
    emitted: u64,
}

/// Runs the benchmark and returns the report.
pub fn bench(setup: &BenchSetup) -> Result<String, CliError> {
    let geometry = setup.dvle.kind == ShaderKind::Geometry;
    let unit = if geometry { "invocation" } else { "vertex" };
    let units = if geometry { "invocations" } else { "vertices" };
    let mut report = format!(
        "{}: DVLE {} ({} shader), {} code words, {} {units} per run{}, precision {}\n",
        setup.name,
        setup.index,
        setup.dvle.kind.name(),
        setup.program.code_len,
        setup.count,
        if geometry {
            format!(" (draws of {})", setup.input.invocations.len())
        } else {
            String::new()
        },
        setup.config.precision
    );
    let mut digests = Vec::new();
    for kind in EngineKind::ALL {
        let started = Instant::now();
        let engine = engine::prepare(kind, setup.program.clone(), setup.config)?;
        let prepare = started.elapsed();
        let measured = if geometry {
            measure_geometry(engine.as_ref(), setup, prepare)
        } else {
            measure_vertices(engine.as_ref(), setup, prepare)
        };
        let seconds = measured.best.as_secs_f64().max(1e-9);
        report += &format!(
            "{:>6}: prepare {:>9.3} ms, {:>12.0} {units}/s ({:.1} ns/{unit})",
            kind.name(),
            measured.prepare.as_secs_f64() * 1e3,
            setup.count as f64 / seconds,
            seconds * 1e9 / setup.count as f64
        );
        if geometry {
            report += &format!(", {} vertices emitted per run", measured.emitted);
        }
        report.push('\n');
        digests.push(measured.digest);
    }
    if digests.windows(2).all(|pair| pair[0] == pair[1]) {
        report += &format!("engines agree bit for bit on every {unit}\n");
    } else {
        report +=
            "ENGINES DISAGREE: run `picajit run --bits --state` with each --engine to compare\n";
    }
    Ok(report)
}

/// Fills `batch` with `len` inputs taken cyclically from `inputs`, starting at `start`.
fn fill(batch: &mut Vec<InputRegisters>, inputs: &[InputRegisters], start: u64, len: usize) {
    batch.clear();
    let n = inputs.len() as u64;
    batch.extend((0..len as u64).map(|i| inputs[((start + i) % n) as usize]));
}

fn measure_vertices(engine: &dyn ShaderEngine, setup: &BenchSetup, prepare: Duration) -> Measured {
    let mut uniforms = Uniforms::from_constants(setup.dvle);
    setup.input.apply_uniforms(&mut uniforms);
    let inputs: Vec<InputRegisters> = setup
        .input
        .invocations
        .iter()
        .map(|i| i.registers)
        .collect();
    let batch_len = BATCH.min(usize::try_from(setup.count).unwrap_or(BATCH));
    let mut batch = Vec::with_capacity(batch_len);
    let mut results = Vec::with_capacity(batch_len);
    // Runs all `count` vertices in batches; `each` sees every batch's results.
    let mut pass = |each: &mut dyn FnMut(&[VertexOutcome])| {
        let mut elapsed = Duration::ZERO;
        let mut done = 0u64;
        while done < setup.count {
            let len = (setup.count - done).min(BATCH as u64) as usize;
            fill(&mut batch, &inputs, done, len);
            results.clear();
            let started = Instant::now();
            engine.run_vertices(&uniforms, &batch, &mut results);
            elapsed += started.elapsed();
            each(&results);
            done += len as u64;
        }
        elapsed
    };
    let mut best = Duration::MAX;
    for _ in 0..setup.repeat {
        best = best.min(pass(&mut |_| {}));
    }
    let outputs: Vec<usize> = engine.program().output_registers().collect();
    let mut hasher = Xxh3Default::new();
    pass(&mut |results| {
        for result in results {
            match result {
                Ok(r) => {
                    hasher.update(b"ok");
                    for &n in &outputs {
                        hash_vec(&mut hasher, &r.outputs[n]);
                    }
                    hash_flow(&mut hasher, &r.flow);
                }
                Err(e) => hasher.update(e.to_string().as_bytes()),
            }
        }
    });
    Measured {
        prepare,
        best,
        digest: hasher.digest128(),
        emitted: 0,
    }
}

fn hash_vec(hasher: &mut Xxh3Default, v: &Vec4) {
    for x in v {
        hasher.update(&x.to_bits().to_le_bytes());
    }
}

fn hash_flow(hasher: &mut Xxh3Default, flow: &crate::program::FlowRegisters) {
    hasher.update(format!("{:?}", (flow.a0, flow.al, flow.cmp)).as_bytes());
}

/// Counts what is emitted (the timed runs).
#[derive(Default)]
struct Count(u64);

impl EmitSink for Count {
    fn vertex(&mut self, _: EmitConfig, _: &[Vec4; 16]) {
        self.0 += 1;
    }
    fn primitive(&mut self, _: bool, _: &[[Vec4; 16]; 3]) {}
}

/// Hashes what is emitted, for the output registers (the agreement pass).
struct Hashing<'a> {
    hasher: Xxh3Default,
    outputs: &'a [usize],
}

impl EmitSink for Hashing<'_> {
    fn vertex(&mut self, config: EmitConfig, outputs: &[Vec4; 16]) {
        self.hasher.update(&config.packed().to_le_bytes());
        for &n in self.outputs {
            hash_vec(&mut self.hasher, &outputs[n]);
        }
    }
    fn primitive(&mut self, winding: bool, slots: &[[Vec4; 16]; 3]) {
        self.hasher.update(&[2, winding.into()]);
        for slot in slots {
            for &n in self.outputs {
                hash_vec(&mut self.hasher, &slot[n]);
            }
        }
    }
}

/// Runs `count` invocations: the input's invocation list as consecutive draws, each on a fresh
/// state and uniforms; `sink` gets what they emit and `after` each invocation's outcome.
fn geometry_pass<S: EmitSink>(
    engine: &dyn ShaderEngine,
    setup: &BenchSetup,
    sink: &mut S,
    mut after: impl FnMut(&mut S, &Result<(), ExecError>, &GeometryState),
) {
    let mut base = Uniforms::from_constants(setup.dvle);
    setup.input.apply_uniforms(&mut base);
    let draw = &setup.input.invocations;
    let mut done = 0u64;
    while done < setup.count {
        let mut state = GeometryState::default();
        let mut uniforms = base.clone();
        for invocation in draw
            .iter()
            .take((setup.count - done).min(draw.len() as u64) as usize)
        {
            for &(n, v) in &invocation.uniform_writes {
                uniforms.float[n] = v;
            }
            let result = engine.run_geometry(&mut state, &uniforms, &invocation.registers, sink);
            after(sink, &result, &state);
            done += 1;
        }
    }
}

fn measure_geometry(engine: &dyn ShaderEngine, setup: &BenchSetup, prepare: Duration) -> Measured {
    let mut best = Duration::MAX;
    let mut emitted = 0;
    for _ in 0..setup.repeat {
        let mut count = Count::default();
        let started = Instant::now();
        geometry_pass(engine, setup, &mut count, |_, _, _| {});
        best = best.min(started.elapsed());
        emitted = count.0;
    }
    let outputs: Vec<usize> = engine.program().output_registers().collect();
    let mut sink = Hashing {
        hasher: Xxh3Default::new(),
        outputs: &outputs,
    };
    geometry_pass(engine, setup, &mut sink, |sink, result, state| {
        match result {
            Ok(()) => sink.hasher.update(b"ok"),
            Err(e) => sink.hasher.update(e.to_string().as_bytes()),
        }
        hash_flow(&mut sink.hasher, &state.registers.flow);
    });
    Measured {
        prepare,
        best,
        digest: sink.hasher.digest128(),
        emitted,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::document::input::parse_input;
    use crate::float24::Precision;
    use crate::interp::Interpreter;

    /// The interpreter, noting the length of every batch it is given.
    struct Recording {
        inner: Interpreter,
        batches: Mutex<Vec<usize>>,
    }

    impl ShaderEngine for Recording {
        fn name(&self) -> &'static str {
            "recording"
        }
        fn program(&self) -> &ShaderProgram {
            self.inner.program()
        }
        fn config(&self) -> ExecConfig {
            self.inner.config()
        }
        fn run_vertex(
            &self,
            uniforms: &Uniforms,
            inputs: &InputRegisters,
        ) -> Result<VertexResult, ExecError> {
            self.inner.run_vertex(uniforms, inputs)
        }
        fn run_vertices(
            &self,
            uniforms: &Uniforms,
            inputs: &[InputRegisters],
            results: &mut Vec<Result<VertexResult, ExecError>>,
        ) {
            self.batches.lock().unwrap().push(inputs.len());
            assert!(results.is_empty(), "the result buffer is reused, emptied");
            self.inner.run_vertices(uniforms, inputs, results);
        }
        fn run_geometry(
            &self,
            state: &mut GeometryState,
            uniforms: &Uniforms,
            inputs: &InputRegisters,
            sink: &mut dyn EmitSink,
        ) -> Result<(), ExecError> {
            self.inner.run_geometry(state, uniforms, inputs, sink)
        }
    }

    #[test]
    fn vertex_runs_go_in_batches_of_at_most_4096() {
        let shbin = crate::asm::assemble(
            &[crate::asm::SourceFile {
                name: "t.pica".into(),
                text: ".out o position\n.proc main\nmov o, v0\nend\n.end\n".into(),
            }],
            crate::asm::AsmOptions::default(),
        )
        .unwrap()
        .shbin;
        let program = ShaderProgram::from_shbin(&shbin, 0).unwrap();
        let input = parse_input(
            r#"{"vertices": [{"v0": [1]}, {"v0": [2]}, {"v0": [3]}]}"#,
            Precision::F24Truncate,
            ShaderKind::Vertex,
        )
        .unwrap();
        let count = 3 * BATCH as u64 + 5;
        let setup = BenchSetup {
            name: "t".into(),
            index: 0,
            dvle: &shbin.dvles[0],
            program: program.clone(),
            input: &input,
            config: ExecConfig::default(),
            count,
            repeat: 2,
        };
        let engine = Recording {
            inner: Interpreter::new(program, ExecConfig::default()),
            batches: Mutex::new(Vec::new()),
        };
        let measured = measure_vertices(&engine, &setup, Duration::ZERO);
        let batches = engine.batches.into_inner().unwrap();
        // Two timed runs and the agreement pass, each of three full batches and the rest.
        assert_eq!(batches, [BATCH, BATCH, BATCH, 5].repeat(3));
        // The agreement digest covers the inputs cycled in order: a different order differs.
        let reordered = parse_input(
            r#"{"vertices": [{"v0": [2]}, {"v0": [1]}, {"v0": [3]}]}"#,
            Precision::F24Truncate,
            ShaderKind::Vertex,
        )
        .unwrap();
        let other = measure_vertices(
            &engine.inner,
            &BenchSetup {
                input: &reordered,
                ..setup
            },
            Duration::ZERO,
        );
        assert_ne!(measured.digest, other.digest);
    }
}
