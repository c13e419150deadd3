//! The fragment stages (docs/gpu.md, "Fragment stages"): one covered pixel in, a colour and a
//! depth written (or not) to the render target's band out.
//!
//! In: a [`Fragment`] from the rasterizer (every semantic the enabled stages read, interpolated
//! at the pixel's centre; the depth value; a way to interpolate at the neighbours for the level
//! of detail), the [`FragmentConfig`] the registers describe. Out: the band's colour and depth
//! bytes, through the per-fragment operations.
//!
//! [`shade`] is the whole path, one stage call after another in the hardware's order; each
//! stage is a file:
//!
//! 1. [`texture`]: texture units 0-2; [`proctex`]: the procedural texture, unit 3;
//! 2. [`lighting`]: fragment lighting's primary and secondary colours (shadow attenuation is
//!    its `shadow` input);
//! 3. [`combiner`]: the six texture-combiner stages;
//! 4. [`fog`]: fog, on RGB only (the hardware applies it after the alpha test, which reads
//!    only alpha, so applying it here gives the same), or [`gas`] shading;
//! 5. [`ops`]: the per-fragment operations, or in their shadow mode the shadow map's write,
//!    or in their gas mode [`gas`] density accumulation.
//!
//! All colour arithmetic is on 8-bit channels; a stage reads the registers only in its
//! `configure`, once per batch. A batch that reads nothing but the vertex colour, or that adds
//! only 2D textures without a level of detail, takes a specialised path instead of [`shade`]
//! ([`FragmentPath`], docs/gpu.md "Fragment paths"), with the same pixels.

pub mod combiner;
pub mod fog;
pub mod gas;
pub mod lighting;
pub mod ops;
pub mod proctex;
pub mod texture;

use std::time::Instant;

use crate::framebuffer::color::{Rgba8, unorm8};
use crate::framebuffer::target::{BandPixels, TargetConfig};
use crate::regs::{RegisterFile, SEMANTICS, id, semantic};

use combiner::{Combiners, Sources};
use fog::{Fog, FogLut};
use gas::{GasAccumulation, GasLut, GasShading};
use lighting::{Lighting, LightingLuts};
use ops::FragmentOps;
use proctex::{ProcTex, ProcTexLuts};
use texture::BoundUnit;

/// Everything the fragment stages of a batch run with.
#[derive(Clone, Debug)]
pub struct FragmentConfig {
    /// Texture units 0-2 with their textures (bound by the caller: `Gpu::bind_textures`).
    pub textures: [Option<BoundUnit>; 3],
    /// Unit 2 reads texcoord 1 (TEXUNIT_CONFIG bit 13).
    pub texcoord2_from_1: bool,
    /// The procedural texture (unit 3), when on.
    pub proctex: Option<ProcTex>,
    /// Fragment lighting, when on.
    pub lighting: Option<Lighting>,
    /// The texture combiners.
    pub combiners: Combiners,
    /// Combiner stages that change the colour (trailing pass-through stages dropped).
    pub combiner_stages: usize,
    /// Fog, when on.
    pub fog: Option<Fog>,
    /// Gas shading (fog mode 7), when on.
    pub gas_shading: Option<GasShading>,
    /// Gas density accumulation (fragment-operation mode 1), when on.
    pub gas_accumulation: Option<GasAccumulation>,
    /// The per-fragment operations.
    pub ops: FragmentOps,
}

impl FragmentConfig {
    /// The configuration the registers and tables describe, with no textures bound yet.
    pub fn configure(regs: &RegisterFile, tables: &FragmentTables) -> FragmentConfig {
        let combiners = Combiners::configure(regs);
        FragmentConfig {
            textures: [None, None, None],
            texcoord2_from_1: regs.get(id::TEXUNIT_CONFIG) & (1 << 13) != 0,
            proctex: ProcTex::configure(regs, &tables.proctex),
            lighting: Lighting::configure(regs, &tables.lighting),
            combiners,
            combiner_stages: combiners.active_stages(),
            fog: Fog::configure(regs, &tables.fog),
            gas_shading: GasShading::configure(regs, &tables.gas),
            gas_accumulation: GasAccumulation::configure(regs),
            ops: FragmentOps::configure(regs),
        }
    }
}

