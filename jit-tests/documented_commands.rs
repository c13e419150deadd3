//! Every command the documentation shows runs (docs/cli.md, "Examples that are tested").
//!
//! * **Examples**: each line of a `sh` block in README.md or docs/ that calls picajit
//!   (`picajit ...`, or `cargo run --release -- ...`, which is this build's binary) runs in bash,
//!   in a scratch folder that holds the repository's `corpus`, with `picajit` on PATH. The
//!   `picajit` there is a wrapper around the binary that makes the sizes small (`bench`: 64
//!   vertices, one measured run; `difftest`: 12 programs; `render`: one replay) and records
//!   each call's arguments, exit status and standard output. The line must exit 0, and each
//!   call must print what its command prints (a PNG where `render` was told to write one, the
//!   agreement line of `bench`, `difftest`'s closing line with 0 mismatches, ...).
//! * **Synopses**: each line of a plain block that starts with `picajit COMMAND` (with the
//!   indented lines after it) names only options that `picajit COMMAND --help` lists, and every
//!   command of `picajit --help` has one.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::files_under;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fenced block of a document: its info string, its lines, and where it starts.
struct Block {
    file: String,
    line: usize,
    info: String,
    lines: Vec<String>,
}

fn documents() -> Vec<PathBuf> {
    let mut found = vec![root().join("README.md")];
    found.extend(files_under(&root().join("docs"), "md"));
    found
}

fn blocks() -> Vec<Block> {
    let mut blocks = Vec::new();
    for path in documents() {
        let text = std::fs::read_to_string(&path).unwrap();
        let file = path.strip_prefix(root()).unwrap().display().to_string();
        let mut open: Option<Block> = None;
        for (index, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            if let Some(info) = trimmed.strip_prefix("```") {
                match open.take() {
                    Some(block) => blocks.push(block),
                    None => {
                        open = Some(Block {
                            file: file.clone(),
                            line: index + 1,
                            info: info.trim().to_string(),
                            lines: Vec::new(),
                        })
                    }
                }
            } else if let Some(block) = &mut open {
                block.lines.push(line.to_string());
            }
        }
        assert!(open.is_none(), "{file}: a code block is never closed");
    }
    blocks
}

/// The line as bash should run it: `cargo run --release [--locked] -- ` becomes `picajit `.
/// `None` when it calls no picajit command.
fn example(line: &str) -> Option<String> {
    let line = line.trim();
    let mut words = line.split_whitespace();
    let first = words.next()?;
    if first == "picajit" {
        return Some(line.to_string());
    }
    for prefix in [
        "cargo run --release -- ",
        "cargo run --release --locked -- ",
    ] {
        if let Some(rest) = line.strip_prefix(prefix) {
            return Some(format!("picajit {rest}"));
        }
    }
    None
}

/// The wrapper on PATH: `picajit` with small sizes, recording each call in `$PICAJIT_DOC_LOG`.
const WRAPPER: &str = r#"#!/usr/bin/env bash
set -u
log="$PICAJIT_DOC_LOG"
n=$(find "$log" -name '*.args' | wc -l)
printf '%s\0' "$@" > "$log/$n.args"
command="${1:-}"
out=()
sized=0
repeated=0
while (($#)); do
    argument="$1"
    shift
    case "$command:$argument" in
        bench:--vertices|bench:--invocations)
            out+=("$argument" 64); shift; sized=1 ;;
        bench:--repeat|render:--repeat)
            out+=("$argument" 1); shift; repeated=1 ;;
        difftest:--programs)
            out+=("$argument" 12); shift; sized=1 ;;
        *)
            out+=("$argument") ;;
    esac
done
case "$command" in
    bench)
        ((sized)) || out+=(--vertices 64)
        ((repeated)) || out+=(--repeat 1) ;;
    difftest)
        ((sized)) || out+=(--programs 12) ;;
esac
"$PICAJIT_BINARY" "${out[@]}" | tee "$log/$n.stdout"
status=${PIPESTATUS[0]}
echo "$status" > "$log/$n.status"
exit "$status"
"#;

/// One call of the wrapper.
struct Call {
    args: Vec<String>,
    stdout: String,
}

impl Call {
    fn value(&self, names: &[&str]) -> Option<&str> {
        let at = self.args.iter().position(|a| names.contains(&a.as_str()))?;
        self.args.get(at + 1).map(String::as_str)
    }

    fn has(&self, name: &str) -> bool {
        self.args.iter().any(|a| a == name)
    }
}

