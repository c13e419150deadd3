//! The vertex loader (docs/gpu.md, "Vertex loading"): reads the attributes of vertices from
//! the attribute arrays in memory, or takes fixed values, and places attribute n in the shader
//! input register the vertex unit's permutation names. Values become floats without
//! normalisation (an unsigned byte 255 is 255.0), a float by the precision mode's rounding and
//! range rules (float24 in the f24 modes); missing components read (0, 0, 0, 1).

use std::fmt;

use shader::exec::{RegisterSet, SoaBuffer};
use shader::float24::{Precision, convert_f32};
use shader::program::{DEFAULT_INPUT, InputRegisters, Vec4};

use crate::framebuffer::memory::{MemoryError, PhysicalMemory};
use crate::regs::{RegisterFile, bits, id};

/// Attributes the loader has.
pub const ATTRIBUTES: usize = 12;

/// The type of an attribute's components.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComponentType {
    /// A signed byte.
    Byte,
    /// An unsigned byte.
    UnsignedByte,
    /// A signed 16-bit integer.
    Short,
    /// A float32.
    Float,
}

impl ComponentType {
    /// The type of code `code` (2 bits).
    pub const fn from_code(code: u32) -> ComponentType {
        match code & 3 {
            0 => ComponentType::Byte,
            1 => ComponentType::UnsignedByte,
            2 => ComponentType::Short,
            _ => ComponentType::Float,
        }
    }

    /// The code of the type.
    pub const fn code(self) -> u32 {
        self as u32
    }

    /// Bytes per component (also the alignment of the attribute in its array).
    pub const fn size(self) -> usize {
        match self {
            ComponentType::Byte | ComponentType::UnsignedByte => 1,
            ComponentType::Short => 2,
            ComponentType::Float => 4,
        }
    }
}

/// Reads one component per index into `plane`: the component of type `kind` (little-endian)
/// at byte `place(index)` of `bytes`. One loop per type, so the type is decided once per plane.
/// An integer becomes its float exactly (every byte and short is a float24); a float enters
/// as an f32 attribute does, by `precision`'s rounding and range rules
/// (docs/execution-model.md §7, `float24::convert_f32`), as the hardware's loader converts it
/// to float24.
fn gather(
    plane: &mut [f32],
    bytes: &[u8],
    indices: &[u32],
    place: impl Fn(u32) -> usize,
    kind: ComponentType,
    precision: Precision,
) {
    fn each<const N: usize>(
        plane: &mut [f32],
        bytes: &[u8],
        indices: &[u32],
        place: impl Fn(u32) -> usize,
        convert: impl Fn([u8; N]) -> f32,
    ) {
        for (value, &index) in plane.iter_mut().zip(indices) {
            let at = place(index);
            let raw: [u8; N] = bytes[at..at + N].try_into().expect("N bytes");
            *value = convert(raw);
        }
    }
    match kind {
        ComponentType::Byte => each(plane, bytes, indices, place, |[b]| b as i8 as f32),
        ComponentType::UnsignedByte => each(plane, bytes, indices, place, |[b]| b as f32),
        ComponentType::Short => each(plane, bytes, indices, place, |b| {
            i16::from_le_bytes(b) as f32
        }),
        ComponentType::Float => each(plane, bytes, indices, place, |b| {
            convert_f32(f32::from_le_bytes(b), precision)
        }),
    }
}

/// An attribute's format: component type and count (1-4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttributeFormat {
    /// The component type.
    pub kind: ComponentType,
    /// Components, 1-4.
    pub components: usize,
}

impl AttributeFormat {
    /// Bytes the attribute takes.
    pub const fn size(self) -> usize {
        self.kind.size() * self.components
    }
}

/// Where an attribute's values come from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AttributeSource {
    /// From attribute array `array`, at `offset` bytes into each vertex.
    Array {
        /// The array.
        array: usize,
        /// Byte offset within a vertex of the array.
        offset: usize,
        /// The format.
        format: AttributeFormat,
    },
    /// A fixed value for every vertex.
    Fixed(Vec4),
    /// Neither: the attribute reads (0, 0, 0, 1) (docs/gpu.md, "Vertex loading").
    Default,
}

