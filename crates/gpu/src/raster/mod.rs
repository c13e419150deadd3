//! Rasterization (docs/gpu.md, "Rasterization"; docs/gpu-rasterizer-and-framebuffer.md §3):
//! triangles in, fragments out to the fragment stages.
//!
//! In: the triangles primitive assembly made ([`Triangle`] of [`OutputVertex`]: clip space, one
//! value per semantic), the [`RasterConfig`] the registers describe, and the held
//! [`RenderTarget`]. Out: every covered pixel's interpolated attributes and depth, handed to
//! [`fragment::shade`](crate::fragment::shade) in triangle order; [`RasterStats`].
//!
//! The steps, a file each, in order: [`clip`] (the frustum with the PICA's depth range
//! −w ≤ z ≤ 0, a positive-w plane, the optional user plane), [`setup`] (divided by w, mapped by
//! the viewport, snapped to 12.4 fixed point, culled, edge functions with a top-left-style fill
//! rule), [`traverse`] (the pixels of each band), [`interpolate`] (perspective-correct
//! attributes and the depth value).
//!
//! Threads: the colour and depth surfaces are split into bands of 8 rows (each band is one
//! contiguous run of the tiled layout), and every band runs all triangles of a batch in order.
//! A pixel is only ever touched by its band's thread, in triangle order, so the image is the
//! same bit for bit on any number of threads.

pub mod clip;
pub mod interpolate;
pub mod setup;
pub mod traverse;
mod vertex;

use std::time::{Duration, Instant};

use engine::parallel::in_pool;
use shader::numbers::sign_extend;

use crate::fragment::{FragmentConfig, FragmentPath, FragmentTables, StageSamples};
use crate::framebuffer::color::Rgba8;
use crate::framebuffer::target::RenderTarget;
use crate::regs::{RegisterFile, SEMANTICS, bits, id};

pub use interpolate::Varyings;
pub use setup::SetupTriangle;
pub use vertex::{OutputVertex, Triangle};

/// Triangles per part when set-up runs on several threads.
const SETUP_PART: usize = 1024;

/// The least work, in pixels of the set-up triangles' bounding boxes, that the bands are drawn
/// on several threads for: about a quarter of a millisecond on one thread. Below it, handing
/// the bands to the pool and waiting for it costs about as much as it saves, and a trace of
/// small draws never starts the pool's threads at all.
const PARALLEL_PIXELS: i64 = 4096;

/// The pixels of the triangles' bounding boxes (each clipped to the target and the scissor):
/// what traversal visits, an upper bound on the fragments.
fn bounding_pixels(triangles: &[SetupTriangle]) -> i64 {
    triangles
        .iter()
        .map(|t| (t.max.0 - t.min.0 + 1) * (t.max.1 - t.min.1 + 1))
        .sum()
}

/// Everything a batch of triangles is rasterized with.
#[derive(Clone, Debug)]
pub struct RasterConfig {
    cull: u32,
    half_width: f32,
    half_height: f32,
    origin: (f32, f32),
    clip_plane: Option<[f32; 4]>,
    depth_scale: f32,
    depth_offset: f32,
    w_buffer: bool,
    scissor: (u32, [i64; 4]),
    varyings: Varyings,
    /// The fragment stages' configuration (textures bound by the caller).
    pub fragment: FragmentConfig,
}

