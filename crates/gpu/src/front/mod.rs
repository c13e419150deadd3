//! The front end (docs/gpu.md, "Command buffers"): the [`Gpu`] itself, which holds every
//! stage's state, takes register writes one at a time ([`Gpu::write`]), as command buffers
//! ([`Gpu::run_commands`]) or as command lists in memory ([`Gpu::run_command_list`],
//! following CMDBUF_JUMP chains), and acts on the writes that start work: uploads to the shader
//! units, draws (the geometry stage, then the rasterizer through `render`'s functions),
//! flushes. Beside it: [`command`] (buffers into writes), [`trace`] (CiTrace replay) and
//! [`transfer`] (display transfers and memory fills).
//!
//! In: register writes and memory. Out: memory (the render target, transfers), statistics and
//! times. A malformed buffer, an access outside memory, a draw beyond the configured limits:
//! each is a [`GpuError`] naming what and where; an unknown register is recorded
//! ([`RegisterFile::unmodelled`]), never fatal.

pub mod command;
mod draw;
pub mod external;
pub mod observe;
mod render;
pub mod trace;
pub mod transfer;

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::cache::ProgramCache;
use engine::{EngineError, EngineKind, prepare_cached};
use shader::exec::{GeometryState, ShaderEngine};
use shader::float24::{Precision, unpack_uniform};
use shader::program::{InputRegisters, ProgramError, ShaderKind, Vec4};

use crate::fragment::{FragmentTables, gas, texture};
use crate::framebuffer::memory::{MemoryError, PhysicalMemory};
use crate::framebuffer::target::RenderTarget;
use crate::geometry::assembly::{PrimitiveAssembler, Topology};
use crate::geometry::loader::{ATTRIBUTES, LoadError};
use crate::geometry::shader_unit::{ShaderUnit, exec_config};
use crate::raster::{self, Triangle};
use crate::regs::{self, RegisterFile, bits, id};

use command::{CommandError, Commands};

/// How the pipeline runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuConfig {
    /// The engine shader programs run on.
    pub engine: EngineKind,
    /// How shader arithmetic rounds.
    pub precision: Precision,
    /// Threads for vertex batches and rasterization (1: the caller's thread only).
    pub threads: usize,
    /// The most vertices one draw may have (NUMVERTICES); a larger draw is an error.
    pub max_draw_vertices: u32,
    /// The most command words one call may process, chained lists included (a list that jumps
    /// to itself ends here instead of running forever).
    pub max_command_words: u64,
    /// The longest side a bound texture may have, in texels (the hardware's is 1024; the
    /// DIM fields reach 2047); a larger one is an error.
    pub max_texture_side: u32,
    /// Time each fragment stage on a sample of the fragments ([`StageTimes::fragment_stages`]).
    pub sample_fragment_stages: bool,
    /// Shade each batch on the fragment path its state allows
    /// (`fragment::FragmentConfig::path`, docs/gpu.md "Fragment paths"); off, every fragment
    /// takes the general path. The image is the same either way.
    pub specialise_fragments: bool,
}

impl Default for GpuConfig {
    fn default() -> GpuConfig {
        GpuConfig {
            engine: EngineKind::Auto,
            precision: Precision::default(),
            threads: 1,
            max_draw_vertices: 1 << 24,
            max_command_words: 1 << 28,
            max_texture_side: 1024,
            sample_fragment_stages: false,
            specialise_fragments: true,
        }
    }
}

