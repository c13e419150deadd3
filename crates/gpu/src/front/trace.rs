//! Traces: the CiTrace file format (`CiTr`, version 1, as Citra's debugger records it) and
//! their replay (docs/citrace.md, docs/gpu.md "Scenes"). A trace is an initial state (register
//! snapshots, default attributes, the vertex program and its uniforms) and a stream of memory
//! loads, writes to the GPU's memory-mapped registers and frame markers. Replay writes the
//! loads into the memory model, runs what the external registers trigger (command lists,
//! memory fills, display transfers) and sends internal register writes through the command
//! processor.
//!
//! Reading never panics and never trusts a size: every block, payload and the stream must lie
//! inside the file, and each error names the field or the stream element.

use std::fmt;

use super::external;
use super::{Gpu, GpuError};
use crate::framebuffer::memory::PhysicalMemory;
use crate::regs::id;

/// The file magic.
pub const MAGIC: &[u8; 4] = b"CiTr";
/// Bytes of the header this writer produces (and the reader's usual case).
pub const HEADER_BYTES: usize = 0x64;
/// Bytes of the short header (without default attributes) some players use.
pub const SHORT_HEADER_BYTES: usize = 0x5C;
/// Bytes per stream element.
pub const ELEMENT_BYTES: usize = 20;

/// Physical address of the GPU's external register block.
pub const GPU_REGISTERS: u32 = 0x1040_0000;
/// Words in the external register block a trace holds.
pub const GPU_REGISTER_WORDS: usize = 0x1000;
/// Physical address of the LCD register block.
pub const LCD_REGISTERS: u32 = 0x1020_2000;
/// Words in the LCD block.
pub const LCD_REGISTER_WORDS: usize = 0x400;
/// Internal (PICA) registers a trace snapshot holds.
pub const PICA_REGISTER_WORDS: usize = 0x300;

/// One element of a trace's stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceOp {
    /// Bytes placed at a physical address.
    MemoryLoad {
        /// The physical address.
        address: u32,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// A 32-bit write to a memory-mapped register (physical address: the GPU block at
    /// [`GPU_REGISTERS`], the LCD block at [`LCD_REGISTERS`]).
    RegisterWrite {
        /// The register's physical address.
        address: u32,
        /// The value written.
        value: u32,
    },
    /// The end of a frame.
    FrameMarker,
}

/// The state a trace starts from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitialState {
    /// External GPU registers.
    pub gpu_registers: Vec<u32>,
    /// LCD registers.
    pub lcd_registers: Vec<u32>,
    /// Internal (PICA) registers, by register ID.
    pub pica_registers: Vec<u32>,
    /// Default attributes: x, y, z, w of each, float24 in the low 24 bits.
    pub default_attributes: Vec<u32>,
    /// Vertex program memory.
    pub vs_program: Vec<u32>,
    /// Vertex operand descriptors.
    pub vs_swizzle: Vec<u32>,
    /// Vertex float uniforms: x, y, z, w of each, float24 in the low 24 bits.
    pub vs_float_uniforms: Vec<u32>,
    /// Geometry program memory (recorders leave it empty).
    pub gs_program: Vec<u32>,
    /// Geometry operand descriptors.
    pub gs_swizzle: Vec<u32>,
    /// Geometry float uniforms.
    pub gs_float_uniforms: Vec<u32>,
}

impl Default for InitialState {
    /// The state of a GPU after reset: everything zero, in the sizes Citra writes.
    fn default() -> InitialState {
        InitialState {
            gpu_registers: vec![0; GPU_REGISTER_WORDS],
            lcd_registers: vec![0; LCD_REGISTER_WORDS],
            pica_registers: vec![0; PICA_REGISTER_WORDS],
            default_attributes: vec![0; 64],
            vs_program: vec![0; 4096],
            vs_swizzle: vec![0; 4096],
            vs_float_uniforms: vec![0; 384],
            gs_program: Vec::new(),
            gs_swizzle: Vec::new(),
            gs_float_uniforms: Vec::new(),
        }
    }
}

/// A whole trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// Where it starts.
    pub initial: InitialState,
    /// What happens, in order.
    pub ops: Vec<TraceOp>,
}

