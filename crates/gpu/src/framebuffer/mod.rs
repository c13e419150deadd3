//! The framebuffer and memory (docs/gpu-rasterizer-and-framebuffer.md): the bottom of the
//! pipeline, which every stage reads or writes.
//!
//! In: memory writes (traces, transfers, the render target written back) and fragments'
//! colours and depths. Out: bytes to any stage that reads memory, images.
//!
//! - [`memory`]: the sparse model of physical memory (VRAM, FCRAM), every access checked;
//! - [`color`]: the colour and depth formats, 8-bit conversion, the 8x8 Morton tiling;
//! - [`target`]: the render target held while drawing, handed out in bands of 8 rows;
//! - [`image`]: a tiled buffer read back as a linear image;
//! - [`display`]: what an LCD shows (its framebuffer registers, read upright).

pub mod color;
pub mod display;
pub mod image;
pub mod memory;
pub mod target;
