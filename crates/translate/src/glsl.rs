//! The GLSL printer: GLSL 3.30 core, GLSL ES 3.00 and the later versions that have `precise`
//! (docs/gpu-shaders.md, "GLSL").
//!
//! Expressions print inline; a node a statement uses twice is evaluated once into a temporary
//! before it. Every temporary is `precise` where the version has the qualifier, so no compiler
//! contracts or reorders the arithmetic behind it; the IR's float primitives also route every
//! operand and product through the uniform block's opaque zero, which versions without it need.

use std::collections::BTreeSet;

use std::fmt::Write;

use crate::geometry::GeometryForm;
use crate::interface::{Interface, OutputStyle};
use crate::ir::*;

/// A GLSL dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// `#version 330 core`.
    Glsl330,
    /// `#version 300 es` (OpenGL ES 3.0, Android).
    Es300,
    /// `#version 450 core` (`precise`).
    Glsl450,
    /// `#version 320 es` (`precise`).
    Es320,
}

impl Dialect {
    /// The `#version` line's argument.
    pub const fn version(self) -> &'static str {
        match self {
            Dialect::Glsl330 => "330 core",
            Dialect::Es300 => "300 es",
            Dialect::Glsl450 => "450 core",
            Dialect::Es320 => "320 es",
        }
    }

    /// Whether it has the `precise` qualifier.
    pub const fn has_precise(self) -> bool {
        matches!(self, Dialect::Glsl450 | Dialect::Es320)
    }

    /// Whether it is an OpenGL ES dialect.
    pub const fn is_es(self) -> bool {
        matches!(self, Dialect::Es300 | Dialect::Es320)
    }
}

/// The name of the uniform block's instance in GLSL.
pub const BLOCK_INSTANCE: &str = "pica";

/// The name of a geometry shader's state block in GLSL.
pub const GEOMETRY_BLOCK: &str = "pica_geometry_state";

/// The name of the state block's instance in GLSL.
pub const GEOMETRY_INSTANCE: &str = "pica_gs";

/// `module` as a GLSL vertex shader of `dialect` with `interface`.
pub fn print(module: &Module, interface: &Interface, dialect: Dialect) -> String {
    print_with(module, interface, dialect, true)
}

