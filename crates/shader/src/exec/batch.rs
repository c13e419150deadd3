//! The batch interface: many vertices of one draw in structure-of-arrays buffers.
//!
//! This is the interface the pipeline and embedders drive ([`super::ShaderEngine::run_batch`]);
//! the per-vertex [`super::ShaderEngine::run_vertex`] is the thin one. A batch buffer holds only
//! the registers a program reads ([`BatchLayout::inputs`]) or sends on
//! ([`BatchLayout::outputs`]), as *planes*: for each register in the set, in register order, four
//! planes (x, y, z, w) of one f32 per vertex. Plane `k` of a buffer starts at `k * stride`, so a
//! vertex group's component is one contiguous vector load. Errors are sparse (a failed vertex is
//! rare): a list of (vertex index, error), in vertex order. The final a0/aL/cmp of each vertex
//! are written only when the caller asks for them.
//!
//! Engines that run several vertices at once implement a [`GroupKernel`]: a fast path that may
//! decline vertices (a group that runs out of its budget or, in a kernel that does not mask
//! them, whose control flow diverges), which the caller then runs on an exact per-vertex engine (`crate::engine` composes
//! the two). Results are the same bits as the reference interpreter's whichever path ran them
//! (docs/execution-model.md §8).

use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;

use super::{ExecError, VertexResult};
use crate::flow::explore::reachable_addresses;
use crate::isa::{OperandDescriptor, RegisterFile, RelIndex, decode_words};
use crate::program::{
    DEFAULT_INPUT, FLOAT_UNIFORMS, FlowRegisters, InputRegisters, ShaderProgram, Vec4,
};

/// Owned buffers pad their stride to a multiple of this many vertices, so that every group of a
/// vector kernel is whole.
pub const STRIDE_ALIGN: usize = 16;

/// Vertices a block of [`BatchIo::run_per_vertex`]: one 64-byte cache line of each plane.
pub const VERTEX_BLOCK: usize = 16;

/// A set of registers (bit n = register n of its file).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RegisterSet(pub u16);

impl RegisterSet {
    /// Every register.
    pub const ALL: RegisterSet = RegisterSet(0xFFFF);

    /// How many registers.
    pub const fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether register `n` is in the set.
    pub const fn contains(self, n: usize) -> bool {
        n < 16 && self.0 & (1 << n) != 0
    }

    /// The position of register `n` among the set's registers, if it is in the set.
    pub const fn slot_of(self, n: usize) -> Option<usize> {
        if self.contains(n) {
            Some((self.0 & ((1u32 << n) - 1) as u16).count_ones() as usize)
        } else {
            None
        }
    }

    /// The registers, in order.
    #[inline]
    pub fn iter(self) -> impl Iterator<Item = usize> {
        let mut left = self.0;
        std::iter::from_fn(move || {
            let n = left.trailing_zeros() as usize;
            left &= left.wrapping_sub(1);
            (n < 16).then_some(n)
        })
    }

    /// How many planes (four per register) a buffer of this set has.
    pub const fn planes(self) -> usize {
        4 * self.len()
    }
}

/// Which registers a batch of one program carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BatchLayout {
    /// The input registers the program can read (v-registers read by reachable code).
    pub inputs: RegisterSet,
    /// The output registers it sends on (its output mask).
    pub outputs: RegisterSet,
    /// The float uniforms reachable code can read (bit n: cn; all of them when one read is
    /// relatively addressed): what a result can depend on.
    pub uniforms: u128,
}

/// Every float uniform, as [`BatchLayout::uniforms`] has them.
pub const ALL_FLOAT_UNIFORMS: u128 = (1 << FLOAT_UNIFORMS) - 1;

impl BatchLayout {
    /// The layout of `program`: the v-registers any reachable instruction reads (a superset of
    /// what an invocation reads) and the output mask.
    pub fn of(program: &ShaderProgram) -> BatchLayout {
        let decoded = decode_words(&program.code[..]);
        let reachable = reachable_addresses(&decoded, program.entry);
        let mut inputs = 0u16;
        let mut uniforms = 0u128;
        for (pc, inst) in decoded.iter().enumerate() {
            if !reachable[pc] {
                continue;
            }
            let Some(desc) = inst.desc() else { continue };
            let desc = OperandDescriptor(program.opdescs[desc as usize]);
            for source in inst.sources(desc) {
                match source.reg.file_index() {
                    (RegisterFile::Input, index) => inputs |= 1 << index,
                    (RegisterFile::FloatUniform, _) if source.rel != RelIndex::None => {
                        uniforms = ALL_FLOAT_UNIFORMS;
                    }
                    (RegisterFile::FloatUniform, index) => uniforms |= 1 << index,
                    _ => {}
                }
            }
        }
        BatchLayout {
            inputs: RegisterSet(inputs),
            outputs: RegisterSet(program.output_mask),
            uniforms,
        }
    }
}

