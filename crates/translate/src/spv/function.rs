//! The SPIR-V printer's functions: each statement of the IR as one SPIR-V construct, each
//! expression as the instructions that compute it where the statement uses it.

use std::fmt::Write as _;

use super::*;

/// What `break` and `continue` leave to.
#[derive(Clone, Copy)]
enum Target {
    Loop { merge: u32, continue_target: u32 },
    Switch { merge: u32 },
}

/// One function being written.
pub(super) struct FunctionWriter<'w, 'm> {
    w: &'w mut Writer,
    module: &'m Module,
    function: &'m Function,
    /// The ids of the functions the function's calls name, by their place in its callee list.
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
    /// Where a let's name is put together (kept for its room).
    let_name: String,
}

impl<'w, 'm> FunctionWriter<'w, 'm> {
    pub(super) fn new(
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
            let_name: String::new(),
        }
    }

    fn inst(&mut self, op: Op, operands: &[u32]) {
        emit(&mut self.w.code, op, operands);
    }

    /// An instruction with a result of type `ty`; returns the result.
    fn value(&mut self, op: Op, ty: u32, operands: &[u32]) -> u32 {
        let id = self.w.id();
        let code = &mut self.w.code;
        code.push(opening(op, 2 + operands.len()));
        code.push(ty);
        code.push(id);
        code.extend_from_slice(operands);
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

    pub(super) fn write(&mut self, id: u32) {
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
                    (array, self.w.null(array))
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
                let mut name = std::mem::take(&mut self.let_name);
                name.clear();
                let _ = write!(name, "{}{}", self.function.lets[id.0 as usize].0, id.0);
                self.w.name(v, &name);
                self.let_name = name;
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
        let operands = [self.w.block, member, index.unwrap_or(0)];
        let count = 2 + usize::from(index.is_some());
        (self.value(Op::AccessChain, pointer, &operands[..count]), ty)
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
        let parts = [value; 4];
        self.value(Op::CompositeConstruct, vector, &parts[..lanes as usize])
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
                let mut operands = [a; 6];
                for (operand, &lane) in operands[2..].iter_mut().zip(lanes.iter()) {
                    *operand = lane as u32;
                }
                self.value(Op::VectorShuffle, type_id, &operands[..2 + lanes.len()])
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
                // The callee and the arguments, on the stack for the usual few.
                let mut few = [0u32; 8];
                let mut many = Vec::new();
                let operands: &mut [u32] = if args.len() < few.len() {
                    &mut few[..args.len() + 1]
                } else {
                    many.resize(args.len() + 1, 0);
                    &mut many
                };
                operands[0] = self.function_ids[f.0 as usize];
                for (operand, &a) in operands[1..].iter_mut().zip(args.iter()) {
                    *operand = self.expr(a);
                }
                let _ = self.module;
                self.value(Op::FunctionCall, type_id, operands)
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
