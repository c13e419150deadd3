//! The GPU's external registers that replay acts on: their offsets from the external register
//! block (`trace::GPU_REGISTERS`, physical 0x1040_0000): memory fill, display transfer and
//! texture copy, the window onto the internal registers, and the command-list registers
//! (docs/citrace.md §4). Trace replay writes them; the transfer engine reads them.
#![allow(missing_docs)]

pub const MEMORY_FILL: [u32; 2] = [0x0010, 0x0020];
pub const TRANSFER_INPUT: u32 = 0x0C00;
pub const TRANSFER_OUTPUT: u32 = 0x0C04;
pub const TRANSFER_OUTPUT_SIZE: u32 = 0x0C08;
pub const TRANSFER_INPUT_SIZE: u32 = 0x0C0C;
pub const TRANSFER_FLAGS: u32 = 0x0C10;
pub const TRANSFER_TRIGGER: u32 = 0x0C18;
pub const TEXTURE_COPY_SIZE: u32 = 0x0C20;
pub const TEXTURE_COPY_INPUT: u32 = 0x0C24;
pub const TEXTURE_COPY_OUTPUT: u32 = 0x0C28;
/// The window onto the internal registers: register N at this + 4N.
pub const INTERNAL_WINDOW: u32 = 0x1000;
pub const INTERNAL_WINDOW_END: u32 = 0x1C00;
pub const COMMAND_LIST_SIZE: [u32; 2] = [0x18E0, 0x18E4];
pub const COMMAND_LIST_ADDRESS: [u32; 2] = [0x18E8, 0x18EC];
pub const COMMAND_LIST_TRIGGER: [u32; 2] = [0x18F0, 0x18F4];
