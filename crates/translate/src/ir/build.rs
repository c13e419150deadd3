//! Building IR: a [`ModuleBuilder`] collects functions (helpers by name, each built once, before
//! the functions that call it), and a [`FnBuilder`] builds one function's expressions and
//! statements, nested blocks by closures.

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use super::*;

/// A module being built.
#[derive(Debug, Default)]
pub struct ModuleBuilder {
    functions: Vec<Member>,
    by_name: FxHashMap<String, FunctionId>,
    /// The input registers read so far.
    pub inputs: u16,
    /// The output registers written so far.
    pub outputs: u16,
    /// Whether the end state is written.
    pub end_state: bool,
    /// Whether the opaque zero is read.
    pub opaque_zero: bool,
    /// The geometry stage, for a geometry shader.
    pub geometry: Option<crate::geometry::Geometry>,
    /// Whether [`FnBuilder::comment`] writes nothing: the listing is for readers, and
    /// disassembling each instruction for it was a fifth of a translation's IR phase.
    pub without_comments: bool,
    /// Where helpers are kept across modules (see [`ModuleBuilder::keeping_helpers`]).
    keep: Option<u32>,
}

impl ModuleBuilder {
    /// An empty module.
    pub fn new() -> ModuleBuilder {
        ModuleBuilder::default()
    }

    /// An empty module whose helpers are kept, and taken from those kept, under `scope`: the
    /// caller promises that a helper's body depends only on its name and on what `scope`
    /// stands for (the translation's precision mode). Building the float24 rules' helpers was
    /// most of a translation's IR phase, and they are the same for every program of a mode.
    pub fn keeping_helpers(scope: u32) -> ModuleBuilder {
        ModuleBuilder {
            keep: Some(scope),
            ..ModuleBuilder::default()
        }
    }

    /// The function named `name`, built by `body` the first time it is asked for (or, keeping
    /// helpers, the one kept under that name with its callees).
    pub fn helper(
        &mut self,
        name: &str,
        params: &[(&str, Type)],
        result: Option<Type>,
        body: impl FnOnce(&mut FnBuilder, &[ExprId]),
    ) -> FunctionId {
        if let Some(&id) = self.by_name.get(name) {
            return id;
        }
        if let Some(scope) = self.keep
            && let Some(id) = self.adopt(scope, name)
        {
            return id;
        }
        let mut b = FnBuilder::new(self, name, params, result);
        let args: Vec<ExprId> = (0..params.len()).map(|n| b.argument(n)).collect();
        body(&mut b, &args);
        let member = b.finish();
        if let Some(scope) = self.keep {
            let callees = member
                .callees
                .iter()
                .map(|&id| self.function(id).name.clone())
                .collect();
            kept::keep(scope, &member.function, callees);
        }
        self.add(member)
    }

    /// Adds the helper `name` kept under `scope`, after its callees: `None` if it (or one of
    /// them) is not kept. The function is shared, not copied: its calls name its callee list.
    fn adopt(&mut self, scope: u32, name: &str) -> Option<FunctionId> {
        if let Some(&id) = self.by_name.get(name) {
            return Some(id);
        }
        let helper = kept::find(scope, name)?;
        let mut callees = Vec::with_capacity(helper.callees.len());
        for callee in &helper.callees {
            callees.push(self.adopt(scope, callee)?);
        }
        self.note(helper.uses);
        Some(self.add(Member {
            function: Arc::clone(&helper.function),
            callees,
        }))
    }

    /// The module's record of what a function it gains reads and writes.
    fn note(&mut self, uses: Uses) {
        self.inputs |= uses.inputs;
        self.outputs |= uses.outputs;
        self.end_state |= uses.end_state;
        self.opaque_zero |= uses.opaque_zero;
    }

    /// The module's record of a load of `place`.
    fn note_load(&mut self, place: Place) {
        let mut uses = Uses::default();
        uses.load(place);
        self.note(uses);
    }

