//! picajit: exact float24 execution of PICA200 (Nintendo 3DS) vertex and geometry shaders.
//!
//! Data flows one way through the modules:
//!
//! * [`float24`]: the value model, the single source of truth for rounding and flushing;
//! * [`isa`]: instruction decode, encode and disassembly;
//! * [`flow`]: the control-flow stack machine, run concretely by the interpreter and explored
//!   abstractly by the validator;
//! * [`shbin`]: the SHBIN (DVLB/DVLP/DVLE) container;
//! * [`program`]: a loaded shader program, its uniforms and inputs;
//! * [`interp`]: the reference interpreter (the oracle every other engine is checked against);
//! * [`jit`]: the Cranelift JIT, bit-exact with the interpreter, and [`jit::cache`], the bounded
//!   cache of compiled programs;
//! * [`engine`]: the one interface both engines implement (what an emulator embeds);
//! * [`validate`]: static checks for what the hardware cannot do or does unreliably;
//! * [`difftest`]: the differential tester (random programs, both engines, bit for bit);
//! * [`cli`]: the `picajit` command line.
//!
//! The execution model is `semantics.md` of the project's specification; where it had to choose
//! (nothing being known about the hardware), the choice is documented at the function that makes it.
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

pub mod asm;
pub mod cli;
pub mod difftest;
pub mod document;
pub mod engine;
pub mod exec;
pub mod float24;
pub mod flow;
pub mod interp;
pub mod isa;
pub mod jit;
pub mod program;
pub mod shbin;
pub mod validate;