impl Trace {
    /// How many frame markers the stream has.
    pub fn frames(&self) -> usize {
        self.ops
            .iter()
            .filter(|op| matches!(op, TraceOp::FrameMarker))
            .count()
    }
}

/// One stream element as replay reads it: a memory load's bytes borrowed from where they lie
/// (the mapped file, or an owned [`Trace`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceOpRef<'a> {
    /// Bytes placed at a physical address.
    MemoryLoad {
        /// The physical address.
        address: u32,
        /// The bytes.
        bytes: &'a [u8],
    },
    /// A 32-bit write to a memory-mapped register ([`TraceOp::RegisterWrite`]).
    RegisterWrite {
        /// The register's physical address.
        address: u32,
        /// The value written.
        value: u32,
    },
    /// The end of a frame.
    FrameMarker,
}

impl TraceOp {
    /// The element as replay reads it.
    pub fn as_ref(&self) -> TraceOpRef<'_> {
        match self {
            TraceOp::MemoryLoad { address, bytes } => TraceOpRef::MemoryLoad {
                address: *address,
                bytes,
            },
            TraceOp::RegisterWrite { address, value } => TraceOpRef::RegisterWrite {
                address: *address,
                value: *value,
            },
            TraceOp::FrameMarker => TraceOpRef::FrameMarker,
        }
    }
}

/// What replay reads: an initial state and a stream of elements, held ([`Trace`]) or read in
/// place from a file's bytes ([`TraceFile`]).
pub trait TraceStream {
    /// Where the trace starts.
    fn initial(&self) -> &InitialState;
    /// How many elements the stream has.
    fn elements(&self) -> usize;
    /// How many frame markers the stream has.
    fn frames(&self) -> usize;
    /// The elements in order.
    fn ops(&self) -> impl Iterator<Item = TraceOpRef<'_>>;
}

impl TraceStream for Trace {
    fn initial(&self) -> &InitialState {
        &self.initial
    }
    fn elements(&self) -> usize {
        self.ops.len()
    }
    fn frames(&self) -> usize {
        Trace::frames(self)
    }
    fn ops(&self) -> impl Iterator<Item = TraceOpRef<'_>> {
        self.ops.iter().map(TraceOp::as_ref)
    }
}

/// A CiTrace file read in place: the initial state is copied out (a few kilobytes), the stream
/// stays in the file's bytes (a memory map of a file of hundreds of megabytes costs no copy),
/// and every element was checked against the file's length when it was parsed.
#[derive(Clone, Debug)]
pub struct TraceFile<'a> {
    /// Where it starts.
    pub initial: InitialState,
    file: &'a [u8],
    stream: &'a [u8],
    frames: usize,
}

impl<'a> TraceFile<'a> {
    /// Parses the header and the initial state and checks every stream element (its type, its
    /// write size, its payload inside the file) without copying any payload.
    pub fn parse(file: &'a [u8]) -> Result<TraceFile<'a>, TraceError> {
        let (initial, stream) = parse_header(file)?;
        let mut frames = 0;
        for (index, e) in stream.chunks_exact(ELEMENT_BYTES).enumerate() {
            if decode_element(file, e, index)? == TraceOpRef::FrameMarker {
                frames += 1;
            }
        }
        Ok(TraceFile {
            initial,
            file,
            stream,
            frames,
        })
    }

    /// The whole trace, every payload copied.
    pub fn to_trace(&self) -> Trace {
        Trace {
            initial: self.initial.clone(),
            ops: TraceStream::ops(self)
                .map(|op| match op {
                    TraceOpRef::MemoryLoad { address, bytes } => TraceOp::MemoryLoad {
                        address,
                        bytes: bytes.to_vec(),
                    },
                    TraceOpRef::RegisterWrite { address, value } => {
                        TraceOp::RegisterWrite { address, value }
                    }
                    TraceOpRef::FrameMarker => TraceOp::FrameMarker,
                })
                .collect(),
        }
    }
}

impl TraceStream for TraceFile<'_> {
    fn initial(&self) -> &InitialState {
        &self.initial
    }
    fn elements(&self) -> usize {
        self.stream.len() / ELEMENT_BYTES
    }
    fn frames(&self) -> usize {
        self.frames
    }
    fn ops(&self) -> impl Iterator<Item = TraceOpRef<'_>> {
        // Every element decoded when the file was parsed: none fails here, and the stream
        // would end at one that did.
        self.stream
            .chunks_exact(ELEMENT_BYTES)
            .enumerate()
            .map_while(|(index, e)| decode_element(self.file, e, index).ok())
    }
}