/// [`print`], reusing the helpers printed before or not.
fn print_with(module: &Module, interface: &Interface, dialect: Dialect, reuse: bool) -> String {
    // The functions first (the header declares the selects they use), then the header and
    // the functions' texts into one string: a printed helper's text is copied once.
    let mut fresh = String::new();
    let mut texts: Vec<FunctionText> = Vec::with_capacity(module.functions.len());
    let mut selects = BTreeSet::new();
    let entry = module.functions.len().saturating_sub(1);
    let emit_vertex = emit_vertex_call(module, interface);
    // A geometry shader's functions call the interface's emit function: not reused.
    let reuse = reuse && module.geometry.is_none();
    for (index, member) in module.functions.iter().enumerate() {
        // The helpers are the same for most programs of a mode: printed once (the entry
        // point, the program itself, never is).
        let helper = reuse && index != entry;
        if helper && let Some(text) = printed::find(dialect, module, member, &mut selects) {
            texts.push(FunctionText::Printed(text));
            continue;
        }
        let mut used = BTreeSet::new();
        let start = fresh.len();
        let mut printer = FunctionPrinter {
            module,
            function: &member.function,
            callees: &member.callees,
            dialect,
            out: fresh,
            temps: 0,
            selects: &mut used,
            marks: Marks::new(member.function.exprs.len()),
            order: Vec::new(),
            emit_vertex: &emit_vertex,
        };
        printer.function();
        fresh = printer.out;
        if helper {
            printed::keep(dialect, module, member, &fresh[start..], &used);
        }
        texts.push(FunctionText::Fresh(start..fresh.len()));
        selects.extend(used);
    }
    let length: usize = (texts.iter())
        .map(|text| match text {
            FunctionText::Printed(text) => text.len() + 1,
            FunctionText::Fresh(range) => range.len() + 1,
        })
        .sum();
    let mut out = String::with_capacity(length + 8192);
    let _ = writeln!(out, "#version {}", dialect.version());
    if dialect.is_es() {
        out.push_str("precision highp float;\nprecision highp int;\n");
    }
    for line in interface.banner.lines() {
        let _ = writeln!(out, "{}", comment_safe(line));
    }
    out.push('\n');
    if let Some(g) = module.geometry {
        let output = match g.form {
            GeometryForm::Triangles => "triangle_strip",
            GeometryForm::Records => "points",
        };
        let _ = writeln!(
            out,
            "layout(points) in;\nlayout({output}, max_vertices = {}) out;",
            g.max_vertices()
        );
    }
    for n in 0..16 {
        if module.inputs & (1 << n) != 0 {
            if module.geometry.is_some() {
                let _ = writeln!(out, "in vec4 v{n}[];");
            } else {
                let _ = writeln!(out, "layout(location = {n}) in vec4 v{n};");
            }
        }
    }
    let _ = writeln!(
        out,
        "layout(std140) uniform {} {{\n    uvec4 c[96]; // c0-c95: f32 bits\n    uvec4 i[4];  // i0-i3: (x, y, z, w) bytes\n    uint b;      // bit n: bN\n    uint zero;   // always 0 (keeps compilers from folding or fusing)\n}} {BLOCK_INSTANCE};",
        interface.block_name
    );
    let storage = match interface.outputs {
        OutputStyle::Varyings => "out ",
        OutputStyle::Globals => "",
    };
    for n in 0..16 {
        if module.outputs & (1 << n) != 0 {
            let _ = writeln!(out, "{storage}vec4 o{n};");
        }
    }
    if module.geometry.is_some() && interface.outputs == OutputStyle::Globals {
        let _ = writeln!(
            out,
            "void {emit_vertex}(); // the caller's: maps o0-o15 to its outputs, then EmitVertex()"
        );
    }
    if module.end_state {
        let _ = writeln!(out, "flat out ivec4 pica_end_state;");
    }
    if let Some(g) = module.geometry {
        let _ = writeln!(
            out,
            "layout(std140) uniform {GEOMETRY_BLOCK} {{\n    uvec4 s[{}]; // r0-r15, bank 0 o0-o15, bank 1, slots 0-2, (a0.x, a0.y, aL, flags), window\n}} {GEOMETRY_INSTANCE};",
            crate::geometry::state::VECTORS
        );
        if g.form == GeometryForm::Records {
            for n in 0..crate::geometry::PACKET_VECTORS {
                let _ = writeln!(out, "flat out uvec4 pica_p{n};");
            }
        }
    }
    out.push('\n');
    for ty in &selects {
        // Bit operations, not `?:`: drivers turn each `?:` into a branch and then spend their
        // compile merging them (a translation has thousands), and bits are what is selected.
        let name = type_name(*ty);
        let cond = type_name(ty.with_scalar(Scalar::Bool));
        let lanes = ty.lanes;
        let bits = type_name(ty.with_scalar(Scalar::Uint));
        let mask = format!("({bits}(0u) - {bits}(c))");
        let body = match ty.scalar {
            Scalar::Uint => format!("b ^ ((a ^ b) & {mask})"),
            Scalar::Int => format!("{name}({bits}(b) ^ (({bits}(a) ^ {bits}(b)) & {mask}))"),
            Scalar::Bool => {
                format!("notEqual({bits}(b) ^ (({bits}(a) ^ {bits}(b)) & {mask}), {bits}(0u))")
            }
            Scalar::Float => {
                let parts: Vec<String> = (0..lanes)
                    .map(|l| {
                        let c = LANE_LETTERS[l as usize];
                        format!("c.{c} ? a.{c} : b.{c}")
                    })
                    .collect();
                format!("{name}({})", parts.join(", "))
            }
        };
        let _ = writeln!(
            out,
            "{name} pica_select({cond} c, {name} a, {name} b) {{ return {body}; }}"
        );
    }
    if !selects.is_empty() {
        out.push('\n');
    }
    for text in &texts {
        out.push_str(match text {
            FunctionText::Printed(text) => text,
            FunctionText::Fresh(range) => &fresh[range.clone()],
        });
        out.push('\n');
    }
    out
}

/// A function's text in [`print_with`]: printed before, or now (its place in the new text).
enum FunctionText {
    Printed(std::sync::Arc<str>),
    Fresh(std::ops::Range<usize>),
}

const LANE_LETTERS: [char; 4] = ['x', 'y', 'z', 'w'];

/// The function a geometry shader's EMIT calls: `EmitVertex`, or with
/// [`OutputStyle::Globals`] the caller's `{entry}_emit_vertex`, which maps the o-registers to
/// its own outputs and emits (the output map stays the caller's).
pub fn emit_vertex_call(module: &Module, interface: &Interface) -> String {
    match interface.outputs {
        OutputStyle::Globals if module.geometry.is_some() => {
            format!("{}_emit_vertex", interface.entry)
        }
        _ => "EmitVertex".to_string(),
    }
}

