//! Clipping, triangle setup and rasterization (docs/gpu.md, "Rasterization";
//! docs/gpu-rasterizer-and-framebuffer.md §3), and the render target the fragments land in.
//!
//! Triangles are clipped in clip space (the six frustum planes with the PICA's depth range
//! −w ≤ z ≤ 0, a positive-w plane, the optional user plane), divided by w, mapped by the
//! viewport, snapped to 12.4 fixed point and culled. Coverage uses integer edge functions with
//! a top-left-style fill rule; attributes are interpolated perspective-correctly.
//!
//! Threads: the colour and depth surfaces are split into bands of 8 rows (each band is one
//! contiguous run of the tiled layout), and every band runs all triangles of a batch in order.
//! A pixel is only ever touched by its band's thread, in triangle order, so the image is the
//! same bit for bit on any number of threads.

use crate::engine::parallel::in_pool;
use crate::numbers::sign_extend;

use super::color::{ColorFormat, DepthFormat, Rgba8, tiled_offset};
use super::fragment::{Combiners, FragmentOps, Sources, rgba_of};
use super::memory::PhysicalMemory;
use super::regs::{RegisterFile, bits, id};
use super::vertex::{OutputVertex, SEMANTICS, semantic};
use super::{Gpu, GpuError, Triangle};

/// Subpixel bits of the snapped coordinates.
const SUBPIXEL: i64 = 16;
/// How far outside a clip plane a vertex still counts as inside (f32 noise on 2D drawn at
/// exactly z = 0 must not clip it).
const PLANE_SLACK: f32 = 1e-8;
/// The smallest w kept: the positive-w plane.
const MIN_W: f32 = 1e-5;

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
    fn rows(&self) -> u32 {
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
    ) -> Result<Surface, GpuError> {
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

    fn store(&mut self, memory: &mut PhysicalMemory) -> Result<(), GpuError> {
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

/// The render target held between draws (written back to memory by [`Gpu::flush_target`]).
#[derive(Clone, Debug)]
pub struct RenderTarget {
    config: TargetConfig,
    color: Option<Surface>,
    depth: Option<Surface>,
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
    combiners: Combiners,
    ops: FragmentOps,
    texture_colors: [Rgba8; 4],
}

impl RasterConfig {
    /// The configuration the registers describe.
    pub fn configure(regs: &RegisterFile) -> RasterConfig {
        let f24 = |register: u16| crate::numbers::float24_register(regs.get(register));
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
            combiners: Combiners::configure(regs),
            ops: FragmentOps::configure(regs),
            // Until texture units exist a texture source reads its unit's border colour.
            texture_colors: [0x081u16, 0x091, 0x099, 0x081].map(|r| rgba_of(regs.get(r))),
        }
    }
}

/// A vertex after the perspective divide: snapped screen position, 1/w, depth and the
/// attributes multiplied by 1/w.
#[derive(Clone, Copy, Debug)]
struct ScreenVertex {
    x: i64,
    y: i64,
    inv_w: f32,
    z: f32,
    color_over_w: [f32; 4],
}

/// A triangle ready to rasterize.
#[derive(Clone, Copy, Debug)]
pub struct SetupTriangle {
    v: [ScreenVertex; 3],
    /// Edge i is opposite vertex i; its bias is -1 when samples on it are not covered.
    bias: [i64; 3],
    /// Pixel bounds (inclusive), clamped to the target and scissor.
    min: (i64, i64),
    max: (i64, i64),
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
}

/// Clip-space vertex: the attribute vector (position first) with colours prepared.
type ClipVertex = [f32; SEMANTICS];

/// A clip plane: the signed distance of a vertex, and how far below zero still counts as in.
type ClipPlane = (fn(&ClipVertex) -> f32, f32);

fn lerp(a: &ClipVertex, b: &ClipVertex, t: f32) -> ClipVertex {
    std::array::from_fn(|k| b[k] + (a[k] - b[k]) * t)
}

/// Clips a polygon against the plane `distance(v) >= 0` (Sutherland-Hodgman).
fn clip_polygon(
    polygon: &[ClipVertex],
    distance: impl Fn(&ClipVertex) -> f32,
    slack: f32,
) -> Vec<ClipVertex> {
    let mut out = Vec::with_capacity(polygon.len() + 2);
    for (k, b) in polygon.iter().enumerate() {
        let a = &polygon[(k + polygon.len() - 1) % polygon.len()];
        let (da, db) = (distance(a), distance(b));
        let (a_in, b_in) = (da >= -slack, db >= -slack);
        if a_in != b_in {
            let t = db / (db - da);
            out.push(lerp(a, b, t));
        }
        if b_in {
            out.push(*b);
        }
    }
    out
}

/// The triangles `triangle` makes after clipping, set up for rasterization.
pub fn setup(
    triangle: &Triangle,
    config: &RasterConfig,
    target: &TargetConfig,
) -> Vec<SetupTriangle> {
    let mut vertices: [ClipVertex; 3] = triangle.map(|v: OutputVertex| v.attributes);
    // The hardware takes |colour| saturated to 1 before interpolating.
    for v in &mut vertices {
        for c in &mut v[semantic::COLOR..semantic::COLOR + 4] {
            *c = c.abs().min(1.0);
        }
    }
    // q and -q are the same rotation: take the one nearer the first vertex's.
    let q = semantic::QUATERNION;
    for k in 1..3 {
        let dot: f32 = (0..4)
            .map(|c| vertices[0][q + c] * vertices[k][q + c])
            .sum();
        if dot < 0.0 {
            for c in 0..4 {
                vertices[k][q + c] = -vertices[k][q + c];
            }
        }
    }
    let mut polygon = vertices.to_vec();
    let planes: [ClipPlane; 7] = [
        (|v| v[3] - v[0], PLANE_SLACK),
        (|v| v[3] + v[0], PLANE_SLACK),
        (|v| v[3] - v[1], PLANE_SLACK),
        (|v| v[3] + v[1], PLANE_SLACK),
        (|v| -v[2], PLANE_SLACK),
        (|v| v[3] + v[2], PLANE_SLACK),
        (|v| v[3] - MIN_W, 0.0),
    ];
    for (distance, slack) in planes {
        polygon = clip_polygon(&polygon, distance, slack);
        if polygon.len() < 3 {
            return Vec::new();
        }
    }
    if let Some(c) = config.clip_plane {
        polygon = clip_polygon(
            &polygon,
            |v| c[0] * v[0] + c[1] * v[1] + c[2] * v[2] + c[3] * v[3],
            PLANE_SLACK,
        );
        if polygon.len() < 3 {
            return Vec::new();
        }
    }
    let screen: Vec<ScreenVertex> = polygon
        .iter()
        .map(|v| {
            let inv_w = 1.0 / v[3];
            let x = (v[0] * inv_w + 1.0) * config.half_width + config.origin.0;
            let y = (v[1] * inv_w + 1.0) * config.half_height + config.origin.1;
            let snap = |value: f32| (value * SUBPIXEL as f32).round() as i64;
            ScreenVertex {
                x: snap(x),
                y: snap(y),
                inv_w,
                z: v[2] * inv_w,
                color_over_w: std::array::from_fn(|c| v[semantic::COLOR + c] * inv_w),
            }
        })
        .collect();
    (1..screen.len() - 1)
        .filter_map(|k| triangle_setup([screen[0], screen[k], screen[k + 1]], config, target))
        .collect()
}

/// Twice the signed area of (a, b, p) in 12.4 units: positive when counter-clockwise.
fn area(a: (i64, i64), b: (i64, i64), p: (i64, i64)) -> i64 {
    (b.0 - a.0) * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0)
}