/// Why buffers cannot form a batch: a caller's mistake, reported instead of a panic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchError {
    /// A plane stride smaller than the vertex count.
    StrideTooSmall {
        /// Which buffer (`"inputs"`, `"outputs"`).
        buffer: &'static str,
        /// The stride given.
        stride: usize,
        /// The vertex count.
        count: usize,
    },
    /// A buffer too short for its planes.
    BufferTooShort {
        /// Which buffer.
        buffer: &'static str,
        /// Elements needed (`(planes - 1) * stride + count`).
        needed: usize,
        /// Elements given.
        len: usize,
    },
    /// The buffers of one batch disagree on the vertex count.
    CountMismatch {
        /// Which buffer.
        buffer: &'static str,
        /// Its count.
        count: usize,
        /// The inputs' count.
        expected: usize,
    },
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchError::StrideTooSmall {
                buffer,
                stride,
                count,
            } => write!(
                f,
                "{buffer}: plane stride {stride} is smaller than the vertex count {count}"
            ),
            BatchError::BufferTooShort {
                buffer,
                needed,
                len,
            } => write!(
                f,
                "{buffer}: the planes need {needed} floats but the buffer has {len}"
            ),
            BatchError::CountMismatch {
                buffer,
                count,
                expected,
            } => write!(
                f,
                "{buffer}: {count} vertices, but the inputs have {expected}"
            ),
        }
    }
}

impl std::error::Error for BatchError {}

#[inline]
fn check_shape(
    buffer: &'static str,
    len: usize,
    registers: RegisterSet,
    count: usize,
    stride: usize,
) -> Result<(), BatchError> {
    if stride < count {
        return Err(BatchError::StrideTooSmall {
            buffer,
            stride,
            count,
        });
    }
    let planes = registers.planes();
    let needed = if planes == 0 || count == 0 {
        0
    } else {
        (planes - 1)
            .checked_mul(stride)
            .and_then(|n| n.checked_add(count))
            .unwrap_or(usize::MAX)
    };
    if len < needed {
        return Err(BatchError::BufferTooShort {
            buffer,
            needed,
            len,
        });
    }
    Ok(())
}

/// Read-only input planes of `count` vertices.
#[derive(Clone, Copy, Debug)]
pub struct SoaInputs<'a> {
    data: &'a [f32],
    registers: RegisterSet,
    count: usize,
    stride: usize,
}

impl<'a> SoaInputs<'a> {
    /// Planes in `data`: plane `k` (register `registers`'s k/4-th, component k%4) holds vertex
    /// `i` at `data[k * stride + i]`.
    #[inline]
    pub fn new(
        data: &'a [f32],
        registers: RegisterSet,
        count: usize,
        stride: usize,
    ) -> Result<SoaInputs<'a>, BatchError> {
        check_shape("inputs", data.len(), registers, count, stride)?;
        Ok(SoaInputs {
            data,
            registers,
            count,
            stride,
        })
    }

    /// The registers present.
    #[inline]
    pub fn registers(&self) -> RegisterSet {
        self.registers
    }

    /// The vertex count.
    #[inline]
    pub fn count(&self) -> usize {
        self.count
    }

    /// The distance between planes, in floats.
    #[inline]
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Plane `k`'s `count` values.
    #[inline]
    pub fn plane(&self, k: usize) -> &'a [f32] {
        &self.data[k * self.stride..k * self.stride + self.count]
    }

    /// The whole backing slice (plane `k` starts at `k * stride`).
    #[inline]
    pub fn data(&self) -> &'a [f32] {
        self.data
    }

    /// Vertex `i`'s input registers; a register not in the buffer reads (0, 0, 0, 1).
    #[inline]
    pub fn vertex(&self, i: usize) -> InputRegisters {
        let mut v = [DEFAULT_INPUT; 16];
        self.load_vertex(i, &mut v);
        v
    }

    /// Writes vertex `i`'s registers of the buffer into `registers`, leaving the others as they
    /// are (a per-vertex engine that keeps one set of input registers for a whole batch sets
    /// the others to (0, 0, 0, 1) once).
    #[inline]
    pub fn load_vertex(&self, i: usize, registers: &mut InputRegisters) {
        for (slot, n) in self.registers.iter().enumerate() {
            for (c, lane) in registers[n].iter_mut().enumerate() {
                *lane = self.data[(4 * slot + c) * self.stride + i];
            }
        }
    }

    /// Vertices `start..start + len`.
    #[inline]
    pub fn range(&self, start: usize, len: usize) -> SoaInputs<'a> {
        assert!(start + len <= self.count, "range past the batch");
        SoaInputs {
            data: &self.data[start.min(self.data.len())..],
            registers: self.registers,
            count: len,
            stride: self.stride,
        }
    }
}

