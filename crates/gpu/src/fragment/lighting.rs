//! Fragment lighting (docs/gpu-lighting.md): up to eight lights evaluated per fragment from
//! the interpolated normal quaternion and view vector, through the lookup tables, into the
//! primary (diffuse) and secondary (specular) colours the combiners read.
//!
//! The tables are written through a FIFO (LIGHTING_LUT_INDEX, LIGHTING_LUT_DATA0-7) into
//! [`LightingLuts`], which the GPU keeps beside its register file. [`Lighting::configure`]
//! resolves the registers once per batch: which lights, which tables each term reads and with
//! which input, scale and index mode, so the per-fragment work ([`Lighting::shade`]) is
//! arithmetic only.

use crate::framebuffer::color::{Rgba8, unorm8};
use crate::regs::{RegisterFile, bits, id};
use shader::numbers::{FLOAT16, FLOAT20, signed_fixed};

/// Entries per table.
pub const LUT_ENTRIES: usize = 256;

/// Table slots addressed by LIGHTING_LUT_INDEX bits 8-12: D0 0, D1 1, FR 3, RB 4, RG 5, RR 6,
/// spotlight 8-15 (one per light), distance attenuation 16-23.
pub const LUT_TABLES: usize = 24;

/// Table slots by name.
#[allow(missing_docs)]
pub mod table {
    pub const D0: usize = 0;
    pub const D1: usize = 1;
    pub const FR: usize = 3;
    pub const RB: usize = 4;
    pub const RG: usize = 5;
    pub const RR: usize = 6;
    pub const SP: usize = 8;
    pub const DA: usize = 16;
}

/// The lighting lookup tables: 24-bit entries, value in bits 0-11 (fixed 0.12) and the
/// difference to the next entry in bits 12-23 (sign and 11-bit magnitude).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LightingLuts {
    /// The entries of each table slot.
    pub tables: [[u32; LUT_ENTRIES]; LUT_TABLES],
}

impl Default for LightingLuts {
    fn default() -> LightingLuts {
        LightingLuts {
            tables: [[0; LUT_ENTRIES]; LUT_TABLES],
        }
    }
}

impl LightingLuts {
    /// A write to LIGHTING_LUT_DATA0-7: the entry at LIGHTING_LUT_INDEX, whose index then
    /// advances (wrapping within the table). Writes to the unused slots (2, 7, 24-31) are
    /// dropped but still advance the index.
    pub fn push(&mut self, regs: &mut RegisterFile, value: u32) {
        let slot = bits(regs.get(id::LIGHTING_LUT_INDEX), 8, 5) as usize;
        let index = regs.take_index(id::LIGHTING_LUT_INDEX, 8) as usize;
        if slot < LUT_TABLES && slot != 2 && slot != 7 {
            self.tables[slot][index] = value & 0xFF_FFFF;
        }
    }

    /// Table `slot` at `input`: with `signed` the input in [−1, 1] indexes entries by its
    /// two's-complement index ⌊128x⌋, else [0, 1] by ⌊256x⌋; the fraction interpolates with
    /// the entry's difference field.
    pub fn lookup(&self, slot: usize, input: f32, signed: bool) -> f32 {
        // Truncation (with one down for negative fractions) is the floor here: the inputs are
        // clamped, and `f32::floor` is a library call on the baseline x86-64 target.
        let (index, fraction) = if signed {
            let scaled = (input * 128.0).clamp(-128.0, 127.999_99);
            let truncated = scaled as i32;
            let whole = truncated - i32::from((truncated as f32) > scaled);
            ((whole & 0xFF) as usize, scaled - whole as f32)
        } else {
            let scaled = (input * 256.0).clamp(0.0, 256.0);
            let whole = (scaled as usize).min(255);
            (whole, scaled - whole as f32)
        };
        lut_value(self.tables[slot][index], fraction)
    }
}

/// The entry holding `value` and `difference` (to the next entry), each truncated to its
/// field and saturated, as citro3d's table generator stores them.
pub fn lut_entry(value: f32, difference: f32) -> u32 {
    let value = (value * 4096.0).clamp(0.0, 4095.0) as u32;
    let magnitude = (difference.abs() * 2048.0).min(2047.0) as u32;
    let sign = u32::from(difference < 0.0) << 11;
    value | (sign | magnitude) << 12
}

