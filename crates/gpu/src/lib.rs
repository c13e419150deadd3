//! The software PICA200: command buffers and memory in, pixels out (docs/gpu.md).
//!
//! The GPU is laid out as its pipeline, a folder per stage, in the order data flows:
//!
//! ```text
//! front       command buffers → register writes → the Gpu; trace replay; transfers and fills
//!   ↓ draws
//! geometry    shader units, the vertex loader, output mapping, primitive assembly
//!   ↓ triangles of OutputVertex
//! raster      clipping, set-up, traversal in bands, interpolation
//!   ↓ one Fragment per covered pixel
//! fragment    texture units, lighting, combiners, the per-fragment operations
//!   ↓ colour and depth
//! framebuffer physical memory, pixel formats and tiling, the render target, read-back, the LCDs
//! ```
//!
//! [`regs`] (the register file and the meaning of its fields) is read by every stage. A stage
//! imports only the stages below it in this picture and `regs` (the test
//! `jit-tests/repository.rs` checks it): the front end drives the geometry stage and the
//! rasterizer, the rasterizer calls the fragment stages, and everyone reads and writes memory.
//! Each folder's `mod.rs` says what comes in and what goes out. Above the pipeline:
//! [`builder`] (writes scenes as traces) and [`fuzz`] (entry points for fuzzing).
//!
//! Shader programs run only through the execution contract (`shader::exec`) and the engines'
//! preparation and batch entry points (`engine`): vertex shaders in batches of
//! structure-of-arrays planes on every core, geometry shaders one invocation at a time in
//! order, with whichever engine the caller picks. Nothing here knows how an engine works.

pub mod builder;
pub mod fragment;
pub mod framebuffer;
pub mod front;
pub mod fuzz;
pub mod geometry;
pub mod raster;
pub mod regs;

pub use front::{Gpu, GpuConfig, GpuError, GpuStats, ListEnd, StageTimes};
pub use raster::Triangle;
