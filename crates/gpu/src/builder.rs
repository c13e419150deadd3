//! A scene builder that programs the GPU the way a homebrew application does through citro3d
//! (docs/gpu.md, "Scene builder"): data placed in memory, command buffers with the register
//! writes citro3d would make (shader binding, uniforms, attribute and buffer layouts, draws),
//! each buffer run as a command list, frames separated by markers. What it makes is a
//! [`Trace`]: the operations a replay performs, which the CiTrace writer saves as a file.

use shader::float24::F24;
use shader::numbers::{FLOAT16, FLOAT20, FLOAT24, FLOAT31};
use shader::program::Vec4;
use shader::shbin::{Dvle, GsMode, OutputSemantic, Shbin};

use super::regs::id;
use crate::fragment::combiner::CombinerStage;
use crate::fragment::fog::FOG_ENTRIES;
use crate::fragment::lighting::LUT_ENTRIES;
use crate::fragment::texture::{TextureFormat, TextureKind, UNIT_BASE, UNIT_TYPE, Wrap};
use crate::framebuffer::color::{ColorFormat, DepthFormat, Rgba8};
use crate::framebuffer::display::{Screen, offset};
use crate::framebuffer::memory::{FCRAM, VRAM};
use crate::front::command::CommandWriter;
use crate::front::external;
use crate::front::trace::{GPU_REGISTERS, Trace, TraceOp};
use crate::geometry::assembly::Topology;
use crate::geometry::loader::ComponentType;

/// A shader stage, for uniforms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The vertex shader unit.
    Vertex,
    /// The geometry shader unit.
    Geometry,
}

impl Stage {
    const fn base(self) -> u16 {
        match self {
            Stage::Vertex => id::VSH_BASE,
            Stage::Geometry => id::GSH_BASE,
        }
    }
}

/// Where attribute arrays and index buffers are addressed from (citro3d's choice).
pub const ATTRIBUTE_BASE: u32 = VRAM.start;

/// An attribute as the vertex shader sees it: input register, component type and count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attribute {
    /// The input register (v0-v15) it goes to.
    pub register: u8,
    /// The component type.
    pub kind: ComponentType,
    /// Components (1-4).
    pub components: u8,
}

impl Attribute {
    /// `components` components of `kind` into input register `register`.
    pub const fn new(register: u8, kind: ComponentType, components: u8) -> Attribute {
        Attribute {
            register,
            kind,
            components,
        }
    }
}

/// An element of an attribute array: an attribute (by its position in the attribute list) or
/// padding of 4, 8, 12 or 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element {
    /// Attribute n of the list given to [`SceneBuilder::attributes`].
    Attribute(u8),
    /// Padding bytes (4, 8, 12 or 16).
    Padding(u8),
}

/// The index data of an indexed draw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Indices {
    /// 8-bit indices.
    U8(Vec<u8>),
    /// 16-bit indices.
    U16(Vec<u16>),
}

/// The geometry shader of a program binding, with its input stride as libctru's
/// `shaderProgramSetGsh` takes it.
#[derive(Clone, Copy, Debug)]
pub struct GeometryProgram<'a> {
    /// The binary.
    pub shbin: &'a Shbin,
    /// Which DVLE.
    pub dvle: usize,
    /// Point mode: the geometry shader's input attributes per invocation (vertices × vertex
    /// shader outputs); fixed mode: vertex shader outputs per vertex.
    pub stride: u8,
}

/// A texture for a unit (citro3d's `C3D_TexInitWithParams`, `C3D_TexSetFilter`,
/// `C3D_TexSetWrap`, `C3D_TexSetLodBias` and `C3D_TexBind` in one).
#[derive(Clone, Debug)]
pub struct TextureSetup<'a> {
    /// 2D, cube map or projection (cube and projection: unit 0 only).
    pub kind: TextureKind,
    /// The texel format.
    pub format: TextureFormat,
    /// Level 0's size.
    pub size: (u32, u32),
    /// Each face's bytes: level 0 then each mipmap, tiled ([`crate::fragment::texture::encode`]); one
    /// face, or six for a cube map (+X, −X, +Y, −Y, +Z, −Z).
    pub faces: &'a [Vec<u8>],
    /// The mipmap levels after level 0 in the data.
    pub max_level: u32,
    /// Wrap modes along s and t.
    pub wrap: (Wrap, Wrap),
    /// Linear magnification, minification and mipmap filters.
    pub linear: (bool, bool, bool),
    /// The level-of-detail bias and the lowest level used.
    pub lod: (f32, u32),
    /// The border colour.
    pub border: Rgba8,
}

/// One light's registers (citro3d's `C3D_Light*` calls, the material already folded into the
/// colours).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LightSetup {
    /// Specular colours 0 and 1, diffuse, ambient (0-1).
    pub colors: [[f32; 3]; 4],
    /// The position in view space, or the direction towards the light when directional.
    pub position: [f32; 3],
    /// Directional (not positional).
    pub directional: bool,
    /// Diffuse lighting from both sides.
    pub two_sided: bool,
    /// Geometric factors 0 and 1.
    pub geometric: [bool; 2],
    /// The direction the spotlight points (stored negated).
    pub spot_direction: [f32; 3],
    /// Distance attenuation: bias and scale of the table's input.
    pub attenuation: (f32, f32),
}

/// The light environment's registers (citro3d's `C3D_LightEnv*`): raw words where the fields
/// are many (docs/gpu-lighting.md gives their bits).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LightEnvironment {
    /// The global ambient colour.
    pub ambient: [f32; 3],
    /// The active lights, in slot order (1-8 light indices).
    pub lights: &'static [u8],
    /// LIGHTING_CONFIG0 (bits 8-11 and 31 are set as citro3d sets them).
    pub config0: u32,
    /// LIGHTING_CONFIG1.
    pub config1: u32,
    /// LIGHTING_LUTINPUT_ABS, _SELECT, _SCALE.
    pub lut_inputs: [u32; 3],
}

