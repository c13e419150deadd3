//! [`write()`]: a [`Shbin`] to bytes, in picasso's layout.
//!
//! DVLB header and DVLE offsets; the DVLP at 8 + 4N with its code at 0x28 and the operand
//! descriptors right after; then each DVLE: its 0x40-byte header, the constant, label, output and
//! uniform tables and the symbol table in that order, padded to 4 bytes.

use super::{Constant, DVLE_HEADER_SIZE, DVLP_HEADER_SIZE, Dvle, Shbin};

/// Writes `shbin` in picasso's layout. No validation: a model that [`parse`](super::parse)
/// would reject (more than 4096 code words, a constant register out of range, ...) gives a file
/// that `parse` rejects.
///
/// # Panics
///
/// If an offset or size does not fit in 32 bits (a model of 4 GiB or more).
pub fn write(shbin: &Shbin) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(b"DVLB");
    put32(&mut out, len32(shbin.dvles.len()));
    let offsets_at = out.len();
    out.resize(offsets_at + 4 * shbin.dvles.len(), 0);
    write_dvlp(&mut out, shbin);
    for (index, dvle) in shbin.dvles.iter().enumerate() {
        let at = len32(out.len());
        let slot = offsets_at + 4 * index;
        out[slot..slot + 4].copy_from_slice(&at.to_le_bytes());
        out.extend_from_slice(&dvle_bytes(dvle));
    }
    out
}

/// A length or offset as the 32-bit field that stores it.
fn len32(value: usize) -> u32 {
    u32::try_from(value).expect("SHBIN offsets and sizes are 32-bit")
}

fn put16(out: &mut Vec<u8>, value: u16) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// Appends the DVLP: header, code, operand descriptors.
fn write_dvlp(out: &mut Vec<u8>, shbin: &Shbin) {
    let code_at = DVLP_HEADER_SIZE;
    let opdescs_at = code_at + 4 * shbin.code.len();
    let size = opdescs_at + 8 * shbin.opdescs.len();
    out.extend_from_slice(b"DVLP");
    for word in [
        0,
        len32(code_at),
        len32(shbin.code.len()),
        len32(opdescs_at),
        len32(shbin.opdescs.len()),
        len32(size),
        0,
        0,
        0,
    ] {
        put32(out, word);
    }
    shbin.code.iter().for_each(|&word| put32(out, word));
    for (index, &pattern) in shbin.opdescs.iter().enumerate() {
        put32(out, pattern);
        put32(out, shbin.opdesc_extra.get(index).copied().unwrap_or(0));
    }
}

/// The symbol table [`write()`] stores for a DVLE and the offsets of its names in it.
pub(super) struct SymbolLayout {
    /// The table: [`Dvle::symbols`] plus the names it lacked.
    pub(super) table: Vec<u8>,
    /// The offset of each uniform's name.
    pub(super) uniforms: Vec<u32>,
    /// The offset of each label's name.
    pub(super) labels: Vec<u32>,
}

/// Places every uniform then label name in a copy of the DVLE's symbol table: at the first
/// string start holding it, or appended (after a NUL ending a trailing unterminated fragment).
pub(super) fn symbol_layout(dvle: &Dvle) -> SymbolLayout {
    let mut table = dvle.symbols.clone();
    let mut place = |name: &str| {
        let offset = find_symbol(&table, name).unwrap_or_else(|| {
            // Terminate a trailing fragment so that the appended name starts a string.
            if table.last().is_some_and(|&byte| byte != 0) {
                table.push(0);
            }
            let at = table.len();
            table.extend_from_slice(name.as_bytes());
            table.push(0);
            at
        });
        len32(offset)
    };
    let uniforms = dvle.uniforms.iter().map(|u| place(&u.name)).collect();
    let labels = dvle.labels.iter().map(|l| place(&l.name)).collect();
    SymbolLayout {
        table,
        uniforms,
        labels,
    }
}

