//! The transfer engine (docs/citrace.md §4.5): display transfer (tiled ↔ linear with format
//! conversion, optional vertical flip and box-filter downscaling) and texture copy (a raw copy
//! with line widths and gaps). It runs when a trace writes its trigger register.

use super::GpuError;
use super::external;
use crate::framebuffer::color::{ColorFormat, tiled_offset};
use crate::framebuffer::image::{colours, encode_row};
use crate::framebuffer::memory::{MemoryError, PhysicalMemory};

/// Flags of the transfer engine's flag register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransferFlags(pub u32);

impl TransferFlags {
    /// Output rows in reverse order.
    pub const fn flip(self) -> bool {
        self.0 & 1 != 0
    }
    /// The input is linear and the output tiled (otherwise the other way).
    pub const fn linear_to_tiled(self) -> bool {
        self.0 & 2 != 0
    }
    /// Texture copy mode.
    pub const fn texture_copy(self) -> bool {
        self.0 & 8 != 0
    }
    /// Both sides tiled (no conversion of layout).
    pub const fn tiled_to_tiled(self) -> bool {
        self.0 & 0x20 != 0
    }
    /// The input colour format code.
    pub const fn input_format(self) -> u32 {
        (self.0 >> 8) & 7
    }
    /// The output colour format code.
    pub const fn output_format(self) -> u32 {
        (self.0 >> 12) & 7
    }
    /// Downscaling: 0 none, 1 halve x, 2 halve x and y.
    pub const fn scaling(self) -> u32 {
        (self.0 >> 24) & 3
    }
}

/// Runs the transfer the registers (read through `reg`, by offset from the GPU block) describe.
/// Invalid parameters (a zero size, an unknown format, scaling mode 3) do nothing, as the
/// emulators that model the engine do.
pub fn run(memory: &mut PhysicalMemory, reg: &dyn Fn(u32) -> u32) -> Result<(), GpuError> {
    let flags = TransferFlags(reg(external::TRANSFER_FLAGS));
    let input = reg(external::TRANSFER_INPUT) << 3;
    let output = reg(external::TRANSFER_OUTPUT) << 3;
    if flags.texture_copy() {
        return texture_copy(
            memory,
            input,
            output,
            reg(external::TEXTURE_COPY_SIZE),
            reg(external::TEXTURE_COPY_INPUT),
            reg(external::TEXTURE_COPY_OUTPUT),
        );
    }
    let size_in = reg(external::TRANSFER_INPUT_SIZE);
    let size_out = reg(external::TRANSFER_OUTPUT_SIZE);
    let (in_w, in_h) = (size_in & 0xFFFF, size_in >> 16);
    let (out_w, out_h) = (size_out & 0xFFFF, size_out >> 16);
    let (Some(in_format), Some(out_format)) = (
        ColorFormat::from_transfer_code(flags.input_format()),
        ColorFormat::from_transfer_code(flags.output_format()),
    ) else {
        return Ok(());
    };
    if in_w == 0 || in_h == 0 || out_w == 0 || out_h == 0 || flags.scaling() == 3 {
        return Ok(());
    }
    let (shift_x, shift_y) = match flags.scaling() {
        1 => (1, 0),
        2 => (1, 1),
        _ => (0, 0),
    };
    let (width, height) = (out_w >> shift_x, out_h >> shift_y);
    let (in_bytes, out_bytes) = (in_format.bytes() as u32, out_format.bytes() as u32);
    let in_len = in_w as u64 * in_h as u64 * in_bytes as u64;
    let out_len = width as u64 * height as u64 * out_bytes as u64;
    PhysicalMemory::check(input, in_len)?;
    PhysicalMemory::check(output, out_len)?;
    let source = memory.read_vec(input, in_len as usize)?;
    let mut target = memory.read_vec(output, out_len as usize)?;
    let input_tiled = !flags.linear_to_tiled() || flags.tiled_to_tiled();
    let output_tiled = flags.linear_to_tiled() || flags.tiled_to_tiled();
    let offset = |x: u32, y: u32, w: u32, bytes: u32, tiled: bool| {
        if tiled {
            tiled_offset(x, y, w, bytes)
        } else {
            ((x + y * w) * bytes) as usize
        }
    };
    if input_tiled
        && !output_tiled
        && shift_x == 0
        && shift_y == 0
        && width <= in_w
        && height <= in_h
    {
        // The display transfer of every frame (tiled to linear, no scaling): the input decoded
        // tile by tile, each output row encoded in one pass, each by a loop for its format.
        let colours = colours((in_w, in_h), in_format, &source);
        let row_bytes = (width * out_bytes) as usize;
        for y in 0..height {
            let out_y = if flags.flip() { height - 1 - y } else { y };
            let from = (y * in_w) as usize;
            let to = out_y as usize * row_bytes;
            let row = &colours[from..from + width as usize];
            encode_row(out_format, row, &mut target[to..to + row_bytes]);
        }
        memory.write(output, &target)?;
        return Ok(());
    }
    if shift_x == 0 && shift_y == 0 && width <= in_w && height <= in_h {
        // The other layouts (linear to tiled, tiled to tiled), no scaling, every pixel read
        // inside the input: each pixel converted on its own. In the same format decoding and
        // encoding again gives the bytes back (every format's channels widen and narrow back
        // exactly), so the bytes move as they are.
        let (from_n, to_n) = (in_bytes as usize, out_bytes as usize);
        for y in 0..height {
            let out_y = if flags.flip() { height - 1 - y } else { y };
            for x in 0..width {
                let from = offset(x, y, in_w, in_bytes, input_tiled);
                let to = offset(x, out_y, width, out_bytes, output_tiled);
                let pixel = &source[from..from + from_n];
                if in_format == out_format {
                    target[to..to + to_n].copy_from_slice(pixel);
                } else {
                    out_format.encode(in_format.decode(pixel), &mut target[to..to + to_n]);
                }
            }
        }
        memory.write(output, &target)?;
        return Ok(());
    }
    let read = |x: u32, y: u32| -> [u32; 4] {
        if x >= in_w || y >= in_h {
            return [0; 4];
        }
        let at = offset(x, y, in_w, in_bytes, input_tiled);
        source
            .get(at..at + in_bytes as usize)
            .map_or([0; 4], |b| in_format.decode(b).map(u32::from))
    };
    for y in 0..height {
        for x in 0..width {
            let (sx, sy) = (x << shift_x, y << shift_y);
            let mut sum = [0u32; 4];
            let samples = 1 << (shift_x + shift_y);
            for dy in 0..=shift_y {
                for dx in 0..=shift_x {
                    let c = read(sx + dx, sy + dy);
                    for k in 0..4 {
                        sum[k] += c[k];
                    }
                }
            }
            let color = sum.map(|s| (s / samples) as u8);
            let out_y = if flags.flip() { height - 1 - y } else { y };
            let at = offset(x, out_y, width, out_bytes, output_tiled);
            if let Some(bytes) = target.get_mut(at..at + out_bytes as usize) {
                out_format.encode(color, bytes);
            }
        }
    }
    memory.write(output, &target)?;
    Ok(())
}

