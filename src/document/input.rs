//! The `run` input file: uniforms and the vertices (or geometry-shader invocations) to run.
//!
//! ```json
//! {"uniforms": {"c0": [1, 0, 0, 1], "i0": [3, 0, 1], "b3": true, "bones[2]": [0, 1, 0, 0]},
//!  "vertices": [{"v0": [1, 2, 3], "v1": ["inf", "0x3f800000", "f24:0x3f0000", "nan"]}]}
//! ```
//!
//! A value is a JSON number (an f32, converted with the precision mode's rounding), `"inf"`,
//! `"-inf"`, `"nan"`, `"0xXXXXXXXX"` (f32 bits, converted likewise) or `"f24:0xXXXXXX"` (a raw
//! float24, kept exactly). Fewer than 4 values are filled from (0, 0, 0, 1). A geometry shader
//! takes `"invocations"` instead of `"vertices"`: each holds v-registers and, optionally,
//! c-registers written to the float uniforms before that invocation (as the hardware's
//! variable- and fixed-primitive modes do); those writes persist.
//!
//! With [`parse_input_for`], registers may also be named by the DVLE's uniform table: a uniform
//! (`"projection"`: one vector, or for an array a list of up to its size of vectors), one
//! register of an array (`"bones[3]"`), and in a vertex an input declared with `.in`.
//!
//! A key may appear only once in an object (JSON itself lets the last one win silently). A number
//! beyond the f32 range becomes infinity, with an [`InputWarning`].

use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::asm::text::excerpt;
use crate::float24::{F24, Precision, convert_f32};
use crate::program::{DEFAULT_INPUT, InputRegisters, ShaderKind, Uniforms, Vec4};
use crate::shbin::{Dvle, UniformEntry, UniformRegister};

/// A problem in the input file, with where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    /// Where: a JSON path (`vertices[2].v1[3]`) or a line and column for syntax errors.
    pub location: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

impl std::error::Error for InputError {}

fn error(location: impl Into<String>, message: impl Into<String>) -> InputError {
    InputError {
        location: location.into(),
        message: message.into(),
    }
}

/// Something in the input file that was accepted but probably not meant (a number beyond the
/// f32 range, which becomes infinity).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputWarning {
    /// Where: a JSON path (`vertices[2].v1[3]`).
    pub location: String,
    /// What happened.
    pub message: String,
}

impl fmt::Display for InputWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

/// One invocation's inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct InvocationInput {
    /// v0-v15 (registers not given are (0, 0, 0, 1)).
    pub registers: InputRegisters,
    /// Float uniforms written before the invocation (geometry shaders only).
    pub uniform_writes: Vec<(usize, Vec4)>,
}

/// The whole input file.
#[derive(Clone, Debug, PartialEq)]
pub struct RunInput {
    /// The `"uniforms"` overrides, applied over the DVLE's constants in file order.
    pub uniforms: Vec<UniformValue>,
    /// One entry per vertex (vertex shader) or invocation (geometry shader).
    pub invocations: Vec<InvocationInput>,
    /// What was accepted with a warning, in file order.
    pub warnings: Vec<InputWarning>,
}

/// One uniform override.
#[derive(Clone, Debug, PartialEq)]
pub enum UniformValue {
    /// cN.
    Float(usize, Vec4),
    /// iN.
    Int(usize, [u8; 4]),
    /// bN.
    Bool(usize, bool),
}

impl RunInput {
    /// Applies the overrides to `uniforms`.
    pub fn apply_uniforms(&self, uniforms: &mut Uniforms) {
        for value in &self.uniforms {
            match *value {
                UniformValue::Float(n, v) => uniforms.float[n] = v,
                UniformValue::Int(n, v) => uniforms.int[n] = v,
                UniformValue::Bool(n, v) => uniforms.set_bool(n, v),
            }
        }
    }
}

/// Parses the input file text for a shader of `kind`, converting values under `precision`.
/// Registers are named as registers only (`c0`, `v3`); see [`parse_input_for`] for names.
pub fn parse_input(
    text: &str,
    precision: Precision,
    kind: ShaderKind,
) -> Result<RunInput, InputError> {
    Parser::new(precision, kind, &[]).parse(text)
}

