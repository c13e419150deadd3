//! Registers, swizzles and operand descriptors.

use std::fmt;

/// The register files an instruction names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegisterFile {
    /// v0-v15, input attributes (read only).
    Input,
    /// r0-r15, temporaries.
    Temporary,
    /// c0-c95, float uniforms (read only; only in the wide source field).
    FloatUniform,
    /// o0-o15, outputs (write only).
    Output,
}

impl RegisterFile {
    /// The one-letter prefix of the register names.
    pub const fn prefix(self) -> char {
        match self {
            RegisterFile::Input => 'v',
            RegisterFile::Temporary => 'r',
            RegisterFile::FloatUniform => 'c',
            RegisterFile::Output => 'o',
        }
    }
}

/// A source register in the unified 7-bit index space: 0x00-0x0F v0-v15, 0x10-0x1F r0-r15,
/// 0x20-0x7F c0-c95. Narrow (5-bit) source fields hold only 0x00-0x1F.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SrcReg(u8);

impl SrcReg {
    /// Wraps a raw 7-bit index; `None` above 0x7F.
    pub const fn new(raw: u8) -> Option<SrcReg> {
        if raw < 0x80 { Some(SrcReg(raw)) } else { None }
    }

    /// `vN`.
    pub const fn input(n: u8) -> SrcReg {
        assert!(n < 16);
        SrcReg(n)
    }

    /// `rN`.
    pub const fn temp(n: u8) -> SrcReg {
        assert!(n < 16);
        SrcReg(0x10 + n)
    }

    /// `cN`.
    pub const fn uniform(n: u8) -> SrcReg {
        assert!(n < 96);
        SrcReg(0x20 + n)
    }

    /// The raw field value.
    pub const fn raw(self) -> u8 {
        self.0
    }

    /// The register file and the index within it.
    #[inline]
    pub const fn file_index(self) -> (RegisterFile, u8) {
        match self.0 {
            0x00..=0x0F => (RegisterFile::Input, self.0),
            0x10..=0x1F => (RegisterFile::Temporary, self.0 - 0x10),
            _ => (RegisterFile::FloatUniform, self.0 - 0x20),
        }
    }

    /// Whether this register fits a narrow (5-bit) source field.
    pub const fn is_narrow(self) -> bool {
        self.0 < 0x20
    }

    /// Whether this names a float uniform (the only registers relative addressing applies to).
    pub const fn is_uniform(self) -> bool {
        self.0 >= 0x20
    }
}

impl fmt::Display for SrcReg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (file, index) = self.file_index();
        write!(f, "{}{}", file.prefix(), index)
    }
}

/// A destination register: 0x00-0x0F o0-o15, 0x10-0x1F r0-r15 (a 5-bit field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DstReg(u8);

impl DstReg {
    /// Wraps a raw 5-bit field; `None` above 0x1F.
    pub const fn new(raw: u8) -> Option<DstReg> {
        if raw < 0x20 { Some(DstReg(raw)) } else { None }
    }

    /// `oN`.
    pub const fn output(n: u8) -> DstReg {
        assert!(n < 16);
        DstReg(n)
    }

    /// `rN`.
    pub const fn temp(n: u8) -> DstReg {
        assert!(n < 16);
        DstReg(0x10 + n)
    }

    /// The raw field value.
    pub const fn raw(self) -> u8 {
        self.0
    }

    /// The register file (output or temporary) and the index within it.
    #[inline]
    pub const fn file_index(self) -> (RegisterFile, u8) {
        if self.0 < 0x10 {
            (RegisterFile::Output, self.0)
        } else {
            (RegisterFile::Temporary, self.0 - 0x10)
        }
    }
}

impl fmt::Display for DstReg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (file, index) = self.file_index();
        write!(f, "{}{}", file.prefix(), index)
    }
}

/// The address register that offsets the wide source operand (the 2-bit IDX field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum RelIndex {
    /// 0: no offset.
    #[default]
    None,
    /// 1: a0.x.
    A0X,
    /// 2: a0.y.
    A0Y,
    /// 3: aL, the loop counter.
    AL,
}

impl RelIndex {
    /// The index register for a 2-bit field value.
    pub const fn from_bits(bits: u32) -> RelIndex {
        match bits & 3 {
            0 => RelIndex::None,
            1 => RelIndex::A0X,
            2 => RelIndex::A0Y,
            _ => RelIndex::AL,
        }
    }

    /// The 2-bit field value.
    pub const fn bits(self) -> u32 {
        self as u32
    }

