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

/// [`single_dvle`] as a geometry shader whose one output is o0 (position).
fn single_geometry_dvle(b: &Builder) -> picajit::shbin::Shbin {
    let mut shbin = single_dvle(b);
    shbin.dvles[0].kind = picajit::shbin::ShaderKind::Geometry;
    shbin.dvles[0].outputs = vec![picajit::shbin::OutputEntry {
        semantic: picajit::shbin::OutputSemantic::Position,
        register: 0,
        mask: 0xF,
        unknown: 0,
    }];
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
fn extract_names_a_bad_trace_and_writes_nothing() {
    let scene = root().join("corpus/scenes/fog.ctf");
    let truncated = temp_file("truncated.ctf", &std::fs::read(&scene).unwrap()[..100]);
    let folder = truncated.with_extension("programs");
    let output = picajit(&[
        "extract",
        truncated.to_str().unwrap(),
        "-o",
        folder.to_str().unwrap(),
    ]);
    // The CiTrace header is 0x64 bytes; the GPU register block after it is cut off.
    assert_usage_error(
        &output,
        "offset 0x64 reach past the end of the 100-byte file",
    );
    assert!(!folder.exists(), "no folder made for a bad trace");
}

#[test]
fn disasm_lists_the_program() {
    let output = picajit(&["disasm", example("lit-transform.shbin").to_str().unwrap()]);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("dp4 o0.x, c0, v0"), "{text}");
    assert!(text.contains("max r0.x, c95.x, r0.x"), "{text}");
    // picasso declarations, from the DVLE's tables.
    for declaration in [
        "    .in inpos v0\n",
        "    .fvec projection[4]              ; c0-c3\n",
        "    .fvec lightDir                   ; c4\n",
        "    .out - position o0\n",
        "    .out - texcoord0 o2.xy\n",
        "    .setf c95(0, 0.25, 0, 0)\n",
    ] {
        assert!(text.contains(declaration), "{declaration:?} in {text}");
    }
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
    let shbin = single_geometry_dvle(&b);
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
    let emitted = invocation["emitted"].as_array().unwrap();
    assert_eq!(emitted.len(), 3);
    assert_eq!(emitted[2]["primitive"], true);
    assert_eq!(emitted[2]["winding"], true);
    // The EMIT that made the triangle carries it: slots 0, 1, 2 in slot order.
    assert_eq!(
        emitted[2]["triangle"],
        serde_json::json!([{"o0": [1, 0, 0, 1]}, {"o0": [2, 0, 0, 1]}, {"o0": [3, 0, 0, 1]}])
    );
    assert!(emitted[0].get("triangle").is_none());
    assert!(emitted[1].get("triangle").is_none());
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

/// `picajit bench ARGS...`, which must succeed; its stdout.
fn bench_ok(args: &[&str]) -> String {
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    let output = picajit(&all);
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The table rows (one per program, precision and engine) of a bench report: the lines with a
/// speed in them.
fn bench_rows<'a>(text: &'a str, unit: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|line| line.contains(&format!(" ns/{unit}")))
        .collect()
}

/// The engine cell of a row: the engine's name, preceded by `*` on the fastest.
fn row_engine(row: &str) -> (bool, &'static str) {
    let engine = picajit::engine::EngineKind::ALL
        .into_iter()
        .find(|kind| {
            row.contains(&format!("  {} ", kind.name()))
                || row.contains(&format!("* {} ", kind.name()))
        })
        .unwrap_or_else(|| panic!("no engine in {row:?}"));
    (
        row.contains(&format!("* {} ", engine.name())),
        engine.name(),
    )
}