/// Parses the input file text for `dvle`: as [`parse_input`], and registers may also be named
/// by the DVLE's uniform table (`"projection"`, `"bones[3]"`, an `.in` input's name).
pub fn parse_input_for(
    text: &str,
    precision: Precision,
    dvle: &Dvle,
) -> Result<RunInput, InputError> {
    Parser::new(precision, dvle.kind, &dvle.uniforms).parse(text)
}

/// A JSON value parsed with every object checked for duplicate keys.
struct UniqueKeys(Value);

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<UniqueKeys, D::Error> {
        deserializer.deserialize_any(UniqueKeysVisitor)
    }
}

struct UniqueKeysVisitor;

impl<'de> Visitor<'de> for UniqueKeysVisitor {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(Value::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(Value::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<UniqueKeys, E> {
        // JSON text cannot spell a non-finite number, so this is never Null.
        Ok(UniqueKeys(Value::from(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(Value::String(v.to_string())))
    }

    fn visit_string<E>(self, v: String) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(Value::String(v)))
    }

    fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(Value::Null))
    }

    fn visit_none<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<UniqueKeys, A::Error> {
        let mut items = Vec::new();
        while let Some(UniqueKeys(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(UniqueKeys(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<UniqueKeys, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                // serde_json adds the line and column (just after the repeated key).
                return Err(de::Error::custom(format!(
                    "duplicate key \"{}\" (a key may appear once in an object)",
                    excerpt(&key)
                )));
            }
            let UniqueKeys(value) = access.next_value()?;
            map.insert(key, value);
        }
        Ok(UniqueKeys(Value::Object(map)))
    }
}

/// Parses JSON text, rejecting duplicate keys; errors name the line and column.
fn parse_json(text: &str) -> Result<Value, InputError> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = UniqueKeys::deserialize(&mut deserializer).and_then(|value| {
        deserializer.end()?;
        Ok(value)
    });
    parsed.map(|UniqueKeys(value)| value).map_err(|e| {
        let location = format!("line {}, column {}", e.line(), e.column());
        let full = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let what = full.strip_suffix(&suffix).unwrap_or(&full);
        let message = match e.classify() {
            serde_json::error::Category::Data => what.to_string(),
            _ => format!("invalid JSON: {what}"),
        };
        error(location, message)
    })
}

/// The path of `key` inside the object at `parent` (`vertices[0].v1`), its key quoted safely.
fn key_path(parent: &str, key: &str) -> String {
    let key = excerpt(key);
    if parent.is_empty() {
        key
    } else {
        format!("{parent}.{key}")
    }
}

/// A register name with a one-letter prefix and an index below `limit`.
fn register(key: &str, prefix: char, limit: usize) -> Option<usize> {
    let digits = key.strip_prefix(prefix)?;
    if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if digits.len() == 2 && digits.starts_with('0') {
        return None;
    }
    digits.parse().ok().filter(|&n| n < limit)
}

/// The register file a uniform-table entry's registers are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum File {
    Input,
    Float,
    Int,
    Bool,
}

impl File {
    fn of(register: UniformRegister) -> (File, usize) {
        match register {
            UniformRegister::Input(n) => (File::Input, n.into()),
            UniformRegister::Float(n) => (File::Float, n.into()),
            UniformRegister::Int(n) => (File::Int, n.into()),
            UniformRegister::Bool(n) => (File::Bool, n.into()),
        }
    }
}

/// A name of the uniform table resolved to registers: the first register and how many follow.
#[derive(Clone, Copy, Debug)]
struct Named {
    file: File,
    first: usize,
    count: usize,
}

/// How many names an "unknown name" error lists.
const LISTED_NAMES: usize = 8;

struct Parser<'a> {
    precision: Precision,
    kind: ShaderKind,
    names: &'a [UniformEntry],
    warnings: Vec<InputWarning>,
}