/// Output planes of `count` vertices, written by one batch run. Split with
/// [`SoaOutputs::split_at`] into disjoint vertex ranges that can be written from different
/// threads.
#[derive(Debug)]
pub struct SoaOutputs<'a> {
    base: NonNull<f32>,
    registers: RegisterSet,
    count: usize,
    stride: usize,
    _buffer: PhantomData<&'a mut [f32]>,
}

// SAFETY: a `SoaOutputs` is a unique borrow of the vertex range it covers in each plane (split_at
// hands out disjoint ranges), like a `&mut [f32]`.
unsafe impl Send for SoaOutputs<'_> {}

impl<'a> SoaOutputs<'a> {
    /// Planes in `data`, laid out as in [`SoaInputs::new`].
    #[inline]
    pub fn new(
        data: &'a mut [f32],
        registers: RegisterSet,
        count: usize,
        stride: usize,
    ) -> Result<SoaOutputs<'a>, BatchError> {
        check_shape("outputs", data.len(), registers, count, stride)?;
        Ok(SoaOutputs {
            base: NonNull::new(data.as_mut_ptr()).expect("a slice pointer is never null"),
            registers,
            count,
            stride,
            _buffer: PhantomData,
        })
    }

    /// The registers present.
    #[inline]
    pub fn registers(&self) -> RegisterSet {
        self.registers
    }

    /// The vertex count.
    #[inline]
    pub fn count(&self) -> usize {
        self.count
    }

    /// The distance between planes, in floats.
    #[inline]
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Plane `k`'s `count` values.
    #[inline]
    pub fn plane_mut(&mut self, k: usize) -> &mut [f32] {
        assert!(k < self.registers.planes(), "no plane {k}");
        // SAFETY: plane k's range [k*stride, k*stride+count) is inside the buffer (checked by
        // `new`) and belongs to this view alone.
        unsafe {
            std::slice::from_raw_parts_mut(self.base.as_ptr().add(k * self.stride), self.count)
        }
    }

    /// The pointer to plane 0's first value, for compiled kernels: plane `k` starts
    /// `k * stride()` floats after it, and only `count()` values of each plane are this view's.
    #[inline]
    pub fn base_ptr(&mut self) -> *mut f32 {
        self.base.as_ptr()
    }

    /// Writes vertex `i`'s registers of the set from `outputs`.
    #[inline]
    pub fn set_vertex(&mut self, i: usize, outputs: &[Vec4; 16]) {
        assert!(i < self.count, "vertex {i} past the batch");
        for (slot, n) in self.registers.iter().enumerate() {
            for (c, &value) in outputs[n].iter().enumerate() {
                self.plane_mut(4 * slot + c)[i] = value;
            }
        }
    }

    /// Vertex `i`'s registers of the set (others +0).
    #[inline]
    pub fn vertex(&mut self, i: usize) -> [Vec4; 16] {
        let mut v = [[0.0; 4]; 16];
        for (slot, n) in self.registers.iter().enumerate() {
            for (c, lane) in v[n].iter_mut().enumerate() {
                *lane = self.plane_mut(4 * slot + c)[i];
            }
        }
        v
    }

    /// Splits into vertices `..mid` and `mid..`.
    #[inline]
    pub fn split_at(self, mid: usize) -> (SoaOutputs<'a>, SoaOutputs<'a>) {
        assert!(mid <= self.count, "split past the batch");
        let first = SoaOutputs {
            base: self.base,
            registers: self.registers,
            count: mid,
            stride: self.stride,
            _buffer: PhantomData,
        };
        // SAFETY: mid <= count <= stride, so the offset stays inside plane 0 (or one past it).
        let base = unsafe { NonNull::new_unchecked(self.base.as_ptr().add(mid)) };
        let second = SoaOutputs {
            base,
            registers: self.registers,
            count: self.count - mid,
            stride: self.stride,
            _buffer: PhantomData,
        };
        (first, second)
    }

    /// A shorter borrow of the same vertices.
    #[inline]
    pub fn reborrow(&mut self) -> SoaOutputs<'_> {
        SoaOutputs {
            base: self.base,
            registers: self.registers,
            count: self.count,
            stride: self.stride,
            _buffer: PhantomData,
        }
    }
}

