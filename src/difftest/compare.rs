//! Running a test case on two engines and comparing them as docs/execution-model.md §8 says: the
//! f32 bit patterns of every output lane, the final a0/aL/cmp, every emitted geometry-shader
//! vertex and primitive and the geometry-shader state after each invocation, and the error
//! kind of an invocation that fails (whose outputs are not compared). Never a tolerance.

use crate::engine::parallel::run_batch_chunked;
use crate::engine::{self, EngineError, EngineKind};
use crate::exec::{BatchIo, BatchLayout, Hosted, RecordIo, ShaderEngine, SoaBuffer};
use crate::exec::{ExecConfig, ExecError, GeometryResult, GeometryState, VertexResult};
use crate::isa::LANE_NAMES;
use crate::program::{FlowRegisters, InputRegisters, ShaderKind, ShaderProgram, Vec4};

use super::DifftestError;
use super::case::{TestCase, TestInputs, TestProgram};

/// Prepares a program with some engine (the reference interpreter, the JIT, or a test double).
pub type EngineFactory =
    dyn Fn(ShaderProgram, ExecConfig) -> Result<Box<dyn ShaderEngine>, EngineError> + Send + Sync;

/// Prepares programs with the reference interpreter.
pub fn interpreter(
    program: ShaderProgram,
    config: ExecConfig,
) -> Result<Box<dyn ShaderEngine>, EngineError> {
    engine::prepare(EngineKind::Interpreter, program, config)
}

/// Prepares programs with the JIT, running a vertex shader's whole-invocation fast form (where
/// it has one) on every invocation, so that the fast form is compared wherever it does not flag
/// an invocation and the exact function wherever it does (the adaptive default would skip the
/// fast form after a flagged invocation; the bits are the same either way).
pub fn jit(
    program: ShaderProgram,
    config: ExecConfig,
) -> Result<Box<dyn ShaderEngine>, EngineError> {
    let mut shader = crate::jit::JitShader::compile(program, config).map_err(EngineError::from)?;
    shader.set_fast_policy(crate::jit::FastPolicy::Always);
    Ok(Box::new(shader))
}

/// A program prepared by the reference and the candidate engine.
pub type EnginePair = (Box<dyn ShaderEngine>, Box<dyn ShaderEngine>);

/// The first difference between the engines on a test case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The invocation (vertex or geometry-shader invocation) where it shows.
    pub invocation: usize,
    /// What differs, with both engines' values (`o1.y: interp 0x3f800000, jit 0x3f800001`).
    pub difference: String,
}

/// What running a test case on both engines gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comparison {
    /// Invocations run (on each engine).
    pub invocations: usize,
    /// The first difference, if any.
    pub mismatch: Option<Mismatch>,
}

/// Runs test cases on a reference and a candidate engine, keeping the prepared engines of the
/// last program (the shrinker tries many inputs on one program).
pub struct Differ<'f> {
    reference: &'f EngineFactory,
    candidate: &'f EngineFactory,
    config: ExecConfig,
    prepared: Option<(TestProgram, EnginePair)>,
}

impl<'f> Differ<'f> {
    /// A differ for `config` (precision and instruction budget).
    pub fn new(
        reference: &'f EngineFactory,
        candidate: &'f EngineFactory,
        config: ExecConfig,
    ) -> Differ<'f> {
        Differ {
            reference,
            candidate,
            config,
            prepared: None,
        }
    }

    /// The settings the engines run with.
    pub fn config(&self) -> ExecConfig {
        self.config
    }

    /// Runs `case` on both engines and compares them.
    pub fn compare(&mut self, case: &TestCase) -> Result<Comparison, DifftestError> {
        let fresh = !matches!(&self.prepared, Some((cached, _)) if *cached == case.program);
        if fresh {
            self.prepared = None;
            let engines = self.prepare(case.program.to_program()?)?;
            self.prepared = Some((case.program.clone(), engines));
        }
        match &self.prepared {
            Some((_, (reference, candidate))) => Ok(compare_engines(
                reference.as_ref(),
                candidate.as_ref(),
                &case.inputs,
                self.config,
            )),
            None => Err(DifftestError::Encode("no program was prepared".to_string())),
        }
    }

    /// Prepares `program` with both engines.
    pub fn prepare(&self, program: ShaderProgram) -> Result<EnginePair, DifftestError> {
        let reference =
            (self.reference)(program.clone(), self.config).map_err(DifftestError::Engine)?;
        let candidate = (self.candidate)(program, self.config).map_err(DifftestError::Engine)?;
        Ok((reference, candidate))
    }

    /// Runs a loaded program (a reassembled reproducer, say) on `inputs`.
    pub fn compare_program(
        &self,
        program: ShaderProgram,
        inputs: &TestInputs,
    ) -> Result<Comparison, DifftestError> {
        let (reference, candidate) = self.prepare(program)?;
        Ok(compare_engines(
            reference.as_ref(),
            candidate.as_ref(),
            inputs,
            self.config,
        ))
    }
}