    /// The picasso name (`a0.x`, `a0.y`, `aL`), `None` for no index.
    pub const fn name(self) -> Option<&'static str> {
        match self {
            RelIndex::None => None,
            RelIndex::A0X => Some("a0.x"),
            RelIndex::A0Y => Some("a0.y"),
            RelIndex::AL => Some("aL"),
        }
    }
}

/// Lane names in x, y, z, w order.
pub const LANE_NAMES: [char; 4] = ['x', 'y', 'z', 'w'];

/// A source selector: for each output lane, which component of the register it reads. Stored as
/// the 8-bit field: bits 6-7 lane x, 4-5 lane y, 2-3 lane z, 0-1 lane w (0=x .. 3=w).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Swizzle(pub u8);

impl Swizzle {
    /// `.xyzw`.
    pub const IDENTITY: Swizzle = Swizzle(0x1B);

    /// The component read by output lane `lane` (0..4).
    #[inline]
    pub const fn component(self, lane: usize) -> usize {
        ((self.0 >> (6 - 2 * lane)) & 3) as usize
    }

    /// The register components (bit c = component c) that the lanes `lanes` (bit i = lane i)
    /// read.
    pub fn components_read(self, lanes: u8) -> u8 {
        (0..4)
            .filter(|lane| lanes & (1 << lane) != 0)
            .fold(0, |acc, lane| acc | (1 << self.component(lane)))
    }

    /// Builds a swizzle from the component of each lane.
    pub const fn from_components(c: [usize; 4]) -> Swizzle {
        Swizzle(((c[0] << 6) | (c[1] << 4) | (c[2] << 2) | c[3]) as u8)
    }

    /// Applies the swizzle to a register value.
    pub fn apply<T: Copy>(self, v: [T; 4]) -> [T; 4] {
        std::array::from_fn(|lane| v[self.component(lane)])
    }
}

impl fmt::Display for Swizzle {
    /// picasso form: the four letters with trailing repeats dropped (`.xyyy` prints `xy`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut len = 4;
        while len > 1 && self.component(len - 1) == self.component(len - 2) {
            len -= 1;
        }
        for lane in 0..len {
            write!(f, "{}", LANE_NAMES[self.component(lane)])?;
        }
        Ok(())
    }
}

/// The destination write mask: lane x is bit 3, y bit 2, z bit 1, w bit 0 (as in the opdesc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DestMask(pub u8);

impl DestMask {
    /// All four lanes.
    pub const ALL: DestMask = DestMask(0xF);

    /// Whether lane `lane` (0 = x .. 3 = w) is written.
    #[inline]
    pub const fn lane(self, lane: usize) -> bool {
        self.0 & (8 >> lane) != 0
    }

    /// The mask as a lane bit set (bit i = lane i), the form the analyses use.
    #[inline]
    pub const fn lanes(self) -> u8 {
        ((self.0 >> 3) & 1) | ((self.0 >> 1) & 2) | ((self.0 << 1) & 4) | ((self.0 << 3) & 8)
    }
}

impl fmt::Display for DestMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (lane, name) in LANE_NAMES.iter().enumerate() {
            if self.lane(lane) {
                write!(f, "{name}")?;
            }
        }
        Ok(())
    }
}

/// An operand descriptor ("swizzle pattern"): destination mask, and negate bit and selector of
/// up to three sources. Bit 31 is unused and kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct OperandDescriptor(pub u32);

impl OperandDescriptor {
    /// The destination write mask (bits 0-3).
    #[inline]
    pub const fn dest_mask(self) -> DestMask {
        DestMask((self.0 & 0xF) as u8)
    }

    /// Whether source `n` (0, 1 or 2 for SRC1..SRC3) is negated.
    #[inline]
    pub const fn negate(self, n: usize) -> bool {
        self.0 & (1 << (4 + 9 * n)) != 0
    }

    /// The selector of source `n` (0, 1 or 2).
    #[inline]
    pub const fn swizzle(self, n: usize) -> Swizzle {
        Swizzle(((self.0 >> (5 + 9 * n)) & 0xFF) as u8)
    }

    /// Builds a descriptor from a destination mask and the (negate, selector) of three sources.
    pub const fn new(mask: DestMask, sources: [(bool, Swizzle); 3]) -> OperandDescriptor {
        let mut bits = mask.0 as u32 & 0xF;
        let mut n = 0;
        while n < 3 {
            bits |= ((sources[n].0 as u32) | ((sources[n].1.0 as u32) << 1)) << (4 + 9 * n);
            n += 1;
        }
        OperandDescriptor(bits)
    }
}
