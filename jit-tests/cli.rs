//! End-to-end tests of the `picajit` binary: the shipped example, the run contract, and clear
//! errors (exit status 2, one line on stderr, nothing on stdout) for bad files and bad JSON.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use picajit::exec::ExecConfig;
use picajit::float24::Precision;
use picajit::interp::Interpreter;
use picajit::program::{ShaderProgram, Uniforms};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn example(name: &str) -> PathBuf {
    root().join("corpus/examples").join(name)
}

fn picajit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_picajit"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// `picajit run PROGRAM --input INPUT EXTRA...`.
fn run_program(program: &Path, input: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        program.to_str().unwrap(),
        "--input",
        input.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    picajit(&args)
}

fn temp_file(name: &str, contents: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("picajit-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// The shipped example is exactly what `lit_transform_example()` builds. Set
/// `PICAJIT_REGENERATE=1` to rewrite it after changing the builder.
#[test]
fn shipped_example_is_up_to_date() {
    let bytes = picajit::shbin::write(&lit_transform_example());
    let path = example("lit-transform.shbin");
    if std::env::var_os("PICAJIT_REGENERATE").is_some() {
        std::fs::write(&path, &bytes).unwrap();
    }
    assert_eq!(
        std::fs::read(&path).expect("corpus/examples/lit-transform.shbin exists"),
        bytes
    );
}

fn assert_usage_error(output: &Output, expected: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert!(output.stdout.is_empty(), "nothing on stdout");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains(expected),
        "{stderr:?} should mention {expected:?}"
    );
}

#[test]
fn run_prints_the_interpreter_results_for_the_example() {
    let shbin_path = example("lit-transform.shbin");
    let input_path = example("lit-transform.json");
    let output = run_program(&shbin_path, &input_path, &["--bits", "--state"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).expect("valid JSON");

    // The same run through the library.
    let shbin = picajit::shbin::parse(&std::fs::read(&shbin_path).unwrap()).unwrap();
    let input_text = std::fs::read_to_string(&input_path).unwrap();
    let input = picajit::document::input::parse_input(
        &input_text,
        Precision::F24Truncate,
        shbin.dvles[0].kind,
    )
    .unwrap();
    let mut uniforms = Uniforms::from_constants(&shbin.dvles[0]);
    input.apply_uniforms(&mut uniforms);
    let interp = Interpreter::new(
        ShaderProgram::from_shbin(&shbin, 0).unwrap(),
        ExecConfig::default(),
    );
    let vertices = document["vertices"].as_array().unwrap();
    assert_eq!(vertices.len(), input.invocations.len());
    for (printed, invocation) in vertices.iter().zip(&input.invocations) {
        let expected = interp.run_vertex(&uniforms, &invocation.registers).unwrap();
        let outputs = printed["outputs"].as_object().unwrap();
        assert_eq!(
            outputs.keys().collect::<Vec<_>>(),
            ["o0", "o1", "o2"],
            "the DVLE's output table"
        );
        for (name, lanes) in outputs {
            let n: usize = name[1..].parse().unwrap();
            let bits: Vec<String> = expected.outputs[n]
                .iter()
                .map(|x| format!("{:#010x}", x.to_bits()))
                .collect();
            assert_eq!(
                lanes
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect::<Vec<_>>(),
                bits
            );
        }
        assert!(printed["error"].is_null());
        assert_eq!(printed["state"]["aL"], 0);
    }
    // The first vertex uses the identity matrix rows from the input file: the position comes
    // through unchanged, and a normal facing the light gives full intensity plus ambient 0.25.
    assert_eq!(
        vertices[0]["outputs"]["o0"],
        serde_json::json!(["0x3f800000", "0x40000000", "0x40400000", "0x3f800000"])
    );
}

#[test]
fn numbers_print_as_json_numbers_and_specials_as_strings() {
    let input = temp_file(
        "specials.json",
        br#"{"uniforms": {"c0": [1,0,0,0], "c1": [0,1,0,0], "c2": [0,0,1,0], "c3": [0,0,0,1]},
        "vertices": [{"v0": ["inf", 0.5, "nan", -2], "v1": [1, 1, 1, 1]}]}"#,
    );
    let output = run_program(&example("lit-transform.shbin"), &input, &[]);
    assert!(output.status.success());
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    // dp4 with inf and nan lanes: row x = (1,0,0,0)·(inf, .5, nan, -2) = inf + 0·NaN... = NaN.
    let o0 = &document["vertices"][0]["outputs"]["o0"];
    assert_eq!(o0[0], "nan");
    assert_eq!(o0[1], "nan");
    assert_eq!(o0[3], "nan");
    assert_eq!(
        document["vertices"][0]["outputs"]["o2"],
        serde_json::json!([0, 0, 0, 0])
    );
}

#[test]
fn the_jit_engine_prints_the_same_document() {
    for precision in ["f24", "f24-rne", "f32"] {
        let args = ["--bits", "--state", "--precision", precision];
        let interp = run_program(
            &example("lit-transform.shbin"),
            &example("lit-transform.json"),
            &args,
        );
        let mut jit_args = args.to_vec();
        jit_args.extend(["--engine", "jit"]);
        let jit = run_program(
            &example("lit-transform.shbin"),
            &example("lit-transform.json"),
            &jit_args,
        );
        assert!(interp.status.success() && jit.status.success());
        assert_eq!(
            String::from_utf8(jit.stdout).unwrap(),
            String::from_utf8(interp.stdout).unwrap()
        );
    }
}

#[test]
fn output_option_writes_a_file() {
    let out = std::env::temp_dir().join(format!("picajit-out-{}.json", std::process::id()));
    let output = run_program(
        &example("lit-transform.shbin"),
        &example("lit-transform.json"),
        &["--output", out.to_str().unwrap(), "--precision", "f32"],
    );
    assert!(output.status.success());
    assert!(output.stdout.is_empty());
    let document: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(document["vertices"].is_array());
}

#[test]
fn failed_invocations_are_reported_and_the_run_goes_on() {
    let mut b = Builder::new();
    b.ops("ifu b0, 0x002, 0; break; mov o0, v0; end");
    let shbin = single_dvle(&b);
    let program = temp_file("break.shbin", &picajit::shbin::write(&shbin));
    // b0 set: the IFU's then-block is the BREAK, outside any loop.
    let input = temp_file(
        "break.json",
        br#"{"uniforms": {"b0": true}, "vertices": [{"v0": [1]}]}"#,
    );
    let output = run_program(&program, &input, &[]);
    assert!(output.status.success());
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        document["vertices"][0]["error"]["kind"],
        "break-outside-loop"
    );
    assert!(document["vertices"][0]["outputs"].is_null());
    // With b0 clear the IFU jumps over the BREAK.
    let input = temp_file(
        "break2.json",
        br#"{"vertices": [{"v0": [1]}, {"v0": [2]}]}"#,
    );
    let output = run_program(&program, &input, &[]);
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        document["vertices"][1]["outputs"]["o0"],
        serde_json::json!([2, 0, 0, 1])
    );
}