/// A lighting colour register: B bits 0-7, G 10-17, R 20-27.
fn light_color_word(c: [f32; 3]) -> u32 {
    let byte = |v: f32| (v.clamp(0.0, 1.0) * 255.0).round() as u32;
    byte(c[0]) << 20 | byte(c[1]) << 10 | byte(c[2])
}

/// A signed fixed-point 1.1.11 field (13 bits).
fn fixed13(v: f32) -> u32 {
    ((v * 2048.0).round().clamp(-4096.0, 4095.0) as i32 as u32) & 0x1FFF
}

/// Builds a [`Trace`].
#[derive(Debug)]
pub struct SceneBuilder {
    trace: Trace,
    commands: CommandWriter,
    heap: u32,
    vram: u32,
    attribute_count: usize,
    formats: u64,
    fixed_mask: u16,
    buffers: usize,
}

impl Default for SceneBuilder {
    fn default() -> SceneBuilder {
        SceneBuilder::new()
    }
}

impl SceneBuilder {
    /// An empty scene: data goes to FCRAM from its start, render targets to VRAM after the
    /// first MiB (kept for attribute data placed in VRAM).
    pub fn new() -> SceneBuilder {
        SceneBuilder {
            trace: Trace::default(),
            commands: CommandWriter::new(),
            heap: FCRAM.start + 0x0100_0000,
            vram: VRAM.start + 0x0010_0000,
            attribute_count: 0,
            formats: 0,
            fixed_mask: 0,
            buffers: 0,
        }
    }

    /// Places `bytes` in FCRAM (aligned to `align` bytes) and returns the physical address.
    pub fn data(&mut self, bytes: &[u8], align: u32) -> u32 {
        let address = self.heap.next_multiple_of(align.max(16));
        self.heap = address + bytes.len() as u32;
        self.trace.ops.push(TraceOp::MemoryLoad {
            address,
            bytes: bytes.to_vec(),
        });
        address
    }

    /// Reserves `size` bytes of VRAM (a render target) and returns the physical address.
    pub fn vram(&mut self, size: u32) -> u32 {
        let address = self.vram.next_multiple_of(0x100);
        self.vram = address + size;
        address
    }

    /// A raw register write (what citro3d's `GPUCMD_AddMaskedWrite` does).
    pub fn write(&mut self, register: u16, value: u32) -> &mut Self {
        self.commands.write(register, value);
        self
    }

    /// A write of the bytes `mask` enables.
    pub fn write_masked(&mut self, register: u16, value: u32, mask: u8) -> &mut Self {
        self.commands.write_masked(register, value, mask);
        self
    }

    /// Binds a vertex shader and optionally a geometry shader, as citro3d's
    /// `C3D_BindProgram`: code and descriptors uploaded, entry points, output masks and the
    /// rasterizer's output map from the last stage's output table, the geometry mode, and
    /// the DVLEs' constants as uniforms.
    pub fn program(
        &mut self,
        vs: &Shbin,
        vs_dvle: usize,
        gs: Option<GeometryProgram<'_>>,
    ) -> &mut Self {
        let vertex = &vs.dvles[vs_dvle];
        let geometry = gs.map(|g| (&g.shbin.dvles[g.dvle], g));
        self.write(id::GEOSTAGE_CONFIG, if geometry.is_some() { 2 } else { 0 });
        self.write_masked(id::GEOSTAGE_CONFIG2, 0, 0x1);
        self.write(id::VSH_COM_MODE, u32::from(geometry.is_some()));
        self.upload(Stage::Vertex, vs, vertex);
        let vs_outputs = vertex.output_mask.count_ones();
        self.write(id::VSH_OUTMAP_TOTAL1, vs_outputs.saturating_sub(1));
        self.write(id::VSH_OUTMAP_TOTAL2, vs_outputs.saturating_sub(1));
        let last = match geometry {
            Some((dvle, g)) => {
                self.upload(Stage::Geometry, g.shbin, dvle);
                let (mode, misc0, misc1) = match dvle.gs.mode {
                    GsMode::Point => (0, 0, 0),
                    GsMode::Variable => (1, 1, dvle.gs.variable_vertices.saturating_sub(1) as u32),
                    GsMode::Fixed => (
                        2,
                        2 | 0x0100_0000
                            | (dvle.gs.fixed_start as u32) << 16
                            | (g.stride.saturating_sub(1) as u32 & 0xF) << 12
                            | (dvle.gs.fixed_vertices.saturating_sub(1) as u32 & 0xF) << 8,
                        0,
                    ),
                };
                if mode == 1 {
                    self.write_masked(id::GEOSTAGE_CONFIG, 0x8000_0000, 0x8);
                }
                self.write(id::GSH_MISC0, misc0);
                self.write(id::GSH_MISC1, misc1);
                let buffer = 0x0800_0000 | if mode != 0 { 0x100 } else { 0 };
                self.write(
                    id::GSH_BASE + id::SH_INPUTBUFFER_CONFIG,
                    buffer | (g.stride.saturating_sub(1) as u32 & 0xF),
                );
                self.write(
                    id::GSH_BASE + id::SH_ATTRIBUTES_PERMUTATION_LOW,
                    0x7654_3210,
                );
                self.write(
                    id::GSH_BASE + id::SH_ATTRIBUTES_PERMUTATION_HIGH,
                    0xFEDC_BA98,
                );
                dvle
            }
            None => {
                self.write(id::GSH_BASE + id::SH_INPUTBUFFER_CONFIG, 0xA000_0000);
                self.write(id::GSH_MISC0, 0);
                self.write(id::GSH_MISC1, 0);
                vertex
            }
        };
        self.output_map(last);
        self
    }