/// The table of `f` sampled as the lookup reads it: unsigned, entry i holds f(i/256) with the
/// step to f((i+1)/256); signed, the entry of two's-complement index i (−128..127) holds
/// f(i/128).
pub fn lut_from_fn(f: impl Fn(f32) -> f32, signed: bool) -> [u32; LUT_ENTRIES] {
    let mut table = [0; LUT_ENTRIES];
    let (range, step) = if signed {
        (-128..128, 128.0)
    } else {
        (0..256, 256.0)
    };
    for i in range {
        let (here, next) = (f(i as f32 / step), f((i + 1) as f32 / step));
        table[(i & 0xFF) as usize] = lut_entry(here, next - here);
    }
    table
}

/// An entry's value plus `fraction` of its difference.
fn lut_value(entry: u32, fraction: f32) -> f32 {
    let value = bits(entry, 0, 12) as f32 / 4096.0;
    let magnitude = bits(entry, 12, 11) as f32 / 2048.0;
    let difference = if entry & (1 << 23) != 0 {
        -magnitude
    } else {
        magnitude
    };
    value + difference * fraction
}

/// A lookup-table input (LIGHTING_LUTINPUT_SELECT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LutInput {
    /// Normal · half vector.
    NH,
    /// View · half vector.
    VH,
    /// Normal · view.
    NV,
    /// Light · normal.
    LN,
    /// −light · spot direction.
    SpotDirection,
    /// cos φ: the half vector projected on the tangent plane, · tangent.
    CosPhi,
}

impl LutInput {
    /// The input of a 3-bit selector; 6 and 7 are undocumented and read N·H
    /// (docs/gpu-lighting.md).
    pub fn from_code(code: u32) -> LutInput {
        match code {
            1 => LutInput::VH,
            2 => LutInput::NV,
            3 => LutInput::LN,
            4 => LutInput::SpotDirection,
            5 => LutInput::CosPhi,
            _ => LutInput::NH,
        }
    }
}

/// A table as a term reads it: slot, input, index mode, output scale.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Term {
    slot: usize,
    input: LutInput,
    signed: bool,
    scale: f32,
}

/// The scale of a 3-bit LIGHTING_LUTINPUT_SCALE field; 4 and 5 are undocumented and read 1×.
fn lut_scale(code: u32) -> f32 {
    match code {
        1 => 2.0,
        2 => 4.0,
        3 => 8.0,
        6 => 0.25,
        7 => 0.5,
        _ => 1.0,
    }
}

/// The per-light tables: how a term's LUT is found in the input/abs/scale registers (nibble
/// position) and in the table slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lut {
    D0,
    D1,
    Sp,
    Fr,
    Rb,
    Rg,
    Rr,
}

impl Lut {
    /// The nibble of LIGHTING_LUTINPUT_ABS/SELECT/SCALE.
    fn nibble(self) -> u32 {
        self as u32
    }

    /// LIGHTING_CONFIG1's disable bit for the table in `slot` (the spotlights' are per light,
    /// bits 8-15).
    fn disable_bit(self, slot: usize) -> u32 {
        match self {
            Lut::D0 => 16,
            Lut::D1 => 17,
            Lut::Sp => 8 + (slot - table::SP) as u32,
            Lut::Fr => 19,
            Lut::Rb => 20,
            Lut::Rg => 21,
            Lut::Rr => 22,
        }
    }

    /// Whether light environment configuration `config` (LIGHTING_CONFIG0 bits 4-7) has it.
    fn available(self, config: u32) -> bool {
        use Lut::*;
        let tables: &[Lut] = match config {
            0 => &[D0, Rr, Sp],
            1 => &[Fr, Rr, Sp],
            2 => &[D0, D1, Rr],
            3 => &[D0, D1, Fr],
            4 => &[D0, D1, Rr, Rg, Rb, Sp],
            5 => &[D0, Rr, Rg, Rb, Fr, Sp],
            6 => &[D0, D1, Rr, Fr, Sp],
            // 8, and the undocumented codes: everything.
            _ => &[D0, D1, Sp, Fr, Rb, Rg, Rr],
        };
        tables.contains(&self)
    }
}

