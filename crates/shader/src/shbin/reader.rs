//! [`parse`]: bytes to [`Shbin`], checking every offset and count before reading.
//!
//! Every region is first cut out of the file with overflow-checked arithmetic ([`Input::region`]);
//! fields are then read at constant offsets inside a region of known size, so nothing can index
//! out of bounds.

use super::error::{Location, ShbinError, SymbolProblem, Table};
use super::{
    Constant, DVLE_HEADER_SIZE, DVLP_HEADER_SIZE, Dvle, GsConfig, GsMode, Label, MAX_CODE_WORDS,
    MAX_OPDESCS, OutputEntry, OutputSemantic, ShaderKind, Shbin, UniformEntry,
};
use crate::float24::F24;

/// Size of the DVLB header before the DVLE offset table.
const DVLB_HEADER_SIZE: usize = 8;

/// Reads a SHBIN file. Never panics; see [`ShbinError`] for what is rejected.
pub fn parse(bytes: &[u8]) -> Result<Shbin, ShbinError> {
    let input = Input { bytes };
    let header = input.header(Location::File, "DVLB header", 0, DVLB_HEADER_SIZE)?;
    check_magic(header, 0, "DVLB")?;
    let dvle_count = le32(header, 4);
    let offsets = input.table(Location::File, Table::DvleOffsets, 8, dvle_count)?;
    let dvlp_at = DVLB_HEADER_SIZE + offsets.bytes.len();
    let (code, opdescs, opdesc_extra) = parse_dvlp(input, dvlp_at)?;
    let dvles = offsets
        .entries(4)
        .map(|(index, _, word)| parse_dvle(input, index, to_usize(le32(word, 0))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Shbin {
        code,
        opdescs,
        opdesc_extra,
        dvles,
    })
}

/// The file, with range-checked access.
#[derive(Clone, Copy)]
struct Input<'a> {
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    /// The `size` bytes at file offset `start`, if they are all inside the file.
    fn region(self, start: usize, size: usize) -> Option<&'a [u8]> {
        self.bytes.get(start..start.checked_add(size)?)
    }

    /// A fixed-size header at `offset`.
    fn header(
        self,
        location: Location,
        what: &'static str,
        offset: usize,
        size: usize,
    ) -> Result<&'a [u8], ShbinError> {
        self.region(offset, size).ok_or(ShbinError::Truncated {
            location,
            what,
            offset,
            size,
            file_len: self.bytes.len(),
        })
    }

    /// The bytes of `table`: `count` entries at `offset` relative to `location`.
    fn table(
        self,
        location: Location,
        table: Table,
        offset: u32,
        count: u32,
    ) -> Result<Region<'a>, ShbinError> {
        let start = location.base().checked_add(to_usize(offset));
        let size = to_usize(count).checked_mul(table.entry_size());
        start
            .zip(size)
            .and_then(|(at, size)| self.region(at, size).map(|bytes| Region { at, bytes }))
            .ok_or(ShbinError::TableOutOfRange {
                location,
                table,
                offset,
                count,
                file_len: self.bytes.len(),
            })
    }
}

/// A table cut out of the file.
#[derive(Clone, Copy)]
struct Region<'a> {
    /// File offset of the first byte.
    at: usize,
    bytes: &'a [u8],
}

impl<'a> Region<'a> {
    /// The entries of `size` bytes, each with its position and file offset.
    fn entries(self, size: usize) -> impl Iterator<Item = (usize, usize, &'a [u8])> {
        self.bytes
            .chunks_exact(size)
            .enumerate()
            .map(move |(index, entry)| (index, self.at + index * size, entry))
    }
}

/// Widens a stored `u32`; on a target where it does not fit, `usize::MAX` (which no region can
/// reach, so the caller reports the value as out of range).
fn to_usize(value: u32) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

/// The little-endian half-word at `offset` of a region known to hold it.
fn le16(bytes: &[u8], offset: usize) -> u16 {
    u16::from_le_bytes([bytes[offset], bytes[offset + 1]])
}

/// The little-endian word at `offset` of a region known to hold it.
fn le32(bytes: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes([
        bytes[offset],
        bytes[offset + 1],
        bytes[offset + 2],
        bytes[offset + 3],
    ])
}

/// Checks the four magic bytes at the start of `header`, which is at file offset `offset`.
fn check_magic(header: &[u8], offset: usize, expected: &'static str) -> Result<(), ShbinError> {
    let found = [header[0], header[1], header[2], header[3]];
    if found == *expected.as_bytes() {
        Ok(())
    } else {
        Err(ShbinError::BadMagic {
            offset,
            expected,
            found,
        })
    }
}

/// Rejects a count above the hardware's capacity.
fn check_max(
    location: Location,
    field: &'static str,
    offset: usize,
    value: u32,
    max: u32,
) -> Result<(), ShbinError> {
    if value > max {
        Err(ShbinError::TooLarge {
            location,
            field,
            offset,
            value,
            max,
        })
    } else {
        Ok(())
    }
}

