//! The reference interpreter: the oracle every other engine is checked against.
//!
//! Clarity first. Each step decodes one instruction, reads its sources (relative addressing,
//! swizzle, negate), computes with [`crate::float24::arith`] (the rules of
//! [`crate::float24::lanes`] on arrays), writes the enabled lanes, and lets the flow model's
//! concrete driver [`crate::flow::FlowDriver`] resolve the next PC: it evaluates the
//! instruction's test and the loop counters with [`crate::flow::rules`] and runs the shared
//! machine [`crate::flow::step`]. Hangs are errors: BREAK on an empty loop stack and the instruction
//! budget stop the invocation with an [`ExecError`]; the host always returns.
//!
//! Vertex shaders start every invocation from zeroed registers ([`Interpreter::run_vertex`]).
//! Geometry shaders run sequentially on a persistent [`GeometryState`]
//! ([`Interpreter::run_geometry`]): registers, the two output banks and the emit state carry over,
//! and b15 reads true after the first invocation.

use crate::exec::operate::{LaneFrom, OperationBackend, Prepared, Source, SourceRegister};
use crate::exec::{
    EmitConfig, EmitSink, ExecConfig, ExecError, GeometryState, Registers, ShaderEngine,
    VertexResult,
};
use crate::float24::Precision;
use crate::float24::arith::{self, CompareOp};
use crate::flow::{FlowDriver, FlowInputs, Stop};
use crate::isa::{
    DestMask, DstReg, Instruction, OperandDescriptor, RegisterFile, RelIndex, SimpleOp, decode,
    decode_each,
};
use crate::program::{
    ExactIndex, InputRegisters, ShaderKind, ShaderProgram, Uniforms, Vec4, relative_uniform_slot,
};

/// A program prepared for interpretation.
#[derive(Clone, Debug)]
pub struct Interpreter {
    program: ShaderProgram,
    /// Each word up to the last non-zero one decoded, with its data operation, its operands
    /// resolved.
    decoded: Box<[(Instruction, Option<Prepared>)]>,
    /// The words past those: zeros (docs/execution-model.md §6.3), decoded once.
    beyond: (Instruction, Option<Prepared>),
    config: ExecConfig,
}

impl Interpreter {
    /// Prepares `program` (decodes its code once).
    pub fn new(program: ShaderProgram, config: ExecConfig) -> Interpreter {
        let used = program
            .code
            .iter()
            .rposition(|&word| word != 0)
            .map_or(0, |i| i + 1);
        let opdescs = &program.opdescs;
        let entry = |inst: Instruction| {
            let prepared = inst.operation().map(|operation| {
                let desc = OperandDescriptor(opdescs[operation.desc() as usize]);
                Prepared::new(operation, desc)
            });
            (inst, prepared)
        };
        let decoded = decode_each(&program.code[..used], entry).into();
        let beyond = entry(decode(0));
        Interpreter {
            program,
            decoded,
            beyond,
            config,
        }
    }

    /// The program.
    pub fn program(&self) -> &ShaderProgram {
        &self.program
    }

    /// The settings.
    pub fn config(&self) -> ExecConfig {
        self.config
    }

    /// Runs one vertex-shader invocation from zeroed registers.
    pub fn run_vertex(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
    ) -> Result<VertexResult, ExecError> {
        self.run_vertex_observed(uniforms, inputs, |_| {})
    }

    /// Runs one vertex-shader invocation like [`Interpreter::run_vertex`], appending to `trace`
    /// the address of every instruction executed, in order (END and an instruction that fails
    /// included; an instruction refused by the budget not).
    pub fn run_vertex_traced(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        trace: &mut Vec<u16>,
    ) -> Result<VertexResult, ExecError> {
        self.run_vertex_observed(uniforms, inputs, |pc| trace.push(pc))
    }

    /// Runs one vertex-shader invocation, calling `observe` with the address of each
    /// instruction before it executes.
    fn run_vertex_observed(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        observe: impl FnMut(u16),
    ) -> Result<VertexResult, ExecError> {
        let mut registers = Registers::default();
        let mut invocation = Invocation {
            interp: self,
            uniforms,
            bools: uniforms.bools,
            inputs,
            registers: &mut registers,
            geometry: None,
        };
        invocation.run(observe)?;
        Ok(VertexResult {
            outputs: registers.output,
            flow: registers.flow,
        })
    }

    /// Runs one geometry-shader invocation on the persistent `state`, sending what it emits to
    /// `sink`. b15 reads true when an earlier invocation has run; after this one (even a failed
    /// one) it will.
    pub fn run_geometry(
        &self,
        state: &mut GeometryState,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        sink: &mut dyn EmitSink,
    ) -> Result<(), ExecError> {
        let bools = state.invocation_bools(uniforms.bools);
        let mut registers = std::mem::take(&mut state.registers);
        let outcome = Invocation {
            interp: self,
            uniforms,
            bools,
            inputs,
            registers: &mut registers,
            geometry: Some((state, sink)),
        }
        .run(|_| {});
        state.registers = registers;
        state.invoked = true;
        outcome
    }
}