/// One light as the registers describe it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Light {
    /// Which of the eight lights (its registers and its spotlight and attenuation tables).
    pub index: usize,
    /// Specular colour 0, specular colour 1, diffuse and ambient (0-1).
    pub specular0: [f32; 3],
    /// Specular colour 1.
    pub specular1: [f32; 3],
    /// Diffuse colour.
    pub diffuse: [f32; 3],
    /// Ambient colour.
    pub ambient: [f32; 3],
    /// Position (view space), or the direction towards the light when directional.
    pub position: [f32; 3],
    /// The spot direction as stored: the negated direction the spotlight points.
    pub spot_direction: [f32; 3],
    /// Directional (not positional).
    pub directional: bool,
    /// Diffuse from both sides (|L·N| rather than max(L·N, 0)).
    pub two_sided: bool,
    /// Geometric factors on specular terms 0 and 1.
    pub geometric: [bool; 2],
    /// Distance attenuation: bias and scale of the table's input.
    pub attenuation: Option<(f32, f32)>,
    /// Whether the shadow attenuates this light (LIGHTING_CONFIG1 bit `index` clear).
    pub shadowed: bool,
    /// The spotlight's term.
    spot: Option<Term>,
    /// A directional light's normalised direction (the same for every fragment).
    direction: Option<[f32; 3]>,
}

/// A colour register of the lighting block: B bits 0-7, G 10-17, R 20-27, as 0-1.
fn light_color(word: u32) -> [f32; 3] {
    [bits(word, 20, 8), bits(word, 10, 8), bits(word, 0, 8)].map(|c| c as f32 / 255.0)
}

/// Fragment lighting configured for a batch.
#[derive(Clone, Debug, PartialEq)]
pub struct Lighting {
    /// The global ambient colour (emission plus material ambient × scene ambient).
    pub ambient: [f32; 3],
    /// The active lights, in slot order.
    pub lights: Vec<Light>,
    luts: Box<LightingLuts>,
    d0: Option<Term>,
    d1: Option<Term>,
    fresnel: Option<Term>,
    reflection: [Option<Term>; 3],
    /// Whether the configuration has green and blue reflection tables of their own.
    separate_reflection: bool,
    /// Which alphas the Fresnel term writes: bit 0 primary, bit 1 secondary.
    fresnel_alpha: u32,
    clamp_highlights: bool,
    /// Bump mapping: the texture unit and whether it holds normals (else tangents).
    pub bump: Option<(usize, bool)>,
    /// Whether a table reads cos φ (only then is the tangent needed).
    reads_cos_phi: bool,
    /// Reconstruct a normal map's z from x and y.
    renormalize: bool,
    /// Shadow attenuation, when on (docs/gpu-shadows.md, "Attenuation").
    pub shadow: Option<ShadowAttenuation>,
}

/// How a shadow lookup attenuates fragment lighting (LIGHTING_CONFIG0); the default
/// attenuates nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShadowAttenuation {
    /// The texture unit whose colour is the shadow (bits 24-25).
    pub unit: usize,
    /// Use 1 − shadow (bit 18).
    pub invert: bool,
    /// Attenuate the lights' diffuse terms (bit 16).
    pub primary: bool,
    /// Attenuate the lights' specular terms (bit 17).
    pub secondary: bool,
    /// Attenuate the alpha the Fresnel term writes (bit 19).
    pub alpha: bool,
}

/// Each lighting block's first register: light i at this + 0x10·i.
const LIGHT_BASE: u16 = 0x140;