fn is_png(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|bytes| bytes.starts_with(b"\x89PNG\r\n\x1a\n"))
}

fn json(text: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(text.trim()).map_err(|e| format!("not one JSON document: {e}"))
}

/// What a call of each command must have printed or written (`Err`: what is wrong).
fn check(call: &Call, scratch: &Path) -> Result<(), String> {
    let stdout = call.stdout.as_str();
    let need = |ok: bool, what: &str| if ok { Ok(()) } else { Err(what.to_string()) };
    match call.args.first().map(String::as_str) {
        Some("render") => {
            let output = scratch.join(call.value(&["-o", "--output"]).ok_or("no -o")?);
            if call.has("--frames") {
                let frames: Vec<PathBuf> = std::fs::read_dir(&output)
                    .map_err(|e| format!("{}: {e}", output.display()))?
                    .map(|e| e.unwrap().path())
                    .collect();
                need(
                    !frames.is_empty() && frames.iter().all(|p| is_png(p)),
                    "--frames wrote no PNG frames",
                )?;
            } else {
                need(is_png(&output), "-o is not a PNG")?;
            }
            if let Some(depth) = call.value(&["--depth"]) {
                need(is_png(&scratch.join(depth)), "--depth is not a PNG")?;
            }
            if call.has("--json") {
                need(
                    json(stdout)?.get("frames").is_some(),
                    "no \"frames\" in the JSON",
                )
            } else {
                need(stdout.contains(" frames"), "no frame count printed")
            }
        }
        Some("run") => {
            let text = match call.value(&["--output"]) {
                Some(path) => std::fs::read_to_string(scratch.join(path)).unwrap_or_default(),
                None => stdout.to_string(),
            };
            let document = json(&text)?;
            let items = document
                .get("vertices")
                .or_else(|| document.get("invocations"))
                .and_then(|v| v.as_array());
            need(
                items.is_some_and(|items| !items.is_empty()),
                "no vertices or invocations in the output",
            )
        }
        Some("bench") => {
            if call.has("--json") {
                let document = json(stdout)?;
                let results = ["results", "scenes"].iter().any(|key| {
                    document
                        .get(key)
                        .and_then(|v| v.as_array())
                        .is_some_and(|v| !v.is_empty())
                });
                need(results, "no results and no scenes in the JSON")
            } else {
                need(
                    stdout.contains("agreement: every engine agrees bit for bit")
                        || stdout.contains("same picture"),
                    "no agreement line and no scene table",
                )
            }
        }
        Some("difftest") => {
            if call.has("--json") {
                json(stdout).map(drop)
            } else {
                let last = stdout.lines().last().unwrap_or("");
                let words: Vec<&str> = last.split_whitespace().collect();
                need(
                    matches!(
                        words.as_slice(),
                        [_, "programs,", _, "invocations,", "0", "mismatches"]
                    ),
                    "no closing line with 0 mismatches",
                )
            }
        }
        Some("merge") => json(stdout).map(drop),
        Some("asm") => {
            let output = scratch.join(call.value(&["-o", "--output"]).ok_or("no -o")?);
            need(
                std::fs::read(&output).is_ok_and(|b| b.starts_with(b"DVLB")),
                "-o is not a SHBIN file",
            )
        }
        Some("decompile") => {
            let bytes = match call.value(&["-o", "--output"]) {
                Some(path) => std::fs::read(scratch.join(path)).unwrap_or_default(),
                None => stdout.as_bytes().to_vec(),
            };
            if call.value(&["--lang"]) == Some("spirv") {
                // A module: the magic word, then the listing as its source text.
                need(
                    bytes.starts_with(&0x0723_0203u32.to_le_bytes())
                        && String::from_utf8_lossy(&bytes).contains(": end"),
                    "no SPIR-V module with the listing",
                )
            } else {
                let text = String::from_utf8_lossy(&bytes);
                need(
                    text.starts_with("#version ") && text.contains("void main()"),
                    "no shader with a #version line and a main",
                )
            }
        }
        Some("extract") => {
            let folder = scratch.join(call.value(&["-o", "--output"]).ok_or("no -o")?);
            need(
                std::fs::read(folder.join("vs0.shbin")).is_ok_and(|b| b.starts_with(b"DVLB"))
                    && std::fs::read_to_string(folder.join("vs0.input.json"))
                        .is_ok_and(|t| t.contains("\"uniforms\""))
                    && stdout.contains(" programs ("),
                "no vs0.shbin with its input, or no summary line",
            )
        }
        Some("disasm") => need(stdout.contains("DVLE") || call.has("-o"), "no DVLE listed"),
        Some("validate") => need(stdout.contains("DVLE(s) checked"), "no summary line"),
        other => Err(format!(
            "no check for the command {other:?}: add one to jit-tests/documented_commands.rs"
        )),
    }
}

