//! Real programs out of traces (docs/cli.md, "extract"): a trace holds the shaders a real
//! program uploads, the uniforms it sets and the vertices its draws feed them. Replaying it with
//! an [`Extractor`] watching the shader units ([`crate::gpu::front::observe`]) collects each
//! distinct program (stage, code, operand descriptors, entry point, output mask) as a SHBIN
//! file, and beside it `picajit run` inputs: one per distinct uniform state the program ran
//! under (up to [`ExtractLimits::states`]), each with a sample of the vertices (or geometry
//! invocations) that ran under it. Every engine then runs real programs on real inputs.
//!
//! The trace is replayed in f32 precision, so that the values are the ones the trace carries
//! (a float24 upload is exact in f32; a float32 upload and a float attribute keep every bit) and
//! `run` converts them under whichever mode it is given, as the pipeline does. A geometry
//! shader's inputs are the vertex shader's f32 outputs: under a float24 mode they are valid
//! inputs, not the ones that mode's pipeline would have produced.
//!
//! Memory is bounded by the limits: at most [`ExtractLimits::invocations`] inputs are kept per
//! state and [`ExtractLimits::states`] states per program, whatever the trace's length.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use crate::difftest::case::{Lane, LaneVec, TestInputs, TestInvocation};
use crate::engine::EngineKind;
use crate::exec::SoaBuffer;
use crate::float24::Precision;
use crate::gpu::front::observe::ShaderObserver;
use crate::gpu::front::trace::{self, TraceStream};
use crate::gpu::regs::{bits, id};
use crate::gpu::{Gpu, GpuConfig, GpuError};
use crate::program::{DEFAULT_INPUT, InputRegisters, ShaderKind, Uniforms, Vec4};
use crate::shbin::{Dvle, GsConfig, GsMode, OutputEntry, OutputSemantic, Shbin};

/// How much is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtractLimits {
    /// Uniform states kept per program (the first ones it ran under).
    pub states: usize,
    /// Distinct vertices (or geometry invocations) kept per state.
    pub invocations: usize,
    /// Vertices taken from one vertex batch (spread over it), so that several draws are
    /// sampled rather than the first one only.
    pub per_batch: usize,
}

impl Default for ExtractLimits {
    fn default() -> ExtractLimits {
        ExtractLimits {
            states: 8,
            invocations: 64,
            per_batch: 32,
        }
    }
}

/// One distinct program of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct ExtractedProgram {
    /// Vertex or geometry shader.
    pub stage: ShaderKind,
    /// The program as a SHBIN file: the code up to its last non-zero word, the operand
    /// descriptors, and one DVLE (entry point, output mask, an output table from the output
    /// map, the input registers the loader filled, the geometry mode).
    pub shbin: Shbin,
    /// The `run` inputs, one per uniform state, in the order the program first ran under
    /// them. A vertex shader's state is its float, integer and bool uniforms; a geometry
    /// shader's is its integer and bool uniforms, its float uniforms changing per invocation
    /// (the input modes write them) and so given as each invocation's writes.
    pub states: Vec<TestInputs>,
    /// Vertex batches (or geometry invocations) the program ran in the trace.
    pub batches: u64,
    /// Vertices (or geometry invocations) it ran.
    pub invocations: u64,
    /// Invocations under uniform states beyond [`ExtractLimits::states`] (not sampled).
    pub unsampled_states: u64,
}

impl ExtractedProgram {
    /// The `run` input document of state `n`.
    pub fn input_json(&self, n: usize) -> Option<String> {
        self.states.get(n).map(|inputs| inputs.to_json(self.stage))
    }
}

/// What identifies a program: what the engines compile.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ProgramKey {
    stage: ShaderKind,
    entry: u16,
    output_mask: u16,
    code: Vec<u32>,
    opdescs: Vec<u32>,
}

/// A uniform state's identity (see [`ExtractedProgram::states`]).
#[derive(Clone, Debug, PartialEq, Eq)]
struct StateKey {
    floats: Option<Vec<[u32; 4]>>,
    ints: [[u8; 4]; 4],
    bools: u16,
}

struct State {
    key: StateKey,
    inputs: TestInputs,
    /// The inputs kept, by their bits (each is kept once).
    kept: HashSet<Vec<u32>>,
    /// Geometry shaders: the float uniforms as of the last kept invocation.
    floats: Vec<[u32; 4]>,
}

struct Record {
    program: ExtractedProgram,
    states: Vec<State>,
}