#[test]
fn bench_reports_every_engine_and_marks_the_fastest() {
    let shbin = example("lit-transform.shbin");
    let input = example("lit-transform.json");
    let text = bench_ok(&[
        shbin.to_str().unwrap(),
        "--input",
        input.to_str().unwrap(),
        "--vertices",
        "300",
        "--repeat",
        "1",
    ]);
    let rows = bench_rows(&text, "vertex");
    let engines: Vec<_> = rows.iter().map(|row| row_engine(row)).collect();
    let names: Vec<&str> = engines.iter().map(|e| e.1).collect();
    let all: Vec<&str> = picajit::engine::EngineKind::ALL
        .iter()
        .map(|k| k.name())
        .collect();
    assert_eq!(names, all, "one row per engine: {text}");
    assert_eq!(
        engines.iter().filter(|e| e.0).count(),
        1,
        "exactly one fastest: {text}"
    );
    assert!(
        rows.iter()
            .all(|row| row.contains("lit-transform.shbin") && row.ends_with("yes")),
        "{text}"
    );
    assert!(text.contains("* the fastest exact engine"), "{text}");
    assert!(
        text.contains("agreement: every engine agrees bit for bit with interp"),
        "{text}"
    );
    assert!(
        text.contains("every hit returned the same program"),
        "{text}"
    );
    assert!(text.contains("peak memory: "), "{text}");

    // The input beside the file is found without --input.
    let dir = std::env::temp_dir().join(format!("picajit-bench-beside-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&shbin, dir.join("lit.shbin")).unwrap();
    std::fs::copy(&input, dir.join("lit.json")).unwrap();
    let text = bench_ok(&[
        dir.join("lit.shbin").to_str().unwrap(),
        "--vertices",
        "50",
        "--repeat",
        "1",
        "--engine",
        "jit",
    ]);
    let rows = bench_rows(&text, "vertex");
    assert_eq!(rows.len(), 1, "{text}");
    assert_eq!(row_engine(rows[0]), (true, "jit"), "{text}");
}

#[test]
fn bench_json_has_a_speed_per_engine_and_one_fastest() {
    let text = bench_ok(&[
        example("lit-transform.shbin").to_str().unwrap(),
        "--input",
        example("lit-transform.json").to_str().unwrap(),
        "--vertices",
        "200",
        "--repeat",
        "2",
        "--precision",
        "all",
        "--json",
    ]);
    let document: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let results = document["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "one per precision mode");
    for result in results {
        let engines = result["engines"].as_array().unwrap();
        assert_eq!(engines.len(), picajit::engine::EngineKind::ALL.len());
        for engine in engines {
            assert!(engine["ns_per_vertex"].as_f64().unwrap() > 0.0, "{engine}");
            assert!(engine["compile_ms"].as_f64().unwrap() >= 0.0, "{engine}");
            assert!(engine["exact"].as_bool().unwrap(), "{engine}");
        }
        assert_eq!(
            engines.iter().filter(|e| e["fastest"] == true).count(),
            1,
            "{result}"
        );
        assert_eq!(result["agree"], true);
        assert_eq!(result["stage"], "vertex");
        assert!(result["code_words"].as_u64().unwrap() > 0);
    }
    assert_eq!(document["settings"]["count"], 200);
    assert_eq!(document["agree"], true);
}

#[test]
fn bench_takes_directories_of_programs() {
    let dir = std::env::temp_dir().join(format!("picajit-bench-dir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // Two corpus program folders and a SHBIN file with its input, in one directory.
    for name in ["simple-transform", "fan-variable-gs"] {
        let from = root().join("corpus/programs").join(name);
        let to = dir.join(name);
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(&from).unwrap() {
            let path = entry.unwrap().path();
            let file = path.file_name().unwrap().to_str().unwrap();
            if file.ends_with(".pica") || file.ends_with(".input.json") {
                std::fs::copy(&path, to.join(file)).unwrap();
            }
        }
    }
    std::fs::copy(example("lit-transform.shbin"), dir.join("lit.shbin")).unwrap();
    std::fs::copy(example("lit-transform.json"), dir.join("lit.json")).unwrap();
    let text = bench_ok(&[
        dir.to_str().unwrap(),
        "--vertices",
        "100",
        "--repeat",
        "1",
        "--threads",
        "1",
    ]);
    let engines = picajit::engine::EngineKind::ALL.len();
    let vertex_rows = bench_rows(&text, "vertex");
    // fan-variable-gs has a vertex shader (DVLE 0) and a geometry shader (DVLE 1).
    for name in ["simple-transform", "fan-variable-gs", "lit.shbin"] {
        assert_eq!(
            vertex_rows.iter().filter(|r| r.starts_with(name)).count(),
            engines,
            "{name}: {text}"
        );
    }
    let geometry_rows = bench_rows(&text, "invocation");
    assert_eq!(geometry_rows.len(), engines, "{text}");
    assert!(
        geometry_rows
            .iter()
            .all(|r| r.starts_with("fan-variable-gs"))
    );
    assert!(
        text.contains("fan-variable-gs DVLE 1 (geometry shader, f24): 100 invocations per run"),
        "{text}"
    );
    assert!(text.contains("agreement: every engine agrees"), "{text}");

    // One program folder alone, one of its DVLEs.
    let text = bench_ok(&[
        dir.join("fan-variable-gs").to_str().unwrap(),
        "--dvle",
        "1",
        "--vertices",
        "20",
        "--repeat",
        "1",
    ]);
    assert!(bench_rows(&text, "vertex").is_empty(), "{text}");
    assert_eq!(bench_rows(&text, "invocation").len(), engines, "{text}");
}

#[test]
fn bench_reports_bad_paths_in_one_line() {
    let missing = root().join("corpus/no-such-program");
    let output = picajit(&["bench", missing.to_str().unwrap()]);
    assert_usage_error(&output, "no-such-program: cannot read");

    let empty = std::env::temp_dir().join(format!("picajit-bench-empty-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let output = picajit(&["bench", empty.to_str().unwrap()]);
    assert_usage_error(&output, "holds no SHBIN file");

    let alone = temp_file(
        "alone.shbin",
        &std::fs::read(example("lit-transform.shbin")).unwrap(),
    );
    let output = picajit(&["bench", alone.to_str().unwrap()]);
    assert_usage_error(
        &output,
        "alone.shbin: no input file: give --input IN.json or put alone.json beside it",
    );

    let output = picajit(&[
        "bench",
        alone.to_str().unwrap(),
        "--input",
        temp_file(
            "bad-bench.json",
            b"{\"vertices\": [{\"v0\": [1, 2, 3, 4, 5]}]}",
        )
        .to_str()
        .unwrap(),
    ]);
    assert_usage_error(&output, "bad-bench.json: vertices[0]");

    let output = picajit(&[
        "bench",
        root().join("corpus/programs").to_str().unwrap(),
        "--input",
        example("lit-transform.json").to_str().unwrap(),
    ]);
    assert_usage_error(&output, "--input");
}

#[test]
fn bench_memory_does_not_grow_with_the_vertex_count() {
    let text = bench_ok(&[
        root()
            .join("corpus/programs/simple-transform")
            .to_str()
            .unwrap(),
        "--vertices",
        "1000000",
        "--engine",
        "jit",
        "--threads",
        "1",
        "--repeat",
        "1",
        "--json",
    ]);
    let document: serde_json::Value = serde_json::from_str(&text).unwrap();
    let Some(peak) = document["peak_memory_bytes"].as_u64() else {
        assert!(!Path::new("/proc/self/status").exists(), "{text}");
        return;
    };
    // A million vertices kept would be 64 MiB of outputs alone; batches of 16384 keep under 1.
    assert!(peak < 100 << 20, "peak {peak} bytes: {text}");
    assert!(peak > 0);
    let engines = document["results"][0]["engines"].as_array().unwrap();
    assert_eq!(engines.len(), 1);
    assert_eq!(engines[0]["engine"], "jit");
    assert!(engines[0]["peak_memory_bytes"].as_u64().unwrap() <= peak);
}

#[test]
fn bench_measures_threads() {
    let text = bench_ok(&[
        root()
            .join("corpus/programs/simple-transform")
            .to_str()
            .unwrap(),
        "--vertices",
        "5000",
        "--threads",
        "2",
        "--repeat",
        "1",
    ]);
    let header = text.lines().find(|l| l.starts_with("program")).unwrap();
    assert!(
        header.contains("1 thread") && header.contains("2 threads") && header.contains("speed-up"),
        "{text}"
    );
    for row in bench_rows(&text, "vertex") {
        assert_eq!(row.matches(" ns/vertex").count(), 2, "{row}");
        assert!(row.contains("x "), "a speed-up: {row}");
    }
    let text = bench_ok(&[
        root()
            .join("corpus/programs/simple-transform")
            .to_str()
            .unwrap(),
        "--vertices",
        "5000",
        "--threads",
        "2",
        "--repeat",
        "1",
        "--json",
    ]);
    let document: serde_json::Value = serde_json::from_str(&text).unwrap();
    for engine in document["results"][0]["engines"].as_array().unwrap() {
        assert_eq!(engine["threaded"]["threads"], 2, "{engine}");
        assert!(engine["threaded"]["ns_per_vertex"].as_f64().unwrap() > 0.0);
        assert!(engine["threaded"]["speedup"].as_f64().unwrap() > 0.0);
    }
}

/// Assembles one picasso source file and writes the SHBIN to a temporary file.
fn assembled(name: &str, source: &str) -> (PathBuf, picajit::shbin::Shbin) {
    let files = [picajit::asm::SourceFile {
        name: format!("{name}.pica"),
        text: source.to_string(),
    }];
    let shbin = picajit::asm::assemble(&files, picajit::asm::AsmOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .shbin;
    let path = temp_file(&format!("{name}.shbin"), &picajit::shbin::write(&shbin));
    (path, shbin)
}

/// A geometry shader that emits 200 × 250 = 50,000 vertices in one invocation, each making a
/// triangle; vertex k has o0 = (k+1, k+1, k+1, k+1).
const MANY_EMITS: &str = "
    .gsh point c0
    .constf one(1.0, 1.0, 1.0, 1.0)
    .constf zero(0.0, 0.0, 0.0, 0.0)
    .consti outer(199, 0, 1, 0)
    .consti inner(249, 0, 1, 0)
    .out outpos position
    .proc main
        mov r0, zero
        setemit 0, prim
        for outer
            for inner
                add r0, one, r0
                mov outpos, r0
                emit
            .end
        .end
        end
    .end";

const MANY: usize = 50_000;

/// Counts the bytes written through it (and keeps them, to check the document).
struct Counting {
    bytes: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    kept: Vec<u8>,
}

impl std::io::Write for Counting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes
            .fetch_add(buf.len(), std::sync::atomic::Ordering::SeqCst);
        self.kept.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The interpreter, watching its emit sink: at each emitted vertex it notes how many bytes of
/// the document have reached the writer so far.
struct Watched {
    inner: Interpreter,
    bytes: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    seen: std::sync::Mutex<Vec<usize>>,
}

struct Probe<'a> {
    inner: &'a mut dyn picajit::exec::EmitSink,
    watched: &'a Watched,
}

impl picajit::exec::EmitSink for Probe<'_> {
    fn vertex(&mut self, config: picajit::exec::EmitConfig, outputs: &[[f32; 4]; 16]) {
        let written = self.watched.bytes.load(std::sync::atomic::Ordering::SeqCst);
        self.watched.seen.lock().unwrap().push(written);
        self.inner.vertex(config, outputs);
    }
    fn primitive(&mut self, winding: bool, slots: &[[[f32; 4]; 16]; 3]) {
        self.inner.primitive(winding, slots);
    }
}

impl picajit::exec::ShaderEngine for Watched {
    fn name(&self) -> &'static str {
        "watched"
    }
    fn program(&self) -> &ShaderProgram {
        self.inner.program()
    }
    fn config(&self) -> ExecConfig {
        self.inner.config()
    }
    fn run_vertex(
        &self,
        uniforms: &Uniforms,
        inputs: &picajit::program::InputRegisters,
    ) -> Result<picajit::exec::VertexResult, picajit::exec::ExecError> {
        self.inner.run_vertex(uniforms, inputs)
    }
    fn run_geometry(
        &self,
        state: &mut picajit::exec::GeometryState,
        uniforms: &Uniforms,
        inputs: &picajit::program::InputRegisters,
        sink: &mut dyn picajit::exec::EmitSink,
    ) -> Result<(), picajit::exec::ExecError> {
        let mut probe = Probe {
            inner: sink,
            watched: self,
        };
        self.inner.run_geometry(state, uniforms, inputs, &mut probe)
    }
}

#[test]
fn run_streams_each_emitted_vertex_before_the_next_is_emitted() {
    let (_, shbin) = assembled("many-emits", MANY_EMITS);
    let dvle = &shbin.dvles[0];
    let bytes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let engine = Watched {
        inner: Interpreter::new(
            ShaderProgram::from_shbin(&shbin, 0).unwrap(),
            ExecConfig::default(),
        ),
        bytes: bytes.clone(),
        seen: std::sync::Mutex::new(Vec::new()),
    };
    let input = picajit::document::input::parse_input_for(
        r#"{"invocations": [{}]}"#,
        Precision::F24Truncate,
        dvle,
    )
    .unwrap();
    let mut out = Counting {
        bytes: bytes.clone(),
        kept: Vec::new(),
    };
    picajit::document::write_run(
        &mut out,
        &engine,
        dvle,
        &input,
        picajit::document::output::OutputOptions::default(),
    )
    .unwrap();

    // Every emitted vertex (and its triangle) reached the writer before the next EMIT: the
    // bytes written grow between any two emitted vertices, so nothing is collected.
    let seen = engine.seen.into_inner().unwrap();
    assert_eq!(seen.len(), MANY);
    let held_back = seen.windows(2).position(|pair| pair[1] <= pair[0]);
    assert_eq!(
        held_back, None,
        "a vertex was not written before the next EMIT"
    );
    // The last vertex's line is all that is written after the last EMIT (and the closing).
    let total = bytes.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        total - seen[MANY - 1] < 400,
        "{} bytes after the last EMIT",
        total - seen[MANY - 1]
    );

    let document: serde_json::Value = serde_json::from_slice(&out.kept).unwrap();
    let emitted = document["invocations"][0]["emitted"].as_array().unwrap();
    assert_eq!(emitted.len(), MANY);
    for (k, vertex) in emitted.iter().enumerate().step_by(997) {
        let count = k as i64 + 1;
        assert_eq!(
            vertex["outputs"]["o0"],
            serde_json::json!([count, count, count, count])
        );
        assert_eq!(
            vertex["triangle"][0], vertex["outputs"],
            "slot 0 is the vertex"
        );
        assert_eq!(vertex["triangle"][1]["o0"], serde_json::json!([0, 0, 0, 0]));
    }
}

#[test]
fn run_writes_every_vertex_of_a_large_geometry_shader() {
    let (program, _) = assembled("many-emits-cli", MANY_EMITS);
    let input = temp_file("many-emits.json", br#"{"invocations": [{}]}"#);
    for engine in ["interp", "jit"] {
        let output = run_program(&program, &input, &["--engine", engine]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let text = String::from_utf8(output.stdout).unwrap();
        // One line per emitted vertex, plus the document's and the invocation's lines.
        assert_eq!(text.lines().count(), MANY + 4, "{engine}");
        let document: serde_json::Value = serde_json::from_str(&text).unwrap();
        let emitted = document["invocations"][0]["emitted"].as_array().unwrap();
        assert_eq!(emitted.len(), MANY);
        assert_eq!(
            emitted[MANY - 1]["outputs"]["o0"],
            serde_json::json!([50000, 50000, 50000, 50000])
        );
    }
}

#[test]
fn a_failed_geometry_invocation_keeps_what_it_emitted() {
    // picasso syntax cannot say `setemit 3`.
    let mut b = Builder::new();
    b.ops(
        "mov o0, v0
         setemit 0
         emit
         setemit 1
         emit
         setemit 3
         emit
         end",
    );
    let shbin = single_geometry_dvle(&b);
    let program = temp_file("gs-fails.shbin", &picajit::shbin::write(&shbin));
    let input = temp_file(
        "gs-fails.json",
        br#"{"invocations": [{"v0": [1]}, {"v0": [2]}]}"#,
    );
    let output = run_program(&program, &input, &["--state"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    for (i, invocation) in document["invocations"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let emitted = invocation["emitted"].as_array().unwrap();
        assert_eq!(emitted.len(), 2, "the two EMITs before the failing one");
        let x = i as i64 + 1;
        assert_eq!(emitted[0]["outputs"]["o0"], serde_json::json!([x, 0, 0, 1]));
        // The second EMIT sent the other output bank, never written.
        assert_eq!(emitted[1]["outputs"]["o0"], serde_json::json!([0, 0, 0, 0]));
        assert_eq!(invocation["error"]["kind"], "invalid-emit-vertex");
        assert!(invocation["state"].is_object());
    }
}

#[test]
fn uniforms_can_be_named_by_the_uniform_table() {
    let by_register = run_program(
        &example("lit-transform.shbin"),
        &example("lit-transform.json"),
        &["--bits"],
    );
    let named = temp_file(
        "named.json",
        br#"{"uniforms": {"projection": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
            "lightDir": [0, 0, 1, 0]},
          "vertices": [
            {"inpos": [1, 2, 3, 1], "incolor": [0.5, 0.25, 1, 1], "innormal": [0, 0, 1], "intex": [0.5, 0.5]},
            {"inpos": [-1, 0.5, 0.1, 1], "incolor": [1, 1, 1, 1], "innormal": [0, 0.7071, 0.7071], "intex": [0, 1]},
            {"inpos": [1e30, -0.0, "f24:0x000001", 1], "incolor": [1, 0, 0, 1], "innormal": [0, 0, -1], "intex": [1, 0]}]}"#,
    );
    let by_name = run_program(&example("lit-transform.shbin"), &named, &["--bits"]);
    assert!(
        by_name.status.success(),
        "{}",
        String::from_utf8_lossy(&by_name.stderr)
    );
    assert_eq!(by_name.stdout, by_register.stdout);

    // One register of an array: projection[2] is c2; the z row now doubles z.
    let indexed = temp_file(
        "indexed.json",
        br#"{"uniforms": {"projection[0]": [1, 0, 0, 0], "projection[1]": [0, 1, 0, 0],
            "projection[2]": [0, 0, 2, 0], "projection[3]": [0, 0, 0, 1]},
          "vertices": [{"inpos": [1, 2, 3, 1]}]}"#,
    );
    let output = run_program(&example("lit-transform.shbin"), &indexed, &[]);
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        document["vertices"][0]["outputs"]["o0"],
        serde_json::json!([1, 2, 6, 1])
    );

    let unknown = temp_file("unknown.json", br#"{"uniforms": {"projektion": [1]}}"#);
    let output = run_program(&example("lit-transform.shbin"), &unknown, &[]);
    assert_usage_error(
        &output,
        "unknown.json: uniforms.projektion: not a uniform register (c0-c95, i0-i3, b0-b15) or uniform name (the DVLE names projection[4], lightDir)",
    );
    let past = temp_file("past.json", br#"{"uniforms": {"projection[4]": [1]}}"#);
    let output = run_program(&example("lit-transform.shbin"), &past, &[]);
    assert_usage_error(&output, "the index must be 0-3");
}

#[test]
fn duplicate_keys_are_rejected_with_where_they_are() {
    let input = temp_file(
        "duplicate.json",
        b"{\"vertices\": [\n  {\"v0\": [1, 2], \"v1\": [0], \"v0\": [3]}\n]}",
    );
    let output = run_program(&example("lit-transform.shbin"), &input, &[]);
    assert_usage_error(
        &output,
        "duplicate.json: line 2, column 32: duplicate key \"v0\"",
    );
}

#[test]
fn numbers_beyond_f32_warn_on_stderr_and_become_infinity() {
    let input = temp_file(
        "huge.json",
        br#"{"uniforms": {"c0": [1, 0, 0, 0]}, "vertices": [{"v0": [1e39, 0, 0, 1]}]}"#,
    );
    let output = run_program(&example("lit-transform.shbin"), &input, &[]);
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("warning: ")
            && stderr.contains("huge.json: vertices[0].v0[0]: 1e+39 is beyond the f32 range"),
        "{stderr}"
    );
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["vertices"][0]["outputs"]["o0"][0], "inf");
}

#[test]
fn zero_counts_are_rejected_by_every_command() {
    let program = example("lit-transform.shbin");
    let input = example("lit-transform.json");
    let (program, input) = (program.to_str().unwrap(), input.to_str().unwrap());
    let cases: [&[&str]; 5] = [
        &["run", program, "--input", input, "--budget", "0"],
        &["difftest", "--programs", "1", "--budget", "0"],
        &["bench", program, "--input", input, "--vertices", "0"],
        &["bench", program, "--input", input, "--repeat", "0"],
        &["run", program, "--input", input, "--budget=-3"],
    ];
    for args in cases {
        let output = picajit(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty());
        assert!(
            stderr.contains("must be at least 1") || stderr.contains("not a whole number"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn choices_are_listed_in_help_and_checked() {
    for command in ["run", "bench"] {
        let output = picajit(&[command, "--help"]);
        let help = String::from_utf8_lossy(&output.stdout);
        for mode in ["f24", "f24-rne", "f32"] {
            assert!(
                help.contains(&format!("{mode}:")),
                "{command} --help: {help}"
            );
        }
    }
    let help = String::from_utf8_lossy(&picajit(&["run", "--help"]).stdout).into_owned();
    assert!(help.contains("interp:") && help.contains("jit:"), "{help}");
    let help = String::from_utf8_lossy(&picajit(&["difftest", "--help"]).stdout).into_owned();
    assert!(help.contains("all:"), "{help}");

    let output = run_program(
        &example("lit-transform.shbin"),
        &example("lit-transform.json"),
        &["--precision", "f16"],
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("[possible values: f24, f24-rne, f32]"),
        "{stderr}"
    );
}

#[test]
fn bench_measures_geometry_shaders() {
    let (program, _) = assembled(
        "gs-bench",
        "
        .gsh point c0
        .out outpos position
        .proc main
            mov outpos, v0
            setemit 0
            emit
            setemit 1
            emit
            setemit 2, prim
            emit
            end
        .end",
    );
    let input = temp_file(
        "gs-bench.json",
        br#"{"invocations": [{"v0": [1]}, {"v0": [2]}, {"v0": [3]}]}"#,
    );
    let output = picajit(&[
        "bench",
        program.to_str().unwrap(),
        "--input",
        input.to_str().unwrap(),
        "--invocations",
        "10",
        "--repeat",
        "2",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains(
            "gs-bench.shbin DVLE 0 (geometry shader, f24): 10 invocations per run (draws of 3)"
        ),
        "{text}"
    );
    // 10 invocations of 3 EMITs each.
    assert!(text.contains("30 vertices emitted per run"), "{text}");
    assert_eq!(
        bench_rows(&text, "invocation").len(),
        picajit::engine::EngineKind::ALL.len(),
        "{text}"
    );
    assert!(
        text.contains("agreement: every engine agrees bit for bit"),
        "{text}"
    );
}

#[test]
fn validate_prints_findings_with_exit_codes_by_severity() {
    let validate = |path: &Path, extra: &[&str]| {
        let mut args = vec!["validate", path.to_str().unwrap()];
        args.extend_from_slice(extra);
        picajit(&args)
    };
    let clean = validate(&example("lit-transform.shbin"), &[]);
    assert_eq!(clean.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&clean.stdout)
            .ends_with("lit-transform.shbin: 1 DVLE(s) checked, 0 error(s), 0 warning(s)\n")
    );

    // Reading r1 before writing it is a warning.
    let mut b = Builder::new();
    b.ops("add o0, v0, r1; end");
    let warned = temp_file("warned.shbin", &picajit::shbin::write(&single_dvle(&b)));
    let output = validate(&warned, &[]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{text}");
    let line = text.lines().next().unwrap();
    assert!(
        line.ends_with(
            "warned.shbin: DVLE 0: 0x000: warning: r1.xyzw read before being written on some path \
             (zero here; on the hardware whatever an earlier vertex left)"
        ),
        "{text}"
    );

    // Two consecutive MOVA freeze the GPU: an error.
    let mut b = Builder::new();
    b.ops("mova a0.x, v0; mova a0.y, v0; add o0, v0, v0; end");
    let broken = temp_file("broken.shbin", &picajit::shbin::write(&single_dvle(&b)));
    let output = validate(&broken, &["--dvle", "0"]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(3), "{text}");
    assert!(
        text.contains("broken.shbin: DVLE 0: 0x000: error: "),
        "{text}"
    );
    assert!(
        text.lines()
            .last()
            .unwrap()
            .contains("1 DVLE(s) checked, 1 error(s)"),
        "{text}"
    );

    let output = validate(&broken, &["--dvle", "2"]);
    assert_usage_error(
        &output,
        "there is no DVLE 2 (the file has 1, numbered from 0)",
    );
}

#[test]
fn names_from_a_file_are_escaped_when_printed() {
    let mut shbin = lit_transform_example();
    shbin.dvles[0].uniforms[5].name = "light\nDir\x1b[2J".to_string();
    shbin.dvles[0].rebuild_symbols();
    let path = temp_file("evil-names.shbin", &picajit::shbin::write(&shbin));

    let output = picajit(&["disasm", path.to_str().unwrap()]);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(!text.contains('\x1b'), "{text}");
    assert!(text.contains(".fvec light\\nDir\\x1b[2J"), "{text}");

    // --source cannot declare the name: one line on stderr, escaped.
    let output = picajit(&["disasm", "--source", path.to_str().unwrap()]);
    assert_usage_error(
        &output,
        "uniform name 'light\\nDir\\x1b[2J' cannot be declared",
    );

    // The input's error about an unknown name lists the names escaped.
    let input = temp_file("evil.json", br#"{"uniforms": {"nope": [1]}}"#);
    let output = run_program(&path, &input, &[]);
    assert_usage_error(&output, "projection[4], light\\nDir\\x1b[2J");
}

/// A three-frame trace whose top screen shows, at the end of frame k, a framebuffer that is
/// black but for one red pixel at screen column k·100 of the top row (each frame loads its
/// own framebuffer and swaps to it).
fn three_frame_screens() -> PathBuf {
    use picajit::gpu::builder::SceneBuilder;
    use picajit::gpu::framebuffer::color::ColorFormat;
    use picajit::gpu::framebuffer::display::Screen;
    use picajit::gpu::framebuffer::memory::FCRAM;
    use picajit::gpu::front::trace::TraceOp;
    let mut scene = SceneBuilder::new();
    for k in 0..3u32 {
        let address = FCRAM.start + k * 0x10_0000;
        let mut bytes = vec![0u8; 400 * 240 * 3];
        // Column x is memory row x; the top row of the screen is a row's last pixel. RGB8's
        // bytes are b, g, r.
        let at = ((k * 100 * 240 + 239) * 3) as usize;
        bytes[at + 2] = 255;
        scene.op(TraceOp::MemoryLoad { address, bytes });
        scene.present(
            Screen::Top,
            address,
            ColorFormat::Rgb8,
            (240, 400),
            k % 2 == 1,
        );
        scene.end_frame();
    }
    temp_file(
        "three-frames.ctf",
        &picajit::gpu::front::trace::write(&scene.finish()),
    )
}

/// Where the red pixels of a screen image are.
fn red_pixels(path: &Path) -> Vec<(u32, u32)> {
    let (width, _, pixels) = read_png(path);
    (0..pixels.len() as u32)
        .filter(|&k| pixels[k as usize] == [255, 0, 0, 255])
        .map(|k| (k % width, k / width))
        .collect()
}

/// `picajit render TRACE --screen top EXTRA... -o OUT`, which must succeed.
fn render_top_screen(trace: &str, extra: &[&str], out: &Path) {
    let mut args = vec!["render", trace, "--screen", "top"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-o", out.to_str().unwrap()]);
    let output = picajit(&args);
    assert!(output.status.success(), "{output:?}");
}

#[test]
fn render_writes_what_a_screen_shows_for_one_frame_or_a_range() {
    let trace = three_frame_screens();
    let trace = trace.to_str().unwrap();
    let dir = std::env::temp_dir().join(format!("picajit-cli-{}", std::process::id()));
    // The end of the trace, and the end of frame 1.
    let last = dir.join("screen-last.png");
    render_top_screen(trace, &[], &last);
    assert_eq!(read_png(&last).0, 400);
    assert_eq!(red_pixels(&last), [(200, 0)]);
    let one = dir.join("screen-1.png");
    render_top_screen(trace, &["--frame", "1"], &one);
    assert_eq!(red_pixels(&one), [(100, 0)]);
    // Frames 0 and 1 into a folder, one PNG each, nothing for frame 2.
    let frames = dir.join("frames");
    render_top_screen(trace, &["--frames", "0..2"], &frames);
    assert_eq!(red_pixels(&frames.join("frame-0000.png")), [(0, 0)]);
    assert_eq!(red_pixels(&frames.join("frame-0001.png")), [(100, 0)]);
    assert!(!frames.join("frame-0002.png").exists());
    render_top_screen(trace, &["--frames", "2.."], &frames);
    assert_eq!(red_pixels(&frames.join("frame-0002.png")), [(200, 0)]);
}

#[test]
fn render_rejects_frames_beyond_the_trace_and_screens_never_written() {
    let trace = three_frame_screens();
    let trace = trace.to_str().unwrap();
    let out = std::env::temp_dir().join(format!("picajit-cli-{}/bad", std::process::id()));
    let out = out.to_str().unwrap();
    let output = picajit(&["render", trace, "--frames", "1..=3", "-o", out]);
    assert_usage_error(&output, "--frames 1..=3: the trace has 3 frames");
    let output = picajit(&["render", trace, "--frame", "3", "-o", out]);
    assert_usage_error(&output, "--frame 3: the trace has 3 frames");
    let output = picajit(&["render", trace, "--frames", "2..1", "-o", out]);
    assert_eq!(output.status.code(), Some(2));
    let output = picajit(&["render", trace, "--screen", "bottom", "-o", out]);
    assert_usage_error(&output, "the bottom screen has no framebuffer");
    // With --frames, -o is a folder whatever the range: a PNG's name is refused, not made a
    // folder of that name.
    let png = format!("{out}.png");
    let output = picajit(&["render", trace, "--frames", "0", "-o", &png]);
    assert_usage_error(&output, "with --frames it names the folder");
    assert!(!Path::new(&png).exists(), "{png} was made");
}

/// `render --fragment-path general` writes the same image as the default, and `--timings`
/// counts the fragments on each path: the lit cube (vertex colours through a REPLACE
/// combiner) on the primary-colour path, or all on the general one.
#[test]
fn render_counts_the_fragment_paths_and_general_draws_the_same_image() {
    let scene = root().join("corpus/scenes/lit-cube.ctf");
    let scene = scene.to_str().unwrap();
    let dir = std::env::temp_dir().join(format!("picajit-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let image = |path: &str| {
        let out = dir.join(format!("lit-cube-{path}.png"));
        let output = picajit(&[
            "render",
            scene,
            "--timings",
            "--fragment-path",
            path,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{output:?}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        let line = stdout
            .lines()
            .find(|line| line.starts_with("fragment paths: "))
            .unwrap_or_else(|| panic!("no fragment paths line in {stdout}"))
            .to_string();
        (read_png(&out), line)
    };
    let (specialised, line) = image("specialised");
    assert!(
        line.starts_with("fragment paths: primary colour "),
        "{line}"
    );
    assert!(!line.contains("general"), "{line}");
    let (general, line) = image("general");
    assert!(line.starts_with("fragment paths: general "), "{line}");
    assert!(specialised == general);
    let output = picajit(&["render", scene, "--fragment-path", "fast", "-o", "x.png"]);
    assert_eq!(output.status.code(), Some(2));
}

/// Writes `text` to a fresh file in the test's temporary folder.
fn shard_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("picajit-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `picajit merge FILES...`, which must succeed; its stdout.
fn merge_ok(files: &[&Path]) -> String {
    let mut args = vec!["merge"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let output = picajit(&args);
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// `difftest --shard K/N --json` over three shards, merged, is the unsharded run's line byte
/// for byte (every mode's programs, invocations and mismatches); two shards alone are not.
#[test]
fn difftest_shards_merge_into_the_unsharded_run() {
    let run = |shard: &str| {
        let output = picajit(&[
            "difftest",
            "--programs",
            "40",
            "--seed",
            "5",
            "--precision",
            "all",
            "--threads",
            "2",
            "--shard",
            shard,
            "--json",
            "--out",
            std::env::temp_dir()
                .join("picajit-shards")
                .to_str()
                .unwrap(),
        ]);
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let whole = run("0/1");
    let document: serde_json::Value = serde_json::from_str(&whole).unwrap();
    assert_eq!(document["modes"].as_array().unwrap().len(), 3);
    assert_eq!(document["modes"][0]["programs"], 40);
    let shards: Vec<PathBuf> = (0..3)
        .map(|k| shard_file(&format!("difftest-{k}.json"), &run(&format!("{k}/3"))))
        .collect();
    let paths: Vec<&Path> = shards.iter().map(PathBuf::as_path).collect();
    assert_eq!(merge_ok(&paths), whole);
    // Concatenated lines merge the same way, in any order.
    let text: String = [2, 0, 1]
        .iter()
        .map(|&k| std::fs::read_to_string(&shards[k]).unwrap())
        .collect();
    assert_eq!(merge_ok(&[&shard_file("difftest-all.json", &text)]), whole);
    let partial = merge_ok(&paths[..2]);
    let partial: serde_json::Value = serde_json::from_str(&partial).unwrap();
    assert_eq!(
        partial["modes"][0]["programs"], 27,
        "programs 0, 1, 3, 4, ... of 40"
    );
    // The same shard twice is refused.
    let output = picajit(&[
        "merge",
        paths[0].to_str().unwrap(),
        paths[0].to_str().unwrap(),
    ]);
    assert_usage_error(&output, "shard 0/3 comes twice");
}

/// A bench run kept short: few vertices, one round, two engines.
const QUICK_BENCH: [&str; 6] = [
    "--vertices",
    "100",
    "--repeat",
    "1",
    "--engine",
    "interp,vinterp",
];

/// `bench --shard K/N --json` measures disjoint jobs; merged, they are the unsharded run's
/// jobs in order.
#[test]
fn bench_shards_merge_into_the_jobs_of_the_unsharded_run() {
    let run = |shard: &str| {
        let program = example("lit-transform.shbin");
        let input = example("lit-transform.json");
        let mut args = vec![
            program.to_str().unwrap(),
            "--input",
            input.to_str().unwrap(),
        ];
        args.extend(QUICK_BENCH);
        args.extend(["--precision", "all", "--shard", shard, "--json"]);
        bench_ok(&args)
    };
    let jobs = |text: &str| -> Vec<(u64, String)> {
        let document: serde_json::Value = serde_json::from_str(text).unwrap();
        document["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["job"].as_u64().unwrap(), r["precision"].to_string()))
            .collect()
    };
    let whole = jobs(&run("0/1"));
    assert_eq!(whole.len(), 3);
    let first = run("0/2");
    let second = run("1/2");
    assert_eq!(jobs(&first).len(), 2, "jobs 0 and 2");
    let merged = merge_ok(&[
        &shard_file("bench-1.json", &second),
        &shard_file("bench-0.json", &first),
    ]);
    assert_eq!(jobs(&merged), whole);
    let document: serde_json::Value = serde_json::from_str(&merged).unwrap();
    assert_eq!(
        document["shards"],
        serde_json::json!({"count": 1, "indices": [0]})
    );
    assert_eq!(document["agree"], true);
}

/// `render --json` prints one line: the counts the summary prints, every pipeline stage (their
/// times adding up to the replay's), the fragment paths adding up to the fragments, the
/// throughput from the same counts and time, and with `--timings` the fragment stages.
#[test]
fn render_json_gives_the_summary_stages_paths_and_throughput() {
    let scene = root().join("corpus/scenes/lit-cube.ctf");
    let scene = scene.to_str().unwrap();
    let out = std::env::temp_dir().join(format!("picajit-cli-json-{}.png", std::process::id()));
    let out = out.to_str().unwrap();
    let summary = picajit(&["render", scene, "-o", out]);
    let summary = String::from_utf8(summary.stdout).unwrap();
    let output = picajit(&[
        "render",
        scene,
        "--json",
        "--timings",
        "--threads",
        "1",
        "-o",
        out,
    ]);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let line: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let fragments = line["fragments"].as_u64().unwrap();
    assert!(
        summary.contains(&format!(", {fragments} fragments, ")),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("{} triangles, ", line["triangles"])),
        "{summary}"
    );
    assert_eq!(line["threads"], 1);
    let stages = line["stages"].as_object().unwrap();
    assert_eq!(stages.len(), 9);
    let total: f64 = stages.values().map(|s| s["ms"].as_f64().unwrap()).sum();
    let ms = line["ms"].as_f64().unwrap();
    assert!(
        (total - ms).abs() <= ms * 1e-6 + 1e-9,
        "{total} against {ms}"
    );
    assert_eq!(stages["fragments"]["items"], fragments);
    let paths: u64 = line["fragment_paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(paths, fragments);
    let rate = line["fragments_per_s"].as_f64().unwrap();
    let expected = fragments as f64 / (ms / 1e3);
    assert!(
        (rate - expected).abs() <= expected * 1e-6,
        "{rate} against {expected}"
    );
    assert!(
        line["fragment_stages"]["combiners"]["timed"]
            .as_u64()
            .unwrap()
            > 0
    );
}

/// `bench` on a scene replays it per engine and thread count: its counts are what `render`
/// prints, every picture is the interpreter's; a program and a scene in one run are two jobs,
/// and the two shards of the run merge into both.
#[test]
fn bench_measures_scenes_as_jobs_after_the_programs() {
    let scene = root().join("corpus/scenes/lit-cube.ctf");
    let scene = scene.to_str().unwrap();
    let summary = picajit(&[
        "render",
        scene,
        "-o",
        shard_file("bench-scene.png", "").to_str().unwrap(),
    ]);
    let summary = String::from_utf8(summary.stdout).unwrap();
    let program = root().join("corpus/programs/simple-transform");
    let run = |shard: &str| {
        let mut args = vec![program.to_str().unwrap(), scene, "--dvle", "0"];
        args.extend(QUICK_BENCH);
        args.extend(["--threads", "2", "--shard", shard, "--json"]);
        bench_ok(&args)
    };
    let whole: serde_json::Value = serde_json::from_str(&run("0/1")).unwrap();
    assert_eq!(whole["results"].as_array().unwrap().len(), 1);
    let scenes = whole["scenes"].as_array().unwrap();
    assert_eq!(scenes.len(), 1);
    let measured = &scenes[0];
    assert_eq!(measured["job"], 1, "after the program's one job");
    let fragments = measured["fragments"].as_u64().unwrap();
    assert!(
        summary.contains(&format!(", {fragments} fragments, ")),
        "{summary}"
    );
    let engines = measured["engines"].as_array().unwrap();
    assert_eq!(engines.len(), 2);
    for engine in engines {
        assert_eq!(engine["same_picture"], true, "{engine}");
        assert!(engine["ms"].as_f64().unwrap() > 0.0);
        assert!(engine["threaded"]["speedup"].is_f64(), "{engine}");
    }
    let (first, second) = (run("0/2"), run("1/2"));
    let merged = merge_ok(&[
        &shard_file("bench-scene-1.json", &second),
        &shard_file("bench-scene-0.json", &first),
    ]);
    let merged: serde_json::Value = serde_json::from_str(&merged).unwrap();
    assert_eq!(merged["results"].as_array().unwrap().len(), 1);
    assert_eq!(merged["scenes"][0]["job"], 1);
    assert_eq!(merged["scenes"][0]["fragments"], fragments);
}
