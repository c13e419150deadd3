//! The draw's way through the render target: binding the texture units' textures, holding the
//! render target between draws, handing the pending triangles to the rasterizer (which runs
//! the fragment stages), writing the target back, and reading it as an image.

use std::time::Instant;

use crate::fragment::texture::{BoundUnit, UnitConfig};
use crate::fragment::{FragmentConfig, gas};
use crate::framebuffer::image::{DepthImage, Image, colours, pixels};
use crate::framebuffer::target::{RenderTarget, TargetConfig};
use crate::raster::{self, ProbedFragment, RasterConfig};
use crate::regs::id;

use super::{Gpu, GpuError, charge};

impl Gpu {
    /// Writes the held render target back to memory (FRAMEBUFFER_FLUSH, the end of a command
    /// list, a change of target).
    pub fn flush_target(&mut self) -> Result<(), GpuError> {
        let started = Instant::now();
        let stored = self.store_target();
        charge(&mut self.times.target, started);
        stored
    }

    fn store_target(&mut self) -> Result<(), GpuError> {
        if let Some(mut target) = self.target.take() {
            target.store(&mut self.memory)?;
        }
        Ok(())
    }

    /// Binds the enabled texture units' textures to `config` (shadow maps too). A texture that overlaps the held render target is read after the target is
    /// written back, so rendering to a texture and then sampling it sees the rendering.
    fn bind_textures(&mut self, config: &mut FragmentConfig) -> Result<(), GpuError> {
        for unit in 0..config.textures.len() {
            let Some(unit_config) = UnitConfig::configure(&self.regs, unit) else {
                continue;
            };
            let limit = self.config.max_texture_side;
            if unit_config.width > limit || unit_config.height > limit {
                return Err(GpuError::TextureTooLarge {
                    unit,
                    size: (unit_config.width, unit_config.height),
                    limit,
                });
            }
            let len = unit_config.face_bytes() as u64;
            let faces = &unit_config.addresses[..unit_config.faces()];
            if let Some(target) = &self.target
                && faces.iter().any(|&address| target.overlaps(address, len))
            {
                self.store_target()?;
            }
            let texture = self
                .texture_cache
                .get(&unit_config, &self.memory)
                .map_err(|error| GpuError::Texture { unit, error })?;
            config.textures[unit] = Some(BoundUnit {
                config: unit_config,
                texture,
            });
        }
        Ok(())
    }

    /// The render target the registers describe, loaded from memory if it is not held.
    fn hold_target(&mut self) -> Result<(), GpuError> {
        let config = TargetConfig::configure(&self.regs);
        if self.target.as_ref().is_some_and(|t| *t.config() == config) {
            return Ok(());
        }
        self.store_target()?;
        self.target = Some(RenderTarget::load(&self.memory, config)?);
        Ok(())
    }

    /// Records every fragment that reaches pixel (x, y) (rasterizer coordinates, y up) from
    /// now on, with every semantic interpolated ([`Gpu::take_probed`]); `None` stops.
    pub fn probe_pixel(&mut self, pixel: Option<(u32, u32)>) {
        self.probe = pixel;
    }

    /// The fragments probed since the last call, in drawing order.
    pub fn take_probed(&mut self) -> Vec<ProbedFragment> {
        std::mem::take(&mut self.probed)
    }

    /// Rasterizes the triangles primitive assembly produced since the last call.
    pub(super) fn rasterize_pending(&mut self) -> Result<(), GpuError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let triangles = std::mem::take(&mut self.pending);
        let mut config = RasterConfig::configure(&self.regs, &self.tables);
        let started = Instant::now();
        let bound = self.bind_textures(&mut config.fragment);
        charge(&mut self.times.textures, started);
        bound?;
        let started = Instant::now();
        let held = self.hold_target();
        charge(&mut self.times.target, started);
        held?;
        let target = self.target.as_mut().expect("held above");
        let times = raster::rasterize(
            &triangles,
            &config,
            target,
            raster::RasterRun {
                threads: self.config.threads,
                probe: self.probe,
                sample_stages: self.config.sample_fragment_stages,
                specialise: self.config.specialise_fragments,
            },
            &mut self.setup_buffer,
            &mut self.raster_stats,
            &mut self.probed,
        );
        self.times.setup += times.setup;
        self.times.fragments += times.fragments;
        self.times.fragment_stages.add(&times.stages);
        if config.fragment.gas_accumulation.is_some()
            && let Some(bytes) = target.color_bytes()
        {
            // GAS_ACCMAX_FEEDBACK bits 16-31: the largest density accumulated since the
            // register was last written (docs/gpu-fog-and-gas.md).
            let word = self.regs.get(id::GAS_ACCMAX_FEEDBACK);
            let peak = gas::feedback_of(bytes).max(word >> 16);
            self.regs
                .set(id::GAS_ACCMAX_FEEDBACK, word & 0xFFFF | peak << 16);
        }
        self.pending = triangles;
        self.pending.clear();
        Ok(())
    }
}

/// The bytes of a surface of `config`'s size at `address`, `bytes` per pixel.
fn surface(
    gpu: &Gpu,
    address: u32,
    config: &TargetConfig,
    bytes: usize,
) -> Result<Vec<u8>, GpuError> {
    let rows = config.rows();
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
            pixels: colours((config.width, config.height), format, &data),
        }))
    }

    /// The depth (and stencil) buffer the registers name (`None` without one).
    pub fn depth_image(&self) -> Result<Option<DepthImage>, GpuError> {
        let config = TargetConfig::configure(&self.regs);
        let Some(format) = config.depth_format.filter(|_| config.depth_address != 0) else {
            return Ok(None);
        };
        let data = surface(self, config.depth_address, &config, format.bytes())?;
        let size = (config.width, config.height);
        let decoded = pixels(size, format.bytes(), &data, |pixel| format.decode(pixel));
        Ok(Some(DepthImage {
            width: config.width,
            height: config.height,
            bits: format.depth_bits(),
            values: decoded.iter().map(|&(d, _)| d).collect(),
            stencil: decoded.iter().map(|&(_, s)| s).collect(),
        }))
    }
}
