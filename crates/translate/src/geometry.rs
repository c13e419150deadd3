//! A geometry shader's stage in the IR (docs/gpu-shaders.md, "Geometry shaders"): the state
//! that persists between invocations comes in as a second uniform block, the o-registers are
//! two banks of locals that EMIT swaps, and EMIT becomes what the form makes of it: a triangle
//! strip of three vertices per PICA primitive (the form an emulator draws), or packets that
//! carry every EMIT's vertex and the end state out by transform feedback (the form the checking
//! engines read, where the model's own emit rule, [`shader::exec::GeometryState::emit`],
//! assembles the primitives again).

use shader::isa::{Instruction, RegisterFile, SimpleOp};

use crate::ir::build::FnBuilder;
use crate::ir::{ExprId, Global, LocalId, Place, Scalar, Stmt, Type};
use crate::program::{Emitter, Registers, Status};

/// What a geometry shader's EMIT becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GeometryForm {
    /// Each PICA triangle a strip of three vertices, in the assembler's order (slots 1, 0, 2
    /// when the winding flag is set): what an emulator draws.
    Triangles,
    /// Each EMIT's vertex and the end state as packets of [`PACKET_VECTORS`] vectors, output as
    /// points, [`WINDOW_PACKETS`] of them a draw: what the checking engines capture.
    Records,
}

/// A geometry shader's stage: its form and the registers it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Geometry {
    /// What EMIT becomes.
    pub form: GeometryForm,
    /// The r-registers some instruction writes (bit n: rN); the others keep their state.
    pub temporaries: u16,
    /// The o-registers some instruction writes (bit n: oN); the others keep their state.
    pub outputs: u16,
}

/// The vectors of a packet: 64 components, what transform feedback captures interleaved on
/// every OpenGL 3.3 implementation.
pub const PACKET_VECTORS: usize = 16;

/// The packets one draw of the record form captures (`max_vertices`): 1024 components, the
/// least every implementation allows a geometry shader to output.
pub const WINDOW_PACKETS: u32 = 16;

/// The second uniform block, `uvec4 s[98]` (std140): where each part of the state starts.
pub mod state {
    /// r0-r15.
    pub const TEMPORARIES: u32 = 0;
    /// Bank 0's o0-o15, then bank 1's.
    pub const BANKS: u32 = 16;
    /// The three vertex slots' o0-o15.
    pub const SLOTS: u32 = 48;
    /// (a0.x, a0.y, aL, flags): the flags as [`super::flags`] lays them out.
    pub const FLOW: u32 = 96;
    /// (first packet of the window, 0, 0, 0).
    pub const WINDOW: u32 = 97;
    /// The block's vectors.
    pub const VECTORS: usize = 98;
}

/// The flags word of the state block and of a record's header.
pub mod flags {
    /// cmp.x.
    pub const CMP_X: u32 = 1 << 0;
    /// cmp.y.
    pub const CMP_Y: u32 = 1 << 1;
    /// The bank written now (state block only).
    pub const BANK: u32 = 1 << 2;
    /// SETEMIT's vertex id, bits 3-4.
    pub const VERTEX_SHIFT: u32 = 3;
    /// SETEMIT's primitive flag.
    pub const PRIMITIVE: u32 = 1 << 5;
    /// SETEMIT's winding flag.
    pub const WINDING: u32 = 1 << 6;
    /// How the invocation stopped ([`crate::program::Status`]), bits 8-13 (end record only).
    pub const STATUS_SHIFT: u32 = 8;
    /// The address of the instruction that failed, bits 16-27 (end record only).
    pub const PC_SHIFT: u32 = 16;
    /// Set in the end record's header, clear in an EMIT's.
    pub const END_RECORD: u32 = 1 << 31;
}

impl Geometry {
    /// The stage, in `form`, of the program whose memory is `decoded`: the registers any of
    /// its words writes (a superset of those an invocation writes, which is all the packets
    /// need).
    pub fn of(decoded: &[Instruction], form: GeometryForm) -> Geometry {
        let mut temporaries = 0u16;
        let mut outputs = 0u16;
        for inst in decoded {
            if let Some(dst) = inst.operation().and_then(|op| op.destination()) {
                match dst.file_index() {
                    (RegisterFile::Output, n) => outputs |= 1 << n,
                    (_, n) => temporaries |= 1 << n,
                }
            }
        }
        Geometry {
            form,
            temporaries,
            outputs,
        }
    }

