//! Draws (docs/gpu.md, "Draws"), the front end sequencing the geometry stage: the vertex positions of a draw in chunks; per chunk the
//! distinct vertices (the post-transform cache: a vertex index is shaded once per chunk, and a
//! vertex's result depends only on its inputs and the uniforms, so sharing it changes nothing
//! but the time) loaded into input planes and run as one batch on the engine, on every core;
//! then, in draw order, each vertex through the geometry-shader input mode or straight to
//! output mapping and primitive assembly.

use std::sync::Arc;
use std::time::Instant;

use engine::parallel::run_batch_threads;
use shader::exec::{BatchIo, EmitConfig, EmitSink, RegisterSet, ShaderEngine, SoaBuffer};
use shader::program::{DEFAULT_INPUT, InputRegisters, ShaderKind, Vec4};

use crate::framebuffer::memory::PhysicalMemory;
use crate::geometry::assembly::PrimitiveAssembler;
use crate::geometry::loader::VertexLoader;
use crate::geometry::output_map::OutputMap;
use crate::raster::{OutputVertex, Triangle};
use crate::regs::{bits, id};

use super::{Gpu, GpuError, GpuStats, charge};

/// Draw positions per chunk: bounds the memory a draw holds whatever its size (about 30 MB at
/// most), while giving the vertex batches enough distinct vertices to run on several cores
/// (`engine::parallel::run_batch_threads` splits a batch when its work is worth it).
const CHUNK: usize = 16_384;

/// Triangles gathered before they are rasterized within a draw: enough that a batch's bands
/// keep every core busy. The check follows each chunk, so at most this many less one plus one
/// chunk's triangles are held.
const RASTER_BATCH: usize = 8192;

/// How the geometry unit takes its inputs (GSH_MISC0 bits 0-7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GeometryMode {
    /// Consecutive vertices' outputs fill the input registers.
    Point,
    /// Each primitive is prefixed in the index buffer by its vertex count; vertices go to
    /// float uniforms.
    VariablePrimitive,
    /// A fixed number of vertices go to float uniforms.
    FixedPrimitive,
}

/// The geometry stage of a draw.
struct GeometryStage {
    engine: Arc<dyn ShaderEngine>,
    mode: GeometryMode,
    /// The vertex shader's output registers, in order (VSH_OUTMAP_TOTAL1 + 1 of them).
    vs_registers: Vec<usize>,
    /// Point mode: the geometry shader's input attribute count.
    inputs: usize,
    /// Attributes collected (point mode).
    pending: Vec<Vec4>,
    /// Fixed mode: vertices per invocation, outputs per vertex, first uniform.
    fixed: (usize, usize, usize),
    /// Variable mode: vertices whose outputs are all kept.
    main_vertices: usize,
    /// Vertices received for the primitive being gathered, and how many it has.
    received: usize,
    expected: usize,
    /// The next float uniform written.
    uniform: usize,
}

/// Everything a draw needs from the GPU, snapshotted when it starts.
struct DrawSetup {
    vs: Arc<dyn ShaderEngine>,
    vs_outputs: RegisterSet,
    map: OutputMap,
    geometry: Option<GeometryStage>,
}

fn setup(gpu: &mut Gpu) -> Result<DrawSetup, GpuError> {
    let vs = gpu.engine(ShaderKind::Vertex)?;
    let vs_outputs = RegisterSet(gpu.vs.output_mask);
    let geometry_on = bits(gpu.regs.get(id::GEOSTAGE_CONFIG), 0, 2) == 2;
    let geometry = if geometry_on {
        let engine = gpu.engine(ShaderKind::Geometry)?;
        let misc0 = gpu.regs.get(id::GSH_MISC0);
        let mode = match bits(misc0, 0, 8) {
            1 => GeometryMode::VariablePrimitive,
            2 => GeometryMode::FixedPrimitive,
            _ => GeometryMode::Point,
        };
        let vs_count = bits(gpu.regs.get(id::VSH_OUTMAP_TOTAL1), 0, 4) as usize + 1;
        Some(GeometryStage {
            engine,
            mode,
            vs_registers: vs_outputs.iter().take(vs_count).collect(),
            inputs: gpu.gs.input_count(),
            pending: Vec::new(),
            fixed: (
                bits(misc0, 8, 4) as usize + 1,
                bits(misc0, 12, 4) as usize + 1,
                bits(misc0, 16, 8) as usize,
            ),
            main_vertices: bits(gpu.regs.get(id::GSH_MISC1), 0, 4) as usize + 1,
            received: 0,
            expected: 0,
            uniform: 0,
        })
    } else {
        None
    };
    let mask = if geometry_on {
        gpu.gs.output_mask
    } else {
        gpu.vs.output_mask
    };
    let map = OutputMap::configure(&gpu.regs, mask);
    Ok(DrawSetup {
        vs,
        vs_outputs,
        map,
        geometry,
    })
}

