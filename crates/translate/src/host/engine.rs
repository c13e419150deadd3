//! The `gpu` and `vulkan` engines: a program translated to GLSL (or SPIR-V), compiled by the
//! host's OpenGL (or Vulkan) driver and run there, its outputs and end state read back by
//! transform feedback. They implement the execution contract like every other engine, so the
//! differential tester checks the translation bit for bit against the interpreter
//! (docs/gpu-shaders.md).
//!
//! A GL context is current on one thread only, and a Vulkan queue is used by one thread at a
//! time: per API, worker threads (one per core, up to four) each own a device and run the
//! work of the programs compiled on it in turn, the engines sending them jobs.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock};

use shader::exec::{
    BatchIo, EmitConfig, EmitSink, ExecConfig, ExecError, GeometryState, ShaderEngine, VertexResult,
};
use shader::program::{FlowRegisters, InputRegisters, ShaderProgram, Uniforms};

use super::gl::{Api, GlDevice, GlProgram};
use super::vulkan::{VkDevice, VkProgram};
use super::{BLOCK_BYTES, Capture, HostError, block_bytes, push_input_bytes};
use crate::geometry::{self, PACKET_VECTORS, WINDOW_PACKETS, flags};
use crate::glsl::{Dialect, GEOMETRY_BLOCK};
use crate::interface::Interface;
use crate::program::Status;
use crate::spv::{SpirvOptions, captured};
use crate::{Options, TranslateError, Translation};

/// A GPU API the engines run translations on: one device, owned by one worker thread.
pub trait Backend: Sized + 'static {
    /// A translation compiled for the device, capturing one group of outputs.
    type Program: 'static;
    /// The engine's name (`gpu`, `vulkan`).
    const ENGINE: &'static str;
    /// Opens the device (on the worker thread).
    fn open() -> Result<Self, HostError>;
    /// The device's name and API version.
    fn renderer(&self) -> String;
    /// How many 16-byte vectors one program can capture per vertex.
    fn capture_vectors(&self) -> usize;
    /// Compiles `translation` capturing `record` (`Some(n)`: oN, `None`: the end state).
    fn compile(
        &mut self,
        translation: &Translation,
        record: &[Option<u8>],
    ) -> Result<Self::Program, HostError>;
    /// Runs `program` on each vertex of `inputs` (256 bytes each) with the uniform `block`;
    /// returns the records captured, in vertex order.
    fn run(
        &mut self,
        program: &Self::Program,
        block: &[u8],
        inputs: &[u8],
    ) -> Result<Vec<u8>, HostError>;
    /// Whether the device runs geometry shaders.
    fn geometry_shaders(&self) -> bool;
    /// Compiles a geometry `translation` (the record form) capturing its packets.
    fn compile_geometry(&mut self, translation: &Translation) -> Result<Self::Program, HostError>;
    /// Runs a geometry `program` on one point (`inputs`: 256 bytes) with the uniform `block` and
    /// the state `state`; returns the packets captured (256 bytes each).
    fn run_geometry(
        &mut self,
        program: &Self::Program,
        block: &[u8],
        state: &[u8],
        inputs: &[u8],
    ) -> Result<Vec<u8>, HostError>;
    /// Frees `program`.
    fn delete(&mut self, program: Self::Program);
    /// The queues of this API's worker threads (made on first use, one device each).
    fn queues() -> &'static Queues<Self>;
}

/// OpenGL 3.3 through EGL (llvmpipe where there is no GPU): the translation as GLSL 3.30.
pub struct OpenGl {
    device: GlDevice,
    block_name: String,
}

/// A program linked for one capture group.
pub struct OpenGlProgram {
    program: GlProgram,
    inputs: u16,
}

impl Backend for OpenGl {
    type Program = OpenGlProgram;
    const ENGINE: &'static str = "gpu";

    fn open() -> Result<OpenGl, HostError> {
        Ok(OpenGl {
            device: GlDevice::open(Api::Gl)?,
            block_name: Interface::default().block_name,
        })
    }

    fn renderer(&self) -> String {
        self.device.renderer().to_string()
    }

    fn capture_vectors(&self) -> usize {
        (self.device.capture_limit() / 4).max(1)
    }