/// Helper functions printed before, by dialect and function: a translation's `pica_*` helpers
/// are 70-90 % of its text and the same for every program of a precision mode. Only the IR's
/// kept helpers are kept here ([`crate::ir::build::kept::holds`]): those are shared by every
/// module that has them and never dropped, so a function's address names it, and the module
/// names its callees as they were named when it was kept, so the text is exactly what printing
/// it again would give. Bounded: past [`printed::LIMIT`] bytes nothing more is kept.
mod printed {
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};

    use rustc_hash::FxHashMap;

    use super::Dialect;
    use crate::ir::{Member, Module, Type};

    /// The most kept, in bytes: the texts.
    pub const LIMIT: usize = 32 << 20;

    struct Printed {
        callees: Vec<String>,
        text: Arc<str>,
        selects: Vec<Type>,
    }

    #[derive(Default)]
    struct Cache {
        by_function: FxHashMap<(Dialect, usize), Printed>,
        bytes: usize,
    }

    static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

    fn key(dialect: Dialect, member: &Member) -> (Dialect, usize) {
        (dialect, Arc::as_ptr(&member.function) as usize)
    }

    /// Whether the callees `module` gives `member` have the names `names`.
    fn same_callees(module: &Module, member: &Member, names: &[String]) -> bool {
        member.callees.len() == names.len()
            && member
                .callees
                .iter()
                .zip(names)
                .all(|(&id, name)| module.function(id).name == *name)
    }

    /// `member`'s text printed in `dialect` before, if it was, with the select types it
    /// used added to `selects`.
    pub fn find(
        dialect: Dialect,
        module: &Module,
        member: &Member,
        selects: &mut BTreeSet<Type>,
    ) -> Option<Arc<str>> {
        let cache = CACHE.lock().ok()?;
        let printed = cache.as_ref()?.by_function.get(&key(dialect, member))?;
        // The key is a kept helper's address, which no other function ever has.
        if !same_callees(module, member, &printed.callees) {
            return None;
        }
        selects.extend(printed.selects.iter().copied());
        Some(printed.text.clone())
    }

    /// Keeps `member`'s text and the select types it used, if it is a kept helper.
    pub fn keep(
        dialect: Dialect,
        module: &Module,
        member: &Member,
        text: &str,
        selects: &BTreeSet<Type>,
    ) {
        if !crate::ir::build::kept::holds(&member.function) {
            return;
        }
        let Ok(mut guard) = CACHE.lock() else {
            return;
        };
        let cache = guard.get_or_insert_with(Cache::default);
        if cache.bytes + text.len() > LIMIT {
            return;
        }
        cache.bytes += text.len();
        let callees = member
            .callees
            .iter()
            .map(|&id| module.function(id).name.clone())
            .collect();
        cache.by_function.insert(
            key(dialect, member),
            Printed {
                callees,
                text: text.into(),
                selects: selects.iter().copied().collect(),
            },
        );
    }
}

/// The GLSL name of `ty`.
pub fn type_name(ty: Type) -> &'static str {
    const NAMES: [[&str; 4]; 4] = [
        ["bool", "bvec2", "bvec3", "bvec4"],
        ["int", "ivec2", "ivec3", "ivec4"],
        ["uint", "uvec2", "uvec3", "uvec4"],
        ["float", "vec2", "vec3", "vec4"],
    ];
    let scalar = match ty.scalar {
        Scalar::Bool => 0,
        Scalar::Int => 1,
        Scalar::Uint => 2,
        Scalar::Float => 3,
    };
    NAMES[scalar][(ty.lanes as usize).clamp(1, 4) - 1]
}

struct FunctionPrinter<'a> {
    module: &'a Module,
    function: &'a Function,
    /// The module's ids of what the function's calls name.
    callees: &'a [FunctionId],
    dialect: Dialect,
    out: String,
    temps: u32,
    selects: &'a mut BTreeSet<Type>,
    marks: Marks,
    /// The post-order walk of the statement being printed (kept for its room).
    order: Vec<ExprId>,
    /// What a geometry shader's EMIT calls: `EmitVertex`, or with [`OutputStyle::Globals`]
    /// the caller's function that maps the outputs and emits.
    emit_vertex: &'a str,
}

/// Per expression, what the walks of the statement being printed found: dense arrays, reset by
/// moving to the next statement's stamp.
struct Marks {
    /// The statement whose uses `uses` counts.
    counted: Vec<u32>,
    uses: Vec<u32>,
    /// The statement whose post-order walk has placed the expression.
    placed: Vec<u32>,
    /// The statement that hoisted the expression into the temporary `temps`.
    named: Vec<u32>,
    temps: Vec<u32>,
    now: u32,
}