fn triangle_setup(
    mut v: [ScreenVertex; 3],
    config: &RasterConfig,
    target: &TargetConfig,
) -> Option<SetupTriangle> {
    let at = |s: &ScreenVertex| (s.x, s.y);
    let signed = area(at(&v[0]), at(&v[1]), at(&v[2]));
    let keep = match config.cull {
        0 => signed != 0,
        1 => signed < 0,
        _ => signed > 0,
    };
    if !keep {
        return None;
    }
    if signed < 0 {
        v.swap(1, 2);
    }
    // Edge i runs from vertex i+1 to vertex i+2 (counter-clockwise); samples on a right edge
    // (going up) or on the top edge (horizontal, going left) are not covered.
    let bias = std::array::from_fn(|i| {
        let (a, b) = (at(&v[(i + 1) % 3]), at(&v[(i + 2) % 3]));
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        if dy > 0 || (dy == 0 && dx < 0) { -1 } else { 0 }
    });
    let xs = v.map(|s| s.x);
    let ys = v.map(|s| s.y);
    let mut min = (
        xs.iter().min().unwrap() / SUBPIXEL,
        ys.iter().min().unwrap() / SUBPIXEL,
    );
    let mut max = (
        (xs.iter().max().unwrap() + SUBPIXEL - 1) / SUBPIXEL,
        (ys.iter().max().unwrap() + SUBPIXEL - 1) / SUBPIXEL,
    );
    min = (min.0.max(0), min.1.max(0));
    max = (
        max.0.min(target.width as i64 - 1),
        max.1.min(target.height as i64 - 1),
    );
    if config.scissor.0 == 3 {
        let [x1, y1, x2, y2] = config.scissor.1;
        min = (min.0.max(x1), min.1.max(y1));
        max = (max.0.min(x2), max.1.min(y2));
    }
    if min.0 > max.0 || min.1 > max.1 {
        return None;
    }
    Some(SetupTriangle { v, bias, min, max })
}