impl Lighting {
    /// The lighting the registers describe, or `None` when it is off (LIGHTING_ENABLE
    /// bit 0 clear).
    pub fn configure(regs: &RegisterFile, luts: &LightingLuts) -> Option<Lighting> {
        if regs.get(id::LIGHTING_ENABLE) & 1 == 0 {
            return None;
        }
        let config0 = regs.get(id::LIGHTING_CONFIG0);
        let config1 = regs.get(id::LIGHTING_CONFIG1);
        let abs = regs.get(id::LIGHTING_LUTINPUT_ABS);
        let select = regs.get(id::LIGHTING_LUTINPUT_SELECT);
        let scale = regs.get(id::LIGHTING_LUTINPUT_SCALE);
        let environment = bits(config0, 4, 4);
        // A table is read when the configuration has it and its disable bit is clear (the
        // spotlight's bit is per light).
        let term = |lut: Lut, slot: usize| -> Option<Term> {
            let on = lut.available(environment) && config1 & (1 << lut.disable_bit(slot)) == 0;
            on.then(|| Term {
                slot,
                input: LutInput::from_code(bits(select, 4 * lut.nibble(), 3)),
                // The bit set means the absolute value is not taken: a signed input.
                signed: abs & (1 << (4 * lut.nibble() + 1)) != 0,
                scale: lut_scale(bits(scale, 4 * lut.nibble(), 3)),
            })
        };
        let permutation = regs.get(id::LIGHTING_LIGHT_PERMUTATION);
        let count = bits(regs.get(id::LIGHTING_NUM_LIGHTS), 0, 3) as usize + 1;
        let lights: Vec<Light> = (0..count)
            .map(|slot| {
                let index = bits(permutation, 4 * slot as u32, 3) as usize;
                let base = LIGHT_BASE + 0x10 * index as u16;
                let word = |offset: u16| regs.get(base + offset);
                let config = word(9);
                let spot = term(Lut::Sp, table::SP + index);
                let directional = config & 1 != 0;
                let position = [
                    FLOAT16.to_f32(word(4)),
                    FLOAT16.to_f32(word(4) >> 16),
                    FLOAT16.to_f32(word(5)),
                ];
                let attenuation = (config1 & (1 << (24 + index)) == 0 && !directional)
                    .then(|| (FLOAT20.to_f32(word(0xA)), FLOAT20.to_f32(word(0xB))));
                Light {
                    index,
                    specular0: light_color(word(0)),
                    specular1: light_color(word(1)),
                    diffuse: light_color(word(2)),
                    ambient: light_color(word(3)),
                    position,
                    direction: directional.then(|| normalize3(position)),
                    spot_direction: [
                        signed_fixed(word(6), 2, 11),
                        signed_fixed(word(6) >> 16, 2, 11),
                        signed_fixed(word(7), 2, 11),
                    ],
                    directional,
                    two_sided: config & 2 != 0,
                    geometric: [config & 4 != 0, config & 8 != 0],
                    attenuation,
                    shadowed: config1 & (1 << index) == 0,
                    spot,
                }
            })
            .collect();
        let bump_mode = bits(config0, 28, 2);
        let d0 = term(Lut::D0, table::D0);
        let d1 = term(Lut::D1, table::D1);
        let fresnel = term(Lut::Fr, table::FR);
        let reflection = [
            term(Lut::Rr, table::RR),
            term(Lut::Rg, table::RG),
            term(Lut::Rb, table::RB),
        ];
        let reads_cos_phi = [d0, d1, fresnel]
            .iter()
            .chain(&reflection)
            .chain(lights.iter().map(|light| &light.spot))
            .flatten()
            .any(|term| term.input == LutInput::CosPhi);
        Some(Lighting {
            reads_cos_phi,
            ambient: light_color(regs.get(id::LIGHTING_AMBIENT)),
            lights,
            luts: Box::new(luts.clone()),
            d0,
            d1,
            fresnel,
            reflection,
            separate_reflection: Lut::Rg.available(environment),
            fresnel_alpha: bits(config0, 2, 2),
            clamp_highlights: config0 & (1 << 27) != 0,
            bump: matches!(bump_mode, 1 | 2)
                .then(|| (bits(config0, 22, 2).min(2) as usize, bump_mode == 1)),
            renormalize: config0 & (1 << 30) == 0,
            shadow: (config0 & 1 != 0).then(|| ShadowAttenuation {
                unit: bits(config0, 24, 2) as usize,
                invert: config0 & (1 << 18) != 0,
                primary: config0 & (1 << 16) != 0,
                secondary: config0 & (1 << 17) != 0,
                alpha: config0 & (1 << 19) != 0,
            }),
        })
    }