    /// The most vertices one invocation outputs (the GLSL `max_vertices`): for triangles as
    /// many whole triangles as 1024 components and 256 vertices hold.
    pub fn max_vertices(&self) -> u32 {
        match self.form {
            GeometryForm::Records => WINDOW_PACKETS,
            GeometryForm::Triangles => {
                let components = 4 * self.outputs.count_ones().max(1);
                ((1024 / components).min(256) / 3 * 3).max(3)
            }
        }
    }

    /// The vectors of an EMIT's record: the header, then the written o-registers.
    pub fn emit_vectors(&self) -> usize {
        1 + self.outputs.count_ones() as usize
    }

    /// The vectors of the end record: the header (a0 and aL in its y, z, w), the written
    /// r-registers, the written o-registers of the bank written now, then of the other.
    pub fn end_vectors(&self) -> usize {
        1 + self.temporaries.count_ones() as usize + 2 * self.outputs.count_ones() as usize
    }
}

/// Packets of `vectors` vectors.
pub const fn packets(vectors: usize) -> usize {
    vectors.div_ceil(PACKET_VECTORS)
}

/// A geometry invocation's registers beyond the vertex shader's.
#[derive(Clone, Copy, Debug)]
pub struct GeometryRegisters {
    /// The stage.
    pub layout: Geometry,
    /// The written o-registers of the bank written now.
    pub current: [Option<LocalId>; 16],
    /// The written o-registers of the other bank.
    pub other: [Option<LocalId>; 16],
    /// The three vertex slots' written o-registers (the triangle form).
    pub slots: [[Option<LocalId>; 16]; 3],
    /// SETEMIT's vertex id (`int`).
    pub vertex: LocalId,
    /// SETEMIT's primitive flag (`bool`).
    pub primitive: LocalId,
    /// SETEMIT's winding flag (`bool`).
    pub winding: LocalId,
    /// Packets made so far (records), or vertices output so far (triangles) (`uint`).
    pub sent: LocalId,
    /// Where the general form sends a stop, so that the end record is written once.
    pub stop: Option<StopRoute>,
}

/// The general form's one place that writes the end record: a stop sets the status and address
/// and goes to the dispatch case [`StopRoute::CASE`].
#[derive(Clone, Copy, Debug)]
pub struct StopRoute {
    /// How the invocation stopped (`uint`, a [`Status`]).
    pub status: LocalId,
    /// Where (`int`).
    pub pc: LocalId,
    /// The dispatch loop's selector (`int`).
    pub selector: LocalId,
}

impl StopRoute {
    /// The dispatch case that writes the end record.
    pub const CASE: i32 = -1;
}

impl GeometryRegisters {
    /// Declares the locals; [`prologue`] sets them from the state block.
    pub fn declare(b: &mut FnBuilder, layout: Geometry) -> GeometryRegisters {
        let written = |n: usize| layout.outputs & (1 << n) != 0;
        let bank = |b: &mut FnBuilder, what: &str| -> [Option<LocalId>; 16] {
            std::array::from_fn(|n| {
                written(n).then(|| b.local(&format!("{what}_o{n}"), Type::UVEC4, [0; 4]))
            })
        };
        let current = bank(b, "bank_now");
        let other = bank(b, "bank_other");
        let slots = match layout.form {
            GeometryForm::Triangles => [bank(b, "slot0"), bank(b, "slot1"), bank(b, "slot2")],
            GeometryForm::Records => [[None; 16]; 3],
        };
        GeometryRegisters {
            layout,
            current,
            other,
            slots,
            vertex: b.local("emit_vertex", Type::INT, [0; 4]),
            primitive: b.local("emit_primitive", Type::BOOL, [0; 4]),
            winding: b.local("emit_winding", Type::BOOL, [0; 4]),
            sent: b.local("emit_sent", Type::UINT, [0; 4]),
            stop: None,
        }
    }
}

