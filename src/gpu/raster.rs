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

use std::time::Instant;

use crate::engine::parallel::in_pool;
use crate::numbers::sign_extend;

use super::color::{ColorFormat, DepthFormat, Rgba8, tiled_offset, unorm8};
use super::fragment::{Combiners, FragmentOps, Sources};
use super::lighting::{Lighting, LightingLuts};
use super::memory::PhysicalMemory;
use super::regs::{RegisterFile, bits, id};
use super::texture::{BoundUnit, TextureKind, UnitConfig};
use super::vertex::{OutputVertex, SEMANTICS, semantic};
use super::{Gpu, GpuError, Triangle, charge};

/// Subpixel bits of the snapped coordinates.
const SUBPIXEL: i64 = 16;
/// How far outside a clip plane a vertex still counts as inside (f32 noise on 2D drawn at
/// exactly z = 0 must not clip it).
const PLANE_SLACK: f32 = 1e-8;
/// The smallest w kept: the positive-w plane.
const MIN_W: f32 = 1e-5;
/// Triangles per part when set-up runs on several threads.
const SETUP_PART: usize = 1024;

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

impl RenderTarget {
    /// Whether `len` bytes from `address` overlap a surface.
    fn overlaps(&self, address: u32, len: u64) -> bool {
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
    /// Unit 2 reads texcoord 1 (TEXUNIT_CONFIG bit 13).
    texcoord2_from_1: bool,
    /// Texture units 0-2 with their textures (bound by [`Gpu::bind_textures`]).
    textures: [Option<BoundUnit>; 3],
    /// Fragment lighting, when on.
    lighting: Option<Lighting>,
    /// Combiner stages that change the colour (trailing pass-through stages dropped).
    combiner_stages: usize,
    varyings: Varyings,
}

impl RasterConfig {
    /// The configuration the registers describe, with no textures bound yet.
    pub fn configure(regs: &RegisterFile, luts: &LightingLuts) -> RasterConfig {
        let f24 = |register: u16| crate::numbers::float24_register(regs.get(register));
        let xy = regs.get(id::VIEWPORT_XY);
        let clip = regs.get(id::FRAGOP_CLIP) & 1 != 0;
        let position = regs.get(id::SCISSORTEST_POS);
        let dim = regs.get(id::SCISSORTEST_DIM);
        let combiners = Combiners::configure(regs);
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
            combiners,
            texcoord2_from_1: regs.get(id::TEXUNIT_CONFIG) & (1 << 13) != 0,
            combiner_stages: combiners.active_stages(),
            varyings: Varyings::configure(regs),
            ops: FragmentOps::configure(regs),
            textures: [None, None, None],
            lighting: Lighting::configure(regs, luts),
        }
    }
}

/// Interpolated attributes besides the position (semantics 4-23).
const VARYINGS: usize = SEMANTICS - 4;

/// The semantics interpolated per fragment: those the enabled fragment stages read (docs/gpu.md,
/// "Rasterization"). Colour always; a texture unit's coordinates when the unit is on; the
/// quaternion and view vector with fragment lighting. A probed pixel gets them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Varyings {
    semantics: [u8; VARYINGS],
    len: usize,
}

impl Varyings {
    /// Every semantic but the position.
    pub const ALL: Varyings = Varyings::of(!0xF);

    /// The semantics of bit set `set` (bit k: semantic k; the position's bits are ignored).
    const fn of(set: u32) -> Varyings {
        let mut semantics = [0; VARYINGS];
        let mut len = 0;
        let mut k = 4;
        while k < SEMANTICS {
            if set & (1 << k) != 0 {
                semantics[len] = k as u8;
                len += 1;
            }
            k += 1;
        }
        Varyings { semantics, len }
    }

