//! The shader IR a translation is built in and every output language is printed from
//! (docs/gpu-shaders.md, "One IR, two printers"): typed expressions over scalars and vectors of
//! up to four lanes, statements with structured control flow only (if, loop, switch, break,
//! continue, return), functions, and the fixed interface of a PICA program (inputs v0-v15, the
//! uniform block, outputs o0-o15).
//!
//! An expression is evaluated where a statement uses it, not where it was made; a value that
//! must outlive a store to what it reads is bound first ([`Stmt::Let`]). Expressions form a
//! DAG: a printer evaluates a node shared inside one statement once.

pub mod build;

use std::fmt;
use std::sync::Arc;

/// A scalar type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scalar {
    /// A truth value.
    Bool,
    /// A signed 32-bit integer.
    Int,
    /// An unsigned 32-bit integer.
    Uint,
    /// An IEEE single.
    Float,
}

/// A scalar or a vector of 2-4 lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Type {
    /// The lanes' type.
    pub scalar: Scalar,
    /// 1 for a scalar, else the vector's lane count.
    pub lanes: u8,
}

impl Type {
    /// A scalar.
    pub const fn scalar(scalar: Scalar) -> Type {
        Type { scalar, lanes: 1 }
    }
    /// A vector of `lanes` lanes (1: a scalar).
    pub const fn vector(scalar: Scalar, lanes: u8) -> Type {
        Type { scalar, lanes }
    }
    /// `bool`.
    pub const BOOL: Type = Type::scalar(Scalar::Bool);
    /// `int`.
    pub const INT: Type = Type::scalar(Scalar::Int);
    /// `uint`.
    pub const UINT: Type = Type::scalar(Scalar::Uint);
    /// `float`.
    pub const FLOAT: Type = Type::scalar(Scalar::Float);
    /// `uvec4`: a register's four components as bit patterns.
    pub const UVEC4: Type = Type::vector(Scalar::Uint, 4);
    /// `bvec4`.
    pub const BVEC4: Type = Type::vector(Scalar::Bool, 4);
    /// `uvec2`: an f64 as (low word, high word).
    pub const UVEC2: Type = Type::vector(Scalar::Uint, 2);

    /// The same shape with lanes of `scalar`.
    pub const fn with_scalar(self, scalar: Scalar) -> Type {
        Type {
            scalar,
            lanes: self.lanes,
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}x{}", self.scalar, self.lanes)
    }
}

/// An expression of a function ([`Function::exprs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExprId(pub u32);

/// A mutable variable of a function ([`Function::locals`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LocalId(pub u32);

/// A function of a module ([`Module::functions`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FunctionId(pub u32);

/// A value bound by [`Stmt::Let`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LetId(pub u32);

/// An operation on one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// Logical not (bool lanes).
    Not,
    /// Bitwise not (integer lanes).
    BitNot,
    /// Integer negation (wrapping).
    Negate,
    /// Whether any lane is true (a bool vector to a bool).
    Any,
    /// Whether every lane is true.
    All,
}

/// An operation on two operands of the same type (shifts: the amount may be a scalar).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `+` (IEEE for floats, wrapping for integers).
    Add,
    /// `-`.
    Sub,
    /// `*`: for floats the IEEE product, never fused with an addition.
    Mul,
    /// `/`: integers only (floats divide in [`crate::primitives`]).
    Div,
    /// `&` (integers), logical and (bools).
    And,
    /// `|`, logical or.
    Or,
    /// `^`, logical inequality.
    Xor,
    /// `<<`.
    Shl,
    /// `>>`: logical on uint, arithmetic on int.
    Shr,
    /// `==` lane by lane.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

impl BinaryOp {
    /// Whether the result is a truth value per lane.
    pub const fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }
}

/// What a module-level variable of the interface is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Global {
    /// Input register vN (a `vec4` attribute, read as its bits: `uvec4`).
    Input(u8),
    /// Output register oN (a `vec4` output, written from bits: `uvec4`).
    Output(u8),
    /// The float uniforms c0-c95 (`uvec4[96]`, f32 bits), indexed.
    FloatUniforms,
    /// The integer uniforms i0-i3 (`uvec4[4]`: x, y, z, w bytes), indexed.
    IntUniforms,
    /// The bool uniforms (`uint`: bit n is bN).
    BoolUniforms,
    /// A word of the uniform block that is always 0 (the compiler cannot know it): what an
    /// output without `precise` XORs a product with, so that no compiler fuses it into an
    /// addition.
    OpaqueZero,
    /// The invocation's end state (`ivec4`: a0.x, a0.y, aL, cmp | status): what the
    /// verification build also writes.
    EndState,
    /// A geometry shader's state at the start of the invocation (`uvec4[98]`, indexed; its
    /// layout is [`crate::geometry::state`]'s): the second uniform block.
    GeometryState,
    /// Vector `n` of the packet a geometry shader's record build emits (`uvec4`, 0-15).
    Packet(u8),
}

/// Something a statement can store to or an expression load from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Place {
    /// A local variable, whole.
    Local(LocalId),
    /// One element of a local array (the index an `int` expression).
    Element(LocalId, ExprId),
    /// A module-level variable, whole.
    Global(Global),
    /// One element of an indexed global ([`Global::FloatUniforms`], [`Global::IntUniforms`]).
    GlobalElement(Global, ExprId),
}

/// The lanes a swizzle picks, in order (1-4): inline, since swizzles are the commonest
/// expression and helpers' expressions are copied into each module that adopts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lanes {
    picked: [u8; 4],
    len: u8,
}