impl RasterConfig {
    /// The configuration the registers describe, with no textures bound yet.
    pub fn configure(regs: &RegisterFile, tables: &FragmentTables) -> RasterConfig {
        let f24 = |register: u16| shader::numbers::float24_register(regs.get(register));
        let xy = regs.get(id::VIEWPORT_XY);
        let clip = regs.get(id::FRAGOP_CLIP) & 1 != 0;
        let position = regs.get(id::SCISSORTEST_POS);
        let dim = regs.get(id::SCISSORTEST_DIM);
        RasterConfig {
            cull: bits(regs.get(id::FACECULLING_CONFIG), 0, 2),
            half_width: f24(id::VIEWPORT_WIDTH),
            half_height: f24(id::VIEWPORT_HEIGHT),
            origin: (
                sign_extend(bits(xy, 0, 10), 10) as f32,
                sign_extend(bits(xy, 16, 10), 10) as f32,
            ),
            clip_plane: clip
                .then(|| std::array::from_fn(|k| f24(id::FRAGOP_CLIP_DATA0 + k as u16))),
            depth_scale: f24(id::DEPTHMAP_SCALE),
            depth_offset: f24(id::DEPTHMAP_OFFSET),
            w_buffer: regs.get(id::DEPTHMAP_ENABLE) & 1 == 0,
            scissor: (
                bits(regs.get(id::SCISSORTEST_MODE), 0, 2),
                [
                    bits(position, 0, 10) as i64,
                    bits(position, 16, 10) as i64,
                    bits(dim, 0, 10) as i64,
                    bits(dim, 16, 10) as i64,
                ],
            ),
            varyings: Varyings::configure(regs),
            fragment: FragmentConfig::configure(regs, tables),
        }
    }
}

/// What the rasterizer did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RasterStats {
    /// Triangles after clipping and culling.
    pub triangles: u64,
    /// Triangles culled or clipped away.
    pub rejected: u64,
    /// Fragments covered (before any test).
    pub fragments: u64,
    /// The fragments covered on each [`FragmentPath`] (indexed by `path as usize`).
    pub paths: [u64; 4],
}

/// How one [`rasterize`] call runs, besides what it draws.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RasterRun {
    /// Threads for set-up and the bands (1: the caller's thread only).
    pub threads: usize,
    /// The pixel whose fragments are recorded (rasterizer coordinates).
    pub probe: Option<(u32, u32)>,
    /// Time the fragment stages of one fragment in [`crate::fragment::SAMPLE_EVERY`] (a timed
    /// fragment takes the general path, where the stages are timed one by one).
    pub sample_stages: bool,
    /// Take the fragment path the batch's state allows ([`FragmentConfig::path`]); off, every
    /// fragment takes [`FragmentPath::General`] (to check the paths agree, or to time them).
    pub specialise: bool,
}

/// One fragment at a probed pixel (`Gpu::probe_pixel`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbedFragment {
    /// Every semantic interpolated at the pixel's centre; the position holds the centre's x and
    /// y, z/w, and w.
    pub attributes: [f32; SEMANTICS],
    /// The depth value tested and written (the buffer's bits).
    pub depth: u32,
    /// The combiners' output.
    pub combined: Rgba8,
    /// Whether it passed the alpha, stencil and depth tests.
    pub passed: bool,
}

/// Where the time of one [`rasterize`] call went.
#[derive(Clone, Copy, Debug, Default)]
pub struct RasterTimes {
    /// Clipping, set-up and binning.
    pub setup: Duration,
    /// The bands' pixels: interpolation and the fragment stages.
    pub fragments: Duration,
    /// The fragment stages' sampled times (empty unless sampling).
    pub stages: StageSamples,
}