/// Why the pipeline stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuError {
    /// A malformed command buffer (the list's physical address when it came from memory).
    Command {
        /// Where the list lives, when in memory.
        list: Option<u32>,
        /// What is wrong, with the word offset.
        error: CommandError,
    },
    /// More command words than [`GpuConfig::max_command_words`].
    CommandBudget {
        /// The limit.
        limit: u64,
    },
    /// A memory access outside the modelled memory.
    Memory(MemoryError),
    /// A vertex's attributes could not be read.
    Load(LoadError),
    /// A draw with more vertices than [`GpuConfig::max_draw_vertices`].
    DrawTooLarge {
        /// NUMVERTICES.
        count: u32,
        /// The limit.
        limit: u32,
    },
    /// A shader unit's program memory does not form a program.
    Program {
        /// Which unit.
        stage: ShaderKind,
        /// Why.
        error: ProgramError,
    },
    /// A texture unit's data lies outside the modelled memory.
    Texture {
        /// Which unit (0-2).
        unit: usize,
        /// The access.
        error: MemoryError,
    },
    /// A bound texture larger than [`GpuConfig::max_texture_side`].
    TextureTooLarge {
        /// Which unit (0-2).
        unit: usize,
        /// Its width and height.
        size: (u32, u32),
        /// The limit.
        limit: u32,
    },
    /// The engine could not prepare a unit's program.
    Engine {
        /// Which unit.
        stage: ShaderKind,
        /// Why.
        error: EngineError,
    },
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuError::Command {
                list: Some(address),
                error,
            } => write!(f, "command list at {address:#010x}: {error}"),
            GpuError::Command { list: None, error } => write!(f, "command buffer: {error}"),
            GpuError::CommandBudget { limit } => {
                write!(
                    f,
                    "more than {limit} command words (a command list that never ends?)"
                )
            }
            GpuError::Memory(error) => write!(f, "memory: {error}"),
            GpuError::Load(error) => write!(f, "vertex loader: {error}"),
            GpuError::DrawTooLarge { count, limit } => {
                write!(
                    f,
                    "a draw of {count} vertices is beyond the limit of {limit}"
                )
            }
            GpuError::Program { stage, error } => {
                write!(f, "{} shader unit: {error}", stage_name(*stage))
            }
            GpuError::Texture { unit, error } => write!(f, "texture unit {unit}: {error}"),
            GpuError::TextureTooLarge { unit, size, limit } => write!(
                f,
                "texture unit {unit}: a {}x{} texture is beyond the limit of {limit} texels a side",
                size.0, size.1
            ),
            GpuError::Engine { stage, error } => {
                write!(f, "{} shader unit: {error}", stage_name(*stage))
            }
        }
    }
}

impl std::error::Error for GpuError {}

fn stage_name(stage: ShaderKind) -> &'static str {
    match stage {
        ShaderKind::Vertex => "vertex",
        ShaderKind::Geometry => "geometry",
    }
}

impl From<MemoryError> for GpuError {
    fn from(error: MemoryError) -> GpuError {
        GpuError::Memory(error)
    }
}

impl From<LoadError> for GpuError {
    fn from(error: LoadError) -> GpuError {
        GpuError::Load(error)
    }
}

/// What the pipeline did, summed over its life.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuStats {
    /// Register writes processed.
    pub register_writes: u64,
    /// Command lists run from memory (each link of a chain counts).
    pub command_lists: u64,
    /// Command buffers that ended without a FINALIZE write.
    pub unfinalized_lists: u64,
    /// Draw triggers (and immediate-mode batches).
    pub draws: u64,
    /// Vertices drawn (index positions; a variable-size primitive's count entries excluded).
    pub vertices: u64,
    /// Vertex-shader invocations (vertices the post-transform cache did not have).
    pub vertex_invocations: u64,
    /// Vertex-shader invocations that failed (their outputs read +0).
    pub vertex_errors: u64,
    /// Geometry-shader invocations.
    pub geometry_invocations: u64,
    /// Geometry-shader invocations that failed (what they emitted before failing stays).
    pub geometry_errors: u64,
    /// Triangles out of primitive assembly.
    pub triangles: u64,
}