/// One batch: inputs, outputs, and optionally the final a0/aL/cmp of each vertex.
#[derive(Debug)]
pub struct BatchIo<'a> {
    /// The input planes.
    pub inputs: SoaInputs<'a>,
    /// The output planes.
    pub outputs: SoaOutputs<'a>,
    /// One entry per vertex, when the caller wants the final flow registers.
    pub flow: Option<&'a mut [FlowRegisters]>,
}

impl<'a> BatchIo<'a> {
    /// A batch of `inputs.count()` vertices; the outputs (and flow entries) must be as many.
    #[inline]
    pub fn new(
        inputs: SoaInputs<'a>,
        outputs: SoaOutputs<'a>,
        flow: Option<&'a mut [FlowRegisters]>,
    ) -> Result<BatchIo<'a>, BatchError> {
        let expected = inputs.count();
        if outputs.count() != expected {
            return Err(BatchError::CountMismatch {
                buffer: "outputs",
                count: outputs.count(),
                expected,
            });
        }
        if let Some(flow) = &flow
            && flow.len() != expected
        {
            return Err(BatchError::CountMismatch {
                buffer: "flow",
                count: flow.len(),
                expected,
            });
        }
        Ok(BatchIo {
            inputs,
            outputs,
            flow,
        })
    }

    /// The vertex count.
    #[inline]
    pub fn count(&self) -> usize {
        self.inputs.count()
    }

    /// Splits into vertices `..mid` and `mid..`.
    #[inline]
    pub fn split_at(self, mid: usize) -> (BatchIo<'a>, BatchIo<'a>) {
        let (out_a, out_b) = self.outputs.split_at(mid);
        let (flow_a, flow_b) = match self.flow {
            Some(flow) => {
                let (a, b) = flow.split_at_mut(mid);
                (Some(a), Some(b))
            }
            None => (None, None),
        };
        (
            BatchIo {
                inputs: self.inputs.range(0, mid),
                outputs: out_a,
                flow: flow_a,
            },
            BatchIo {
                inputs: self.inputs.range(mid, self.inputs.count() - mid),
                outputs: out_b,
                flow: flow_b,
            },
        )
    }

    /// A shorter borrow of the same batch.
    #[inline]
    pub fn reborrow(&mut self) -> BatchIo<'_> {
        BatchIo {
            inputs: self.inputs,
            outputs: self.outputs.reborrow(),
            flow: self.flow.as_deref_mut(),
        }
    }

    /// Runs `run` on every vertex in order, for engines that run one vertex at a time. The
    /// planes are read and written [`VERTEX_BLOCK`] vertices at a time, a plane after another,
    /// so that a block touches each plane's cache line once instead of once per vertex: the
    /// planes lie a whole stride apart, and one vertex's values are as many cache lines as the
    /// batch has planes. What each invocation leaves is stored as [`BatchIo::store`] does.
    #[inline]
    pub fn run_per_vertex(
        &mut self,
        errors: &mut Vec<(usize, ExecError)>,
        mut run: impl FnMut(&InputRegisters) -> Result<VertexResult, ExecError>,
    ) {
        let mut inputs = [[DEFAULT_INPUT; 16]; VERTEX_BLOCK];
        let mut outputs = [[[0.0; 4]; 16]; VERTEX_BLOCK];
        let count = self.count();
        for start in (0..count).step_by(VERTEX_BLOCK) {
            let len = VERTEX_BLOCK.min(count - start);
            for (slot, n) in self.inputs.registers.iter().enumerate() {
                for c in 0..4 {
                    let plane = &self.inputs.plane(4 * slot + c)[start..start + len];
                    for (vertex, &value) in inputs.iter_mut().zip(plane) {
                        vertex[n][c] = value;
                    }
                }
            }
            for (v, (vertex, out)) in inputs[..len].iter().zip(&mut outputs).enumerate() {
                let (outputs, flow) = settled(start + v, run(vertex), errors);
                *out = outputs;
                if let Some(entries) = self.flow.as_deref_mut() {
                    entries[start + v] = flow;
                }
            }
            for (slot, n) in self.outputs.registers.iter().enumerate() {
                for c in 0..4 {
                    let plane = &mut self.outputs.plane_mut(4 * slot + c)[start..start + len];
                    for (value, vertex) in plane.iter_mut().zip(&outputs) {
                        *value = vertex[n][c];
                    }
                }
            }
        }
    }

    /// Stores what vertex `i`'s invocation left: its outputs and flow registers, or on failure
    /// +0 outputs, zeroed flow registers and the error in `errors`.
    #[inline]
    pub fn store(
        &mut self,
        i: usize,
        outcome: Result<VertexResult, ExecError>,
        errors: &mut Vec<(usize, ExecError)>,
    ) {
        let (outputs, flow) = settled(i, outcome, errors);
        self.outputs.set_vertex(i, &outputs);
        if let Some(entries) = self.flow.as_deref_mut() {
            entries[i] = flow;
        }
    }
}

