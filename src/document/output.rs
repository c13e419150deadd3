//! The `run` output file: one JSON object per vertex (or geometry-shader invocation), one a line.

use std::fmt::Write;

use crate::exec::{ExecError, GeometryResult, VertexResult};
use crate::program::{FlowRegisters, Vec4};

/// How values and state are printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutputOptions {
    /// Print each lane as its f32 bit pattern (`"0x3f800000"`).
    pub bits: bool,
    /// Include a0, aL and cmp.
    pub state: bool,
}

/// One lane: the shortest decimal that reads back as the same f32, `"inf"`, `"-inf"` or
/// `"nan"`; with `bits`, the bit pattern as a string.
pub fn value(x: f32, bits: bool) -> String {
    if bits {
        format!("\"{:#010x}\"", x.to_bits())
    } else if x.is_nan() {
        "\"nan\"".to_string()
    } else if x.is_infinite() {
        if x > 0.0 {
            "\"inf\"".to_string()
        } else {
            "\"-inf\"".to_string()
        }
    } else {
        let mut buffer = ryu::Buffer::new();
        let text = buffer.format_finite(x);
        text.strip_suffix(".0").unwrap_or(text).to_string()
    }
}

fn vector(v: &Vec4, bits: bool) -> String {
    format!(
        "[{}]",
        v.iter()
            .map(|&x| value(x, bits))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `{"o0": [...], ...}` for the registers in `registers`.
fn registers(values: &[Vec4; 16], registers: &[usize], bits: bool) -> String {
    let fields: Vec<String> = registers
        .iter()
        .map(|&n| format!("\"o{n}\": {}", vector(&values[n], bits)))
        .collect();
    format!("{{{}}}", fields.join(", "))
}

fn state(flow: &FlowRegisters) -> String {
    format!(
        "{{\"a0\": [{}, {}], \"aL\": {}, \"cmp\": [{}, {}]}}",
        flow.a0[0], flow.a0[1], flow.al, flow.cmp[0], flow.cmp[1]
    )
}

/// A JSON string literal.
fn string(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

fn error(e: &ExecError) -> String {
    format!(
        "{{\"kind\": {}, \"message\": {}}}",
        string(e.kind()),
        string(&e.to_string())
    )
}

fn document(key: &str, items: Vec<String>) -> String {
    let mut out = format!("{{\"{key}\": [");
    for (i, item) in items.iter().enumerate() {
        let comma = if i + 1 < items.len() { "," } else { "" };
        write!(out, "\n  {item}{comma}").unwrap();
    }
    out.push_str(if items.is_empty() { "]}\n" } else { "\n]}\n" });
    out
}

/// The output of a vertex-shader run.
pub fn vertex_document(
    results: &[Result<VertexResult, ExecError>],
    outputs: &[usize],
    options: OutputOptions,
) -> String {
    let items = results
        .iter()
        .map(|result| match result {
            Ok(r) => {
                let mut item = format!(
                    "{{\"outputs\": {}",
                    registers(&r.outputs, outputs, options.bits)
                );
                if options.state {
                    write!(item, ", \"state\": {}", state(&r.flow)).unwrap();
                }
                item + ", \"error\": null}"
            }
            Err(e) => format!("{{\"outputs\": null, \"error\": {}}}", error(e)),
        })
        .collect();
    document("vertices", items)
}

/// The output of a geometry-shader run: per invocation, the emitted vertices and triangles and
/// (with `state`) the flow registers after it.
pub fn geometry_document(
    results: &[(Result<GeometryResult, ExecError>, FlowRegisters)],
    outputs: &[usize],
    options: OutputOptions,
) -> String {
    let items = results
        .iter()
        .map(|(result, flow)| {
            let mut item = match result {
                Ok(r) => {
                    let vertices: Vec<String> = r
                        .vertices
                        .iter()
                        .map(|v| {
                            format!(
                                "{{\"vertex\": {}, \"primitive\": {}, \"winding\": {}, \"outputs\": {}}}",
                                v.config.vertex,
                                v.config.primitive,
                                v.config.winding,
                                registers(&v.outputs, outputs, options.bits)
                            )
                        })
                        .collect();
                    let primitives: Vec<String> = r
                        .primitives
                        .iter()
                        .map(|p| {
                            let slots: Vec<String> =
                                p.vertices.iter().map(|v| registers(v, outputs, options.bits)).collect();
                            format!("{{\"winding\": {}, \"vertices\": [{}]}}", p.winding, slots.join(", "))
                        })
                        .collect();
                    format!(
                        "{{\"emitted\": [{}], \"primitives\": [{}]",
                        vertices.join(", "),
                        primitives.join(", ")
                    )
                }
                Err(_) => "{\"emitted\": null, \"primitives\": null".to_string(),
            };
            if options.state {
                write!(item, ", \"state\": {}", state(flow)).unwrap();
            }
            match result {
                Ok(_) => item + ", \"error\": null}",
                Err(e) => item + &format!(", \"error\": {}}}", error(e)),
            }
        })
        .collect();
    document("invocations", items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_print_shortest_and_read_back() {
        assert_eq!(value(1.0, false), "1");
        assert_eq!(value(-0.0, false), "-0");
        assert_eq!(value(0.1, false), "0.1");
        assert_eq!(value(f32::INFINITY, false), "\"inf\"");
        assert_eq!(value(f32::NAN, false), "\"nan\"");
        assert_eq!(value(1.0, true), "\"0x3f800000\"");
        let tiny = f32::from_bits(0x2080_0000); // 2^-62
        let printed = value(tiny, false);
        assert_eq!(printed.parse::<f32>().unwrap(), tiny);
    }
}