impl Marks {
    fn new(exprs: usize) -> Marks {
        Marks {
            counted: vec![0; exprs],
            uses: vec![0; exprs],
            placed: vec![0; exprs],
            named: vec![0; exprs],
            temps: vec![0; exprs],
            now: 0,
        }
    }

    /// Hoists `e` into the temporary `t{temp}` for the rest of the statement.
    fn name(&mut self, e: ExprId, temp: u32) {
        self.named[e.0 as usize] = self.now;
        self.temps[e.0 as usize] = temp;
    }

    /// The temporary the statement hoisted `e` into.
    fn temp(&self, e: ExprId) -> Option<u32> {
        let k = e.0 as usize;
        (self.named[k] == self.now).then(|| self.temps[k])
    }

    fn uses(&self, e: ExprId) -> u32 {
        let k = e.0 as usize;
        if self.counted[k] == self.now {
            self.uses[k]
        } else {
            0
        }
    }
}

impl Ord for Type {
    fn cmp(&self, other: &Type) -> std::cmp::Ordering {
        (self.scalar as u8, self.lanes).cmp(&(other.scalar as u8, other.lanes))
    }
}

impl PartialOrd for Type {
    fn partial_cmp(&self, other: &Type) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// An expression's operands: up to three inline, or a constructor's or call's list.
enum Children<'f> {
    Few([ExprId; 3], usize),
    Many(&'f [ExprId]),
}

impl Children<'_> {
    fn as_slice(&self) -> &[ExprId] {
        match self {
            Children::Few(ids, n) => &ids[..*n],
            Children::Many(ids) => ids,
        }
    }
}

impl<'a> FunctionPrinter<'a> {
    fn function(&mut self) {
        let f = self.function;
        let result = f.result.map_or("void", type_name);
        let params: Vec<String> = f
            .params
            .iter()
            .map(|(name, ty)| format!("{} {name}", type_name(*ty)))
            .collect();
        let _ = writeln!(self.out, "{result} {}({}) {{", f.name, params.join(", "));
        for local in &f.locals {
            let ty = type_name(local.ty);
            match (local.array, local.init) {
                (Some(len), _) => {
                    let zero = constant_text(local.ty, [0; 4]);
                    let zeros = vec![zero; len as usize].join(", ");
                    let _ = writeln!(
                        self.out,
                        "    {ty} {}[{len}] = {ty}[{len}]({zeros});",
                        local.name
                    );
                }
                (None, init) => {
                    let init = constant_text(local.ty, init.unwrap_or([0; 4]));
                    let _ = writeln!(self.out, "    {ty} {} = {init};", local.name);
                }
            }
        }
        self.block(&f.body, 1);
        self.out.push_str("}\n");
    }

    fn indent(&mut self, depth: usize) {
        indent(&mut self.out, depth);
    }