    fn upload(&mut self, stage: Stage, shbin: &Shbin, dvle: &Dvle) {
        let base = stage.base();
        self.write(base + id::SH_CODETRANSFER_INDEX, 0);
        self.commands
            .write_repeated(base + id::SH_CODETRANSFER_DATA0, &shbin.code);
        self.write(base + id::SH_CODETRANSFER_END, 1);
        self.write(base + id::SH_OPDESCS_INDEX, 0);
        self.commands
            .write_repeated(base + id::SH_OPDESCS_DATA0, &shbin.opdescs);
        self.write(base + id::SH_ENTRYPOINT, 0x7FFF_0000 | dvle.entry);
        self.write(base + id::SH_OUTMAP_MASK, dvle.output_mask as u32);
        let mut bools = 0u32;
        for constant in &dvle.constants {
            match *constant {
                shader::shbin::Constant::Bool { index, value } => {
                    bools |= u32::from(value) << index;
                }
                shader::shbin::Constant::Int { index, value } => {
                    self.write(
                        base + id::SH_INTUNIFORM_I0 + index as u16,
                        u32::from_le_bytes(value),
                    );
                }
                shader::shbin::Constant::Float { index, value } => {
                    self.write(base + id::SH_FLOATUNIFORM_INDEX, index as u32);
                    self.commands.write_repeated(
                        base + id::SH_FLOATUNIFORM_DATA0,
                        &shader::float24::pack_uniform(value),
                    );
                }
            }
        }
        self.write(base + id::SH_BOOLUNIFORM, 0x7FFF_0000 | bools);
    }

    /// The rasterizer's output map from a DVLE's output table (libctru's
    /// `DVLE_GenerateOutmap`).
    fn output_map(&mut self, dvle: &Dvle) {
        let mut slots = [0x1F1F_1F1Fu32; 7];
        let mut clock = 0u32;
        let mut texcoords = false;
        let registers: Vec<u16> = (0..16)
            .filter(|r| dvle.output_mask & (1 << r) != 0)
            .collect();
        for entry in &dvle.outputs {
            let Some(slot) = registers.iter().position(|&r| r == entry.register) else {
                continue;
            };
            if slot >= 7 {
                continue;
            }
            let (first, count, bit, uses_texcoords) = match entry.semantic {
                OutputSemantic::Position => (0x00, 4, 0, false),
                OutputSemantic::NormalQuat => (0x04, 4, 24, false),
                OutputSemantic::Color => (0x08, 4, 1, false),
                OutputSemantic::TexCoord0 => (0x0C, 2, 8, true),
                OutputSemantic::TexCoord0W => (0x10, 1, 16, true),
                OutputSemantic::TexCoord1 => (0x0E, 2, 9, true),
                OutputSemantic::TexCoord2 => (0x16, 2, 10, true),
                OutputSemantic::View => (0x12, 3, 24, false),
                _ => continue,
            };
            texcoords |= uses_texcoords;
            let mut semantic = first;
            for c in 0..4 {
                if entry.mask & (1 << c) == 0 {
                    continue;
                }
                if semantic < first + count {
                    slots[slot] = (slots[slot] & !(0xFF << (8 * c))) | semantic << (8 * c);
                    if entry.semantic != OutputSemantic::Position || semantic == 0x02 {
                        clock |= 1 << bit;
                    }
                }
                semantic += 1;
            }
        }
        let total = registers.len().min(7) as u32;
        self.write_masked(id::PRIMITIVE_CONFIG, total.saturating_sub(1), 0x1);
        self.write(id::SH_OUTMAP_TOTAL, total);
        for (k, &word) in slots.iter().enumerate() {
            self.write(id::SH_OUTMAP_O0 + k as u16, word);
        }
        self.write(id::SH_OUTATTR_MODE, u32::from(texcoords));
        self.write(id::SH_OUTATTR_CLOCK, clock);
    }

    /// Sets float uniform `index` of `stage` (float32 packing: w, z, y, x).
    pub fn uniform(&mut self, stage: Stage, index: u8, value: Vec4) -> &mut Self {
        let base = stage.base();
        self.write(base + id::SH_FLOATUNIFORM_INDEX, 0x8000_0000 | index as u32);
        let words = [value[3], value[2], value[1], value[0]].map(f32::to_bits);
        self.commands
            .write_repeated(base + id::SH_FLOATUNIFORM_DATA0, &words);
        self
    }

    /// Sets consecutive float uniforms from `index` (a matrix: four rows).
    pub fn uniforms(&mut self, stage: Stage, index: u8, values: &[Vec4]) -> &mut Self {
        for (k, &value) in values.iter().enumerate() {
            self.uniform(stage, index + k as u8, value);
        }
        self
    }

    /// Sets the bool uniforms b0-b15 of `stage`.
    pub fn bools(&mut self, stage: Stage, bools: u16) -> &mut Self {
        self.write(
            stage.base() + id::SH_BOOLUNIFORM,
            0x7FFF_0000 | bools as u32,
        )
    }

    /// Sets int uniform i`index` of `stage`.
    pub fn int(&mut self, stage: Stage, index: u8, value: [u8; 4]) -> &mut Self {
        self.write(
            stage.base() + id::SH_INTUNIFORM_I0 + (index & 3) as u16,
            u32::from_le_bytes(value),
        )
    }