/// Runs `inputs` on both engines (prepared for the same program) and compares them.
pub fn compare_engines(
    reference: &dyn ShaderEngine,
    candidate: &dyn ShaderEngine,
    inputs: &TestInputs,
    config: ExecConfig,
) -> Comparison {
    let precision = config.precision;
    let names = [reference.name(), candidate.name()];
    let mut uniforms = inputs.uniforms(precision);
    let mut mismatch = None;
    let mut note = |invocation: usize, difference: Option<String>| {
        if mismatch.is_none()
            && let Some(difference) = difference
        {
            mismatch = Some(Mismatch {
                invocation,
                difference,
            });
        }
    };
    match reference.program().stage {
        ShaderKind::Vertex => {
            let registers: Vec<InputRegisters> = (0..inputs.invocations.len())
                .map(|index| inputs.registers(index, precision))
                .collect();
            let expected: Vec<_> = registers
                .iter()
                .map(|r| reference.run_vertex(&uniforms, r))
                .collect();
            for (index, r) in registers.iter().enumerate() {
                let b = candidate.run_vertex(&uniforms, r);
                note(index, vertex_difference(&expected[index], &b, names));
            }
            // Vertex records, where the candidate runs them (first: a batch on planes may leave
            // its kernel sorting unusual vertices apart, which records leave to planes).
            if let Some(got) = record_outcomes(candidate, &uniforms, &registers, &expected) {
                for (index, b) in got.iter().enumerate() {
                    let difference = vertex_difference(&expected[index], b, names);
                    note(index, difference.map(|d| format!("run_records: {d}")));
                }
            }
            // The batch paths: whole, and cut into chunks of 3 vertices on 2 threads (so that
            // batches start inside groups and buffers).
            for (path, threads, chunk) in BATCH_PATHS {
                let got =
                    batch_outcomes(candidate, &uniforms, &registers, &expected, threads, chunk);
                for (index, b) in got.iter().enumerate() {
                    let difference = vertex_difference(&expected[index], b, names);
                    note(index, difference.map(|d| format!("{path}: {d}")));
                }
            }
        }
        ShaderKind::Geometry => {
            let mut states = [GeometryState::default(), GeometryState::default()];
            for index in 0..inputs.invocations.len() {
                inputs.apply_writes(index, &mut uniforms, precision);
                let registers = inputs.registers(index, precision);
                let [state_a, state_b] = &mut states;
                let mut emitted = [GeometryResult::default(), GeometryResult::default()];
                let [emitted_a, emitted_b] = &mut emitted;
                let a = reference.run_geometry(state_a, &uniforms, &registers, emitted_a);
                let b = candidate.run_geometry(state_b, &uniforms, &registers, emitted_b);
                note(
                    index,
                    geometry_difference((&a, &emitted[0]), (&b, &emitted[1]), names),
                );
                note(index, state_difference(&states[0], &states[1], names));
            }
        }
    }
    Comparison {
        invocations: inputs.invocations.len(),
        mismatch,
    }
}

/// The batch paths every vertex-shader case also runs on the candidate: a name, the threads and
/// the chunk length.
const BATCH_PATHS: [(&str, usize, usize); 2] = [
    ("run_batch", 1, usize::MAX),
    ("run_batch on 2 threads in chunks of 3", 2, 3),
];