    /// The module's record of a store to `place`.
    fn note_store(&mut self, place: Place) {
        let mut uses = Uses::default();
        uses.store(place);
        self.note(uses);
    }

    /// Adds a finished function (its callees are in the module already).
    pub fn add(&mut self, member: Member) -> FunctionId {
        let id = FunctionId(self.functions.len() as u32);
        self.by_name.insert(member.function.name.clone(), id);
        self.functions.push(member);
        id
    }

    /// The function `id`.
    pub fn function(&self, id: FunctionId) -> &Function {
        &self.functions[id.0 as usize].function
    }

    /// The module, `entry` (added last) its entry point.
    pub fn finish(self) -> Module {
        Module {
            functions: self.functions,
            inputs: self.inputs,
            outputs: self.outputs,
            end_state: self.end_state,
            opaque_zero: self.opaque_zero,
            geometry: self.geometry,
        }
    }
}

/// What a function reads and writes of the module's interface: what a module adopting a kept
/// helper records of it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Uses {
    /// The input registers read.
    pub inputs: u16,
    /// The output registers written.
    pub outputs: u16,
    /// Whether the end state is written.
    pub end_state: bool,
    /// Whether the opaque zero is read.
    pub opaque_zero: bool,
}

impl Uses {
    /// What `function` reads and writes.
    pub fn of(function: &Function) -> Uses {
        let mut uses = Uses::default();
        for (expr, _) in &function.exprs {
            if let Expr::Load(place) = expr {
                uses.load(*place);
            }
        }
        uses.stores(&function.body);
        uses
    }

    fn load(&mut self, place: Place) {
        match place {
            Place::Global(Global::Input(n)) => self.inputs |= 1 << n,
            Place::Global(Global::OpaqueZero) => self.opaque_zero = true,
            _ => {}
        }
    }

    fn stores(&mut self, block: &[Stmt]) {
        for stmt in block {
            match stmt {
                Stmt::Store(place, ..) => self.store(*place),
                Stmt::If(_, then, otherwise) => {
                    self.stores(then);
                    self.stores(otherwise);
                }
                Stmt::Loop(body) => self.stores(body),
                Stmt::Switch(_, cases, default) => {
                    for (_, body) in cases {
                        self.stores(body);
                    }
                    self.stores(default);
                }
                _ => {}
            }
        }
    }

    fn store(&mut self, place: Place) {
        match place {
            Place::Global(Global::Output(n)) => self.outputs |= 1 << n,
            Place::Global(Global::EndState) => self.end_state = true,
            _ => {}
        }
    }
}

/// One function being built.
pub struct FnBuilder<'m> {
    /// The module the function's helpers go to.
    pub module: &'m mut ModuleBuilder,
    function: Function,
    /// The module's ids of the functions called, in the order first called.
    callees: Vec<FunctionId>,
    blocks: Vec<Vec<Stmt>>,
    constants: FxHashMap<(Type, [u32; 4]), ExprId>,
}