    /// Declares the vertex attributes (citro3d's `AttrInfo`): their formats, the input register
    /// of each, and their count. Every attribute starts fixed until a buffer loads it.
    pub fn attributes(&mut self, attributes: &[Attribute]) -> &mut Self {
        let mut formats = 0u64;
        let mut permutation = 0u64;
        for (n, a) in attributes.iter().enumerate().take(12) {
            let code = ((a.components.clamp(1, 4) as u64 - 1) << 2) | a.kind.code() as u64;
            formats |= code << (4 * n);
            permutation |= (a.register as u64 & 0xF) << (4 * n);
        }
        let count = attributes.len().clamp(1, 12);
        self.attribute_count = count;
        self.formats = formats;
        self.fixed_mask = ((1u32 << count) - 1) as u16;
        self.buffers = 0;
        self.write(id::ATTRIBBUFFERS_LOC, ATTRIBUTE_BASE >> 3);
        self.write(id::ATTRIBBUFFERS_FORMAT_LOW, formats as u32);
        self.write_attribute_high(formats);
        self.write(
            id::VSH_BASE + id::SH_INPUTBUFFER_CONFIG,
            0xA000_0000 | (count as u32 - 1),
        );
        self.write(id::VSH_NUM_ATTR, count as u32 - 1);
        self.write(
            id::VSH_BASE + id::SH_ATTRIBUTES_PERMUTATION_LOW,
            permutation as u32,
        );
        self.write(
            id::VSH_BASE + id::SH_ATTRIBUTES_PERMUTATION_HIGH,
            (permutation >> 32) as u32,
        );
        for k in 0..12u16 {
            self.write(id::ATTRIBBUFFER0_OFFSET + 3 * k + 2, 0);
        }
        self
    }

    fn write_attribute_high(&mut self, formats: u64) {
        self.write(
            id::ATTRIBBUFFERS_FORMAT_HIGH,
            (formats >> 32) as u32 & 0xFFFF
                | (self.fixed_mask as u32) << 16
                | ((self.attribute_count as u32 - 1) << 28),
        );
    }

    /// Adds an attribute array (citro3d's `BufInfo_Add`): `data` placed in memory, `stride`
    /// bytes per vertex, its elements in order. The attributes it loads stop being fixed.
    pub fn buffer(&mut self, data: &[u8], stride: u8, elements: &[Element]) -> &mut Self {
        let address = self.data(data, 16);
        let mut codes = 0u64;
        for (k, element) in elements.iter().enumerate().take(12) {
            let code = match *element {
                Element::Attribute(n) => {
                    self.fixed_mask &= !(1 << n);
                    n as u64 & 0xF
                }
                Element::Padding(bytes) => 11 + (bytes as u64 / 4).clamp(1, 4),
            };
            codes |= code << (4 * k);
        }
        let k = self.buffers as u16;
        self.buffers += 1;
        self.write(id::ATTRIBBUFFER0_OFFSET + 3 * k, address - ATTRIBUTE_BASE);
        self.write(id::ATTRIBBUFFER0_OFFSET + 3 * k + 1, codes as u32);
        self.write(
            id::ATTRIBBUFFER0_OFFSET + 3 * k + 2,
            (codes >> 32) as u32 & 0xFFFF | (stride as u32) << 16 | (elements.len() as u32) << 28,
        );
        self.write_attribute_high(self.formats);
        self
    }

    /// Sets the fixed value of attribute `n` (used while no buffer loads it).
    pub fn fixed_attribute(&mut self, n: u8, value: Vec4) -> &mut Self {
        self.write(id::FIXEDATTRIB_INDEX, n as u32 & 0xF);
        self.fixed_words(value);
        self
    }

    fn fixed_words(&mut self, value: Vec4) {
        let packed = shader::float24::pack_uniform(value.map(F24::from_f32_picasso));
        self.commands
            .write_consecutive(id::FIXEDATTRIB_DATA0, &packed);
    }

    fn primitive(&mut self, topology: Topology) {
        self.write_masked(id::PRIMITIVE_CONFIG, topology.code() << 8, 0x2);
        self.write(id::RESTART_PRIMITIVE, 1);
    }

    /// A non-indexed draw (citro3d's `C3D_DrawArrays`).
    pub fn draw_arrays(&mut self, topology: Topology, first: u32, count: u32) -> &mut Self {
        self.primitive(topology);
        self.write(id::INDEXBUFFER_CONFIG, 0x8000_0000);
        self.write(id::NUMVERTICES, count);
        self.write(id::VERTEX_OFFSET, first);
        self.write_masked(id::GEOSTAGE_CONFIG2, 1, 0x1);
        self.write_masked(id::START_DRAW_FUNC0, 0, 0x1);
        self.write(id::DRAWARRAYS, 1);
        self.write_masked(id::START_DRAW_FUNC0, 1, 0x1);
        self.write_masked(id::GEOSTAGE_CONFIG2, 0, 0x1);
        self.write(id::VTX_FUNC, 1);
        self
    }

