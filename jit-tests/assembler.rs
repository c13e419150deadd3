//! The assembler through random programs: every program assembles, prints back as source
//! (`disasm --source`) and reassembles to the identical bytes; mutated and truncated sources
//! never panic; the `asm` command reports errors with file, line and column.

use std::process::Command;

use picajit::asm::{AsmOptions, SourceFile, assemble, to_source};
use picajit::difftest::rng::Entropy;

/// The differential tester's deterministic randomness, in this test's units.
struct Rng(Entropy<'static>);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0.index(n)
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.0.chance(percent as u64)
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Random source programs that respect the assembler's rules (one input register per
/// instruction, uniforms only in wide slots, no consecutive MOVA, BREAK only in loops).
struct Generator {
    rng: Rng,
    text: String,
    depth: usize,
    labels: usize,
}

impl Generator {
    fn swizzle(&mut self) -> String {
        if self.rng.chance(50) {
            return String::new();
        }
        let len = 1 + self.rng.below(4);
        let letters: String = (0..len)
            .map(|_| ['x', 'y', 'z', 'w'][self.rng.below(4)])
            .collect();
        format!(".{letters}")
    }

    fn negate(&mut self) -> &'static str {
        if self.rng.chance(25) { "-" } else { "" }
    }

    fn mask(&mut self) -> String {
        let bits = 1 + self.rng.below(15);
        if bits == 15 {
            return String::new();
        }
        let letters: String = (0..4)
            .filter(|l| bits & (8 >> l) != 0)
            .map(|l| ['x', 'y', 'z', 'w'][l])
            .collect();
        format!(".{letters}")
    }

    fn dest(&mut self) -> String {
        let reg = if self.rng.chance(30) {
            format!("o{}", self.rng.below(4))
        } else {
            format!("r{}", self.rng.below(8))
        };
        format!("{reg}{}", self.mask())
    }

    /// A narrow source: a temporary, or the one input register `v`.
    fn narrow(&mut self, input: usize) -> String {
        let reg = if self.rng.chance(30) {
            format!("v{input}")
        } else {
            format!("r{}", self.rng.below(8))
        };
        format!("{}{reg}{}", self.negate(), self.swizzle())
    }

    /// A wide source: possibly a uniform, relatively indexed or through an alias.
    fn wide(&mut self, input: usize) -> String {
        if self.rng.chance(50) {
            return self.narrow(input);
        }
        let base = match self.rng.below(4) {
            0 => "mats[1]".to_string(),
            1 => "tint".to_string(),
            2 => "swz".to_string(),
            _ => format!("c{}", self.rng.below(90)),
        };
        let index = if base.starts_with('c') && self.rng.chance(40) {
            format!(
                "[{}]",
                self.rng.pick(&["a0.x", "a0.y", "aL", "a0.x+2", "aL+1"])
            )
        } else {
            String::new()
        };
        format!("{}{base}{index}{}", self.negate(), self.swizzle())
    }

    fn instruction(&mut self, in_loop: bool) {
        let input = self.rng.below(3);
        let line = match self.rng.below(12) {
            0..=3 => {
                let op = self.rng.pick(&[
                    "add", "dp3", "dp4", "mul", "max", "min", "sge", "slt", "dph", "dst",
                ]);
                let dest = self.dest();
                let (a, b) = if ["sge", "slt", "dph", "dst"].contains(&op) && self.rng.chance(30) {
                    (
                        self.narrow(input),
                        self.wide(input).replace("[aL+1]", "").replace("[aL]", ""),
                    )
                } else {
                    (self.wide(input), self.narrow(input))
                };
                // The inverted forms take no index register on the narrow source.
                format!("{op} {dest}, {a}, {b}")
            }
            4..=5 => {
                let op = self
                    .rng
                    .pick(&["ex2", "lg2", "litp", "flr", "rcp", "rsq", "mov"]);
                let dest = self.dest();
                let src = self.wide(input);
                format!("{op} {dest}, {src}")
            }
            6 => {
                let target = self.rng.pick(&["a0.x", "a0.y", "a0.xy"]);
                let src = self.wide(input);
                format!("mova {target}, {src}\nnop")
            }
            7 => {
                let ops = ["eq", "ne", "lt", "le", "gt", "ge"];
                let (x, y) = (self.rng.pick(&ops), self.rng.pick(&ops));
                let (a, b) = (self.wide(input), self.narrow(input));
                format!("cmp {a}, {x}, {y}, {b}")
            }
            8 => {
                let dest = self.dest();
                let a = self.narrow(input);
                if self.rng.chance(50) {
                    let (b, c) = (self.wide(input), self.narrow(input));
                    format!("mad {dest}, {a}, {b}, {c}")
                } else {
                    let (b, c) = (self.narrow(input), self.wide(input).replace('-', ""));
                    format!("mad {dest}, {a}, {b}, {c}")
                }
            }
            9 if in_loop => self
                .rng
                .pick(&["break", "breakc cmp.x", "breakc !cmp.y || cmp.x"])
                .to_string(),
            10 => self
                .rng
                .pick(&[
                    "call helper",
                    "callc cmp.y, helper",
                    "callu b1, helper",
                    "nop",
                ])
                .to_string(),
            _ => format!("mov r{}, {}", self.rng.below(8), self.wide(input)),
        };
        self.text += &line;
        self.text.push('\n');
    }

    fn statements(&mut self, count: usize, in_loop: bool) {
        for _ in 0..count {
            match self.rng.below(10) {
                0 if self.depth < 3 => {
                    self.depth += 1;
                    let head = self
                        .rng
                        .pick(&["ifc cmp.x", "ifc cmp.x && !cmp.y", "ifu b2", "ifu b0"])
                        .to_string();
                    self.text += &format!("{head}\n");
                    let n = 1 + self.rng.below(3);
                    self.statements(n, in_loop);
                    if self.rng.chance(50) {
                        self.text += ".else\n";
                        let n = 1 + self.rng.below(3);
                        self.statements(n, in_loop);
                    }
                    self.text += ".end\n";
                    self.depth -= 1;
                }
                1 if self.depth < 3 => {
                    self.depth += 1;
                    self.text += &format!("for i{}\n", self.rng.below(4));
                    let n = 1 + self.rng.below(3);
                    self.statements(n, true);
                    self.text += ".end\n";
                    self.depth -= 1;
                }
                2 => {
                    self.labels += 1;
                    let label = format!("skip{}", self.labels);
                    let jump = if self.rng.chance(50) {
                        format!("jmpc cmp.y, {label}")
                    } else {
                        format!("jmpu !b3, {label}")
                    };
                    self.text += &format!("{jump}\n");
                    self.instruction(in_loop);
                    self.text += &format!("{label}:\n");
                    self.instruction(in_loop);
                }
                _ => self.instruction(in_loop),
            }
        }
    }

    fn program(seed: u64) -> Vec<SourceFile> {
        let mut g = Generator {
            rng: Rng(Entropy::from_seed(seed)),
            text: String::new(),
            depth: 0,
            labels: 0,
        };
        g.text += ".fvec mats[8], tint\n.ivec counts\n.bool flags[3]\n.alias swz -c40.wzyx\n";
        g.text += ".constf k(0.5, -1.25, 3e10, 0.0)\n.in p v0\n.in n v1\n.in t v2\n";
        g.text += ".out - position\n.out - color o1\n.out - texcoord0 o2.xy\n";
        g.text += ".proc main\n";
        let n = 3 + g.rng.below(25);
        g.statements(n, false);
        g.text += "end\n.end\n.proc helper\n";
        let n = 1 + g.rng.below(5);
        g.statements(n, false);
        g.text += ".end\n";
        let mut files = vec![SourceFile {
            name: format!("random{seed}.v.pica"),
            text: g.text,
        }];
        if g.rng.chance(30) {
            let mode = g.rng.pick(&[
                ".gsh point c80",
                ".gsh variable c80 3",
                ".gsh fixed c80 c70 4",
            ]);
            let text = format!(
                "{mode}\n.fvec scale\n.out - position\n.out - dummy o3\n.proc gsmain\nsetemit 0\nmov o0, scale\nemit\nsetemit 1, prim inv\ncall helper\nemit\nend\n.end\n.entry gsmain\n"
            );
            files.push(SourceFile {
                name: format!("random{seed}.g.pica"),
                text,
            });
        }
        files
    }
}