impl<'a> Parser<'a> {
    fn new(precision: Precision, kind: ShaderKind, names: &'a [UniformEntry]) -> Parser<'a> {
        Parser {
            precision,
            kind,
            names,
            warnings: Vec::new(),
        }
    }

    fn parse(mut self, text: &str) -> Result<RunInput, InputError> {
        let root = parse_json(text)?;
        let Value::Object(root) = root else {
            return Err(error(
                "top level",
                "expected an object with \"uniforms\" and \"vertices\"",
            ));
        };
        let list_key = match self.kind {
            ShaderKind::Vertex => "vertices",
            ShaderKind::Geometry => "invocations",
        };
        for key in root.keys() {
            if key != "uniforms" && key != list_key {
                let hint = if key == "vertices" || key == "invocations" {
                    format!(" (a {} shader takes \"{list_key}\")", self.kind.name())
                } else {
                    String::new()
                };
                return Err(error(key_path("", key), format!("unknown key{hint}")));
            }
        }
        let uniforms = match root.get("uniforms") {
            None => Vec::new(),
            Some(value) => self.uniforms(object(value, "uniforms")?)?,
        };
        let invocations = match root.get(list_key) {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let path = format!("{list_key}[{i}]");
                    self.invocation(object(item, &path)?, &path)
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(error(list_key, "expected an array")),
        };
        Ok(RunInput {
            uniforms,
            invocations,
            warnings: self.warnings,
        })
    }

    /// The uniform-table entry named `key` (`name`, or `name[index]` for one register of it).
    fn named(&self, key: &str, path: &str) -> Result<Option<Named>, InputError> {
        let find = |name: &str| self.names.iter().find(|u| u.name == name);
        let resolve = |entry: &UniformEntry| -> Result<Named, InputError> {
            let first = UniformRegister::from_unified(entry.first);
            let last = UniformRegister::from_unified(entry.last);
            match (first.map(File::of), last.map(File::of)) {
                (Some((file, first)), Some((last_file, last)))
                    if file == last_file && last >= first =>
                {
                    Ok(Named {
                        file,
                        first,
                        count: last - first + 1,
                    })
                }
                _ => Err(error(
                    path,
                    format!(
                        "the uniform table gives \"{}\" the registers {}, which are not one range of one register file",
                        excerpt(&entry.name),
                        entry.describe()
                    ),
                )),
            }
        };
        if let Some(entry) = find(key) {
            return resolve(entry).map(Some);
        }
        let Some((name, index)) = key.strip_suffix(']').and_then(|rest| rest.rsplit_once('['))
        else {
            return Ok(None);
        };
        let Some(entry) = find(name) else {
            return Ok(None);
        };
        let named = resolve(entry)?;
        let index = index
            .parse::<usize>()
            .ok()
            .filter(|&i| i < named.count && !index.starts_with('+'))
            .ok_or_else(|| {
                error(
                    path,
                    format!(
                        "\"{}\" has {} register(s) ({}): the index must be 0-{}",
                        excerpt(name),
                        named.count,
                        entry.describe(),
                        named.count - 1
                    ),
                )
            })?;
        Ok(Some(Named {
            first: named.first + index,
            count: 1,
            ..named
        }))
    }

    /// The names of the uniform table of `files`, for an error message (at most
    /// [`LISTED_NAMES`], arrays with their size).
    fn known_names(&self, files: &[File]) -> String {
        let names: Vec<String> = self
            .names
            .iter()
            .filter(|u| {
                UniformRegister::from_unified(u.first)
                    .is_some_and(|r| files.contains(&File::of(r).0))
            })
            .map(|u| {
                let size = u.last.saturating_sub(u.first) + 1;
                if size > 1 {
                    format!("{}[{size}]", excerpt(&u.name))
                } else {
                    excerpt(&u.name)
                }
            })
            .collect();
        if names.is_empty() {
            return "the DVLE names none".to_string();
        }
        let mut text = names[..names.len().min(LISTED_NAMES)].join(", ");
        if names.len() > LISTED_NAMES {
            text += &format!(" and {} more", names.len() - LISTED_NAMES);
        }
        format!("the DVLE names {text}")
    }

    fn uniforms(&mut self, map: &Map<String, Value>) -> Result<Vec<UniformValue>, InputError> {
        let mut values = Vec::new();
        for (key, value) in map {
            let path = key_path("uniforms", key);
            if let Some(n) = register(key, 'c', 96) {
                values.push(UniformValue::Float(n, self.vector(value, &path)?));
            } else if let Some(n) = register(key, 'i', 4) {
                values.push(UniformValue::Int(n, int_vector(value, &path)?));
            } else if let Some(n) = register(key, 'b', 16) {
                values.push(UniformValue::Bool(n, boolean(value, &path)?));
            } else if let Some(named) = self.named(key, &path)? {
                self.named_uniform(named, key, value, &path, &mut values)?;
            } else {
                return Err(error(
                    path,
                    format!(
                        "not a uniform register (c0-c95, i0-i3, b0-b15) or uniform name ({})",
                        self.known_names(&[File::Float, File::Int, File::Bool])
                    ),
                ));
            }
        }
        Ok(values)
    }

    /// The value of a named uniform: one register's value, or for an array a list of them.
    fn named_uniform(
        &mut self,
        named: Named,
        key: &str,
        value: &Value,
        path: &str,
        values: &mut Vec<UniformValue>,
    ) -> Result<(), InputError> {
        if named.file == File::Input {
            return Err(error(
                path,
                format!(
                    "\"{}\" is an input (v{}), not a uniform: give it in each {}",
                    excerpt(key),
                    named.first,
                    match self.kind {
                        ShaderKind::Vertex => "vertex",
                        ShaderKind::Geometry => "invocation",
                    }
                ),
            ));
        }
        let one = |parser: &mut Parser, n: usize, value: &Value, path: &str| match named.file {
            File::Float => Ok(UniformValue::Float(n, parser.vector(value, path)?)),
            File::Int => Ok(UniformValue::Int(n, int_vector(value, path)?)),
            _ => Ok(UniformValue::Bool(n, boolean(value, path)?)),
        };
        if named.count == 1 {
            values.push(one(self, named.first, value, path)?);
            return Ok(());
        }
        let items = match value {
            Value::Array(items)
                if items.len() <= named.count
                    && items.iter().all(|item| match named.file {
                        File::Bool => item.is_boolean(),
                        _ => item.is_array(),
                    }) =>
            {
                items
            }
            _ => {
                let each = match named.file {
                    File::Bool => "true or false",
                    _ => "a vector",
                };
                return Err(error(
                    path,
                    format!(
                        "\"{}\" is an array of {} registers: give a list of up to {} values, each {each}, or one register as \"{}[0]\"",
                        excerpt(key),
                        named.count,
                        named.count,
                        excerpt(key)
                    ),
                ));
            }
        };
        for (i, item) in items.iter().enumerate() {
            values.push(one(self, named.first + i, item, &format!("{path}[{i}]"))?);
        }
        Ok(())
    }

    fn invocation(
        &mut self,
        map: &Map<String, Value>,
        path: &str,
    ) -> Result<InvocationInput, InputError> {
        let mut registers = [DEFAULT_INPUT; 16];
        let mut uniform_writes = Vec::new();
        for (key, value) in map {
            let here = key_path(path, key);
            let geometry = self.kind == ShaderKind::Geometry;
            if let Some(n) = register(key, 'v', 16) {
                registers[n] = self.vector(value, &here)?;
            } else if let (true, Some(n)) = (geometry, register(key, 'c', 96)) {
                uniform_writes.push((n, self.vector(value, &here)?));
            } else if let Some(named) = self
                .named(key, &here)?
                .filter(|n| n.count == 1 && (n.file == File::Input || geometry))
                .filter(|n| n.file == File::Input || n.file == File::Float)
            {
                let vector = self.vector(value, &here)?;
                match named.file {
                    File::Input => registers[named.first] = vector,
                    _ => uniform_writes.push((named.first, vector)),
                }
            } else {
                let expected = match self.kind {
                    ShaderKind::Vertex => format!(
                        "an input register (v0-v15) or input name ({})",
                        self.known_names(&[File::Input])
                    ),
                    ShaderKind::Geometry => format!(
                        "an input register (v0-v15), float uniform (c0-c95) or the name of one ({})",
                        self.known_names(&[File::Input, File::Float])
                    ),
                };
                return Err(error(here, format!("expected {expected}")));
            }
        }
        Ok(InvocationInput {
            registers,
            uniform_writes,
        })
    }

    fn vector(&mut self, value: &Value, path: &str) -> Result<Vec4, InputError> {
        let mut result = DEFAULT_INPUT;
        for (lane, item) in elements(value, path)?.iter().enumerate() {
            let here = format!("{path}[{lane}]");
            let (x, warning) = scalar_checked(item, &here, self.precision)?;
            result[lane] = x;
            self.warnings.extend(warning);
        }
        Ok(result)
    }
}

fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, InputError> {
    value
        .as_object()
        .ok_or_else(|| error(path, "expected an object"))
}

fn boolean(value: &Value, path: &str) -> Result<bool, InputError> {
    value
        .as_bool()
        .ok_or_else(|| error(path, "expected true or false"))
}

fn elements<'a>(value: &'a Value, path: &str) -> Result<&'a [Value], InputError> {
    match value {
        Value::Array(items) if items.len() <= 4 => Ok(items),
        Value::Array(items) => Err(error(
            path,
            format!("expected at most 4 values, found {}", items.len()),
        )),
        _ => Err(error(path, "expected an array of up to 4 values")),
    }
}

