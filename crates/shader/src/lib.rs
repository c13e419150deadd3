//! picajit's shader model: everything both kinds of engine are built on, and the reference
//! interpreter every engine is checked against. Part of the `picajit` workspace (docs/
//! architecture.md, "Crates"); the `picajit` crate re-exports each module under its own name.
//!
//! The modules, lowest layer first; a module imports only modules below it (the test
//! `jit-tests/repository.rs` enforces it):
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
//! * [`interp`]: the reference interpreter (the oracle every other engine is checked against).
#![warn(missing_docs)]

pub mod asm;
pub mod exec;
pub mod float24;
pub mod flow;
pub mod interp;
pub mod isa;
pub mod numbers;
pub mod program;
pub mod shbin;
pub mod validate;