/// `engine`'s batch run of `registers` as per-vertex outcomes. A batch carries only the output
/// registers of the output mask; the others are taken from `expected` (the reference's results),
/// so that only what a batch delivers is compared.
fn batch_outcomes(
    engine: &dyn ShaderEngine,
    uniforms: &crate::program::Uniforms,
    registers: &[InputRegisters],
    expected: &[Result<VertexResult, ExecError>],
    threads: usize,
    chunk: usize,
) -> Vec<Result<VertexResult, ExecError>> {
    let layout = BatchLayout::of(engine.program());
    let inputs = SoaBuffer::from_vertices(layout.inputs, registers);
    let mut outputs = SoaBuffer::zeroed(layout.outputs, registers.len());
    let mut flow = vec![FlowRegisters::default(); registers.len()];
    let mut errors = Vec::new();
    match BatchIo::new(inputs.inputs(), outputs.outputs(), Some(&mut flow)) {
        Ok(io) => run_batch_chunked(engine, threads, chunk, uniforms, io, &mut errors),
        Err(e) => unreachable!("buffers made for the batch fit it: {e}"),
    }
    let mut errors = errors.into_iter().peekable();
    (0..registers.len())
        .map(|i| {
            if errors.peek().is_some_and(|(at, _)| *at == i) {
                let (_, e) = errors.next().expect("peeked");
                return Err(e);
            }
            let mut result = match &expected[i] {
                Ok(r) => r.clone(),
                Err(_) => VertexResult {
                    outputs: [[0.0; 4]; 16],
                    flow: FlowRegisters::default(),
                },
            };
            let delivered = outputs.vertex(i);
            for n in layout.outputs.iter() {
                result.outputs[n] = delivered[n];
            }
            result.flow = flow[i];
            Ok(result)
        })
        .collect()
}

/// `engine`'s run of `registers` as vertex records, as per-vertex outcomes (the output
/// registers outside the output mask taken from `expected`, as [`batch_outcomes`] does), or
/// `None` when the engine does not run records.
fn record_outcomes(
    engine: &dyn ShaderEngine,
    uniforms: &crate::program::Uniforms,
    registers: &[InputRegisters],
    expected: &[Result<VertexResult, ExecError>],
) -> Option<Vec<Result<VertexResult, ExecError>>> {
    let layout = BatchLayout::of(engine.program());
    let mut outputs: Vec<[Vec4; 16]> = expected
        .iter()
        .map(|e| e.as_ref().map_or([[0.0; 4]; 16], |r| r.outputs))
        .collect();
    let mut flow = vec![FlowRegisters::default(); registers.len()];
    let mut errors = Vec::new();
    let ran = match RecordIo::new(registers, &mut outputs, layout.outputs, Some(&mut flow)) {
        Ok(mut io) => Hosted(engine).run_records(uniforms, &mut io, &mut errors),
        Err(e) => unreachable!("buffers made for the batch fit it: {e}"),
    };
    if !ran {
        return None;
    }
    let mut errors = errors.into_iter().peekable();
    let outcomes = outputs
        .into_iter()
        .zip(flow)
        .enumerate()
        .map(|(i, (outputs, flow))| {
            if errors.peek().is_some_and(|(at, _)| *at == i) {
                let (_, e) = errors.next().expect("peeked");
                return Err(e);
            }
            Ok(VertexResult { outputs, flow })
        })
        .collect();
    Some(outcomes)
}

/// Collects differences, keeping the first few.
struct Differences {
    names: [&'static str; 2],
    found: Vec<String>,
}

impl Differences {
    const SHOWN: usize = 6;

