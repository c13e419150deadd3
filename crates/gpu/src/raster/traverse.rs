//! Traversal (docs/gpu.md, "Rasterization"): the pixels of each band of 8 rows that a set-up
//! triangle covers, in triangle order, each interpolated ([`super::interpolate`]) and handed to
//! the fragment stages ([`fragment::shade`]).

use crate::fragment::{self, Fragment, SAMPLE_EVERY, StageSamples};
use crate::framebuffer::target::{BandPixels, TargetConfig};

use super::interpolate::{Around, Varyings, interpolate};
use super::{ProbedFragment, RasterConfig, SetupTriangle};

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

/// What a fragment is shaded with besides its triangle.
pub(super) struct PixelContext<'a> {
    pub(super) config: &'a RasterConfig,
    pub(super) target: &'a TargetConfig,
    pub(super) depth_max: f32,
    pub(super) probe: Option<(i64, i64)>,
    /// Time the fragment stages of one fragment in [`SAMPLE_EVERY`].
    pub(super) sample_stages: bool,
}

/// Rasterizes the band's triangles into it; returns the fragments covered and the probed ones.
pub(super) fn rasterize_band(
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

/// Interpolates one covered pixel and runs the fragment stages on it.
fn shade_pixel(
    band: &mut Band<'_>,
    t: &SetupTriangle,
    w: [i64; 3],
    (x, row): (u32, u32),
    context: &PixelContext<'_>,
    varyings: &Varyings,
    probed: Option<&mut Vec<ProbedFragment>>,
) {
    let (attributes, depth_fraction, depth) = interpolate(t, w, (x, row), context, varyings);
    let fragment = Fragment {
        attributes: &attributes,
        depth,
        depth_fraction,
        pixel: (x, row),
        neighbours: Around {
            triangle: t,
            weights: w,
        },
    };
    let config = &context.config.fragment;
    let samples = if context.sample_stages {
        band.shaded = band.shaded.wrapping_add(1);
        band.shaded
            .is_multiple_of(SAMPLE_EVERY)
            .then_some(&mut band.samples)
    } else {
        None
    };
    let (combined, passed) =
        fragment::shade(config, &fragment, &mut band.pixels, context.target, samples);
    if let Some(probed) = probed {
        probed.push(ProbedFragment {
            attributes,
            depth,
            combined,
            passed,
        });
    }
}