/// The code words, operand descriptors and their extra words of the DVLP at file offset `at`.
type Program = (Vec<u32>, Vec<u32>, Vec<u32>);

/// Reads the DVLP at file offset `at`.
fn parse_dvlp(input: Input<'_>, at: usize) -> Result<Program, ShbinError> {
    let location = Location::Dvlp { at };
    let header = input.header(location, "DVLP header", at, DVLP_HEADER_SIZE)?;
    check_magic(header, at, "DVLP")?;
    let code_words = le32(header, 0x0C);
    check_max(location, "code size", at + 0x0C, code_words, MAX_CODE_WORDS)?;
    let opdesc_count = le32(header, 0x14);
    let opdesc_field = at + 0x14;
    check_max(
        location,
        "operand descriptor count",
        opdesc_field,
        opdesc_count,
        MAX_OPDESCS,
    )?;
    let code = input.table(location, Table::Code, le32(header, 0x08), code_words)?;
    let opdescs = input.table(location, Table::OpDescs, le32(header, 0x10), opdesc_count)?;
    let code = code.entries(4).map(|(_, _, word)| le32(word, 0)).collect();
    let (patterns, extras) = opdescs
        .entries(8)
        .map(|(_, _, entry)| (le32(entry, 0), le32(entry, 4)))
        .unzip();
    Ok((code, patterns, extras))
}

/// The tables of one DVLE, cut out of the file.
struct Tables<'a> {
    constants: Region<'a>,
    labels: Region<'a>,
    outputs: Region<'a>,
    uniforms: Region<'a>,
    symbols: Region<'a>,
}

/// Reads DVLE number `index` at file offset `at`.
fn parse_dvle(input: Input<'_>, index: usize, at: usize) -> Result<Dvle, ShbinError> {
    let location = Location::Dvle { index, at };
    let header = input.header(location, "DVLE header", at, DVLE_HEADER_SIZE)?;
    check_magic(header, at, "DVLE")?;
    let tables = dvle_tables(input, location, header)?;
    Ok(Dvle {
        version: le16(header, 0x04),
        kind: parse_kind(location, header)?,
        merge_outmaps: parse_merge(location, header)?,
        entry: le32(header, 0x08),
        end: le32(header, 0x0C),
        input_mask: le16(header, 0x10),
        output_mask: le16(header, 0x12),
        gs: parse_gs(location, header)?,
        constants: parse_constants(location, tables.constants)?,
        labels: parse_labels(location, tables.labels, tables.symbols)?,
        outputs: parse_outputs(location, tables.outputs)?,
        uniforms: parse_uniforms(location, tables.uniforms, tables.symbols)?,
        symbols: tables.symbols.bytes.to_vec(),
    })
}

/// Cuts the five tables of the DVLE whose header is `header` out of the file.
fn dvle_tables<'a>(
    input: Input<'a>,
    location: Location,
    header: &[u8],
) -> Result<Tables<'a>, ShbinError> {
    let table = |table: Table, field: usize| {
        input.table(
            location,
            table,
            le32(header, field),
            le32(header, field + 4),
        )
    };
    Ok(Tables {
        constants: table(Table::Constants, 0x18)?,
        labels: table(Table::Labels, 0x20)?,
        outputs: table(Table::Outputs, 0x28)?,
        uniforms: table(Table::Uniforms, 0x30)?,
        symbols: table(Table::Symbols, 0x38)?,
    })
}

/// An invalid one-byte DVLE header field.
fn invalid_byte(location: Location, field: &'static str, offset: usize, value: u8) -> ShbinError {
    ShbinError::InvalidField {
        location,
        field,
        offset: location.base() + offset,
        value: u32::from(value),
    }
}

/// The shader type byte (0x06).
fn parse_kind(location: Location, header: &[u8]) -> Result<ShaderKind, ShbinError> {
    let code = header[0x06];
    ShaderKind::from_code(code).ok_or_else(|| invalid_byte(location, "shader type", 0x06, code))
}

/// The merge-outmaps byte (0x07): 0 or 1.
fn parse_merge(location: Location, header: &[u8]) -> Result<bool, ShbinError> {
    match header[0x07] {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(invalid_byte(location, "merge-outmaps flag", 0x07, other)),
    }
}

/// The geometry shader bytes (0x14-0x17).
fn parse_gs(location: Location, header: &[u8]) -> Result<GsConfig, ShbinError> {
    let code = header[0x14];
    let mode =
        GsMode::from_code(code).ok_or_else(|| invalid_byte(location, "GS mode", 0x14, code))?;
    Ok(GsConfig {
        mode,
        fixed_start: header[0x15],
        variable_vertices: header[0x16],
        fixed_vertices: header[0x17],
    })
}