    /// An indexed draw (citro3d's `C3D_DrawElements`: a triangle list is drawn with the
    /// geometry topology).
    pub fn draw_elements(&mut self, topology: Topology, indices: &Indices) -> &mut Self {
        let (bytes, count, wide) = match indices {
            Indices::U8(v) => (v.clone(), v.len(), 0),
            Indices::U16(v) => (v.iter().flat_map(|i| i.to_le_bytes()).collect(), v.len(), 1),
        };
        let address = self.data(&bytes, 16);
        let drawn = if topology == Topology::List {
            Topology::Geometry
        } else {
            topology
        };
        self.primitive(drawn);
        self.write(
            id::INDEXBUFFER_CONFIG,
            (address - ATTRIBUTE_BASE) | wide << 31,
        );
        self.write(id::NUMVERTICES, count as u32);
        self.write(id::VERTEX_OFFSET, 0);
        self.write_masked(id::GEOSTAGE_CONFIG, 0x100, 0x2);
        self.write_masked(id::GEOSTAGE_CONFIG2, 0x100, 0x2);
        self.write_masked(id::START_DRAW_FUNC0, 0, 0x1);
        self.write(id::DRAWELEMENTS, 1);
        self.write_masked(id::START_DRAW_FUNC0, 1, 0x1);
        self.write_masked(id::GEOSTAGE_CONFIG, 0, 0x2);
        self.write_masked(id::GEOSTAGE_CONFIG2, 0, 0x2);
        self.write(id::VTX_FUNC, 1);
        self.write_masked(id::PRIMITIVE_CONFIG, 0, 0x8);
        self.write_masked(id::PRIMITIVE_CONFIG, 0, 0x8);
        self
    }

    /// Immediate-mode vertices (citro3d's `C3D_ImmDrawBegin` / `C3D_ImmSendAttrib` /
    /// `C3D_ImmDrawEnd`): each vertex's attributes in order.
    pub fn draw_immediate(&mut self, topology: Topology, vertices: &[Vec<Vec4>]) -> &mut Self {
        self.primitive(topology);
        self.write(id::INDEXBUFFER_CONFIG, 0x8000_0000);
        self.write_masked(id::GEOSTAGE_CONFIG2, 1, 0x1);
        self.write_masked(id::START_DRAW_FUNC0, 0, 0x1);
        self.write(id::FIXEDATTRIB_INDEX, 0xF);
        for vertex in vertices {
            for &attribute in vertex {
                self.fixed_words(attribute);
            }
        }
        self.write_masked(id::START_DRAW_FUNC0, 1, 0x1);
        self.write_masked(id::GEOSTAGE_CONFIG2, 0, 0x1);
        self.write(id::VTX_FUNC, 1);
        self
    }

    /// Binds the render target (citro3d's `C3D_FrameDrawOn`): colour and depth buffers
    /// (either may be absent), both `width` × `height`, tiled, in the buffer formats.
    pub fn render_target(
        &mut self,
        color: Option<(u32, ColorFormat)>,
        depth: Option<(u32, DepthFormat)>,
        (width, height): (u32, u32),
    ) -> &mut Self {
        self.write(id::FRAMEBUFFER_FLUSH, 1);
        self.write(id::FRAMEBUFFER_INVALIDATE, 1);
        let (color_address, color_format) = color.unwrap_or((0, ColorFormat::Rgba8));
        let (depth_address, depth_format) = depth.unwrap_or((0, DepthFormat::D24S8));
        let pixel_size = match color_format.bytes() {
            2 => 0,
            3 => 1,
            _ => 2,
        };
        self.write(id::DEPTHBUFFER_FORMAT, depth_format.code());
        self.write(
            id::COLORBUFFER_FORMAT,
            color_format.framebuffer_code() << 16 | pixel_size,
        );
        self.write(id::DEPTHBUFFER_LOC, depth_address >> 3);
        self.write(id::COLORBUFFER_LOC, color_address >> 3);
        let dim = width | (height - 1) << 12 | 1 << 24;
        self.write(id::FRAMEBUFFER_DIM, dim);
        self.write(id::RENDERBUF_DIM, dim);
        let color_on = if color.is_some() { 0xF } else { 0 };
        let depth_on = if depth.is_some() { 0x3 } else { 0 };
        self.write(id::COLORBUFFER_READ, color_on);
        self.write(id::COLORBUFFER_WRITE, color_on);
        self.write(id::DEPTHBUFFER_READ, depth_on);
        self.write(id::DEPTHBUFFER_WRITE, depth_on);
        self
    }

    /// The viewport (citro3d's `C3D_SetViewport`): x and y of its lower-left corner, its size.
    pub fn viewport(&mut self, x: i32, y: i32, width: u32, height: u32) -> &mut Self {
        let f24 = |v: f32| FLOAT24.from_f32(v);
        let f31 = |v: f32| FLOAT31.from_f32(v) << 1;
        self.write(id::VIEWPORT_WIDTH, f24(width as f32 / 2.0));
        self.write(id::VIEWPORT_INVW, f31(2.0 / width as f32));
        self.write(id::VIEWPORT_HEIGHT, f24(height as f32 / 2.0));
        self.write(id::VIEWPORT_INVH, f31(2.0 / height as f32));
        self.write(
            id::VIEWPORT_XY,
            (y as u32 & 0x3FF) << 16 | (x as u32 & 0x3FF),
        );
        self
    }

    /// Depth mapping (citro3d's `C3D_DepthMap`): depth = z/w · scale + offset (a Z-buffer), or
    /// that times w (a W-buffer).
    pub fn depth_map(&mut self, z_buffer: bool, scale: f32, offset: f32) -> &mut Self {
        self.write(id::DEPTHMAP_ENABLE, u32::from(z_buffer));
        self.write(id::DEPTHMAP_SCALE, FLOAT24.from_f32(scale));
        self.write(id::DEPTHMAP_OFFSET, FLOAT24.from_f32(offset))
    }

    /// Face culling: 0 none, 1 counter-clockwise triangles, 2 clockwise ones.
    pub fn cull(&mut self, mode: u32) -> &mut Self {
        self.write(id::FACECULLING_CONFIG, mode & 3)
    }