/// Rasterizes `triangles` into `target` on `run.threads` threads: set up (in parts on every
/// core when there are many, joined in order), binned to the bands of 8 rows they reach, then
/// each band drawn by one thread, its triangles in order, on the batch's fragment path.
/// `scratch` keeps the set-up triangles' memory between calls; the fragments at `run.probe` are
/// appended to `probed`. With `run.sample_stages` one fragment in
/// [`crate::fragment::SAMPLE_EVERY`] has its fragment stages timed ([`RasterTimes::stages`]).
pub fn rasterize(
    triangles: &[Triangle],
    config: &RasterConfig,
    target: &mut RenderTarget,
    run: RasterRun,
    scratch: &mut Vec<SetupTriangle>,
    stats: &mut RasterStats,
    probed: &mut Vec<ProbedFragment>,
) -> RasterTimes {
    let RasterRun {
        threads,
        probe,
        sample_stages,
        specialise,
    } = run;
    let path = if specialise {
        config.fragment.path()
    } else {
        FragmentPath::General
    };
    let started = Instant::now();
    let target_config = *target.config();
    let setup_triangles = scratch;
    setup_triangles.clear();
    let set_up = |part: &[Triangle], out: &mut Vec<SetupTriangle>| {
        part.iter()
            .filter(|t| setup::setup(t, config, &target_config, out) == 0)
            .count() as u64
    };
    if threads > 1 && triangles.len() >= 2 * SETUP_PART {
        // Parts set up on every core, joined in order: the same list as on one thread.
        let parts: Vec<(Vec<SetupTriangle>, u64)> = in_pool(threads, || {
            use rayon::prelude::*;
            triangles
                .par_chunks(SETUP_PART)
                .map(|part| {
                    let mut out = Vec::with_capacity(part.len());
                    let rejected = set_up(part, &mut out);
                    (out, rejected)
                })
                .collect()
        });
        for (part, rejected) in parts {
            setup_triangles.extend(part);
            stats.rejected += rejected;
        }
    } else {
        stats.rejected += set_up(triangles, setup_triangles);
    }
    stats.triangles += setup_triangles.len() as u64;
    let mut bins = traverse::bin(setup_triangles, &target_config);
    let setup_time = started.elapsed();
    let started = Instant::now();
    let touched: Vec<bool> = bins.iter().map(|bin| !bin.is_empty()).collect();
    let mut work: Vec<traverse::Band<'_>> = target
        .bands(&touched)
        .into_iter()
        .map(|(k, pixels)| traverse::Band {
            pixels,
            bin: std::mem::take(&mut bins[k]),
            samples: StageSamples::default(),
            shaded: 0,
        })
        .collect();
    let depth_bits = target_config.depth_format.map_or(0, |f| f.depth_bits());
    let context = PixelContext {
        config,
        target: &target_config,
        depth_max: ((1u64 << depth_bits) - 1) as f32,
        probe: probe.map(|(x, y)| (x as i64, y as i64)),
        sample_stages,
        path,
        texcoords: config.fragment.texcoords(),
        samplers: config.fragment.flat_samplers(),
    };
    let run =
        |band: &mut traverse::Band<'_>| traverse::rasterize_band(band, setup_triangles, &context);
    let results: Vec<(u64, Vec<ProbedFragment>)> =
        if threads > 1 && work.len() > 1 && bounding_pixels(setup_triangles) >= PARALLEL_PIXELS {
            in_pool(threads, || {
                use rayon::prelude::*;
                work.par_iter_mut().map(run).collect()
            })
        } else {
            work.iter_mut().map(run).collect()
        };
    for (fragments, found) in results {
        stats.fragments += fragments;
        stats.paths[path as usize] += fragments;
        probed.extend(found);
    }
    let fragments = started.elapsed();
    let mut stages = StageSamples::default();
    for band in &work {
        stages.add(&band.samples);
    }
    if sample_stages {
        stages = stages.without_clock(crate::fragment::clock_overhead());
    }
    RasterTimes {
        setup: setup_time,
        fragments,
        stages,
    }
}

/// What a fragment is shaded with besides its triangle.
struct PixelContext<'a> {
    config: &'a RasterConfig,
    target: &'a crate::framebuffer::target::TargetConfig,
    depth_max: f32,
    probe: Option<(i64, i64)>,
    /// Time the fragment stages of one fragment in [`crate::fragment::SAMPLE_EVERY`].
    sample_stages: bool,
    /// The path the batch's fragments take.
    path: FragmentPath,
    /// The first semantic of each bound texture unit's coordinates (the specialised paths').
    texcoords: [Option<usize>; 3],
    /// Each bound unit's sampler where it needs no level of detail
    /// (`FragmentConfig::flat_samplers`), on every path.
    samplers: [Option<crate::fragment::texture::FlatSample>; 3],
}