impl ShaderEngine for Interpreter {
    fn name(&self) -> &'static str {
        "interp"
    }

    fn program(&self) -> &ShaderProgram {
        Interpreter::program(self)
    }

    fn config(&self) -> ExecConfig {
        Interpreter::config(self)
    }

    fn run_vertex(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
    ) -> Result<VertexResult, ExecError> {
        Interpreter::run_vertex(self, uniforms, inputs)
    }

    fn run_geometry(
        &self,
        state: &mut GeometryState,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        sink: &mut dyn EmitSink,
    ) -> Result<(), ExecError> {
        Interpreter::run_geometry(self, state, uniforms, inputs, sink)
    }
}

/// One running invocation.
struct Invocation<'a> {
    interp: &'a Interpreter,
    uniforms: &'a Uniforms,
    /// The bool uniforms as this invocation sees them (b15 forced for later GS invocations).
    bools: u16,
    inputs: &'a InputRegisters,
    registers: &'a mut Registers,
    geometry: Option<(&'a mut GeometryState, &'a mut dyn EmitSink)>,
}

impl Invocation<'_> {
    fn precision(&self) -> Precision {
        self.interp.config.precision
    }

    /// Runs to END or an error, calling `observe` with the address of each instruction before
    /// it executes.
    fn run(&mut self, mut observe: impl FnMut(u16)) -> Result<(), ExecError> {
        let mut driver = FlowDriver::new(self.interp.program.entry);
        let mut executed: u64 = 0;
        loop {
            let pc = driver.pc();
            executed += 1;
            if executed > self.interp.config.instruction_budget {
                let budget = self.interp.config.instruction_budget;
                return Err(ExecError::InstructionBudget { budget, pc });
            }
            observe(pc);
            let interp = self.interp;
            let (inst, operation) = interp.decoded.get(pc as usize).unwrap_or(&interp.beyond);
            match operation {
                Some(operation) => operation.perform(self),
                None => self.execute(pc, inst)?,
            }
            let inputs = FlowInputs {
                cmp: self.registers.flow.cmp,
                bools: self.bools,
                ints: &self.uniforms.int,
            };
            match driver.advance(inst, inputs, &mut self.registers.flow.al) {
                Ok(()) => {}
                Err(Stop::End) => return Ok(()),
                Err(Stop::BreakOutsideLoop) => return Err(ExecError::BreakOutsideLoop { pc }),
            }
        }
    }

    /// Executes the effects of an instruction without a data operation (EMIT, SETEMIT); control
    /// flow is the [`FlowDriver`]'s.
    fn execute(&mut self, pc: u16, inst: &Instruction) -> Result<(), ExecError> {
        match *inst {
            Instruction::Simple { op, .. } => match op {
                SimpleOp::Nop | SimpleOp::End | SimpleOp::Break => {}
                SimpleOp::Emit => self.emit(pc)?,
            },
            // Control flow is the FlowDriver's.
            Instruction::CondFlow { .. }
            | Instruction::BoolFlow { .. }
            | Instruction::Loop { .. } => {}
            Instruction::SetEmit {
                vertex,
                primitive,
                winding,
                ..
            } => {
                if let Some((state, _)) = self.geometry_outputs() {
                    state.emit = EmitConfig {
                        vertex,
                        primitive,
                        winding,
                    };
                }
            }
            Instruction::Unknown { .. } => {}
            // Data operations: `operate` (the run loop sends them there).
            Instruction::Binary { .. }
            | Instruction::Unary { .. }
            | Instruction::Mova { .. }
            | Instruction::Cmp { .. }
            | Instruction::Mad { .. } => {}
        }
        Ok(())
    }

    /// Float uniform `base` offset by `rel`: [`relative_uniform_slot`]; a slot above 95 reads
    /// ones.
    fn uniform(&self, base: u8, rel: RelIndex) -> Vec4 {
        let flow = &self.registers.flow;
        let offset = match rel {
            RelIndex::None => 0,
            RelIndex::A0X => flow.a0[0],
            RelIndex::A0Y => flow.a0[1],
            RelIndex::AL => flow.al,
        };
        let slot = relative_uniform_slot(&mut ExactIndex, base, offset);
        self.uniforms
            .float
            .get(slot as usize)
            .copied()
            .unwrap_or([1.0; 4])
    }

    /// The geometry state and sink when this invocation emits: a geometry-stage program run as
    /// a geometry-shader invocation. EMIT and SETEMIT do nothing in a vertex shader
    /// (docs/model-choices.md), whichever way it is run.
    #[allow(clippy::type_complexity)]
    fn geometry_outputs(&mut self) -> Option<(&mut GeometryState, &mut dyn EmitSink)> {
        if self.interp.program.stage != ShaderKind::Geometry {
            return None;
        }
        self.geometry
            .as_mut()
            .map(|(state, sink)| (&mut **state, &mut **sink as &mut dyn EmitSink))
    }

    /// EMIT (the rule is [`GeometryState::emit`]); a vertex shader ignores it.
    fn emit(&mut self, pc: u16) -> Result<(), ExecError> {
        let Some((state, sink)) = self.geometry_outputs() else {
            return Ok(());
        };
        let outputs = state.banks[state.bank];
        state.emit(&outputs, pc, sink)
    }
}

