//! The `run` output file, written piece by piece as the engine produces it.
//!
//! A vertex-shader run is one JSON object per vertex, one a line. A geometry-shader run is one
//! object per invocation whose `"emitted"` list has one line per EMIT: the vertex, and when its
//! EMIT made a triangle, the triangle's three slots. Nothing is kept: memory does not grow with
//! the number of vertices or emitted vertices.
//!
//! ```json
//! {"invocations": [
//!   {"emitted": [
//!     {"vertex": 0, "primitive": false, "winding": false, "outputs": {"o0": [1, 0, 0, 1]}},
//!     {"vertex": 2, "primitive": true, "winding": true, "outputs": {"o0": [3, 0, 0, 1]}, "triangle": [{"o0": [1, 0, 0, 1]}, {"o0": [2, 0, 0, 1]}, {"o0": [3, 0, 0, 1]}]}
//!   ], "state": {"a0": [0, 0], "aL": 0, "cmp": [false, false]}, "error": null}
//! ]}
//! ```

use std::io::{self, Write};

use crate::exec::{EmitConfig, EmitSink, ExecError, VertexResult};
use crate::program::{FlowRegisters, ShaderKind, Vec4};

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
    let mut out = Vec::new();
    write_value(&mut out, x, bits).expect("writing to a Vec");
    String::from_utf8(out).expect("ASCII")
}

fn write_value(out: &mut dyn Write, x: f32, bits: bool) -> io::Result<()> {
    if bits {
        write!(out, "\"{:#010x}\"", x.to_bits())
    } else if x.is_nan() {
        out.write_all(b"\"nan\"")
    } else if x.is_infinite() {
        out.write_all(if x > 0.0 { b"\"inf\"" } else { b"\"-inf\"" })
    } else {
        let mut buffer = ryu::Buffer::new();
        let text = buffer.format_finite(x);
        out.write_all(text.strip_suffix(".0").unwrap_or(text).as_bytes())
    }
}

fn write_vector(out: &mut dyn Write, v: &Vec4, bits: bool) -> io::Result<()> {
    out.write_all(b"[")?;
    for (i, &x) in v.iter().enumerate() {
        if i > 0 {
            out.write_all(b", ")?;
        }
        write_value(out, x, bits)?;
    }
    out.write_all(b"]")
}

/// `{"o0": [...], ...}` for the registers in `registers`.
fn write_registers(
    out: &mut dyn Write,
    values: &[Vec4; 16],
    registers: &[usize],
    bits: bool,
) -> io::Result<()> {
    out.write_all(b"{")?;
    for (i, &n) in registers.iter().enumerate() {
        if i > 0 {
            out.write_all(b", ")?;
        }
        write!(out, "\"o{n}\": ")?;
        write_vector(out, &values[n], bits)?;
    }
    out.write_all(b"}")
}

fn write_state(out: &mut dyn Write, flow: &FlowRegisters) -> io::Result<()> {
    write!(
        out,
        "{{\"a0\": [{}, {}], \"aL\": {}, \"cmp\": [{}, {}]}}",
        flow.a0[0], flow.a0[1], flow.al, flow.cmp[0], flow.cmp[1]
    )
}

/// A JSON string literal.
fn string(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

fn write_error(out: &mut dyn Write, e: &ExecError) -> io::Result<()> {
    write!(
        out,
        "{{\"kind\": {}, \"message\": {}}}",
        string(e.kind()),
        string(&e.to_string())
    )
}

/// Writes a run document: [`RunWriter::begin`], then one [`RunWriter::vertex`] per vertex or one
/// [`RunWriter::begin_invocation`] / [`RunWriter::emit_sink`] / [`RunWriter::end_invocation`]
/// per geometry-shader invocation, then [`RunWriter::finish`]. Each piece goes to the writer as
/// soon as it is known (give it a buffered writer).
pub struct RunWriter<'w> {
    out: &'w mut dyn Write,
    outputs: Vec<usize>,
    options: OutputOptions,
    items: u64,
}