impl Lanes {
    /// `lanes` (1-4 of them).
    pub fn of(lanes: &[u8]) -> Lanes {
        assert!((1..=4).contains(&lanes.len()), "a swizzle of 1-4 lanes");
        let mut picked = [0; 4];
        picked[..lanes.len()].copy_from_slice(lanes);
        Lanes {
            picked,
            len: lanes.len() as u8,
        }
    }
}

impl std::ops::Deref for Lanes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.picked[..self.len as usize]
    }
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A constant: each lane's 32 bits (bools 0 or 1).
    Constant([u32; 4]),
    /// The function's parameter `n`.
    Argument(u16),
    /// The value bound by a [`Stmt::Let`].
    Bound(LetId),
    /// The value of a place.
    Load(Place),
    /// A unary operation.
    Unary(UnaryOp, ExprId),
    /// A binary operation.
    Binary(BinaryOp, ExprId, ExprId),
    /// `condition ? a : b`, lane by lane when the condition is a vector.
    Select(ExprId, ExprId, ExprId),
    /// Lanes of a vector, in this order (1-4).
    Swizzle(ExprId, Lanes),
    /// A vector put together from scalars and vectors, lanes in order.
    Construct(Vec<ExprId>),
    /// A conversion of each lane's value (bool → 0/1, int ↔ uint bits kept, float → int
    /// truncating: only for values in range).
    Convert(ExprId),
    /// Each lane's bits read as another scalar type (float ↔ uint/int).
    Bitcast(ExprId),
    /// A call: the id is the callee's place in the calling function's
    /// [`Member::callees`], the callee itself before the caller in [`Module::functions`].
    Call(FunctionId, Vec<ExprId>),
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// Evaluates the expression and binds its value.
    Let(LetId, ExprId),
    /// Stores to a place; `lanes`, when set, names the lanes of the place written (the value
    /// has that many lanes).
    Store(Place, Option<Vec<u8>>, ExprId),
    /// `if (condition) { then } else { otherwise }`.
    If(ExprId, Vec<Stmt>, Vec<Stmt>),
    /// `while (true) { body }`: left by [`Stmt::Break`] or [`Stmt::Return`].
    Loop(Vec<Stmt>),
    /// A switch on an `int`: each case a list of values and a body; a body that completes
    /// goes on after the switch (no case falls into the next). No [`Stmt::Break`] in a body
    /// leaves a loop outside the switch (GLSL's `break` would leave the switch instead).
    Switch(ExprId, Vec<(Vec<i32>, Vec<Stmt>)>, Vec<Stmt>),
    /// Leaves the innermost loop.
    Break,
    /// Starts the innermost loop's next pass.
    Continue,
    /// Returns from the function (with a value, if it has a result).
    Return(Option<ExprId>),
    /// A comment line for the reader.
    Comment(String),
    /// Sends the vertex the outputs hold now to the geometry shader's output primitive.
    EmitVertex,
    /// Ends the geometry shader's output primitive (a strip) and starts the next.
    EndPrimitive,
}

/// A local variable.
#[derive(Clone, Debug, PartialEq)]
pub struct Local {
    /// Its name in the output.
    pub name: String,
    /// Its type (an element's, for an array).
    pub ty: Type,
    /// The array length, for an array.
    pub array: Option<u32>,
    /// The value it starts with (every lane), when it is not an array.
    pub init: Option<[u32; 4]>,
}

/// A function.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// Its name in the output.
    pub name: String,
    /// Its parameters' names and types.
    pub params: Vec<(String, Type)>,
    /// Its result type (`None`: void).
    pub result: Option<Type>,
    /// Its local variables.
    pub locals: Vec<Local>,
    /// Its expressions and their types.
    pub exprs: Vec<(Expr, Type)>,
    /// The names and types of its bound values.
    pub lets: Vec<(String, Type)>,
    /// Its body.
    pub body: Vec<Stmt>,
}

impl Function {
    /// The type of `expr`.
    pub fn type_of(&self, expr: ExprId) -> Type {
        self.exprs[expr.0 as usize].1
    }

    /// The expression `expr`.
    pub fn expr(&self, expr: ExprId) -> &Expr {
        &self.exprs[expr.0 as usize].0
    }
}

/// A function of a module, with the module's ids of the functions it calls.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    /// The function. A helper's is shared, not copied, by every module that has it
    /// ([`build::ModuleBuilder::keeping_helpers`]): its calls name its own callee list.
    pub function: Arc<Function>,
    /// `Expr::Call(FunctionId(n), _)` in the function calls the module's `callees[n]`.
    pub callees: Vec<FunctionId>,
}

/// A whole translation: its functions, callees first, and the one entry point, last.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    /// Every function; a function calls only functions before it.
    pub functions: Vec<Member>,
    /// The input registers read (bit n: vN).
    pub inputs: u16,
    /// The output registers written (bit n: oN).
    pub outputs: u16,
    /// Whether it writes [`Global::EndState`].
    pub end_state: bool,
    /// Whether it reads [`Global::OpaqueZero`].
    pub opaque_zero: bool,
    /// For a geometry shader, what its stage is printed with; `None` for a vertex shader.
    pub geometry: Option<crate::geometry::Geometry>,
}

impl Module {
    /// The function `id`.
    pub fn function(&self, id: FunctionId) -> &Function {
        &self.functions[id.0 as usize].function
    }
}

/// The type of a [`Global`] (an element's, for an indexed one).
pub const fn global_type(global: Global) -> Type {
    match global {
        Global::Input(_) | Global::Output(_) => Type::UVEC4,
        Global::FloatUniforms | Global::IntUniforms => Type::UVEC4,
        Global::BoolUniforms | Global::OpaqueZero => Type::UINT,
        Global::EndState => Type::vector(Scalar::Int, 4),
        Global::GeometryState | Global::Packet(_) => Type::UVEC4,
    }
}