/// Where the pipeline's time went, summed over its life (wall clock, read at batch and draw
/// granularity so the reading costs nothing measurable; docs/gpu.md, "Speed").
#[derive(Clone, Copy, Debug, Default)]
pub struct StageTimes {
    /// Preparing shader programs (compiling, or finding them in the program cache).
    pub prepare: Duration,
    /// Reading indices, the post-transform cache, and loading attributes into input planes.
    pub vertex_load: Duration,
    /// Running the vertex shader on those planes (every core).
    pub vertex_shader: Duration,
    /// The geometry shader, output mapping and primitive assembly, in draw order.
    pub primitives: Duration,
    /// Clipping, culling and triangle set-up.
    pub setup: Duration,
    /// Coverage, interpolation, combiners and per-fragment operations (every core).
    pub fragments: Duration,
    /// Loading the render target from memory and writing it back.
    pub target: Duration,
    /// Checking bound textures against memory and decoding the changed ones.
    pub textures: Duration,
    /// The fragment stages, timed on one fragment in `fragment::SAMPLE_EVERY` when
    /// [`GpuConfig::sample_fragment_stages`] is set (part of `fragments`).
    pub fragment_stages: crate::fragment::StageSamples,
}

impl StageTimes {
    /// The stages' sum.
    pub fn total(&self) -> Duration {
        self.prepare
            + self.vertex_load
            + self.vertex_shader
            + self.primitives
            + self.setup
            + self.fragments
            + self.target
            + self.textures
    }
}

/// Adds the time since `started` to `slot`.
fn charge(slot: &mut Duration, started: Instant) {
    *slot += started.elapsed();
}

/// How a command buffer ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListEnd {
    /// A FINALIZE write (the words after it are not run).
    Finalized,
    /// The end of the buffer without FINALIZE (the hardware would wait forever).
    Exhausted,
    /// A CMDBUF_JUMP write: the next list, (physical address, bytes).
    Jump(u32, u32),
}

/// The software GPU.
pub struct Gpu {
    /// The register file.
    pub regs: RegisterFile,
    /// Physical memory.
    pub memory: PhysicalMemory,
    /// The vertex shader unit.
    pub vs: ShaderUnit,
    /// The geometry shader unit.
    pub gs: ShaderUnit,
    /// The fixed attribute values.
    pub fixed: [Vec4; ATTRIBUTES],
    fixed_index: u32,
    fixed_words: [u32; 3],
    fixed_filled: usize,
    immediate_attributes: Vec<Vec4>,
    immediate_vertices: Vec<InputRegisters>,
    assembler: PrimitiveAssembler,
    geometry: GeometryState,
    cache: Arc<ProgramCache>,
    vs_engine: Option<(u64, Arc<dyn ShaderEngine>)>,
    gs_engine: Option<(u64, Arc<dyn ShaderEngine>)>,
    /// How the pipeline runs.
    pub config: GpuConfig,
    /// What it did.
    pub stats: GpuStats,
    captured: Option<Vec<Triangle>>,
    /// Triangles of the current draw not yet rasterized.
    pending: Vec<Triangle>,
    /// The render target held between draws.
    target: Option<RenderTarget>,
    /// What the rasterizer did.
    pub raster_stats: raster::RasterStats,
    /// Where the time went.
    pub times: StageTimes,
    /// The pixel whose fragments are recorded, and those recorded.
    probe: Option<(u32, u32)>,
    probed: Vec<raster::ProbedFragment>,
    vertex_cache: draw::VertexCache,
    /// Set-up triangles of the batch being rasterized (kept for its capacity).
    setup_buffer: Vec<raster::SetupTriangle>,
    /// The fragment stages' lookup tables (lighting, fog, procedural texture, gas), written through their data
    /// registers.
    pub tables: Box<FragmentTables>,
    /// Decoded textures.
    pub texture_cache: texture::TextureCache,
    /// What sees the shader units' work ([`observe`]).
    observer: Option<Box<dyn observe::ShaderObserver>>,
}