#[derive(Default)]
struct Collection {
    limits: ExtractLimits,
    records: Vec<Record>,
    index: HashMap<ProgramKey, usize>,
    /// Per stage, the unit's program version last seen and its record.
    last: [Option<(u64, usize)>; 2],
}

/// Collects a trace's programs while a [`Gpu`] replays it.
pub struct Extractor {
    collection: Arc<Mutex<Collection>>,
}

/// The observer an [`Extractor`] gives the GPU.
struct Watcher {
    collection: Arc<Mutex<Collection>>,
}

impl Extractor {
    /// An extractor keeping what `limits` allow.
    pub fn new(limits: ExtractLimits) -> Extractor {
        Extractor {
            collection: Arc::new(Mutex::new(Collection {
                limits,
                ..Collection::default()
            })),
        }
    }

    /// Starts watching `gpu`'s shader units.
    pub fn watch(&self, gpu: &mut Gpu) {
        gpu.observe_shaders(Box::new(Watcher {
            collection: self.collection.clone(),
        }));
    }

    /// The programs collected, in the order the trace first ran them.
    pub fn finish(self) -> Vec<ExtractedProgram> {
        let mut collection = self.collection.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut collection.records)
            .into_iter()
            .map(|record| {
                let mut program = record.program;
                program.states = record.states.into_iter().map(|s| s.inputs).collect();
                program
            })
            .collect()
    }
}

/// Replays the whole of `trace` (f32 precision, `engine`, `threads`) and returns its programs.
pub fn extract(
    trace: &impl TraceStream,
    engine: EngineKind,
    threads: usize,
    limits: ExtractLimits,
) -> Result<Vec<ExtractedProgram>, GpuError> {
    let mut gpu = Gpu::new(GpuConfig {
        engine,
        precision: Precision::F32,
        threads,
        ..GpuConfig::default()
    });
    let extractor = Extractor::new(limits);
    extractor.watch(&mut gpu);
    trace::replay(trace, gpu, None, |_, _| {})?;
    Ok(extractor.finish())
}

fn stage_slot(stage: ShaderKind) -> usize {
    match stage {
        ShaderKind::Vertex => 0,
        ShaderKind::Geometry => 1,
    }
}

fn float_bits(uniforms: &Uniforms) -> Vec<[u32; 4]> {
    uniforms.float.iter().map(|v| v.map(f32::to_bits)).collect()
}

fn lanes(value: &Vec4) -> LaneVec {
    value.map(|v| Lane::F32(v.to_bits()))
}

impl Collection {
    /// The record of the program `stage`'s unit runs now (created on its first run).
    fn record(&mut self, gpu: &Gpu, stage: ShaderKind) -> usize {
        let unit = match stage {
            ShaderKind::Vertex => &gpu.vs,
            ShaderKind::Geometry => &gpu.gs,
        };
        let slot = stage_slot(stage);
        if let Some((version, index)) = self.last[slot]
            && version == unit.program_version
        {
            return index;
        }
        let used = |words: &[u32]| words.iter().rposition(|&w| w != 0).map_or(0, |p| p + 1);
        let code_len = used(unit.code()).max(usize::from(unit.entry) + 1);
        let key = ProgramKey {
            stage,
            entry: unit.entry,
            output_mask: unit.output_mask,
            code: unit.code()[..code_len].to_vec(),
            opdescs: unit.opdescs()[..used(unit.opdescs())].to_vec(),
        };
        let index = match self.index.get(&key) {
            Some(&index) => index,
            None => {
                let index = self.records.len();
                self.records.push(Record {
                    program: ExtractedProgram {
                        stage,
                        shbin: shbin_of(gpu, &key),
                        states: Vec::new(),
                        batches: 0,
                        invocations: 0,
                        unsampled_states: 0,
                    },
                    states: Vec::new(),
                });
                self.index.insert(key, index);
                index
            }
        };
        self.last[slot] = Some((unit.program_version, index));
        index
    }

    /// The state of record `index` that `uniforms` are (created while there is room).
    fn state(&mut self, index: usize, uniforms: &Uniforms, stage: ShaderKind) -> Option<usize> {
        let key = StateKey {
            floats: (stage == ShaderKind::Vertex).then(|| float_bits(uniforms)),
            ints: uniforms.int,
            bools: uniforms.bools,
        };
        let states = &mut self.records[index].states;
        if let Some(n) = states.iter().position(|s| s.key == key) {
            return Some(n);
        }
        if states.len() >= self.limits.states {
            return None;
        }
        let floats = float_bits(uniforms);
        let inputs = TestInputs {
            floats: (0u8..)
                .zip(&uniforms.float)
                .filter(|(_, v)| v.iter().any(|x| x.to_bits() != 0))
                .map(|(n, v)| (n, lanes(v)))
                .collect(),
            ints: uniforms.int,
            bools: uniforms.bools,
            invocations: Vec::new(),
        };
        states.push(State {
            key,
            inputs,
            kept: HashSet::new(),
            floats,
        });
        Some(states.len() - 1)
    }