    /// The qualifier that keeps a result from being fused or reordered, where the dialect has
    /// one.
    fn precise(&self) -> &'static str {
        if self.dialect.has_precise() {
            "precise "
        } else {
            ""
        }
    }

    fn block(&mut self, stmts: &[Stmt], depth: usize) {
        for stmt in stmts {
            self.stmt(stmt, depth);
        }
    }

    /// Prints the temporaries of the statement whose expression roots are `roots`: each node
    /// the roots share that is worth one. The statement's own text follows ([`Self::write`]).
    fn hoist(&mut self, roots: &[ExprId], depth: usize) {
        self.marks.now += 1;
        for &root in roots {
            self.count(root);
        }
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        for &root in roots {
            self.post_order(root, &mut order);
        }
        let precise = self.precise();
        let mut out = std::mem::take(&mut self.out);
        for &e in &order {
            if self.marks.uses(e) >= 2 && self.worth_a_temporary(e) {
                let temp = self.temps;
                self.temps += 1;
                indent(&mut out, depth);
                let ty = type_name(self.function.type_of(e));
                let _ = write!(out, "{precise}{ty} t{temp} = ");
                self.write(&mut out, e);
                out.push_str(";\n");
                self.marks.name(e, temp);
            }
        }
        self.out = out;
        self.order = order;
    }

    /// Appends `e`'s text to the output, without enclosing parentheses when `bare`.
    fn write_out(&mut self, e: ExprId, bare: bool) {
        let mut out = std::mem::take(&mut self.out);
        if bare {
            self.write_bare(&mut out, e);
        } else {
            self.write(&mut out, e);
        }
        self.out = out;
    }

    fn worth_a_temporary(&self, e: ExprId) -> bool {
        !matches!(
            self.function.expr(e),
            Expr::Constant(_) | Expr::Argument(_) | Expr::Bound(_) | Expr::Load(Place::Local(_))
        )
    }

    fn children(&self, e: ExprId) -> Children<'a> {
        let few = |list: &[ExprId]| {
            let mut ids = [ExprId(0); 3];
            ids[..list.len()].copy_from_slice(list);
            Children::Few(ids, list.len())
        };
        let function: &'a Function = self.function;
        match function.expr(e) {
            Expr::Constant(_) | Expr::Argument(_) | Expr::Bound(_) => few(&[]),
            Expr::Load(place) => match *place {
                Place::Element(_, i) | Place::GlobalElement(_, i) => few(&[i]),
                _ => few(&[]),
            },
            Expr::Unary(_, a) | Expr::Swizzle(a, _) | Expr::Convert(a) | Expr::Bitcast(a) => {
                few(&[*a])
            }
            Expr::Binary(_, a, b) => few(&[*a, *b]),
            Expr::Select(c, a, b) => few(&[*c, *a, *b]),
            Expr::Construct(parts) | Expr::Call(_, parts) => Children::Many(parts),
        }
    }

    fn count(&mut self, e: ExprId) {
        let (k, now) = (e.0 as usize, self.marks.now);
        if self.marks.counted[k] != now {
            self.marks.counted[k] = now;
            self.marks.uses[k] = 0;
        }
        self.marks.uses[k] += 1;
        if self.marks.uses[k] > 1 {
            return;
        }
        for &child in self.children(e).as_slice() {
            self.count(child);
        }
    }

    fn post_order(&mut self, e: ExprId, order: &mut Vec<ExprId>) {
        let (k, now) = (e.0 as usize, self.marks.now);
        if self.marks.placed[k] == now {
            return;
        }
        self.marks.placed[k] = now;
        for &child in self.children(e).as_slice() {
            self.post_order(child, order);
        }
        order.push(e);
    }

    fn stmt(&mut self, stmt: &Stmt, depth: usize) {
        match stmt {
            Stmt::Let(id, e) => {
                self.hoist(&[*e], depth);
                let function: &'a Function = self.function;
                let (name, ty) = &function.lets[id.0 as usize];
                let precise = self.precise();
                self.indent(depth);
                let _ = write!(self.out, "{precise}{} {}{} = ", type_name(*ty), name, id.0);
                self.write_out(*e, false);
                self.out.push_str(";\n");
            }
            Stmt::Store(place, lanes, value) => {
                let roots = match place {
                    Place::Element(_, i) | Place::GlobalElement(_, i) => &[*value, *i][..],
                    _ => &[*value][..],
                };
                self.hoist(roots, depth);
                self.indent(depth);
                let mut out = std::mem::take(&mut self.out);
                self.write_place(&mut out, *place);
                if let Some(lanes) = lanes {
                    out.push('.');
                    out.extend(lanes.iter().map(|&l| LANE_LETTERS[l as usize]));
                }
                out.push_str(" = ");
                if let Place::Global(Global::Output(_)) = place {
                    out.push_str("uintBitsToFloat(");
                    self.write(&mut out, *value);
                    out.push(')');
                } else {
                    self.write(&mut out, *value);
                }
                out.push_str(";\n");
                self.out = out;
            }
            Stmt::If(c, then, otherwise) => {
                self.hoist(&[*c], depth);
                self.indent(depth);
                self.out.push_str("if (");
                self.write_out(*c, true);
                self.out.push_str(") {\n");
                self.block(then, depth + 1);
                if !otherwise.is_empty() {
                    self.indent(depth);
                    self.out.push_str("} else {\n");
                    self.block(otherwise, depth + 1);
                }
                self.indent(depth);
                self.out.push_str("}\n");
            }
            Stmt::Loop(body) => {
                self.indent(depth);
                self.out.push_str("while (true) {\n");
                self.block(body, depth + 1);
                self.indent(depth);
                self.out.push_str("}\n");
            }
            Stmt::Switch(selector, cases, default) => {
                self.hoist(&[*selector], depth);
                self.indent(depth);
                self.out.push_str("switch (");
                self.write_out(*selector, true);
                self.out.push_str(") {\n");
                for (values, body) in cases {
                    for value in values {
                        self.indent(depth);
                        let _ = writeln!(self.out, "case {value}:");
                    }
                    self.indent(depth + 1);
                    self.out.push_str("{\n");
                    self.block(body, depth + 2);
                    if !matches!(body.last(), Some(Stmt::Continue | Stmt::Return(_))) {
                        self.indent(depth + 2);
                        self.out.push_str("break;\n");
                    }
                    self.indent(depth + 1);
                    self.out.push_str("}\n");
                }
                self.indent(depth);
                self.out.push_str("default:\n");
                self.indent(depth + 1);
                self.out.push_str("{\n");
                self.block(default, depth + 2);
                if !matches!(default.last(), Some(Stmt::Continue | Stmt::Return(_))) {
                    // Also what keeps the label from being the last thing in the switch.
                    self.indent(depth + 2);
                    self.out.push_str("break;\n");
                }
                self.indent(depth + 1);
                self.out.push_str("}\n");
                self.indent(depth);
                self.out.push_str("}\n");
            }
            Stmt::Break => {
                self.indent(depth);
                self.out.push_str("break;\n");
            }
            Stmt::Continue => {
                self.indent(depth);
                self.out.push_str("continue;\n");
            }
            Stmt::Return(value) => match value {
                Some(e) => {
                    self.hoist(&[*e], depth);
                    self.indent(depth);
                    self.out.push_str("return ");
                    self.write_out(*e, true);
                    self.out.push_str(";\n");
                }
                None => {
                    self.indent(depth);
                    self.out.push_str("return;\n");
                }
            },
            Stmt::Comment(text) => {
                for line in text.lines() {
                    self.indent(depth);
                    let _ = writeln!(self.out, "// {}", comment_safe(line));
                }
            }
            Stmt::EmitVertex => {
                self.indent(depth);
                let _ = writeln!(self.out, "{}();", self.emit_vertex);
            }
            Stmt::EndPrimitive => {
                self.indent(depth);
                self.out.push_str("EndPrimitive();\n");
            }
        }
    }

    fn write_place(&mut self, out: &mut String, place: Place) {
        match place {
            Place::Local(l) => out.push_str(&self.function.locals[l.0 as usize].name),
            Place::Element(l, i) => {
                out.push_str(&self.function.locals[l.0 as usize].name);
                out.push('[');
                self.write_bare(out, i);
                out.push(']');
            }
            Place::Global(Global::Input(n)) if self.module.geometry.is_some() => {
                // A geometry shader's inputs are arrays of the one vertex of a point.
                let _ = write!(out, "v{n}[0]");
            }
            Place::Global(g) => write_global(out, g),
            Place::GlobalElement(g, i) => {
                write_global(out, g);
                out.push('[');
                self.write_bare(out, i);
                out.push(']');
            }
        }
    }

    /// Appends `e`'s text without one pair of enclosing parentheses, where they enclose it all.
    fn write_bare(&mut self, out: &mut String, e: ExprId) {
        let start = out.len();
        self.write(out, e);
        if strip_parens(&out[start..]).len() != out.len() - start {
            out.pop();
            out.remove(start);
        }
    }

    /// Appends `list`'s texts, bare, separated by commas; returns where each starts and ends.
    fn write_list(&mut self, out: &mut String, list: &[ExprId]) -> Vec<(usize, usize)> {
        let mut spans = Vec::with_capacity(list.len());
        for (k, &e) in list.iter().enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            let start = out.len();
            self.write_bare(out, e);
            spans.push((start, out.len()));
        }
        spans
    }

    /// Appends `name(a)` with `a` bare.
    fn write_call1(&mut self, out: &mut String, name: &str, a: ExprId) {
        out.push_str(name);
        out.push('(');
        self.write_bare(out, a);
        out.push(')');
    }

    /// Appends `e`'s text: written into one buffer, since the expressions nest deeply (every
    /// level copying its operands' texts made printing quadratic in the depth).
    fn write(&mut self, out: &mut String, e: ExprId) {
        if let Some(temp) = self.marks.temp(e) {
            let _ = write!(out, "t{temp}");
            return;
        }
        let ty = self.function.type_of(e);
        let function: &'a Function = self.function;
        match function.expr(e) {
            Expr::Constant(bits) => write_constant(out, ty, *bits),
            Expr::Argument(n) => out.push_str(&function.params[*n as usize].0),
            Expr::Bound(id) => {
                let _ = write!(out, "{}{}", function.lets[id.0 as usize].0, id.0);
            }
            Expr::Load(place) => match place {
                Place::Global(Global::Input(_)) => {
                    out.push_str("floatBitsToUint(");
                    self.write_place(out, *place);
                    out.push(')');
                }
                _ => self.write_place(out, *place),
            },
            Expr::Unary(op, a) => {
                let vector = function.type_of(*a).lanes > 1;
                match op {
                    UnaryOp::Not if vector => self.write_call1(out, "not", *a),
                    UnaryOp::Not => {
                        out.push('!');
                        self.write(out, *a);
                    }
                    UnaryOp::BitNot => {
                        out.push('~');
                        self.write(out, *a);
                    }
                    UnaryOp::Negate => {
                        out.push_str("(-");
                        self.write(out, *a);
                        out.push(')');
                    }
                    UnaryOp::Any => self.write_call1(out, "any", *a),
                    UnaryOp::All => self.write_call1(out, "all", *a),
                }
            }
            Expr::Binary(op, a, b) => {
                let operand = function.type_of(*a);
                self.write_binary(out, *op, operand, *a, *b);
            }
            Expr::Select(c, a, b) => {
                let vector = function.type_of(*c).lanes > 1;
                if vector {
                    self.selects.insert(ty);
                    out.push_str("pica_select(");
                    self.write_list(out, &[*c, *a, *b]);
                    out.push(')');
                } else {
                    out.push('(');
                    self.write(out, *c);
                    out.push_str(" ? ");
                    self.write(out, *a);
                    out.push_str(" : ");
                    self.write(out, *b);
                    out.push(')');
                }
            }
            Expr::Swizzle(a, lanes) => {
                let start = out.len();
                self.write(out, *a);
                if !is_simple(&out[start..]) {
                    if strip_parens(&out[start..]).len() != out.len() - start {
                        out.pop();
                        out.remove(start);
                    }
                    out.insert(start, '(');
                    out.push(')');
                }
                out.push('.');
                out.extend(lanes.iter().map(|&l| LANE_LETTERS[l as usize]));
            }
            Expr::Construct(parts) => {
                out.push_str(type_name(ty));
                out.push('(');
                let start = out.len();
                let spans = self.write_list(out, parts);
                let first = &out[spans[0].0..spans[0].1];
                let same = spans.iter().all(|&(a, b)| &out[a..b] == first);
                if same && parts.len() == ty.lanes as usize {
                    out.truncate(start + first.len());
                }
                out.push(')');
            }
            Expr::Convert(a) => self.write_call1(out, type_name(ty), *a),
            Expr::Bitcast(a) => {
                let from = function.type_of(*a).scalar;
                let f = match (from, ty.scalar) {
                    (Scalar::Float, Scalar::Uint) => "floatBitsToUint",
                    (Scalar::Float, Scalar::Int) => "floatBitsToInt",
                    (Scalar::Uint, Scalar::Float) => "uintBitsToFloat",
                    (Scalar::Int, Scalar::Float) => "intBitsToFloat",
                    _ => type_name(ty),
                };
                self.write_call1(out, f, *a);
            }
            Expr::Call(f, args) => {
                out.push_str(&self.module.function(self.callees[f.0 as usize]).name);
                out.push('(');
                self.write_list(out, args);
                out.push(')');
            }
        }
    }

    /// Appends a binary operation: vector comparisons and bool-vector logic as GLSL's
    /// functions, the rest as infix operators in parentheses.
    fn write_binary(
        &mut self,
        out: &mut String,
        op: BinaryOp,
        operand: Type,
        a: ExprId,
        b: ExprId,
    ) {
        let vector = operand.lanes > 1;
        let boolean = operand.scalar == Scalar::Bool;
        if op.is_comparison() && vector {
            let f = match op {
                BinaryOp::Eq => "equal",
                BinaryOp::Ne => "notEqual",
                BinaryOp::Lt => "lessThan",
                BinaryOp::Le => "lessThanEqual",
                BinaryOp::Gt => "greaterThan",
                BinaryOp::Ge => "greaterThanEqual",
                _ => unreachable!(),
            };
            out.push_str(f);
            out.push('(');
            self.write_list(out, &[a, b]);
            out.push(')');
            return;
        }
        if boolean && vector {
            let uint = type_name(operand.with_scalar(Scalar::Uint));
            let symbol = match op {
                BinaryOp::And => " & ",
                BinaryOp::Or => " | ",
                BinaryOp::Xor => {
                    out.push_str("notEqual(");
                    self.write_list(out, &[a, b]);
                    out.push(')');
                    return;
                }
                _ => unreachable!("{op:?} on bool vectors"),
            };
            out.push_str(type_name(operand));
            out.push('(');
            self.write_call1(out, uint, a);
            out.push_str(symbol);
            self.write_call1(out, uint, b);
            out.push(')');
            return;
        }
        let symbol = match op {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::And if boolean => "&&",
            BinaryOp::Or if boolean => "||",
            BinaryOp::Xor if boolean => "^^",
            BinaryOp::And => "&",
            BinaryOp::Or => "|",
            BinaryOp::Xor => "^",
            BinaryOp::Shl => "<<",
            BinaryOp::Shr => ">>",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
        };
        out.push('(');
        self.write(out, a);
        out.push(' ');
        out.push_str(symbol);
        out.push(' ');
        self.write(out, b);
        out.push(')');
    }
}