/// A malformed trace file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceError {
    /// The file is shorter than its header.
    TooShort {
        /// Its length.
        len: usize,
    },
    /// The magic is not `CiTr`.
    BadMagic,
    /// A version other than 1.
    Version(u32),
    /// A header size neither 0x64 nor 0x5C.
    HeaderSize(u32),
    /// A block or the stream reaches past the end of the file.
    OutOfFile {
        /// Which field.
        field: &'static str,
        /// Its byte offset.
        offset: u64,
        /// Its length in bytes.
        len: u64,
        /// The file's length.
        file_len: usize,
    },
    /// A stream element of an unknown type.
    ElementType {
        /// Its index in the stream.
        element: usize,
        /// The type code.
        code: u32,
    },
    /// A memory load whose payload lies outside the file.
    Payload {
        /// Its index in the stream.
        element: usize,
        /// The payload's file offset.
        offset: u32,
        /// Its size.
        size: u32,
    },
    /// A register write of a width other than 8, 16, 32 or 64 bits.
    WriteSize {
        /// Its index in the stream.
        element: usize,
        /// The size code.
        code: u32,
    },
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::TooShort { len } => {
                write!(f, "{len} bytes is shorter than a CiTrace header")
            }
            TraceError::BadMagic => f.write_str("not a CiTrace file (the magic is not \"CiTr\")"),
            TraceError::Version(v) => write!(f, "CiTrace version {v} (only version 1 exists)"),
            TraceError::HeaderSize(n) => {
                write!(
                    f,
                    "header size {n:#x} (expected 0x64, or 0x5c for the short header)"
                )
            }
            TraceError::OutOfFile {
                field,
                offset,
                len,
                file_len,
            } => write!(
                f,
                "{field}: {len} bytes at offset {offset:#x} reach past the end of the {file_len}-byte file"
            ),
            TraceError::ElementType { element, code } => {
                write!(f, "stream element {element}: unknown type {code:#x}")
            }
            TraceError::Payload {
                element,
                offset,
                size,
            } => write!(
                f,
                "stream element {element}: memory load of {size} bytes at file offset {offset:#x} lies outside the file"
            ),
            TraceError::WriteSize { element, code } => {
                write!(
                    f,
                    "stream element {element}: register write size code {code:#x}"
                )
            }
        }
    }
}

impl std::error::Error for TraceError {}

const FRAME_MARKER: u32 = 0xE1;
const MEMORY_LOAD: u32 = 0xE2;
const REGISTER_WRITE: u32 = 0xE3;
const WRITE_32: u32 = 0xD3;