    fn vertex_batch(&mut self, gpu: &Gpu, batch: &SoaBuffer) {
        let index = self.record(gpu, ShaderKind::Vertex);
        let limits = self.limits;
        let record = &mut self.records[index];
        record.program.batches += 1;
        record.program.invocations += batch.count() as u64;
        let registers = batch.registers();
        let dvle = &mut record.program.shbin.dvles[0];
        dvle.input_mask |= registers.0;
        let Some(n) = self.state(index, &gpu.vs.uniforms, ShaderKind::Vertex) else {
            self.records[index].program.unsampled_states += batch.count() as u64;
            return;
        };
        let state = &mut self.records[index].states[n];
        let count = batch.count();
        let take = count.min(limits.per_batch);
        for k in 0..take {
            if state.inputs.invocations.len() >= limits.invocations {
                break;
            }
            let vertex = batch.vertex(k * count / take);
            let kept: BTreeMap<u8, LaneVec> = (0u8..16)
                .filter(|&r| registers.0 & (1 << r) != 0)
                .map(|r| (r, lanes(&vertex[usize::from(r)])))
                .collect();
            if state.kept.insert(bits_of(&kept)) {
                state.inputs.invocations.push(TestInvocation {
                    registers: kept,
                    uniform_writes: BTreeMap::new(),
                });
            }
        }
    }

    fn geometry_invocation(&mut self, gpu: &Gpu, inputs: &InputRegisters) {
        let index = self.record(gpu, ShaderKind::Geometry);
        let limits = self.limits;
        let record = &mut self.records[index];
        record.program.batches += 1;
        record.program.invocations += 1;
        let given: BTreeMap<u8, LaneVec> = (0u8..16)
            .zip(inputs)
            .filter(|(_, v)| v.map(f32::to_bits) != DEFAULT_INPUT.map(f32::to_bits))
            .map(|(r, v)| (r, lanes(v)))
            .collect();
        record.program.shbin.dvles[0].input_mask |=
            given.keys().fold(0u16, |mask, &r| mask | 1 << r);
        let uniforms = &gpu.gs.uniforms;
        let Some(n) = self.state(index, uniforms, ShaderKind::Geometry) else {
            self.records[index].program.unsampled_states += 1;
            return;
        };
        let state = &mut self.records[index].states[n];
        if state.inputs.invocations.len() >= limits.invocations {
            return;
        }
        let floats = float_bits(uniforms);
        let writes: BTreeMap<u8, LaneVec> = (0u8..)
            .zip(floats.iter().zip(&state.floats))
            .filter(|(_, (now, before))| now != before)
            .map(|(r, _)| (r, lanes(&uniforms.float[usize::from(r)])))
            .collect();
        let mut identity = bits_of(&given);
        identity.extend(floats.iter().flatten());
        if state.kept.insert(identity) {
            state.floats = floats;
            state.inputs.invocations.push(TestInvocation {
                registers: given,
                uniform_writes: writes,
            });
        }
    }
}

/// The bits of some registers, with their indices (an input's identity).
fn bits_of(registers: &BTreeMap<u8, LaneVec>) -> Vec<u32> {
    registers
        .iter()
        .flat_map(|(&r, lanes)| {
            std::iter::once(u32::from(r)).chain(lanes.iter().map(|lane| match *lane {
                Lane::F32(bits) | Lane::F24(bits) => bits,
            }))
        })
        .collect()
}

impl ShaderObserver for Watcher {
    fn vertex_batch(&mut self, gpu: &Gpu, inputs: &SoaBuffer) {
        let mut collection = self.collection.lock().unwrap_or_else(|e| e.into_inner());
        collection.vertex_batch(gpu, inputs);
    }

    fn geometry_invocation(&mut self, gpu: &Gpu, inputs: &InputRegisters) {
        let mut collection = self.collection.lock().unwrap_or_else(|e| e.into_inner());
        collection.geometry_invocation(gpu, inputs);
    }
}