    /// A term's table at the fragment's inputs, scaled.
    fn read(&self, term: &Term, inputs: &Inputs) -> f32 {
        let x = match term.input {
            LutInput::NH => inputs.nh,
            LutInput::VH => inputs.vh,
            LutInput::NV => inputs.nv,
            LutInput::LN => inputs.ln,
            LutInput::SpotDirection => inputs.spot,
            LutInput::CosPhi => inputs.cos_phi,
        };
        let x = if term.signed { x } else { x.abs() };
        self.luts.lookup(term.slot, x, term.signed) * term.scale
    }

    /// The primary and secondary colours of a fragment with interpolated `quaternion` and
    /// `view` vector, and the bump unit's texel when bump mapping is on. Kept out of line, so
    /// that a sampling profile shows lighting as its own stage (docs/gpu.md, "Speed").
    #[inline(never)]
    pub fn shade(
        &self,
        quaternion: [f32; 4],
        view: [f32; 3],
        bump: Rgba8,
        shadow: Rgba8,
    ) -> (Rgba8, Rgba8) {
        // The shadow per channel in [0, 1] (inverted on request); without attenuation every
        // bit of the default is clear, so it is never read, and not worked out (four
        // divisions per fragment).
        let attenuation = self.shadow.unwrap_or_default();
        let shadow = match self.shadow {
            Some(ShadowAttenuation { invert, .. }) => shadow.map(|c| {
                let x = c as f32 / 255.0;
                if invert { 1.0 - x } else { x }
            }),
            None => [1.0; 4],
        };
        let q = normalize4(quaternion);
        let (mut surface_normal, mut surface_tangent) = ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0]);
        if let Some((_, normal_map)) = self.bump {
            let mut perturbation = [0, 1, 2].map(|c| bump[c] as f32 / 127.5 - 1.0);
            if normal_map {
                if self.renormalize {
                    let [x, y, _] = perturbation;
                    perturbation[2] = (1.0 - x * x - y * y).max(0.0).sqrt();
                }
                surface_normal = perturbation;
            } else {
                surface_tangent = perturbation;
            }
        }
        let normal = rotate(q, surface_normal);
        let tangent = if self.reads_cos_phi {
            rotate(q, surface_tangent)
        } else {
            [1.0, 0.0, 0.0]
        };
        let v = normalize3(view);
        let mut primary = self.ambient;
        let mut secondary = [0.0f32; 3];
        let mut alpha = 1.0;
        for (k, light) in self.lights.iter().enumerate() {
            let to_light = if light.directional {
                light.position
            } else {
                add(light.position, view)
            };
            let l = light.direction.unwrap_or_else(|| normalize3(to_light));
            let h = normalize3(add(l, v));
            let ln = dot(l, normal);
            let nh = dot(normal, h);
            let cos_phi = if self.reads_cos_phi {
                dot(normalize3(sub(h, scale3(normal, nh))), tangent)
            } else {
                0.0
            };
            let inputs = Inputs {
                nh,
                vh: dot(v, h),
                nv: dot(normal, v),
                ln,
                spot: dot(l, light.spot_direction),
                cos_phi,
            };
            let distance = light.attenuation.map_or(1.0, |(bias, scale)| {
                let distance = length3(to_light);
                let input = (bias + scale * distance).clamp(0.0, 1.0);
                self.luts.lookup(table::DA + light.index, input, false)
            });
            let spot = light.spot.map_or(1.0, |term| self.read(&term, &inputs));
            let factor = distance * spot;
            let diffuse_dot = if light.two_sided {
                ln.abs()
            } else {
                ln.max(0.0)
            };
            // The shadow attenuates a light's diffuse and specular terms, not its ambient.
            let shadow_on = |on: bool, c: usize| {
                if on && light.shadowed { shadow[c] } else { 1.0 }
            };
            for (c, sum) in primary.iter_mut().enumerate() {
                let diffuse = light.diffuse[c] * diffuse_dot * shadow_on(attenuation.primary, c);
                *sum += factor * (diffuse + light.ambient[c]);
            }
            if self.clamp_highlights && ln <= 0.0 {
                continue;
            }
            let geometric = |on: bool| {
                if !on {
                    return 1.0;
                }
                let half = add(l, v);
                let squared = dot(half, half);
                if squared == 0.0 {
                    0.0
                } else {
                    (ln.max(0.0) / squared).min(1.0)
                }
            };
            let d0 = self.d0.map_or(1.0, |t| self.read(&t, &inputs));
            let d1 = self.d1.map_or(1.0, |t| self.read(&t, &inputs));
            let red = self.reflection[0].map_or(1.0, |t| self.read(&t, &inputs));
            // Green and blue reflection take red's where the configuration lacks them.
            let reflect = |k: usize| {
                if self.separate_reflection {
                    self.reflection[k].map_or(1.0, |t| self.read(&t, &inputs))
                } else {
                    red
                }
            };
            let reflection = [red, reflect(1), reflect(2)];
            let (g0, g1) = (geometric(light.geometric[0]), geometric(light.geometric[1]));
            for (c, sum) in secondary.iter_mut().enumerate() {
                *sum += factor
                    * shadow_on(attenuation.secondary, c)
                    * (light.specular0[c] * d0 * g0 + light.specular1[c] * d1 * g1 * reflection[c]);
            }
            if k + 1 == self.lights.len()
                && let Some(term) = self.fresnel
            {
                alpha = self.read(&term, &inputs);
            }
        }
        if attenuation.alpha {
            alpha *= shadow[3];
        }
        let alpha8 = color8(alpha);
        let pick = |bit: u32| {
            if self.fresnel_alpha & bit != 0 {
                alpha8
            } else {
                255
            }
        };
        (
            [
                color8(primary[0]),
                color8(primary[1]),
                color8(primary[2]),
                pick(1),
            ],
            [
                color8(secondary[0]),
                color8(secondary[1]),
                color8(secondary[2]),
                pick(2),
            ],
        )
    }
}

