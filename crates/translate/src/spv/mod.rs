//! The SPIR-V printer: a Vulkan vertex or geometry shader module (SPIR-V 1.0, `Shader`
//! capability, and `Geometry` for a geometry shader) from the same IR the GLSL printer prints
//! (docs/gpu-shaders.md, "SPIR-V").
//!
//! The module is written word by word: the IR has structured control flow only, so each
//! statement maps to one SPIR-V construct (an `if` to a selection with its merge block, a loop
//! to a loop header, body, continue target and merge block, a switch to `OpSwitch`). Every float
//! addition, subtraction, multiplication and division is decorated `NoContraction`, SPIR-V's
//! `precise`: no driver may fuse or reorder it. Expressions are values, evaluated where the
//! statement that uses them is, as in GLSL; a node shared inside one statement is evaluated
//! once.
//!
//! Each statement's comment (its PICA address and instruction) becomes a line of the module's
//! `OpSource` text, and the statement's instructions carry an `OpLine` pointing at it, so a
//! shader debugger shows the PICA listing beside the code.

use rustc_hash::FxHashMap;

use spirv::{
    AddressingModel, BuiltIn, Capability, Decoration, ExecutionMode, ExecutionModel,
    FunctionControl, LoopControl, MemoryModel, Op, SelectionControl, SourceLanguage, StorageClass,
};

use crate::geometry::{GeometryForm, PACKET_VECTORS};
use crate::interface::Interface;
use crate::ir::*;

mod function;
mod kept;

use function::FunctionWriter;

/// How a module is printed beyond the interface.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpirvOptions {
    /// The variables captured by transform feedback into buffer 0, in this order, 16 bytes
    /// each (`Some(n)`: output oN, `None`: the end state; [`captured`] lists them all): what
    /// the checking engine reads back. Empty: no capture, and no `TransformFeedback`
    /// capability.
    pub capture: Vec<Option<u8>>,
    /// Write the interface's banner and each statement's comment (its PICA address and
    /// instruction) as the module's `OpSource` text, with an `OpLine` per statement.
    pub listing: bool,
}

/// The output location of the end state (after o0-o15).
pub const END_STATE_LOCATION: u32 = 16;

/// The uniform block's descriptor set and binding.
pub const BLOCK_SET: u32 = 0;
/// The uniform block's binding in [`BLOCK_SET`].
pub const BLOCK_BINDING: u32 = 0;
/// A geometry shader's state block's binding in [`BLOCK_SET`]
/// ([`crate::geometry::state`]).
pub const GEOMETRY_BINDING: u32 = 1;

/// What a capture record holds, in order: `Some(n)` for output oN, `None` for the end state.
pub fn captured(module: &Module) -> Vec<Option<u8>> {
    let mut out: Vec<Option<u8>> = (0..16u8)
        .filter(|n| module.outputs & (1 << n) != 0)
        .map(Some)
        .collect();
    if module.end_state {
        out.push(None);
    }
    out
}

/// `module` as SPIR-V words with `interface` (its block name names the uniform block's type;
/// outputs are always `Output` variables at locations 0-15, whatever the interface's output
/// style: SPIR-V modules are not linked with the caller's code).
///
/// A geometry shader's module takes points (its inputs `vec4[1]` arrays at locations 0-15, as
/// [`crate::geometry::vertex_stage`] passes them on), its state block at [`GEOMETRY_BINDING`], and outputs a
/// triangle strip of o0-o15 (the triangle form) or points of the 16 packet vectors at
/// locations 0-15 (the record form, always decorated for capture into buffer 0).
pub fn print(module: &Module, interface: &Interface, options: &SpirvOptions) -> Vec<u32> {
    print_with(module, interface, options, true)
}

/// [`print`], replaying the kept helpers recorded before or writing every function anew.
fn print_with(
    module: &Module,
    interface: &Interface,
    options: &SpirvOptions,
    reuse: bool,
) -> Vec<u32> {
    let mut w = Writer::new();
    w.reuse = reuse;
    w.module(module, interface, options);
    w.finish()
}

/// Words as the little-endian bytes of a `.spv` file.
pub fn to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A type as SPIR-V sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum TypeKey {
    Void,
    Bool,
    Int,
    Uint,
    Float,
    Vector(u32, u8),
    Array(u32, u32),
    Pointer(StorageClass, u32),
    Function(u32, Vec<u32>),
}