    fn compile(
        &mut self,
        translation: &Translation,
        record: &[Option<u8>],
    ) -> Result<OpenGlProgram, HostError> {
        let source = printed(crate::glsl(
            translation,
            Dialect::Glsl330,
            &Interface::default(),
        ))?;
        let names: Vec<String> = record
            .iter()
            .map(|slot| match slot {
                Some(n) => format!("o{n}"),
                None => "pica_end_state".to_string(),
            })
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        Ok(OpenGlProgram {
            program: self.device.compile(&source, &refs)?,
            inputs: translation.module.inputs,
        })
    }

    fn run(
        &mut self,
        program: &OpenGlProgram,
        block: &[u8],
        inputs: &[u8],
    ) -> Result<Vec<u8>, HostError> {
        self.device.run(
            &program.program,
            &self.block_name,
            block,
            inputs,
            program.inputs,
        )
    }

    fn geometry_shaders(&self) -> bool {
        // OpenGL 3.2 core and later have them.
        true
    }

    fn compile_geometry(&mut self, translation: &Translation) -> Result<OpenGlProgram, HostError> {
        let source = printed(crate::glsl(
            translation,
            Dialect::Glsl330,
            &Interface::default(),
        ))?;
        let names: Vec<String> = (0..PACKET_VECTORS).map(|n| format!("pica_p{n}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let inputs = translation.module.inputs;
        Ok(OpenGlProgram {
            program: self.device.compile_geometry(&source, inputs, &refs)?,
            inputs,
        })
    }

    fn run_geometry(
        &mut self,
        program: &OpenGlProgram,
        block: &[u8],
        state: &[u8],
        inputs: &[u8],
    ) -> Result<Vec<u8>, HostError> {
        self.device.run_geometry(
            Capture::Points,
            &program.program,
            &[(&self.block_name, block), (GEOMETRY_BLOCK, state)],
            inputs,
            program.inputs,
            WINDOW_PACKETS as usize,
        )
    }

    fn delete(&mut self, program: OpenGlProgram) {
        self.device.delete(program.program);
    }

    fn queues() -> &'static Queues<Self> {
        static QUEUES: Queues<OpenGl> = OnceLock::new();
        &QUEUES
    }
}

/// Vulkan 1.3 (lavapipe where there is no GPU): the translation as SPIR-V.
pub struct Vulkan {
    device: VkDevice,
}

impl Backend for Vulkan {
    type Program = VkProgram;
    const ENGINE: &'static str = "vulkan";

    fn open() -> Result<Vulkan, HostError> {
        Ok(Vulkan {
            device: VkDevice::open()?,
        })
    }

    fn renderer(&self) -> String {
        self.device.renderer().to_string()
    }

    fn capture_vectors(&self) -> usize {
        (self.device.capture_limit() / 16).max(1)
    }

    fn compile(
        &mut self,
        translation: &Translation,
        record: &[Option<u8>],
    ) -> Result<VkProgram, HostError> {
        let options = SpirvOptions {
            capture: record.to_vec(),
            listing: false,
        };
        let words = printed(crate::spirv(translation, &Interface::default(), &options))?;
        let stride = 16 * record.len() as u32;
        self.device
            .compile(&words, translation.module.inputs, stride)
    }

    fn run(
        &mut self,
        program: &VkProgram,
        block: &[u8],
        inputs: &[u8],
    ) -> Result<Vec<u8>, HostError> {
        self.device.run(program, block, inputs)
    }

    fn geometry_shaders(&self) -> bool {
        self.device.has_geometry_shaders()
    }

    fn compile_geometry(&mut self, translation: &Translation) -> Result<VkProgram, HostError> {
        let words = printed(crate::spirv(
            translation,
            &Interface::default(),
            &SpirvOptions::default(),
        ))?;
        let stride = 16 * PACKET_VECTORS as u32;
        self.device
            .compile_geometry(&words, translation.module.inputs, stride)
    }

    fn run_geometry(
        &mut self,
        program: &VkProgram,
        block: &[u8],
        state: &[u8],
        inputs: &[u8],
    ) -> Result<Vec<u8>, HostError> {
        self.device.run_geometry(
            Capture::Points,
            program,
            block,
            state,
            inputs,
            WINDOW_PACKETS as usize,
        )
    }

