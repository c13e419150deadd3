//! Clipping in clip space (docs/gpu-rasterizer-and-framebuffer.md §3): the six frustum planes
//! with the PICA's depth range −w ≤ z ≤ 0, a positive-w plane and the optional user plane
//! (Sutherland-Hodgman; every attribute interpolated linearly at a cut).

use crate::regs::SEMANTICS;

use super::RasterConfig;

/// How far outside a clip plane a vertex still counts as inside (f32 noise on 2D drawn at
/// exactly z = 0 must not clip it).
pub(super) const PLANE_SLACK: f32 = 1e-8;
/// The smallest w kept: the positive-w plane.
const MIN_W: f32 = 1e-5;

/// Clip-space vertex: the attribute vector (position first) with colours prepared.
pub(super) type ClipVertex = [f32; SEMANTICS];

/// A clip plane: the signed distance of a vertex, and how far below zero still counts as in.
type ClipPlane = (fn(&ClipVertex) -> f32, f32);

/// The frustum with the PICA's depth range, then the positive-w plane.
pub(super) const PLANES: [ClipPlane; 7] = [
    (|v| v[3] - v[0], PLANE_SLACK),
    (|v| v[3] + v[0], PLANE_SLACK),
    (|v| v[3] - v[1], PLANE_SLACK),
    (|v| v[3] + v[1], PLANE_SLACK),
    (|v| -v[2], PLANE_SLACK),
    (|v| v[3] + v[2], PLANE_SLACK),
    (|v| v[3] - MIN_W, 0.0),
];

/// The most vertices a clipped triangle has: each plane adds at most one.
pub(super) const MAX_POLYGON: usize = 3 + PLANES.len() + 1;

/// A convex polygon being clipped.
#[derive(Clone, Copy)]
pub(super) struct Polygon {
    pub(super) vertices: [ClipVertex; MAX_POLYGON],
    pub(super) len: usize,
}

impl Polygon {
    pub(super) fn vertices(&self) -> &[ClipVertex] {
        &self.vertices[..self.len]
    }

    /// The polygon clipped against `distance(v) >= -slack` (Sutherland-Hodgman); every
    /// attribute is interpolated linearly at a cut.
    pub(super) fn clip(&self, distance: impl Fn(&ClipVertex) -> f32, slack: f32) -> Polygon {
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
pub(super) fn inside(v: &ClipVertex, config: &RasterConfig) -> bool {
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

pub(super) fn user_distance(c: &[f32; 4], v: &ClipVertex) -> f32 {
    c[0] * v[0] + c[1] * v[1] + c[2] * v[2] + c[3] * v[3]
}