impl<'m> FnBuilder<'m> {
    /// Starts a function.
    pub fn new(
        module: &'m mut ModuleBuilder,
        name: &str,
        params: &[(&str, Type)],
        result: Option<Type>,
    ) -> FnBuilder<'m> {
        FnBuilder {
            module,
            function: Function {
                name: name.to_string(),
                params: params.iter().map(|&(n, t)| (n.to_string(), t)).collect(),
                result,
                locals: Vec::new(),
                exprs: Vec::new(),
                lets: Vec::new(),
                body: Vec::new(),
            },
            callees: Vec::new(),
            blocks: vec![Vec::new()],
            constants: FxHashMap::default(),
        }
    }

    /// The finished function.
    pub fn finish(mut self) -> Member {
        assert_eq!(self.blocks.len(), 1, "a nested block left open");
        let mut body = self.blocks.pop().expect("the body");
        // The fence's binding, made at the first branch, goes before everything.
        self.blocks.push(Vec::new());
        self.fence_branches(&mut body, &mut None);
        let mut prologue = self.blocks.pop().expect("the prologue");
        prologue.append(&mut body);
        self.function.body = prologue;
        Member {
            function: Arc::new(self.function),
            callees: self.callees,
        }
    }

    /// `k + zero` as an `int`: an index of a uniform array that no compiler sees as a
    /// constant, so that Mesa's search for the uniforms that decide branches stops at the read
    /// (docs/gpu-shaders.md, "The branch fence").
    pub fn opaque_index(&mut self, k: u32) -> ExprId {
        let zero = self.load(Place::Global(Global::OpaqueZero));
        let zero = self.convert(zero, Scalar::Int);
        if k == 0 { zero } else { self.add_k(zero, k) }
    }

    /// A truth value that is false at run time but that no compiler can see as a constant or
    /// as computed from uniforms: whether `c[zero].x`, read at an offset that is not a
    /// constant, differs from `c[0].x`.
    fn fence(&mut self) -> ExprId {
        let index = self.opaque_index(0);
        let moving = self.load(Place::GlobalElement(Global::FloatUniforms, index));
        let moving = self.lane(moving, 0);
        let first = self.int(0);
        let fixed = self.load(Place::GlobalElement(Global::FloatUniforms, first));
        let fixed = self.lane(fixed, 0);
        let differs = self.ne(moving, fixed);
        self.bind("fence", differs)
    }

    /// Makes each `if`'s condition `fence || condition` (the fence made at the first one):
    /// the same value at run time. Mesa's search for the uniforms that decide branches
    /// (`nir_find_inlinable_uniforms`, run by lavapipe on every pipeline and by Gallium's
    /// OpenGL drivers that inline uniforms) follows every path from a branch's condition back
    /// to its leaves and remembers none; through the float24-rule helpers, which use their
    /// inputs many times, a condition computed from uniforms and constants alone has
    /// exponentially many paths (a 10-instruction program took lavapipe 54 s). With the fence
    /// first, each search ends at its first leaf (docs/gpu-shaders.md, "The branch fence").
    fn fence_branches(&mut self, block: &mut [Stmt], fence: &mut Option<ExprId>) {
        for stmt in block {
            match stmt {
                Stmt::If(condition, then, otherwise) => {
                    let f = match *fence {
                        Some(f) => f,
                        None => *fence.insert(self.fence()),
                    };
                    *condition = self.or(f, *condition);
                    self.fence_branches(then, fence);
                    self.fence_branches(otherwise, fence);
                }
                Stmt::Loop(body) => self.fence_branches(body, fence),
                Stmt::Switch(_, cases, default) => {
                    for (_, body) in cases {
                        self.fence_branches(body, fence);
                    }
                    self.fence_branches(default, fence);
                }
                _ => {}
            }
        }
    }

    /// The type of `e`.
    pub fn ty(&self, e: ExprId) -> Type {
        self.function.type_of(e)
    }

    /// The expression `e`.
    pub fn expr(&self, e: ExprId) -> &Expr {
        self.function.expr(e)
    }

    fn push(&mut self, expr: Expr, ty: Type) -> ExprId {
        let id = ExprId(self.function.exprs.len() as u32);
        self.function.exprs.push((expr, ty));
        id
    }

    fn stmt(&mut self, stmt: Stmt) {
        self.blocks.last_mut().expect("a block").push(stmt);
    }

    // Values.

    /// A constant of type `ty` with these lane bits (made once per function).
    pub fn constant(&mut self, ty: Type, bits: [u32; 4]) -> ExprId {
        let mut bits = bits;
        for lane in bits.iter_mut().skip(ty.lanes as usize) {
            *lane = 0;
        }
        if let Some(&e) = self.constants.get(&(ty, bits)) {
            return e;
        }
        let e = self.push(Expr::Constant(bits), ty);
        self.constants.insert((ty, bits), e);
        e
    }

    /// `value` in every lane of a `ty`.
    pub fn splat(&mut self, ty: Type, value: u32) -> ExprId {
        self.constant(ty, [value; 4])
    }

    /// A `uint`.
    pub fn uint(&mut self, value: u32) -> ExprId {
        self.splat(Type::UINT, value)
    }

    /// An `int`.
    pub fn int(&mut self, value: i32) -> ExprId {
        self.splat(Type::INT, value as u32)
    }

    /// A `bool`.
    pub fn boolean(&mut self, value: bool) -> ExprId {
        self.splat(Type::BOOL, value as u32)
    }

    /// A constant like `like` (its type) with `value` in every lane.
    pub fn like(&mut self, like: ExprId, value: u32) -> ExprId {
        let ty = self.ty(like);
        self.splat(ty, value)
    }

    /// Parameter `n`.
    pub fn argument(&mut self, n: usize) -> ExprId {
        let ty = self.function.params[n].1;
        self.push(Expr::Argument(n as u16), ty)
    }

    /// The value of `place`.
    pub fn load(&mut self, place: Place) -> ExprId {
        let ty = self.place_type(place);
        self.module.note_load(place);
        self.push(Expr::Load(place), ty)
    }

    /// The type of what `place` holds.
    pub fn place_type(&self, place: Place) -> Type {
        match place {
            Place::Local(l) | Place::Element(l, _) => self.function.locals[l.0 as usize].ty,
            Place::Global(g) | Place::GlobalElement(g, _) => global_type(g),
        }
    }

    /// A unary operation.
    pub fn unary(&mut self, op: UnaryOp, a: ExprId) -> ExprId {
        let ty = match op {
            UnaryOp::Any | UnaryOp::All => Type::BOOL,
            _ => self.ty(a),
        };
        self.push(Expr::Unary(op, a), ty)
    }

    /// A binary operation; a scalar shift amount is widened to the value's lanes.
    pub fn binary(&mut self, op: BinaryOp, a: ExprId, b: ExprId) -> ExprId {
        let (ta, tb) = (self.ty(a), self.ty(b));
        let b = if ta.lanes > 1 && tb.lanes == 1 {
            let parts = vec![b; ta.lanes as usize];
            self.construct(tb.with_scalar(tb.scalar).with_lanes(ta.lanes), &parts)
        } else {
            b
        };
        debug_assert_eq!(
            ta.lanes,
            self.ty(b).lanes,
            "operands of {op:?} differ in lanes"
        );
        let ty = if op.is_comparison() {
            ta.with_scalar(Scalar::Bool)
        } else {
            ta
        };
        self.push(Expr::Binary(op, a, b), ty)
    }

    /// `a + b`.
    pub fn add(&mut self, a: ExprId, b: ExprId) -> ExprId {
        self.binary(BinaryOp::Add, a, b)
    }
    /// `a - b`.
    pub fn sub(&mut self, a: ExprId, b: ExprId) -> ExprId {
        self.binary(BinaryOp::Sub, a, b)
    }
    /// `a * b`.
    pub fn mul(&mut self, a: ExprId, b: ExprId) -> ExprId {
        self.binary(BinaryOp::Mul, a, b)
    }
    /// `a & b`.
    pub fn and(&mut self, a: ExprId, b: ExprId) -> ExprId {
        self.binary(BinaryOp::And, a, b)
    }
    /// `a | b`.
    pub fn or(&mut self, a: ExprId, b: ExprId) -> ExprId {
        self.binary(BinaryOp::Or, a, b)
    }
    /// `a ^ b`.
    pub fn xor(&mut self, a: ExprId, b: ExprId) -> ExprId {
        self.binary(BinaryOp::Xor, a, b)
    }
    /// `a == b`.
    pub fn eq(&mut self, a: ExprId, b: ExprId) -> ExprId {
        self.binary(BinaryOp::Eq, a, b)
    }
    /// `a != b`.
    pub fn ne(&mut self, a: ExprId, b: ExprId) -> ExprId {
        self.binary(BinaryOp::Ne, a, b)
    }
    /// `a < b`.
    pub fn lt(&mut self, a: ExprId, b: ExprId) -> ExprId {
        self.binary(BinaryOp::Lt, a, b)
    }
    /// `a <= b`.
    pub fn le(&mut self, a: ExprId, b: ExprId) -> ExprId {
        self.binary(BinaryOp::Le, a, b)
    }
    /// `a > b`.
    pub fn gt(&mut self, a: ExprId, b: ExprId) -> ExprId {
        self.binary(BinaryOp::Gt, a, b)
    }
    /// `a >= b`.
    pub fn ge(&mut self, a: ExprId, b: ExprId) -> ExprId {
        self.binary(BinaryOp::Ge, a, b)
    }
    /// Logical not.
    pub fn not(&mut self, a: ExprId) -> ExprId {
        self.unary(UnaryOp::Not, a)
    }
    /// Bitwise not.
    pub fn bit_not(&mut self, a: ExprId) -> ExprId {
        self.unary(UnaryOp::BitNot, a)
    }
    /// `a & k`, `k` in every lane.
    pub fn and_k(&mut self, a: ExprId, k: u32) -> ExprId {
        let k = self.like(a, k);
        self.and(a, k)
    }
    /// `a | k`.
    pub fn or_k(&mut self, a: ExprId, k: u32) -> ExprId {
        let k = self.like(a, k);
        self.or(a, k)
    }
    /// `a + k` (wrapping).
    pub fn add_k(&mut self, a: ExprId, k: u32) -> ExprId {
        let k = self.like(a, k);
        self.add(a, k)
    }
    /// `a - k` (wrapping).
    pub fn sub_k(&mut self, a: ExprId, k: u32) -> ExprId {
        let k = self.like(a, k);
        self.sub(a, k)
    }
    /// `a << k`.
    pub fn shl_k(&mut self, a: ExprId, k: u32) -> ExprId {
        if k == 0 {
            return a;
        }
        let k = self.like_uint_lanes(a, k);
        self.binary(BinaryOp::Shl, a, k)
    }
    /// `a >> k` (logical on uint, arithmetic on int).
    pub fn shr_k(&mut self, a: ExprId, k: u32) -> ExprId {
        if k == 0 {
            return a;
        }
        let k = self.like_uint_lanes(a, k);
        self.binary(BinaryOp::Shr, a, k)
    }
    /// `a << n`, `n` an expression of `a`'s type.
    pub fn shl(&mut self, a: ExprId, n: ExprId) -> ExprId {
        self.binary(BinaryOp::Shl, a, n)
    }
    /// `a >> n`.
    pub fn shr(&mut self, a: ExprId, n: ExprId) -> ExprId {
        self.binary(BinaryOp::Shr, a, n)
    }
    fn like_uint_lanes(&mut self, a: ExprId, k: u32) -> ExprId {
        // The amount has the value's type: SPIR-V wants as many lanes, GLSL accepts it.
        self.like(a, k)
    }
    /// `a == k`.
    pub fn eq_k(&mut self, a: ExprId, k: u32) -> ExprId {
        let k = self.like(a, k);
        self.eq(a, k)
    }
    /// `a != k`.
    pub fn ne_k(&mut self, a: ExprId, k: u32) -> ExprId {
        let k = self.like(a, k);
        self.ne(a, k)
    }
    /// `a < k` (in `a`'s type).
    pub fn lt_k(&mut self, a: ExprId, k: u32) -> ExprId {
        let k = self.like(a, k);
        self.lt(a, k)
    }
    /// `a > k`.
    pub fn gt_k(&mut self, a: ExprId, k: u32) -> ExprId {
        let k = self.like(a, k);
        self.gt(a, k)
    }
    /// `a >= k`.
    pub fn ge_k(&mut self, a: ExprId, k: u32) -> ExprId {
        let k = self.like(a, k);
        self.ge(a, k)
    }
    /// `a <= k`.
    pub fn le_k(&mut self, a: ExprId, k: u32) -> ExprId {
        let k = self.like(a, k);
        self.le(a, k)
    }

    /// Whether any lane of a bool vector is true (a bool scalar as it is).
    pub fn any(&mut self, a: ExprId) -> ExprId {
        if self.ty(a).lanes == 1 {
            return a;
        }
        self.unary(UnaryOp::Any, a)
    }

    /// `condition ? a : b`.
    pub fn select(&mut self, condition: ExprId, a: ExprId, b: ExprId) -> ExprId {
        if a == b {
            return a;
        }
        let ty = self.ty(a);
        debug_assert_eq!(ty, self.ty(b), "select of two types");
        self.push(Expr::Select(condition, a, b), ty)
    }

    /// Lanes of `a`, in this order.
    pub fn swizzle(&mut self, a: ExprId, lanes: &[u8]) -> ExprId {
        let ty = self.ty(a);
        if ty.lanes as usize == lanes.len() && lanes.iter().enumerate().all(|(i, &l)| l == i as u8)
        {
            return a;
        }
        debug_assert!(!lanes.is_empty() && lanes.len() <= 4);
        debug_assert!(lanes.iter().all(|&l| l < ty.lanes));
        self.push(
            Expr::Swizzle(a, Lanes::of(lanes)),
            ty.with_lanes(lanes.len() as u8),
        )
    }

    /// Lane `lane` of `a`.
    pub fn lane(&mut self, a: ExprId, lane: u8) -> ExprId {
        if self.ty(a).lanes == 1 {
            return a;
        }
        self.swizzle(a, &[lane])
    }

    /// A vector of type `ty` from `parts` (scalars or vectors of its scalar, lanes in order).
    pub fn construct(&mut self, ty: Type, parts: &[ExprId]) -> ExprId {
        if parts.len() == 1 && self.ty(parts[0]) == ty {
            return parts[0];
        }
        self.push(Expr::Construct(parts.to_vec()), ty)
    }

    /// `a` in every lane of a `lanes`-lane vector.
    pub fn broadcast(&mut self, a: ExprId, lanes: u8) -> ExprId {
        let ty = self.ty(a).with_lanes(lanes);
        let parts = vec![a; lanes as usize];
        self.construct(ty, &parts)
    }

    /// Each lane's value converted to `scalar`.
    pub fn convert(&mut self, a: ExprId, scalar: Scalar) -> ExprId {
        let ty = self.ty(a);
        if ty.scalar == scalar {
            return a;
        }
        self.push(Expr::Convert(a), ty.with_scalar(scalar))
    }

    /// Each lane's bits read as `scalar`.
    pub fn bitcast(&mut self, a: ExprId, scalar: Scalar) -> ExprId {
        let ty = self.ty(a);
        if ty.scalar == scalar {
            return a;
        }
        if let Expr::Bitcast(inner) = *self.expr(a)
            && self.ty(inner).scalar == scalar
        {
            return inner;
        }
        self.push(Expr::Bitcast(a), ty.with_scalar(scalar))
    }

    /// A call of `function` (already in the module).
    pub fn call(&mut self, function: FunctionId, args: &[ExprId]) -> ExprId {
        let result = self
            .module
            .function(function)
            .result
            .expect("a call of a function with a result");
        let n = match self.callees.iter().position(|&c| c == function) {
            Some(n) => n,
            None => {
                self.callees.push(function);
                self.callees.len() - 1
            }
        };
        self.push(Expr::Call(FunctionId(n as u32), args.to_vec()), result)
    }

    /// Evaluates `e` here and names its value: what uses the result sees the value as it is
    /// now, whatever is stored later.
    pub fn bind(&mut self, name: &str, e: ExprId) -> ExprId {
        if matches!(
            self.expr(e),
            Expr::Constant(_) | Expr::Bound(_) | Expr::Argument(_)
        ) {
            return e;
        }
        let ty = self.ty(e);
        let id = LetId(self.function.lets.len() as u32);
        self.function.lets.push((name.to_string(), ty));
        self.stmt(Stmt::Let(id, e));
        self.push(Expr::Bound(id), ty)
    }

    // Variables and statements.

    /// A local variable starting at `init` (every lane).
    pub fn local(&mut self, name: &str, ty: Type, init: [u32; 4]) -> LocalId {
        let id = LocalId(self.function.locals.len() as u32);
        self.function.locals.push(Local {
            name: name.to_string(),
            ty,
            array: None,
            init: Some(init),
        });
        id
    }

    /// A local array of `len` elements of `ty`, each starting at zero.
    pub fn local_array(&mut self, name: &str, ty: Type, len: u32) -> LocalId {
        let id = LocalId(self.function.locals.len() as u32);
        self.function.locals.push(Local {
            name: name.to_string(),
            ty,
            array: Some(len),
            init: None,
        });
        id
    }

    /// The value of local `l`.
    pub fn get(&mut self, l: LocalId) -> ExprId {
        self.load(Place::Local(l))
    }

    /// Stores `value` to `place`.
    pub fn store(&mut self, place: Place, value: ExprId) {
        self.note_store(place);
        self.stmt(Stmt::Store(place, None, value));
    }

    /// Stores `value` (as many lanes as `lanes` names) to those lanes of `place`.
    pub fn store_lanes(&mut self, place: Place, lanes: &[u8], value: ExprId) {
        self.note_store(place);
        let whole = self.place_type(place).lanes as usize;
        if lanes.len() == whole && lanes.iter().enumerate().all(|(i, &l)| l == i as u8) {
            self.stmt(Stmt::Store(place, None, value));
        } else {
            self.stmt(Stmt::Store(place, Some(lanes.to_vec()), value));
        }
    }

    fn note_store(&mut self, place: Place) {
        self.module.note_store(place);
    }

    /// Sets local `l`.
    pub fn set(&mut self, l: LocalId, value: ExprId) {
        self.store(Place::Local(l), value);
    }

    /// A comment line, `text()` unless the module is built without comments.
    pub fn comment(&mut self, text: impl FnOnce() -> String) {
        if !self.module.without_comments {
            self.stmt(Stmt::Comment(text()));
        }
    }

    /// Opens a nested block: what follows goes into it until [`FnBuilder::close`].
    pub fn open(&mut self) {
        self.blocks.push(Vec::new());
    }

    /// Closes the block [`FnBuilder::open`] opened and returns its statements.
    pub fn close(&mut self) -> Vec<Stmt> {
        assert!(self.blocks.len() > 1, "close without open");
        self.blocks.pop().expect("an open block")
    }

    /// Appends a statement built elsewhere (of blocks from [`FnBuilder::close`]).
    pub fn push_stmt(&mut self, stmt: Stmt) {
        self.stmt(stmt);
    }

    /// Puts `stmts` before everything in the function's body.
    pub fn prepend(&mut self, stmts: Vec<Stmt>) {
        let body = &mut self.blocks[0];
        let rest = std::mem::replace(body, stmts);
        body.extend(rest);
    }

    fn block(&mut self, body: impl FnOnce(&mut Self)) -> Vec<Stmt> {
        self.blocks.push(Vec::new());
        body(self);
        self.blocks.pop().expect("the nested block")
    }

    /// `if (condition) { then } else { otherwise }`.
    pub fn if_else(
        &mut self,
        condition: ExprId,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        let then = self.block(then);
        let otherwise = self.block(otherwise);
        self.stmt(Stmt::If(condition, then, otherwise));
    }

    /// `if (condition) { then }`.
    pub fn when(&mut self, condition: ExprId, then: impl FnOnce(&mut Self)) {
        self.if_else(condition, then, |_| {});
    }

    /// `while (true) { body }`.
    pub fn forever(&mut self, body: impl FnOnce(&mut Self)) {
        let body = self.block(body);
        self.stmt(Stmt::Loop(body));
    }

    /// A switch whose cases are built one by one by `case` for each of `values`.
    pub fn switch_each<T: Copy>(
        &mut self,
        selector: ExprId,
        values: &[(i32, T)],
        mut case: impl FnMut(&mut Self, T),
        default: impl FnOnce(&mut Self),
    ) {
        let mut built = Vec::with_capacity(values.len());
        for &(value, item) in values {
            let body = self.block(|b| case(b, item));
            built.push((vec![value], body));
        }
        let default = self.block(default);
        self.stmt(Stmt::Switch(selector, built, default));
    }

    /// `body` emitted `count` times in a row: a loop of a fixed count, unrolled.
    pub fn unrolled(&mut self, count: usize, mut body: impl FnMut(&mut Self)) {
        for _ in 0..count {
            body(self);
        }
    }

    /// Leaves the innermost loop.
    pub fn brk(&mut self) {
        self.stmt(Stmt::Break);
    }

    /// The innermost loop's next pass.
    pub fn cont(&mut self) {
        self.stmt(Stmt::Continue);
    }

    /// Returns `value`.
    pub fn ret(&mut self, value: Option<ExprId>) {
        self.stmt(Stmt::Return(value));
    }
}

