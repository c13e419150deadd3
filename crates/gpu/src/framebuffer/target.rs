//! The render target (docs/gpu-rasterizer-and-framebuffer.md §3): the colour and depth buffers
//! the registers name, held in memory order while triangles are drawn, and handed out in bands
//! of 8 rows (each band one contiguous run of the tiled layout), the unit the rasterizer's
//! threads share work by.

use crate::regs::{RegisterFile, bits, id};

use super::color::{ColorFormat, DepthFormat};
use super::memory::{MemoryError, PhysicalMemory};

/// The render target's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetConfig {
    /// Colour buffer address (0: none).
    pub color_address: u32,
    /// Its format.
    pub color_format: Option<ColorFormat>,
    /// Depth buffer address (0: none).
    pub depth_address: u32,
    /// Its format.
    pub depth_format: Option<DepthFormat>,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl TargetConfig {
    /// The target the registers describe.
    pub fn configure(regs: &RegisterFile) -> TargetConfig {
        let dim = regs.get(id::FRAMEBUFFER_DIM);
        TargetConfig {
            color_address: bits(regs.get(id::COLORBUFFER_LOC), 0, 28) << 3,
            color_format: ColorFormat::from_framebuffer_code(bits(
                regs.get(id::COLORBUFFER_FORMAT),
                16,
                3,
            )),
            depth_address: bits(regs.get(id::DEPTHBUFFER_LOC), 0, 28) << 3,
            depth_format: DepthFormat::from_code(bits(regs.get(id::DEPTHBUFFER_FORMAT), 0, 2)),
            width: bits(dim, 0, 11),
            height: bits(dim, 12, 10) + 1,
        }
    }

    /// Rows the surfaces hold: the height rounded up to whole 8-row bands.
    pub fn rows(&self) -> u32 {
        self.height.next_multiple_of(8)
    }
}

/// A surface held while rendering: the bytes of a buffer, and which bands were written.
#[derive(Clone, Debug, Default)]
pub struct Surface {
    address: u32,
    bytes: Vec<u8>,
    band_bytes: usize,
    dirty: Vec<bool>,
}

impl Surface {
    fn load(
        memory: &PhysicalMemory,
        address: u32,
        config: &TargetConfig,
        bpp: usize,
    ) -> Result<Surface, MemoryError> {
        let band_bytes = config.width as usize * 8 * bpp;
        let bands = config.rows() as usize / 8;
        let bytes = memory.read_vec(address, band_bytes * bands)?;
        Ok(Surface {
            address,
            bytes,
            band_bytes,
            dirty: vec![false; bands],
        })
    }

    /// The surface's bands of 8 rows to draw into (those in `touched` marked as written, so
    /// that only they go back to memory), or `touched.len()` empty slots without a surface.
    fn bands<'a>(surface: Option<&'a mut Surface>, touched: &[bool]) -> Vec<Option<&'a mut [u8]>> {
        match surface {
            Some(surface) => {
                for (dirty, &t) in surface.dirty.iter_mut().zip(touched) {
                    *dirty |= t;
                }
                surface
                    .bytes
                    .chunks_mut(surface.band_bytes)
                    .map(Some)
                    .collect()
            }
            None => touched.iter().map(|_| None).collect(),
        }
    }

    fn store(&mut self, memory: &mut PhysicalMemory) -> Result<(), MemoryError> {
        for (band, dirty) in self.dirty.iter_mut().enumerate() {
            if std::mem::take(dirty) {
                let at = band * self.band_bytes;
                memory.write(
                    self.address + at as u32,
                    &self.bytes[at..at + self.band_bytes],
                )?;
            }
        }
        Ok(())
    }
}

/// The render target held between draws (written back to memory by [`RenderTarget::store`]).
#[derive(Clone, Debug)]
pub struct RenderTarget {
    config: TargetConfig,
    color: Option<Surface>,
    depth: Option<Surface>,
}

impl RenderTarget {
    /// The target `config` describes, its surfaces read from memory.
    pub fn load(
        memory: &PhysicalMemory,
        config: TargetConfig,
    ) -> Result<RenderTarget, MemoryError> {
        let surface = |address: u32, bytes: Option<usize>| match bytes {
            Some(bytes) if address != 0 && config.width > 0 => {
                Surface::load(memory, address, &config, bytes).map(Some)
            }
            _ => Ok(None),
        };
        Ok(RenderTarget {
            config,
            color: surface(config.color_address, config.color_format.map(|f| f.bytes()))?,
            depth: surface(config.depth_address, config.depth_format.map(|f| f.bytes()))?,
        })
    }

    /// Its configuration.
    pub fn config(&self) -> &TargetConfig {
        &self.config
    }

    /// The colour surface's bytes, tiled as in memory (`None` without one).
    pub fn color_bytes(&self) -> Option<&[u8]> {
        self.color.as_ref().map(|surface| &surface.bytes[..])
    }

    /// Writes the bands drawn into back to memory.
    pub fn store(&mut self, memory: &mut PhysicalMemory) -> Result<(), MemoryError> {
        for surface in [&mut self.color, &mut self.depth].into_iter().flatten() {
            surface.store(memory)?;
        }
        Ok(())
    }

    /// The target's bands of 8 rows whose `touched` entry is set, to draw into (and marked as
    /// written), each with its index.
    pub fn bands(&mut self, touched: &[bool]) -> Vec<(usize, BandPixels<'_>)> {
        let color = Surface::bands(self.color.as_mut(), touched);
        let depth = Surface::bands(self.depth.as_mut(), touched);
        color
            .into_iter()
            .zip(depth)
            .enumerate()
            .filter(|&(k, _)| touched[k])
            .map(|(k, (color, depth))| {
                let pixels = BandPixels {
                    first_row: 8 * k as u32,
                    color,
                    depth,
                };
                (k, pixels)
            })
            .collect()
    }

    /// Whether `len` bytes from `address` overlap a surface.
    pub fn overlaps(&self, address: u32, len: u64) -> bool {
        [&self.color, &self.depth]
            .into_iter()
            .flatten()
            .any(|surface| {
                let start = surface.address as u64;
                (address as u64) < start + surface.bytes.len() as u64
                    && start < address as u64 + len
            })
    }
}

/// One band of the target, as the per-fragment operations write it: the band's rows of each
/// surface (`None`: the target has no such buffer).
pub struct BandPixels<'a> {
    /// The first memory row of the band.
    pub first_row: u32,
    /// The colour buffer's bytes of the band.
    pub color: Option<&'a mut [u8]>,
    /// The depth buffer's bytes of the band.
    pub depth: Option<&'a mut [u8]>,
}