    /// The scissor test: mode 0 off, 1 drops the box, 3 keeps only the box (corners inclusive).
    pub fn scissor(&mut self, mode: u32, (x1, y1): (u32, u32), (x2, y2): (u32, u32)) -> &mut Self {
        self.write(id::SCISSORTEST_MODE, mode & 3);
        self.write(id::SCISSORTEST_POS, (y1 & 0x3FF) << 16 | (x1 & 0x3FF));
        self.write(id::SCISSORTEST_DIM, (y2 & 0x3FF) << 16 | (x2 & 0x3FF))
    }

    /// The user clip plane (kept where c·(x, y, z, w) ≥ 0), or none.
    pub fn clip_plane(&mut self, plane: Option<[f32; 4]>) -> &mut Self {
        self.write(id::FRAGOP_CLIP, u32::from(plane.is_some()));
        for (k, &c) in plane.unwrap_or_default().iter().enumerate() {
            self.write(id::FRAGOP_CLIP_DATA0 + k as u16, FLOAT24.from_f32(c));
        }
        self
    }

    /// Combiner stage `k`.
    pub fn combiner(&mut self, k: usize, stage: &CombinerStage) -> &mut Self {
        self.commands
            .write_consecutive(id::TEXENV[k % 6], &stage.words());
        self
    }

    /// Which stages (0-3) write the combiner buffer's RGB and alpha, and its initial colour.
    pub fn combiner_buffer(&mut self, rgb: u8, alpha: u8, color: Rgba8) -> &mut Self {
        let update = (rgb as u32 & 0xF) << 8 | (alpha as u32 & 0xF) << 12;
        self.write_masked(id::TEXENV_UPDATE_BUFFER, update, 0x2);
        self.write(id::TEXENV_BUFFER_COLOR, u32::from_le_bytes(color))
    }

    /// Blending: RGB and alpha equations, then source and destination factors for RGB and
    /// alpha, and the constant colour.
    pub fn blend(&mut self, equations: (u32, u32), factors: [u32; 4], color: Rgba8) -> &mut Self {
        let [src_rgb, dst_rgb, src_a, dst_a] = factors.map(|f| f & 0xF);
        self.write_masked(id::COLOR_OPERATION, 0x00E4_0100, 0xF);
        self.write(
            id::BLEND_FUNC,
            (equations.0 & 7)
                | (equations.1 & 7) << 8
                | src_rgb << 16
                | dst_rgb << 20
                | src_a << 24
                | dst_a << 28,
        );
        self.write(id::BLEND_COLOR, u32::from_le_bytes(color))
    }

    /// A logic op instead of blending.
    pub fn logic_op(&mut self, op: u32) -> &mut Self {
        self.write(id::COLOR_OPERATION, 0x00E4_0000);
        self.write(id::LOGIC_OP, op & 0xF)
    }

    /// The alpha test.
    pub fn alpha_test(&mut self, enable: bool, function: u32, reference: u8) -> &mut Self {
        self.write(
            id::FRAGOP_ALPHA_TEST,
            u32::from(enable) | (function & 7) << 4 | (reference as u32) << 8,
        )
    }

    /// The stencil test and its operations (on fail, on depth fail, on pass).
    pub fn stencil(
        &mut self,
        enable: bool,
        function: u32,
        reference: u8,
        (compare_mask, write_mask): (u8, u8),
        ops: [u32; 3],
    ) -> &mut Self {
        self.write(
            id::STENCIL_TEST,
            u32::from(enable)
                | (function & 7) << 4
                | (write_mask as u32) << 8
                | (reference as u32) << 16
                | (compare_mask as u32) << 24,
        );
        self.write(
            id::STENCIL_OP,
            (ops[0] & 7) | (ops[1] & 7) << 4 | (ops[2] & 7) << 8,
        )
    }

    /// The depth test and the write mask (bits: 1 R, 2 G, 4 B, 8 A, 0x10 depth).
    pub fn depth_test(&mut self, enable: bool, function: u32, write_mask: u32) -> &mut Self {
        self.write(
            id::DEPTH_COLOR_MASK,
            u32::from(enable) | (function & 7) << 4 | (write_mask & 0x1F) << 8,
        )
    }

    /// Binds `texture` to unit `unit` (0-2): its data placed in memory, its registers
    /// written. The unit is switched on by [`SceneBuilder::texture_units`].
    pub fn texture(&mut self, unit: usize, texture: &TextureSetup<'_>) -> &mut Self {
        let base = UNIT_BASE[unit % 3];
        let addresses: Vec<u32> = texture
            .faces
            .iter()
            .map(|face| self.data(face, 128))
            .collect();
        let (width, height) = texture.size;
        let kind = match texture.kind {
            TextureKind::Texture2d => 0,
            TextureKind::CubeMap => 1,
            TextureKind::Projection => 3,
            TextureKind::Shadow2d => 2,
            TextureKind::ShadowCube => 4,
        };
        let (mag, min, mip) = texture.linear;
        let etc1 = matches!(texture.format, TextureFormat::Etc1);
        let param = u32::from(mag) << 1
            | u32::from(min) << 2
            | u32::from(etc1) << 5
            | texture.wrap.1.code() << 8
            | texture.wrap.0.code() << 12
            | u32::from(mip) << 24
            | kind << 28;
        let bias = ((texture.lod.0 * 256.0).round() as i32 as u32) & 0x1FFF;
        self.write(base, u32::from_le_bytes(texture.border));
        self.write(base + 1, width << 16 | height);
        self.write(base + 2, param);
        self.write(
            base + 3,
            bias | (texture.max_level & 0xF) << 16 | (texture.lod.1 & 0xF) << 24,
        );
        self.write(base + 4, addresses.first().copied().unwrap_or(0) >> 3);
        if texture.kind.is_cube() {
            for (face, &address) in addresses.iter().enumerate().skip(1).take(5) {
                self.write(0x086 + face as u16 - 1, (address >> 3) & 0x3F_FFFF);
            }
        }
        self.write(UNIT_TYPE[unit % 3], texture.format.code())
    }

