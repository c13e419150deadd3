//! picajit: exact float24 execution of PICA200 (Nintendo 3DS) vertex and geometry shaders.
//!
//! Data flows one way through the modules, lowest layer first; a module imports only modules
//! below it, and the engines never import each other (docs/architecture.md; the test
//! `jit-tests/repository.rs` enforces it). The modules live in the workspace's crates, one per
//! layer that takes long to compile (`crates/shader`: float24 to the interpreter;
//! `crates/jit`, `crates/vinterp`, `crates/engine`, `crates/gpu`), and are re-exported here
//! under their own names; the run document, the differential tester, the CLI and the C ABI
//! are this crate's own:
//!
//! * [`float24`]: the value model; every arithmetic rule is stated once, in [`float24::lanes`],
//!   against a lane abstraction that each engine implements;
//! * [`numbers`]: the GPU's other number formats (float1.7.23, float1.5.10, fixed point);
//! * [`isa`]: the one opcode table; decode, encode and disassembly;
//! * [`shbin`]: the SHBIN (DVLB/DVLP/DVLE) container;
//! * [`program`]: a loaded shader program, its uniforms and inputs;
//! * [`flow`]: the control-flow model: the stack machine, the abstract explorer, the concrete
//!   driver and the rules of tests and loops ([`flow::rules`]), stated once;
//! * [`validate`]: static checks for what the hardware cannot do or does unreliably;
//! * [`asm`]: the picasso-compatible assembler and the source disassembler;
//! * [`exec`]: the execution contract, owned by no engine: settings, results, errors, the
//!   geometry-shader state with its b15 and EMIT rules, streamed emission ([`exec::EmitSink`])
//!   and the [`exec::ShaderEngine`] trait;
//! * [`interp`]: the reference interpreter (the oracle every other engine is checked against);
//! * [`jit`]: the Cranelift JIT, bit-exact with the interpreter;
//! * [`vinterp`]: the vectorised interpreter, a zero-compile batch tier (a `GroupKernel`);
//! * [`engine`]: choosing and preparing an engine, and the bounded cache of prepared programs
//!   ([`engine::cache`]);
//! * [`gpu`]: the software PICA200, laid out as its pipeline (docs/gpu.md);
//! * [`document`]: the run document (the JSON input and output of `picajit run`);
//! * [`difftest`]: the differential tester (random programs, every engine, bit for bit);
//! * [`extract`]: real programs out of traces: each distinct program a trace runs, with its
//!   uniforms and a sample of its vertices;
//! * [`cli`]: the `picajit` command line (nothing in the library depends on it);
//! * [`capi`]: the C ABI (`include/picajit.h`, docs/c-abi.md) for emulators written in C and C++
//!   (nothing in the library depends on it either).
//!
//! The execution model is docs/execution-model.md; where it had to choose (nothing being known
//! about the hardware), the choice is in docs/model-choices.md and at the function that makes it.
//!
//! # Embedding
//!
//! Assemble (or load) a program, prepare it once with an engine, then run vertices:
//!
//! ```
//! use picajit::asm::{AsmOptions, SourceFile, assemble};
//! use picajit::engine::{EngineKind, prepare};
//! use picajit::exec::ExecConfig;
//! use picajit::program::{ShaderProgram, Uniforms};
//!
//! let source = "
//!     .fvec scale
//!     .in position v0
//!     .out outpos position
//!     .proc main
//!         mul outpos, scale, position
//!         end
//!     .end";
//! let files = [SourceFile { name: "scale.v.pica".into(), text: source.into() }];
//! let shbin = assemble(&files, AsmOptions::default()).unwrap().shbin;
//! let program = ShaderProgram::from_shbin(&shbin, 0).unwrap();
//! let jit = prepare(EngineKind::Jit, program, ExecConfig::default()).unwrap();
//!
//! let mut uniforms = Uniforms::default();
//! uniforms.float[0] = [2.0; 4]; // scale is c0
//! let mut inputs = [[0.0, 0.0, 0.0, 1.0]; 16];
//! inputs[0] = [1.0, -2.0, 0.5, 1.0];
//! let vertex = jit.run_vertex(&uniforms, &inputs).unwrap();
//! assert_eq!(vertex.outputs[0], [2.0, -4.0, 1.0, 2.0]);
//! ```
//!
//! # Caching compiled programs
//!
//! An emulator uploads the same code before many draws. Prepare through a shared
//! [`engine::cache::ProgramCache`] with [`engine::prepare_cached`] and an identical upload (the same
//! code words, operand descriptors, entry point, stage, output mask, precision and budget) gets
//! the program compiled the first time, without compiling again. The cache is bounded (least
//! recently used programs are evicted and their code freed), counts hits, misses, compiles and
//! evictions, and can be shared between threads:
//!
//! ```
//! use std::sync::Arc;
//! use picajit::engine::{EngineKind, prepare_cached};
//! use picajit::exec::ExecConfig;
//! use picajit::engine::cache::ProgramCache;
//! use picajit::program::{ShaderKind, ShaderProgram};
//!
//! let cache = Arc::new(ProgramCache::default());
//! // mov o0, v0; end (descriptor 0: all lanes, identity swizzles)
//! let code = [0x4C00_0000, 0x8800_0000];
//! let upload = || ShaderProgram::new(&code, &[0x36F], 0, ShaderKind::Vertex, 1).unwrap();
//!
//! let first = prepare_cached(&cache, EngineKind::Jit, &upload(), ExecConfig::default()).unwrap();
//! let second = prepare_cached(&cache, EngineKind::Jit, &upload(), ExecConfig::default()).unwrap();
//! assert!(Arc::ptr_eq(&first, &second)); // the same compiled code
//! let stats = cache.stats();
//! assert_eq!((stats.misses, stats.hits, stats.compiles), (1, 1, 1));
//! ```
#![warn(missing_docs)]

pub use engine;
pub use gpu;
pub use jit;
pub use shader::{asm, exec, float24, flow, interp, isa, numbers, program, shbin, validate};
pub use translate;
pub use vinterp;

pub mod capi;
pub mod cli;
pub mod difftest;
pub mod document;
pub mod extract;