/// The ways through the fragment stages (docs/gpu.md, "Fragment paths"): a batch's state picks
/// one ([`FragmentConfig::path`]) and the rasterizer's pixel loop is compiled for each, so a batch
/// pays only for the stages it turns on. Every path gives the same pixels as [`shade`] would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FragmentPath {
    /// Every stage the registers turn on, one call after another: [`shade`].
    General,
    /// The vertex colour through the combiners to the per-fragment operations, nothing else on
    /// (no texture unit, procedural texture, lighting, fog or gas; the default fragment-operation
    /// mode): [`shade_plain`]. Only the colour and the depth are interpolated.
    VertexColour,
    /// As [`FragmentPath::VertexColour`], with combiners that hand the vertex colour on
    /// unchanged, so they are not run.
    PrimaryColour,
    /// As [`FragmentPath::VertexColour`] with texture units on, each a 2D texture read at one
    /// level with one filter (no level of detail: sprites, fonts, UI): [`shade_plain`].
    /// Only the colour, the units' coordinates and the depth are interpolated.
    Textured,
}

/// The names of the [`FragmentPath`]s, indexed by `path as usize`.
pub const FRAGMENT_PATHS: [&str; 4] = ["general", "vertex colour", "primary colour", "textured"];

impl FragmentConfig {
    /// The path this batch's fragments take (its textures bound).
    pub fn path(&self) -> FragmentPath {
        let plain = self.proctex.is_none()
            && self.lighting.is_none()
            && self.fog.is_none()
            && self.gas_shading.is_none()
            && self.gas_accumulation.is_none()
            && self.ops.mode != ops::SHADOW_MODE;
        let flat = |bound: &BoundUnit| {
            bound.config.kind == texture::TextureKind::Texture2d && !bound.config.needs_lod()
        };
        if !plain {
            FragmentPath::General
        } else if self.textures.iter().flatten().next().is_some() {
            if self.textures.iter().flatten().all(flat) {
                FragmentPath::Textured
            } else {
                FragmentPath::General
            }
        } else if self.combiners.passes_primary(self.combiner_stages) {
            FragmentPath::PrimaryColour
        } else {
            FragmentPath::VertexColour
        }
    }

    /// Each bound unit's sampler for the textured path ([`texture::flat_sampler`]; `None` for
    /// an unbound unit or one that needs the general sampler).
    pub fn flat_samplers(&self) -> [Option<texture::FlatSample>; 3] {
        std::array::from_fn(|unit| self.textures[unit].as_ref().and_then(texture::flat_sampler))
    }

    /// The first semantic (u; v follows) of the coordinates each bound texture unit reads.
    pub fn texcoords(&self) -> [Option<usize>; 3] {
        std::array::from_fn(|unit| {
            self.textures[unit]
                .as_ref()
                .map(|_| TEXCOORD_FIRST[texcoord_set(unit, self.texcoord2_from_1)])
        })
    }
}

/// A fragment on a specialised path ([`shade_plain`]): what the rasterizer interpolated for it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlainFragment {
    /// The vertex colour.
    pub primary: Rgba8,
    /// Each bound unit's coordinates (u, v).
    pub coords: [[f32; 2]; 3],
    /// The depth value (the buffer's bits).
    pub depth: u32,
    /// The pixel: x, and the memory row.
    pub pixel: (u32, u32),
}

/// The fragment stages of a batch on a specialised path ([`FragmentPath::VertexColour`],
/// [`FragmentPath::Textured`], or with `COMBINE` false [`FragmentPath::PrimaryColour`]) on
/// `fragment`: the texture units (each a 2D texture at level 0, as [`shade`] samples one that
/// needs no level of detail, through its sampler in `samplers` when it has one), the combiners
/// and the per-fragment operations. Returns whether the fragment passed the tests.
#[inline(always)]
pub fn shade_plain<const COMBINE: bool>(
    config: &FragmentConfig,
    samplers: &[Option<texture::FlatSample>; 3],
    fragment: &PlainFragment,
    band: &mut BandPixels<'_>,
    target: &TargetConfig,
) -> bool {
    let combined = if COMBINE {
        let mut sources = Sources {
            primary: fragment.primary,
            ..Sources::default()
        };
        for (unit, bound) in config.textures.iter().enumerate() {
            if let Some(bound) = bound {
                let [u, v] = fragment.coords[unit];
                sources.textures[unit] = match samplers[unit] {
                    Some(sample) => sample(bound, u, v),
                    None => bound.sample(0, u, v, 0.0),
                };
            }
        }
        config
            .combiners
            .run_stages(&sources, config.combiner_stages)
    } else {
        // The primary-colour path: no texture unit, combiners that hand the colour on.
        fragment.primary
    };
    let (pixel, depth) = (fragment.pixel, fragment.depth);
    ops::write(band, pixel, combined, depth, &config.ops, target)
}