    /// Unit 0's shadow lookups (TEXUNIT0_SHADOW, docs/gpu-shadows.md): orthographic (no
    /// perspective divide) or not, and the depth bias (24-bit; its lowest bit is dropped).
    pub fn shadow_lookup(&mut self, orthographic: bool, bias: u32) -> &mut Self {
        self.write(
            id::TEXUNIT0_SHADOW,
            bias & 0xFF_FFFE | u32::from(orthographic),
        )
    }

    /// TEXUNIT_CONFIG: units 0-2 on by bits 0-2 of `enabled`; unit 2 reading texcoord 1
    /// when `texcoord2_from_1`.
    pub fn texture_units(&mut self, enabled: u32, texcoord2_from_1: bool) -> &mut Self {
        self.texture_units_and_proctex(enabled, texcoord2_from_1, None)
    }

    /// As [`SceneBuilder::texture_units`], with the procedural texture (unit 3) on and reading
    /// texture coordinate set `proctex` when it is `Some` (TEXUNIT_CONFIG bits 10 and 8-9).
    pub fn texture_units_and_proctex(
        &mut self,
        enabled: u32,
        texcoord2_from_1: bool,
        proctex: Option<u32>,
    ) -> &mut Self {
        let value = (enabled & 7) | 1 << 12 | u32::from(texcoord2_from_1) << 13;
        let unit3 = proctex.map_or(0, |set| 1 << 10 | (set & 3) << 8);
        self.write(id::TEXUNIT_CONFIG, value | unit3 | 1 << 16)
    }

    /// The procedural texture's settings (docs/gpu-proctex.md), TEXUNIT3_PROCTEX0-5 in one
    /// consecutive write as citro3d does.
    pub fn proctex(&mut self, words: &[u32; 6]) -> &mut Self {
        self.commands
            .write_consecutive(id::TEXUNIT3_PROCTEX[0], words);
        self
    }

    /// Uploads procedural-texture table `table` (`fragment::proctex::table`) from entry 0:
    /// the index set, then the entries through the data FIFO, eight words a write.
    pub fn proctex_lut(&mut self, table: u32, entries: &[u32]) -> &mut Self {
        self.upload_table(
            id::PROCTEX_LUT,
            (table & 0xF) << 8,
            id::PROCTEX_LUT_DATA0,
            entries,
        )
    }

    /// A lookup table's upload: its index register set to `index`, then `entries` through
    /// the data FIFO from `data`, eight words a consecutive write.
    fn upload_table(
        &mut self,
        index_register: u16,
        index: u32,
        data: u16,
        entries: &[u32],
    ) -> &mut Self {
        self.write(index_register, index);
        for chunk in entries.chunks(8) {
            self.commands.write_consecutive(data, chunk);
        }
        self
    }

    /// Light `index`'s registers.
    pub fn light(&mut self, index: usize, light: &LightSetup) -> &mut Self {
        let base = 0x140 + 0x10 * (index as u16 % 8);
        for (k, &color) in light.colors.iter().enumerate() {
            self.write(base + k as u16, light_color_word(color));
        }
        let [x, y, z] = light.position.map(|c| FLOAT16.from_f32(c));
        self.write(base + 4, y << 16 | x);
        self.write(base + 5, z);
        let [sx, sy, sz] = light.spot_direction.map(|c| fixed13(-c));
        self.write(base + 6, sy << 16 | sx);
        self.write(base + 7, sz);
        let config = u32::from(light.directional)
            | u32::from(light.two_sided) << 1
            | u32::from(light.geometric[0]) << 2
            | u32::from(light.geometric[1]) << 3;
        self.write(base + 9, config);
        self.write(base + 0xA, FLOAT20.from_f32(light.attenuation.0));
        self.write(base + 0xB, FLOAT20.from_f32(light.attenuation.1))
    }

    /// Fragment lighting on with `environment`, or off.
    pub fn lighting(&mut self, environment: Option<&LightEnvironment>) -> &mut Self {
        let Some(env) = environment else {
            self.write(id::LIGHTING_ENABLE, 0);
            return self.write(0x1C6, 1);
        };
        self.write(id::LIGHTING_ENABLE, 1);
        self.write(0x1C6, 0);
        self.write(id::LIGHTING_AMBIENT, light_color_word(env.ambient));
        let count = env.lights.len().clamp(1, 8);
        self.write(id::LIGHTING_NUM_LIGHTS, count as u32 - 1);
        let permutation = env.lights[..count]
            .iter()
            .enumerate()
            .fold(0, |word, (slot, &light)| {
                word | ((light as u32 & 7) << (4 * slot))
            });
        self.write(id::LIGHTING_LIGHT_PERMUTATION, permutation);
        self.write(id::LIGHTING_CONFIG0, env.config0 | 0x400 | 1 << 31);
        self.write(id::LIGHTING_CONFIG1, env.config1 | 1 << 18);
        self.write(id::LIGHTING_LUTINPUT_ABS, env.lut_inputs[0]);
        self.write(id::LIGHTING_LUTINPUT_SELECT, env.lut_inputs[1]);
        self.write(id::LIGHTING_LUTINPUT_SCALE, env.lut_inputs[2])
    }

