//! The geometry stage (docs/gpu.md, "Shader units", "Draws", "Output mapping", "Primitive
//! assembly"): attribute arrays in memory in, triangles out.
//!
//! In: the register file (uploads, uniforms, the attribute buffers, the output map, the
//! topology) and memory. Out: [`OutputVertex`](crate::raster::OutputVertex)es assembled
//! into triangles for the rasterizer.
//!
//! - [`shader_unit`]: the vertex and geometry shader units' program, operand descriptors,
//!   uniforms and input map, as the upload registers write them;
//! - [`loader`]: attribute arrays (and fixed attributes) into input planes;
//! - [`output_map`]: output registers renamed into semantics;
//! - [`assembly`]: topologies (lists, strips, fans, the geometry shader's primitives) into
//!   triangles.
//!
//! A draw runs these in order with the vertex shader on the engine in batches; the sequence,
//! with the geometry shader's input modes, is the front end's (`front/draw.rs`), because it
//! acts on the whole [`Gpu`](crate::Gpu)'s state.

pub mod assembly;
pub mod loader;
pub mod output_map;
pub mod shader_unit;
