//! The two LCDs: what a screen shows, read from the framebuffer its registers name
//! (docs/gpu.md, "Screens"). A real program renders into a tiled render target, display-
//! transfers it into a linear framebuffer and points the LCD's registers at it; this reads that
//! framebuffer back in the display's orientation.
//!
//! The facts (3dbrew, *GPU/External Registers*, "LCD Source Framebuffer Setup"): the top
//! screen's block is at 0x400 of the GPU's external registers, the bottom screen's at 0x500;
//! in each, +0x5C holds the framebuffer's width (bits 0-15, 240: the screen's short side) and
//! height (bits 16-31: 400 top, 320 bottom), +0x68 and +0x6C the first and second left-eye
//! framebuffer addresses, +0x70 the format (bits 0-2, the display-transfer codes), +0x78 bit 0
//! which of the two is shown, and +0x90 the stride in bytes. A framebuffer is linear, one
//! memory row per screen column from the left, and the first pixel of a row is the bottom of
//! the screen.

use std::fmt;

use super::color::ColorFormat;
use super::image::Image;
use super::memory::PhysicalMemory;

/// One of the two LCDs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Screen {
    /// The top (main, 400 × 240) screen; its left-eye framebuffer.
    Top,
    /// The bottom (sub, 320 × 240) screen.
    Bottom,
}

impl Screen {
    /// The offset of the screen's register block in the GPU's external registers.
    pub const fn block(self) -> u32 {
        match self {
            Screen::Top => 0x400,
            Screen::Bottom => 0x500,
        }
    }

    /// The screen's name.
    pub const fn name(self) -> &'static str {
        match self {
            Screen::Top => "top",
            Screen::Bottom => "bottom",
        }
    }
}

impl fmt::Display for Screen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Register offsets inside a screen's block ([`Screen::block`]).
pub mod offset {
    /// Width (pixels per memory row, bits 0-15) and height (rows, bits 16-31).
    pub const SIZE: u32 = 0x5C;
    /// The first and second (left-eye) framebuffer addresses.
    pub const ADDRESS: [u32; 2] = [0x68, 0x6C];
    /// The format (bits 0-2: the display-transfer codes).
    pub const FORMAT: u32 = 0x70;
    /// Bit 0: which of the two framebuffers is shown.
    pub const SELECT: u32 = 0x78;
    /// Bytes from one memory row to the next.
    pub const STRIDE: u32 = 0x90;
}

/// The framebuffer a screen shows, as its registers describe it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScreenConfig {
    /// Its physical address.
    pub address: u32,
    /// Its pixel format.
    pub format: ColorFormat,
    /// Pixels per memory row (the screen's height, 240).
    pub row_pixels: u32,
    /// Memory rows (the screen's width).
    pub rows: u32,
    /// Bytes from one memory row to the next.
    pub stride: u32,
}

/// Why a screen shows nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScreenError {
    /// Its framebuffer address is zero: the program never set it up.
    NoFramebuffer(Screen),
    /// Its format code names no format.
    Format(Screen, u32),
    /// Its size is zero, or larger than a screen can be.
    Size(Screen, u32),
    /// Nothing was ever written to the memory its framebuffer lies in.
    NeverWritten(Screen, u32),
    /// The framebuffer lies outside memory.
    OutsideMemory(Screen, u32),
}

impl fmt::Display for ScreenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScreenError::NoFramebuffer(s) => {
                write!(
                    f,
                    "the {s} screen has no framebuffer (its address register is 0)"
                )
            }
            ScreenError::Format(s, code) => {
                write!(
                    f,
                    "the {s} screen's framebuffer format code {code} names no format"
                )
            }
            ScreenError::Size(s, size) => {
                write!(
                    f,
                    "the {s} screen's framebuffer size register {size:#010x} is not a screen size"
                )
            }
            ScreenError::NeverWritten(s, address) => write!(
                f,
                "the {s} screen's framebuffer at {address:#010x} was never written"
            ),
            ScreenError::OutsideMemory(s, address) => write!(
                f,
                "the {s} screen's framebuffer at {address:#010x} lies outside VRAM and FCRAM"
            ),
        }
    }
}

impl std::error::Error for ScreenError {}

/// The largest side a framebuffer may have in the model (a screen's is 400).
const MAX_SIDE: u32 = 1024;

impl ScreenConfig {
    /// The framebuffer `screen` shows, from the external registers read through `reg` (by
    /// byte offset from the GPU block).
    pub fn configure(
        screen: Screen,
        reg: impl Fn(u32) -> u32,
    ) -> Result<ScreenConfig, ScreenError> {
        let at = |o: u32| reg(screen.block() + o);
        let select = (at(offset::SELECT) & 1) as usize;
        let address = at(offset::ADDRESS[select]);
        if address == 0 {
            return Err(ScreenError::NoFramebuffer(screen));
        }
        let code = at(offset::FORMAT) & 7;
        let format =
            ColorFormat::from_transfer_code(code).ok_or(ScreenError::Format(screen, code))?;
        let size = at(offset::SIZE);
        let (row_pixels, rows) = (size & 0xFFFF, size >> 16);
        if !(1..=MAX_SIDE).contains(&row_pixels) || !(1..=MAX_SIDE).contains(&rows) {
            return Err(ScreenError::Size(screen, size));
        }
        let packed = row_pixels * format.bytes() as u32;
        // A stride shorter than a row (0: never written) reads the rows packed.
        let stride = at(offset::STRIDE).clamp(packed, MAX_SIDE * 4);
        Ok(ScreenConfig {
            address,
            format,
            row_pixels,
            rows,
            stride,
        })
    }

    /// The framebuffer's bytes from its first pixel to its last.
    pub fn bytes(&self) -> u64 {
        u64::from(self.stride) * u64::from(self.rows - 1)
            + u64::from(self.row_pixels) * self.format.bytes() as u64
    }

    /// The picture the screen shows: `rows` wide, `row_pixels` high, the first memory row
    /// its left column, each row's first pixel its bottom.
    pub fn read(&self, screen: Screen, memory: &PhysicalMemory) -> Result<Image, ScreenError> {
        let len = self.bytes();
        if PhysicalMemory::check(self.address, len).is_err() {
            return Err(ScreenError::OutsideMemory(screen, self.address));
        }
        if !memory.holds_any(self.address, len) {
            return Err(ScreenError::NeverWritten(screen, self.address));
        }
        let data = memory
            .read_vec(self.address, len as usize)
            .map_err(|_| ScreenError::OutsideMemory(screen, self.address))?;
        let bytes = self.format.bytes();
        let (width, height) = (self.rows, self.row_pixels);
        let mut pixels = Vec::with_capacity((width * height) as usize);
        for y in 0..height {
            let pixel = (height - 1 - y) as usize;
            for x in 0..width {
                let at = x as usize * self.stride as usize + pixel * bytes;
                pixels.push(self.format.decode(&data[at..]));
            }
        }
        Ok(Image {
            width,
            height,
            pixels,
        })
    }
}

/// What `screen` shows: its framebuffer read from `memory` as the external registers (read
/// through `reg`) describe it.
pub fn screen_image(
    screen: Screen,
    memory: &PhysicalMemory,
    reg: impl Fn(u32) -> u32,
) -> Result<Image, ScreenError> {
    ScreenConfig::configure(screen, reg)?.read(screen, memory)
}