impl<'w> RunWriter<'w> {
    /// Starts the document of a `kind` shader whose outputs are the registers `outputs`.
    pub fn begin(
        out: &'w mut dyn Write,
        kind: ShaderKind,
        outputs: &[usize],
        options: OutputOptions,
    ) -> io::Result<RunWriter<'w>> {
        let key = match kind {
            ShaderKind::Vertex => "vertices",
            ShaderKind::Geometry => "invocations",
        };
        write!(out, "{{\"{key}\": [")?;
        Ok(RunWriter {
            out,
            outputs: outputs.to_vec(),
            options,
            items: 0,
        })
    }

    fn separator(&mut self) -> io::Result<()> {
        let comma: &[u8] = if self.items > 0 { b"," } else { b"" };
        self.items += 1;
        self.out.write_all(comma)?;
        self.out.write_all(b"\n  ")
    }

    /// One vertex's result.
    pub fn vertex(&mut self, result: &Result<VertexResult, ExecError>) -> io::Result<()> {
        self.separator()?;
        match result {
            Ok(r) => {
                self.out.write_all(b"{\"outputs\": ")?;
                write_registers(self.out, &r.outputs, &self.outputs, self.options.bits)?;
                if self.options.state {
                    self.out.write_all(b", \"state\": ")?;
                    write_state(self.out, &r.flow)?;
                }
                self.out.write_all(b", \"error\": null}")
            }
            Err(e) => {
                self.out.write_all(b"{\"outputs\": null, \"error\": ")?;
                write_error(self.out, e)?;
                self.out.write_all(b"}")
            }
        }
    }

    /// Opens a geometry-shader invocation's entry.
    pub fn begin_invocation(&mut self) -> io::Result<()> {
        self.separator()?;
        self.out.write_all(b"{\"emitted\": [")
    }

    /// The sink that writes what the invocation emits, as it is emitted.
    pub fn emit_sink(&mut self) -> EmitWriter<'_> {
        EmitWriter {
            out: &mut *self.out,
            outputs: &self.outputs,
            bits: self.options.bits,
            emitted: 0,
            open: false,
            failure: None,
        }
    }

    /// Closes the invocation's entry: `emitted` is [`EmitWriter::finish`]'s count, `flow` the
    /// flow registers after the invocation, `error` why it failed.
    pub fn end_invocation(
        &mut self,
        emitted: u64,
        flow: &FlowRegisters,
        error: Option<&ExecError>,
    ) -> io::Result<()> {
        if emitted > 0 {
            self.out.write_all(b"\n  ")?;
        }
        self.out.write_all(b"]")?;
        if self.options.state {
            self.out.write_all(b", \"state\": ")?;
            write_state(self.out, flow)?;
        }
        match error {
            None => self.out.write_all(b", \"error\": null}"),
            Some(e) => {
                self.out.write_all(b", \"error\": ")?;
                write_error(self.out, e)?;
                self.out.write_all(b"}")
            }
        }
    }

    /// Ends the document.
    pub fn finish(self) -> io::Result<()> {
        self.out
            .write_all(if self.items > 0 { b"\n]}\n" } else { b"]}\n" })
    }
}

/// An [`EmitSink`] that writes each emitted vertex (and the triangle its EMIT made) to the
/// document as it arrives. The sink cannot fail, so the first write error is kept, later output
/// is dropped, and [`EmitWriter::finish`] reports it.
pub struct EmitWriter<'a> {
    out: &'a mut dyn Write,
    outputs: &'a [usize],
    bits: bool,
    emitted: u64,
    /// The last vertex's object is still open (a triangle may follow).
    open: bool,
    failure: Option<io::Error>,
}

impl EmitWriter<'_> {
    fn attempt(&mut self, write: impl FnOnce(&mut Self) -> io::Result<()>) {
        if self.failure.is_none()
            && let Err(e) = write(self)
        {
            self.failure = Some(e);
        }
    }

    fn close(&mut self) -> io::Result<()> {
        if self.open {
            self.open = false;
            self.out.write_all(b"}")?;
        }
        Ok(())
    }

    /// How many vertices were emitted, or the first write error.
    pub fn finish(mut self) -> io::Result<u64> {
        self.attempt(Self::close);
        match self.failure {
            Some(e) => Err(e),
            None => Ok(self.emitted),
        }
    }
}