/// State block vector `index` (a constant), read at `index + zero`: an offset no compiler
/// sees as a constant, so that Mesa's search for the uniforms that decide branches stops at
/// the state rather than walking the registers' arithmetic back to it (docs/gpu-shaders.md,
/// "The branch fence").
fn state_vector(b: &mut FnBuilder, index: u32) -> ExprId {
    let at = b.opaque_index(index);
    b.load(Place::GlobalElement(Global::GeometryState, at))
}

/// Whether `bit` of `word` (a `uint`) is set.
fn bit(b: &mut FnBuilder, word: ExprId, bit: u32) -> ExprId {
    let masked = b.and_k(word, bit);
    b.ne_k(masked, 0)
}

/// The statements that start a geometry invocation from the state block, put before the body.
pub fn prologue(b: &mut FnBuilder, registers: &Registers) -> Vec<Stmt> {
    let Some(g) = registers.geometry else {
        return Vec::new();
    };
    b.open();
    for (n, &r) in registers.temporaries.iter().enumerate() {
        let v = state_vector(b, state::TEMPORARIES + n as u32);
        b.set(r, v);
    }
    let flow = state_vector(b, state::FLOW);
    let flow = b.bind("state_flow", flow);
    for (lane, local) in [registers.address[0], registers.address[1]]
        .into_iter()
        .chain([registers.loop_counter])
        .enumerate()
    {
        let v = b.lane(flow, lane as u8);
        let v = b.convert(v, Scalar::Int);
        b.set(local, v);
    }
    let word = b.lane(flow, 3);
    let word = b.bind("state_flags", word);
    let cx = bit(b, word, flags::CMP_X);
    b.set(registers.cmp[0], cx);
    let cy = bit(b, word, flags::CMP_Y);
    b.set(registers.cmp[1], cy);
    let vertex = b.shr_k(word, flags::VERTEX_SHIFT);
    let vertex = b.and_k(vertex, 3);
    let vertex = b.convert(vertex, Scalar::Int);
    b.set(g.vertex, vertex);
    let primitive = bit(b, word, flags::PRIMITIVE);
    b.set(g.primitive, primitive);
    let winding = bit(b, word, flags::WINDING);
    b.set(g.winding, winding);
    // The bank written now is bank `BANK`'s bit: its registers start `current`.
    let bank = b.shr_k(word, 2);
    let bank = b.and_k(bank, 1);
    let bank = b.convert(bank, Scalar::Int);
    let bank = b.bind("bank", bank);
    let now = b.shl_k(bank, 4);
    let now = b.add_k(now, state::BANKS);
    let now = b.bind("bank_now", now);
    let one = b.int(1);
    let flipped = b.xor(bank, one);
    let other = b.shl_k(flipped, 4);
    let other = b.add_k(other, state::BANKS);
    let other = b.bind("bank_other", other);
    for n in 0..16u32 {
        for (local, base) in [(g.current[n as usize], now), (g.other[n as usize], other)] {
            if let Some(local) = local {
                let at = b.add_k(base, n);
                let v = b.load(Place::GlobalElement(Global::GeometryState, at));
                b.set(local, v);
            }
        }
        for (k, slot) in g.slots.iter().enumerate() {
            if let Some(local) = slot[n as usize] {
                let v = state_vector(b, state::SLOTS + 16 * k as u32 + n);
                b.set(local, v);
            }
        }
    }
    b.close()
}

/// What a geometry program's EMIT or SETEMIT at `pc` does (nothing in a vertex shader, whose
/// EMIT and SETEMIT the model ignores).
pub fn effect(e: &mut Emitter, inst: &Instruction, pc: u16, end_state: bool) {
    let Some(g) = e.registers.geometry else {
        return;
    };
    match *inst {
        Instruction::SetEmit {
            vertex,
            primitive,
            winding,
            ..
        } => {
            let v = e.b.int(vertex as i32);
            e.b.set(g.vertex, v);
            let p = e.b.boolean(primitive);
            e.b.set(g.primitive, p);
            let w = e.b.boolean(winding);
            e.b.set(g.winding, w);
        }
        Instruction::Simple {
            op: SimpleOp::Emit, ..
        } => emit(e, g, pc, end_state),
        _ => {}
    }
}

