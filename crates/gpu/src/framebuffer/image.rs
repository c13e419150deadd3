//! Reading the render target back as a linear image (what `picajit render` writes as PNG):
//! the tiled buffer's memory rows in order, so the first row is the top of the picture
//! (docs/gpu-rasterizer-and-framebuffer.md §3.12).

use super::color::{Rgba8, tiled_offset};
use super::target::TargetConfig;

/// A colour image, rows top first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Pixels, row by row.
    pub pixels: Vec<Rgba8>,
}

/// A depth image, rows top first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DepthImage {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Bits of depth per value (16 or 24).
    pub bits: u32,
    /// Depth values, row by row.
    pub values: Vec<u32>,
    /// Stencil values (0 without a stencil buffer).
    pub stencil: Vec<u8>,
}

/// The pixels of a tiled surface of `config`'s size in memory order (`bytes` per pixel), each
/// read by `read` from its byte offset.
pub fn pixels<T>(config: &TargetConfig, bytes: usize, read: impl Fn(usize) -> T) -> Vec<T> {
    let mut out = Vec::with_capacity((config.width * config.height) as usize);
    for row in 0..config.height {
        for x in 0..config.width {
            out.push(read(tiled_offset(x, row, config.width, bytes as u32)));
        }
    }
    out
}