    fn new(names: [&'static str; 2]) -> Differences {
        Differences {
            names,
            found: Vec::new(),
        }
    }

    fn add(&mut self, what: String, a: String, b: String) {
        if self.found.len() < Self::SHOWN {
            self.found.push(format!(
                "{what}: {} {a}, {} {b}",
                self.names[0], self.names[1]
            ));
        } else if self.found.len() == Self::SHOWN {
            self.found.push("...".to_string());
        }
    }

    fn vectors(&mut self, what: &str, a: &[Vec4], b: &[Vec4]) {
        for (register, (x, y)) in a.iter().zip(b).enumerate() {
            for lane in 0..4 {
                let (p, q) = (x[lane].to_bits(), y[lane].to_bits());
                if p != q {
                    self.add(
                        format!("{what}{register}.{}", LANE_NAMES[lane]),
                        format!("{p:#010x}"),
                        format!("{q:#010x}"),
                    );
                }
            }
        }
    }

    fn flow(&mut self, what: &str, a: &FlowRegisters, b: &FlowRegisters) {
        if a != b {
            self.add(what.to_string(), format_flow(a), format_flow(b));
        }
    }

    fn value<T: PartialEq + std::fmt::Debug>(&mut self, what: &str, a: &T, b: &T) {
        if a != b {
            self.add(what.to_string(), format!("{a:?}"), format!("{b:?}"));
        }
    }

    fn finish(self) -> Option<String> {
        (!self.found.is_empty()).then(|| self.found.join("; "))
    }
}

fn format_flow(flow: &FlowRegisters) -> String {
    format!(
        "a0=({}, {}) aL={} cmp=({}, {})",
        flow.a0[0], flow.a0[1], flow.al, flow.cmp[0], flow.cmp[1]
    )
}

/// How two invocation results differ in success or error kind; `Ok(())` when both succeeded.
fn outcome_difference<T>(
    a: &Result<T, ExecError>,
    b: &Result<T, ExecError>,
    names: [&'static str; 2],
) -> Result<(), Option<String>> {
    match (a, b) {
        (Ok(_), Ok(_)) => Ok(()),
        (Err(x), Err(y)) if x.kind() == y.kind() => Err(None),
        (Err(x), Err(y)) => Err(Some(format!(
            "error kinds differ: {} {} ({x}), {} {} ({y})",
            names[0],
            x.kind(),
            names[1],
            y.kind()
        ))),
        (Ok(_), Err(y)) => Err(Some(format!("only {} fails: {} ({y})", names[1], y.kind()))),
        (Err(x), Ok(_)) => Err(Some(format!("only {} fails: {} ({x})", names[0], x.kind()))),
    }
}

/// The difference between two vertex-shader results, if any.
pub fn vertex_difference(
    a: &Result<VertexResult, ExecError>,
    b: &Result<VertexResult, ExecError>,
    names: [&'static str; 2],
) -> Option<String> {
    if let Err(difference) = outcome_difference(a, b, names) {
        return difference;
    }
    let (Ok(x), Ok(y)) = (a, b) else {
        return None;
    };
    let mut differences = Differences::new(names);
    differences.vectors("o", &x.outputs, &y.outputs);
    differences.flow("a0/aL/cmp", &x.flow, &y.flow);
    differences.finish()
}

/// The difference between two geometry-shader invocations (each its outcome and everything it
/// emitted, before an error too), if any.
pub fn geometry_difference(
    (a, x): (&Result<(), ExecError>, &GeometryResult),
    (b, y): (&Result<(), ExecError>, &GeometryResult),
    names: [&'static str; 2],
) -> Option<String> {
    if let Err(Some(difference)) = outcome_difference(a, b, names) {
        return Some(difference);
    }
    let mut differences = Differences::new(names);
    differences.value("emitted vertex count", &x.vertices.len(), &y.vertices.len());
    for (n, (p, q)) in x.vertices.iter().zip(&y.vertices).enumerate() {
        differences.value(
            &format!("emitted vertex {n} SETEMIT state"),
            &p.config,
            &q.config,
        );
        differences.vectors(&format!("emitted vertex {n} o"), &p.outputs, &q.outputs);
    }
    differences.value("primitive count", &x.primitives.len(), &y.primitives.len());
    for (n, (p, q)) in x.primitives.iter().zip(&y.primitives).enumerate() {
        differences.value(&format!("primitive {n} winding"), &p.winding, &q.winding);
        for slot in 0..3 {
            differences.vectors(
                &format!("primitive {n} slot {slot} o"),
                &p.vertices[slot],
                &q.vertices[slot],
            );
        }
    }
    differences.finish()
}

/// The difference between two geometry-shader states after an invocation, if any.
pub fn state_difference(
    a: &GeometryState,
    b: &GeometryState,
    names: [&'static str; 2],
) -> Option<String> {
    let mut differences = Differences::new(names);
    differences.vectors("state r", &a.registers.temp, &b.registers.temp);
    differences.vectors("state unused o", &a.registers.output, &b.registers.output);
    differences.flow("state a0/aL/cmp", &a.registers.flow, &b.registers.flow);
    for bank in 0..2 {
        differences.vectors(
            &format!("state bank {bank} o"),
            &a.banks[bank],
            &b.banks[bank],
        );
    }
    differences.value("state current bank", &a.bank, &b.bank);
    differences.value("state SETEMIT", &a.emit, &b.emit);
    for slot in 0..3 {
        differences.vectors(
            &format!("state slot {slot} o"),
            &a.slots[slot],
            &b.slots[slot],
        );
    }
    differences.value("state invoked", &a.invoked, &b.invoked);
    differences.finish()
}

/// One line describing a mismatch.
pub fn describe(mismatch: &Mismatch) -> String {
    format!(
        "invocation {}: {}",
        mismatch.invocation, mismatch.difference
    )
}
