//! What the rasterizer receives: vertices in clip space, one value per semantic (the geometry
//! stage's output map makes them), three to a triangle.

use shader::program::Vec4;

use crate::regs::{SEMANTICS, semantic};

/// A triangle as primitive assembly hands it to the rasterizer.
pub type Triangle = [OutputVertex; 3];

/// A vertex as the rasterizer sees it: one value per semantic code.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OutputVertex {
    /// Values by semantic code; a semantic the map never assigns reads 1.0.
    pub attributes: [f32; SEMANTICS],
}

impl Default for OutputVertex {
    fn default() -> OutputVertex {
        OutputVertex {
            attributes: [1.0; SEMANTICS],
        }
    }
}

impl OutputVertex {
    /// Position x, y, z, w (clip space).
    pub fn position(&self) -> Vec4 {
        self.vec4(semantic::POSITION)
    }

    /// Colour r, g, b, a.
    pub fn color(&self) -> Vec4 {
        self.vec4(semantic::COLOR)
    }

    /// The normal quaternion.
    pub fn quaternion(&self) -> Vec4 {
        self.vec4(semantic::QUATERNION)
    }

    fn vec4(&self, first: usize) -> Vec4 {
        let a = &self.attributes;
        [a[first], a[first + 1], a[first + 2], a[first + 3]]
    }
}