    fn delete(&mut self, program: VkProgram) {
        self.device.delete(program);
    }

    fn queues() -> &'static Queues<Self> {
        static QUEUES: Queues<Vulkan> = OnceLock::new();
        &QUEUES
    }
}

/// Work for a worker thread.
pub type Job<B> = Box<dyn FnOnce(&mut Worker<B>) + Send>;

/// An API's worker queues, or why there are none.
pub type Queues<B> = OnceLock<Result<Vec<Mutex<Sender<Job<B>>>>, HostError>>;

/// A worker thread's state: the device and the programs compiled on it.
pub struct Worker<B: Backend> {
    device: B,
    programs: Vec<Option<Vec<B::Program>>>,
}

impl<B: Backend> Worker<B> {
    /// Keeps the `programs` of one compiled shader in a free slot: returns the slot.
    fn keep(&mut self, programs: Vec<B::Program>) -> usize {
        let slot = match self.programs.iter().position(Option::is_none) {
            Some(free) => free,
            None => {
                self.programs.push(None);
                self.programs.len() - 1
            }
        };
        self.programs[slot] = Some(programs);
        slot
    }
}

/// A printed translation, or why this API has no such shader ([`HostShader::compile`] refuses
/// those programs before they reach a backend).
fn printed<T>(source: Result<T, TranslateError>) -> Result<T, HostError> {
    source.map_err(|e| HostError::Unavailable(e.to_string()))
}

/// The most worker threads (devices) an API gets: one per core up to this many. A driver
/// compiles on the thread that asks, so more devices compile more programs at once.
const MOST_WORKERS: usize = 4;

/// Starts one worker thread with its own device.
fn start_worker<B: Backend>(index: usize) -> Result<Mutex<Sender<Job<B>>>, HostError> {
    let (open_tx, open_rx) = channel();
    let (tx, rx) = channel::<Job<B>>();
    std::thread::Builder::new()
        .name(format!("picajit-{}-{index}", B::ENGINE))
        .spawn(move || {
            let device = match B::open() {
                Ok(device) => {
                    let _ = open_tx.send(Ok(()));
                    device
                }
                Err(e) => {
                    let _ = open_tx.send(Err(e));
                    return;
                }
            };
            let mut state = Worker {
                device,
                programs: Vec::new(),
            };
            while let Ok(job) = rx.recv() {
                job(&mut state);
            }
        })
        .map_err(|e| HostError::Unavailable(format!("no worker thread: {e}")))?;
    match open_rx.recv() {
        Ok(Ok(())) => Ok(Mutex::new(tx)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(HostError::Unavailable("the GPU worker stopped".into())),
    }
}

/// `B`'s worker queues: the first device opened decides whether the API is here; the others
/// are as many as the cores, where they open.
fn workers<B: Backend>() -> Result<&'static [Mutex<Sender<Job<B>>>], HostError> {
    B::queues()
        .get_or_init(|| {
            let mut queues = vec![start_worker::<B>(0)?];
            let cores = std::thread::available_parallelism().map_or(1, usize::from);
            for index in 1..cores.min(MOST_WORKERS) {
                match start_worker::<B>(index) {
                    Ok(queue) => queues.push(queue),
                    Err(_) => break,
                }
            }
            Ok(queues)
        })
        .as_deref()
        .map_err(Clone::clone)
}

/// The jobs queued or running on each worker (index: the worker's; the two APIs' workers of
/// one index share a count, which only guides the choice of a worker).
fn busy() -> &'static [AtomicUsize; MOST_WORKERS] {
    static BUSY: [AtomicUsize; MOST_WORKERS] = [const { AtomicUsize::new(0) }; MOST_WORKERS];
    &BUSY
}

/// The worker the next program is compiled on: the least busy one (a compile takes from
/// milliseconds to seconds, so taking turns would queue programs behind a long one).
fn next_worker<B: Backend>() -> Result<usize, HostError> {
    let count = workers::<B>()?.len();
    Ok((0..count)
        .min_by_key(|&k| busy()[k].load(Ordering::Relaxed))
        .unwrap_or(0))
}