fn bytes(files: &[SourceFile]) -> Vec<u8> {
    let assembly = assemble(files, AsmOptions::default()).unwrap_or_else(|e| {
        panic!(
            "{e}\n{}",
            files
                .iter()
                .map(|f| f.text.as_str())
                .collect::<Vec<_>>()
                .join("\n;----\n")
        )
    });
    picajit::shbin::write(&assembly.shbin)
}

#[test]
fn random_programs_round_trip_through_source() {
    for seed in 1..=400u64 {
        let files = Generator::program(seed);
        let original = bytes(&files);
        let shbin = picajit::shbin::parse(&original).unwrap();
        let sources = to_source(&shbin).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let regenerated: Vec<SourceFile> = sources
            .into_iter()
            .enumerate()
            .map(|(i, text)| SourceFile {
                name: format!("dvle{i}.pica"),
                text,
            })
            .collect();
        assert_eq!(bytes(&regenerated), original, "seed {seed}");
    }
}

#[test]
fn mutated_and_truncated_sources_never_panic() {
    let mut rng = Rng(Entropy::from_seed(0x5EED));
    let pieces = [
        ",", "[", "]", ".", "-", "(", ")", ":", ".end", ".proc x", "a0.x", "c99", "\n", " ", ";",
        "#", "!",
    ];
    let mut outcomes = [0usize; 2];
    for seed in 1..=40u64 {
        let base = Generator::program(seed).remove(0).text;
        for _ in 0..60 {
            let mut text = base.clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(text.len().max(1));
                let at = (0..=at)
                    .rev()
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(0);
                match rng.below(3) {
                    0 => text.insert_str(at, pieces[rng.below(pieces.len())]),
                    1 => {
                        let end = (at + 1 + rng.below(8)).min(text.len());
                        let end = (end..=text.len())
                            .find(|&i| text.is_char_boundary(i))
                            .unwrap_or(text.len());
                        text.replace_range(at..end, "");
                    }
                    _ => text.truncate(at),
                }
            }
            let result = assemble(
                &[SourceFile {
                    name: "m.pica".into(),
                    text,
                }],
                AsmOptions::default(),
            );
            outcomes[result.is_ok() as usize] += 1;
            if let Err(e) = result {
                assert!(e.location.line >= 1 && e.location.column >= 1, "{e}");
            }
        }
    }
    assert!(
        outcomes[0] > 100 && outcomes[1] > 10,
        "both outcomes occur: {outcomes:?}"
    );
}

