//! The parse error: one enum, each variant naming the field and its byte offset.

use std::fmt;

/// The structure an error was found in; printed as the message's prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Location {
    /// The DVLB header or its DVLE offset table (no prefix).
    File,
    /// The DVLP, starting at file offset `at`.
    Dvlp {
        /// File offset of the DVLP.
        at: usize,
    },
    /// DVLE number `index`, starting at file offset `at`.
    Dvle {
        /// Position in the DVLB's offset table.
        index: usize,
        /// File offset of the DVLE.
        at: usize,
    },
}

impl Location {
    /// File offset that the structure's relative offsets are counted from.
    pub fn base(self) -> usize {
        match self {
            Location::File => 0,
            Location::Dvlp { at } | Location::Dvle { at, .. } => at,
        }
    }
}

impl fmt::Display for Location {
    /// `""`, `"DVLP (at 0xc): "` or `"DVLE 1 (at 0x1a0): "`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File => Ok(()),
            Location::Dvlp { at } => write!(f, "DVLP (at {at:#x}): "),
            Location::Dvle { index, at } => write!(f, "DVLE {index} (at {at:#x}): "),
        }
    }
}

/// The variable-size tables of a SHBIN file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Table {
    /// The DVLB's DVLE offsets (4 bytes each).
    DvleOffsets,
    /// The DVLP's code (4-byte words).
    Code,
    /// The DVLP's operand descriptors (8 bytes each).
    OpDescs,
    /// A DVLE's constant table (20 bytes each).
    Constants,
    /// A DVLE's label table (16 bytes each).
    Labels,
    /// A DVLE's output table (8 bytes each).
    Outputs,
    /// A DVLE's uniform table (8 bytes each).
    Uniforms,
    /// A DVLE's symbol table (bytes).
    Symbols,
}

impl Table {
    /// The size of one entry in bytes.
    pub fn entry_size(self) -> usize {
        match self {
            Table::DvleOffsets | Table::Code => 4,
            Table::OpDescs | Table::Outputs | Table::Uniforms => 8,
            Table::Constants => 20,
            Table::Labels => 16,
            Table::Symbols => 1,
        }
    }

    /// The table's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Table::DvleOffsets => "DVLE offset table",
            Table::Code => "code",
            Table::OpDescs => "operand descriptor table",
            Table::Constants => "constant table",
            Table::Labels => "label table",
            Table::Outputs => "output table",
            Table::Uniforms => "uniform table",
            Table::Symbols => "symbol table",
        }
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What is wrong with a name's symbol offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymbolProblem {
    /// The offset is at or past the end of the symbol table.
    OutsideTable,
    /// No NUL between the offset and the end of the symbol table.
    Unterminated,
}

/// Why [`parse`](super::parse) rejected a file. `Display` gives a one-line message naming the
/// field and its byte offset (file offsets unless stated relative to the DVLP / DVLE).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShbinError {
    /// A fixed-size header does not fit in the file.
    Truncated {
        /// Where the header belongs.
        location: Location,
        /// The header's name (`"DVLB header"`, `"DVLP header"`, `"DVLE header"`).
        what: &'static str,
        /// File offset of the header.
        offset: usize,
        /// Size of the header in bytes.
        size: usize,
        /// Size of the file in bytes.
        file_len: usize,
    },
    /// A header does not start with its magic.
    BadMagic {
        /// File offset of the magic.
        offset: usize,
        /// The magic that should be there.
        expected: &'static str,
        /// The four bytes found.
        found: [u8; 4],
    },
    /// A table (offset + count × entry size) does not fit in the file, or the arithmetic
    /// overflows.
    TableOutOfRange {
        /// The structure the offset is relative to.
        location: Location,
        /// Which table.
        table: Table,
        /// The table's offset, relative to the location's start.
        offset: u32,
        /// The number of entries (bytes for the symbol table).
        count: u32,
        /// Size of the file in bytes.
        file_len: usize,
    },
    /// A count exceeds what the hardware holds (code words, operand descriptors).
    TooLarge {
        /// The structure holding the field.
        location: Location,
        /// The field's name.
        field: &'static str,
        /// File offset of the field.
        offset: usize,
        /// The value found.
        value: u32,
        /// The largest value allowed.
        max: u32,
    },
    /// A header field holds a value with no meaning (shader type, merge flag, GS mode).
    InvalidField {
        /// The DVLE holding the field.
        location: Location,
        /// The field's name.
        field: &'static str,
        /// File offset of the field.
        offset: usize,
        /// The value found.
        value: u32,
    },
    /// A constant table entry's type is not 0 (bool), 1 (int) or 2 (float).
    UnknownConstantType {
        /// The DVLE holding the constant.
        location: Location,
        /// The entry's position in the table.
        index: usize,
        /// File offset of the entry.
        offset: usize,
        /// The type found.
        value: u16,
    },
    /// A constant's register index is beyond its register file.
    ConstantRegisterOutOfRange {
        /// The DVLE holding the constant.
        location: Location,
        /// The entry's position in the table.
        index: usize,
        /// File offset of the entry.
        offset: usize,
        /// The register file's prefix: `'b'`, `'i'` or `'c'`.
        file: char,
        /// The register index found.
        register: u16,
        /// The largest valid index.
        max: u16,
    },
    /// An output table entry's register is above o15.
    OutputRegisterOutOfRange {
        /// The DVLE holding the entry.
        location: Location,
        /// The entry's position in the table.
        index: usize,
        /// File offset of the entry.
        offset: usize,
        /// The register index found.
        register: u16,
    },
    /// A uniform or label name cannot be read from the symbol table.
    BadSymbol {
        /// The DVLE holding the entry.
        location: Location,
        /// `"uniform"` or `"label"`.
        owner: &'static str,
        /// The entry's position in its table.
        index: usize,
        /// File offset of the entry.
        offset: usize,
        /// The name's offset, relative to the symbol table.
        symbol_offset: u32,
        /// Size of the symbol table in bytes.
        table_size: u32,
        /// What is wrong.
        problem: SymbolProblem,
    },
}