/// Runs `job` on `B`'s worker `index` and waits for its result.
fn on_worker<B: Backend, T: Send + 'static>(
    index: usize,
    job: impl FnOnce(&mut Worker<B>) -> T + Send + 'static,
) -> Result<T, HostError> {
    let queue = &workers::<B>()?[index];
    let (tx, rx) = channel();
    busy()[index].fetch_add(1, Ordering::Relaxed);
    let boxed: Job<B> = Box::new(move |w| {
        let result = job(w);
        busy()[index].fetch_sub(1, Ordering::Relaxed);
        let _ = tx.send(result);
    });
    queue
        .lock()
        .map_err(|_| HostError::Unavailable("the GPU worker's queue is poisoned".into()))?
        .send(boxed)
        .map_err(|_| HostError::Unavailable("the GPU worker stopped".into()))?;
    rx.recv()
        .map_err(|_| HostError::Unavailable("the GPU worker stopped".into()))
}

/// `B`'s device name and API version, or why there is none.
pub fn renderer<B: Backend>() -> Result<String, HostError> {
    on_worker::<B, _>(0, |w| w.device.renderer())
}

/// Why the `gpu` engine could not prepare a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuError {
    /// The program was not translated.
    Translate(TranslateError),
    /// The host could not compile or run it.
    Host(HostError),
    /// A geometry shader, and the device has no geometry stage: a kind of program this engine
    /// does not run here, not a failure.
    NoGeometryStage(String),
}

impl std::fmt::Display for GpuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuError::Translate(e) => write!(f, "{e}"),
            GpuError::Host(e) => write!(f, "{e}"),
            GpuError::NoGeometryStage(renderer) => {
                write!(f, "{renderer} has no geometry shaders")
            }
        }
    }
}

impl std::error::Error for GpuError {}

/// A program translated and compiled on the host GPU through API `B`, run by capture groups:
/// transform feedback captures a limited number of vectors at once, so each group's program
/// captures some of the written outputs (the last one the end state too).
pub struct HostShader<B: Backend> {
    program: ShaderProgram,
    config: ExecConfig,
    translation: Translation,
    worker: usize,
    slot: usize,
    groups: Vec<Vec<Option<u8>>>,
    api: PhantomData<fn() -> B>,
}

/// The `gpu` engine: GLSL on OpenGL.
pub type GpuShader = HostShader<OpenGl>;

/// The `vulkan` engine: SPIR-V on Vulkan.
pub type VulkanShader = HostShader<Vulkan>;

impl<B: Backend> HostShader<B> {
    /// Translates `program` and compiles it on the host GPU.
    pub fn compile(program: ShaderProgram, config: ExecConfig) -> Result<Self, GpuError> {
        let options = Options::of(config, true);
        let translation =
            crate::translate(&program, &options, "main").map_err(GpuError::Translate)?;
        if translation.module.geometry.is_some() {
            return Self::compile_geometry(program, config, translation);
        }
        let record = captured(&translation.module);
        let for_worker = translation.clone();
        let worker = next_worker::<B>().map_err(GpuError::Host)?;
        let (slot, groups) = on_worker::<B, _>(worker, move |w| -> Result<_, HostError> {
            let per_program = w.device.capture_vectors();
            let groups: Vec<Vec<Option<u8>>> =
                record.chunks(per_program).map(<[_]>::to_vec).collect();
            let mut programs = Vec::new();
            for group in &groups {
                // Drivers compile the machine code at the first draw (Mesa's llvmpipe and
                // lavapipe do): one vertex of zeros here makes that part of the compile.
                let made = w.device.compile(&for_worker, group).and_then(|p| {
                    match w.device.run(&p, &[0; BLOCK_BYTES], &[0; 256]) {
                        Ok(_) => Ok(p),
                        Err(e) => {
                            w.device.delete(p);
                            Err(e)
                        }
                    }
                });
                match made {
                    Ok(p) => programs.push(p),
                    Err(e) => {
                        for p in programs {
                            w.device.delete(p);
                        }
                        return Err(e);
                    }
                }
            }
            Ok((w.keep(programs), groups))
        })
        .map_err(GpuError::Host)?
        .map_err(GpuError::Host)?;
        Ok(HostShader {
            program,
            config,
            translation,
            worker,
            slot,
            groups,
            api: PhantomData,
        })
    }