/// Where a statement's values are created: the block being filled.
struct Writer {
    bound: u32,
    capabilities: Vec<u32>,
    entry_points: Vec<u32>,
    modes: Vec<u32>,
    names: Vec<u32>,
    annotations: Vec<u32>,
    globals: Vec<u32>,
    code: Vec<u32>,
    types: FxHashMap<TypeKey, u32>,
    /// The ids of the scalar and vector types, by scalar and lane count (0: not made yet).
    type_ids: [[u32; 5]; 4],
    constants: FxHashMap<(Type, [u32; 4]), u32>,
    source: String,
    source_lines: u32,
    listing: bool,
    file: u32,
    // The interface's variables.
    inputs: [u32; 16],
    outputs: [u32; 16],
    block: u32,
    end_state: u32,
    geometry: Option<crate::geometry::Geometry>,
    geometry_block: u32,
    packets: [u32; 16],
    /// While a helper is recorded ([`kept`]): the origin of each id made, from [`kept::BASE`].
    origins: Option<Vec<kept::Origin>>,
    /// Whether the kept helpers are replayed ([`kept`]), not written anew.
    reuse: bool,
}

/// The module-level ids a function may name, in the order of [`Writer::global_ids`].
const GLOBAL_IDS: usize = 16 + 16 + 16 + 4;

/// An instruction's first word: its word count (`operands` words after this one) and opcode.
fn opening(op: Op, operands: usize) -> u32 {
    ((operands as u32 + 1) << 16) | op as u32
}

/// Appends one instruction.
fn emit(buf: &mut Vec<u32>, op: Op, operands: &[u32]) {
    buf.push(opening(op, operands.len()));
    buf.extend_from_slice(operands);
}

