//! The `run` input file: uniforms and the vertices (or geometry-shader invocations) to run.
//!
//! ```json
//! {"uniforms": {"c0": [1, 0, 0, 1], "i0": [3, 0, 1], "b3": true},
//!  "vertices": [{"v0": [1, 2, 3], "v1": ["inf", "0x3f800000", "f24:0x3f0000", "nan"]}]}
//! ```
//!
//! A value is a JSON number (an f32, converted with the precision mode's rounding), `"inf"`,
//! `"-inf"`, `"nan"`, `"0xXXXXXXXX"` (f32 bits, converted likewise) or `"f24:0xXXXXXX"` (a raw
//! float24, kept exactly). Fewer than 4 values are filled from (0, 0, 0, 1). A geometry shader
//! takes `"invocations"` instead of `"vertices"`: each holds v-registers and, optionally,
//! c-registers written to the float uniforms before that invocation (as the hardware's
//! variable- and fixed-primitive modes do); those writes persist.

use std::fmt;

use serde_json::{Map, Value};

use crate::float24::{F24, Precision, convert_f32};
use crate::program::{DEFAULT_INPUT, InputRegisters, ShaderKind, Uniforms, Vec4};

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
    /// The `"uniforms"` overrides, applied over the DVLE's constants.
    pub uniforms: Vec<UniformValue>,
    /// One entry per vertex (vertex shader) or invocation (geometry shader).
    pub invocations: Vec<InvocationInput>,
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
pub fn parse_input(
    text: &str,
    precision: Precision,
    kind: ShaderKind,
) -> Result<RunInput, InputError> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        error(
            format!("line {}, column {}", e.line(), e.column()),
            format!("invalid JSON: {e}"),
        )
    })?;
    let Value::Object(root) = root else {
        return Err(error(
            "top level",
            "expected an object with \"uniforms\" and \"vertices\"",
        ));
    };
    let list_key = match kind {
        ShaderKind::Vertex => "vertices",
        ShaderKind::Geometry => "invocations",
    };
    for key in root.keys() {
        if key != "uniforms" && key != list_key {
            let hint = if key == "vertices" || key == "invocations" {
                format!(" (a {} shader takes \"{list_key}\")", kind.name())
            } else {
                String::new()
            };
            return Err(error(key.as_str(), format!("unknown key{hint}")));
        }
    }
    let uniforms = match root.get("uniforms") {
        None => Vec::new(),
        Some(value) => parse_uniforms(object(value, "uniforms")?, precision)?,
    };
    let invocations = match root.get(list_key) {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let path = format!("{list_key}[{i}]");
                parse_invocation(object(item, &path)?, &path, precision, kind)
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(error(list_key, "expected an array")),
    };
    Ok(RunInput {
        uniforms,
        invocations,
    })
}

fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, InputError> {
    value
        .as_object()
        .ok_or_else(|| error(path, "expected an object"))
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

fn parse_uniforms(
    map: &Map<String, Value>,
    precision: Precision,
) -> Result<Vec<UniformValue>, InputError> {
    map.iter()
        .map(|(key, value)| {
            let path = format!("uniforms.{key}");
            if let Some(n) = register(key, 'c', 96) {
                Ok(UniformValue::Float(n, vector(value, &path, precision)?))
            } else if let Some(n) = register(key, 'i', 4) {
                Ok(UniformValue::Int(n, int_vector(value, &path)?))
            } else if let Some(n) = register(key, 'b', 16) {
                let flag = value
                    .as_bool()
                    .ok_or_else(|| error(&path, "expected true or false"))?;
                Ok(UniformValue::Bool(n, flag))
            } else {
                Err(error(
                    path,
                    "not a uniform register (c0-c95, i0-i3, b0-b15)",
                ))
            }
        })
        .collect()
}

fn parse_invocation(
    map: &Map<String, Value>,
    path: &str,
    precision: Precision,
    kind: ShaderKind,
) -> Result<InvocationInput, InputError> {
    let mut registers = [DEFAULT_INPUT; 16];
    let mut uniform_writes = Vec::new();
    for (key, value) in map {
        let here = format!("{path}.{key}");
        if let Some(n) = register(key, 'v', 16) {
            registers[n] = vector(value, &here, precision)?;
        } else if let (ShaderKind::Geometry, Some(n)) = (kind, register(key, 'c', 96)) {
            uniform_writes.push((n, vector(value, &here, precision)?));
        } else {
            let expected = match kind {
                ShaderKind::Vertex => "an input register (v0-v15)",
                ShaderKind::Geometry => "an input register (v0-v15) or float uniform (c0-c95)",
            };
            return Err(error(here, format!("expected {expected}")));
        }
    }
    Ok(InvocationInput {
        registers,
        uniform_writes,
    })
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

fn vector(value: &Value, path: &str, precision: Precision) -> Result<Vec4, InputError> {
    let mut result = DEFAULT_INPUT;
    for (lane, item) in elements(value, path)?.iter().enumerate() {
        result[lane] = scalar(item, &format!("{path}[{lane}]"), precision)?;
    }
    Ok(result)
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

/// One value: the register value it becomes under `precision`.
pub fn scalar(value: &Value, path: &str, precision: Precision) -> Result<f32, InputError> {
    let convert = |x: f32| convert_f32(x, precision);
    match value {
        Value::Number(n) => {
            let x = n
                .as_f64()
                .ok_or_else(|| error(path, "number out of range"))?;
            Ok(convert(x as f32))
        }
        Value::String(text) => {
            match text.as_str() {
                "inf" => Ok(convert(f32::INFINITY)),
                "-inf" => Ok(convert(f32::NEG_INFINITY)),
                "nan" => Ok(convert(f32::NAN)),
                _ => {
                    if let Some(hex) = text.strip_prefix("f24:0x") {
                        let bits = parse_hex(hex, 6)
                        .ok_or_else(|| error(path, format!("bad float24 {text:?}: expected f24:0x followed by up to 6 hex digits")))?;
                        Ok(F24::from_bits(bits).expect("at most 24 bits").to_f32())
                    } else if let Some(hex) = text.strip_prefix("0x") {
                        let bits = parse_hex(hex, 8)
                        .ok_or_else(|| error(path, format!("bad f32 bits {text:?}: expected 0x followed by up to 8 hex digits")))?;
                        Ok(convert(f32::from_bits(bits)))
                    } else {
                        Err(error(
                            path,
                            format!(
                                "bad value {text:?}: expected a number, \"inf\", \"-inf\", \"nan\", \"0xXXXXXXXX\" or \"f24:0xXXXXXX\""
                            ),
                        ))
                    }
                }
            }
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
        let mut u = Uniforms::default();
        input.apply_uniforms(&mut u);
        assert_eq!(u.float[95], [2.0, 0.0, 0.0, 1.0]);
        assert_eq!(u.int[3], [1, 2, 3, 1]);
        assert!(u.bool(15));
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
            ("{\"vertices\": [\n{\"v0\": [1,]}]}", "line 2, column"),
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
    }
}
