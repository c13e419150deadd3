//! Command-buffer parsing (docs/gpu.md, "Command buffers"). A command is a parameter word and
//! a header word (register ID in bits 0-15, byte-enable mask in 16-19, extra parameter count in
//! 20-27, consecutive mode in bit 31), then the extra parameters, padded to a multiple of two
//! words. [`Commands`] turns a buffer into register writes, one per parameter, and names the
//! word offset of whatever is malformed; it never panics and never reads past the buffer.

use std::fmt;

/// One register write a command performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterWrite {
    /// Word offset of the parameter in the buffer.
    pub word: usize,
    /// The register ID (the header's 16 bits; the register file wraps them at 0x400).
    pub register: u16,
    /// The parameter.
    pub value: u32,
    /// The byte-enable mask (bit i writes byte i).
    pub mask: u8,
}

/// A malformed command buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandError {
    /// A command's header or parameters run past the end of the buffer.
    Truncated {
        /// Word offset of the command.
        word: usize,
        /// Words the command needs.
        needed: usize,
        /// Words left from its start.
        left: usize,
    },
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::Truncated { word, needed, left } => write!(
                f,
                "command at word {word} needs {needed} words but the buffer has {left} left"
            ),
        }
    }
}

impl std::error::Error for CommandError {}

/// The header's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Register ID.
    pub register: u16,
    /// Byte-enable mask.
    pub mask: u8,
    /// Parameters after the first.
    pub extra: usize,
    /// Whether the register ID advances after each parameter.
    pub consecutive: bool,
}

impl Header {
    /// Decodes a header word.
    pub const fn decode(word: u32) -> Header {
        Header {
            register: word as u16,
            mask: ((word >> 16) & 0xF) as u8,
            extra: ((word >> 20) & 0xFF) as usize,
            consecutive: word >> 31 != 0,
        }
    }

    /// Encodes a header (the builder's side).
    pub const fn encode(self) -> u32 {
        (self.register as u32)
            | ((self.mask as u32 & 0xF) << 16)
            | ((self.extra as u32 & 0xFF) << 20)
            | ((self.consecutive as u32) << 31)
    }

    /// Words the command takes, padding included.
    pub const fn words(self) -> usize {
        (2 + self.extra).next_multiple_of(2)
    }
}

/// The register writes of a command buffer, in order.
pub struct Commands<'a> {
    words: &'a [u32],
    /// Offset of the next command.
    at: usize,
    /// The command being expanded: header, next parameter index.
    current: Option<(Header, usize, usize)>,
    failed: bool,
}

impl<'a> Commands<'a> {
    /// The writes of `words` (a whole buffer: its length in words).
    pub fn new(words: &'a [u32]) -> Commands<'a> {
        Commands {
            words,
            at: 0,
            current: None,
            failed: false,
        }
    }

    /// Word offset of the next command not yet started.
    pub fn position(&self) -> usize {
        self.at
    }
}

impl Iterator for Commands<'_> {
    type Item = Result<RegisterWrite, CommandError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.current.is_none() {
            let start = self.at;
            let left = self.words.len() - start;
            if left == 0 {
                return None;
            }
            if left < 2 {
                self.failed = true;
                return Some(Err(CommandError::Truncated {
                    word: start,
                    needed: 2,
                    left,
                }));
            }
            let header = Header::decode(self.words[start + 1]);
            // A final command whose padding word is missing is still whole.
            let needed = 2 + header.extra;
            if left < needed {
                self.failed = true;
                return Some(Err(CommandError::Truncated {
                    word: start,
                    needed,
                    left,
                }));
            }
            self.at = (start + header.words()).min(self.words.len());
            self.current = Some((header, start, 0));
        }
        let (header, start, index) = self.current.expect("a command is being expanded");
        let word = if index == 0 { start } else { start + 1 + index };
        let register = if header.consecutive {
            header.register.wrapping_add(index as u16)
        } else {
            header.register
        };
        self.current = (index < header.extra).then_some((header, start, index + 1));
        Some(Ok(RegisterWrite {
            word,
            register,
            value: self.words[word],
            mask: header.mask,
        }))
    }
}

/// Writes commands into a buffer the way libctru's GPUCMD functions do (the scene builder and
/// the tests use it).
#[derive(Clone, Debug, Default)]
pub struct CommandWriter {
    words: Vec<u32>,
}

impl CommandWriter {
    /// An empty buffer.
    pub fn new() -> CommandWriter {
        CommandWriter::default()
    }

    /// One write of `value` to `register` with the byte-enable `mask`.
    pub fn write_masked(&mut self, register: u16, value: u32, mask: u8) -> &mut Self {
        self.words.push(value);
        self.words.push(
            Header {
                register,
                mask,
                extra: 0,
                consecutive: false,
            }
            .encode(),
        );
        self
    }

    /// One full write of `value` to `register`.
    pub fn write(&mut self, register: u16, value: u32) -> &mut Self {
        self.write_masked(register, value, 0xF)
    }

    /// Writes `values` to `register`, `register + 1`, … (consecutive mode), in commands of at
    /// most 256 parameters.
    pub fn write_consecutive(&mut self, register: u16, values: &[u32]) -> &mut Self {
        self.write_many(register, values, true)
    }