fn int_vector(value: &Value, path: &str) -> Result<[u8; 4], InputError> {
    let mut result = [0, 0, 0, 1];
    for (lane, item) in elements(value, path)?.iter().enumerate() {
        result[lane] = item
            .as_u64()
            .and_then(|n| u8::try_from(n).ok())
            .ok_or_else(|| error(format!("{path}[{lane}]"), "expected an integer 0-255"))?;
    }
    Ok(result)
}

/// One value: the register value it becomes under `precision`. A number beyond the f32 range
/// becomes infinity (the input parsers record a warning for it; this function does not).
pub fn scalar(value: &Value, path: &str, precision: Precision) -> Result<f32, InputError> {
    scalar_checked(value, path, precision).map(|(x, _)| x)
}

/// [`scalar`], with a warning when a JSON number is beyond the f32 range (and so becomes
/// infinity).
fn scalar_checked(
    value: &Value,
    path: &str,
    precision: Precision,
) -> Result<(f32, Option<InputWarning>), InputError> {
    let convert = |x: f32| convert_f32(x, precision);
    match value {
        Value::Number(n) => {
            let x = n
                .as_f64()
                .ok_or_else(|| error(path, "number out of range"))?;
            let single = x as f32;
            let warning = (x.is_finite() && single.is_infinite()).then(|| InputWarning {
                location: path.to_string(),
                message: format!(
                    "{n} is beyond the f32 range (largest finite {:e}): it becomes {}",
                    f32::MAX,
                    if single > 0.0 { "inf" } else { "-inf" }
                ),
            });
            Ok((convert(single), warning))
        }
        Value::String(text) => {
            let quoted = || excerpt(text);
            let x = match text.as_str() {
                "inf" => convert(f32::INFINITY),
                "-inf" => convert(f32::NEG_INFINITY),
                "nan" => convert(f32::NAN),
                _ => {
                    if let Some(hex) = text.strip_prefix("f24:0x") {
                        let bits = parse_hex(hex, 6).ok_or_else(|| {
                            error(
                                path,
                                format!(
                                    "bad float24 \"{}\": expected f24:0x followed by up to 6 hex digits",
                                    quoted()
                                ),
                            )
                        })?;
                        F24::from_bits(bits).expect("at most 24 bits").to_f32()
                    } else if let Some(hex) = text.strip_prefix("0x") {
                        let bits = parse_hex(hex, 8).ok_or_else(|| {
                            error(
                                path,
                                format!(
                                    "bad f32 bits \"{}\": expected 0x followed by up to 8 hex digits",
                                    quoted()
                                ),
                            )
                        })?;
                        convert(f32::from_bits(bits))
                    } else {
                        return Err(error(
                            path,
                            format!(
                                "bad value \"{}\": expected a number, \"inf\", \"-inf\", \"nan\", \"0xXXXXXXXX\" or \"f24:0xXXXXXX\"",
                                quoted()
                            ),
                        ));
                    }
                }
            };
            Ok((x, None))
        }
        _ => Err(error(path, "expected a number or a string")),
    }
}