/// The first offset in `table` that starts a string (offset 0 or after a NUL) and holds `name`
/// followed by a NUL.
fn find_symbol(table: &[u8], name: &str) -> Option<usize> {
    let name = name.as_bytes();
    let mut start = 0;
    while start < table.len() {
        let rest = &table[start..];
        let len = rest.iter().position(|&byte| byte == 0)?;
        if &rest[..len] == name {
            return Some(start);
        }
        start += len + 1;
    }
    None
}

/// One DVLE: header, tables, padding to 4 bytes.
fn dvle_bytes(dvle: &Dvle) -> Vec<u8> {
    let symbols = symbol_layout(dvle);
    let tables = [
        (dvle.constants.len(), constant_table(dvle)),
        (dvle.labels.len(), label_table(dvle, &symbols.labels)),
        (dvle.outputs.len(), output_table(dvle)),
        (dvle.uniforms.len(), uniform_table(dvle, &symbols.uniforms)),
        (symbols.table.len(), symbols.table),
    ];
    let mut out = dvle_header(dvle);
    let mut at = DVLE_HEADER_SIZE;
    for (count, bytes) in &tables {
        put32(&mut out, len32(at));
        put32(&mut out, len32(*count));
        at += bytes.len();
    }
    tables
        .iter()
        .for_each(|(_, bytes)| out.extend_from_slice(bytes));
    out.resize(out.len().next_multiple_of(4), 0);
    out
}

/// The first 0x18 bytes of the DVLE header (the table fields follow).
fn dvle_header(dvle: &Dvle) -> Vec<u8> {
    let mut out = Vec::with_capacity(DVLE_HEADER_SIZE);
    out.extend_from_slice(b"DVLE");
    put16(&mut out, dvle.version);
    out.push(dvle.kind.code());
    out.push(u8::from(dvle.merge_outmaps));
    put32(&mut out, dvle.entry);
    put32(&mut out, dvle.end);
    put16(&mut out, dvle.input_mask);
    put16(&mut out, dvle.output_mask);
    let gs = &dvle.gs;
    out.extend_from_slice(&[
        gs.mode.code(),
        gs.fixed_start,
        gs.variable_vertices,
        gs.fixed_vertices,
    ]);
    out
}

/// The constant table (20 bytes an entry).
fn constant_table(dvle: &Dvle) -> Vec<u8> {
    let mut out = Vec::new();
    dvle.constants
        .iter()
        .for_each(|c| put_constant(&mut out, c));
    out
}

/// The label table (16 bytes an entry); `names` are the symbol offsets.
fn label_table(dvle: &Dvle, names: &[u32]) -> Vec<u8> {
    let mut out = Vec::new();
    for (label, &name) in dvle.labels.iter().zip(names) {
        put16(&mut out, label.id);
        put16(&mut out, label.unknown);
        put32(&mut out, label.offset);
        put32(&mut out, label.size);
        put32(&mut out, name);
    }
    out
}

/// The output table (8 bytes an entry).
fn output_table(dvle: &Dvle) -> Vec<u8> {
    let mut out = Vec::new();
    for output in &dvle.outputs {
        put16(&mut out, output.semantic.code());
        put16(&mut out, output.register);
        put16(&mut out, output.mask);
        put16(&mut out, output.unknown);
    }
    out
}

/// The uniform table (8 bytes an entry); `names` are the symbol offsets.
fn uniform_table(dvle: &Dvle, names: &[u32]) -> Vec<u8> {
    let mut out = Vec::new();
    for (uniform, &name) in dvle.uniforms.iter().zip(names) {
        put32(&mut out, name);
        put16(&mut out, uniform.first);
        put16(&mut out, uniform.last);
    }
    out
}

/// One 20-byte constant table entry.
fn put_constant(out: &mut Vec<u8>, constant: &Constant) {
    put16(out, constant.type_code());
    put16(out, u16::from(constant.index()));
    let mut payload = [0u8; 16];
    match constant {
        Constant::Bool { value, .. } => payload[0] = u8::from(*value),
        Constant::Int { value, .. } => payload[..4].copy_from_slice(value),
        Constant::Float { value, .. } => {
            for (chunk, component) in payload.chunks_exact_mut(4).zip(value) {
                chunk.copy_from_slice(&component.bits().to_le_bytes());
            }
        }
    }
    out.extend_from_slice(&payload);
}