/// Runs the draw the registers describe (DRAWARRAYS or, `indexed`, DRAWELEMENTS).
pub(super) fn draw(gpu: &mut Gpu, indexed: bool) -> Result<(), GpuError> {
    let count = gpu.regs.get(id::NUMVERTICES);
    if count > gpu.config.max_draw_vertices {
        return Err(GpuError::DrawTooLarge {
            count,
            limit: gpu.config.max_draw_vertices,
        });
    }
    gpu.stats.draws += 1;
    let mut setup = setup(gpu)?;
    let loader = VertexLoader::configure(&gpu.regs, &gpu.fixed, gpu.vs.permutation);
    let index_config = gpu.regs.get(id::INDEXBUFFER_CONFIG);
    let index_address = loader.base as u64 + bits(index_config, 0, 28) as u64;
    let index_size = if index_config >> 31 != 0 { 2 } else { 1 };
    let first = gpu.regs.get(id::VERTEX_OFFSET);
    let variable = setup
        .geometry
        .as_ref()
        .is_some_and(|g| g.mode == GeometryMode::VariablePrimitive);
    // Variable-size mode: vertices received of the primitive being read, and its count.
    let mut cursor = (0usize, 0usize);
    let mut start = 0usize;
    while start < count as usize {
        let started = Instant::now();
        let n = CHUNK.min(count as usize - start);
        let indices: Vec<u32> = if indexed {
            read_indices(&gpu.memory, index_address, index_size, start, n)?
        } else {
            (0..n as u32)
                .map(|k| first.wrapping_add(start as u32 + k))
                .collect()
        };
        // In variable-size mode an entry is either a primitive's vertex count or a vertex.
        let roles: Vec<bool> = if variable {
            indices
                .iter()
                .map(|&index| {
                    let (received, expected) = &mut cursor;
                    if *received == *expected {
                        (*received, *expected) = (0, index as usize);
                        false
                    } else {
                        *received += 1;
                        true
                    }
                })
                .collect()
        } else {
            vec![true; n]
        };
        let vertices: Vec<u32> = indices
            .iter()
            .zip(&roles)
            .filter(|&(_, &is_vertex)| is_vertex)
            .map(|(&i, _)| i)
            .collect();
        let shaded = shade(gpu, &setup, &loader, &vertices, indexed, started)?;
        let started = Instant::now();
        let mut next_vertex = 0;
        if setup.geometry.is_none() {
            // Each distinct vertex is mapped once; assembly copies the mapped vertices.
            let mapped: Vec<OutputVertex> = (0..shaded.outputs.count())
                .map(|i| setup.map.map(&shaded.outputs.vertex(i)))
                .collect();
            for &slot in &shaded.slot {
                assemble(gpu, mapped[slot]);
            }
            gpu.stats.vertices += shaded.slot.len() as u64;
        } else {
            for (&index, &is_vertex) in indices.iter().zip(&roles) {
                if is_vertex {
                    let outputs = shaded.outputs.vertex(shaded.slot[next_vertex]);
                    next_vertex += 1;
                    gpu.stats.vertices += 1;
                    submit(gpu, &mut setup, &outputs);
                } else {
                    begin_variable_primitive(gpu, &mut setup, index);
                }
            }
        }
        start += n;
        charge(&mut gpu.times.primitives, started);
        if gpu.pending.len() >= RASTER_BATCH {
            gpu.rasterize_pending()?;
        }
    }
    // The state may change after the draw: its triangles are rasterized now.
    gpu.rasterize_pending()
}

/// Reads `n` indices from position `start` of the index buffer at `address`.
fn read_indices(
    memory: &PhysicalMemory,
    address: u64,
    size: usize,
    start: usize,
    n: usize,
) -> Result<Vec<u32>, GpuError> {
    let at = address + (start * size) as u64;
    let len = (n * size) as u64;
    if at > u32::MAX as u64 {
        return Err(GpuError::Memory(crate::framebuffer::memory::MemoryError {
            address: u32::MAX,
            len,
        }));
    }
    let bytes = memory.read_vec(at as u32, len as usize)?;
    Ok(if size == 2 {
        bytes
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]) as u32)
            .collect()
    } else {
        bytes.iter().map(|&b| b as u32).collect()
    })
}