impl fmt::Display for ShbinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShbinError::Truncated {
                location,
                what,
                offset,
                size,
                file_len,
            } => write!(
                f,
                "{location}{what} ({size:#x} bytes at {offset:#x}) extends past the end of the \
                 file ({file_len:#x} bytes)"
            ),
            ShbinError::BadMagic {
                offset,
                expected,
                found,
            } => write!(
                f,
                "bad magic at {offset:#x}: expected \"{expected}\", found \"{}\"",
                found.escape_ascii()
            ),
            ShbinError::TableOutOfRange {
                location,
                table,
                offset,
                count,
                file_len,
            } => {
                write!(f, "{location}{table} (offset {offset:#x} + ")?;
                write_extent(f, *table, *count)?;
                write!(
                    f,
                    ") extends past the end of the file ({file_len:#x} bytes)"
                )
            }
            ShbinError::TooLarge {
                location,
                field,
                offset,
                value,
                max,
            } => write!(
                f,
                "{location}{field} {value} (at {offset:#x}) exceeds the maximum of {max}"
            ),
            ShbinError::InvalidField {
                location,
                field,
                offset,
                value,
            } => write!(
                f,
                "{location}{field} at {offset:#x} has invalid value {value}"
            ),
            ShbinError::UnknownConstantType {
                location,
                index,
                offset,
                value,
            } => write!(
                f,
                "{location}constant {index} at {offset:#x} has unknown type {value}"
            ),
            ShbinError::ConstantRegisterOutOfRange {
                location,
                index,
                offset,
                file,
                register,
                max,
            } => write!(
                f,
                "{location}constant {index} at {offset:#x}: register {file}{register} is out of \
                 range ({file}0-{file}{max})"
            ),
            ShbinError::OutputRegisterOutOfRange {
                location,
                index,
                offset,
                register,
            } => write!(
                f,
                "{location}output {index} at {offset:#x}: register o{register} is out of range \
                 (o0-o15)"
            ),
            ShbinError::BadSymbol {
                location,
                owner,
                index,
                offset,
                symbol_offset,
                table_size,
                problem,
            } => {
                write!(
                    f,
                    "{location}{owner} {index} at {offset:#x}: name at symbol offset \
                     {symbol_offset:#x} "
                )?;
                match problem {
                    SymbolProblem::OutsideTable => f.write_str("is outside")?,
                    SymbolProblem::Unterminated => f.write_str("is not NUL-terminated within")?,
                }
                write!(f, " the symbol table ({table_size:#x} bytes)")
            }
        }
    }
}

/// `3 entries of 8 bytes`, `1 entry of 20 bytes`, `0x20 bytes`.
fn write_extent(f: &mut fmt::Formatter<'_>, table: Table, count: u32) -> fmt::Result {
    match table.entry_size() {
        1 => write!(f, "{count:#x} bytes"),
        size => {
            let entries = if count == 1 { "entry" } else { "entries" };
            write!(f, "{count} {entries} of {size} bytes")
        }
    }
}

impl std::error::Error for ShbinError {}