/// The dot products a fragment's tables can read for one light.
struct Inputs {
    nh: f32,
    vh: f32,
    nv: f32,
    ln: f32,
    spot: f32,
    cos_phi: f32,
}

fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn add(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn scale3(a: [f32; 3], s: f32) -> [f32; 3] {
    [a[0] * s, a[1] * s, a[2] * s]
}

fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn length3(a: [f32; 3]) -> f32 {
    dot(a, a).sqrt()
}

/// `a` scaled to length 1; the zero vector stays zero.
fn normalize3(a: [f32; 3]) -> [f32; 3] {
    let length = length3(a);
    if length > 0.0 {
        scale3(a, 1.0 / length)
    } else {
        [0.0; 3]
    }
}

/// The quaternion scaled to length 1; the zero quaternion becomes the identity.
fn normalize4(q: [f32; 4]) -> [f32; 4] {
    let length = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).sqrt();
    if length > 0.0 && length.is_finite() {
        [q[0] / length, q[1] / length, q[2] / length, q[3] / length]
    } else {
        [0.0, 0.0, 0.0, 1.0]
    }
}

/// A lighting sum (clamped to [0, 1]) as the 8-bit colour the combiners read: rounded to
/// nearest (**choice**, docs/gpu-agreement.md: the reference emulator truncates, which puts
/// lit pixels 1 lower about half the time; nothing public says which the hardware does). The
/// one place to change it.
fn color8(value: f32) -> u8 {
    unorm8(value)
}

/// `v` rotated by the unit quaternion (x, y, z, w): v + 2 q⃗ × (q⃗ × v + w v).
pub fn rotate(q: [f32; 4], v: [f32; 3]) -> [f32; 3] {
    let axis = [q[0], q[1], q[2]];
    let inner = add(cross(axis, v), scale3(v, q[3]));
    add(v, scale3(cross(axis, inner), 2.0))
}