fn le32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Parses a CiTrace file into a [`Trace`] that owns its payloads ([`TraceFile`] reads one in
/// place).
pub fn read(file: &[u8]) -> Result<Trace, TraceError> {
    Ok(TraceFile::parse(file)?.to_trace())
}

/// The header's checks, the initial state, and the stream's bytes.
fn parse_header(file: &[u8]) -> Result<(InitialState, &[u8]), TraceError> {
    if file.len() < SHORT_HEADER_BYTES {
        return Err(TraceError::TooShort { len: file.len() });
    }
    if &file[..4] != MAGIC {
        return Err(TraceError::BadMagic);
    }
    let version = le32(file, 4);
    if version != 1 {
        return Err(TraceError::Version(version));
    }
    let header_size = le32(file, 8);
    let short = match header_size as usize {
        HEADER_BYTES => false,
        SHORT_HEADER_BYTES => true,
        _ => return Err(TraceError::HeaderSize(header_size)),
    };
    if file.len() < header_size as usize {
        return Err(TraceError::TooShort { len: file.len() });
    }
    const NAMES: [&str; 10] = [
        "gpu_registers",
        "lcd_registers",
        "pica_registers",
        "default_attributes",
        "vs_program_binary",
        "vs_swizzle_data",
        "vs_float_uniforms",
        "gs_program_binary",
        "gs_swizzle_data",
        "gs_float_uniforms",
    ];
    let mut blocks: Vec<Vec<u32>> = Vec::with_capacity(10);
    let mut at = 0x0C;
    for (k, name) in NAMES.iter().enumerate() {
        if short && k == 3 {
            blocks.push(Vec::new());
            continue;
        }
        let (offset, words) = (le32(file, at) as u64, le32(file, at + 4) as u64);
        at += 8;
        let len = 4 * words;
        if offset + len > file.len() as u64 {
            return Err(TraceError::OutOfFile {
                field: name,
                offset,
                len,
                file_len: file.len(),
            });
        }
        let block = &file[offset as usize..(offset + len) as usize];
        blocks.push(block.chunks_exact(4).map(|w| le32(w, 0)).collect());
    }
    let stream_offset = le32(file, at) as u64;
    let elements = le32(file, at + 4) as u64;
    let stream_len = elements * ELEMENT_BYTES as u64;
    if stream_offset + stream_len > file.len() as u64 {
        return Err(TraceError::OutOfFile {
            field: "stream",
            offset: stream_offset,
            len: stream_len,
            file_len: file.len(),
        });
    }
    let mut blocks = blocks.into_iter();
    let mut next = || blocks.next().unwrap_or_default();
    let initial = InitialState {
        gpu_registers: next(),
        lcd_registers: next(),
        pica_registers: next(),
        default_attributes: next(),
        vs_program: next(),
        vs_swizzle: next(),
        vs_float_uniforms: next(),
        gs_program: next(),
        gs_swizzle: next(),
        gs_float_uniforms: next(),
    };
    let stream = &file[stream_offset as usize..(stream_offset + stream_len) as usize];
    Ok((initial, stream))
}

/// Stream element number `index`, its 20 bytes `e`, a memory load's payload borrowed from
/// `file`.
fn decode_element<'a>(
    file: &'a [u8],
    e: &[u8],
    index: usize,
) -> Result<TraceOpRef<'a>, TraceError> {
    Ok(match le32(e, 0) {
        FRAME_MARKER => TraceOpRef::FrameMarker,
        MEMORY_LOAD => {
            let (offset, size, address) = (le32(e, 4), le32(e, 8), le32(e, 12));
            let end = offset as u64 + size as u64;
            if end > file.len() as u64 {
                return Err(TraceError::Payload {
                    element: index,
                    offset,
                    size,
                });
            }
            TraceOpRef::MemoryLoad {
                address,
                bytes: &file[offset as usize..end as usize],
            }
        }
        REGISTER_WRITE => {
            let (address, size) = (le32(e, 4), le32(e, 8));
            let value = le32(e, 12);
            match size {
                0xD1..=0xD4 => TraceOpRef::RegisterWrite { address, value },
                // The later layout: the value right after the address, no size code.
                _ if le32(e, 12) == 0 && le32(e, 16) == 0 => TraceOpRef::RegisterWrite {
                    address,
                    value: size,
                },
                code => {
                    return Err(TraceError::WriteSize {
                        element: index,
                        code,
                    });
                }
            }
        }
        code => {
            return Err(TraceError::ElementType {
                element: index,
                code,
            });
        }
    })
}