impl EmitSink for EmitWriter<'_> {
    fn vertex(&mut self, config: EmitConfig, outputs: &[Vec4; 16]) {
        self.attempt(|w| {
            w.close()?;
            let comma: &[u8] = if w.emitted > 0 { b"," } else { b"" };
            w.out.write_all(comma)?;
            write!(
                w.out,
                "\n    {{\"vertex\": {}, \"primitive\": {}, \"winding\": {}, \"outputs\": ",
                config.vertex, config.primitive, config.winding
            )?;
            write_registers(w.out, outputs, w.outputs, w.bits)?;
            w.open = true;
            Ok(())
        });
        self.emitted += 1;
    }

    fn primitive(&mut self, _winding: bool, slots: &[[Vec4; 16]; 3]) {
        // The triangle follows the vertex whose EMIT made it, with that EMIT's winding.
        self.attempt(|w| {
            if !w.open {
                return Err(io::Error::other(
                    "a primitive arrived without the vertex that made it",
                ));
            }
            w.out.write_all(b", \"triangle\": [")?;
            for (i, slot) in slots.iter().enumerate() {
                if i > 0 {
                    w.out.write_all(b", ")?;
                }
                write_registers(w.out, slot, w.outputs, w.bits)?;
            }
            w.out.write_all(b"]")?;
            w.close()
        });
    }
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
        assert_eq!(value(f32::NEG_INFINITY, false), "\"-inf\"");
        assert_eq!(value(f32::NAN, false), "\"nan\"");
        assert_eq!(value(1.0, true), "\"0x3f800000\"");
        let tiny = f32::from_bits(0x2080_0000); // 2^-62
        let printed = value(tiny, false);
        assert_eq!(printed.parse::<f32>().unwrap(), tiny);
    }

    fn registers_with(o0: f32) -> [Vec4; 16] {
        let mut r = [[0.0; 4]; 16];
        r[0] = [o0, 0.0, 0.0, 1.0];
        r[1] = [9.0; 4];
        r
    }

    #[test]
    fn a_geometry_document_carries_each_triangle_on_its_vertex() {
        let mut out = Vec::new();
        let mut writer = RunWriter::begin(
            &mut out,
            ShaderKind::Geometry,
            &[0],
            OutputOptions::default(),
        )
        .unwrap();
        writer.begin_invocation().unwrap();
        let mut sink = writer.emit_sink();
        let plain = EmitConfig {
            vertex: 1,
            primitive: false,
            winding: false,
        };
        sink.vertex(plain, &registers_with(1.0));
        let prim = EmitConfig {
            vertex: 2,
            primitive: true,
            winding: true,
        };
        sink.vertex(prim, &registers_with(2.0));
        let slots = [
            registers_with(3.0),
            registers_with(1.0),
            registers_with(2.0),
        ];
        sink.primitive(true, &slots);
        let emitted = sink.finish().unwrap();
        assert_eq!(emitted, 2);
        writer
            .end_invocation(emitted, &FlowRegisters::default(), None)
            .unwrap();
        writer.begin_invocation().unwrap();
        let sink = writer.emit_sink();
        let emitted = sink.finish().unwrap();
        let failure = ExecError::InvalidEmitVertex { pc: 3 };
        writer
            .end_invocation(emitted, &FlowRegisters::default(), Some(&failure))
            .unwrap();
        writer.finish().unwrap();
        let text = String::from_utf8(out).unwrap();
        let document: serde_json::Value = serde_json::from_str(&text).expect(&text);
        let expected = serde_json::json!({"invocations": [
            {"emitted": [
                {"vertex": 1, "primitive": false, "winding": false, "outputs": {"o0": [1, 0, 0, 1]}},
                {"vertex": 2, "primitive": true, "winding": true, "outputs": {"o0": [2, 0, 0, 1]},
                 "triangle": [{"o0": [3, 0, 0, 1]}, {"o0": [1, 0, 0, 1]}, {"o0": [2, 0, 0, 1]}]}
            ], "error": null},
            {"emitted": [], "error": {"kind": "invalid-emit-vertex",
                "message": "EMIT at 0x003 with vertex id 3 (only slots 0-2 exist)"}}
        ]});
        assert_eq!(document, expected);
        assert_eq!(
            text.lines().count(),
            7,
            "one line per emitted vertex: {text}"
        );
    }

    /// A writer that fails after `left` bytes.
    struct Failing {
        left: usize,
    }

    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if buf.len() > self.left {
                return Err(io::Error::other("disk full"));
            }
            self.left -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_write_error_in_the_sink_is_reported() {
        let mut out = Failing { left: 40 };
        let mut writer = RunWriter::begin(
            &mut out,
            ShaderKind::Geometry,
            &[0],
            OutputOptions::default(),
        )
        .unwrap();
        writer.begin_invocation().unwrap();
        let mut sink = writer.emit_sink();
        for _ in 0..3 {
            sink.vertex(EmitConfig::default(), &registers_with(1.0));
        }
        let error = sink.finish().unwrap_err();
        assert_eq!(error.to_string(), "disk full");
    }
}
