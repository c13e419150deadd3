//! Primitive assembly (docs/gpu.md, "Primitive assembly"): vertices in, triangles out, for the
//! four topologies of PRIMITIVE_CONFIG. The assembler keeps two vertices; a strip replaces them
//! alternately (so every triangle keeps the first one's winding), a fan keeps the first one.
//! RESTART_PRIMITIVE empties it. The geometry shader's winding flag swaps the first two
//! vertices of the next triangle of a list or of the geometry topology.

use crate::raster::OutputVertex;

/// How vertices form triangles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    /// Every three vertices.
    List,
    /// Each vertex with the two before it.
    Strip,
    /// Each vertex with the one before it and the first.
    Fan,
    /// Every three vertices, as a geometry shader emits them (the winding flag applies).
    Geometry,
}

impl Topology {
    /// The topology of PRIMITIVE_CONFIG bits 8-9.
    pub const fn from_code(code: u32) -> Topology {
        match code & 3 {
            0 => Topology::List,
            1 => Topology::Strip,
            2 => Topology::Fan,
            _ => Topology::Geometry,
        }
    }

    /// Its code.
    pub const fn code(self) -> u32 {
        self as u32
    }
}

/// The assembler's state, kept across draws (strips continue until restarted, as on the
/// hardware).
#[derive(Clone, Debug)]
pub struct PrimitiveAssembler {
    /// The topology.
    pub topology: Topology,
    buffer: [OutputVertex; 2],
    filled: usize,
    /// The strip's next replaced slot.
    strip_slot: usize,
    winding: bool,
}

impl PrimitiveAssembler {
    /// An empty assembler.
    pub fn new(topology: Topology) -> PrimitiveAssembler {
        PrimitiveAssembler {
            topology,
            buffer: [OutputVertex::default(); 2],
            filled: 0,
            strip_slot: 0,
            winding: false,
        }
    }

    /// Forgets the vertices kept (RESTART_PRIMITIVE, a topology change).
    pub fn restart(&mut self) {
        self.filled = 0;
        self.strip_slot = 0;
        self.winding = false;
    }

    /// Sets the winding flag: the next list or geometry triangle takes its first two vertices
    /// swapped.
    pub fn set_winding(&mut self) {
        self.winding = true;
    }

    /// Adds a vertex; `triangle` receives the triangle it completes, if any.
    pub fn submit(&mut self, vertex: OutputVertex, triangle: &mut impl FnMut(&[OutputVertex; 3])) {
        if self.filled < 2 {
            self.buffer[self.filled] = vertex;
            self.filled += 1;
            return;
        }
        match self.topology {
            Topology::List | Topology::Geometry => {
                let [a, b] = self.buffer;
                if std::mem::take(&mut self.winding) {
                    triangle(&[b, a, vertex]);
                } else {
                    triangle(&[a, b, vertex]);
                }
                self.filled = 0;
            }
            Topology::Strip => {
                triangle(&[self.buffer[0], self.buffer[1], vertex]);
                self.buffer[self.strip_slot] = vertex;
                self.strip_slot ^= 1;
            }
            Topology::Fan => {
                triangle(&[self.buffer[0], self.buffer[1], vertex]);
                self.buffer[1] = vertex;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vertex(n: f32) -> OutputVertex {
        let mut v = OutputVertex::default();
        v.attributes[0] = n;
        v
    }

    fn triangles(topology: Topology, count: usize) -> Vec<[f32; 3]> {
        let mut assembler = PrimitiveAssembler::new(topology);
        let mut out = Vec::new();
        for n in 0..count {
            assembler.submit(vertex(n as f32), &mut |t| {
                out.push(t.map(|v| v.attributes[0]));
            });
        }
        out
    }

    #[test]
    fn lists_strips_and_fans() {
        assert_eq!(triangles(Topology::List, 7), [[0., 1., 2.], [3., 4., 5.]]);
        // Strip triangles alternate their order so all keep the first one's winding.
        assert_eq!(
            triangles(Topology::Strip, 6),
            [[0., 1., 2.], [2., 1., 3.], [2., 3., 4.], [4., 3., 5.]]
        );
        assert_eq!(
            triangles(Topology::Fan, 5),
            [[0., 1., 2.], [0., 2., 3.], [0., 3., 4.]]
        );
    }

    #[test]
    fn winding_swaps_one_triangle_and_restart_forgets() {
        let mut assembler = PrimitiveAssembler::new(Topology::Geometry);
        let mut out = Vec::new();
        let mut push = |t: &[OutputVertex; 3]| out.push(t.map(|v| v.attributes[0]));
        assembler.set_winding();
        for n in 0..6 {
            assembler.submit(vertex(n as f32), &mut push);
        }
        let mut strip = PrimitiveAssembler::new(Topology::Strip);
        strip.submit(vertex(0.0), &mut push);
        strip.submit(vertex(1.0), &mut push);
        strip.restart();
        for n in 2..5 {
            strip.submit(vertex(n as f32), &mut push);
        }
        assert_eq!(out, [[1., 0., 2.], [3., 4., 5.], [2., 3., 4.]]);
    }
}