/// Writes `trace` as a CiTrace file (the 0x64-byte header, 32-bit register writes with the
/// size code, each distinct payload stored once).
pub fn write(trace: &Trace) -> Vec<u8> {
    let s = &trace.initial;
    let blocks: [&[u32]; 10] = [
        &s.gpu_registers,
        &s.lcd_registers,
        &s.pica_registers,
        &s.default_attributes,
        &s.vs_program,
        &s.vs_swizzle,
        &s.vs_float_uniforms,
        &s.gs_program,
        &s.gs_swizzle,
        &s.gs_float_uniforms,
    ];
    let mut file = Vec::new();
    file.extend_from_slice(MAGIC);
    file.extend_from_slice(&1u32.to_le_bytes());
    file.extend_from_slice(&(HEADER_BYTES as u32).to_le_bytes());
    let mut offset = HEADER_BYTES as u32;
    for block in blocks {
        file.extend_from_slice(&offset.to_le_bytes());
        file.extend_from_slice(&(block.len() as u32).to_le_bytes());
        offset += 4 * block.len() as u32;
    }
    let stream_offset_at = file.len();
    file.extend_from_slice(&[0; 8]);
    for block in blocks {
        for word in block {
            file.extend_from_slice(&word.to_le_bytes());
        }
    }
    let mut payloads: std::collections::HashMap<&[u8], u32> = std::collections::HashMap::new();
    let mut elements = Vec::with_capacity(trace.ops.len() * ELEMENT_BYTES);
    for op in &trace.ops {
        let mut element = [0u8; ELEMENT_BYTES];
        let mut put = |at: usize, value: u32| {
            element[at..at + 4].copy_from_slice(&value.to_le_bytes());
        };
        match op {
            TraceOp::FrameMarker => put(0, FRAME_MARKER),
            TraceOp::MemoryLoad { address, bytes } => {
                let at = *payloads.entry(bytes).or_insert_with(|| {
                    let at = file.len() as u32;
                    file.extend_from_slice(bytes);
                    at
                });
                put(0, MEMORY_LOAD);
                put(4, at);
                put(8, bytes.len() as u32);
                put(12, *address);
            }
            TraceOp::RegisterWrite { address, value } => {
                put(0, REGISTER_WRITE);
                put(4, *address);
                put(8, WRITE_32);
                put(12, *value);
            }
        }
        elements.extend_from_slice(&element);
    }
    let stream_offset = file.len() as u32;
    file.extend_from_slice(&elements);
    file[stream_offset_at..stream_offset_at + 4].copy_from_slice(&stream_offset.to_le_bytes());
    file[stream_offset_at + 4..stream_offset_at + 8]
        .copy_from_slice(&(trace.ops.len() as u32).to_le_bytes());
    file
}

/// What replaying a trace did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayStats {
    /// Memory loads.
    pub memory_loads: u64,
    /// Writes to external registers (GPU and LCD blocks).
    pub register_writes: u64,
    /// Writes to addresses in neither block (ignored).
    pub stray_writes: u64,
    /// Memory fills run.
    pub memory_fills: u64,
    /// Display transfers and texture copies run.
    pub transfers: u64,
    /// Frames ended.
    pub frames: u64,
}

/// Replays traces on a [`Gpu`].
pub struct Replayer {
    /// The GPU.
    pub gpu: Gpu,
    /// The external GPU registers.
    pub external: Vec<u32>,
    /// The LCD registers.
    pub lcd: Vec<u32>,
    /// What replay did.
    pub stats: ReplayStats,
}

impl Replayer {
    /// Restores the initial state of `initial` on `gpu` (register snapshots as plain stores;
    /// the vertex program, its uniforms and the default attributes into the units).
    pub fn new(mut gpu: Gpu, initial: &InitialState) -> Replayer {
        for (id, &value) in initial.pica_registers.iter().enumerate().take(0x400) {
            gpu.regs.set(id as u16, value);
        }
        gpu.restore_units(initial);
        let mut external = initial.gpu_registers.clone();
        external.resize(GPU_REGISTER_WORDS, 0);
        let mut lcd = initial.lcd_registers.clone();
        lcd.resize(LCD_REGISTER_WORDS, 0);
        Replayer {
            gpu,
            external,
            lcd,
            stats: ReplayStats::default(),
        }
    }

    /// What `screen` shows now: the framebuffer its LCD registers name (call
    /// [`Gpu::finish`] first, so that every draw has reached memory).
    pub fn screen_image(
        &self,
        screen: crate::framebuffer::display::Screen,
    ) -> Result<crate::framebuffer::image::Image, crate::framebuffer::display::ScreenError> {
        let registers = &self.external;
        crate::framebuffer::display::screen_image(screen, &self.gpu.memory, |o| {
            registers.get(o as usize / 4).copied().unwrap_or(0)
        })
    }

    /// Performs one stream element. Returns whether it ended a frame.
    pub fn step(&mut self, op: TraceOpRef<'_>) -> Result<bool, GpuError> {
        match op {
            TraceOpRef::MemoryLoad { address, bytes } => {
                self.stats.memory_loads += 1;
                self.gpu.memory.write(address, bytes)?;
                Ok(false)
            }
            TraceOpRef::FrameMarker => {
                self.stats.frames += 1;
                Ok(true)
            }
            TraceOpRef::RegisterWrite { address, value } => {
                self.register_write(address, value)?;
                Ok(false)
            }
        }
    }