    /// [`HostShader::compile`] of a geometry shader: one program, the record form.
    fn compile_geometry(
        program: ShaderProgram,
        config: ExecConfig,
        translation: Translation,
    ) -> Result<Self, GpuError> {
        let for_worker = translation.clone();
        let worker = next_worker::<B>().map_err(GpuError::Host)?;
        let (has_stage, renderer) = on_worker::<B, _>(worker, |w| {
            (w.device.geometry_shaders(), w.device.renderer())
        })
        .map_err(GpuError::Host)?;
        if !has_stage {
            return Err(GpuError::NoGeometryStage(renderer));
        }
        let slot = on_worker::<B, _>(worker, move |w| -> Result<usize, HostError> {
            let p = w.device.compile_geometry(&for_worker)?;
            // The first draw compiles the machine code (as for vertex shaders).
            let state = state_bytes(&GeometryState::default(), 0);
            if let Err(e) = w
                .device
                .run_geometry(&p, &[0; BLOCK_BYTES], &state, &[0; 256])
            {
                w.device.delete(p);
                return Err(e);
            }
            Ok(w.keep(vec![p]))
        })
        .map_err(GpuError::Host)?
        .map_err(GpuError::Host)?;
        Ok(HostShader {
            program,
            config,
            translation,
            worker,
            slot,
            groups: Vec::new(),
            api: PhantomData,
        })
    }

    /// One geometry invocation on the device: the packets of every window until the stream
    /// ends (each window's draw runs the whole invocation again and keeps its own packets).
    fn geometry_packets(
        &self,
        state: &GeometryState,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
    ) -> Result<Vec<[u32; 4 * PACKET_VECTORS]>, HostError> {
        // The bools as this invocation sees them (b15).
        let mut seen = uniforms.clone();
        seen.bools = state.invocation_bools(uniforms.bools);
        let block = block_bytes(&seen);
        let mut point = Vec::with_capacity(256);
        push_input_bytes(&mut point, inputs);
        let mut packets = Vec::new();
        let mut window = 0u32;
        loop {
            let state = state_bytes(state, window);
            let (block, point) = (block.clone(), point.clone());
            let slot = self.slot;
            let bytes = on_worker::<B, _>(self.worker, move |w| {
                let Worker { device, programs } = w;
                let program = &programs[slot].as_ref().expect("a live program")[0];
                device.run_geometry(program, &block, &state, &point)
            })??;
            let count = bytes.len() / (16 * PACKET_VECTORS);
            for chunk in bytes.chunks_exact(16 * PACKET_VECTORS) {
                let mut packet = [0u32; 4 * PACKET_VECTORS];
                for (word, b) in packet.iter_mut().zip(chunk.chunks_exact(4)) {
                    *word = u32::from_le_bytes(b.try_into().expect("4 bytes"));
                }
                packets.push(packet);
            }
            if count < WINDOW_PACKETS as usize {
                return Ok(packets);
            }
            window = window.checked_add(WINDOW_PACKETS).ok_or_else(|| {
                HostError::Driver("more packets than a window count reaches".into())
            })?;
        }
    }

    /// The translation it runs.
    pub fn translation(&self) -> &Translation {
        &self.translation
    }

