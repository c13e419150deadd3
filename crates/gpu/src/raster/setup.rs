//! Triangle set-up (docs/gpu-rasterizer-and-framebuffer.md §3): each triangle clipped
//! ([`super::clip`]), divided by w, mapped by the viewport, snapped to 12.4 fixed point and
//! culled, with the edge functions, fill-rule biases and pixel bounds traversal uses.

use crate::framebuffer::target::TargetConfig;
use crate::regs::{SEMANTICS, semantic};

use super::clip::{ClipVertex, MAX_POLYGON, PLANE_SLACK, PLANES, Polygon, inside, user_distance};
use super::{RasterConfig, Triangle};

/// Subpixel bits of the snapped coordinates.
const SUBPIXEL: i64 = 16;

/// A vertex after the perspective divide: snapped screen position, 1/w, z/w and every
/// attribute divided by w.
#[derive(Clone, Copy, Debug)]
pub(super) struct ScreenVertex {
    x: i64,
    y: i64,
    pub(super) inv_w: f32,
    pub(super) z: f32,
    pub(super) over_w: [f32; SEMANTICS],
}

/// A triangle ready to rasterize.
#[derive(Clone, Copy, Debug)]
pub struct SetupTriangle {
    pub(super) v: [ScreenVertex; 3],
    /// Edge i (opposite vertex i) at pixel (x, y)'s centre: `x · e.0 + y · e.1 + e.2`.
    pub(super) edges: [(i64, i64, i64); 3],
    /// Edge i's bias: -1 when samples on it are not covered.
    pub(super) bias: [i64; 3],
    /// Pixel bounds (inclusive), clamped to the target and scissor.
    pub(super) min: (i64, i64),
    pub(super) max: (i64, i64),
}

/// Sets up `triangle`: clipped, divided by w, snapped and culled; the triangles it makes are
/// appended to `out`. Returns how many.
pub fn setup(
    triangle: &Triangle,
    config: &RasterConfig,
    target: &TargetConfig,
    out: &mut Vec<SetupTriangle>,
) -> usize {
    if triangle.iter().all(|v| inside(&v.attributes, config)) {
        // Placed and culled on the positions alone; only a kept triangle's attributes are
        // prepared and divided by w.
        let placed = std::array::from_fn(|k| place(&triangle[k].attributes, config));
        let Some((mut kept, swapped)) = triangle_setup(placed, config, target) else {
            return 0;
        };
        let mut vertices = attributes(triangle);
        prepare(&mut vertices);
        if swapped {
            vertices.swap(1, 2);
        }
        for (screen, vertex) in kept.v.iter_mut().zip(&vertices) {
            divide(screen, vertex);
        }
        out.push(kept);
        return 1;
    }
    let mut vertices = attributes(triangle);
    prepare(&mut vertices);
    let before = out.len();
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
        out.extend(triangle_setup([first, previous, next], config, target).map(|(t, _)| t));
        previous = next;
    }
    out.len() - before
}

/// The vertices' attributes, copied for [`prepare`] (from references: a triangle's vertices
/// are not copied whole).
fn attributes(triangle: &Triangle) -> [ClipVertex; 3] {
    std::array::from_fn(|k| triangle[k].attributes)
}

/// What the hardware does to a triangle's attributes before interpolating (and clipping):
/// |colour| saturated at 1, and the second and third quaternions negated where they point away
/// from the first's (q and -q are the same rotation).
fn prepare(vertices: &mut [ClipVertex; 3]) {
    for v in vertices.iter_mut() {
        for c in &mut v[semantic::COLOR..semantic::COLOR + 4] {
            *c = c.abs().min(1.0);
        }
    }
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
}

/// Divides by w, maps by the viewport and snaps to 12.4 fixed point (half away from zero),
/// with every attribute divided by w.
fn to_screen(v: &ClipVertex, config: &RasterConfig) -> ScreenVertex {
    let mut screen = place(v, config);
    divide(&mut screen, v);
    screen
}

/// The screen position, 1/w and z/w of a vertex; its attributes are left at 0 ([`divide`]).
fn place(v: &ClipVertex, config: &RasterConfig) -> ScreenVertex {
    let inv_w = 1.0 / v[3];
    let x = (v[0] * inv_w + 1.0) * config.half_width + config.origin.0;
    let y = (v[1] * inv_w + 1.0) * config.half_height + config.origin.1;
    let snap = |value: f32| round_half_away(value * SUBPIXEL as f32);
    ScreenVertex {
        x: snap(x),
        y: snap(y),
        inv_w,
        z: v[2] * inv_w,
        over_w: [0.0; SEMANTICS],
    }
}

/// Every attribute of `v` divided by w (times the placed vertex's 1/w).
fn divide(screen: &mut ScreenVertex, v: &ClipVertex) {
    // A plain loop: the array `map` closure is not always inlined here.
    for (out, &a) in screen.over_w.iter_mut().zip(v) {
        *out = a * screen.inv_w;
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

/// The set-up triangle of three placed vertices, or `None` when it is culled or covers no
/// pixel; and whether its second and third vertices were swapped (to counter-clockwise order).
fn triangle_setup(
    mut v: [ScreenVertex; 3],
    config: &RasterConfig,
    target: &TargetConfig,
) -> Option<(SetupTriangle, bool)> {
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
    let swapped = signed < 0;
    if swapped {
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
    Some((
        SetupTriangle {
            v,
            edges,
            bias,
            min,
            max,
        },
        swapped,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framebuffer::color::unorm8;

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