    fn register_write(&mut self, address: u32, value: u32) -> Result<(), GpuError> {
        let in_block = |base: u32, words: usize| {
            address
                .checked_sub(base)
                .filter(|&o| (o as usize) < 4 * words)
        };
        if let Some(offset) = in_block(LCD_REGISTERS, LCD_REGISTER_WORDS) {
            self.stats.register_writes += 1;
            self.lcd[offset as usize / 4] = value;
            return Ok(());
        }
        let Some(offset) = in_block(GPU_REGISTERS, GPU_REGISTER_WORDS) else {
            self.stats.stray_writes += 1;
            return Ok(());
        };
        self.stats.register_writes += 1;
        let offset = offset & !3;
        self.external[offset as usize / 4] = value;
        if (external::INTERNAL_WINDOW..external::INTERNAL_WINDOW_END).contains(&offset) {
            // The window is the internal register file itself: the command-list registers
            // (0x104018E0-F4) are internal registers 0x238-0x23D (docs/citrace.md §4.1).
            let register = ((offset - external::INTERNAL_WINDOW) / 4) as u16;
            for channel in 0..2u16 {
                if register == id::CMDBUF_JUMP0 + channel {
                    // A kick: bit 0 starts the list the channel's registers name (3dbrew:
                    // "writing value 1 here triggers GPU processing"); its size is in
                    // 8-byte units like every size the GPU reads (docs/citrace.md §4.6).
                    self.gpu.regs.set(register, value);
                    if value & 1 != 0 {
                        let (list, bytes) = self.gpu.command_list_registers(channel);
                        self.gpu.run_command_list(list, bytes)?;
                    }
                    return Ok(());
                }
            }
            return self.gpu.write(register, value, 0xF);
        }
        let reg = |o: u32| self.external[o as usize / 4];
        for channel in 0..2 {
            let fill = external::MEMORY_FILL[channel];
            if offset == fill + 0xC && value & 1 != 0 {
                let (start, end, pattern) = (reg(fill), reg(fill + 4), reg(fill + 8));
                memory_fill(&mut self.gpu.memory, start, end, pattern, value)?;
                self.stats.memory_fills += 1;
                self.external[(fill + 0xC) as usize / 4] = (value & !1) | 2;
                return Ok(());
            }
        }
        if offset == external::TRANSFER_TRIGGER && value & 1 != 0 {
            let registers = &self.external;
            super::transfer::run(&mut self.gpu.memory, &|o| registers[o as usize / 4])?;
            self.stats.transfers += 1;
            self.external[external::TRANSFER_TRIGGER as usize / 4] = (value & !1) | 0x100;
        }
        Ok(())
    }
}

/// The memory-fill unit: [start, end) filled with `value` at the width the control word's
/// bits 8-9 choose (0: 16 bits, 2: 32 bits, 1 or 3: 24 bits).
fn memory_fill(
    memory: &mut PhysicalMemory,
    start: u32,
    end: u32,
    value: u32,
    control: u32,
) -> Result<(), GpuError> {
    let (start, end) = (start << 3, end << 3);
    if end <= start || start == 0 {
        return Ok(());
    }
    let bytes = value.to_le_bytes();
    let pattern: &[u8] = match (control >> 8) & 3 {
        0 => &bytes[..2],
        2 => &bytes[..4],
        _ => &bytes[..3],
    };
    memory.fill(start, end - start, pattern)?;
    Ok(())
}

/// Replays `trace` on `gpu` up to the end of frame `frame` (counting from 0; `None`: the whole
/// stream), calling `progress(done, total)` every so often with stream elements done. Returns
/// the replayer, its GPU finished (everything rasterized and written back).
pub fn replay(
    trace: &impl TraceStream,
    gpu: Gpu,
    frame: Option<usize>,
    mut progress: impl FnMut(usize, usize),
) -> Result<Replayer, GpuError> {
    let mut replayer = Replayer::new(gpu, trace.initial());
    let total = trace.elements();
    for (done, op) in trace.ops().enumerate() {
        if done % 64 == 0 {
            progress(done, total);
        }
        // Frame N ends at the (N + 1)th marker.
        if replayer.step(op)? && frame.is_some_and(|n| replayer.stats.frames == n as u64 + 1) {
            break;
        }
    }
    replayer.gpu.finish()?;
    progress(total, total);
    Ok(replayer)
}