    /// The semantics the enabled stages read.
    pub fn configure(regs: &RegisterFile) -> Varyings {
        // Set k's u and v, and texcoord 0's w with set 0.
        let texcoord = |k: usize| {
            let w = if k == 0 {
                1 << semantic::TEXCOORD0_W
            } else {
                0
            };
            3u32 << TEXCOORD_FIRST[k.min(2)] | w
        };
        let units = regs.get(id::TEXUNIT_CONFIG);
        let from_1 = units & 1 << 13 != 0;
        let mut set = 0xF << semantic::COLOR;
        for unit in 0..3 {
            if units & 1 << unit != 0 {
                set |= texcoord(texcoord_set(unit, from_1));
            }
        }
        if units & 1 << 10 != 0 {
            set |= texcoord(bits(units, 8, 2) as usize);
        }
        if regs.get(id::LIGHTING_ENABLE) & 1 != 0 {
            set |= 0xF << semantic::QUATERNION | 0x7 << semantic::VIEW;
        }
        Varyings::of(set)
    }

    /// The semantics, in ascending order.
    pub fn semantics(&self) -> &[u8] {
        &self.semantics[..self.len]
    }
}

/// A vertex after the perspective divide: snapped screen position, 1/w, z/w and every
/// attribute divided by w.
#[derive(Clone, Copy, Debug)]
struct ScreenVertex {
    x: i64,
    y: i64,
    inv_w: f32,
    z: f32,
    over_w: [f32; SEMANTICS],
}

/// A triangle ready to rasterize.
#[derive(Clone, Copy, Debug)]
pub struct SetupTriangle {
    v: [ScreenVertex; 3],
    /// Edge i (opposite vertex i) at pixel (x, y)'s centre: `x · e.0 + y · e.1 + e.2`.
    edges: [(i64, i64, i64); 3],
    /// Edge i's bias: -1 when samples on it are not covered.
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

/// One fragment at a probed pixel ([`Gpu::probe_pixel`]).
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

/// Clip-space vertex: the attribute vector (position first) with colours prepared.
type ClipVertex = [f32; SEMANTICS];

/// A clip plane: the signed distance of a vertex, and how far below zero still counts as in.
type ClipPlane = (fn(&ClipVertex) -> f32, f32);

/// The frustum with the PICA's depth range, then the positive-w plane.
const PLANES: [ClipPlane; 7] = [
    (|v| v[3] - v[0], PLANE_SLACK),
    (|v| v[3] + v[0], PLANE_SLACK),
    (|v| v[3] - v[1], PLANE_SLACK),
    (|v| v[3] + v[1], PLANE_SLACK),
    (|v| -v[2], PLANE_SLACK),
    (|v| v[3] + v[2], PLANE_SLACK),
    (|v| v[3] - MIN_W, 0.0),
];

/// The most vertices a clipped triangle has: each plane adds at most one.
const MAX_POLYGON: usize = 3 + PLANES.len() + 1;

/// A convex polygon being clipped.
#[derive(Clone, Copy)]
struct Polygon {
    vertices: [ClipVertex; MAX_POLYGON],
    len: usize,
}

impl Polygon {
    fn vertices(&self) -> &[ClipVertex] {
        &self.vertices[..self.len]
    }

    /// The polygon clipped against `distance(v) >= -slack` (Sutherland-Hodgman); every
    /// attribute is interpolated linearly at a cut.
    fn clip(&self, distance: impl Fn(&ClipVertex) -> f32, slack: f32) -> Polygon {
        let mut out = Polygon {
            vertices: [[0.0; SEMANTICS]; MAX_POLYGON],
            len: 0,
        };
        let polygon = self.vertices();
        for (k, b) in polygon.iter().enumerate() {
            let a = &polygon[(k + polygon.len() - 1) % polygon.len()];
            let (da, db) = (distance(a), distance(b));
            let (a_in, b_in) = (da >= -slack, db >= -slack);
            if a_in != b_in {
                let t = db / (db - da);
                out.push(std::array::from_fn(|c| b[c] + (a[c] - b[c]) * t));
            }
            if b_in {
                out.push(*b);
            }
        }
        out
    }