fn write_global(out: &mut String, g: Global) {
    let _ = match g {
        Global::Input(n) => write!(out, "v{n}"),
        Global::Output(n) => write!(out, "o{n}"),
        Global::FloatUniforms => write!(out, "{BLOCK_INSTANCE}.c"),
        Global::IntUniforms => write!(out, "{BLOCK_INSTANCE}.i"),
        Global::BoolUniforms => write!(out, "{BLOCK_INSTANCE}.b"),
        Global::OpaqueZero => write!(out, "{BLOCK_INSTANCE}.zero"),
        Global::EndState => write!(out, "pica_end_state"),
        Global::GeometryState => write!(out, "{GEOMETRY_INSTANCE}.s"),
        Global::Packet(n) => write!(out, "pica_p{n}"),
    };
}

fn is_simple(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '[' || c == ']')
}

/// `text` without one pair of enclosing parentheses, where they enclose it all.
fn strip_parens(text: &str) -> &str {
    let bytes = text.as_bytes();
    if bytes.first() != Some(&b'(') || bytes.last() != Some(&b')') {
        return text;
    }
    let mut depth = 0;
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 && i != bytes.len() - 1 {
                    return text;
                }
            }
            _ => {}
        }
    }
    &text[1..text.len() - 1]
}

/// Appends `depth` levels of indentation.
fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("    ");
    }
}