/// The fragment stages' lookup tables, written through their data registers (each table's
/// `push`) and read when a batch is configured.
#[derive(Clone, Debug, Default)]
pub struct FragmentTables {
    /// Fragment lighting's tables (LIGHTING_LUT_DATA0-7).
    pub lighting: LightingLuts,
    /// The fog table (FOG_LUT_DATA0-7).
    pub fog: FogLut,
    /// The procedural texture's tables (PROCTEX_LUT_DATA0-7).
    pub proctex: ProcTexLuts,
    /// The gas colour table (GAS_LUT_DATA).
    pub gas: GasLut,
}

/// The fragment stages [`StageSamples`] times, in the order [`shade`] runs them.
pub const STAGE_NAMES: [&str; 6] = [
    "texture units 0-2",
    "procedural texture",
    "fragment lighting",
    "combiners",
    "fog or gas shading",
    "per-fragment operations",
];

/// One fragment in this many has its stages timed when stage sampling is on: timing every
/// fragment would cost more than most stages (a clock read is tens of nanoseconds).
pub const SAMPLE_EVERY: u32 = 256;

/// The time of each fragment stage on the sampled fragments, and how many of them ran it
/// (a stage a fragment skips is not counted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageSamples {
    /// Time per stage of [`STAGE_NAMES`].
    pub time: [std::time::Duration; 6],
    /// Sampled fragments that ran each stage.
    pub fragments: [u64; 6],
}

impl StageSamples {
    /// Adds `other`'s samples.
    pub fn add(&mut self, other: &StageSamples) {
        for k in 0..STAGE_NAMES.len() {
            self.time[k] += other.time[k];
            self.fragments[k] += other.fragments[k];
        }
    }

    /// Removes the clock's own cost from each timed stage: `overhead` (what reading the
    /// clock twice costs, [`clock_overhead`]) once per timed fragment.
    pub fn without_clock(mut self, overhead: std::time::Duration) -> StageSamples {
        for k in 0..STAGE_NAMES.len() {
            let clock = overhead * self.fragments[k].min(u32::MAX as u64) as u32;
            self.time[k] = self.time[k].saturating_sub(clock);
        }
        self
    }

    /// Charges stage `stage` with the time since `started`, when timing.
    fn charge(this: &mut Option<&mut StageSamples>, stage: usize, started: Option<Instant>) {
        if let (Some(samples), Some(started)) = (this.as_deref_mut(), started) {
            samples.time[stage] += started.elapsed();
            samples.fragments[stage] += 1;
        }
    }
}

/// What timing nothing costs: the least of a few readings of the clock's start and elapsed
/// time, which every timed stage also pays.
pub fn clock_overhead() -> std::time::Duration {
    (0..32)
        .map(|_| Instant::now().elapsed())
        .min()
        .unwrap_or_default()
}

/// Where a table of `entries` entries is read at `index` (its input scaled to entries): the
/// entry ⌊index⌋, clamped to the table, and the rest, which multiplies the entry's difference
/// (at the last entry the rest may reach 1, reading the whole difference). The rule of the
/// fog, procedural-texture and gas tables.
pub(crate) fn table_position(index: f32, entries: usize) -> (usize, f32) {
    let entry = index.floor().clamp(0.0, (entries - 1) as f32);
    (entry as usize, index - entry)
}

/// A pixel's neighbour on the same triangle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Neighbour {
    /// One pixel right (x + 1).
    Right,
    /// One pixel up (y + 1, rasterizer coordinates).
    Up,
}