/// EMIT: vertex id 3 fails; the vertex goes out as the form sends it; the banks switch.
fn emit(e: &mut Emitter, g: GeometryRegisters, pc: u16, end_state: bool) {
    let vertex = e.b.get(g.vertex);
    let invalid = e.b.eq_k(vertex, 3);
    e.b.open();
    let at = e.b.int(pc as i32);
    crate::dispatch::finish(e, end_state, Status::InvalidEmit, at);
    let fail = e.b.close();
    e.b.push_stmt(Stmt::If(invalid, fail, Vec::new()));
    match g.layout.form {
        GeometryForm::Records => {
            let header = header(e, g, None, None);
            let mut vectors = vec![header];
            for local in g.current.iter().flatten() {
                vectors.push(e.b.get(*local));
            }
            send_record(e.b, g, &vectors);
        }
        GeometryForm::Triangles => triangle(e.b, g),
    }
    for (now, other) in g.current.iter().zip(&g.other) {
        if let (Some(now), Some(other)) = (*now, *other) {
            let was = e.b.get(now);
            let was = e.b.bind("swapped", was);
            let v = e.b.get(other);
            e.b.set(now, v);
            e.b.set(other, was);
        }
    }
}

/// The triangle form's EMIT: the vertex into its slot, and with the primitive flag the three
/// slots out as one strip, when they fit in `max_vertices`.
fn triangle(b: &mut FnBuilder, g: GeometryRegisters) {
    let vertex = b.get(g.vertex);
    let vertex = b.bind("emit_slot", vertex);
    for (k, slot) in g.slots.iter().enumerate() {
        let here = b.eq_k(vertex, k as u32);
        b.open();
        for (now, into) in g.current.iter().zip(slot) {
            if let (Some(now), Some(into)) = (*now, *into) {
                let v = b.get(now);
                b.set(into, v);
            }
        }
        let body = b.close();
        b.push_stmt(Stmt::If(here, body, Vec::new()));
    }
    let primitive = b.get(g.primitive);
    let sent = b.get(g.sent);
    let sent = b.bind("emit_sent", sent);
    let room = b.add_k(sent, 3);
    let fits = b.le_k(room, g.layout.max_vertices());
    let go = b.and(primitive, fits);
    b.open();
    let winding = b.get(g.winding);
    let winding = b.bind("emit_winding", winding);
    // The assembler takes (slot 1, slot 0, slot 2) when the winding flag is set.
    for (plain, swapped) in [(0, 1), (1, 0), (2, 2)] {
        for n in 0..16u8 {
            if let (Some(a), Some(c)) = (g.slots[plain][n as usize], g.slots[swapped][n as usize]) {
                let a = b.get(a);
                let v = if plain == swapped {
                    a
                } else {
                    let c = b.get(c);
                    b.select(winding, c, a)
                };
                b.store(Place::Global(Global::Output(n)), v);
            }
        }
        b.push_stmt(Stmt::EmitVertex);
    }
    b.push_stmt(Stmt::EndPrimitive);
    b.set(g.sent, room);
    let body = b.close();
    b.push_stmt(Stmt::If(go, body, Vec::new()));
}

/// A record's header: the SETEMIT state, cmp, and for the end record `status` at `pc` with a0
/// and aL.
fn header(
    e: &mut Emitter,
    g: GeometryRegisters,
    status_bits: Option<ExprId>,
    end: Option<ExprId>,
) -> ExprId {
    let b = &mut *e.b;
    let vertex = b.get(g.vertex);
    let vertex = b.convert(vertex, Scalar::Uint);
    let vertex = b.shl_k(vertex, flags::VERTEX_SHIFT);
    let mut word = vertex;
    for (local, value) in [
        (g.primitive, flags::PRIMITIVE),
        (g.winding, flags::WINDING),
        (e.registers.cmp[0], flags::CMP_X),
        (e.registers.cmp[1], flags::CMP_Y),
    ] {
        let on = b.get(local);
        let one = b.uint(value);
        let zero = b.uint(0);
        let v = b.select(on, one, zero);
        word = b.or(word, v);
    }
    if let Some(status) = status_bits {
        word = b.or(word, status);
    }
    let (a0x, a0y, al) = match end {
        Some(pc) => {
            let pc = b.convert(pc, Scalar::Uint);
            let pc = b.shl_k(pc, flags::PC_SHIFT);
            word = b.or(word, pc);
            let regs = e.registers;
            let get = |b: &mut FnBuilder, l: LocalId| {
                let v = b.get(l);
                b.convert(v, Scalar::Uint)
            };
            (
                get(b, regs.address[0]),
                get(b, regs.address[1]),
                get(b, regs.loop_counter),
            )
        }
        None => {
            let zero = b.uint(0);
            (zero, zero, zero)
        }
    };
    b.construct(Type::UVEC4, &[word, a0x, a0y, al])
}

