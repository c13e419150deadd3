//! A sparse model of the physical memory the GPU reads and writes: VRAM and FCRAM
//! (docs/gpu.md, "Memory"). Pages are allocated on first write, so memory use follows what a
//! scene touches; a read of a page never written reads zeros. Every access outside the two
//! regions is an error naming the address, never a panic.

use std::collections::HashMap;
use std::fmt;

/// Bytes in one page of the model.
const PAGE_BYTES: usize = 1 << 12;

/// A region of physical memory the GPU can reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// Its name in messages.
    pub name: &'static str,
    /// The first physical address.
    pub start: u32,
    /// Its size in bytes.
    pub size: u32,
}

/// VRAM: 6 MiB at physical 0x18000000.
pub const VRAM: Region = Region {
    name: "VRAM",
    start: 0x1800_0000,
    size: 6 << 20,
};

/// FCRAM: main memory at physical 0x20000000 (256 MiB, the New 3DS size, so traces of either
/// model replay).
pub const FCRAM: Region = Region {
    name: "FCRAM",
    start: 0x2000_0000,
    size: 256 << 20,
};

/// The regions, in address order.
pub const REGIONS: [Region; 2] = [VRAM, FCRAM];

/// An access outside the modelled memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryError {
    /// The first address of the access.
    pub address: u32,
    /// Its length in bytes.
    pub len: u64,
}

impl fmt::Display for MemoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} bytes at physical address {:#010x} are outside VRAM ({:#010x}..{:#010x}) and FCRAM ({:#010x}..{:#010x})",
            self.len,
            self.address,
            VRAM.start,
            VRAM.start + VRAM.size,
            FCRAM.start,
            FCRAM.start as u64 + FCRAM.size as u64
        )
    }
}

impl std::error::Error for MemoryError {}

/// The physical memory of the model.
#[derive(Clone, Default)]
pub struct PhysicalMemory {
    pages: HashMap<u32, Box<[u8; PAGE_BYTES]>>,
    /// Counts writes: what was read at one generation is unchanged while it stays the same.
    generation: u64,
}

impl fmt::Debug for PhysicalMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PhysicalMemory")
            .field("pages", &self.pages.len())
            .finish()
    }
}

impl PhysicalMemory {
    /// Memory with nothing written (reads as zeros).
    pub fn new() -> PhysicalMemory {
        PhysicalMemory::default()
    }

    /// The write count: equal values mean nothing was written in between (the texture cache
    /// skips re-reading its textures while it holds).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Bytes of pages held (what the model costs).
    pub fn bytes_held(&self) -> usize {
        self.pages.len() * PAGE_BYTES
    }

    /// Checks that `len` bytes from `address` lie inside one region.
    pub fn check(address: u32, len: u64) -> Result<(), MemoryError> {
        let end = address as u64 + len;
        let inside = REGIONS
            .iter()
            .any(|r| address >= r.start && end <= r.start as u64 + r.size as u64);
        if inside {
            Ok(())
        } else {
            Err(MemoryError { address, len })
        }
    }

    /// Copies `out.len()` bytes from `address` into `out`.
    pub fn read(&self, address: u32, out: &mut [u8]) -> Result<(), MemoryError> {
        Self::check(address, out.len() as u64)?;
        let mut done = 0;
        for (page, offset, n) in pieces(address, out.len()) {
            let chunk = &mut out[done..done + n];
            match self.pages.get(&page) {
                Some(bytes) => chunk.copy_from_slice(&bytes[offset..offset + n]),
                None => chunk.fill(0),
            }
            done += n;
        }
        Ok(())
    }

    /// Whether anything was ever written to the `len` bytes from `address` (to the pages they
    /// lie in: memory nothing wrote reads as zeros, and a screen showing it shows nothing).
    pub fn holds_any(&self, address: u32, len: u64) -> bool {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        pieces(address, len).any(|(page, _, _)| self.pages.contains_key(&page))
    }

    /// `len` bytes from `address`.
    pub fn read_vec(&self, address: u32, len: usize) -> Result<Vec<u8>, MemoryError> {
        Self::check(address, len as u64)?;
        let mut out = vec![0; len];
        self.read(address, &mut out)?;
        Ok(out)
    }

