//! Interpolation (docs/gpu.md, "Rasterization"): the semantics the enabled fragment stages read
//! ([`Varyings`]), perspective-correct from the set-up triangle's attribute/w and 1/w, and the
//! depth value (scale, offset, the W-buffer, clamped, in the buffer's bits).

use crate::fragment::{Neighbour, Neighbours, TEXCOORD_FIRST, texcoord_set};
use crate::regs::{RegisterFile, SEMANTICS, bits, id, semantic};

use super::{PixelContext, SetupTriangle};

/// Interpolated attributes besides the position (semantics 4-23).
const VARYINGS: usize = SEMANTICS - 4;

/// Above this many varyings a fragment interpolates every semantic at once.
const DENSE_VARYINGS: usize = 6;

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

/// The edge weights as floats and 1 / (their 1/w sum): what perspective-correct interpolation
/// at a pixel multiplies with ([`weighted`]).
#[inline(always)]
pub(super) fn perspective(t: &SetupTriangle, w: [i64; 3]) -> ([f32; 3], f32) {
    let weights = [w[0] as f32, w[1] as f32, w[2] as f32];
    let inv_w = weights[0] * t.v[0].inv_w + weights[1] * t.v[1].inv_w + weights[2] * t.v[2].inv_w;
    (weights, 1.0 / inv_w)
}

/// Semantic `s` at a pixel: its attribute/w interpolated with the weights, times the
/// reciprocal ([`perspective`]).
#[inline(always)]
pub(super) fn weighted(t: &SetupTriangle, (weights, reciprocal): ([f32; 3], f32), s: usize) -> f32 {
    (weights[0] * t.v[0].over_w[s] + weights[1] * t.v[1].over_w[s] + weights[2] * t.v[2].over_w[s])
        * reciprocal
}

/// Three semantics interpolated at edge weights `w`.
pub(super) fn interpolate_three(t: &SetupTriangle, w: [i64; 3], semantics: [usize; 3]) -> [f32; 3] {
    let at = perspective(t, w);
    [
        weighted(t, at, semantics[0]),
        weighted(t, at, semantics[1]),
        weighted(t, at, semantics[2]),
    ]
}

/// The attributes `varyings` names and the position at pixel (x, row)'s centre, the depth in
/// [0, 1] and the depth value (the buffer's bits). The per-pixel stages are kept out of line (this, the combiners, [`write_fragment`]):
/// each is its own symbol, so a sampling profile splits the fragment time by stage
/// (docs/gpu.md, "Speed").
#[inline(never)]
pub(super) fn interpolate(
    t: &SetupTriangle,
    w: [i64; 3],
    (x, row): (u32, u32),
    context: &PixelContext<'_>,
    varyings: &Varyings,
) -> ([f32; SEMANTICS], f32, u32) {
    // Perspective-correct: attribute/w and 1/w interpolated with the edge weights.
    let at = perspective(t, w);
    let mut attributes = [0.0; SEMANTICS];
    if varyings.len > DENSE_VARYINGS {
        // Every semantic, in vector registers: cheaper than picking this many one by one (the
        // extra ones are never read).
        for (s, value) in attributes.iter_mut().enumerate() {
            *value = weighted(t, at, s);
        }
    } else {
        for &s in varyings.semantics() {
            attributes[s as usize] = weighted(t, at, s as usize);
        }
    }
    let depth = depth_at(t, at, context);
    attributes[..4].copy_from_slice(&[
        x as f32 + 0.5,
        (context.target.height - 1 - row) as f32 + 0.5,
        depth.z,
        depth.w,
    ]);
    (attributes, depth.fraction, depth.value)
}

/// A pixel's depth, from [`perspective`]'s weights and reciprocal.
pub(super) struct Depth {
    /// z/w, interpolated linearly.
    pub(super) z: f32,
    /// w, perspective-correct.
    pub(super) w: f32,
    /// The depth after the scale and offset and the W-buffer, clamped to [0, 1]: what fog reads.
    pub(super) fraction: f32,
    /// The depth value to test and write (the buffer's bits).
    pub(super) value: u32,
}

/// The depth at a pixel: z/w interpolated linearly, then scale, offset, the W-buffer, the clamp
/// and the buffer's bits (docs/gpu.md, "Rasterization").
#[inline(always)]
pub(super) fn depth_at(
    t: &SetupTriangle,
    (weights, reciprocal): ([f32; 3], f32),
    context: &PixelContext<'_>,
) -> Depth {
    let config = context.config;
    let sum = weights[0] + weights[1] + weights[2];
    let z = (weights[0] * t.v[0].z + weights[1] * t.v[1].z + weights[2] * t.v[2].z) / sum;
    let w = sum * reciprocal;
    let mut depth = z * config.depth_scale + config.depth_offset;
    if config.w_buffer {
        depth *= w;
    }
    let fraction = depth.clamp(0.0, 1.0);
    Depth {
        z,
        w,
        fraction,
        value: (fraction * context.depth_max) as u32,
    }
}

/// The vertex colour (semantics [`semantic::COLOR`] on), the (u, v) of each texture coordinate
/// set `texcoords` names (its first semantic; none: left 0) and the depth at edge weights `w`:
/// all the vertex-colour and textured fragment paths read (`fragment::FragmentPath`).
#[inline(always)]
pub(super) fn interpolate_colour(
    t: &SetupTriangle,
    w: [i64; 3],
    context: &PixelContext<'_>,
    texcoords: &[Option<usize>; 3],
) -> ([f32; 4], [[f32; 2]; 3], Depth) {
    let at = perspective(t, w);
    let colour = std::array::from_fn(|c| weighted(t, at, semantic::COLOR + c));
    let coordinates = |first: Option<usize>| match first {
        Some(s) => [weighted(t, at, s), weighted(t, at, s + 1)],
        None => [0.0; 2],
    };
    // Spelled out: `array::map` was left as a call.
    let coords = [
        coordinates(texcoords[0]),
        coordinates(texcoords[1]),
        coordinates(texcoords[2]),
    ];
    (colour, coords, depth_at(t, at, context))
}

/// The neighbours of a pixel on a triangle: its edge weights, stepped one pixel right or up.
pub(super) struct Around<'a> {
    pub(super) triangle: &'a SetupTriangle,
    pub(super) weights: [i64; 3],
}

impl Neighbours for Around<'_> {
    fn at(&self, neighbour: Neighbour, semantics: [usize; 3]) -> [f32; 3] {
        let t = self.triangle;
        let step = |k: usize| match neighbour {
            Neighbour::Right => t.edges[k].0,
            Neighbour::Up => t.edges[k].1,
        };
        let w = self.weights;
        interpolate_three(
            t,
            [w[0] + step(0), w[1] + step(1), w[2] + step(2)],
            semantics,
        )
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
}
