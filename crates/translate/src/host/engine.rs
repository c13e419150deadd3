//! The `gpu` engine: a program translated to GLSL, compiled by the host's OpenGL driver and run
//! there, its outputs and end state read back by transform feedback. It implements the
//! execution contract like every other engine, so the differential tester checks the
//! translation bit for bit against the interpreter (docs/gpu-shaders.md).
//!
//! A GL context is current on one thread only: one worker thread owns the device and runs
//! every engine's work in turn, the engines sending it jobs.

use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock};

use shader::exec::{
    BatchIo, EmitSink, ExecConfig, ExecError, GeometryState, ShaderEngine, VertexResult,
};
use shader::program::{FlowRegisters, InputRegisters, ShaderProgram, Uniforms};

use super::gl::{Api, GlDevice, GlProgram};
use super::{HostError, block_bytes};
use crate::glsl::Dialect;
use crate::interface::Interface;
use crate::program::Status;
use crate::{Options, TranslateError, Translation};

type Job = Box<dyn FnOnce(&mut Worker) + Send>;

/// The worker thread's state: the device and the programs compiled on it.
struct Worker {
    device: GlDevice,
    programs: Vec<Option<Vec<GlProgram>>>,
}

/// The worker's queue, or why there is none.
fn worker() -> Result<&'static Mutex<Sender<Job>>, HostError> {
    static WORKER: OnceLock<Result<Mutex<Sender<Job>>, HostError>> = OnceLock::new();
    WORKER
        .get_or_init(|| {
            let (open_tx, open_rx) = channel();
            let (tx, rx) = channel::<Job>();
            std::thread::Builder::new()
                .name("picajit-gpu".into())
                .spawn(move || {
                    let device = match GlDevice::open(Api::Gl) {
                        Ok(device) => {
                            let _ = open_tx.send(Ok(device.renderer().to_string()));
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
                Ok(Ok(_renderer)) => Ok(Mutex::new(tx)),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(HostError::Unavailable("the GPU worker stopped".into())),
            }
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Runs `job` on the worker and waits for its result.
fn on_worker<T: Send + 'static>(
    job: impl FnOnce(&mut Worker) -> T + Send + 'static,
) -> Result<T, HostError> {
    let queue = worker()?;
    let (tx, rx) = channel();
    let boxed: Job = Box::new(move |w| {
        let _ = tx.send(job(w));
    });
    queue
        .lock()
        .map_err(|_| HostError::Unavailable("the GPU worker's queue is poisoned".into()))?
        .send(boxed)
        .map_err(|_| HostError::Unavailable("the GPU worker stopped".into()))?;
    rx.recv()
        .map_err(|_| HostError::Unavailable("the GPU worker stopped".into()))
}

/// The host GPU's renderer and version, or why there is none.
pub fn renderer() -> Result<String, HostError> {
    on_worker(|w| w.device.renderer().to_string())
}

/// Why the `gpu` engine could not prepare a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuError {
    /// The program was not translated.
    Translate(TranslateError),
    /// The host could not compile or run it.
    Host(HostError),
}

impl std::fmt::Display for GpuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuError::Translate(e) => write!(f, "{e}"),
            GpuError::Host(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for GpuError {}

/// One capture group: the outputs (by register) a linked program captures, the end state last.
#[derive(Clone, Debug)]
struct Group {
    outputs: Vec<u8>,
    end_state: bool,
}

/// A program translated and compiled on the host GPU.
pub struct GpuShader {
    program: ShaderProgram,
    config: ExecConfig,
    translation: Translation,
    slot: usize,
    groups: Vec<Group>,
    block_name: String,
}

impl GpuShader {
    /// Translates `program` and compiles it on the host GPU.
    pub fn compile(program: ShaderProgram, config: ExecConfig) -> Result<GpuShader, GpuError> {
        let options = Options::of(config, true);
        let translation =
            crate::translate(&program, &options, "main").map_err(GpuError::Translate)?;
        let interface = Interface::default();
        let source = crate::glsl(&translation, Dialect::Glsl330, &interface);
        let written: Vec<u8> = (0..16u8)
            .filter(|n| translation.module.outputs & (1 << n) != 0)
            .collect();
        let source_for_worker = source.clone();
        let (slot, groups) = on_worker(move |w| -> Result<(usize, Vec<Group>), HostError> {
            // Transform feedback captures a limited number of components at once: as many
            // programs as it takes, each capturing some of the outputs.
            let per_program = (w.device.capture_limit() / 4).max(1);
            let mut names: Vec<(Option<u8>, String)> = written
                .iter()
                .map(|&n| (Some(n), format!("o{n}")))
                .collect();
            names.push((None, "pica_end_state".into()));
            let mut programs = Vec::new();
            let mut groups = Vec::new();
            for chunk in names.chunks(per_program) {
                let refs: Vec<&str> = chunk.iter().map(|(_, s)| s.as_str()).collect();
                let linked = match w.device.compile(&source_for_worker, &refs) {
                    Ok(p) => p,
                    Err(e) => {
                        for p in programs {
                            w.device.delete(p);
                        }
                        return Err(e);
                    }
                };
                programs.push(linked);
                groups.push(Group {
                    outputs: chunk.iter().filter_map(|(n, _)| *n).collect(),
                    end_state: chunk.iter().any(|(n, _)| n.is_none()),
                });
            }
            w.programs.push(Some(programs));
            Ok((w.programs.len() - 1, groups))
        })
        .map_err(GpuError::Host)?
        .map_err(GpuError::Host)?;
        Ok(GpuShader {
            program,
            config,
            translation,
            slot,
            groups,
            block_name: interface.block_name,
        })
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
            for register in v {
                for lane in register {
                    inputs.extend_from_slice(&lane.to_bits().to_le_bytes());
                }
            }
        }
        let block = block_bytes(uniforms);
        let slot = self.slot;
        let mask = self.translation.module.inputs;
        let block_name = self.block_name.clone();
        let group_count = self.groups.len();
        let captured = on_worker(move |w| -> Result<Vec<Vec<u8>>, HostError> {
            let programs = w.programs[slot].as_ref().expect("a live program");
            let mut out = Vec::with_capacity(group_count);
            for p in programs {
                out.push(w.device.run(p, &block_name, &block, &inputs, mask)?);
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
                let vectors = group.outputs.len() + group.end_state as usize;
                let record = &bytes[i * vectors * 16..(i + 1) * vectors * 16];
                let word =
                    |k: usize| u32::from_le_bytes(record[4 * k..4 * k + 4].try_into().unwrap());
                for (j, &n) in group.outputs.iter().enumerate() {
                    for (lane, value) in outputs[n as usize].iter_mut().enumerate() {
                        *value = f32::from_bits(word(4 * j + lane));
                    }
                }
                if group.end_state {
                    let base = 4 * group.outputs.len();
                    for (lane, s) in state.iter_mut().enumerate() {
                        *s = word(base + lane) as i32;
                    }
                }
            }
            let flags = state[3] as u32;
            let pc = (flags >> 8) as u16 & 0xFFF;
            let status = (flags >> 2) & 0x3F;
            let outcome = match status {
                s if s == Status::Ended as u32 => Ok(VertexResult {
                    outputs,
                    flow: FlowRegisters {
                        a0: [state[0], state[1]],
                        al: state[2],
                        cmp: [flags & 1 != 0, flags & 2 != 0],
                    },
                }),
                s if s == Status::BreakOutsideLoop as u32 => {
                    Err(ExecError::BreakOutsideLoop { pc })
                }
                s if s == Status::Budget as u32 => Err(ExecError::InstructionBudget {
                    budget: self.config.instruction_budget,
                    pc,
                }),
                s if s == Status::InvalidEmit as u32 => Err(ExecError::InvalidEmitVertex { pc }),
                code => Err(ExecError::Internal { pc, code }),
            };
            results.push(outcome);
        }
        results
    }
}

impl Drop for GpuShader {
    fn drop(&mut self) {
        let slot = self.slot;
        let _ = on_worker(move |w| {
            if let Some(programs) = w.programs[slot].take() {
                for p in programs {
                    w.device.delete(p);
                }
            }
        });
    }
}

impl ShaderEngine for GpuShader {
    fn name(&self) -> &'static str {
        "gpu"
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
        _state: &mut GeometryState,
        _uniforms: &Uniforms,
        _inputs: &InputRegisters,
        _sink: &mut dyn EmitSink,
    ) -> Result<(), ExecError> {
        // Only vertex programs are translated ([`crate::translate`] refuses the others), so no
        // geometry program reaches here.
        Err(ExecError::Internal { pc: 0, code: 2 })
    }
}