/// The constant table.
fn parse_constants(location: Location, table: Region<'_>) -> Result<Vec<Constant>, ShbinError> {
    table
        .entries(Table::Constants.entry_size())
        .map(|(index, offset, entry)| {
            parse_constant(entry).map_err(|problem| match problem {
                ConstantProblem::Type(value) => ShbinError::UnknownConstantType {
                    location,
                    index,
                    offset,
                    value,
                },
                ConstantProblem::Register {
                    file,
                    register,
                    max,
                } => ShbinError::ConstantRegisterOutOfRange {
                    location,
                    index,
                    offset,
                    file,
                    register,
                    max,
                },
            })
        })
        .collect()
}

/// What is wrong with one constant table entry.
enum ConstantProblem {
    /// The type half-word.
    Type(u16),
    /// The register index, beyond `max` of register file `file`.
    Register { file: char, register: u16, max: u16 },
}

/// One 20-byte constant table entry.
fn parse_constant(entry: &[u8]) -> Result<Constant, ConstantProblem> {
    let register = le16(entry, 2);
    let (file, max) = match le16(entry, 0) {
        0 => ('b', 15),
        1 => ('i', 3),
        2 => ('c', 95),
        other => return Err(ConstantProblem::Type(other)),
    };
    let index = u8::try_from(register)
        .ok()
        .filter(|_| register <= max)
        .ok_or(ConstantProblem::Register {
            file,
            register,
            max,
        })?;
    Ok(match file {
        'b' => Constant::Bool {
            index,
            value: le32(entry, 4) != 0,
        },
        'i' => Constant::Int {
            index,
            value: [entry[4], entry[5], entry[6], entry[7]],
        },
        _ => Constant::Float {
            index,
            value: [4, 8, 12, 16].map(|at| F24::from_bits_truncated(le32(entry, at))),
        },
    })
}

/// The output table.
fn parse_outputs(location: Location, table: Region<'_>) -> Result<Vec<OutputEntry>, ShbinError> {
    table
        .entries(Table::Outputs.entry_size())
        .map(|(index, offset, entry)| {
            let register = le16(entry, 2);
            if register > 15 {
                return Err(ShbinError::OutputRegisterOutOfRange {
                    location,
                    index,
                    offset,
                    register,
                });
            }
            Ok(OutputEntry {
                semantic: OutputSemantic::from_code(le16(entry, 0)),
                register,
                mask: le16(entry, 4),
                unknown: le16(entry, 6),
            })
        })
        .collect()
}

/// The uniform table, names resolved in `symbols`.
fn parse_uniforms(
    location: Location,
    table: Region<'_>,
    symbols: Region<'_>,
) -> Result<Vec<UniformEntry>, ShbinError> {
    table
        .entries(Table::Uniforms.entry_size())
        .map(|(index, offset, entry)| {
            let name = symbol_name(symbols.bytes, le32(entry, 0)).map_err(|problem| {
                bad_symbol(
                    location,
                    "uniform",
                    index,
                    offset,
                    le32(entry, 0),
                    symbols,
                    problem,
                )
            })?;
            Ok(UniformEntry {
                name,
                first: le16(entry, 4),
                last: le16(entry, 6),
            })
        })
        .collect()
}

/// The label table, names resolved in `symbols`.
fn parse_labels(
    location: Location,
    table: Region<'_>,
    symbols: Region<'_>,
) -> Result<Vec<Label>, ShbinError> {
    table
        .entries(Table::Labels.entry_size())
        .map(|(index, offset, entry)| {
            let name = symbol_name(symbols.bytes, le32(entry, 12)).map_err(|problem| {
                bad_symbol(
                    location,
                    "label",
                    index,
                    offset,
                    le32(entry, 12),
                    symbols,
                    problem,
                )
            })?;
            Ok(Label {
                id: le16(entry, 0),
                unknown: le16(entry, 2),
                offset: le32(entry, 4),
                size: le32(entry, 8),
                name,
            })
        })
        .collect()
}

/// The NUL-terminated name at `offset` of the symbol table (lossy UTF-8).
fn symbol_name(symbols: &[u8], offset: u32) -> Result<String, SymbolProblem> {
    let tail = symbols
        .get(to_usize(offset)..)
        .filter(|tail| !tail.is_empty())
        .ok_or(SymbolProblem::OutsideTable)?;
    let len = tail
        .iter()
        .position(|&byte| byte == 0)
        .ok_or(SymbolProblem::Unterminated)?;
    Ok(String::from_utf8_lossy(&tail[..len]).into_owned())
}

/// The error for an unreadable name.
fn bad_symbol(
    location: Location,
    owner: &'static str,
    index: usize,
    offset: usize,
    symbol_offset: u32,
    symbols: Region<'_>,
    problem: SymbolProblem,
) -> ShbinError {
    ShbinError::BadSymbol {
        location,
        owner,
        index,
        offset,
        symbol_offset,
        // The table fits in a file whose size came from a slice; a u32 size field produced it.
        table_size: u32::try_from(symbols.bytes.len()).unwrap_or(u32::MAX),
        problem,
    }
}
