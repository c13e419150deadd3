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
//! * [`jit`]: the Cranelift JIT, bit-exact with the interpreter;
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
//! use picajit::interp::ExecConfig;
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
#![warn(missing_docs)]

pub mod asm;
pub mod cli;
pub mod difftest;
pub mod engine;
pub mod float24;
pub mod flow;
pub mod interp;
pub mod isa;
pub mod jit;
pub mod program;
pub mod shbin;
pub mod validate;