/// A batch in an emulator's own layout, vertex records (docs/c-abi.md, `picajit_run_vertices`):
/// each vertex its sixteen input registers (register values, as [`super::ShaderEngine::run_vertex`]
/// takes them) and sixteen output registers, of which a run writes those of `written`, the
/// program's output set ([`BatchLayout::outputs`]), and leaves the others as they are.
pub struct RecordIo<'a> {
    /// Each vertex's input registers.
    pub inputs: &'a [InputRegisters],
    /// Each vertex's output registers.
    pub outputs: &'a mut [[Vec4; 16]],
    /// The output registers a run writes.
    pub written: RegisterSet,
    /// One entry per vertex, when the caller wants the final flow registers.
    pub flow: Option<&'a mut [FlowRegisters]>,
}

impl<'a> RecordIo<'a> {
    /// A batch of `inputs.len()` vertices; the outputs (and flow entries) must be as many.
    #[inline]
    pub fn new(
        inputs: &'a [InputRegisters],
        outputs: &'a mut [[Vec4; 16]],
        written: RegisterSet,
        flow: Option<&'a mut [FlowRegisters]>,
    ) -> Result<RecordIo<'a>, BatchError> {
        let expected = inputs.len();
        for (buffer, count) in [
            ("outputs", Some(outputs.len())),
            ("flow", flow.as_ref().map(|flow| flow.len())),
        ] {
            if let Some(count) = count
                && count != expected
            {
                return Err(BatchError::CountMismatch {
                    buffer,
                    count,
                    expected,
                });
            }
        }
        Ok(RecordIo {
            inputs,
            outputs,
            written,
            flow,
        })
    }

    /// The vertex count.
    #[inline]
    pub fn count(&self) -> usize {
        self.inputs.len()
    }

    /// Stores what vertex `i`'s invocation left as [`BatchIo::store`] does, in the registers of
    /// `written` only.
    #[inline]
    pub fn store(
        &mut self,
        i: usize,
        outcome: Result<VertexResult, ExecError>,
        errors: &mut Vec<(usize, ExecError)>,
    ) {
        let (outputs, flow) = settled(i, outcome, errors);
        for n in self.written.iter() {
            self.outputs[i][n] = outputs[n];
        }
        if let Some(entries) = self.flow.as_deref_mut() {
            entries[i] = flow;
        }
    }
}

/// What vertex `i`'s invocation leaves to store: its outputs and flow registers, or on failure
/// +0 outputs and zeroed flow registers (docs/execution-model.md §6.4), the error going to
/// `errors`.
#[inline]
fn settled(
    i: usize,
    outcome: Result<VertexResult, ExecError>,
    errors: &mut Vec<(usize, ExecError)>,
) -> ([Vec4; 16], FlowRegisters) {
    match outcome {
        Ok(result) => (result.outputs, result.flow),
        Err(e) => {
            errors.push((i, e));
            ([[0.0; 4]; 16], FlowRegisters::default())
        }
    }
}