/// A scratch folder with `bin/picajit` in it (each block runs in a folder of its own there).
fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("picajit-doc-commands-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let wrapper = dir.join("bin/picajit");
    std::fs::write(&wrapper, WRAPPER).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

#[test]
fn every_documented_example_runs_and_prints_what_it_should() {
    let scratch = scratch();
    let path = format!(
        "{}:{}",
        scratch.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut failures = Vec::new();
    let mut ran = 0;
    for (number, block) in blocks().iter().filter(|b| b.info == "sh").enumerate() {
        // Each block runs in a folder of its own, so a later line sees what an earlier one of
        // the same block wrote (`bench.json`, the shards `merge` joins) and nothing else.
        let work = scratch.join(format!("block-{number}"));
        std::fs::create_dir_all(&work).unwrap();
        std::os::unix::fs::symlink(root().join("corpus"), work.join("corpus")).unwrap();
        for (offset, line) in block.lines.iter().enumerate() {
            let Some(command) = example(line) else {
                continue;
            };
            ran += 1;
            let at = format!("{}:{}", block.file, block.line + 1 + offset);
            let log = scratch.join(format!("log-{ran}"));
            std::fs::create_dir_all(&log).unwrap();
            let output = Command::new("bash")
                .args(["-c", &command])
                .current_dir(&work)
                .env("PATH", &path)
                .env("PICAJIT_BINARY", env!("CARGO_BIN_EXE_picajit"))
                .env("PICAJIT_DOC_LOG", &log)
                .output()
                .expect("bash runs");
            if !output.status.success() {
                failures.push(format!(
                    "{at}: `{command}` exited with {}: {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                ));
                continue;
            }
            let mut calls = 0;
            while let Ok(args) = std::fs::read(log.join(format!("{calls}.args"))) {
                let call = Call {
                    args: String::from_utf8_lossy(&args)
                        .split('\0')
                        .filter(|a| !a.is_empty())
                        .map(str::to_string)
                        .collect(),
                    stdout: std::fs::read_to_string(log.join(format!("{calls}.stdout")))
                        .unwrap_or_default(),
                };
                if let Err(why) = check(&call, &work) {
                    failures.push(format!("{at}: `picajit {}`: {why}", call.args.join(" ")));
                }
                calls += 1;
            }
            if calls == 0 {
                failures.push(format!("{at}: `{command}` called no picajit"));
            }
        }
    }
    assert!(ran >= 10, "only {ran} documented examples found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let _ = std::fs::remove_dir_all(&scratch);
}

/// The option names (`--name`) in a text.
fn long_options(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|word| word.starts_with("--") && word.len() > 2)
        .map(str::to_string)
        .collect()
}

fn help(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_picajit"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(output.status.success(), "picajit {args:?} --help failed");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn every_synopsis_names_options_the_command_has_and_every_command_has_one() {
    let mut synopses: Vec<(String, String, String)> = Vec::new();
    for block in blocks()
        .iter()
        .filter(|b| b.info.is_empty() || b.info == "text")
    {
        for (offset, line) in block.lines.iter().enumerate() {
            let Some(rest) = line.strip_prefix("picajit ") else {
                continue;
            };
            let command = rest.split_whitespace().next().unwrap_or("").to_string();
            let mut text = rest.to_string();
            for more in &block.lines[offset + 1..] {
                if !more.starts_with(' ') {
                    break;
                }
                text.push(' ');
                text.push_str(more);
            }
            let at = format!("{}:{}", block.file, block.line + 1 + offset);
            synopses.push((at, command, text));
        }
    }
    let mut failures = Vec::new();
    let mut documented = BTreeSet::new();
    for (at, command, text) in &synopses {
        let options = long_options(&help(&[command]));
        for option in long_options(text) {
            if !options.contains(&option) {
                failures.push(format!("{at}: picajit {command} has no option {option}"));
            }
        }
        documented.insert(command.clone());
    }
    let commands = help(&[]);
    let listed = commands
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help");
    for command in listed {
        if !documented.contains(command) {
            failures.push(format!(
                "picajit {command} has no synopsis line in README.md or docs/"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