/// One band's view of the target: the band's rows of each surface.
struct Band<'a> {
    /// The first memory row of the band.
    first_row: u32,
    color: Option<&'a mut [u8]>,
    depth: Option<&'a mut [u8]>,
}

/// Rasterizes `triangles` into one band.
fn rasterize_band(
    band: &mut Band<'_>,
    triangles: &[SetupTriangle],
    config: &RasterConfig,
    target: &TargetConfig,
) -> u64 {
    let mut fragments = 0;
    let top = target.height as i64 - 1;
    // Rasterizer rows of this band: y = top - memory row.
    let rows = (band.first_row as i64..band.first_row as i64 + 8).filter(|&r| r <= top);
    let rows: Vec<i64> = rows.map(|r| top - r).collect();
    let (Some(&y_high), Some(&y_low)) = (rows.first(), rows.last()) else {
        return 0;
    };
    let depth_bits = target.depth_format.map_or(0, |f| f.depth_bits());
    let depth_max = ((1u64 << depth_bits) - 1) as f32;
    for t in triangles {
        if t.max.1 < y_low || t.min.1 > y_high {
            continue;
        }
        let p = t.v.map(|s| (s.x, s.y));
        for y in t.min.1.max(y_low)..=t.max.1.min(y_high) {
            let row = (top - y) as u32;
            for x in t.min.0..=t.max.0 {
                if config.scissor.0 == 1 {
                    let [x1, y1, x2, y2] = config.scissor.1;
                    if (x1..=x2).contains(&x) && (y1..=y2).contains(&y) {
                        continue;
                    }
                }
                let sample = (x * SUBPIXEL + SUBPIXEL / 2, y * SUBPIXEL + SUBPIXEL / 2);
                let w = [
                    area(p[1], p[2], sample),
                    area(p[2], p[0], sample),
                    area(p[0], p[1], sample),
                ];
                if (0..3).any(|i| w[i] + t.bias[i] < 0) {
                    continue;
                }
                fragments += 1;
                shade_pixel(band, t, w, (x as u32, row), config, target, depth_max);
            }
        }
    }
    fragments
}

/// Interpolates, combines and writes one covered pixel.
fn shade_pixel(
    band: &mut Band<'_>,
    t: &SetupTriangle,
    w: [i64; 3],
    (x, row): (u32, u32),
    config: &RasterConfig,
    target: &TargetConfig,
    depth_max: f32,
) {
    let weights = w.map(|k| k as f32);
    let sum = weights[0] + weights[1] + weights[2];
    let inv_w: f32 = (0..3).map(|i| weights[i] * t.v[i].inv_w).sum();
    let color: [f32; 4] = std::array::from_fn(|c| {
        (0..3)
            .map(|i| weights[i] * t.v[i].color_over_w[c])
            .sum::<f32>()
            / inv_w
    });
    let primary = color.map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8);
    let zs: f32 = (0..3).map(|i| weights[i] * t.v[i].z).sum::<f32>() / sum;
    let mut depth = zs * config.depth_scale + config.depth_offset;
    if config.w_buffer {
        depth *= sum / inv_w;
    }
    let depth = (depth.clamp(0.0, 1.0) * depth_max) as u32;
    let sources = Sources {
        primary,
        textures: config.texture_colors,
        ..Sources::default()
    };
    let source = config.combiners.run(&sources);
    let ops = &config.ops;
    if !ops.alpha_passes(source[3]) {
        return;
    }
    let local_row = row - band.first_row;
    if let (Some(depth_bytes), Some(format)) = (band.depth.as_deref_mut(), target.depth_format) {
        let at = tiled_offset(x, local_row, target.width, format.bytes() as u32);
        let pixel = &mut depth_bytes[at..at + format.bytes()];
        let (stored, stencil) = format.decode(pixel);
        let stencil_on = ops.stencil_test & 1 != 0 && format == DepthFormat::D24S8;
        let mut new_stencil = stencil;
        let mut new_depth = stored;
        let passed = if stencil_on && !ops.stencil_passes(stencil) {
            new_stencil = ops.stencil_after(ops.stencil_op, stencil);
            false
        } else if !ops.depth_passes(depth, stored) {
            if stencil_on {
                new_stencil = ops.stencil_after(ops.stencil_op >> 4, stencil);
            }
            false
        } else {
            if ops.depth_color & 0x1000 != 0 {
                new_depth = depth;
            }
            if stencil_on {
                new_stencil = ops.stencil_after(ops.stencil_op >> 8, stencil);
            }
            true
        };
        if ops.depth_write && (new_depth != stored || new_stencil != stencil) {
            format.encode(new_depth, new_stencil, pixel);
        }
        if !passed {
            return;
        }
    }
    if let (Some(color_bytes), Some(format), true) = (
        band.color.as_deref_mut(),
        target.color_format,
        ops.color_write,
    ) {
        let at = tiled_offset(x, local_row, target.width, format.bytes() as u32);
        let pixel = &mut color_bytes[at..at + format.bytes()];
        let dest = format.decode(pixel);
        format.encode(ops.output(source, dest), pixel);
    }
}