    /// Runs `vertices` and returns each one's outcome.
    fn run_all(
        &self,
        uniforms: &Uniforms,
        vertices: &[InputRegisters],
    ) -> Vec<Result<VertexResult, ExecError>> {
        let mut inputs = Vec::with_capacity(vertices.len() * 256);
        for v in vertices {
            push_input_bytes(&mut inputs, v);
        }
        let block = block_bytes(uniforms);
        let slot = self.slot;
        let captured =
            on_worker::<B, _>(self.worker, move |w| -> Result<Vec<Vec<u8>>, HostError> {
                let Worker { device, programs } = w;
                let programs = programs[slot].as_ref().expect("a live program");
                let mut out = Vec::with_capacity(programs.len());
                for p in programs {
                    out.push(device.run(p, &block, &inputs)?);
                }
                Ok(out)
            });
        let captured = match captured {
            Ok(Ok(c)) => c,
            Ok(Err(e)) | Err(e) => {
                // The driver failed: an engine fault, reported per vertex (never a panic).
                let _ = e;
                return vertices
                    .iter()
                    .map(|_| Err(ExecError::Internal { pc: 0, code: 1 }))
                    .collect();
            }
        };
        let mut results = Vec::with_capacity(vertices.len());
        for i in 0..vertices.len() {
            let mut outputs = [[0.0f32; 4]; 16];
            let mut state = [0i32; 4];
            for (group, bytes) in self.groups.iter().zip(&captured) {
                let vectors = group.len();
                let record = &bytes[i * vectors * 16..(i + 1) * vectors * 16];
                let word =
                    |k: usize| u32::from_le_bytes(record[4 * k..4 * k + 4].try_into().unwrap());
                for (j, slot) in group.iter().enumerate() {
                    match slot {
                        Some(n) => {
                            for (lane, value) in outputs[*n as usize].iter_mut().enumerate() {
                                *value = f32::from_bits(word(4 * j + lane));
                            }
                        }
                        None => {
                            for (lane, s) in state.iter_mut().enumerate() {
                                *s = word(4 * j + lane) as i32;
                            }
                        }
                    }
                }
            }
            let flags = state[3] as u32;
            let pc = (flags >> 8) as u16 & 0xFFF;
            let status = (flags >> 2) & 0x3F;
            let outcome = self.outcome(status, pc).map(|()| VertexResult {
                outputs,
                flow: FlowRegisters {
                    a0: [state[0], state[1]],
                    al: state[2],
                    cmp: [flags & 1 != 0, flags & 2 != 0],
                },
            });
            results.push(outcome);
        }
        results
    }
}

impl<B: Backend> HostShader<B> {
    /// How an invocation that stopped with `status` at `pc` ends.
    fn outcome(&self, status: u32, pc: u16) -> Result<(), ExecError> {
        match status {
            s if s == Status::Ended as u32 => Ok(()),
            s if s == Status::BreakOutsideLoop as u32 => Err(ExecError::BreakOutsideLoop { pc }),
            s if s == Status::Budget as u32 => Err(ExecError::InstructionBudget {
                budget: self.config.instruction_budget,
                pc,
            }),
            s if s == Status::InvalidEmit as u32 => Err(ExecError::InvalidEmitVertex { pc }),
            code => Err(ExecError::Internal { pc, code }),
        }
    }
}

/// The state block's bytes for `state`, the window starting at packet `window`
/// ([`crate::geometry::state`]).
pub fn state_bytes(state: &GeometryState, window: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(geometry::state::VECTORS * 16);
    let vectors = state
        .registers
        .temp
        .iter()
        .chain(state.banks.iter().flatten())
        .chain(state.slots.iter().flatten());
    for v in vectors {
        for lane in v {
            out.extend_from_slice(&lane.to_bits().to_le_bytes());
        }
    }
    let flow = &state.registers.flow;
    let emit = state.emit;
    let mut word = u32::from(emit.vertex & 3) << flags::VERTEX_SHIFT;
    for (on, bit) in [
        (flow.cmp[0], flags::CMP_X),
        (flow.cmp[1], flags::CMP_Y),
        (state.bank == 1, flags::BANK),
        (emit.primitive, flags::PRIMITIVE),
        (emit.winding, flags::WINDING),
    ] {
        if on {
            word |= bit;
        }
    }
    for value in [flow.a0[0] as u32, flow.a0[1] as u32, flow.al as u32, word] {
        out.extend_from_slice(&value.to_le_bytes());
    }
    for value in [window, 0, 0, 0] {
        out.extend_from_slice(&value.to_le_bytes());
    }
    out
}

/// The SETEMIT state in a record header's flags.
fn emit_config(word: u32) -> EmitConfig {
    EmitConfig {
        vertex: ((word >> flags::VERTEX_SHIFT) & 3) as u8,
        primitive: word & flags::PRIMITIVE != 0,
        winding: word & flags::WINDING != 0,
    }
}