fn texture_copy(
    memory: &mut PhysicalMemory,
    input: u32,
    output: u32,
    size: u32,
    input_lines: u32,
    output_lines: u32,
) -> Result<(), GpuError> {
    let size = size & !15;
    if size == 0 {
        return Ok(());
    }
    let line = |word: u32| ((word & 0xFFFF) * 16, (word >> 16) * 16);
    let (mut in_width, in_gap) = line(input_lines);
    let (mut out_width, out_gap) = line(output_lines);
    if in_gap == 0 {
        in_width = size;
    }
    if out_gap == 0 {
        out_width = size;
    }
    if in_width == 0 || out_width == 0 {
        return Ok(());
    }
    let (mut from, mut to) = (input as u64, output as u64);
    let (mut in_left, mut out_left) = (in_width, out_width);
    let mut remaining = size;
    while remaining > 0 {
        let n = remaining.min(in_left).min(out_left);
        let address = |a: u64| {
            u32::try_from(a).map_err(|_| MemoryError {
                address: u32::MAX,
                len: n as u64,
            })
        };
        let bytes = memory.read_vec(address(from)?, n as usize)?;
        memory.write(address(to)?, &bytes)?;
        from += n as u64;
        to += n as u64;
        remaining -= n;
        in_left -= n;
        out_left -= n;
        if in_left == 0 {
            from += in_gap as u64;
            in_left = in_width;
        }
        if out_left == 0 {
            to += out_gap as u64;
            out_left = out_width;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A same-format transfer without scaling moves each pixel's bytes: tiled to linear and
    /// back, flipped or not, in every format; the bytes come from a counter, so every bit
    /// pattern of a channel shows up, and each pixel lands where the tiling says. (Conversions
    /// between formats: `jit-tests/gpu_raster.rs`.)
    #[test]
    fn a_same_format_transfer_moves_every_pixel_as_it_is() {
        const INPUT: u32 = 0x1800_0000;
        const OUTPUT: u32 = 0x1810_0000;
        let (w, h) = (16u32, 24u32);
        for code in 0..5 {
            let format = ColorFormat::from_transfer_code(code).unwrap();
            let bytes = format.bytes() as u32;
            for (linear_to_tiled, flip) in [(false, false), (false, true), (true, false)] {
                let mut memory = PhysicalMemory::new();
                let source: Vec<u8> = (0..w * h * bytes).map(|k| (k * 7 + 3) as u8).collect();
                memory.write(INPUT, &source).unwrap();
                let flags =
                    u32::from(flip) | u32::from(linear_to_tiled) << 1 | code << 8 | code << 12;
                let reg = |offset: u32| match offset {
                    external::TRANSFER_INPUT => INPUT >> 3,
                    external::TRANSFER_OUTPUT => OUTPUT >> 3,
                    external::TRANSFER_INPUT_SIZE | external::TRANSFER_OUTPUT_SIZE => h << 16 | w,
                    external::TRANSFER_FLAGS => flags,
                    _ => 0,
                };
                run(&mut memory, &reg).unwrap();
                let output = memory.read_vec(OUTPUT, (w * h * bytes) as usize).unwrap();
                let place = |x: u32, y: u32, tiled: bool| {
                    if tiled {
                        tiled_offset(x, y, w, bytes)
                    } else {
                        ((y * w + x) * bytes) as usize
                    }
                };
                for y in 0..h {
                    for x in 0..w {
                        let from = place(x, y, !linear_to_tiled);
                        let out_y = if flip { h - 1 - y } else { y };
                        let to = place(x, out_y, linear_to_tiled);
                        let n = bytes as usize;
                        assert_eq!(
                            output[to..to + n],
                            source[from..from + n],
                            "{format:?} at ({x}, {y}), linear to tiled {linear_to_tiled}, flip {flip}"
                        );
                    }
                }
            }
        }
    }
}