impl Gpu {
    /// Writes the held render target back to memory (FRAMEBUFFER_FLUSH, the end of a command
    /// list, a change of target).
    pub fn flush_target(&mut self) -> Result<(), GpuError> {
        if let Some(mut target) = self.target.take() {
            if let Some(surface) = target.color.as_mut() {
                surface.store(&mut self.memory)?;
            }
            if let Some(surface) = target.depth.as_mut() {
                surface.store(&mut self.memory)?;
            }
        }
        Ok(())
    }

    /// The render target the registers describe, loaded from memory if it is not held.
    fn hold_target(&mut self) -> Result<(), GpuError> {
        let config = TargetConfig::configure(&self.regs);
        if self.target.as_ref().is_some_and(|t| t.config == config) {
            return Ok(());
        }
        self.flush_target()?;
        let color =
            match config.color_format {
                Some(format) if config.color_address != 0 && config.width > 0 => Some(
                    Surface::load(&self.memory, config.color_address, &config, format.bytes())?,
                ),
                _ => None,
            };
        let depth =
            match config.depth_format {
                Some(format) if config.depth_address != 0 && config.width > 0 => Some(
                    Surface::load(&self.memory, config.depth_address, &config, format.bytes())?,
                ),
                _ => None,
            };
        self.target = Some(RenderTarget {
            config,
            color,
            depth,
        });
        Ok(())
    }

    /// Rasterizes the triangles primitive assembly produced since the last call.
    pub(super) fn rasterize_pending(&mut self) -> Result<(), GpuError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let triangles = std::mem::take(&mut self.pending);
        self.hold_target()?;
        let config = RasterConfig::configure(&self.regs);
        let target = self.target.as_mut().expect("held above");
        let target_config = target.config;
        let mut setup_triangles = Vec::with_capacity(triangles.len());
        for triangle in &triangles {
            let made = setup(triangle, &config, &target_config);
            if made.is_empty() {
                self.raster_stats.rejected += 1;
            }
            setup_triangles.extend(made);
        }
        self.raster_stats.triangles += setup_triangles.len() as u64;
        if setup_triangles.is_empty() || target_config.width == 0 {
            self.pending = triangles;
            self.pending.clear();
            return Ok(());
        }
        // The bands any triangle's rows reach (memory row = top - y).
        let bands = target_config.rows() as usize / 8;
        let top = target_config.height as i64 - 1;
        let mut touched = vec![false; bands];
        for t in &setup_triangles {
            let first = ((top - t.max.1) / 8) as usize;
            let last = ((top - t.min.1) / 8) as usize;
            touched[first..=last.min(bands - 1)].fill(true);
        }
        let mut color_bands = Surface::bands(target.color.as_mut(), &touched);
        let mut depth_bands = Surface::bands(target.depth.as_mut(), &touched);
        let mut work: Vec<Band<'_>> = color_bands
            .iter_mut()
            .zip(depth_bands.iter_mut())
            .enumerate()
            .map(|(k, (color, depth))| Band {
                first_row: 8 * k as u32,
                color: color.take(),
                depth: depth.take(),
            })
            .collect();
        let threads = self.config.threads;
        let run =
            |band: &mut Band<'_>| rasterize_band(band, &setup_triangles, &config, &target_config);
        let fragments: u64 = if threads > 1 {
            in_pool(threads, || {
                use rayon::prelude::*;
                work.par_iter_mut().map(run).sum()
            })
        } else {
            work.iter_mut().map(run).sum()
        };
        self.raster_stats.fragments += fragments;
        self.pending = triangles;
        self.pending.clear();
        Ok(())
    }
}