/// A constant of type `ty` with lane bits `bits`.
pub fn constant_text(ty: Type, bits: [u32; 4]) -> String {
    let mut out = String::new();
    write_constant(&mut out, ty, bits);
    out
}

/// Appends [`constant_text`].
fn write_constant(out: &mut String, ty: Type, bits: [u32; 4]) {
    let lane = |out: &mut String, b: u32| {
        let _ = match ty.scalar {
            Scalar::Bool => write!(out, "{}", if b != 0 { "true" } else { "false" }),
            Scalar::Int if b as i32 == i32::MIN => write!(out, "(-2147483647 - 1)"),
            Scalar::Int => write!(out, "{}", b as i32),
            Scalar::Uint if b < 4096 => write!(out, "{b}u"),
            Scalar::Uint => write!(out, "0x{b:08x}u"),
            Scalar::Float => write!(out, "uintBitsToFloat(0x{b:08x}u)"),
        };
    };
    let lanes = &bits[..ty.lanes as usize];
    if ty.lanes == 1 {
        return lane(out, bits[0]);
    }
    out.push_str(type_name(ty));
    out.push('(');
    if lanes.iter().all(|&b| b == lanes[0]) {
        lane(out, lanes[0]);
    } else {
        for (k, &b) in lanes.iter().enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            lane(out, b);
        }
    }
    out.push(')');
}

