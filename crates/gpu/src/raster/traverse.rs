//! Traversal (docs/gpu.md, "Rasterization"): the pixels of each band of 8 rows that a set-up
//! triangle covers, in triangle order, each interpolated ([`super::interpolate`]) and handed to
//! the fragment stages ([`fragment::shade`]).

use crate::fragment::{self, Fragment, FragmentPath, SAMPLE_EVERY, StageSamples};
use crate::framebuffer::color::unorm8;
use crate::framebuffer::target::{BandPixels, TargetConfig};

use super::interpolate::{Around, Varyings, interpolate, interpolate_colour};
use super::{PixelContext, ProbedFragment, SetupTriangle};

/// Each band's triangles, in order (memory row = top - y): the indices into `triangles` of
/// those that reach the band.
pub(super) fn bin(triangles: &[SetupTriangle], target: &TargetConfig) -> Vec<Vec<u32>> {
    let bands = target.rows() as usize / 8;
    let top = target.height as i64 - 1;
    let mut bins = vec![Vec::new(); if target.width == 0 { 0 } else { bands }];
    if !bins.is_empty() {
        for (k, t) in triangles.iter().enumerate() {
            let first = ((top - t.max.1) / 8) as usize;
            let last = (((top - t.min.1) / 8) as usize).min(bands - 1);
            for bin in &mut bins[first..=last] {
                bin.push(k as u32);
            }
        }
    }
    bins
}

/// One band's view of the target: the band's rows of each surface.
pub(super) struct Band<'a> {
    /// The band's rows of the target.
    pub(super) pixels: BandPixels<'a>,
    /// The batch's triangles that reach the band, in order.
    pub(super) bin: Vec<u32>,
    /// The fragment stages' sampled times (when sampling).
    pub(super) samples: StageSamples,
    /// Fragments shaded, for choosing the sampled ones.
    pub(super) shaded: u32,
}

/// A covered pixel: its triangle, the edge weights at its centre, and (x, memory row).
#[derive(Clone, Copy)]
struct Covered<'t> {
    triangle: &'t SetupTriangle,
    weights: [i64; 3],
    pixel: (u32, u32),
}

/// How the covered pixels of a band are shaded: one implementation per [`FragmentPath`], so the
/// pixel loop is compiled for each path.
trait PixelPath {
    /// Shades the covered pixel `at`.
    fn shade(band: &mut Band<'_>, at: Covered<'_>, context: &PixelContext<'_>);
}

/// [`FragmentPath::General`]: every semantic the stages read, then [`fragment::shade`].
struct General;

impl PixelPath for General {
    #[inline(always)]
    fn shade(band: &mut Band<'_>, at: Covered<'_>, context: &PixelContext<'_>) {
        shade_pixel(band, at, context, &context.config.varyings, false, None);
    }
}

/// The specialised paths ([`FragmentPath::VertexColour`] and [`FragmentPath::Textured`] with
/// `COMBINE`, [`FragmentPath::PrimaryColour`] without): the colour, the bound units'
/// coordinates (none on the vertex-colour paths) and the depth, then
/// [`fragment::shade_plain`].
struct Plain<const COMBINE: bool>;

impl<const COMBINE: bool> PixelPath for Plain<COMBINE> {
    #[inline(always)]
    fn shade(band: &mut Band<'_>, at: Covered<'_>, context: &PixelContext<'_>) {
        let (colour, coords, depth) =
            interpolate_colour(at.triangle, at.weights, context, &context.texcoords);
        let fragment = fragment::PlainFragment {
            primary: [
                unorm8(colour[0]),
                unorm8(colour[1]),
                unorm8(colour[2]),
                unorm8(colour[3]),
            ],
            coords,
            depth: depth.value,
            pixel: at.pixel,
        };
        fragment::shade_plain::<COMBINE>(
            &context.config.fragment,
            &context.samplers,
            &fragment,
            &mut band.pixels,
            context.target,
        );
    }
}

/// Rasterizes the band's triangles into it on the batch's fragment path; returns the fragments
/// covered and the probed ones.
pub(super) fn rasterize_band(
    band: &mut Band<'_>,
    triangles: &[SetupTriangle],
    context: &PixelContext<'_>,
) -> (u64, Vec<ProbedFragment>) {
    match context.path {
        FragmentPath::General => rasterize_band_on::<General>(band, triangles, context),
        FragmentPath::VertexColour | FragmentPath::Textured => {
            rasterize_band_on::<Plain<true>>(band, triangles, context)
        }
        FragmentPath::PrimaryColour => rasterize_band_on::<Plain<false>>(band, triangles, context),
    }
}

/// [`rasterize_band`] on path `P`. A probed pixel takes the general path, which records every
/// semantic; so does a fragment sampled for the stage times, where each stage is timed (the
/// same pixel either way).
fn rasterize_band_on<P: PixelPath>(
    band: &mut Band<'_>,
    triangles: &[SetupTriangle],
    context: &PixelContext<'_>,
) -> (u64, Vec<ProbedFragment>) {
    let mut fragments = 0;
    let mut probed = Vec::new();
    let target = context.target;
    let top = target.height as i64 - 1;
    // Rasterizer rows of this band: y = top - memory row.
    let y_high = top - band.pixels.first_row as i64;
    let y_low = (top - (band.pixels.first_row as i64 + 7)).max(0);
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
                let at = Covered {
                    triangle: t,
                    weights: current,
                    pixel: (x as u32, row),
                };
                let sampled = band.sampled(context);
                if context.probe == Some((x, y)) {
                    let all = &Varyings::ALL;
                    shade_pixel(band, at, context, all, sampled, Some(&mut probed));
                } else if sampled {
                    let varyings = &context.config.varyings;
                    shade_pixel(band, at, context, varyings, true, None);
                } else {
                    P::shade(band, at, context);
                }
            }
        }
    }
    band.bin = bin;
    (fragments, probed)
}

impl Band<'_> {
    /// Whether the next fragment has its stages timed: one in [`SAMPLE_EVERY`] when sampling.
    #[inline(always)]
    fn sampled(&mut self, context: &PixelContext<'_>) -> bool {
        context.sample_stages && {
            self.shaded = self.shaded.wrapping_add(1);
            self.shaded.is_multiple_of(SAMPLE_EVERY)
        }
    }
}

/// Interpolates `varyings` at one covered pixel and runs the fragment stages on it, timing
/// them when `sampled`.
fn shade_pixel(
    band: &mut Band<'_>,
    at: Covered<'_>,
    context: &PixelContext<'_>,
    varyings: &Varyings,
    sampled: bool,
    probed: Option<&mut Vec<ProbedFragment>>,
) {
    let (t, w) = (at.triangle, at.weights);
    let (attributes, depth_fraction, depth) = interpolate(t, w, at.pixel, context, varyings);
    let fragment = Fragment {
        attributes: &attributes,
        depth,
        depth_fraction,
        pixel: at.pixel,
        neighbours: Around {
            triangle: t,
            weights: w,
        },
    };
    let config = &context.config.fragment;
    let samples = sampled.then_some(&mut band.samples);
    let (combined, passed) = fragment::shade(
        config,
        &fragment,
        &context.samplers,
        &mut band.pixels,
        context.target,
        samples,
    );
    if let Some(probed) = probed {
        probed.push(ProbedFragment {
            attributes,
            depth,
            combined,
            passed,
        });
    }
}
