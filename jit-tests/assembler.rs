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