/// Owned planes of `count` vertices, stride padded to [`STRIDE_ALIGN`].
#[derive(Clone, Debug, PartialEq)]
pub struct SoaBuffer {
    registers: RegisterSet,
    count: usize,
    stride: usize,
    data: Vec<f32>,
}

impl SoaBuffer {
    /// Zeroed planes for `count` vertices.
    pub fn zeroed(registers: RegisterSet, count: usize) -> SoaBuffer {
        let stride = count.div_ceil(STRIDE_ALIGN) * STRIDE_ALIGN;
        SoaBuffer {
            registers,
            count,
            stride,
            data: vec![0.0; registers.planes() * stride],
        }
    }

    /// The registers of `registers` from each vertex of `vertices`.
    pub fn from_vertices(registers: RegisterSet, vertices: &[InputRegisters]) -> SoaBuffer {
        let mut buffer = SoaBuffer::zeroed(registers, vertices.len());
        for (slot, n) in registers.iter().enumerate() {
            for c in 0..4 {
                let plane = &mut buffer.data[(4 * slot + c) * buffer.stride..];
                for (value, vertex) in plane.iter_mut().zip(vertices) {
                    *value = vertex[n][c];
                }
            }
        }
        buffer
    }

    /// The registers present.
    #[inline]
    pub fn registers(&self) -> RegisterSet {
        self.registers
    }

    /// The vertex count.
    #[inline]
    pub fn count(&self) -> usize {
        self.count
    }

    /// As batch inputs.
    #[inline]
    pub fn inputs(&self) -> SoaInputs<'_> {
        SoaInputs {
            data: &self.data,
            registers: self.registers,
            count: self.count,
            stride: self.stride,
        }
    }

    /// As batch outputs.
    #[inline]
    pub fn outputs(&mut self) -> SoaOutputs<'_> {
        SoaOutputs::new(&mut self.data, self.registers, self.count, self.stride)
            .expect("an owned buffer has the shape it says")
    }

    /// Vertex `i`'s registers of the set (others (0, 0, 0, 1), as inputs read).
    #[inline]
    pub fn vertex(&self, i: usize) -> InputRegisters {
        self.inputs().vertex(i)
    }

    /// Plane `k`.
    #[inline]
    pub fn plane(&self, k: usize) -> &[f32] {
        self.inputs().plane(k)
    }

    /// Plane `k`, to fill.
    #[inline]
    pub fn plane_mut(&mut self, k: usize) -> &mut [f32] {
        &mut self.data[k * self.stride..k * self.stride + self.count]
    }
}

/// The vertices of a batch with an input unusual in `precision`
/// ([`crate::float24::lanes::is_unusual_input`]) in a register of `read` (the registers the
/// program reads; the others do not count).
pub fn unusual_vertices(
    inputs: &SoaInputs<'_>,
    read: RegisterSet,
    precision: crate::float24::Precision,
) -> Vec<usize> {
    let mut unusual = vec![0u8; inputs.count()];
    for (slot, n) in inputs.registers().iter().enumerate() {
        if !read.contains(n) {
            continue;
        }
        for k in 4 * slot..4 * slot + 4 {
            for (flag, &value) in unusual.iter_mut().zip(inputs.plane(k)) {
                *flag |= u8::from(crate::float24::lanes::is_unusual_input(value, precision));
            }
        }
    }
    (0..unusual.len()).filter(|&i| unusual[i] != 0).collect()
}

/// The planes of `registers` of the vertices `indices` of `inputs`, in that order (a register
/// `inputs` lacks reads (0, 0, 0, 1), as batch inputs do).
fn gather_vertices(inputs: &SoaInputs<'_>, registers: RegisterSet, indices: &[usize]) -> SoaBuffer {
    let mut buffer = SoaBuffer::zeroed(registers, indices.len());
    let stride = buffer.stride;
    for (slot, n) in registers.iter().enumerate() {
        let from = inputs.registers().slot_of(n);
        for (c, &default) in DEFAULT_INPUT.iter().enumerate() {
            let k = 4 * slot + c;
            let plane = &mut buffer.data[k * stride..k * stride + indices.len()];
            match from {
                Some(from) => {
                    let source = inputs.plane(4 * from + c);
                    for (value, &i) in plane.iter_mut().zip(indices) {
                        *value = source[i];
                    }
                }
                None => plane.fill(default),
            }
        }
    }
    buffer
}