/// Interpolation at a fragment's neighbours (the level of detail's derivatives): the
/// rasterizer's, handed in with the fragment.
pub trait Neighbours {
    /// Semantics `semantics` interpolated at `neighbour`.
    fn at(&self, neighbour: Neighbour, semantics: [usize; 3]) -> [f32; 3];
}

/// One covered pixel as the rasterizer hands it over.
pub struct Fragment<'a, N> {
    /// The semantics the enabled stages read, interpolated at the pixel's centre.
    pub attributes: &'a [f32; SEMANTICS],
    /// The depth value to test and write (the buffer's bits).
    pub depth: u32,
    /// The depth in [0, 1] those bits were made from (after the depth scale and offset and the
    /// W-buffer, clamped): what fog reads.
    pub depth_fraction: f32,
    /// The pixel: x, and the memory row.
    pub pixel: (u32, u32),
    /// Interpolation at the neighbours.
    pub neighbours: N,
}

/// The fragment stages on one fragment, in order: the texture units (each through its sampler
/// in `samplers` when it has one: [`FragmentConfig::flat_samplers`]), fragment lighting, the
/// combiners, then the per-fragment operations into `band`. Returns the combiners' colour
/// and whether the fragment passed the tests. With `samples` each stage that runs is timed
/// into it.
pub fn shade<N: Neighbours>(
    config: &FragmentConfig,
    fragment: &Fragment<'_, N>,
    samplers: &[Option<texture::FlatSample>; 3],
    band: &mut BandPixels<'_>,
    target: &TargetConfig,
    mut samples: Option<&mut StageSamples>,
) -> (Rgba8, bool) {
    let clock = |samples: &Option<&mut StageSamples>| samples.is_some().then(Instant::now);
    let attributes = fragment.attributes;
    let color = semantic::COLOR;
    let mut sources = Sources {
        primary: std::array::from_fn(|c| unorm8(attributes[color + c])),
        ..Sources::default()
    };
    // 1. Texture units 0-2.
    if config.textures.iter().any(Option::is_some) {
        let started = clock(&samples);
        for (unit, bound) in config.textures.iter().enumerate() {
            if let Some(bound) = bound {
                sources.textures[unit] = match samplers[unit] {
                    // A 2D unit with level 0 alone samples at its (u, v) (`sample_unit`
                    // without the projection and the level of detail, which it has not).
                    Some(sample) => {
                        let first = TEXCOORD_FIRST[texcoord_set(unit, config.texcoord2_from_1)];
                        sample(bound, attributes[first], attributes[first + 1])
                    }
                    None => sample_unit(bound, unit, fragment, config.texcoord2_from_1),
                };
            }
        }
        StageSamples::charge(&mut samples, 0, started);
    }
    // The procedural texture, unit 3.
    if let Some(proctex) = &config.proctex {
        let started = clock(&samples);
        sources.textures[3] = sample_proctex(proctex, fragment);
        StageSamples::charge(&mut samples, 1, started);
    }
    // 2. Fragment lighting.
    if let Some(lighting) = &config.lighting {
        let started = clock(&samples);
        let q = semantic::QUATERNION;
        let v = semantic::VIEW;
        let bump = lighting
            .bump
            .map_or([0; 4], |(unit, _)| sources.textures[unit]);
        let shadow = lighting
            .shadow
            .map_or([255; 4], |term| sources.textures[term.unit]);
        let (primary, secondary) = lighting.shade(
            std::array::from_fn(|c| attributes[q + c]),
            [attributes[v], attributes[v + 1], attributes[v + 2]],
            bump,
            shadow,
        );
        sources.fragment_primary = primary;
        sources.fragment_secondary = secondary;
        StageSamples::charge(&mut samples, 2, started);
    }
    // 3. The texture combiners.
    let started = clock(&samples);
    let combined = config
        .combiners
        .run_stages(&sources, config.combiner_stages);
    StageSamples::charge(&mut samples, 3, started);
    // 4. Fog, or gas shading (fog mode 7).
    let started = clock(&samples);
    let fogged = match (&config.fog, &config.gas_shading) {
        (Some(fog), _) => fog.apply(combined, fragment.depth_fraction),
        (None, Some(gas)) => gas.shade(combined),
        (None, None) => combined,
    };
    if config.fog.is_some() || config.gas_shading.is_some() {
        StageSamples::charge(&mut samples, 4, started);
    }
    let started = clock(&samples);
    // 5. In gas mode, density accumulation instead of the per-fragment operations.
    if let Some(gas) = &config.gas_accumulation {
        let written = gas::accumulate(
            band,
            fragment.pixel,
            fogged,
            fragment.depth_fraction,
            gas,
            target,
        );
        StageSamples::charge(&mut samples, 5, started);
        return (combined, written);
    }
    // The per-fragment operations, or in shadow mode the shadow map's write.
    if config.ops.mode == ops::SHADOW_MODE {
        let written = ops::write_shadow(
            band,
            fragment.pixel,
            combined[1],
            fragment.depth_fraction,
            &config.ops,
            target,
        );
        StageSamples::charge(&mut samples, 5, started);
        return (combined, written);
    }
    let passed = ops::write(
        band,
        fragment.pixel,
        fogged,
        fragment.depth,
        &config.ops,
        target,
    );
    StageSamples::charge(&mut samples, 5, started);
    (combined, passed)
}