/// A one-DVLE vertex-shader SHBIN around a builder's program, with no output table.
fn single_dvle(b: &Builder) -> picajit::shbin::Shbin {
    let mut shbin = lit_transform_example();
    shbin.code = b.code.clone();
    shbin.opdescs = b.opdescs.clone();
    shbin.opdesc_extra = vec![0; b.opdescs.len()];
    shbin.dvles[0].outputs.clear();
    shbin.dvles[0].constants.clear();
    shbin
}

#[test]
fn bad_inputs_give_one_line_and_status_2() {
    let good_shbin = example("lit-transform.shbin");
    let good_input = example("lit-transform.json");
    let missing = root().join("no-such-file.shbin");
    let output = run_program(&missing, &good_input, &[]);
    assert_usage_error(&output, "cannot read");

    let truncated = temp_file(
        "truncated.shbin",
        &std::fs::read(&good_shbin).unwrap()[..50],
    );
    let output = run_program(&truncated, &good_input, &[]);
    assert_usage_error(&output, "truncated.shbin");

    let bad_magic = temp_file("magic.shbin", b"DVLX\0\0\0\0");
    let output = picajit(&["disasm", bad_magic.to_str().unwrap()]);
    assert_usage_error(&output, "bad magic");

    let bad_json = temp_file("bad.json", b"{\"vertices\": [ {\"v0\": [1, 2,] } ]}");
    let output = run_program(&good_shbin, &bad_json, &[]);
    assert_usage_error(&output, "line 1, column");

    let bad_value = temp_file("value.json", br#"{"vertices": [{"v7": [1, "one"]}]}"#);
    let output = run_program(&good_shbin, &bad_value, &[]);
    assert_usage_error(&output, "vertices[0].v7[1]");

    let output = run_program(&good_shbin, &good_input, &["--dvle", "3"]);
    assert_usage_error(&output, "no DVLE 3");

    let output = run_program(&good_shbin, &good_input, &["--precision", "f16"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
}

#[test]
fn disasm_lists_the_program() {
    let output = picajit(&["disasm", example("lit-transform.shbin").to_str().unwrap()]);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("dp4 o0.x, c0, v0"), "{text}");
    assert!(text.contains("max r0.x, c95.x, r0.x"), "{text}");
    assert!(text.contains("uniform projection c0-c3"), "{text}");
    assert!(text.contains("end"));
}

#[test]
fn geometry_shader_runs_emit_and_report_primitives() {
    let mut b = Builder::new();
    b.ops(
        "setemit 0
         mov o0, v0
         emit
         setemit 1
         mov o0, v1
         emit
         setemit 2, prim inv
         mov o0, v2
         emit
         end",
    );
    let mut shbin = single_dvle(&b);
    shbin.dvles[0].kind = picajit::shbin::ShaderKind::Geometry;
    shbin.dvles[0].outputs = vec![picajit::shbin::OutputEntry {
        semantic: picajit::shbin::OutputSemantic::Position,
        register: 0,
        mask: 0xF,
        unknown: 0,
    }];
    let program = temp_file("gs.shbin", &picajit::shbin::write(&shbin));
    let input = temp_file(
        "gs.json",
        br#"{"invocations": [{"v0": [1], "v1": [2], "v2": [3]}]}"#,
    );
    let output = run_program(&program, &input, &[]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let invocation = &document["invocations"][0];
    assert_eq!(invocation["emitted"].as_array().unwrap().len(), 3);
    assert_eq!(invocation["emitted"][2]["primitive"], true);
    let primitive = &invocation["primitives"][0];
    assert_eq!(primitive["winding"], true);
    assert_eq!(
        primitive["vertices"][0]["o0"],
        serde_json::json!([1, 0, 0, 1])
    );
    assert_eq!(
        primitive["vertices"][2]["o0"],
        serde_json::json!([3, 0, 0, 1])
    );
}

#[test]
fn validation_warnings_go_to_stderr_and_the_run_goes_on() {
    let mut b = Builder::new();
    b.ops("mova a0.x, v0; mova a0.y, v0; add o0, v0, v1; end");
    let program = temp_file("warn.shbin", &picajit::shbin::write(&single_dvle(&b)));
    let input = temp_file("warn.json", br#"{"vertices": [{"v0": [1]}]}"#);
    let output = run_program(&program, &input, &[]);
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("warning:") && stderr.contains("0x000") && stderr.contains("MOVA"),
        "{stderr}"
    );
    assert!(
        stderr.contains("0x002") && stderr.contains("input registers"),
        "{stderr}"
    );
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(document["vertices"][0]["error"].is_null());
}

#[test]
fn bench_reports_both_engines_and_their_agreement() {
    let output = Command::new(env!("CARGO_BIN_EXE_picajit"))
        .args([
            "bench",
            example("lit-transform.shbin").to_str().unwrap(),
            "--input",
            example("lit-transform.json").to_str().unwrap(),
            "--vertices",
            "300",
            "--repeat",
            "1",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("interp: prepare") && text.contains("jit: prepare"),
        "{text}"
    );
    assert!(
        text.contains("engines agree bit for bit on every vertex"),
        "{text}"
    );
    assert!(
        text.contains("cache: miss (compile)")
            && text.contains("2 identical uploads, 1 compile(s), 1 hit(s), same code"),
        "{text}"
    );
}