/// One attribute array's layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayLayout {
    /// Byte offset of the array from the attribute base address.
    pub offset: u32,
    /// Bytes from one vertex to the next.
    pub stride: usize,
    /// Bytes of a vertex the elements reach (at most the stride in a well-formed layout).
    pub extent: usize,
}

/// A failed vertex read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// The attribute array.
    pub array: usize,
    /// The vertex index whose read failed (the first of the chunk).
    pub index: u32,
    /// The memory error.
    pub memory: MemoryError,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "attribute array {} of vertex {}: {}",
            self.array, self.index, self.memory
        )
    }
}

impl std::error::Error for LoadError {}

/// The loader's configuration at a draw.
#[derive(Clone, Debug, PartialEq)]
pub struct VertexLoader {
    /// The attribute base address (physical).
    pub base: u32,
    /// The arrays with at least one element.
    pub arrays: Vec<(usize, ArrayLayout)>,
    /// Each attribute's source; attributes past the count are absent.
    pub sources: Vec<AttributeSource>,
    /// The input register of each attribute.
    pub targets: Vec<usize>,
}

impl VertexLoader {
    /// The loader the registers describe, with the fixed attribute values `fixed` and the
    /// vertex unit's input permutation.
    pub fn configure(regs: &RegisterFile, fixed: &[Vec4; ATTRIBUTES], permutation: u64) -> Self {
        let base = bits(regs.get(id::ATTRIBBUFFERS_LOC), 1, 28) << 4;
        let low = regs.get(id::ATTRIBBUFFERS_FORMAT_LOW) as u64;
        let high = regs.get(id::ATTRIBBUFFERS_FORMAT_HIGH);
        let formats = (low | ((high as u64 & 0xFFFF) << 32), high);
        let count = bits(high, 28, 4) as usize + 1;
        let fixed_mask = bits(high, 16, 12);
        let format_of = |n: usize| {
            let code = (formats.0 >> (4 * n)) as u32 & 0xF;
            AttributeFormat {
                kind: ComponentType::from_code(code),
                components: (code >> 2) as usize + 1,
            }
        };
        let mut sources: Vec<AttributeSource> = (0..count)
            .map(|n| {
                if fixed_mask & (1 << n) != 0 {
                    AttributeSource::Fixed(fixed[n])
                } else {
                    AttributeSource::Default
                }
            })
            .collect();
        let mut arrays = Vec::new();
        for k in 0..ATTRIBUTES {
            let register = id::ATTRIBBUFFER0_OFFSET + 3 * k as u16;
            let offset = bits(regs.get(register), 0, 28);
            let config1 = regs.get(register + 1) as u64;
            let config2 = regs.get(register + 2);
            let elements = config1 | ((config2 as u64 & 0xFFFF) << 32);
            let stride = bits(config2, 16, 8) as usize;
            let element_count = bits(config2, 28, 4) as usize;
            if element_count == 0 {
                continue;
            }
            let mut at = 0usize;
            for e in 0..element_count.min(ATTRIBUTES) {
                let code = ((elements >> (4 * e)) & 0xF) as usize;
                if code >= ATTRIBUTES {
                    // Padding: aligned to 4 bytes, then 4, 8, 12 or 16 bytes.
                    at = at.next_multiple_of(4) + 4 * (code - 11);
                    continue;
                }
                let format = format_of(code);
                at = at.next_multiple_of(format.kind.size());
                if code < count {
                    // An array overrides the fixed value whatever the mask says.
                    sources[code] = AttributeSource::Array {
                        array: k,
                        offset: at,
                        format,
                    };
                }
                at += format.size();
            }
            arrays.push((
                k,
                ArrayLayout {
                    offset,
                    stride,
                    extent: at,
                },
            ));
        }
        let targets = (0..count)
            .map(|n| ((permutation >> (4 * n)) & 0xF) as usize)
            .collect();
        VertexLoader {
            base,
            arrays,
            sources,
            targets,
        }
    }