fn parse_hex(digits: &str, max_len: usize) -> Option<u32> {
    if digits.is_empty() || digits.len() > max_len || !digits.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vs(text: &str) -> Result<RunInput, InputError> {
        parse_input(text, Precision::F24Truncate, ShaderKind::Vertex)
    }

    /// A vertex-shader DVLE with `projection` (c0-c3), `tint` (c4), `count` (i0), `flags`
    /// (b2-b3) and the input `inpos` (v1).
    fn named_dvle() -> Dvle {
        let entry = |name: &str, first: u16, last: u16| UniformEntry {
            name: name.to_string(),
            first,
            last,
        };
        let mut dvle = crate::asm::assemble(
            &[crate::asm::SourceFile {
                name: "t.pica".into(),
                text: ".proc main\nend\n.end\n".into(),
            }],
            crate::asm::AsmOptions::default(),
        )
        .unwrap()
        .shbin
        .dvles
        .remove(0);
        dvle.uniforms = vec![
            entry("inpos", 0x01, 0x01),
            entry("projection", 0x10, 0x13),
            entry("tint", 0x14, 0x14),
            entry("count", 0x70, 0x70),
            entry("flags", 0x7A, 0x7B),
        ];
        dvle
    }

    fn named(text: &str) -> Result<RunInput, InputError> {
        parse_input_for(text, Precision::F24Truncate, &named_dvle())
    }

    fn applied(input: &RunInput) -> Uniforms {
        let mut u = Uniforms::default();
        input.apply_uniforms(&mut u);
        u
    }

    #[test]
    fn values_in_every_form() {
        let input = vs(r#"{"vertices": [{"v0": [1.5, "inf", "-inf", "nan"], "v3": ["0x3f800001", "f24:0x000001"]}]}"#)
            .unwrap();
        let v = &input.invocations[0].registers;
        assert_eq!(v[0][..3], [1.5, f32::INFINITY, f32::NEG_INFINITY]);
        assert_eq!(v[0][3].to_bits(), crate::float24::CANONICAL_NAN_BITS);
        assert_eq!(v[3][0], 1.0, "f32 bits are truncated to f24");
        assert_eq!(
            v[3][1],
            F24::from_bits(1).unwrap().to_f32(),
            "raw f24 is kept exactly"
        );
        assert_eq!(v[3][2..], [0.0, 1.0], "filled from (0, 0, 0, 1)");
        assert_eq!(v[1], DEFAULT_INPUT);
        assert!(input.warnings.is_empty());
    }

    #[test]
    fn f32_mode_keeps_values_and_payloads() {
        let input = parse_input(
            r#"{"vertices": [{"v0": ["0x3f800001", "0x7fc01234"]}]}"#,
            Precision::F32,
            ShaderKind::Vertex,
        )
        .unwrap();
        let v = input.invocations[0].registers[0];
        assert_eq!(v[0].to_bits(), 0x3f80_0001);
        assert_eq!(v[1].to_bits(), 0x7fc0_1234);
    }

    #[test]
    fn uniforms_of_each_kind() {
        let input = vs(r#"{"uniforms": {"c95": [2], "i3": [1, 2, 3], "b15": true}}"#).unwrap();
        let u = applied(&input);
        assert_eq!(u.float[95], [2.0, 0.0, 0.0, 1.0]);
        assert_eq!(u.int[3], [1, 2, 3, 1]);
        assert!(u.bool(15));
    }

    #[test]
    fn uniforms_by_name_index_and_array() {
        let input = named(
            r#"{"uniforms": {"projection": [[1], [0, 2], [], [0, 0, 0, 3]], "projection[2]": [5],
                "tint": [0.5, 0.25], "count": [3, 0, 1], "flags[1]": true},
                "vertices": [{"inpos": [7, 8]}]}"#,
        )
        .unwrap();
        let u = applied(&input);
        assert_eq!(u.float[0], [1.0, 0.0, 0.0, 1.0]);
        assert_eq!(u.float[1], [0.0, 2.0, 0.0, 1.0]);
        assert_eq!(u.float[2], [5.0, 0.0, 0.0, 1.0], "applied in file order");
        assert_eq!(u.float[3], [0.0, 0.0, 0.0, 3.0]);
        assert_eq!(u.float[4], [0.5, 0.25, 0.0, 1.0]);
        assert_eq!(u.int[0], [3, 0, 1, 1]);
        assert!(u.bool(3) && !u.bool(2));
        assert_eq!(input.invocations[0].registers[1], [7.0, 8.0, 0.0, 1.0]);
        // Register names keep working beside the names.
        let input = named(r#"{"uniforms": {"c1": [9], "b2": true}}"#).unwrap();
        let u = applied(&input);
        assert_eq!(u.float[1][0], 9.0);
        assert!(u.bool(2));
        // Without the DVLE's table a name is unknown.
        assert!(vs(r#"{"uniforms": {"tint": [1]}}"#).is_err());
    }

    #[test]
    fn bad_names_are_reported_with_the_known_ones() {
        let cases = [
            (
                r#"{"uniforms": {"projektion": [1]}}"#,
                "uniforms.projektion: not a uniform register (c0-c95, i0-i3, b0-b15) or uniform name (the DVLE names projection[4], tint, count, flags[2])",
            ),
            (
                r#"{"uniforms": {"projection[4]": [1]}}"#,
                "uniforms.projection[4]: \"projection\" has 4 register(s) (c0-c3): the index must be 0-3",
            ),
            (
                r#"{"uniforms": {"projection": [1, 0, 0, 0]}}"#,
                "uniforms.projection: \"projection\" is an array of 4 registers: give a list of up to 4 values, each a vector, or one register as \"projection[0]\"",
            ),
            (
                r#"{"uniforms": {"projection": [[1], [2], [3], [4], [5]]}}"#,
                "uniforms.projection: \"projection\" is an array of 4 registers",
            ),
            (
                r#"{"uniforms": {"flags": [true, 1]}}"#,
                "uniforms.flags: \"flags\" is an array of 2 registers: give a list of up to 2 values, each true or false",
            ),
            (
                r#"{"uniforms": {"inpos": [1]}}"#,
                "uniforms.inpos: \"inpos\" is an input (v1), not a uniform: give it in each vertex",
            ),
            (
                r#"{"vertices": [{"tint": [1]}]}"#,
                "vertices[0].tint: expected an input register (v0-v15) or input name (the DVLE names inpos)",
            ),
        ];
        for (text, expected) in cases {
            let message = named(text).unwrap_err().to_string();
            assert!(message.starts_with(expected), "{text}: {message}");
        }
    }

    #[test]
    fn an_unknown_name_lists_at_most_eight_names() {
        let mut dvle = named_dvle();
        dvle.uniforms = (0..20)
            .map(|i| UniformEntry {
                name: format!("u{i}"),
                first: 0x10 + i,
                last: 0x10 + i,
            })
            .collect();
        let message = parse_input_for(
            r#"{"uniforms": {"nope": [1]}}"#,
            Precision::F24Truncate,
            &dvle,
        )
        .unwrap_err()
        .to_string();
        assert!(
            message.ends_with("(the DVLE names u0, u1, u2, u3, u4, u5, u6, u7 and 12 more)"),
            "{message}"
        );
    }

    #[test]
    fn duplicate_keys_are_rejected_where_they_are() {
        let cases = [
            (
                "{\"uniforms\": {\"c0\": [1], \"c0\": [2]}}",
                "line 1, column 29: duplicate key \"c0\"",
            ),
            (
                "{\"vertices\": [{\"v0\": [1]},\n {\"v1\": [1], \"v1\": [2]}]}",
                "line 2, column 17: duplicate key \"v1\"",
            ),
            (
                "{\"vertices\": [], \"vertices\": []}",
                "line 1, column 27: duplicate key \"vertices\"",
            ),
            // The same key spelled with an escape is the same key.
            (
                "{\"uniforms\": {\"c0\": [1], \"\\u0063\\u0030\": [2]}}",
                "duplicate key \"c0\"",
            ),
        ];
        for (text, expected) in cases {
            let message = vs(text).unwrap_err().to_string();
            assert!(message.contains(expected), "{text}: {message}");
        }
        // The same key in different objects is fine.
        assert!(vs(r#"{"vertices": [{"v0": [1]}, {"v0": [2]}]}"#).is_ok());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let text = format!("{{\"vertices\": {}", "[".repeat(200_000));
        let message = vs(&text).unwrap_err().to_string();
        assert!(message.contains("recursion limit exceeded"), "{message}");
    }

    #[test]
    fn numbers_beyond_f32_warn_and_become_infinity() {
        let input = vs(r#"{"vertices": [{"v2": [1, -1e39, 3.5e38, 3.4e38]}]}"#).unwrap();
        let v = input.invocations[0].registers[2];
        assert_eq!(v[1], f32::NEG_INFINITY);
        assert_eq!(v[2], f32::INFINITY);
        let messages: Vec<String> = input.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(
            messages[0].starts_with("vertices[0].v2[1]: -1e+39 is beyond the f32 range"),
            "{messages:?}"
        );
        assert!(messages[0].ends_with("it becomes -inf"), "{messages:?}");
        assert!(messages[1].starts_with("vertices[0].v2[2]: 3.5e+38 is beyond"));
    }

    #[test]
    fn quoted_user_text_is_capped_and_escaped() {
        let long = "x".repeat(100_000);
        let text = format!(r#"{{"vertices": [{{"v0": ["{long}"]}}]}}"#);
        let message = vs(&text).unwrap_err().to_string();
        assert!(message.len() < 200, "{} bytes", message.len());
        assert!(
            message.contains(&format!("\"{}…\"", "x".repeat(40))),
            "{message}"
        );
        let message = vs("{\"uniforms\": {\"c\\u001b[2J\\n\": [1]}}")
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with("uniforms.c\\x1b[2J\\n: not a uniform"),
            "{message}"
        );
        let key = "k".repeat(5000);
        let message = vs(&format!(r#"{{"{key}": 1}}"#)).unwrap_err().to_string();
        assert!(message.len() < 100, "{message}");
    }

    #[test]
    fn errors_name_the_place() {
        let cases = [
            (
                r#"{"vertices": [{"v0": [1, 2, 3, 4, 5]}]}"#,
                "vertices[0].v0: expected at most 4 values, found 5",
            ),
            (
                r#"{"vertices": [{"v16": [1]}]}"#,
                "vertices[0].v16: expected an input register (v0-v15)",
            ),
            (
                r#"{"vertices": [{"v1": [1, "fast"]}]}"#,
                "vertices[0].v1[1]: bad value \"fast\"",
            ),
            (
                r#"{"uniforms": {"c96": [1]}}"#,
                "uniforms.c96: not a uniform register",
            ),
            (
                r#"{"uniforms": {"i0": [256]}}"#,
                "uniforms.i0[0]: expected an integer 0-255",
            ),
            (
                r#"{"uniforms": {"b0": 1}}"#,
                "uniforms.b0: expected true or false",
            ),
            (
                r#"{"invocations": []}"#,
                "invocations: unknown key (a vertex shader takes \"vertices\")",
            ),
            (
                r#"{"vertices": [{"v0": ["f24:0x1000000"]}]}"#,
                "vertices[0].v0[0]: bad float24",
            ),
            ("[1, 2]", "top level: expected an object"),
            (
                "{\"vertices\": [\n{\"v0\": [1,]}]}",
                "line 2, column 11: invalid JSON: trailing comma",
            ),
            (
                r#"{"vertices": [{"v0": [1e400]}]}"#,
                "line 1, column 27: invalid JSON: number out of range",
            ),
        ];
        for (text, expected) in cases {
            let message = vs(text).unwrap_err().to_string();
            assert!(message.starts_with(expected), "{text}: {message}");
        }
    }

    #[test]
    fn geometry_invocations_take_uniform_writes() {
        let input = parse_input(
            r#"{"invocations": [{"v0": [1], "c1": [2, 3]}]}"#,
            Precision::F24Truncate,
            ShaderKind::Geometry,
        )
        .unwrap();
        assert_eq!(
            input.invocations[0].uniform_writes,
            vec![(1, [2.0, 3.0, 0.0, 1.0])]
        );
        let mut dvle = named_dvle();
        dvle.kind = ShaderKind::Geometry;
        let input = parse_input_for(
            r#"{"invocations": [{"tint": [2], "projection[1]": [3], "inpos": [4]}]}"#,
            Precision::F24Truncate,
            &dvle,
        )
        .unwrap();
        assert_eq!(
            input.invocations[0].uniform_writes,
            vec![(4, [2.0, 0.0, 0.0, 1.0]), (1, [3.0, 0.0, 0.0, 1.0])]
        );
        assert_eq!(input.invocations[0].registers[1][0], 4.0);
    }
}