/// A chunk's shaded vertices: the outputs of each distinct vertex, and for each vertex of
/// the chunk the slot of its outputs.
struct Shaded {
    outputs: SoaBuffer,
    slot: Vec<usize>,
}

/// The post-transform cache of indexed draws: each index's slot among a chunk's distinct
/// vertices (indices are at most 16 bits, so one table, allocated once, holds them all). A
/// non-indexed draw's vertices are all distinct and need none.
#[derive(Default)]
pub(super) struct VertexCache {
    slots: Vec<u32>,
}

impl VertexCache {
    const EMPTY: u32 = u32::MAX;

    /// The distinct vertices of `vertices` in first-use order, and each vertex's slot.
    fn distinct(&mut self, vertices: &[u32], indexed: bool) -> (Vec<u32>, Vec<usize>) {
        if !indexed {
            return (vertices.to_vec(), (0..vertices.len()).collect());
        }
        if self.slots.is_empty() {
            self.slots = vec![Self::EMPTY; 1 << 16];
        }
        let mut distinct: Vec<u32> = Vec::with_capacity(vertices.len());
        let slot = vertices
            .iter()
            .map(|&index| {
                let entry = &mut self.slots[index as usize & 0xFFFF];
                if *entry == Self::EMPTY {
                    *entry = distinct.len() as u32;
                    distinct.push(index);
                }
                *entry as usize
            })
            .collect();
        // An entry lives for one chunk: cleared for the next.
        for &index in &distinct {
            self.slots[index as usize & 0xFFFF] = Self::EMPTY;
        }
        (distinct, slot)
    }
}

/// Runs the vertex shader on the distinct vertices of `vertices`.
fn shade(
    gpu: &mut Gpu,
    setup: &DrawSetup,
    loader: &VertexLoader,
    vertices: &[u32],
    indexed: bool,
    started: Instant,
) -> Result<Shaded, GpuError> {
    let (distinct, slot) = gpu.vertex_cache.distinct(vertices, indexed);
    let mut inputs = SoaBuffer::zeroed(loader.registers(), distinct.len());
    loader.load(&gpu.memory, &distinct, &mut inputs, gpu.config.precision)?;
    charge(&mut gpu.times.vertex_load, started);
    let outputs = run_vertex_shader(gpu, setup, &inputs);
    Ok(Shaded { outputs, slot })
}

fn run_vertex_shader(gpu: &mut Gpu, setup: &DrawSetup, inputs: &SoaBuffer) -> SoaBuffer {
    gpu.show_observer(|observer, gpu| observer.vertex_batch(gpu, inputs));
    let started = Instant::now();
    let mut outputs = SoaBuffer::zeroed(setup.vs_outputs, inputs.count());
    let mut errors = Vec::new();
    {
        let io = BatchIo::new(inputs.inputs(), outputs.outputs(), None)
            .expect("planes made for the same vertices");
        run_batch_threads(
            setup.vs.as_ref(),
            gpu.config.threads,
            &gpu.vs.uniforms,
            io,
            &mut errors,
        );
    }
    charge(&mut gpu.times.vertex_shader, started);
    gpu.stats.vertex_invocations += inputs.count() as u64;
    gpu.stats.vertex_errors += errors.len() as u64;
    outputs
}

/// Runs immediate-mode vertices (already in input registers) through the pipeline.
pub(super) fn draw_immediate(gpu: &mut Gpu, vertices: &[InputRegisters]) -> Result<(), GpuError> {
    if vertices.is_empty() {
        return Ok(());
    }
    gpu.stats.draws += 1;
    let mut setup = setup(gpu)?;
    let registers = RegisterSet(
        (0..16)
            .filter(|&r| vertices.iter().any(|v| v[r] != DEFAULT_INPUT))
            .fold(0, |set, r| set | 1 << r),
    );
    for chunk in vertices.chunks(CHUNK) {
        let inputs = SoaBuffer::from_vertices(registers, chunk);
        let outputs = run_vertex_shader(gpu, &setup, &inputs);
        let started = Instant::now();
        for i in 0..chunk.len() {
            gpu.stats.vertices += 1;
            submit(gpu, &mut setup, &outputs.vertex(i));
        }
        charge(&mut gpu.times.primitives, started);
        if gpu.pending.len() >= RASTER_BATCH {
            gpu.rasterize_pending()?;
        }
    }
    gpu.rasterize_pending()
}

/// Sends a mapped vertex to primitive assembly.
fn assemble(gpu: &mut Gpu, vertex: OutputVertex) {
    let (stats, captured, pending) = (&mut gpu.stats, &mut gpu.captured, &mut gpu.pending);
    gpu.assembler.submit(vertex, &mut |t| {
        Gpu::emit_triangle(stats, captured, pending, t)
    });
}