/// Runs a batch as two sets of vertices: those of `unusual` (increasing indices) and the
/// others, each gathered into planes of its own (`inputs`'s registers, `outputs`'s) and run by
/// `run(set_is_unusual, io, declined)`, then puts the outputs, flow registers and declines back
/// in place (declines in increasing order). A vertex's result depends only on its inputs and
/// the uniforms, so where a vertex runs changes the speed, never the bits (docs/batches.md,
/// "Unusual vertices").
pub fn run_sorted(
    io: &mut BatchIo<'_>,
    inputs: RegisterSet,
    outputs: RegisterSet,
    unusual: &[usize],
    declined: &mut Vec<usize>,
    mut run: impl FnMut(bool, &mut BatchIo<'_>, &mut Vec<usize>),
) {
    let mut rest = unusual.iter().peekable();
    let ordinary: Vec<usize> = (0..io.count())
        .filter(|&i| rest.next_if_eq(&&i).is_none())
        .collect();
    let slots: Vec<Option<usize>> = outputs
        .iter()
        .map(|n| io.outputs.registers().slot_of(n))
        .collect();
    let mut sets_declined = Vec::new();
    for (indices, set_is_unusual) in [(&ordinary[..], false), (unusual, true)] {
        if indices.is_empty() {
            continue;
        }
        let set_inputs = gather_vertices(&io.inputs, inputs, indices);
        let mut set_outputs = SoaBuffer::zeroed(outputs, indices.len());
        let mut flow = io
            .flow
            .is_some()
            .then(|| vec![FlowRegisters::default(); indices.len()]);
        let mut set_declined = Vec::new();
        {
            let mut set = BatchIo::new(
                set_inputs.inputs(),
                set_outputs.outputs(),
                flow.as_deref_mut(),
            )
            .expect("planes made for the set's vertices");
            run(set_is_unusual, &mut set, &mut set_declined);
        }
        for (slot, &to) in slots.iter().enumerate() {
            let Some(to) = to else { continue };
            for c in 0..4 {
                let plane = io.outputs.plane_mut(4 * to + c);
                for (&value, &i) in set_outputs.plane(4 * slot + c).iter().zip(indices) {
                    plane[i] = value;
                }
            }
        }
        if let (Some(entries), Some(flow)) = (io.flow.as_deref_mut(), &flow) {
            for (&entry, &i) in flow.iter().zip(indices) {
                entries[i] = entry;
            }
        }
        sets_declined.extend(set_declined.into_iter().map(|j| indices[j]));
    }
    sets_declined.sort_unstable();
    declined.extend(sets_declined);
}

/// The fast path of a tier that runs several vertices at once (a structure-of-arrays JIT, a
/// vectorised interpreter).
///
/// It runs every vertex of a batch and declines the ones it cannot finish exactly: a group of
/// vertices whose control flow diverges where it does not run them under masks, a value it
/// does not handle on its fast path, a failed invocation, the instruction budget. A declined vertex's outputs and
/// flow entry are unspecified; the caller runs it again on an exact per-vertex engine, so the
/// batch's results are exact whatever the kernel declines.
pub trait GroupKernel: Send + Sync {
    /// The tier's name (`"soa-jit"`, `"vinterp"`).
    fn name(&self) -> &'static str;

    /// Runs every vertex of `io` with `uniforms` (a vertex shader, from zeroed registers, as
    /// [`super::ShaderEngine::run_vertex`]) and appends to `declined`, in increasing order, the
    /// index of each vertex it did not finish exactly.
    fn run(
        &self,
        uniforms: &crate::program::Uniforms,
        io: &mut BatchIo<'_>,
        declined: &mut Vec<usize>,
    );

    /// [`run`](Self::run) on vertex records, for a kernel that reads and writes them itself:
    /// whether it ran the batch (with `io.written` its layout's outputs). Kernels that only
    /// read planes return `false` and touch nothing.
    fn run_records(
        &self,
        uniforms: &crate::program::Uniforms,
        io: &mut RecordIo<'_>,
        declined: &mut Vec<usize>,
    ) -> bool {
        let _ = (uniforms, io, declined);
        false
    }
}