/// `line` as a GLSL comment's text may hold it: printable ASCII only (the ES source character
/// set), and no backslash, which would continue the comment onto the next line.
fn comment_safe(line: &str) -> String {
    line.chars()
        .map(|c| match c {
            ' '..='~' if c != '\\' => c,
            _ => '?',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::program;
    use crate::{Options, translate};
    use shader::float24::Precision;

    #[test]
    fn reused_helpers_print_exactly_what_printing_them_again_gives() {
        // Programs sharing some helpers (dp4, mul, the exact division of rcp) and not others,
        // printed in turn so that each finds helpers the others left.
        let bodies = [
            "dp4 outpos.x, ma, v0\nmul outc, mb, v1\nend",
            "rcp outpos, v0.x\ndp4 outc.y, ma, v1\nend",
            "ex2 outpos, v0.y\nrcp outc, v1.z\nmov r0, v0\nmul outc.x, r0, v0\nend",
        ];
        let mut reused = 0;
        for precision in [Precision::F24Truncate, Precision::F32] {
            let options = Options {
                precision,
                ..Options::default()
            };
            for dialect in [Dialect::Glsl330, Dialect::Es320] {
                for _ in 0..2 {
                    for body in bodies {
                        let translation = translate(&program(body), &options, "main").unwrap();
                        let interface = Interface::default();
                        let fresh = print_with(&translation.module, &interface, dialect, false);
                        let helpers =
                            &translation.module.functions[..translation.module.functions.len() - 1];
                        reused += helpers
                            .iter()
                            .filter(|m| {
                                printed::find(dialect, &translation.module, m, &mut BTreeSet::new())
                                    .is_some()
                            })
                            .count();
                        assert_eq!(
                            print_with(&translation.module, &interface, dialect, true),
                            fresh,
                            "{body} in {precision}, {dialect:?}"
                        );
                    }
                }
            }
        }
        // The second pass of each mode and dialect finds every helper of every program.
        assert!(reused > 20, "{reused} helpers reused");
    }
}
