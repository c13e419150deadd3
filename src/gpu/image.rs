//! Reading the render target back as a linear image (what `picajit render` writes as PNG):
//! the tiled buffer's memory rows in order, so the first row is the top of the picture
//! (docs/gpu-rasterizer-and-framebuffer.md §3.12).

use super::color::{Rgba8, tiled_offset};
use super::raster::TargetConfig;
use super::{Gpu, GpuError};

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

fn surface(
    gpu: &Gpu,
    address: u32,
    config: &TargetConfig,
    bytes: usize,
) -> Result<Vec<u8>, GpuError> {
    let rows = config.height.next_multiple_of(8);
    Ok(gpu
        .memory
        .read_vec(address, config.width as usize * rows as usize * bytes)?)
}

impl Gpu {
    /// The colour buffer the registers name, as an image (`None` without one). Call
    /// [`Gpu::finish`] first when registers were written one at a time.
    pub fn color_image(&self) -> Result<Option<Image>, GpuError> {
        let config = TargetConfig::configure(&self.regs);
        let Some(format) = config.color_format.filter(|_| config.color_address != 0) else {
            return Ok(None);
        };
        let data = surface(self, config.color_address, &config, format.bytes())?;
        Ok(Some(Image {
            width: config.width,
            height: config.height,
            pixels: pixels(&config, format.bytes(), |at| format.decode(&data[at..])),
        }))
    }

    /// The depth (and stencil) buffer the registers name (`None` without one).
    pub fn depth_image(&self) -> Result<Option<DepthImage>, GpuError> {
        let config = TargetConfig::configure(&self.regs);
        let Some(format) = config.depth_format.filter(|_| config.depth_address != 0) else {
            return Ok(None);
        };
        let data = surface(self, config.depth_address, &config, format.bytes())?;
        let decoded = pixels(&config, format.bytes(), |at| format.decode(&data[at..]));
        Ok(Some(DepthImage {
            width: config.width,
            height: config.height,
            bits: format.depth_bits(),
            values: decoded.iter().map(|&(d, _)| d).collect(),
            stencil: decoded.iter().map(|&(_, s)| s).collect(),
        }))
    }
}

fn pixels<T>(config: &TargetConfig, bytes: usize, read: impl Fn(usize) -> T) -> Vec<T> {
    let mut out = Vec::with_capacity((config.width * config.height) as usize);
    for row in 0..config.height {
        for x in 0..config.width {
            out.push(read(tiled_offset(x, row, config.width, bytes as u32)));
        }
    }
    out
}