/// A literal string's words: UTF-8, NUL-terminated, padded to a word.
fn string_words(text: &str) -> Vec<u32> {
    let mut bytes = text.as_bytes().to_vec();
    bytes.push(0);
    while !bytes.len().is_multiple_of(4) {
        bytes.push(0);
    }
    bytes
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The longest literal string an instruction holds (its word count is 16 bits), with room
/// for the other operands.
const STRING_BYTES: usize = 65_000 * 4;

impl Writer {
    fn new() -> Writer {
        Writer {
            bound: 1,
            capabilities: Vec::new(),
            entry_points: Vec::new(),
            modes: Vec::new(),
            names: Vec::new(),
            annotations: Vec::new(),
            globals: Vec::new(),
            code: Vec::new(),
            types: FxHashMap::default(),
            type_ids: [[0; 5]; 4],
            constants: FxHashMap::default(),
            source: String::new(),
            source_lines: 0,
            listing: false,
            file: 0,
            inputs: [0; 16],
            outputs: [0; 16],
            block: 0,
            end_state: 0,
            geometry: None,
            geometry_block: 0,
            packets: [0; 16],
            origins: None,
            reuse: true,
        }
    }

    fn id(&mut self) -> u32 {
        let id = self.bound;
        self.bound += 1;
        if let Some(origins) = &mut self.origins {
            origins.push(kept::Origin::Local);
        }
        id
    }

    /// Notes where the id just made comes from, while a helper is recorded.
    fn tag(&mut self, id: u32, origin: kept::Origin) {
        if let Some(origins) = &mut self.origins {
            origins[(id - kept::BASE) as usize] = origin;
        }
    }

    /// The module-level ids a function may name: the interface's variables and the listing's
    /// file.
    fn global_ids(&self) -> [u32; GLOBAL_IDS] {
        let mut ids = [0; GLOBAL_IDS];
        ids[..16].copy_from_slice(&self.inputs);
        ids[16..32].copy_from_slice(&self.outputs);
        ids[32..48].copy_from_slice(&self.packets);
        ids[48..].copy_from_slice(&[self.block, self.end_state, self.geometry_block, self.file]);
        ids
    }

    fn set_global_ids(&mut self, ids: [u32; GLOBAL_IDS]) {
        self.inputs.copy_from_slice(&ids[..16]);
        self.outputs.copy_from_slice(&ids[16..32]);
        self.packets.copy_from_slice(&ids[32..48]);
        [self.block, self.end_state, self.geometry_block, self.file] =
            [ids[48], ids[49], ids[50], ids[51]];
    }

    /// A new `OpConstantNull` of the type `ty` (a local array's initialiser).
    fn null(&mut self, ty: u32) -> u32 {
        let id = self.id();
        emit(&mut self.globals, Op::ConstantNull, &[ty, id]);
        self.tag(id, kept::Origin::Null(ty));
        id
    }

    /// `OpName`, its string written in place.
    fn name(&mut self, id: u32, name: &str) {
        let string = name.len() / 4 + 1;
        let names = &mut self.names;
        names.push(opening(Op::Name, 1 + string));
        names.push(id);
        let start = names.len();
        names.resize(start + string, 0);
        for (at, byte) in name.bytes().enumerate() {
            names[start + at / 4] |= u32::from(byte) << (8 * (at % 4));
        }
    }

    fn decorate(&mut self, id: u32, decoration: Decoration, literals: &[u32]) {
        let annotations = &mut self.annotations;
        annotations.push(opening(Op::Decorate, 2 + literals.len()));
        annotations.push(id);
        annotations.push(decoration as u32);
        annotations.extend_from_slice(literals);
    }

    fn type_id(&mut self, key: TypeKey) -> u32 {
        if let Some(&id) = self.types.get(&key) {
            return id;
        }
        let id = self.id();
        match &key {
            TypeKey::Void => emit(&mut self.globals, Op::TypeVoid, &[id]),
            TypeKey::Bool => emit(&mut self.globals, Op::TypeBool, &[id]),
            TypeKey::Int => emit(&mut self.globals, Op::TypeInt, &[id, 32, 1]),
            TypeKey::Uint => emit(&mut self.globals, Op::TypeInt, &[id, 32, 0]),
            TypeKey::Float => emit(&mut self.globals, Op::TypeFloat, &[id, 32]),
            TypeKey::Vector(scalar, lanes) => emit(
                &mut self.globals,
                Op::TypeVector,
                &[id, *scalar, *lanes as u32],
            ),
            TypeKey::Array(element, length) => {
                emit(&mut self.globals, Op::TypeArray, &[id, *element, *length])
            }
            TypeKey::Pointer(class, pointee) => emit(
                &mut self.globals,
                Op::TypePointer,
                &[id, *class as u32, *pointee],
            ),
            TypeKey::Function(result, params) => {
                let mut operands = vec![id, *result];
                operands.extend_from_slice(params);
                emit(&mut self.globals, Op::TypeFunction, &operands);
            }
        }
        if self.origins.is_some() {
            self.tag(id, kept::Origin::Type(key.clone()));
        }
        self.types.insert(key, id);
        id
    }

    fn scalar_type(&mut self, scalar: Scalar) -> u32 {
        self.type_id(match scalar {
            Scalar::Bool => TypeKey::Bool,
            Scalar::Int => TypeKey::Int,
            Scalar::Uint => TypeKey::Uint,
            Scalar::Float => TypeKey::Float,
        })
    }

    fn ty(&mut self, ty: Type) -> u32 {
        let slot = (ty.scalar as usize, ty.lanes as usize);
        if let Some(&id) = self.type_ids.get(slot.0).and_then(|row| row.get(slot.1))
            && id != 0
        {
            return id;
        }
        let scalar = self.scalar_type(ty.scalar);
        let id = if ty.lanes == 1 {
            scalar
        } else {
            self.type_id(TypeKey::Vector(scalar, ty.lanes))
        };
        if let Some(entry) = self
            .type_ids
            .get_mut(slot.0)
            .and_then(|row| row.get_mut(slot.1))
        {
            *entry = id;
        }
        id
    }

    fn pointer(&mut self, class: StorageClass, pointee: u32) -> u32 {
        self.type_id(TypeKey::Pointer(class, pointee))
    }

    fn array(&mut self, element: u32, length: u32) -> u32 {
        let length = self.constant(Type::UINT, [length; 4]);
        self.type_id(TypeKey::Array(element, length))
    }

    fn constant(&mut self, ty: Type, bits: [u32; 4]) -> u32 {
        let mut bits = bits;
        for lane in bits.iter_mut().skip(ty.lanes as usize) {
            *lane = 0;
        }
        if ty.scalar == Scalar::Bool {
            for lane in &mut bits {
                *lane = (*lane != 0) as u32;
            }
        }
        if let Some(&id) = self.constants.get(&(ty, bits)) {
            return id;
        }
        let id = if ty.lanes == 1 {
            let type_id = self.ty(ty);
            let id = self.id();
            match (ty.scalar, bits[0]) {
                (Scalar::Bool, 0) => emit(&mut self.globals, Op::ConstantFalse, &[type_id, id]),
                (Scalar::Bool, _) => emit(&mut self.globals, Op::ConstantTrue, &[type_id, id]),
                (_, b) => emit(&mut self.globals, Op::Constant, &[type_id, id, b]),
            }
            id
        } else {
            let lanes: Vec<u32> = (0..ty.lanes as usize)
                .map(|l| self.constant(Type::scalar(ty.scalar), [bits[l]; 4]))
                .collect();
            let type_id = self.ty(ty);
            let id = self.id();
            let mut operands = vec![type_id, id];
            operands.extend(lanes);
            emit(&mut self.globals, Op::ConstantComposite, &operands);
            id
        };
        self.tag(id, kept::Origin::Constant(ty, bits));
        self.constants.insert((ty, bits), id);
        id
    }

    fn int(&mut self, value: i32) -> u32 {
        self.constant(Type::INT, [value as u32; 4])
    }

    fn global_variable(&mut self, class: StorageClass, pointee: u32, name: &str) -> u32 {
        let pointer = self.pointer(class, pointee);
        let id = self.id();
        emit(
            &mut self.globals,
            Op::Variable,
            &[pointer, id, class as u32],
        );
        self.name(id, name);
        id
    }

    /// A line of the `OpSource` text; returns its number.
    fn source_line(&mut self, text: &str) -> u32 {
        self.source.push_str(text);
        self.source.push('\n');
        self.source_lines += 1;
        self.source_lines
    }

    fn module(&mut self, module: &Module, interface: &Interface, options: &SpirvOptions) {
        emit(
            &mut self.capabilities,
            Op::Capability,
            &[Capability::Shader as u32],
        );
        self.geometry = module.geometry;
        let records = module
            .geometry
            .is_some_and(|g| g.form == GeometryForm::Records);
        if module.geometry.is_some() {
            emit(
                &mut self.capabilities,
                Op::Capability,
                &[Capability::Geometry as u32],
            );
        }
        let captures = !options.capture.is_empty() || records;
        if captures {
            emit(
                &mut self.capabilities,
                Op::Capability,
                &[Capability::TransformFeedback as u32],
            );
        }
        self.listing = options.listing;
        if self.listing {
            self.file = self.id();
            for line in interface.banner.lines() {
                self.source_line(line);
            }
        }

        // The interface.
        let vec4 = self.ty(Type::vector(Scalar::Float, 4));
        // A geometry shader's inputs are arrays of the one vertex of a point.
        let input = match module.geometry {
            Some(_) => self.array(vec4, 1),
            None => vec4,
        };
        for n in 0..16 {
            if module.inputs & (1 << n) != 0 {
                self.inputs[n] = self.global_variable(StorageClass::Input, input, &format!("v{n}"));
                self.decorate(self.inputs[n], Decoration::Location, &[n as u32]);
            }
        }
        for n in 0..16 {
            if module.outputs & (1 << n) != 0 {
                self.outputs[n] =
                    self.global_variable(StorageClass::Output, vec4, &format!("o{n}"));
                self.decorate(self.outputs[n], Decoration::Location, &[n as u32]);
            }
        }
        if module.end_state {
            let ivec4 = self.ty(Type::vector(Scalar::Int, 4));
            self.end_state = self.global_variable(StorageClass::Output, ivec4, "pica_end_state");
            self.decorate(self.end_state, Decoration::Location, &[END_STATE_LOCATION]);
            self.decorate(self.end_state, Decoration::Flat, &[]);
        }
        if !options.capture.is_empty() {
            let stride = 16 * options.capture.len() as u32;
            for (k, slot) in options.capture.iter().enumerate() {
                let var = match slot {
                    Some(n) => self.outputs[*n as usize],
                    None => self.end_state,
                };
                self.decorate(var, Decoration::XfbBuffer, &[0]);
                self.decorate(var, Decoration::XfbStride, &[stride]);
                self.decorate(var, Decoration::Offset, &[16 * k as u32]);
            }
        }
        let uvec4 = self.ty(Type::UVEC4);
        if records {
            let stride = 16 * PACKET_VECTORS as u32;
            for n in 0..PACKET_VECTORS {
                let var = self.global_variable(StorageClass::Output, uvec4, &format!("pica_p{n}"));
                self.decorate(var, Decoration::Location, &[n as u32]);
                self.decorate(var, Decoration::Flat, &[]);
                self.decorate(var, Decoration::XfbBuffer, &[0]);
                self.decorate(var, Decoration::XfbStride, &[stride]);
                self.decorate(var, Decoration::Offset, &[16 * n as u32]);
                self.packets[n] = var;
            }
        }
        let uint = self.ty(Type::UINT);
        let floats = self.array(uvec4, 96);
        let ints = self.array(uvec4, 4);
        self.decorate(floats, Decoration::ArrayStride, &[16]);
        if ints != floats {
            self.decorate(ints, Decoration::ArrayStride, &[16]);
        }
        let block_type = self.id();
        emit(
            &mut self.globals,
            Op::TypeStruct,
            &[block_type, floats, ints, uint, uint],
        );
        self.name(block_type, &interface.block_name);
        for (member, (name, offset)) in [("c", 0u32), ("i", 1536), ("b", 1600), ("zero", 1604)]
            .into_iter()
            .enumerate()
        {
            let mut operands = vec![block_type, member as u32];
            operands.extend(string_words(name));
            emit(&mut self.names, Op::MemberName, &operands);
            emit(
                &mut self.annotations,
                Op::MemberDecorate,
                &[block_type, member as u32, Decoration::Offset as u32, offset],
            );
        }
        self.decorate(block_type, Decoration::Block, &[]);
        self.block = self.global_variable(StorageClass::Uniform, block_type, "pica");
        self.decorate(self.block, Decoration::DescriptorSet, &[BLOCK_SET]);
        self.decorate(self.block, Decoration::Binding, &[BLOCK_BINDING]);
        if module.geometry.is_some() {
            let vectors = self.array(uvec4, crate::geometry::state::VECTORS as u32);
            self.decorate(vectors, Decoration::ArrayStride, &[16]);
            let state_type = self.id();
            emit(&mut self.globals, Op::TypeStruct, &[state_type, vectors]);
            self.name(state_type, crate::glsl::GEOMETRY_BLOCK);
            let mut operands = vec![state_type, 0];
            operands.extend(string_words("s"));
            emit(&mut self.names, Op::MemberName, &operands);
            emit(
                &mut self.annotations,
                Op::MemberDecorate,
                &[state_type, 0, Decoration::Offset as u32, 0],
            );
            self.decorate(state_type, Decoration::Block, &[]);
            self.geometry_block = self.global_variable(
                StorageClass::Uniform,
                state_type,
                crate::glsl::GEOMETRY_INSTANCE,
            );
            self.decorate(self.geometry_block, Decoration::DescriptorSet, &[BLOCK_SET]);
            self.decorate(
                self.geometry_block,
                Decoration::Binding,
                &[GEOMETRY_BINDING],
            );
        }

        // The functions, callees first; the entry point last.
        let function_ids: Vec<u32> = module.functions.iter().map(|_| self.id()).collect();
        for (member, &id) in module.functions.iter().zip(&function_ids) {
            // The ids of what the function's calls name, by their place in its callee list.
            let callee_ids: Vec<u32> = member
                .callees
                .iter()
                .map(|c| function_ids[c.0 as usize])
                .collect();
            if self.reuse {
                kept::write(self, module, member, id, &callee_ids);
            } else {
                FunctionWriter::new(self, module, &member.function, &callee_ids).write(id);
            }
        }
        let entry = *function_ids.last().expect("an entry point");
        let model = match module.geometry {
            Some(_) => ExecutionModel::Geometry,
            None => ExecutionModel::Vertex,
        };
        let mut operands = vec![model as u32, entry];
        operands.extend(string_words(&interface.entry));
        operands.extend(self.inputs.iter().copied().filter(|&v| v != 0));
        operands.extend(self.outputs.iter().copied().filter(|&v| v != 0));
        operands.extend(self.packets.iter().copied().filter(|&v| v != 0));
        if self.end_state != 0 {
            operands.push(self.end_state);
        }
        emit(&mut self.entry_points, Op::EntryPoint, &operands);
        if let Some(g) = module.geometry {
            let output = match g.form {
                GeometryForm::Triangles => ExecutionMode::OutputTriangleStrip,
                GeometryForm::Records => ExecutionMode::OutputPoints,
            };
            let mode = |w: &mut Writer, mode: ExecutionMode, literals: &[u32]| {
                let mut operands = vec![entry, mode as u32];
                operands.extend_from_slice(literals);
                emit(&mut w.modes, Op::ExecutionMode, &operands);
            };
            mode(self, ExecutionMode::InputPoints, &[]);
            mode(self, ExecutionMode::Invocations, &[1]);
            mode(self, output, &[]);
            mode(self, ExecutionMode::OutputVertices, &[g.max_vertices()]);
        }
        if captures {
            emit(
                &mut self.modes,
                Op::ExecutionMode,
                &[entry, ExecutionMode::Xfb as u32],
            );
        }
        let _ = BuiltIn::Position; // Position is the caller's: the output map stays theirs.
    }

    fn finish(mut self) -> Vec<u32> {
        let mut debug = Vec::new();
        if self.listing {
            self.source_text(&mut debug);
        }
        let sections = [
            &self.capabilities,
            &self.entry_points,
            &self.modes,
            &debug,
            &self.names,
            &self.annotations,
            &self.globals,
            &self.code,
        ];
        let words = 5 + 3 + sections.iter().map(|s| s.len()).sum::<usize>();
        let mut out = Vec::with_capacity(words);
        out.extend([spirv::MAGIC_NUMBER, 0x0001_0000, 0, self.bound, 0]);
        out.extend(self.capabilities);
        emit(
            &mut out,
            Op::MemoryModel,
            &[AddressingModel::Logical as u32, MemoryModel::GLSL450 as u32],
        );
        out.extend(self.entry_points);
        out.extend(self.modes);
        out.extend(debug);
        out.extend(self.names);
        out.extend(self.annotations);
        out.extend(self.globals);
        out.extend(self.code);
        out
    }

    /// The listing's `OpString` and `OpSource` (continued past the longest literal).
    fn source_text(&mut self, debug: &mut Vec<u32>) {
        let mut operands = vec![self.file];
        operands.extend(string_words("pica-listing"));
        emit(debug, Op::String, &operands);
        let source = std::mem::take(&mut self.source);
        let mut pieces = Vec::new();
        let mut rest = source.as_str();
        while !rest.is_empty() {
            let mut end = rest.len().min(STRING_BYTES);
            while !rest.is_char_boundary(end) {
                end -= 1;
            }
            pieces.push(&rest[..end]);
            rest = &rest[end..];
        }
        let mut operands = vec![SourceLanguage::Unknown as u32, 0, self.file];
        if let Some(first) = pieces.first() {
            operands.extend(string_words(first));
        }
        emit(debug, Op::Source, &operands);
        for piece in pieces.iter().skip(1) {
            emit(debug, Op::SourceContinued, &string_words(piece));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::program;
    use crate::{Options, translate};
    use shader::float24::Precision;

    #[test]
    fn replayed_helpers_give_the_words_writing_them_anew_gives() {
        // Programs sharing some helpers and not others, in turn, so that each replays helpers
        // recorded in modules that declared other types and constants before them.
        let bodies = [
            "dp4 outpos.x, ma, v0\nmul outc, mb, v1\nend",
            "rcp outpos, v0.x\ndp4 outc.y, ma, v1\nend",
            "ex2 outpos, v0.y\nrcp outc, v1.z\nmov r0, v0\nmul outc.x, r0, v0\nend",
            "lg2 outpos, v0.y\nslt outc, v1, ma\nflr outc.y, v0\nmova a0.x, v1\nend",
            "rsq outpos, v0.x\nmov r1, v1\nmad outc, r1, ma, v0\nmax outc.z, ma, v0\nend",
        ];
        let listing = SpirvOptions {
            listing: true,
            ..SpirvOptions::default()
        };
        let interface = Interface::default();
        let mut compared = 0;
        for precision in Precision::ALL {
            let options = Options {
                precision,
                ..Options::default()
            };
            for spirv_options in [&SpirvOptions::default(), &listing] {
                for _ in 0..2 {
                    for body in bodies {
                        let module = translate(&program(body), &options, "main").unwrap().module;
                        let anew = print_with(&module, &interface, spirv_options, false);
                        let replayed = print_with(&module, &interface, spirv_options, true);
                        assert_eq!(replayed, anew, "{body} in {precision}");
                        compared += 1;
                    }
                }
            }
        }
        assert_eq!(compared, Precision::ALL.len() * 2 * 2 * bodies.len());
        // The helpers were recorded, so the comparisons above replayed them.
        assert!(
            kept::kept_words() > 1000,
            "{} words kept",
            kept::kept_words()
        );
    }
}
