//! `picajit disasm`: each DVLE's declarations in picasso syntax, then a listing of the program.
//!
//! The declarations come from the same functions that `disasm --source` uses
//! ([`crate::asm::source`]); the listing never fails, so what `--source` would reject (a
//! semantic picasso has no name for, a NaN constant with a payload, a uniform-table entry over
//! two register files) is printed as it is, with a comment.

use std::fmt::Write;

use crate::asm::source::{
    constant_declaration, gsh_declaration, output_declaration, uniform_directive,
};
use crate::asm::text::escape;
use crate::isa::{self, disasm};
use crate::shbin::{Constant, Dvle, ShaderKind, Shbin, UniformRegister};

/// The listing of `shbin`, read from `name`.
pub fn listing(name: &str, shbin: &Shbin) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "; {}: {} code words, {} operand descriptors, {} DVLE(s)",
        escape(name),
        shbin.code.len(),
        shbin.opdescs.len(),
        shbin.dvles.len()
    )
    .unwrap();
    for (i, dvle) in shbin.dvles.iter().enumerate() {
        writeln!(
            out,
            "; DVLE {i}: {} shader, entry {:#05x}, end {:#05x}",
            dvle.kind.name(),
            dvle.entry,
            dvle.end
        )
        .unwrap();
        for line in declarations(dvle) {
            writeln!(out, "    {line}").unwrap();
        }
    }
    for (address, &word) in shbin.code.iter().enumerate() {
        for (i, dvle) in shbin.dvles.iter().enumerate() {
            if dvle.entry as usize == address {
                writeln!(out, "; entry of DVLE {i}").unwrap();
            }
        }
        let text = disasm::format_instruction(&isa::decode(word), &shbin.opdescs);
        writeln!(out, "{address:03x}: {word:08x}    {text}").unwrap();
    }
    out
}

/// A declaration with a comment, the comments aligned.
fn commented(declaration: String, comment: impl std::fmt::Display) -> String {
    format!("{declaration:<32} ; {comment}")
}

/// The DVLE's declarations: `.gsh`, inputs and uniforms, outputs, constants.
fn declarations(dvle: &Dvle) -> Vec<String> {
    let mut lines = Vec::new();
    if dvle.kind == ShaderKind::Geometry {
        // The first float uniform a geometry shader allocates from is not stored; its first
        // declared float uniform (or, in fixed mode, the register after the vertex array) is.
        let first_float = dvle
            .uniforms
            .iter()
            .filter_map(|u| match UniformRegister::from_unified(u.first) {
                Some(UniformRegister::Float(n)) => Some(n),
                _ => None,
            })
            .min();
        let first = first_float.unwrap_or(match dvle.gs.mode {
            crate::shbin::GsMode::Fixed => dvle.gs.fixed_start.saturating_add(1).min(95),
            _ => 0,
        });
        let mut line = gsh_declaration(&dvle.gs, &format!("c{first}"));
        if dvle.merge_outmaps {
            line = commented(line, "merges the vertex shader's output map");
        }
        lines.push(line);
    }
    let mut uniforms: Vec<_> = dvle.uniforms.iter().collect();
    uniforms.sort_by_key(|u| (u.first, u.last));
    for u in uniforms {
        let name = escape(&u.name);
        let size = u.last.wrapping_sub(u.first).wrapping_add(1);
        lines.push(match uniform_directive(u) {
            Some(".in") => format!(".in {name} {}", u.describe()),
            Some(directive) if size == 1 => commented(format!("{directive} {name}"), u.describe()),
            Some(directive) => commented(format!("{directive} {name}[{size}]"), u.describe()),
            None => format!(
                "; uniform {name}: registers {} are not one range of one register file",
                u.describe()
            ),
        });
    }
    for o in &dvle.outputs {
        let line = output_declaration(o);
        lines.push(if o.mask == 0 || o.mask > 0xF || o.unknown != 0 {
            commented(
                line,
                format_args!("mask {:#x}, fourth half-word {:#x}", o.mask, o.unknown),
            )
        } else {
            line
        });
    }
    for c in &dvle.constants {
        lines.push(match constant_declaration(c) {
            Ok(line) => line,
            Err(_) => match c {
                Constant::Float { index, value } => commented(
                    format!(
                        ".setf c{index}({})",
                        value
                            .iter()
                            .map(|v| format!("f24:{:#08x}", v.bits()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    "raw float24: a NaN with a payload has no picasso spelling",
                ),
                _ => format!("; constant {c:?}"),
            },
        });
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asm::{AsmOptions, SourceFile, assemble};

    fn assembled(files: &[(&str, &str)]) -> Shbin {
        let files: Vec<SourceFile> = files
            .iter()
            .map(|(name, text)| SourceFile {
                name: name.to_string(),
                text: text.to_string(),
            })
            .collect();
        assemble(&files, AsmOptions::default()).unwrap().shbin
    }

    #[test]
    fn declarations_are_picasso_directives() {
        let shbin = assembled(&[(
            "t.v.pica",
            ".fvec projection[4], tint
             .ivec count
             .bool flags[2]
             .constf half(0.5, 1.0, 0.0, -2.0)
             .consti iters(3, 0, 1, 0)
             .in inpos v0
             .out outpos position
             .out outtc texcoord0.xy
             .proc main
                 dp4 outpos, projection, inpos
                 mov outtc, half
                 end
             .end",
        )]);
        let text = listing("t.shbin", &shbin);
        for expected in [
            "    .in inpos v0\n",
            "    .fvec projection[4]              ; c0-c3\n",
            "    .fvec tint                       ; c4\n",
            "    .ivec count                      ; i0\n",
            "    .bool flags[2]                   ; b0-b1\n",
            "    .out - position o0\n",
            "    .out - texcoord0 o1.xy\n",
            "    .setf c95(0.5, 1.0, 0, -2.0)\n",
            "    .seti i3(3, 0, 1, 0)\n",
        ] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
        for debug in ["Float {", "F24(", "uniform ", "mode "] {
            assert!(!text.contains(debug), "{debug:?} in\n{text}");
        }
    }

    #[test]
    fn geometry_shaders_show_their_mode() {
        let shbin = assembled(&[(
            "t.g.pica",
            ".gsh fixed c8 c0 4
             .fvec scale
             .out outpos position
             .proc main
                 mov outpos, scale
                 setemit 0
                 emit
                 end
             .end",
        )]);
        let text = listing("t.shbin", &shbin);
        assert!(text.contains("    .gsh fixed c8 c0 4\n"), "{text}");
    }

    #[test]
    fn names_from_the_file_are_escaped() {
        let mut shbin = assembled(&[(
            "t.v.pica",
            ".fvec tint\n.out o position\n.proc main\nmov o, tint\nend\n.end",
        )]);
        shbin.dvles[0].uniforms[0].name = "evil\n\x1b[2Jname".to_string();
        shbin.dvles[0].constants.push(Constant::Float {
            index: 90,
            value: [crate::float24::F24::from_bits(0x7f0001).unwrap(); 4],
        });
        let text = listing("t\n.shbin", &shbin);
        assert!(text.contains(".fvec evil\\n\\x1b[2Jname"), "{text}");
        assert!(!text.contains('\x1b'));
        assert!(text.starts_with("; t\\n.shbin: "));
        assert!(
            text.contains(".setf c90(f24:0x7f0001, f24:0x7f0001, f24:0x7f0001, f24:0x7f0001)"),
            "{text}"
        );
    }
}