/// How a geometry invocation stops with `status` at `pc`: in the record form the end record,
/// written here or at the general form's stop case; then the return.
pub fn stop(e: &mut Emitter, status: Status, pc: ExprId) {
    let Some(g) = e.registers.geometry else {
        return;
    };
    match g.stop {
        Some(route) if g.layout.form == GeometryForm::Records => {
            let s = e.b.uint(status as u32);
            e.b.set(route.status, s);
            e.b.set(route.pc, pc);
            let case = e.b.int(StopRoute::CASE);
            e.b.set(route.selector, case);
            e.b.cont();
        }
        _ => {
            let s = e.b.uint(status as u32);
            end_record(e, s, pc);
            e.b.ret(None);
        }
    }
}

/// The general form's stop case: the end record of the stop routed there, and the return.
pub fn stop_case(e: &mut Emitter, route: StopRoute) {
    let status = e.b.get(route.status);
    let pc = e.b.get(route.pc);
    end_record(e, status, pc);
    e.b.ret(None);
}

/// The end record (the record form) of an invocation that stopped with `status` (`uint`) at
/// `pc` (`int`).
fn end_record(e: &mut Emitter, status: ExprId, pc: ExprId) {
    let Some(g) = e.registers.geometry else {
        return;
    };
    if g.layout.form != GeometryForm::Records {
        return;
    }
    let status = e.b.shl_k(status, flags::STATUS_SHIFT);
    let bits = e.b.or_k(status, flags::END_RECORD);
    let header = header(e, g, Some(bits), Some(pc));
    let mut vectors = vec![header];
    for (n, &r) in e.registers.temporaries.iter().enumerate() {
        if g.layout.temporaries & (1 << n) != 0 {
            vectors.push(e.b.get(r));
        }
    }
    for bank in [&g.current, &g.other] {
        for local in bank.iter().flatten() {
            vectors.push(e.b.get(*local));
        }
    }
    send_record(e.b, g, &vectors);
}

/// `vectors` as packets, each output when it falls in the draw's window.
fn send_record(b: &mut FnBuilder, g: GeometryRegisters, vectors: &[ExprId]) {
    for packet in vectors.chunks(PACKET_VECTORS) {
        let sent = b.get(g.sent);
        let sent = b.bind("packet", sent);
        let first = state_vector(b, state::WINDOW);
        let first = b.lane(first, 0);
        // Unsigned: a packet before the window wraps to a large number.
        let into = b.sub(sent, first);
        let inside = b.lt_k(into, WINDOW_PACKETS);
        b.open();
        for n in 0..PACKET_VECTORS {
            let v = match packet.get(n) {
                Some(&v) => v,
                None => b.splat(Type::UVEC4, 0),
            };
            b.store(Place::Global(Global::Packet(n as u8)), v);
        }
        b.push_stmt(Stmt::EmitVertex);
        let body = b.close();
        b.push_stmt(Stmt::If(inside, body, Vec::new()));
        let next = b.add_k(sent, 1);
        b.set(g.sent, next);
    }
}

/// The vertex stage in front of a geometry shader on an API that links stages by location
/// (SPIR-V): each of the `inputs` attributes vN passed on at location N, where the geometry
/// shader's `vN[]` reads it (the PICA feeds a geometry shader what its vertex shader output;
/// the checking engines feed it the invocation's registers).
pub fn vertex_stage(inputs: u16) -> crate::ir::Module {
    let mut module = crate::ir::build::ModuleBuilder::new();
    let mut b = FnBuilder::new(&mut module, "main", &[], None);
    for n in (0..16u8).filter(|n| inputs & (1 << n) != 0) {
        let v = b.load(Place::Global(Global::Input(n)));
        b.store(Place::Global(Global::Output(n)), v);
    }
    let function = b.finish();
    module.add(function);
    module.finish()
}