/// The data operations on plain lanes ([`operate`] states what each does): registers are the
/// invocation's, arithmetic is [`arith`]'s.
impl OperationBackend for Invocation<'_> {
    type Vector = Vec4;
    type Address = i32;
    type Flag = bool;

    /// Selects the register (relative addressing for uniforms), swizzles, negates.
    #[inline(always)]
    fn read(&mut self, source: &Source) -> Vec4 {
        let raw = match source.register {
            SourceRegister::Input(n) => self.inputs[n as usize],
            SourceRegister::Temporary(n) => self.registers.temp[n as usize],
            SourceRegister::Uniform { base, rel } => self.uniform(base, rel),
        };
        let value = source.swizzle.apply(raw);
        if source.negate {
            value.map(|x| f32::from_bits(x.to_bits() ^ 0x8000_0000))
        } else {
            value
        }
    }

    fn constant(&mut self, value: f32) -> Vec4 {
        [value; 4]
    }
    fn add(&mut self, a: Vec4, b: Vec4) -> Vec4 {
        arith::add(&a, &b, self.precision())
    }
    fn mul(&mut self, a: Vec4, b: Vec4) -> Vec4 {
        arith::mul(&a, &b, self.precision())
    }
    fn mad(&mut self, a: Vec4, b: Vec4, c: Vec4) -> Vec4 {
        arith::mad(&a, &b, &c, self.precision())
    }
    fn dot(&mut self, a: Vec4, b: Vec4, count: usize) -> Vec4 {
        arith::dot(&a, &b, count, self.precision())
    }
    fn floor(&mut self, a: Vec4) -> Vec4 {
        arith::flr(&a, self.precision())
    }
    fn reciprocal(&mut self, a: Vec4) -> Vec4 {
        arith::rcp(&a, self.precision())
    }
    fn reciprocal_sqrt(&mut self, a: Vec4) -> Vec4 {
        arith::rsq(&a, self.precision())
    }
    fn exp2(&mut self, a: Vec4) -> Vec4 {
        arith::ex2(&a, self.precision())
    }
    fn log2(&mut self, a: Vec4) -> Vec4 {
        arith::lg2(&a, self.precision())
    }
    fn select_if(
        &mut self,
        test: CompareOp,
        x: Vec4,
        y: Vec4,
        then: Vec4,
        otherwise: Vec4,
    ) -> Vec4 {
        std::array::from_fn(|i| {
            if test.compare(x[i], y[i]) {
                then[i]
            } else {
                otherwise[i]
            }
        })
    }
    fn lanes(&mut self, lanes: [LaneFrom<Vec4>; 4], _used: u8) -> Vec4 {
        std::array::from_fn(|i| match lanes[i] {
            LaneFrom::Vector(v) => v[i],
            LaneFrom::Constant(c) => c,
        })
    }
    fn compare(&mut self, test: CompareOp, a: Vec4, b: Vec4, lane: usize) -> bool {
        test.compare(a[lane], b[lane])
    }
    fn set_cmp(&mut self, lane: usize, flag: bool) {
        self.registers.flow.cmp[lane] = flag;
    }
    fn address(&mut self, a: Vec4, lane: usize) -> i32 {
        arith::mova(a[lane])
    }
    fn set_address(&mut self, lane: usize, value: i32) {
        self.registers.flow.a0[lane] = value;
    }

    fn write(&mut self, dst: DstReg, mask: DestMask, value: Vec4) {
        let target = match dst.file_index() {
            (RegisterFile::Temporary, n) => &mut self.registers.temp[n as usize],
            (_, n) => match self.geometry.as_mut() {
                Some((state, _)) => &mut state.banks[state.bank][n as usize],
                None => &mut self.registers.output[n as usize],
            },
        };
        for (lane, slot) in target.iter_mut().enumerate() {
            if mask.lane(lane) {
                *slot = value[lane];
            }
        }
    }
}