    fn push(&mut self, vertex: ClipVertex) {
        // A convex polygon gains at most one vertex per plane: the capacity is never exceeded.
        if self.len < MAX_POLYGON {
            self.vertices[self.len] = vertex;
            self.len += 1;
        }
    }
}

/// Whether `vertex` is inside every plane of [`PLANES`] and the user plane (then clipping
/// leaves a triangle unchanged): the same tests, written out.
fn inside(v: &ClipVertex, config: &RasterConfig) -> bool {
    let [x, y, z, w] = [v[0], v[1], v[2], v[3]];
    let slack = -PLANE_SLACK;
    w - x >= slack
        && w + x >= slack
        && w - y >= slack
        && w + y >= slack
        && -z >= slack
        && w + z >= slack
        && w - MIN_W >= 0.0
        && config
            .clip_plane
            .is_none_or(|c| user_distance(&c, v) >= slack)
}

fn user_distance(c: &[f32; 4], v: &ClipVertex) -> f32 {
    c[0] * v[0] + c[1] * v[1] + c[2] * v[2] + c[3] * v[3]
}

/// Sets up `triangle`: clipped, divided by w, snapped and culled; the triangles it makes are
/// appended to `out`. Returns how many.
pub fn setup(
    triangle: &Triangle,
    config: &RasterConfig,
    target: &TargetConfig,
    out: &mut Vec<SetupTriangle>,
) -> usize {
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
    let before = out.len();
    if vertices.iter().all(|v| inside(v, config)) {
        let screen = [
            to_screen(&vertices[0], config),
            to_screen(&vertices[1], config),
            to_screen(&vertices[2], config),
        ];
        out.extend(triangle_setup(screen, config, target));
        return out.len() - before;
    }
    let mut polygon = Polygon {
        vertices: [[0.0; SEMANTICS]; MAX_POLYGON],
        len: 3,
    };
    polygon.vertices[..3].copy_from_slice(&vertices);
    for (distance, slack) in PLANES {
        polygon = polygon.clip(distance, slack);
        if polygon.len < 3 {
            return 0;
        }
    }
    if let Some(c) = config.clip_plane {
        polygon = polygon.clip(|v| user_distance(&c, v), PLANE_SLACK);
        if polygon.len < 3 {
            return 0;
        }
    }
    let first = to_screen(&polygon.vertices[0], config);
    let mut previous = to_screen(&polygon.vertices[1], config);
    for v in &polygon.vertices()[2..] {
        let next = to_screen(v, config);
        out.extend(triangle_setup([first, previous, next], config, target));
        previous = next;
    }
    out.len() - before
}

/// Divides by w, maps by the viewport and snaps to 12.4 fixed point (half away from zero).
fn to_screen(v: &ClipVertex, config: &RasterConfig) -> ScreenVertex {
    let inv_w = 1.0 / v[3];
    let x = (v[0] * inv_w + 1.0) * config.half_width + config.origin.0;
    let y = (v[1] * inv_w + 1.0) * config.half_height + config.origin.1;
    let snap = |value: f32| round_half_away(value * SUBPIXEL as f32);
    // A plain loop: the array `map` closure is not always inlined here.
    let mut over_w = [0.0; SEMANTICS];
    for (out, &a) in over_w.iter_mut().zip(v) {
        *out = a * inv_w;
    }
    ScreenVertex {
        x: snap(x),
        y: snap(y),
        inv_w,
        z: v[2] * inv_w,
        over_w,
    }
}

/// `value` rounded half away from zero: `f32::round` without the library call (exact: below
/// 2^23 the fraction is exact, above it every float is whole; out of range saturates).
fn round_half_away(value: f32) -> i64 {
    let whole = value as i64;
    let fraction = value - whole as f32;
    if fraction >= 0.5 {
        whole.saturating_add(1)
    } else if fraction <= -0.5 {
        whole.saturating_sub(1)
    } else {
        whole
    }
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
    // area(a, b, p) at the centre p = (16x + 8, 16y + 8), as a plane in x and y.
    let half = SUBPIXEL / 2;
    let edges = std::array::from_fn(|i| {
        let (a, b) = (at(&v[(i + 1) % 3]), at(&v[(i + 2) % 3]));
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        (
            -SUBPIXEL * dy,
            SUBPIXEL * dx,
            dx * (half - a.1) - dy * (half - a.0),
        )
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
    Some(SetupTriangle {
        v,
        edges,
        bias,
        min,
        max,
    })
}

/// One band's view of the target: the band's rows of each surface.
struct Band<'a> {
    /// The first memory row of the band.
    first_row: u32,
    color: Option<&'a mut [u8]>,
    depth: Option<&'a mut [u8]>,
    /// The batch's triangles that reach the band, in order.
    bin: Vec<u32>,
}

/// What a fragment is shaded with besides its triangle.
struct PixelContext<'a> {
    config: &'a RasterConfig,
    target: &'a TargetConfig,
    depth_max: f32,
    probe: Option<(i64, i64)>,
}

/// Rasterizes the band's triangles into it; returns the fragments covered and the probed ones.
fn rasterize_band(
    band: &mut Band<'_>,
    triangles: &[SetupTriangle],
    context: &PixelContext<'_>,
) -> (u64, Vec<ProbedFragment>) {
    let mut fragments = 0;
    let mut probed = Vec::new();
    let target = context.target;
    let top = target.height as i64 - 1;
    // Rasterizer rows of this band: y = top - memory row.
    let y_high = top - band.first_row as i64;
    let y_low = (top - (band.first_row as i64 + 7)).max(0);
    let scissor = context.config.scissor;
    let bin = std::mem::take(&mut band.bin);
    for &k in &bin {
        let t = &triangles[k as usize];
        for y in t.min.1.max(y_low)..=t.max.1.min(y_high) {
            let row = (top - y) as u32;
            let x0 = t.min.0;
            let mut w = t
                .edges
                .map(|(step_x, step_y, c)| step_x * x0 + step_y * y + c);
            for x in x0..=t.max.0 {
                let covered = (w[0] + t.bias[0]) | (w[1] + t.bias[1]) | (w[2] + t.bias[2]) >= 0;
                let current = w;
                for (value, edge) in w.iter_mut().zip(&t.edges) {
                    *value += edge.0;
                }
                if !covered {
                    continue;
                }
                if scissor.0 == 1 {
                    let [x1, y1, x2, y2] = scissor.1;
                    if (x1..=x2).contains(&x) && (y1..=y2).contains(&y) {
                        continue;
                    }
                }
                fragments += 1;
                let pixel = (x as u32, row);
                if context.probe == Some((x, y)) {
                    shade_pixel(
                        band,
                        t,
                        current,
                        pixel,
                        context,
                        &Varyings::ALL,
                        Some(&mut probed),
                    );
                } else {
                    let varyings = &context.config.varyings;
                    shade_pixel(band, t, current, pixel, context, varyings, None);
                }
            }
        }
    }
    band.bin = bin;
    (fragments, probed)
}

/// Interpolates, combines, tests and writes one covered pixel.
fn shade_pixel(
    band: &mut Band<'_>,
    t: &SetupTriangle,
    w: [i64; 3],
    (x, row): (u32, u32),
    context: &PixelContext<'_>,
    varyings: &Varyings,
    probed: Option<&mut Vec<ProbedFragment>>,
) {
    let config = context.config;
    let (attributes, depth) = interpolate(t, w, (x, row), context, varyings);
    let color = semantic::COLOR;
    let mut sources = Sources {
        primary: [
            unorm8(attributes[color]),
            unorm8(attributes[color + 1]),
            unorm8(attributes[color + 2]),
            unorm8(attributes[color + 3]),
        ],
        ..Sources::default()
    };
    for (unit, bound) in config.textures.iter().enumerate() {
        if let Some(bound) = bound {
            sources.textures[unit] = sample_unit(bound, unit, t, w, &attributes, context);
        }
    }
    if let Some(lighting) = &config.lighting {
        let q = semantic::QUATERNION;
        let v = semantic::VIEW;
        let bump = lighting
            .bump
            .map_or([0; 4], |(unit, _)| sources.textures[unit]);
        let (primary, secondary) = lighting.shade(
            [
                attributes[q],
                attributes[q + 1],
                attributes[q + 2],
                attributes[q + 3],
            ],
            [attributes[v], attributes[v + 1], attributes[v + 2]],
            bump,
        );
        sources.fragment_primary = primary;
        sources.fragment_secondary = secondary;
    }
    let combined = config
        .combiners
        .run_stages(&sources, config.combiner_stages);
    let passed = write_fragment(band, (x, row), combined, depth, config, context.target);
    if let Some(probed) = probed {
        probed.push(ProbedFragment {
            attributes,
            depth,
            combined,
            passed,
        });
    }
}

/// The u semantic of texture coordinate set k (0-2); v follows it.
const TEXCOORD_FIRST: [usize; 3] = [
    semantic::TEXCOORD0,
    semantic::TEXCOORD1,
    semantic::TEXCOORD2,
];

/// The texture coordinate set texture unit `unit` (0-2) reads: its own, but unit 2 reads set 1
/// when TEXUNIT_CONFIG bit 13 says so.
fn texcoord_set(unit: usize, texcoord2_from_1: bool) -> usize {
    if unit == 2 && texcoord2_from_1 {
        1
    } else {
        unit
    }
}

/// The semantics of the texture coordinates unit `unit` reads: u, v, and texcoord 0's w
/// (which only unit 0 reads: [`unit_coords`]).
fn texcoord_semantics(unit: usize, texcoord2_from_1: bool) -> [usize; 3] {
    let first = TEXCOORD_FIRST[texcoord_set(unit, texcoord2_from_1)];
    [first, first + 1, semantic::TEXCOORD0_W]
}

/// The (u, v, w) unit `unit` samples at from the values of its [`texcoord_semantics`]: the
/// units other than 0 have no w.
fn unit_coords(unit: usize, [u, v, w]: [f32; 3]) -> [f32; 3] {
    [u, v, if unit == 0 { w } else { 0.0 }]
}

/// Texture unit `unit`'s colour at a fragment. The level of detail, when the unit needs one,
/// comes from the texture coordinates at the pixel's right and upper neighbours, interpolated
/// on the same triangle (docs/gpu-texturing.md, "Level of detail").
#[inline(never)]
fn sample_unit(
    bound: &BoundUnit,
    unit: usize,
    t: &SetupTriangle,
    w: [i64; 3],
    attributes: &[f32; SEMANTICS],
    context: &PixelContext<'_>,
) -> Rgba8 {
    let from_1 = context.config.texcoord2_from_1;
    let config = &bound.config;
    let sources = texcoord_semantics(unit, from_1);
    let values = [
        attributes[sources[0]],
        attributes[sources[1]],
        attributes[sources[2]],
    ];
    let centre = unit_coords(unit, values);
    let (face, s, tc) = config.project(centre, None);
    let lod = if config.needs_lod() {
        let at = |step: usize| {
            let step = |k: usize| {
                if step == 0 {
                    t.edges[k].0
                } else {
                    t.edges[k].1
                }
            };
            let moved = [w[0] + step(0), w[1] + step(1), w[2] + step(2)];
            let coords = unit_coords(unit, interpolate_three(t, moved, sources));
            let (_, ns, nt) = config.project(coords, Some(face));
            (ns, nt)
        };
        bound.lod((s, tc), at(0), at(1))
    } else {
        0.0
    };
    bound.sample(face, s, tc, lod)
}

/// The edge weights as floats and 1 / (their 1/w sum): what perspective-correct interpolation
/// at a pixel multiplies with ([`weighted`]).
#[inline(always)]
fn perspective(t: &SetupTriangle, w: [i64; 3]) -> ([f32; 3], f32) {
    let weights = [w[0] as f32, w[1] as f32, w[2] as f32];
    let inv_w = weights[0] * t.v[0].inv_w + weights[1] * t.v[1].inv_w + weights[2] * t.v[2].inv_w;
    (weights, 1.0 / inv_w)
}

/// Semantic `s` at a pixel: its attribute/w interpolated with the weights, times the
/// reciprocal ([`perspective`]).
#[inline(always)]
fn weighted(t: &SetupTriangle, (weights, reciprocal): ([f32; 3], f32), s: usize) -> f32 {
    (weights[0] * t.v[0].over_w[s] + weights[1] * t.v[1].over_w[s] + weights[2] * t.v[2].over_w[s])
        * reciprocal
}

/// Three semantics interpolated at edge weights `w`.
fn interpolate_three(t: &SetupTriangle, w: [i64; 3], semantics: [usize; 3]) -> [f32; 3] {
    let at = perspective(t, w);
    [
        weighted(t, at, semantics[0]),
        weighted(t, at, semantics[1]),
        weighted(t, at, semantics[2]),
    ]
}

/// The attributes `varyings` names and the position at pixel (x, row)'s centre, and the depth
/// value. The per-pixel stages are kept out of line (this, the combiners, [`write_fragment`]):
/// each is its own symbol, so a sampling profile splits the fragment time by stage
/// (docs/gpu.md, "Speed").
#[inline(never)]
fn interpolate(
    t: &SetupTriangle,
    w: [i64; 3],
    (x, row): (u32, u32),
    context: &PixelContext<'_>,
    varyings: &Varyings,
) -> ([f32; SEMANTICS], u32) {
    let config = context.config;
    // Perspective-correct: attribute/w and 1/w interpolated with the edge weights.
    let at = perspective(t, w);
    let (weights, reciprocal) = at;
    let sum = weights[0] + weights[1] + weights[2];
    let mut attributes = [0.0; SEMANTICS];
    for &s in varyings.semantics() {
        attributes[s as usize] = weighted(t, at, s as usize);
    }
    let zs = (weights[0] * t.v[0].z + weights[1] * t.v[1].z + weights[2] * t.v[2].z) / sum;
    let mut depth = zs * config.depth_scale + config.depth_offset;
    if config.w_buffer {
        depth *= sum * reciprocal;
    }
    let depth = (depth.clamp(0.0, 1.0) * context.depth_max) as u32;
    attributes[..4].copy_from_slice(&[
        x as f32 + 0.5,
        (context.target.height - 1 - row) as f32 + 0.5,
        zs,
        sum * reciprocal,
    ]);
    (attributes, depth)
}

/// The per-fragment operations: alpha, stencil and depth tests, then blending or the logic op
/// into the colour buffer. Returns whether the fragment passed the tests.
#[inline(never)]
fn write_fragment(
    band: &mut Band<'_>,
    (x, row): (u32, u32),
    source: Rgba8,
    depth: u32,
    config: &RasterConfig,
    target: &TargetConfig,
) -> bool {
    let ops = &config.ops;
    if !ops.alpha_passes(source[3]) {
        return false;
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
            return false;
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
    true
}

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
            if let Some(surface) = target.color.as_mut() {
                surface.store(&mut self.memory)?;
            }
            if let Some(surface) = target.depth.as_mut() {
                surface.store(&mut self.memory)?;
            }
        }
        Ok(())
    }

    /// Binds the enabled texture units' textures to `config` (shadow maps are the shadow
    /// stage's). A texture that overlaps the held render target is read after the target is
    /// written back, so rendering to a texture and then sampling it sees the rendering.
    fn bind_textures(&mut self, config: &mut RasterConfig) -> Result<(), GpuError> {
        for unit in 0..config.textures.len() {
            let Some(unit_config) = UnitConfig::configure(&self.regs, unit) else {
                continue;
            };
            if unit_config.kind == TextureKind::Shadow {
                continue;
            }
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
        if self.target.as_ref().is_some_and(|t| t.config == config) {
            return Ok(());
        }
        self.store_target()?;
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
        let mut config = RasterConfig::configure(&self.regs, &self.lighting_luts);
        let started = Instant::now();
        let bound = self.bind_textures(&mut config);
        charge(&mut self.times.textures, started);
        bound?;
        let started = Instant::now();
        let held = self.hold_target();
        charge(&mut self.times.target, started);
        held?;
        let started = Instant::now();
        let target = self.target.as_mut().expect("held above");
        let target_config = target.config;
        let mut setup_triangles = std::mem::take(&mut self.setup_buffer);
        setup_triangles.clear();
        let threads = self.config.threads;
        let set_up = |part: &[Triangle], out: &mut Vec<SetupTriangle>| {
            part.iter()
                .filter(|t| setup(t, &config, &target_config, out) == 0)
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
                self.raster_stats.rejected += rejected;
            }
        } else {
            self.raster_stats.rejected += set_up(&triangles, &mut setup_triangles);
        }
        self.raster_stats.triangles += setup_triangles.len() as u64;
        // Each band's triangles, in order (memory row = top - y).
        let bands = target_config.rows() as usize / 8;
        let top = target_config.height as i64 - 1;
        let mut bins = vec![Vec::new(); if target_config.width == 0 { 0 } else { bands }];
        if !bins.is_empty() {
            for (k, t) in setup_triangles.iter().enumerate() {
                let first = ((top - t.max.1) / 8) as usize;
                let last = (((top - t.min.1) / 8) as usize).min(bands - 1);
                for bin in &mut bins[first..=last] {
                    bin.push(k as u32);
                }
            }
        }
        charge(&mut self.times.setup, started);
        let started = Instant::now();
        let touched: Vec<bool> = bins.iter().map(|bin| !bin.is_empty()).collect();
        let mut color_bands = Surface::bands(target.color.as_mut(), &touched);
        let mut depth_bands = Surface::bands(target.depth.as_mut(), &touched);
        let mut work: Vec<Band<'_>> = color_bands
            .iter_mut()
            .zip(depth_bands.iter_mut())
            .zip(bins)
            .enumerate()
            .filter(|(_, (_, bin))| !bin.is_empty())
            .map(|(k, ((color, depth), bin))| Band {
                first_row: 8 * k as u32,
                color: color.take(),
                depth: depth.take(),
                bin,
            })
            .collect();
        let depth_bits = target_config.depth_format.map_or(0, |f| f.depth_bits());
        let context = PixelContext {
            config: &config,
            target: &target_config,
            depth_max: ((1u64 << depth_bits) - 1) as f32,
            probe: self.probe.map(|(x, y)| (x as i64, y as i64)),
        };
        let run = |band: &mut Band<'_>| rasterize_band(band, &setup_triangles, &context);
        let results: Vec<(u64, Vec<ProbedFragment>)> = if threads > 1 && work.len() > 1 {
            in_pool(threads, || {
                use rayon::prelude::*;
                work.par_iter_mut().map(run).collect()
            })
        } else {
            work.iter_mut().map(run).collect()
        };
        for (fragments, probed) in results {
            self.raster_stats.fragments += fragments;
            self.probed.extend(probed);
        }
        charge(&mut self.times.fragments, started);
        self.setup_buffer = setup_triangles;
        self.pending = triangles;
        self.pending.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varyings(texunits: u32, lighting: bool) -> Vec<u8> {
        let mut regs = RegisterFile::default();
        regs.write(id::TEXUNIT_CONFIG, texunits, 0xF);
        regs.write(id::LIGHTING_ENABLE, lighting as u32, 0xF);
        Varyings::configure(&regs).semantics().to_vec()
    }

    #[test]
    fn the_enabled_stages_choose_the_interpolated_semantics() {
        // Colour alone (semantics 8-11) when nothing else is on.
        assert_eq!(varyings(0, false), [8, 9, 10, 11]);
        // Unit 0: texcoord0 (12, 13) and its w (16).
        assert_eq!(varyings(1, false), [8, 9, 10, 11, 12, 13, 16]);
        // Unit 2 reads texcoord2 (22, 23), or texcoord1 (14, 15) with bit 13.
        assert_eq!(varyings(4, false), [8, 9, 10, 11, 22, 23]);
        assert_eq!(varyings(4 | 1 << 13, false), [8, 9, 10, 11, 14, 15]);
        // The procedural texture reads the coordinates bits 8-9 choose.
        assert_eq!(varyings(1 << 10 | 1 << 8, false), [8, 9, 10, 11, 14, 15]);
        // Lighting: the quaternion (4-7) and the view vector (18-20).
        assert_eq!(varyings(0, true), [4, 5, 6, 7, 8, 9, 10, 11, 18, 19, 20]);
        assert_eq!(Varyings::ALL.semantics(), (4..24).collect::<Vec<u8>>());
    }

    #[test]
    fn rounding_half_away_matches_the_library() {
        let mut value = -70_000.0f32;
        while value < 70_000.0 {
            for v in [
                value,
                value + 0.5,
                value - 0.5,
                value + 0.4999,
                value + 0.5001,
            ] {
                assert_eq!(round_half_away(v), v.round() as i64, "{v}");
            }
            value += 13.25;
        }
        for v in [1e10f32, -1e10, 8_388_609.0, f32::MAX, f32::MIN] {
            assert_eq!(round_half_away(v), v.round() as i64, "{v}");
        }
        // Every 8-bit result, and the halfway points between them.
        for k in 0..=2550 {
            let v = k as f32 / 2550.0;
            assert_eq!(unorm8(v), (v * 255.0).round() as u8, "{v}");
        }
        assert_eq!(unorm8(-0.5), 0);
        assert_eq!(unorm8(7.0), 255);
        assert_eq!(unorm8(f32::NAN), 0);
    }
}