    /// Uploads lookup table slot `slot` (docs/gpu-lighting.md): the index set, then the 256
    /// entries through the data FIFO, eight words a write.
    pub fn lighting_lut(&mut self, slot: usize, entries: &[u32; LUT_ENTRIES]) -> &mut Self {
        let index = (slot as u32 & 0x1F) << 8;
        self.upload_table(
            id::LIGHTING_LUT_INDEX,
            index,
            id::LIGHTING_LUT_DATA0,
            entries,
        )
    }

    /// The fog and gas modes (TEXENV_UPDATE_BUFFER bits 0-2, bit 3) and the Z flip (bit 16),
    /// written with byte mask 0x5 as citro3d does, leaving the combiner-buffer bits alone.
    pub fn fog_mode(&mut self, fog_mode: u32, gas_depth: bool, z_flip: bool) -> &mut Self {
        let value = fog_mode & 7 | (gas_depth as u32) << 3 | (z_flip as u32) << 16;
        self.write_masked(id::TEXENV_UPDATE_BUFFER, value, 0x5)
    }

    /// The fog colour: red, green, blue.
    pub fn fog_color(&mut self, [r, g, b]: [u8; 3]) -> &mut Self {
        self.write(id::FOG_COLOR, u32::from_le_bytes([r, g, b, 0]))
    }

    /// Uploads the fog table (docs/gpu-fog-and-gas.md): the index set to 0, then the 128 entries
    /// through the data FIFO, eight words a write.
    pub fn fog_lut(&mut self, entries: &[u32; FOG_ENTRIES]) -> &mut Self {
        self.upload_table(id::FOG_LUT_INDEX, 0, id::FOG_LUT_DATA0, entries)
    }

    /// Ends the command buffer being written: FINALIZE, placed in memory, run as a command
    /// list.
    pub fn flush(&mut self) -> &mut Self {
        let commands = std::mem::take(&mut self.commands);
        if commands.words().is_empty() {
            return self;
        }
        let words = commands.finish();
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let address = self.data(&bytes, 16);
        self.external(external::COMMAND_LIST_ADDRESS[0], address >> 3);
        self.external(external::COMMAND_LIST_SIZE[0], bytes.len() as u32 >> 3);
        self.external(external::COMMAND_LIST_TRIGGER[0], 1);
        self
    }

    /// A write to the external register at `offset` from the GPU block.
    fn external(&mut self, offset: u32, value: u32) {
        self.trace.ops.push(TraceOp::RegisterWrite {
            address: GPU_REGISTERS + offset,
            value,
        });
    }

    /// Fills `[start, start + len)` with `value` through memory-fill unit 0 (citro3d's
    /// `C3D_RenderTargetClear`, GX SetMemoryFill): `width` 16, 24 or 32 bits. `start` and
    /// `len` are multiples of 8 (the unit's address granularity).
    pub fn memory_fill(&mut self, start: u32, len: u32, value: u32, width: u32) -> &mut Self {
        self.flush();
        let control = match width {
            16 => 0,
            24 => 1 << 8,
            _ => 2 << 8,
        };
        let fill = external::MEMORY_FILL[0];
        self.external(fill, start >> 3);
        self.external(fill + 4, (start + len) >> 3);
        self.external(fill + 8, value);
        self.external(fill + 0xC, control | 1);
        self
    }

    /// A display transfer (GX SetDisplayTransfer): the `width` × `height` surface at `input`
    /// in `from` format, tiled, to a linear `to`-format image at `output` (vertically flipped
    /// when `flip`), as an application presents a frame.
    pub fn display_transfer(
        &mut self,
        input: u32,
        output: u32,
        (width, height): (u32, u32),
        from: ColorFormat,
        to: ColorFormat,
        flip: bool,
    ) -> &mut Self {
        self.flush();
        let size = height << 16 | width;
        let flags = u32::from(flip) | from.transfer_code() << 8 | to.transfer_code() << 12;
        self.external(external::TRANSFER_INPUT, input >> 3);
        self.external(external::TRANSFER_OUTPUT, output >> 3);
        self.external(external::TRANSFER_INPUT_SIZE, size);
        self.external(external::TRANSFER_OUTPUT_SIZE, size);
        self.external(external::TRANSFER_FLAGS, flags);
        self.external(external::TRANSFER_TRIGGER, 1);
        self
    }

    /// Points `screen`'s LCD at the linear `format` framebuffer at `address`, `side` pixels
    /// per memory row (240) and `rows` rows (400 top, 320 bottom), as the GSP does when an
    /// application swaps buffers (the registers of [`crate::framebuffer::display`]); `second` selects the
    /// second of the two framebuffer registers.
    pub fn present(
        &mut self,
        screen: Screen,
        address: u32,
        format: ColorFormat,
        (side, rows): (u32, u32),
        second: bool,
    ) -> &mut Self {
        self.flush();
        let block = screen.block();
        self.external(block + offset::SIZE, rows << 16 | side);
        self.external(block + offset::ADDRESS[usize::from(second)], address);
        self.external(block + offset::FORMAT, format.transfer_code());
        self.external(block + offset::SELECT, u32::from(second));
        self.external(block + offset::STRIDE, side * format.bytes() as u32);
        self
    }

    /// Ends a frame: flushes the commands and adds a frame marker.
    pub fn end_frame(&mut self) -> &mut Self {
        self.flush();
        self.trace.ops.push(TraceOp::FrameMarker);
        self
    }

    /// An operation the builder has no call for, in stream order (the commands so far are
    /// flushed first).
    pub fn op(&mut self, op: TraceOp) -> &mut Self {
        self.flush();
        self.trace.ops.push(op);
        self
    }

    /// The trace (the commands so far flushed).
    pub fn finish(mut self) -> Trace {
        self.flush();
        self.trace
    }
}