impl Type {
    /// The same scalar with `lanes` lanes.
    pub const fn with_lanes(self, lanes: u8) -> Type {
        Type {
            scalar: self.scalar,
            lanes,
        }
    }
}

/// Helpers kept across modules, by scope and name: each with its callees' names (the module
/// adopting it maps its callee list to its own functions by them) and what it reads and
/// writes. Bounded: past [`kept::LIMIT`] bytes nothing more is kept (there are a few dozen
/// helpers per precision mode, some hundred kilobytes in all). A helper kept is never dropped,
/// so that its function's address names it for as long as the process runs
/// ([`kept::holds`]).
pub(crate) mod kept {
    use super::*;

    /// The most kept, in bytes (about: the expressions and statements).
    pub const LIMIT: usize = 16 << 20;

    /// A kept helper.
    pub struct Kept {
        /// The function, shared by every module that adopts it.
        pub function: Arc<Function>,
        /// The names of the functions its calls name, by their place in its callee list.
        pub callees: Vec<String>,
        /// What it reads and writes.
        pub uses: Uses,
    }

    #[derive(Default)]
    struct Store {
        by_scope: FxHashMap<u32, FxHashMap<String, Arc<Kept>>>,
        bytes: usize,
    }

    static STORE: Mutex<Option<Store>> = Mutex::new(None);