    /// The input registers the loader writes.
    pub fn registers(&self) -> RegisterSet {
        RegisterSet(self.targets.iter().fold(0, |set, &r| set | 1 << r))
    }

    /// Loads the vertices `indices` into `out` (a buffer of [`Self::registers`] with as many
    /// vertices as `indices`), float components converted by `precision` (docs/execution-model.md §7).
    pub fn load(
        &self,
        memory: &PhysicalMemory,
        indices: &[u32],
        out: &mut SoaBuffer,
        precision: Precision,
    ) -> Result<(), LoadError> {
        debug_assert_eq!(out.count(), indices.len());
        let registers = out.registers();
        let (Some(&first), Some(&last)) = (indices.iter().min(), indices.iter().max()) else {
            return Ok(());
        };
        // Each array's bytes for the chunk's index range, read once.
        let mut array_bytes: Vec<(usize, Vec<u8>)> = Vec::with_capacity(self.arrays.len());
        for (k, layout) in &self.arrays {
            let needed = self
                .sources
                .iter()
                .any(|source| matches!(source, AttributeSource::Array { array, .. } if array == k));
            if !needed {
                continue;
            }
            let start =
                self.base as u64 + layout.offset as u64 + first as u64 * layout.stride as u64;
            let len = (last - first) as u64 * layout.stride as u64 + layout.extent as u64;
            let error = |address: u64| LoadError {
                array: *k,
                index: first,
                memory: MemoryError {
                    address: address.min(u32::MAX as u64) as u32,
                    len,
                },
            };
            if start > u32::MAX as u64 || len > usize::MAX as u64 / 2 {
                return Err(error(start));
            }
            PhysicalMemory::check(start as u32, len).map_err(|_| error(start))?;
            let bytes = memory
                .read_vec(start as u32, len as usize)
                .map_err(|_| error(start))?;
            array_bytes.push((*k, bytes));
        }
        for (n, source) in self.sources.iter().enumerate() {
            let Some(slot) = registers.slot_of(self.targets[n]) else {
                continue;
            };
            match *source {
                AttributeSource::Array {
                    array,
                    offset,
                    format,
                } => {
                    let bytes = &array_bytes
                        .iter()
                        .find(|(k, _)| *k == array)
                        .expect("every array an attribute reads was read")
                        .1;
                    let stride = self
                        .arrays
                        .iter()
                        .find(|(k, _)| *k == array)
                        .unwrap()
                        .1
                        .stride;
                    for (c, &default) in DEFAULT_INPUT.iter().enumerate() {
                        let plane = out.plane_mut(4 * slot + c);
                        if c >= format.components {
                            plane.fill(default);
                            continue;
                        }
                        let at = offset + c * format.kind.size();
                        let place = |index: u32| (index - first) as usize * stride + at;
                        gather(plane, bytes, indices, place, format.kind, precision);
                    }
                }
                AttributeSource::Fixed(value) => {
                    for (c, &component) in value.iter().enumerate() {
                        out.plane_mut(4 * slot + c).fill(component);
                    }
                }
                AttributeSource::Default => {
                    for (c, &component) in DEFAULT_INPUT.iter().enumerate() {
                        out.plane_mut(4 * slot + c).fill(component);
                    }
                }
            }
        }
        Ok(())
    }

    /// One vertex's input registers (registers the loader does not write read (0, 0, 0, 1)).
    pub fn load_one(
        &self,
        memory: &PhysicalMemory,
        index: u32,
        precision: Precision,
    ) -> Result<InputRegisters, LoadError> {
        let mut buffer = SoaBuffer::zeroed(self.registers(), 1);
        self.load(memory, &[index], &mut buffer, precision)?;
        Ok(buffer.vertex(0))
    }
}