/// The SHBIN file of a program as the GPU holds it.
fn shbin_of(gpu: &Gpu, key: &ProgramKey) -> Shbin {
    let geometry_on = bits(gpu.regs.get(id::GEOSTAGE_CONFIG), 0, 2) == 2;
    // The output map describes the last stage's outputs; a vertex shader feeding a geometry
    // shader has none (its outputs are the geometry shader's inputs).
    let mapped = key.stage == ShaderKind::Geometry || !geometry_on;
    let outputs = (0..16u16)
        .filter(|r| key.output_mask & (1 << r) != 0)
        .enumerate()
        .flat_map(|(slot, register)| {
            let semantics = if mapped && slot < 7 {
                gpu.regs.get(id::SH_OUTMAP_O0 + slot as u16)
            } else {
                u32::MAX
            };
            output_entries(register, semantics)
        })
        .collect();
    let gs = if key.stage == ShaderKind::Geometry {
        let misc0 = gpu.regs.get(id::GSH_MISC0);
        GsConfig {
            mode: GsMode::from_code(bits(misc0, 0, 8) as u8).unwrap_or(GsMode::Point),
            fixed_start: bits(misc0, 16, 8) as u8,
            variable_vertices: bits(gpu.regs.get(id::GSH_MISC1), 0, 4) as u8 + 1,
            fixed_vertices: bits(misc0, 8, 4) as u8 + 1,
        }
    } else {
        GsConfig::default()
    };
    let mut dvle = Dvle::plain(
        key.stage,
        u32::from(key.entry),
        key.code.len() as u32,
        key.output_mask,
        outputs,
    );
    dvle.gs = gs;
    Shbin {
        code: key.code.clone(),
        opdescs: key.opdescs.clone(),
        opdesc_extra: vec![0; key.opdescs.len()],
        dvles: vec![dvle],
    }
}

/// The output table entries of `register` from its output-map word (4 semantic codes of 5
/// bits, x first; docs/gpu.md, "Output mapping"): one entry per semantic with the components
/// carrying it, or one `dummy` entry for a register nothing maps.
fn output_entries(register: u16, semantics: u32) -> Vec<OutputEntry> {
    let mut entries: Vec<OutputEntry> = Vec::new();
    for component in 0..4 {
        let Some(semantic) = semantic_of(bits(semantics, 8 * component, 5)) else {
            continue;
        };
        match entries.iter_mut().find(|e| e.semantic == semantic) {
            Some(entry) => entry.mask |= 1 << component,
            None => entries.push(OutputEntry {
                semantic,
                register,
                mask: 1 << component,
                unknown: 0,
            }),
        }
    }
    if entries.is_empty() {
        entries.push(OutputEntry {
            semantic: OutputSemantic::Dummy,
            register,
            mask: 0xF,
            unknown: 0,
        });
    }
    entries
}

/// The output-table semantic of an output-map code (none for 0x1F, unused, and undefined
/// codes).
fn semantic_of(code: u32) -> Option<OutputSemantic> {
    Some(match code {
        0x00..=0x03 => OutputSemantic::Position,
        0x04..=0x07 => OutputSemantic::NormalQuat,
        0x08..=0x0B => OutputSemantic::Color,
        0x0C | 0x0D => OutputSemantic::TexCoord0,
        0x0E | 0x0F => OutputSemantic::TexCoord1,
        0x10 => OutputSemantic::TexCoord0W,
        0x12..=0x14 => OutputSemantic::View,
        0x16 | 0x17 => OutputSemantic::TexCoord2,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_map_words_become_table_entries_per_semantic() {
        // o2: texcoord0.uv in x and y, texcoord0.w in z, w unused (codes from docs/gpu.md).
        let word = 0x0C | 0x0D << 8 | 0x10 << 16 | 0x1F << 24;
        let entries = output_entries(2, word);
        let found: Vec<(OutputSemantic, u16)> =
            entries.iter().map(|e| (e.semantic, e.mask)).collect();
        assert_eq!(
            found,
            [
                (OutputSemantic::TexCoord0, 0b0011),
                (OutputSemantic::TexCoord0W, 0b0100)
            ]
        );
        assert!(entries.iter().all(|e| e.register == 2));
        // Nothing mapped: the register is still in the table, as a dummy.
        let unused = output_entries(5, 0x1F1F_1F1F);
        assert_eq!(unused.len(), 1);
        assert_eq!(
            (unused[0].semantic, unused[0].mask),
            (OutputSemantic::Dummy, 0xF)
        );
    }
}