    /// The little-endian word at `address`.
    pub fn read_u32(&self, address: u32) -> Result<u32, MemoryError> {
        let mut bytes = [0; 4];
        self.read(address, &mut bytes)?;
        Ok(u32::from_le_bytes(bytes))
    }

    /// Writes `bytes` from `address`.
    pub fn write(&mut self, address: u32, bytes: &[u8]) -> Result<(), MemoryError> {
        Self::check(address, bytes.len() as u64)?;
        self.generation += 1;
        let mut done = 0;
        for (page, offset, n) in pieces(address, bytes.len()) {
            let target = self
                .pages
                .entry(page)
                .or_insert_with(|| Box::new([0; PAGE_BYTES]));
            target[offset..offset + n].copy_from_slice(&bytes[done..done + n]);
            done += n;
        }
        Ok(())
    }

    /// Writes `len` copies of the `pattern` (1 to 4 bytes, repeated) from `address`: the
    /// memory-fill unit's operation.
    pub fn fill(&mut self, address: u32, len: u32, pattern: &[u8]) -> Result<(), MemoryError> {
        Self::check(address, len as u64)?;
        if pattern.is_empty() {
            return Ok(());
        }
        let mut chunk = Vec::with_capacity(PAGE_BYTES + pattern.len());
        while chunk.len() < PAGE_BYTES {
            chunk.extend_from_slice(pattern);
        }
        let mut done = 0u32;
        while done < len {
            // Keep the pattern's phase across chunks: chunks are whole multiples of it.
            let whole = PAGE_BYTES - PAGE_BYTES % pattern.len();
            let n = (len - done).min(whole as u32);
            self.write(address + done, &chunk[..n as usize])?;
            done += n;
        }
        Ok(())
    }
}

/// The pages an access of `len` bytes from `address` touches: (page, offset in it, bytes).
fn pieces(address: u32, len: usize) -> impl Iterator<Item = (u32, usize, usize)> {
    let mut at = address as usize;
    let end = address as usize + len;
    std::iter::from_fn(move || {
        if at >= end {
            return None;
        }
        let offset = at % PAGE_BYTES;
        let n = (end - at).min(PAGE_BYTES - offset);
        let piece = ((at / PAGE_BYTES) as u32, offset, n);
        at += n;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwritten_memory_reads_zero_and_writes_cross_pages() {
        let mut memory = PhysicalMemory::new();
        assert_eq!(memory.read_u32(VRAM.start + 16).unwrap(), 0);
        let address = FCRAM.start + PAGE_BYTES as u32 - 2;
        memory.write(address, &[1, 2, 3, 4, 5]).unwrap();
        assert_eq!(
            memory.read_vec(address - 1, 7).unwrap(),
            [0, 1, 2, 3, 4, 5, 0]
        );
        assert_eq!(memory.bytes_held(), 2 * PAGE_BYTES);
    }

    #[test]
    fn accesses_outside_the_regions_are_errors() {
        let mut memory = PhysicalMemory::new();
        assert!(memory.read_u32(0).is_err());
        assert!(memory.read_u32(VRAM.start + VRAM.size - 2).is_err());
        assert!(memory.write(0xFFFF_FFFE, &[0; 8]).is_err());
        assert!(memory.fill(FCRAM.start, u32::MAX, &[1]).is_err());
        let message = memory.read_u32(0x1000).unwrap_err().to_string();
        assert!(message.contains("0x00001000"), "{message}");
    }

    #[test]
    fn fill_repeats_the_pattern_across_pages() {
        let mut memory = PhysicalMemory::new();
        let length = 3 * PAGE_BYTES as u32 + 5;
        memory.fill(VRAM.start + 1, length, &[1, 2, 3]).unwrap();
        let bytes = memory.read_vec(VRAM.start + 1, length as usize).unwrap();
        assert!(
            bytes
                .iter()
                .enumerate()
                .all(|(i, &b)| b == [1, 2, 3][i % 3])
        );
    }
}