    /// The helper `name` kept under `scope`.
    pub fn find(scope: u32, name: &str) -> Option<Arc<Kept>> {
        let store = STORE.lock().ok()?;
        store.as_ref()?.by_scope.get(&scope)?.get(name).cloned()
    }

    /// Whether `function` is a kept helper (this very one, not an equal copy): then no other
    /// function ever has its address, and the callees' names kept with it are those of every
    /// module that has it.
    pub fn holds(function: &Arc<Function>) -> bool {
        let Ok(store) = STORE.lock() else {
            return false;
        };
        store.as_ref().is_some_and(|store| {
            store.by_scope.values().any(|helpers| {
                helpers
                    .get(&function.name)
                    .is_some_and(|kept| Arc::ptr_eq(&kept.function, function))
            })
        })
    }

    /// Keeps `function` under `scope`, `callees` naming the functions its calls name.
    pub fn keep(scope: u32, function: &Arc<Function>, callees: Vec<String>) {
        let bytes = function.exprs.len() * size_of::<(Expr, Type)>()
            + function.body.len() * size_of::<Stmt>()
            + function.name.len();
        let Ok(mut guard) = STORE.lock() else {
            return;
        };
        let store = guard.get_or_insert_with(Store::default);
        if store.bytes + bytes > LIMIT {
            return;
        }
        store.bytes += bytes;
        let helper = Kept {
            function: Arc::clone(function),
            callees,
            uses: Uses::of(function),
        };
        store
            .by_scope
            .entry(scope)
            .or_default()
            .insert(function.name.clone(), Arc::new(helper));
    }
}