impl<B: Backend> Drop for HostShader<B> {
    fn drop(&mut self) {
        let slot = self.slot;
        let _ = on_worker::<B, _>(self.worker, move |w| {
            if let Some(programs) = w.programs[slot].take() {
                for p in programs {
                    w.device.delete(p);
                }
            }
        });
    }
}

impl<B: Backend> ShaderEngine for HostShader<B> {
    fn name(&self) -> &'static str {
        B::ENGINE
    }

    fn program(&self) -> &ShaderProgram {
        &self.program
    }

    fn config(&self) -> ExecConfig {
        self.config
    }

    fn run_vertex(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
    ) -> Result<VertexResult, ExecError> {
        self.run_all(uniforms, std::slice::from_ref(inputs))
            .pop()
            .expect("one result per vertex")
    }

    fn run_batch(
        &self,
        uniforms: &Uniforms,
        io: &mut BatchIo<'_>,
        errors: &mut Vec<(usize, ExecError)>,
    ) {
        let vertices: Vec<InputRegisters> = (0..io.count()).map(|i| io.inputs.vertex(i)).collect();
        for (i, outcome) in self.run_all(uniforms, &vertices).into_iter().enumerate() {
            io.store(i, outcome, errors);
        }
    }

    fn run_geometry(
        &self,
        state: &mut GeometryState,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        sink: &mut dyn EmitSink,
    ) -> Result<(), ExecError> {
        let Some(layout) = self.translation.module.geometry else {
            // A vertex program run as a geometry shader: not what this engine was made for.
            return Err(ExecError::Internal { pc: 0, code: 2 });
        };
        let packets = match self.geometry_packets(state, uniforms, inputs) {
            Ok(p) => p,
            // The driver failed: an engine fault (never a panic).
            Err(_) => return Err(ExecError::Internal { pc: 0, code: 1 }),
        };
        let vector = |packets: &[[u32; 4 * PACKET_VECTORS]], k: usize| -> [u32; 4] {
            let p = &packets[k / PACKET_VECTORS];
            let at = 4 * (k % PACKET_VECTORS);
            [p[at], p[at + 1], p[at + 2], p[at + 3]]
        };
        let lanes = |v: [u32; 4]| v.map(f32::from_bits);
        let written = |mask: u16| (0..16).filter(move |n| mask & (1 << n) != 0);
        let mut at = 0;
        while at < packets.len() {
            let record = &packets[at..];
            let header = vector(record, 0);
            if header[0] & flags::END_RECORD == 0 {
                let span = geometry::packets(layout.emit_vectors());
                if record.len() < span {
                    break;
                }
                // The registers no instruction writes hold what the state brought.
                let mut outputs = state.banks[state.bank];
                for (k, n) in written(layout.outputs).enumerate() {
                    outputs[n] = lanes(vector(record, 1 + k));
                }
                state.emit = emit_config(header[0]);
                // The model's rule assembles the primitives (the shader checked the vertex id).
                let _ = state.emit(&outputs, 0, sink);
                at += span;
                continue;
            }
            let span = geometry::packets(layout.end_vectors());
            if record.len() < span {
                break;
            }
            let word = header[0];
            let flow = &mut state.registers.flow;
            flow.a0 = [header[1] as i32, header[2] as i32];
            flow.al = header[3] as i32;
            flow.cmp = [word & flags::CMP_X != 0, word & flags::CMP_Y != 0];
            state.emit = emit_config(word);
            let mut k = 1;
            for n in written(layout.temporaries) {
                state.registers.temp[n] = lanes(vector(record, k));
                k += 1;
            }
            for bank in [state.bank, state.bank ^ 1] {
                for n in written(layout.outputs) {
                    state.banks[bank][n] = lanes(vector(record, k));
                    k += 1;
                }
            }
            state.invoked = true;
            let status = (word >> flags::STATUS_SHIFT) & 0x3F;
            let pc = ((word >> flags::PC_SHIFT) & 0xFFF) as u16;
            return self.outcome(status, pc);
        }
        // No end record: the driver stopped the invocation.
        state.invoked = true;
        Err(ExecError::Internal {
            pc: 0,
            code: Status::HostStopped as u32,
        })
    }
}