#[test]
fn asm_command_writes_the_binary_and_reports_errors() {
    let dir = std::env::temp_dir().join(format!("picajit-asm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = Generator::program(7);
    let source = dir.join("prog.v.pica");
    std::fs::write(&source, &files[0].text).unwrap();
    let out = dir.join("prog.shbin");
    let header = dir.join("prog.h");
    let status = Command::new(env!("CARGO_BIN_EXE_picajit"))
        .args([
            "asm",
            source.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--header",
            header.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert_eq!(
        std::fs::read(&out).unwrap(),
        bytes(&[SourceFile {
            name: source.display().to_string(),
            text: files[0].text.clone()
        }])
    );
    assert!(
        std::fs::read_to_string(&header)
            .unwrap()
            .contains("#define VSH_FVEC_mats 0x00")
    );

    let bad = dir.join("bad.pica");
    std::fs::write(&bad, ".proc main\n    add r0, r1, c2\n.end\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_picajit"))
        .args([
            "asm",
            bad.to_str().unwrap(),
            "-o",
            dir.join("bad.shbin").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("bad.pica:2:17: error: invalid source2 register: c2"),
        "{stderr}"
    );
}

fn error_of(text: &str) -> String {
    let files = [SourceFile {
        name: "t.pica".to_string(),
        text: text.to_string(),
    }];
    match assemble(&files, AsmOptions::default()) {
        Ok(_) => panic!("{text} assembled"),
        Err(e) => e.to_string(),
    }
}

fn assembles(text: &str) {
    let files = [SourceFile {
        name: "t.pica".to_string(),
        text: text.to_string(),
    }];
    if let Err(e) = assemble(&files, AsmOptions::default()) {
        panic!("{text}: {e}");
    }
}

/// Wraps instructions in a program with a float uniform `tint` (c0), an int uniform `count`
/// (i0) and an output.
fn program(body: &str) -> String {
    format!(".fvec tint\n.ivec count\n.out o position\n.proc main\n{body}\nend\n.end\n")
}

#[test]
fn source_register_errors_say_what_the_slot_accepts() {
    // (wrong, message, the fix the message suggests)
    let cases = [
        (
            "mul r0, r1, tint",
            "t.pica:5:13: error: invalid source2 register: tint (c0): source2 accepts v0-v15 and r0-r15; a uniform (c0-c95) goes in source1 (mul has no inverted form, and its operands commute): swap the operands",
            "mul r0, tint, r1",
        ),
        (
            "dp4 r0, c1, -tint.x",
            "t.pica:5:13: error: invalid source2 register: -tint.x (c0): source2 accepts v0-v15 and r0-r15; an instruction reads at most one uniform (c0-c95): copy the other into a temporary first (mov r0, ...)",
            "mov r2, tint\ndp4 r0, c1, r2",
        ),
        (
            "add r0, count, r1",
            "t.pica:5:9: error: invalid source1 register: count (i0): source1 accepts v0-v15, r0-r15 and c0-c95; i0-i3 and b0-b15 are read only by flow control (for, ifu, callu, jmpu)",
            "add r0, tint, r1",
        ),
        (
            "cmp r0, lt, ge, tint",
            "t.pica:5:17: error: invalid source2 register: tint (c0): source2 accepts v0-v15 and r0-r15; a uniform (c0-c95) goes in source1: swap the operands and mirror the comparisons (lt and gt, le and ge trade places; eq and ne stay)",
            "cmp tint, gt, le, r0",
        ),
        (
            "mad r0, tint, r1, r2",
            "t.pica:5:9: error: invalid source1 register: tint (c0): source1 accepts v0-v15 and r0-r15; a uniform (c0-c95) goes in source2 or source3 (mad d, a, b, c computes a * b + c: swap a and b)",
            "mad r0, r1, tint, r2",
        ),
        (
            "mad r0, r1, c2, c3",
            "t.pica:5:17: error: invalid source3 register: c3: source3 accepts v0-v15 and r0-r15; an instruction reads at most one uniform",
            "mad r0, r1, c2, r3",
        ),
    ];
    for (wrong, expected, fix) in cases {
        let message = error_of(&program(wrong));
        assert!(
            message.starts_with(expected),
            "{wrong}:\n{message}\n{expected}"
        );
        assembles(&program(fix));
    }
    // The instructions with an inverted form take the uniform second themselves.
    for inverted in [
        "dph r0, r1, tint",
        "sge r0, r1, tint",
        "slt r0, v0, tint",
        "dst r0, r1, c5",
    ] {
        assembles(&program(inverted));
    }
}

#[test]
fn errors_quote_at_most_forty_characters_escaped() {
    let huge = "q".repeat(10 << 20);
    let message = error_of(&program(&format!("mov r0, {huge}")));
    assert!(message.len() < 200, "{} bytes", message.len());
    assert!(
        message.ends_with(&format!("invalid register: {}…", "q".repeat(40))),
        "{message}"
    );
    let message = error_of(&program("mov r0, c\x1b[2J"));
    assert!(!message.contains('\x1b'), "{message:?}");
    assert!(message.contains("c\\x1b[2J"), "{message}");
    let message = error_of(&format!(".proc main\ncall {huge}\nend\n.end\n"));
    assert!(message.len() < 200, "{} bytes", message.len());
    // A #line file name is escaped and capped in every later diagnostic.
    let message = error_of(&format!(
        "#line 7 \"a\x07{}\"\n.proc main\nbogus\n.end\n",
        "b".repeat(1000)
    ));
    assert!(message.starts_with("a\\x07bbb"), "{message}");
    assert!(
        message.contains("…:8:1: error: invalid instruction: bogus"),
        "{message}"
    );
    assert!(message.len() < 400, "{} bytes", message.len());
}

#[test]
fn a_procedure_defined_in_two_files_names_where_the_first_one_is() {
    // The files of one SHBIN share their procedures (docs/shbin-and-picasso.md), so two files
    // that each define `main` are one program with two `main`s: the error says so and where.
    let file = |name: &str, body: &str| SourceFile {
        name: name.to_string(),
        text: format!(".out o position\n.proc main\n    {body}\n    end\n.end\n"),
    };
    let files = [file("a.v.pica", "mov o, v0"), file("b.v.pica", "mov o, v1")];
    let message = match assemble(&files, AsmOptions::default()) {
        Ok(_) => panic!("two mains assembled"),
        Err(e) => e.to_string(),
    };
    assert!(
        message.starts_with("b.v.pica:2:7: error: proc already exists: main"),
        "{message}"
    );
    assert!(
        message.contains("its code starts at a.v.pica:3:"),
        "{message}"
    );
    assert!(message.contains("share their procedures"), "{message}");
}
