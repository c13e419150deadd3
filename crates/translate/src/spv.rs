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
    let mut w = Writer::new();
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
}

/// Appends one instruction.
fn emit(buf: &mut Vec<u32>, op: Op, operands: &[u32]) {
    buf.push(((operands.len() as u32 + 1) << 16) | op as u32);
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
        }
    }

    fn id(&mut self) -> u32 {
        let id = self.bound;
        self.bound += 1;
        id
    }

    fn name(&mut self, id: u32, name: &str) {
        let mut operands = vec![id];
        operands.extend(string_words(name));
        emit(&mut self.names, Op::Name, &operands);
    }

    fn decorate(&mut self, id: u32, decoration: Decoration, literals: &[u32]) {
        let mut operands = vec![id, decoration as u32];
        operands.extend_from_slice(literals);
        emit(&mut self.annotations, Op::Decorate, &operands);
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
        for (function, &id) in module.functions.iter().zip(&function_ids) {
            FunctionWriter::new(self, module, function, &function_ids).write(id);
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
        let mut out = vec![spirv::MAGIC_NUMBER, 0x0001_0000, 0, self.bound, 0];
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

/// What `break` and `continue` leave to.
#[derive(Clone, Copy)]
enum Target {
    Loop { merge: u32, continue_target: u32 },
    Switch { merge: u32 },
}

/// One function being written.
struct FunctionWriter<'w, 'm> {
    w: &'w mut Writer,
    module: &'m Module,
    function: &'m Function,
    function_ids: &'m [u32],
    params: Vec<u32>,
    locals: Vec<u32>,
    lets: Vec<u32>,
    /// The values of the statement being written.
    values: Vec<u32>,
    /// The statement each entry of `values` belongs to (`values` is valid where it is `now`).
    valued: Vec<u32>,
    now: u32,
    /// Whether the block being filled is open (not ended by a branch or return).
    open: bool,
    targets: Vec<Target>,
    /// Per target, whether a `break` reached its merge block.
    merged: Vec<bool>,
}

impl<'w, 'm> FunctionWriter<'w, 'm> {
    fn new(
        w: &'w mut Writer,
        module: &'m Module,
        function: &'m Function,
        function_ids: &'m [u32],
    ) -> Self {
        FunctionWriter {
            w,
            module,
            function,
            function_ids,
            params: Vec::new(),
            locals: Vec::new(),
            lets: vec![0; function.lets.len()],
            values: vec![0; function.exprs.len()],
            valued: vec![0; function.exprs.len()],
            now: 0,
            open: false,
            targets: Vec::new(),
            merged: Vec::new(),
        }
    }

    fn inst(&mut self, op: Op, operands: &[u32]) {
        emit(&mut self.w.code, op, operands);
    }

    /// An instruction with a result of type `ty`; returns the result.
    fn value(&mut self, op: Op, ty: u32, operands: &[u32]) -> u32 {
        let id = self.w.id();
        let mut all = vec![ty, id];
        all.extend_from_slice(operands);
        emit(&mut self.w.code, op, &all);
        id
    }

    fn label(&mut self, id: u32) {
        self.inst(Op::Label, &[id]);
        self.open = true;
    }

    fn branch(&mut self, target: u32) {
        if self.open {
            self.inst(Op::Branch, &[target]);
            self.open = false;
        }
    }

    fn write(&mut self, id: u32) {
        let f = self.function;
        let result = match f.result {
            Some(t) => self.w.ty(t),
            None => self.w.type_id(TypeKey::Void),
        };
        let param_types: Vec<u32> = f.params.iter().map(|(_, t)| self.w.ty(*t)).collect();
        let fn_type = self
            .w
            .type_id(TypeKey::Function(result, param_types.clone()));
        self.w.name(id, &f.name);
        self.inst(
            Op::Function,
            &[result, id, FunctionControl::NONE.bits(), fn_type],
        );
        for ((name, _), ty) in f.params.iter().zip(param_types) {
            let p = self.w.id();
            self.inst(Op::FunctionParameter, &[ty, p]);
            self.w.name(p, name);
            self.params.push(p);
        }
        let entry = self.w.id();
        self.label(entry);
        for local in &f.locals {
            let element = self.w.ty(local.ty);
            let (ty, init) = match local.array {
                Some(length) => {
                    let array = self.w.array(element, length);
                    let null = self.w.id();
                    emit(&mut self.w.globals, Op::ConstantNull, &[array, null]);
                    (array, null)
                }
                None => (
                    element,
                    self.w.constant(local.ty, local.init.unwrap_or([0; 4])),
                ),
            };
            let pointer = self.w.pointer(StorageClass::Function, ty);
            let var = self.w.id();
            self.inst(
                Op::Variable,
                &[pointer, var, StorageClass::Function as u32, init],
            );
            self.w.name(var, &local.name);
            self.locals.push(var);
        }
        self.block(&f.body);
        if self.open {
            if f.result.is_none() {
                self.inst(Op::Return, &[]);
            } else {
                self.inst(Op::Unreachable, &[]);
            }
            self.open = false;
        }
        self.inst(Op::FunctionEnd, &[]);
    }

    fn block(&mut self, stmts: &[Stmt]) {
        for stmt in stmts {
            if !self.open {
                // Unreachable: after a break, continue or return.
                return;
            }
            self.now += 1;
            self.stmt(stmt);
        }
    }

    /// A construct's merge block: reachable, or closed at once when nothing reaches it.
    fn merge(&mut self, merge: u32, reached: bool) {
        self.label(merge);
        if !reached {
            self.inst(Op::Unreachable, &[]);
            self.open = false;
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match stmt {
            Stmt::Let(id, e) => {
                let v = self.expr(*e);
                self.lets[id.0 as usize] = v;
                let name = format!("{}{}", self.function.lets[id.0 as usize].0, id.0);
                self.w.name(v, &name);
            }
            Stmt::Store(place, lanes, value) => self.store(*place, lanes.as_deref(), *value),
            Stmt::EmitVertex => self.inst(Op::EmitVertex, &[]),
            Stmt::EndPrimitive => self.inst(Op::EndPrimitive, &[]),
            Stmt::If(c, then, otherwise) => {
                let c = self.expr(*c);
                let then_label = self.w.id();
                let else_label = self.w.id();
                let merge = self.w.id();
                self.inst(Op::SelectionMerge, &[merge, SelectionControl::NONE.bits()]);
                let false_target = if otherwise.is_empty() {
                    merge
                } else {
                    else_label
                };
                self.inst(Op::BranchConditional, &[c, then_label, false_target]);
                self.open = false;
                let mut reached = otherwise.is_empty();
                self.label(then_label);
                self.block(then);
                reached |= self.open;
                self.branch(merge);
                if !otherwise.is_empty() {
                    self.label(else_label);
                    self.block(otherwise);
                    reached |= self.open;
                    self.branch(merge);
                }
                self.merge(merge, reached);
            }
            Stmt::Loop(body) => {
                let header = self.w.id();
                let body_label = self.w.id();
                let continue_target = self.w.id();
                let merge = self.w.id();
                self.branch(header);
                self.label(header);
                self.inst(
                    Op::LoopMerge,
                    &[merge, continue_target, LoopControl::NONE.bits()],
                );
                self.inst(Op::Branch, &[body_label]);
                self.open = false;
                self.label(body_label);
                self.targets.push(Target::Loop {
                    merge,
                    continue_target,
                });
                self.merged.push(false);
                self.block(body);
                self.branch(continue_target);
                self.targets.pop();
                let reached = self.merged.pop().unwrap_or(false);
                self.label(continue_target);
                self.inst(Op::Branch, &[header]);
                self.open = false;
                self.merge(merge, reached);
            }
            Stmt::Switch(selector, cases, default) => {
                let selector = self.expr(*selector);
                let merge = self.w.id();
                let default_label = self.w.id();
                let labels: Vec<u32> = cases.iter().map(|_| self.w.id()).collect();
                self.inst(Op::SelectionMerge, &[merge, SelectionControl::NONE.bits()]);
                let mut operands = vec![selector, default_label];
                for ((values, _), &label) in cases.iter().zip(&labels) {
                    for &value in values {
                        operands.push(value as u32);
                        operands.push(label);
                    }
                }
                self.inst(Op::Switch, &operands);
                self.open = false;
                self.targets.push(Target::Switch { merge });
                self.merged.push(false);
                let mut reached = false;
                for ((_, body), &label) in cases.iter().zip(&labels) {
                    self.label(label);
                    self.block(body);
                    reached |= self.open;
                    self.branch(merge);
                }
                self.label(default_label);
                self.block(default);
                reached |= self.open;
                self.branch(merge);
                self.targets.pop();
                reached |= self.merged.pop().unwrap_or(false);
                self.merge(merge, reached);
            }
            Stmt::Break => {
                let target = match self.targets.last() {
                    Some(Target::Loop { merge, .. }) | Some(Target::Switch { merge }) => *merge,
                    None => unreachable!("a break outside any loop"),
                };
                if let Some(m) = self.merged.last_mut() {
                    *m = true;
                }
                self.branch(target);
            }
            Stmt::Continue => {
                let target = self
                    .targets
                    .iter()
                    .rev()
                    .find_map(|t| match t {
                        Target::Loop {
                            continue_target, ..
                        } => Some(*continue_target),
                        Target::Switch { .. } => None,
                    })
                    .expect("a continue inside a loop");
                self.branch(target);
            }
            Stmt::Return(value) => {
                match value {
                    Some(e) => {
                        let v = self.expr(*e);
                        self.inst(Op::ReturnValue, &[v]);
                    }
                    None => self.inst(Op::Return, &[]),
                }
                self.open = false;
            }
            Stmt::Comment(_) if !self.w.listing => {}
            Stmt::Comment(text) => {
                let mut first = 0;
                for line in text.lines() {
                    let n = self.w.source_line(line);
                    if first == 0 {
                        first = n;
                    }
                }
                if first != 0 {
                    let file = self.w.file;
                    self.inst(Op::Line, &[file, first, 0]);
                }
            }
        }
    }

    /// A pointer to `place` and the type of what it points to.
    fn pointer(&mut self, place: Place) -> (u32, u32) {
        match place {
            Place::Local(l) => {
                let local = &self.function.locals[l.0 as usize];
                (self.locals[l.0 as usize], self.w.ty(local.ty))
            }
            Place::Element(l, i) => {
                let ty = self.function.locals[l.0 as usize].ty;
                let index = self.expr(i);
                let element = self.w.ty(ty);
                let pointer = self.w.pointer(StorageClass::Function, element);
                let base = self.locals[l.0 as usize];
                (
                    self.value(Op::AccessChain, pointer, &[base, index]),
                    element,
                )
            }
            Place::Global(g) => match g {
                Global::Input(n) if self.w.geometry.is_some() => {
                    let vec4 = self.w.ty(Type::vector(Scalar::Float, 4));
                    let pointer = self.w.pointer(StorageClass::Input, vec4);
                    let first = self.w.int(0);
                    let input = self.w.inputs[n as usize];
                    (self.value(Op::AccessChain, pointer, &[input, first]), vec4)
                }
                Global::Input(n) => {
                    let vec4 = self.w.ty(Type::vector(Scalar::Float, 4));
                    (self.w.inputs[n as usize], vec4)
                }
                Global::Output(n) => {
                    let vec4 = self.w.ty(Type::vector(Scalar::Float, 4));
                    (self.w.outputs[n as usize], vec4)
                }
                Global::EndState => {
                    let ivec4 = self.w.ty(Type::vector(Scalar::Int, 4));
                    (self.w.end_state, ivec4)
                }
                Global::BoolUniforms => self.block_member(2, None),
                Global::OpaqueZero => self.block_member(3, None),
                Global::FloatUniforms | Global::IntUniforms | Global::GeometryState => {
                    unreachable!("an indexed global used whole")
                }
                Global::Packet(n) => (self.w.packets[n as usize], self.w.ty(Type::UVEC4)),
            },
            Place::GlobalElement(Global::GeometryState, i) => {
                let index = self.expr(i);
                let uvec4 = self.w.ty(Type::UVEC4);
                let pointer = self.w.pointer(StorageClass::Uniform, uvec4);
                let member = self.w.int(0);
                let block = self.w.geometry_block;
                (
                    self.value(Op::AccessChain, pointer, &[block, member, index]),
                    uvec4,
                )
            }
            Place::GlobalElement(g, i) => {
                let member = match g {
                    Global::FloatUniforms => 0,
                    Global::IntUniforms => 1,
                    _ => unreachable!("{g:?} is not indexed"),
                };
                let index = self.expr(i);
                self.block_member(member, Some(index))
            }
        }
    }

    fn block_member(&mut self, member: i32, index: Option<u32>) -> (u32, u32) {
        let ty = if index.is_some() {
            self.w.ty(Type::UVEC4)
        } else {
            self.w.ty(Type::UINT)
        };
        let pointer = self.w.pointer(StorageClass::Uniform, ty);
        let member = self.w.int(member);
        let mut operands = vec![self.w.block, member];
        operands.extend(index);
        (self.value(Op::AccessChain, pointer, &operands), ty)
    }

    fn store(&mut self, place: Place, lanes: Option<&[u8]>, value: ExprId) {
        let mut v = self.expr(value);
        let value_ty = self.function.type_of(value);
        let (pointer, pointee) = self.pointer(place);
        let is_output = matches!(place, Place::Global(Global::Output(_)));
        if is_output {
            let float = self.w.ty(value_ty.with_scalar(Scalar::Float));
            v = self.value(Op::Bitcast, float, &[v]);
        }
        match lanes {
            None => self.inst(Op::Store, &[pointer, v]),
            Some([lane]) => {
                let scalar = match place {
                    Place::Global(Global::Output(_)) => Scalar::Float,
                    Place::Global(Global::EndState) => Scalar::Int,
                    Place::Local(l) | Place::Element(l, _) => {
                        self.function.locals[l.0 as usize].ty.scalar
                    }
                    _ => value_ty.scalar,
                };
                let scalar = self.w.scalar_type(scalar);
                let class = match place {
                    Place::Global(_) => StorageClass::Output,
                    _ => StorageClass::Function,
                };
                let lane_pointer = self.w.pointer(class, scalar);
                let index = self.w.int(*lane as i32);
                let p = self.value(Op::AccessChain, lane_pointer, &[pointer, index]);
                self.inst(Op::Store, &[p, v]);
            }
            Some(lanes) => {
                let old = self.value(Op::Load, pointee, &[pointer]);
                let width = self.place_lanes(place);
                let mut operands = vec![old, v];
                for j in 0..width {
                    let from = lanes
                        .iter()
                        .position(|&l| l == j)
                        .map_or(j as u32, |p| width as u32 + p as u32);
                    operands.push(from);
                }
                let merged = self.value(Op::VectorShuffle, pointee, &operands);
                self.inst(Op::Store, &[pointer, merged]);
            }
        }
    }

    fn place_lanes(&self, place: Place) -> u8 {
        match place {
            Place::Local(l) | Place::Element(l, _) => self.function.locals[l.0 as usize].ty.lanes,
            Place::Global(g) | Place::GlobalElement(g, _) => global_type(g).lanes,
        }
    }

    /// `value` (of `lanes` lanes... or a scalar) as a vector of `lanes` lanes.
    fn splat(&mut self, value: u32, ty: Type, lanes: u8) -> u32 {
        if ty.lanes == lanes {
            return value;
        }
        let vector = self.w.ty(Type::vector(ty.scalar, lanes));
        let parts = vec![value; lanes as usize];
        self.value(Op::CompositeConstruct, vector, &parts)
    }

    fn expr(&mut self, e: ExprId) -> u32 {
        let k = e.0 as usize;
        if self.valued[k] == self.now {
            return self.values[k];
        }
        let v = self.evaluate(e);
        self.values[k] = v;
        self.valued[k] = self.now;
        v
    }

    fn evaluate(&mut self, e: ExprId) -> u32 {
        let ty = self.function.type_of(e);
        let type_id = self.w.ty(ty);
        let function: &'m Function = self.function;
        match *function.expr(e) {
            Expr::Constant(bits) => self.w.constant(ty, bits),
            Expr::Argument(n) => self.params[n as usize],
            Expr::Bound(id) => self.lets[id.0 as usize],
            Expr::Load(place) => {
                let (pointer, pointee) = self.pointer(place);
                let loaded = self.value(Op::Load, pointee, &[pointer]);
                if pointee == type_id {
                    loaded
                } else {
                    // The attributes and outputs are float vectors; the IR reads their bits.
                    self.value(Op::Bitcast, type_id, &[loaded])
                }
            }
            Expr::Unary(op, a) => {
                let a = self.expr(a);
                let op = match op {
                    UnaryOp::Not => Op::LogicalNot,
                    UnaryOp::BitNot => Op::Not,
                    UnaryOp::Negate => Op::SNegate,
                    UnaryOp::Any => Op::Any,
                    UnaryOp::All => Op::All,
                };
                self.value(op, type_id, &[a])
            }
            Expr::Binary(op, a, b) => {
                let (ta, tb) = (self.function.type_of(a), self.function.type_of(b));
                let lanes = ta.lanes.max(tb.lanes);
                let (a, b) = (self.expr(a), self.expr(b));
                let a = self.splat(a, ta, lanes);
                let b = self.splat(b, tb, lanes);
                self.binary(op, ta.scalar, type_id, a, b)
            }
            Expr::Select(c, a, b) => {
                let tc = self.function.type_of(c);
                let (c, a, b) = (self.expr(c), self.expr(a), self.expr(b));
                // SPIR-V 1.0 selects lane by lane only: a scalar condition is spread.
                let c = self.splat(c, tc, ty.lanes);
                if matches!(ty.scalar, Scalar::Uint | Scalar::Int) {
                    // Bits, as the GLSL printer selects them: lavapipe (Mesa 22.3.6) gave
                    // 0x80000000 for floor(+0) when FLR's selects were `OpSelect`s.
                    let ones = self.w.constant(ty, [u32::MAX; 4]);
                    let zero = self.w.constant(ty, [0; 4]);
                    let mask = self.value(Op::Select, type_id, &[c, ones, zero]);
                    let diff = self.value(Op::BitwiseXor, type_id, &[a, b]);
                    let picked = self.value(Op::BitwiseAnd, type_id, &[diff, mask]);
                    self.value(Op::BitwiseXor, type_id, &[b, picked])
                } else {
                    self.value(Op::Select, type_id, &[c, a, b])
                }
            }
            Expr::Swizzle(a, ref lanes) => {
                let ta = self.function.type_of(a);
                let a = self.expr(a);
                if ta.lanes == 1 {
                    return self.splat(a, ta, lanes.len() as u8);
                }
                if lanes.len() == 1 {
                    return self.value(Op::CompositeExtract, type_id, &[a, lanes[0] as u32]);
                }
                let mut operands = vec![a, a];
                operands.extend(lanes.iter().map(|&l| l as u32));
                self.value(Op::VectorShuffle, type_id, &operands)
            }
            Expr::Construct(ref parts) => self.construct(ty, parts),
            Expr::Convert(a) => {
                let from = self.function.type_of(a);
                let a = self.expr(a);
                self.convert(a, from, ty)
            }
            Expr::Bitcast(a) => {
                let from = self.function.type_of(a);
                let a = self.expr(a);
                if from == ty {
                    a
                } else {
                    self.value(Op::Bitcast, type_id, &[a])
                }
            }
            Expr::Call(f, ref args) => {
                let args: Vec<u32> = args.iter().map(|&a| self.expr(a)).collect();
                let mut operands = vec![self.function_ids[f.0 as usize]];
                operands.extend(args);
                let _ = self.module;
                self.value(Op::FunctionCall, type_id, &operands)
            }
        }
    }

    fn construct(&mut self, ty: Type, parts: &[ExprId]) -> u32 {
        let type_id = self.w.ty(ty);
        let types: Vec<Type> = parts.iter().map(|&p| self.function.type_of(p)).collect();
        let values: Vec<u32> = parts.iter().map(|&p| self.expr(p)).collect();
        let total: u32 = types.iter().map(|t| t.lanes as u32).sum();
        if values.len() == 1 && types[0].lanes == 1 {
            return self.splat(values[0], types[0], ty.lanes);
        }
        if total == ty.lanes as u32 {
            if values.len() == 1 {
                return values[0];
            }
            return self.value(Op::CompositeConstruct, type_id, &values);
        }
        // More lanes than the type holds: the first ones, as GLSL's constructors take them.
        let scalar = self.w.scalar_type(ty.scalar);
        let mut lanes = Vec::new();
        for (&v, t) in values.iter().zip(&types) {
            for l in 0..t.lanes {
                if t.lanes == 1 {
                    lanes.push(v);
                } else {
                    lanes.push(self.value(Op::CompositeExtract, scalar, &[v, l as u32]));
                }
            }
        }
        lanes.truncate(ty.lanes as usize);
        if ty.lanes == 1 {
            return lanes[0];
        }
        self.value(Op::CompositeConstruct, type_id, &lanes)
    }

    fn convert(&mut self, a: u32, from: Type, to: Type) -> u32 {
        let type_id = self.w.ty(to);
        match (from.scalar, to.scalar) {
            (x, y) if x == y => a,
            (Scalar::Bool, _) => {
                let one_bits = match to.scalar {
                    Scalar::Float => 1.0f32.to_bits(),
                    _ => 1,
                };
                let one = self.w.constant(to, [one_bits; 4]);
                let zero = self.w.constant(to, [0; 4]);
                self.value(Op::Select, type_id, &[a, one, zero])
            }
            (Scalar::Int | Scalar::Uint, Scalar::Bool) => {
                let zero = self.w.constant(from, [0; 4]);
                self.value(Op::INotEqual, type_id, &[a, zero])
            }
            (Scalar::Float, Scalar::Bool) => {
                let zero = self.w.constant(from, [0; 4]);
                self.value(Op::FUnordNotEqual, type_id, &[a, zero])
            }
            (Scalar::Int, Scalar::Uint) | (Scalar::Uint, Scalar::Int) => {
                self.value(Op::Bitcast, type_id, &[a])
            }
            (Scalar::Float, Scalar::Int) => self.value(Op::ConvertFToS, type_id, &[a]),
            (Scalar::Float, Scalar::Uint) => self.value(Op::ConvertFToU, type_id, &[a]),
            (Scalar::Int, Scalar::Float) => self.value(Op::ConvertSToF, type_id, &[a]),
            (Scalar::Uint, Scalar::Float) => self.value(Op::ConvertUToF, type_id, &[a]),
            _ => unreachable!("a conversion from {from} to {to}"),
        }
    }

    fn binary(&mut self, op: BinaryOp, operand: Scalar, type_id: u32, a: u32, b: u32) -> u32 {
        use BinaryOp as B;
        let spirv_op = match (operand, op) {
            (Scalar::Float, B::Add) => Op::FAdd,
            (Scalar::Float, B::Sub) => Op::FSub,
            (Scalar::Float, B::Mul) => Op::FMul,
            (Scalar::Float, B::Div) => Op::FDiv,
            // GLSL's float comparisons: ordered, but `!=` true for NaN.
            (Scalar::Float, B::Eq) => Op::FOrdEqual,
            (Scalar::Float, B::Ne) => Op::FUnordNotEqual,
            (Scalar::Float, B::Lt) => Op::FOrdLessThan,
            (Scalar::Float, B::Le) => Op::FOrdLessThanEqual,
            (Scalar::Float, B::Gt) => Op::FOrdGreaterThan,
            (Scalar::Float, B::Ge) => Op::FOrdGreaterThanEqual,
            (Scalar::Bool, B::And) => Op::LogicalAnd,
            (Scalar::Bool, B::Or) => Op::LogicalOr,
            (Scalar::Bool, B::Xor | B::Ne) => Op::LogicalNotEqual,
            (Scalar::Bool, B::Eq) => Op::LogicalEqual,
            (_, B::Add) => Op::IAdd,
            (_, B::Sub) => Op::ISub,
            (_, B::Mul) => Op::IMul,
            (Scalar::Int, B::Div) => Op::SDiv,
            (_, B::Div) => Op::UDiv,
            (_, B::And) => Op::BitwiseAnd,
            (_, B::Or) => Op::BitwiseOr,
            (_, B::Xor) => Op::BitwiseXor,
            (_, B::Shl) => Op::ShiftLeftLogical,
            (Scalar::Int, B::Shr) => Op::ShiftRightArithmetic,
            (_, B::Shr) => Op::ShiftRightLogical,
            (_, B::Eq) => Op::IEqual,
            (_, B::Ne) => Op::INotEqual,
            (Scalar::Int, B::Lt) => Op::SLessThan,
            (Scalar::Int, B::Le) => Op::SLessThanEqual,
            (Scalar::Int, B::Gt) => Op::SGreaterThan,
            (Scalar::Int, B::Ge) => Op::SGreaterThanEqual,
            (_, B::Lt) => Op::ULessThan,
            (_, B::Le) => Op::ULessThanEqual,
            (_, B::Gt) => Op::UGreaterThan,
            (_, B::Ge) => Op::UGreaterThanEqual,
        };
        let v = self.value(spirv_op, type_id, &[a, b]);
        if matches!(spirv_op, Op::FAdd | Op::FSub | Op::FMul | Op::FDiv) {
            self.w.decorate(v, Decoration::NoContraction, &[]);
        }
        v
    }
}