impl fmt::Debug for Gpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gpu")
            .field("config", &self.config)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Gpu {
    /// A GPU with zeroed registers and memory and its own program cache.
    pub fn new(config: GpuConfig) -> Gpu {
        let cache = Arc::new(ProgramCache::new(NonZeroUsize::new(64).expect("non-zero")));
        Gpu::with_cache(config, cache)
    }

    /// A GPU preparing programs through `cache` (shared with other users of the engines).
    pub fn with_cache(config: GpuConfig, cache: Arc<ProgramCache>) -> Gpu {
        Gpu {
            regs: RegisterFile::default(),
            memory: PhysicalMemory::new(),
            vs: ShaderUnit::new(ShaderKind::Vertex),
            gs: ShaderUnit::new(ShaderKind::Geometry),
            fixed: [[0.0; 4]; ATTRIBUTES],
            fixed_index: 0,
            fixed_words: [0; 3],
            fixed_filled: 0,
            immediate_attributes: Vec::new(),
            immediate_vertices: Vec::new(),
            assembler: PrimitiveAssembler::new(Topology::List),
            geometry: GeometryState::default(),
            cache,
            vs_engine: None,
            gs_engine: None,
            config,
            stats: GpuStats::default(),
            captured: None,
            pending: Vec::new(),
            target: None,
            raster_stats: raster::RasterStats::default(),
            times: StageTimes::default(),
            probe: None,
            probed: Vec::new(),
            vertex_cache: draw::VertexCache::default(),
            setup_buffer: Vec::new(),
            tables: Box::default(),
            texture_cache: texture::TextureCache::default(),
            observer: None,
        }
    }

    /// Keeps every triangle out of primitive assembly from now on, for [`Gpu::take_triangles`]
    /// (tests, and tools that look at geometry).
    pub fn capture_triangles(&mut self) {
        self.captured.get_or_insert_with(Vec::new);
    }

    /// The triangles captured since the last call.
    pub fn take_triangles(&mut self) -> Vec<Triangle> {
        self.captured
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Whether the geometry unit takes its own configuration (VSH_COM_MODE bit 0); when it
    /// does not, vertex-unit uploads reach it too.
    fn geometry_unit_separate(&self) -> bool {
        self.regs.get(id::VSH_COM_MODE) & 1 != 0
    }

    /// Applies one register write: the byte-enabled bytes of `value` go to register
    /// `register`, then whatever the register triggers happens (an upload, a draw).
    pub fn write(&mut self, register: u16, value: u32, mask: u8) -> Result<(), GpuError> {
        let register = register % regs::REGISTER_COUNT as u16;
        let immediate_data = matches!(register, id::FIXEDATTRIB_INDEX..=id::FIXEDATTRIB_DATA2);
        if !immediate_data && !self.immediate_vertices.is_empty() {
            self.flush_immediate()?;
        }
        self.stats.register_writes += 1;
        let value = self.regs.write(register, value, mask);
        let precision = self.config.precision;
        let vsh = id::VSH_BASE..id::VSH_BASE + id::SH_BLOCK;
        let gsh = id::GSH_BASE..id::GSH_BASE + id::SH_BLOCK;
        if vsh.contains(&register) {
            let offset = register - id::VSH_BASE;
            self.vs.write(offset, value, precision);
            if !self.geometry_unit_separate() && propagates_to_geometry_unit(offset) {
                self.gs.write(offset, value, precision);
                self.regs.set(id::GSH_BASE + offset, value);
                if offset == id::SH_BOOLUNIFORM {
                    self.geometry.invoked = false;
                }
            }
            return Ok(());
        }
        if gsh.contains(&register) {
            let offset = register - id::GSH_BASE;
            self.gs.write(offset, value, precision);
            if offset == id::SH_BOOLUNIFORM {
                // Writing the bools sets b15 again from the value (docs/gpu.md).
                self.geometry.invoked = false;
            }
            return Ok(());
        }
        match register {
            id::FIXEDATTRIB_INDEX => {
                self.fixed_index = bits(value, 0, 4);
                self.fixed_filled = 0;
                self.immediate_attributes.clear();
            }
            id::FIXEDATTRIB_DATA0..=id::FIXEDATTRIB_DATA2 => self.push_fixed_word(value),
            id::DRAWARRAYS => draw::draw(self, false)?,
            id::DRAWELEMENTS => draw::draw(self, true)?,
            id::RESTART_PRIMITIVE => self.assembler.restart(),
            id::LIGHTING_LUT_DATA0..=id::LIGHTING_LUT_DATA7 => {
                self.tables.lighting.push(&mut self.regs, value)
            }
            id::FOG_LUT_DATA0..=id::FOG_LUT_DATA7 => self.tables.fog.push(&mut self.regs, value),
            id::PROCTEX_LUT_DATA0..=id::PROCTEX_LUT_DATA7 => {
                self.tables.proctex.push(&mut self.regs, value)
            }
            id::GAS_LUT_DATA => self.tables.gas.push(&mut self.regs, value),
            id::GAS_ACCMAX_FEEDBACK if gas::guess::FEEDBACK_WRITE_CLEARS => {
                // A write starts a new accumulation pass: the tracked maximum is cleared.
                let word = self.regs.get(id::GAS_ACCMAX_FEEDBACK);
                self.regs.set(id::GAS_ACCMAX_FEEDBACK, word & 0xFFFF);
            }
            id::FRAMEBUFFER_INVALIDATE | id::FRAMEBUFFER_FLUSH => self.finish()?,
            id::PRIMITIVE_CONFIG => {
                let topology = Topology::from_code(bits(value, 8, 2));
                if topology != self.assembler.topology {
                    self.assembler = PrimitiveAssembler::new(topology);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn push_fixed_word(&mut self, word: u32) {
        self.fixed_words[self.fixed_filled] = word;
        self.fixed_filled += 1;
        if self.fixed_filled < 3 {
            return;
        }
        self.fixed_filled = 0;
        let value = unpack_uniform(self.fixed_words).map(|v| v.to_f32());
        if self.fixed_index == 0xF {
            // Immediate mode: attributes in order; a vertex when all have arrived.
            self.immediate_attributes.push(value);
            let count = bits(self.regs.get(id::VSH_NUM_ATTR), 0, 4) as usize + 1;
            if self.immediate_attributes.len() == count {
                let mut inputs = [shader::program::DEFAULT_INPUT; 16];
                for (n, &attribute) in self.immediate_attributes.iter().enumerate() {
                    inputs[self.vs.input_register(n)] = attribute;
                }
                self.immediate_attributes.clear();
                self.immediate_vertices.push(inputs);
            }
        } else if let Some(slot) = self.fixed.get_mut(self.fixed_index as usize) {
            *slot = value;
            self.fixed_index += 1;
        }
    }

    /// Finishes what is in flight: immediate-mode vertices, triangles not yet rasterized, and
    /// the render target, written back to memory. Command buffers do this when they end; a
    /// caller writing registers one at a time calls it before reading the framebuffer.
    pub fn finish(&mut self) -> Result<(), GpuError> {
        self.flush_immediate()?;
        self.rasterize_pending()?;
        self.flush_target()
    }

    /// Runs the immediate-mode vertices received so far through the pipeline.
    fn flush_immediate(&mut self) -> Result<(), GpuError> {
        let vertices = std::mem::take(&mut self.immediate_vertices);
        draw::draw_immediate(self, &vertices)
    }

    /// Runs a command buffer (its whole length in words). Returns how it ended; a CMDBUF_JUMP
    /// is returned, not followed (see [`Gpu::run_command_list`]).
    pub fn run_commands(&mut self, words: &[u32]) -> Result<ListEnd, GpuError> {
        let mut budget = self.config.max_command_words;
        self.run_buffer(words, None, &mut budget)
    }

    fn run_buffer(
        &mut self,
        words: &[u32],
        list: Option<u32>,
        budget: &mut u64,
    ) -> Result<ListEnd, GpuError> {
        if words.len() as u64 > *budget {
            return Err(GpuError::CommandBudget {
                limit: self.config.max_command_words,
            });
        }
        *budget -= words.len() as u64;
        for write in Commands::new(words) {
            let write = write.map_err(|error| GpuError::Command { list, error })?;
            self.write(write.register, write.value, write.mask)?;
            match write.register % regs::REGISTER_COUNT as u16 {
                id::FINALIZE => {
                    self.flush_immediate()?;
                    self.finish()?;
                    return Ok(ListEnd::Finalized);
                }
                jump @ (id::CMDBUF_JUMP0 | id::CMDBUF_JUMP1) => {
                    self.flush_immediate()?;
                    self.finish()?;
                    let (address, bytes) = self.command_list_registers(jump - id::CMDBUF_JUMP0);
                    return Ok(ListEnd::Jump(address, bytes));
                }
                _ => {}
            }
        }
        self.flush_immediate()?;
        self.finish()?;
        self.stats.unfinalized_lists += 1;
        Ok(ListEnd::Exhausted)
    }

    /// The list command-list channel `channel` (0 or 1) names: (physical address, bytes),
    /// from CMDBUF_ADDRn and CMDBUF_SIZEn, both in 8-byte units (3dbrew, *GPU/Internal
    /// Registers*). A jump in a list and a kick through the external registers (the same
    /// registers, seen through the window at 0x10401000) both read it here.
    pub fn command_list_registers(&self, channel: u16) -> (u32, u32) {
        let address = bits(self.regs.get(id::CMDBUF_ADDR0 + channel), 0, 28) << 3;
        let bytes = bits(self.regs.get(id::CMDBUF_SIZE0 + channel), 0, 21) << 3;
        (address, bytes)
    }

    /// Runs the command list of `bytes` bytes at physical `address` and every list it jumps to
    /// (CMDBUF_JUMP), until one ends with FINALIZE or without a jump. The size's low 3 bits are
    /// ignored, as the hardware does.
    pub fn run_command_list(&mut self, address: u32, bytes: u32) -> Result<ListEnd, GpuError> {
        let mut budget = self.config.max_command_words;
        let (mut address, mut bytes) = (address, bytes);
        loop {
            let len = (bytes & !7) as usize;
            if (len / 4) as u64 > budget {
                return Err(GpuError::CommandBudget {
                    limit: self.config.max_command_words,
                });
            }
            let raw = self.memory.read_vec(address, len)?;
            let words: Vec<u32> = raw
                .chunks_exact(4)
                .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                .collect();
            self.stats.command_lists += 1;
            match self.run_buffer(&words, Some(address), &mut budget)? {
                ListEnd::Jump(next, size) => (address, bytes) = (next, size),
                end => return Ok(end),
            }
        }
    }

    /// The engine running a unit's program now (prepared again only when the program
    /// changed).
    fn engine(&mut self, stage: ShaderKind) -> Result<Arc<dyn ShaderEngine>, GpuError> {
        let version = match stage {
            ShaderKind::Vertex => self.vs.program_version,
            ShaderKind::Geometry => self.gs.program_version,
        };
        let held = match stage {
            ShaderKind::Vertex => &self.vs_engine,
            ShaderKind::Geometry => &self.gs_engine,
        };
        if let Some((v, engine)) = held
            && *v == version
        {
            return Ok(engine.clone());
        }
        let started = Instant::now();
        let engine = self.prepare(stage);
        charge(&mut self.times.prepare, started);
        let engine = engine?;
        let slot = match stage {
            ShaderKind::Vertex => &mut self.vs_engine,
            ShaderKind::Geometry => &mut self.gs_engine,
        };
        *slot = Some((version, engine.clone()));
        Ok(engine)
    }

    fn prepare(&self, stage: ShaderKind) -> Result<Arc<dyn ShaderEngine>, GpuError> {
        let unit = match stage {
            ShaderKind::Vertex => &self.vs,
            ShaderKind::Geometry => &self.gs,
        };
        let program = unit
            .program()
            .map_err(|error| GpuError::Program { stage, error })?;
        prepare_cached(
            &self.cache,
            self.config.engine,
            &program,
            exec_config(self.config.precision),
        )
        .map_err(|error| GpuError::Engine { stage, error })
    }

    /// Loads a trace's initial shader state: the vertex program, its descriptors and float
    /// uniforms, the geometry program where the trace has one, and the default attributes
    /// (float24 in the low 24 bits of each word).
    pub fn restore_units(&mut self, initial: &trace::InitialState) {
        let float24 = |word: u32| shader::float24::F24::from_bits_truncated(word).to_f32();
        self.vs
            .load_program(&initial.vs_program, &initial.vs_swizzle);
        for (n, value) in initial.vs_float_uniforms.chunks_exact(4).enumerate() {
            self.vs
                .set_float(n, [value[0], value[1], value[2], value[3]].map(float24));
        }
        if !initial.gs_program.is_empty() {
            self.gs
                .load_program(&initial.gs_program, &initial.gs_swizzle);
        }
        for (n, value) in initial.gs_float_uniforms.chunks_exact(4).enumerate() {
            self.gs
                .set_float(n, [value[0], value[1], value[2], value[3]].map(float24));
        }
        for (slot, value) in self
            .fixed
            .iter_mut()
            .zip(initial.default_attributes.chunks_exact(4))
        {
            *slot = [value[0], value[1], value[2], value[3]].map(float24);
        }
        // The unit registers of the snapshot: entry points, masks, permutations, uniforms.
        for offset in [
            id::SH_BOOLUNIFORM,
            id::SH_INTUNIFORM_I0,
            id::SH_INTUNIFORM_I0 + 1,
            id::SH_INTUNIFORM_I0 + 2,
            id::SH_INTUNIFORM_I3,
            id::SH_INPUTBUFFER_CONFIG,
            id::SH_ENTRYPOINT,
            id::SH_ATTRIBUTES_PERMUTATION_LOW,
            id::SH_ATTRIBUTES_PERMUTATION_HIGH,
            id::SH_OUTMAP_MASK,
        ] {
            let precision = self.config.precision;
            self.vs
                .write(offset, self.regs.get(id::VSH_BASE + offset), precision);
            self.gs
                .write(offset, self.regs.get(id::GSH_BASE + offset), precision);
        }
        self.assembler = PrimitiveAssembler::new(Topology::from_code(bits(
            self.regs.get(id::PRIMITIVE_CONFIG),
            8,
            2,
        )));
    }

    /// Hands a triangle on from primitive assembly to the rasterizer.
    fn emit_triangle(
        stats: &mut GpuStats,
        captured: &mut Option<Vec<Triangle>>,
        pending: &mut Vec<Triangle>,
        t: &Triangle,
    ) {
        stats.triangles += 1;
        if let Some(captured) = captured {
            captured.push(*t);
        }
        pending.push(*t);
    }
}

/// Whether a vertex-unit register write reaches the geometry unit when it takes no
/// configuration of its own (VSH_COM_MODE = 0): program and descriptor uploads, uniforms and
/// the output mask (docs/gpu.md, "Shader units").
fn propagates_to_geometry_unit(offset: u16) -> bool {
    matches!(
        offset,
        id::SH_BOOLUNIFORM..=id::SH_INTUNIFORM_I3
            | id::SH_OUTMAP_MASK
            | id::SH_CODETRANSFER_END
            | id::SH_FLOATUNIFORM_INDEX..=id::SH_FLOATUNIFORM_DATA7
            | id::SH_CODETRANSFER_INDEX..=id::SH_CODETRANSFER_DATA7
            | id::SH_OPDESCS_INDEX..=id::SH_OPDESCS_DATA7
    )
}