    /// Writes every one of `values` to `register` (a FIFO), in commands of at most 256
    /// parameters.
    pub fn write_repeated(&mut self, register: u16, values: &[u32]) -> &mut Self {
        self.write_many(register, values, false)
    }

    fn write_many(&mut self, register: u16, values: &[u32], consecutive: bool) -> &mut Self {
        for (k, chunk) in values.chunks(256).enumerate() {
            let register = if consecutive {
                register.wrapping_add((256 * k) as u16)
            } else {
                register
            };
            self.words.push(chunk[0]);
            self.words.push(
                Header {
                    register,
                    mask: 0xF,
                    extra: chunk.len() - 1,
                    consecutive,
                }
                .encode(),
            );
            self.words.extend_from_slice(&chunk[1..]);
            if self.words.len() % 2 == 1 {
                self.words.push(0);
            }
        }
        self
    }

    /// Ends the buffer as the hardware needs: a FINALIZE write, the size padded to 16 bytes.
    pub fn finish(mut self) -> Vec<u32> {
        if !(self.words.len() + 2).is_multiple_of(4) {
            // A write with no byte enabled changes nothing and keeps FINALIZE last.
            self.write_masked(0, 0, 0);
        }
        self.write(crate::regs::id::FINALIZE, 0x1234_5678);
        self.words
    }

    /// The words so far (without FINALIZE).
    pub fn words(&self) -> &[u32] {
        &self.words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writes(words: &[u32]) -> Vec<(usize, u16, u32, u8)> {
        Commands::new(words)
            .map(|w| {
                let w = w.unwrap();
                (w.word, w.register, w.value, w.mask)
            })
            .collect()
    }

    #[test]
    fn the_documented_example_in_both_modes() {
        // "0xAAAAAAAA 0x802F011C 0xBBBBBBBB 0xCCCCCCCC" writes 0x11C, 0x11D, 0x11E.
        let words = [0xAAAA_AAAA, 0x802F_011C, 0xBBBB_BBBB, 0xCCCC_CCCC];
        assert_eq!(
            writes(&words),
            [
                (0, 0x11C, 0xAAAA_AAAA, 0xF),
                (2, 0x11D, 0xBBBB_BBBB, 0xF),
                (3, 0x11E, 0xCCCC_CCCC, 0xF)
            ]
        );
        let words = [0xAAAA_AAAA, 0x002F_011C, 0xBBBB_BBBB, 0xCCCC_CCCC];
        let registers: Vec<u16> = writes(&words).iter().map(|w| w.1).collect();
        assert_eq!(registers, [0x11C; 3]);
    }

    #[test]
    fn odd_commands_are_padded_to_two_words() {
        // One extra parameter: 3 words, then a padding word, then the next command.
        let words = [1, 0x0013_0100, 2, 0xDEAD, 3, 0x000F_0101];
        assert_eq!(
            writes(&words),
            [(0, 0x100, 1, 3), (2, 0x100, 2, 3), (4, 0x101, 3, 0xF)]
        );
    }

    #[test]
    fn truncated_commands_name_their_word() {
        let words = [1, 0x000F_0100, 5, 0x0030_0101, 6];
        let results: Vec<_> = Commands::new(&words).collect();
        assert_eq!(results.len(), 2);
        assert_eq!(
            results[1],
            Err(CommandError::Truncated {
                word: 2,
                needed: 5,
                left: 3
            })
        );
        assert!(
            results[1]
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("word 2")
        );
        let results: Vec<_> = Commands::new(&[7]).collect();
        assert_eq!(
            results,
            [Err(CommandError::Truncated {
                word: 0,
                needed: 2,
                left: 1
            })]
        );
    }

    #[test]
    fn the_writer_round_trips_through_the_parser() {
        let mut writer = CommandWriter::new();
        writer
            .write(0x100, 5)
            .write_masked(0x101, 6, 0x3)
            .write_consecutive(0x200, &(0..300).collect::<Vec<u32>>())
            .write_repeated(0x2CC, &[9, 8, 7]);
        let words = writer.finish();
        assert_eq!(words.len() % 4, 0);
        let all = writes(&words);
        assert_eq!(all[0], (0, 0x100, 5, 0xF));
        assert_eq!((all[1].1, all[1].2, all[1].3), (0x101, 6, 0x3));
        let consecutive: Vec<(u16, u32)> = all[2..302].iter().map(|w| (w.1, w.2)).collect();
        assert_eq!(
            consecutive,
            (0..300).map(|i| (0x200 + i as u16, i)).collect::<Vec<_>>()
        );
        let fifo: Vec<(u16, u32)> = all[302..305].iter().map(|w| (w.1, w.2)).collect();
        assert_eq!(fifo, [(0x2CC, 9), (0x2CC, 8), (0x2CC, 7)]);
        let finalize: Vec<_> = all.iter().filter(|w| w.1 == 0x010).collect();
        assert_eq!(finalize.len(), 1);
        assert_eq!(all.last().unwrap().1, 0x010, "FINALIZE comes last");
    }
}