/// The u semantic of texture coordinate set k (0-2); v follows it.
pub const TEXCOORD_FIRST: [usize; 3] = [
    semantic::TEXCOORD0,
    semantic::TEXCOORD1,
    semantic::TEXCOORD2,
];

/// The texture coordinate set texture unit `unit` (0-2) reads: its own, but unit 2 reads set 1
/// when TEXUNIT_CONFIG bit 13 says so.
pub fn texcoord_set(unit: usize, texcoord2_from_1: bool) -> usize {
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

/// The procedural texture's colour at a fragment. Its level of detail reads the change of the
/// coordinates to the pixel's right and upper neighbours: du + dv, each the larger change
/// (docs/gpu-proctex.md, "Level of detail").
#[inline(never)]
fn sample_proctex<N: Neighbours>(proctex: &ProcTex, fragment: &Fragment<'_, N>) -> Rgba8 {
    let first = TEXCOORD_FIRST[proctex.texcoord];
    let attributes = fragment.attributes;
    let (u, v) = (attributes[first], attributes[first + 1]);
    let footprint = if proctex.needs_lod() {
        let semantics = [first, first + 1, first];
        let [ru, rv, _] = fragment.neighbours.at(Neighbour::Right, semantics);
        let [tu, tv, _] = fragment.neighbours.at(Neighbour::Up, semantics);
        (ru - u).abs().max((tu - u).abs()) + (rv - v).abs().max((tv - v).abs())
    } else {
        0.0
    };
    proctex.sample([u, v], footprint)
}

/// Texture unit `unit`'s colour at a fragment. The level of detail, when the unit needs one,
/// comes from the texture coordinates at the pixel's right and upper neighbours, interpolated
/// on the same triangle (docs/gpu-texturing.md, "Level of detail").
#[inline(never)]
fn sample_unit<N: Neighbours>(
    bound: &BoundUnit,
    unit: usize,
    fragment: &Fragment<'_, N>,
    texcoord2_from_1: bool,
) -> Rgba8 {
    let config = &bound.config;
    let sources = texcoord_semantics(unit, texcoord2_from_1);
    let attributes = fragment.attributes;
    let values = [
        attributes[sources[0]],
        attributes[sources[1]],
        attributes[sources[2]],
    ];
    let centre = unit_coords(unit, values);
    let (face, s, tc) = config.project(centre, None);
    if config.kind.is_shadow() {
        // The depth compared: |w| for a 2D map, the major axis for a cube.
        let [u, v, w] = centre;
        let depth = if config.kind.is_cube() {
            u.abs().max(v.abs()).max(w.abs())
        } else {
            w.abs()
        };
        return bound.sample_shadow(face, s, tc, depth);
    }
    let lod = if config.needs_lod() {
        let at = |neighbour: Neighbour| {
            let coords = unit_coords(unit, fragment.neighbours.at(neighbour, sources));
            let (_, ns, nt) = config.project(coords, Some(face));
            (ns, nt)
        };
        bound.lod((s, tc), at(Neighbour::Right), at(Neighbour::Up))
    } else {
        0.0
    };
    bound.sample(face, s, tc, lod)
}