/// Sends one shaded vertex on: to the geometry stage, or mapped to primitive assembly.
fn submit(gpu: &mut Gpu, setup: &mut DrawSetup, outputs: &[Vec4; 16]) {
    let Some(stage) = setup.geometry.as_mut() else {
        assemble(gpu, setup.map.map(outputs));
        return;
    };
    let vs_values = || stage_values(&stage.vs_registers, outputs);
    match stage.mode {
        GeometryMode::Point => {
            stage.pending.extend(vs_values());
            while stage.pending.len() >= stage.inputs {
                let mut inputs = [DEFAULT_INPUT; 16];
                for (n, &value) in stage.pending[..stage.inputs].iter().enumerate() {
                    inputs[gpu.gs.input_register(n)] = value;
                }
                stage.pending.drain(..stage.inputs);
                run_geometry(gpu, &setup.map, stage.engine.clone(), &inputs);
            }
        }
        GeometryMode::FixedPrimitive => {
            let (per_invocation, stride, first) = stage.fixed;
            let values = vs_values();
            for value in values.into_iter().take(stride) {
                gpu.gs.set_float(first + stage.uniform, value);
                stage.uniform += 1;
            }
            stage.received += 1;
            if stage.received == per_invocation {
                stage.received = 0;
                stage.uniform = 0;
                run_geometry(gpu, &setup.map, stage.engine.clone(), &[DEFAULT_INPUT; 16]);
            }
        }
        GeometryMode::VariablePrimitive => {
            let values = vs_values();
            let keep = if stage.received < stage.main_vertices {
                values.len()
            } else {
                1
            };
            for value in values.into_iter().take(keep) {
                gpu.gs.set_float(stage.uniform, value);
                stage.uniform += 1;
            }
            stage.received += 1;
            if stage.received == stage.expected {
                run_geometry(gpu, &setup.map, stage.engine.clone(), &[DEFAULT_INPUT; 16]);
            }
        }
    }
}

/// A variable-size primitive's count entry: c0 = (N, N, N, N); its vertices go to c1 on.
fn begin_variable_primitive(gpu: &mut Gpu, setup: &mut DrawSetup, count: u32) {
    let stage = setup.geometry.as_mut().expect("variable mode has a stage");
    let n = count as f32;
    gpu.gs.set_float(0, [n; 4]);
    stage.expected = count as usize;
    stage.received = 0;
    stage.uniform = 1;
    if count == 0 {
        run_geometry(gpu, &setup.map, stage.engine.clone(), &[DEFAULT_INPUT; 16]);
    }
}

fn stage_values(registers: &[usize], outputs: &[Vec4; 16]) -> Vec<Vec4> {
    registers.iter().map(|&r| outputs[r]).collect()
}

/// Sends a geometry shader's triangles to primitive assembly.
struct AssemblySink<'a> {
    map: &'a OutputMap,
    assembler: &'a mut PrimitiveAssembler,
    stats: &'a mut GpuStats,
    captured: &'a mut Option<Vec<Triangle>>,
    pending: &'a mut Vec<Triangle>,
}

impl EmitSink for AssemblySink<'_> {
    fn vertex(&mut self, _: EmitConfig, _: &[Vec4; 16]) {}

    fn primitive(&mut self, winding: bool, slots: &[[Vec4; 16]; 3]) {
        if winding {
            self.assembler.set_winding();
        }
        for slot in slots {
            let vertex = self.map.map(slot);
            let (stats, captured, pending) =
                (&mut *self.stats, &mut *self.captured, &mut *self.pending);
            self.assembler.submit(vertex, &mut |t| {
                Gpu::emit_triangle(stats, captured, pending, t)
            });
        }
    }
}

fn run_geometry(
    gpu: &mut Gpu,
    map: &OutputMap,
    engine: Arc<dyn ShaderEngine>,
    inputs: &InputRegisters,
) {
    gpu.show_observer(|observer, gpu| observer.geometry_invocation(gpu, inputs));
    let mut sink = AssemblySink {
        map,
        assembler: &mut gpu.assembler,
        stats: &mut gpu.stats,
        captured: &mut gpu.captured,
        pending: &mut gpu.pending,
    };
    let outcome = engine.run_geometry(&mut gpu.geometry, &gpu.gs.uniforms, inputs, &mut sink);
    gpu.stats.geometry_invocations += 1;
    if outcome.is_err() {
        gpu.stats.geometry_errors += 1;
    }
}
