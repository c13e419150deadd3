//! The C ABI (docs/c-abi.md): the hand-kept header `include/picajit.h` declares exactly the
//! functions `src/capi/` exports, with as many parameters; a C program (`jit-tests/c/smoke.c`)
//! compiled against the header and linked with the static library runs programs, checks their
//! outputs and error paths; the header compiles as C++.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::files_under;
use picajit::capi;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The number of parameters in a parameter list's text: top-level commas, `void` or nothing
/// being none.
fn parameter_count(list: &str) -> usize {
    let list = list.trim();
    if list.is_empty() || list == "void" {
        return 0;
    }
    let mut depth = 0i32;
    let mut count = 1;
    for c in list.chars() {
        match c {
            '(' | '[' | '<' | '{' => depth += 1,
            ')' | ']' | '>' | '}' => depth -= 1,
            ',' if depth == 0 => count += 1,
            _ => {}
        }
    }
    // A trailing comma (rustfmt's multi-line lists) is not a parameter.
    if list.trim_end().ends_with(',') {
        count -= 1;
    }
    count
}

/// The text from just after `open` (an opening parenthesis at `text[at]`) to its match.
fn parenthesised(text: &str, at: usize) -> &str {
    let mut depth = 0;
    for (i, c) in text[at..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return &text[at + 1..at + i];
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced parentheses after byte {at}");
}

/// The exported functions of the Rust files under `src/capi/`: name → parameter count. An
/// export is an `extern "C" fn` right after `#[unsafe(no_mangle)]`.
fn exported_functions() -> BTreeMap<String, usize> {
    let mut found = BTreeMap::new();
    let files = files_under(&root().join("src/capi"), "rs");
    for file in files {
        let text = fs::read_to_string(&file).expect("readable source");
        let mut rest = 0;
        while let Some(at) = text[rest..].find("#[unsafe(no_mangle)]") {
            let start = rest + at;
            let fn_at = start
                + text[start..]
                    .find("fn picajit_")
                    .expect("a picajit_ function");
            let name_at = fn_at + "fn ".len();
            let paren = name_at + text[name_at..].find('(').expect("a parameter list");
            let name = text[name_at..paren].trim().to_string();
            let between = &text[start + "#[unsafe(no_mangle)]".len()..fn_at];
            assert!(
                between.contains("extern \"C\""),
                "{}: {name} is not an extern \"C\" fn",
                file.display()
            );
            let count = parameter_count(parenthesised(&text, paren));
            assert!(
                found.insert(name.clone(), count).is_none(),
                "{name} exported twice"
            );
            // Its error messages start with its own name.
            let body_end = text[paren..]
                .find("#[unsafe(no_mangle)]")
                .map_or(text.len(), |i| paren + i);
            let body = &text[paren..body_end];
            assert!(
                !body.contains("guard") || body.contains(&format!("\"{name}\"")),
                "{}: {name} reports its errors under another name",
                file.display()
            );
            rest = paren;
        }
    }
    found
}

/// The functions `include/picajit.h` declares: each declaration starts with `PICAJIT_API`.
fn declared_functions() -> BTreeMap<String, usize> {
    let text = fs::read_to_string(root().join("include/picajit.h")).expect("the header");
    let mut found = BTreeMap::new();
    let mut rest = 0;
    while let Some(at) = text[rest..].find("PICAJIT_API ") {
        let start = rest + at;
        let paren = start + text[start..].find('(').expect("a parameter list");
        let name_start = text[..paren]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let name = text[name_start..paren].to_string();
        let count = parameter_count(parenthesised(&text, paren));
        assert!(
            found.insert(name.clone(), count).is_none(),
            "{name} declared twice"
        );
        rest = paren;
    }
    found
}

#[test]
fn the_parameter_counter_reads_c_and_rust_lists() {
    assert_eq!(parameter_count("void"), 0);
    assert_eq!(parameter_count(""), 0);
    assert_eq!(parameter_count("const float inputs[16][4], float *out"), 2);
    assert_eq!(
        parameter_count("\n    a: *const u32,\n    b: Option<fn(u32, u32)>,\n"),
        2
    );
}

#[test]
fn the_header_declares_exactly_the_exported_functions() {
    let exported = exported_functions();
    let declared = declared_functions();
    assert!(exported.len() >= 30, "found only {exported:?}");
    for (name, count) in &exported {
        match declared.get(name) {
            None => panic!("{name} is exported by src/capi but not declared in include/picajit.h"),
            Some(declared) => assert_eq!(
                declared, count,
                "{name}: {count} parameters in src/capi, {declared} in include/picajit.h"
            ),
        }
    }
    for name in declared.keys() {
        assert!(
            exported.contains_key(name),
            "{name} is declared in include/picajit.h but src/capi does not export it"
        );
    }
}

#[test]
fn the_header_states_the_library_constants() {
    let header = fs::read_to_string(root().join("include/picajit.h")).expect("the header");
    let constants = [
        ("PICAJIT_ABI_VERSION", format!("{}u", capi::ABI_VERSION)),
        ("PICAJIT_OK", capi::OK.to_string()),
        (
            "PICAJIT_ERROR_NULL_POINTER",
            format!("({})", capi::ERROR_NULL_POINTER),
        ),
        (
            "PICAJIT_ERROR_BAD_ARGUMENT",
            format!("({})", capi::ERROR_BAD_ARGUMENT),
        ),
        (
            "PICAJIT_ERROR_BAD_PROGRAM",
            format!("({})", capi::ERROR_BAD_PROGRAM),
        ),
        (
            "PICAJIT_ERROR_BAD_SHBIN",
            format!("({})", capi::ERROR_BAD_SHBIN),
        ),
        (
            "PICAJIT_ERROR_COMPILE",
            format!("({})", capi::ERROR_COMPILE),
        ),
        ("PICAJIT_ERROR_PANIC", format!("({})", capi::ERROR_PANIC)),
        (
            "PICAJIT_ERROR_BREAK_OUTSIDE_LOOP",
            format!("({})", capi::ERROR_BREAK_OUTSIDE_LOOP),
        ),
        (
            "PICAJIT_ERROR_INSTRUCTION_BUDGET",
            format!("({})", capi::ERROR_INSTRUCTION_BUDGET),
        ),
        (
            "PICAJIT_ERROR_INVALID_EMIT_VERTEX",
            format!("({})", capi::ERROR_INVALID_EMIT_VERTEX),
        ),
        (
            "PICAJIT_ERROR_INTERNAL",
            format!("({})", capi::ERROR_INTERNAL),
        ),
        ("PICAJIT_ENGINE_BEST", format!("{}u", capi::ENGINE_BEST)),
        ("PICAJIT_ENGINE_INTERP", format!("{}u", capi::ENGINE_INTERP)),
        ("PICAJIT_ENGINE_JIT", format!("{}u", capi::ENGINE_JIT)),
        (
            "PICAJIT_ENGINE_SOA_JIT",
            format!("{}u", capi::ENGINE_SOA_JIT),
        ),
        (
            "PICAJIT_ENGINE_VINTERP",
            format!("{}u", capi::ENGINE_VINTERP),
        ),
        ("PICAJIT_ENGINE_AUTO", format!("{}u", capi::ENGINE_AUTO)),
        ("PICAJIT_COMPILE_READY", format!("{}u", capi::COMPILE_READY)),
        (
            "PICAJIT_COMPILE_FAILED",
            format!("{}u", capi::COMPILE_FAILED),
        ),
        ("PICAJIT_COMPILE_COLD", format!("{}u", capi::COMPILE_COLD)),
        (
            "PICAJIT_COMPILE_RUNNING",
            format!("{}u", capi::COMPILE_RUNNING),
        ),
    ];
    for (name, value) in constants {
        let line = format!("#define {name} {value}");
        assert!(
            header.lines().any(|l| l.starts_with(&line)),
            "include/picajit.h lacks `{line}`"
        );
    }
}

/// The folder the test binary and the library were built into (`target/release`): the test
/// runs from `target/release/deps`.
fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("the deps folder");
    deps.parent().expect("the profile folder").to_path_buf()
}

/// The static library built with the test: rustc writes it to `deps/` (`cargo build` copies it
/// up to the profile folder, `cargo test` does not, so the copy there may be stale).
fn static_library() -> PathBuf {
    let dir = build_dir();
    let candidates = [dir.join("deps/libpicajit.a"), dir.join("libpicajit.a")];
    candidates
        .iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no libpicajit.a in {} (Cargo.toml's [lib] crate-type has staticlib)",
                dir.display()
            )
        })
        .clone()
}

fn run(command: &mut Command) -> std::process::Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn struct_sizes() -> Vec<String> {
    [
        ("program", size_of::<capi::Program>()),
        ("config", size_of::<capi::Config>()),
        ("layout", size_of::<capi::Layout>()),
        ("dvle_info", size_of::<capi::DvleInfo>()),
        ("cache_stats", size_of::<capi::CacheStats>()),
        ("flow", size_of::<capi::Flow>()),
        ("vertex_error", size_of::<capi::VertexError>()),
        ("batch", size_of::<capi::Batch>()),
        ("vertices", size_of::<capi::Vertices>()),
        ("emit_callbacks", size_of::<capi::EmitCallbacks>()),
        ("translate_options", size_of::<capi::TranslateOptions>()),
        ("translation_info", size_of::<capi::TranslationInfo>()),
    ]
    .iter()
    .map(|(name, size)| format!("{name}={size}"))
    .collect()
}

/// What `rustc --print native-static-libs` lists for the static library.
const SYSTEM_LIBRARIES: [&str; 7] = [
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

/// Compiles `jit-tests/c/smoke.c` to `name`, linked as `link` adds, and returns its path.
fn compile_smoke(name: &str, link: impl FnOnce(&mut Command)) -> PathBuf {
    let out_dir = build_dir().join("c-abi");
    fs::create_dir_all(&out_dir).expect("an output folder");
    let binary = out_dir.join(name);
    let mut command = Command::new("cc");
    command
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg("-I")
        .arg(root().join("include"))
        .arg(root().join("jit-tests/c/smoke.c"));
    link(&mut command);
    run(command.arg("-o").arg(&binary));
    binary
}

#[test]
fn a_c_program_runs_shaders_through_the_static_library() {
    let binary = compile_smoke("smoke-static", |command| {
        command.arg(static_library()).args(SYSTEM_LIBRARIES);
    });
    check_smoke_run(&binary);
}

#[test]
fn a_c_program_runs_shaders_through_the_shared_library() {
    let library = static_library();
    let dir = library.parent().expect("the library's folder");
    assert!(
        dir.join("libpicajit.so").is_file(),
        "no libpicajit.so beside {} (Cargo.toml's [lib] crate-type has cdylib)",
        library.display()
    );
    let binary = compile_smoke("smoke-shared", |command| {
        command
            .arg("-L")
            .arg(dir)
            .arg("-lpicajit")
            .arg(format!("-Wl,-rpath,{}", dir.display()));
    });
    check_smoke_run(&binary);
}

/// Runs the compiled smoke program and checks that every one of its checks passed.
fn check_smoke_run(binary: &Path) {
    // Cargo's LD_LIBRARY_PATH for tests names the profile folder, whose libpicajit.so
    // `cargo test` does not refresh; it would win over the rpath.
    let output = run(Command::new(binary)
        .env_remove("LD_LIBRARY_PATH")
        .arg(root().join("corpus/examples/lit-transform.shbin"))
        .args(struct_sizes()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        !stdout.contains("FAILED"),
        "the C program reported failures:\n{stdout}"
    );
    for expected in [
        "ok: every output of every vertex is the value its instructions give",
        "ok: the interpreter's outputs equal the best engine's bit for bit",
        "ok: an output stride smaller than the count is PICAJIT_ERROR_BAD_ARGUMENT",
        "ok: five of ten vertices fail (v0.x < 0)",
        "ok: error entries: vertices 0, 1, 2, break-outside-loop at 0x002",
        "ok: no entry written past the capacity",
        "ok: run_vertex: o0 = v0 converted by the mode, on every engine",
        "ok: run_batch: o0 = v0 converted by the mode, on every engine and vertex",
        "ok: the blob's words are the program its DVLE prepares (a cache hit, the same outputs)",
        "ok: set_floats sets what 96 set_float calls set",
        "ok: the word formats in bulk set what single calls set",
        "ok: uniforms converted under f32 are refused by an f24 engine",
        "ok: 8 vertices and 4 triangles in all",
        "ok: triangle 2 is (v0, v3, v2), winding inverted",
        "ok: sizeof(picajit_batch) is",
        "ok: sizeof(picajit_vertices) is",
        "ok: o0 and o2 equal the planes' bit for bit",
        "ok: translate: GLSL 3.30 with its own main, varyings, no statement comments",
        "ok: translate: ES 3.00, an entry function, globals, comments with the DVLE's names",
        "ok: translate: a geometry shader, its state block of 98 vectors, its max_vertices",
        "ok: translate: a geometry shader in GLSL ES 3.00 is PICAJIT_ERROR_UNSUPPORTED",
        "ok: translate: a geometry shader in SPIR-V is a Geometry entry point with the GLSL's interface",
        "ok: uniforms_block: c1's bits, i2.x, the bools and zero where the info says",
        "ok: registers outside the output mask (o1, o3-o15) keep what they held",
        "ok: vertices without v3, which the program reads, are refused naming v3",
        "ok: a program run little is not compiled yet (cold)",
        "ok: after waiting, everything is compiled (ready)",
        "smoke: ",
    ] {
        assert!(
            stdout.contains(expected),
            "missing `{expected}` in:\n{stdout}"
        );
    }
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("smoke: "))
        .expect("a summary");
    assert!(summary.ends_with(", 0 failed"), "{summary}");
}

fn has_compiler(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_header_compiles_as_c_and_cxx() {
    let header = root().join("include/picajit.h");
    run(Command::new("cc")
        .args([
            "-std=c99",
            "-pedantic",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-fsyntax-only",
        ])
        .args(["-x", "c"])
        .arg(&header));
    if !has_compiler("c++") {
        eprintln!("no c++ compiler: the C++ check is skipped");
        return;
    }
    for standard in ["-std=c++11", "-std=c++17"] {
        run(Command::new("c++")
            .args([
                standard,
                "-pedantic",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-fsyntax-only",
            ])
            .args(["-x", "c++"])
            .arg(&header));
    }
}

/// The smoke program exists where the documentation says (a moved file fails here, not as a
/// compiler error in the test above).
/// The C++ face (include/picajit.hpp) from C++17: `jit-tests/c/smoke.cpp` compiled with every
/// warning an error, linked against the static library and run; every check it makes must pass,
/// the one for an exception thrown by a geometry callback included. Skipped (with a message)
/// where no C++ compiler is installed, as the C++ header check is.
#[test]
fn a_cxx_program_runs_shaders_through_the_cxx_header() {
    if !has_compiler("c++") {
        eprintln!("no c++ compiler: the C++ program is skipped");
        return;
    }
    let out_dir = build_dir().join("c-abi");
    fs::create_dir_all(&out_dir).expect("an output folder");
    let binary = out_dir.join("smoke-cpp");
    run(Command::new("c++")
        .args([
            "-std=c++17",
            "-pedantic",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-O1",
        ])
        .arg("-I")
        .arg(root().join("include"))
        .arg(root().join("jit-tests/c/smoke.cpp"))
        .arg(static_library())
        .args(SYSTEM_LIBRARIES)
        .arg("-o")
        .arg(&binary));
    let output = run(Command::new(&binary)
        .env_remove("LD_LIBRARY_PATH")
        .arg(root().join("corpus/examples/lit-transform.shbin")));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        !stdout.contains("FAILED"),
        "the C++ program reported failures:\n{stdout}"
    );
    for expected in [
        "ok: c96 throws picajit::error: PICAJIT_ERROR_BAD_ARGUMENT, a message naming c96",
        "ok: run_vertex: o0 = v0 as a float24 (0.1f enters as 0x3DCCCC80)",
        "ok: a failing vertex throws an execution error (break-outside-loop)",
        "ok: run_batch returns the failed vertices (2) and runs the others",
        "ok: a SHBIN's DVLE and its words through a cache: one compile, one hit",
        "ok: std::function callbacks receive 4 vertices and 2 triangles, the second inverted",
        "ok: a callback's exception comes out of run_geometry, later emissions dropped",
        "ok: the state runs on after a callback threw",
        "ok: a translation's source and interface (v0-v3 in, o0-o2 out)",
        "ok: the uniform block holds c95.y's bits where the interface says",
        "ok: a geometry shader translates to a GLSL geometry shader",
        "ok: a geometry shader's translation to GLSL ES 3.00 throws PICAJIT_ERROR_UNSUPPORTED",
        "smoke-cpp: ",
    ] {
        assert!(
            stdout.contains(expected),
            "missing `{expected}` in:\n{stdout}"
        );
    }
}

#[test]
fn the_c_sources_are_where_the_docs_say() {
    for path in [
        "jit-tests/c/smoke.c",
        "jit-tests/c/smoke.cpp",
        "include/picajit.h",
        "include/picajit.hpp",
        "docs/c-abi.md",
    ] {
        assert!(Path::new(&root().join(path)).is_file(), "{path} is missing");
    }
}

/// One engine and one cache shared by threads through the C functions (docs/c-abi.md,
/// threading): every thread uploads the same program through the cache (one compile) and runs
/// batches on the shared engine and uniforms.
#[test]
fn engines_caches_and_uniforms_are_shared_between_threads() {
    use std::ptr::null_mut;

    // mov o0, v0; end (descriptor 0: all lanes, identity swizzles)
    let code = [0x4C00_0000u32, 0x8800_0000];
    let opdescs = [0x36Fu32];
    let program = capi::Program {
        code: code.as_ptr(),
        code_len: code.len(),
        opdescs: opdescs.as_ptr(),
        opdesc_len: opdescs.len(),
        entry: 0,
        stage: 0,
        output_mask: 1,
    };
    let mut cache = null_mut();
    let mut uniforms = null_mut();
    // SAFETY: valid out pointers.
    unsafe {
        assert_eq!(capi::picajit_cache_create(0, &mut cache), capi::OK);
        assert_eq!(capi::picajit_uniforms_create(&mut uniforms), capi::OK);
    }
    // Raw pointers are not Send; the handles are documented as shareable, so pass addresses.
    let (cache_at, uniforms_at, program_at) = (
        cache as usize,
        uniforms as usize,
        &program as *const capi::Program as usize,
    );
    std::thread::scope(|scope| {
        for t in 0..4 {
            scope.spawn(move || {
                let mut engine = null_mut();
                // SAFETY: the program, its code and the cache outlive the scope.
                let status = unsafe {
                    capi::picajit_engine_create(
                        program_at as *const capi::Program,
                        std::ptr::null(),
                        cache_at as *const capi::ProgramCacheHandle,
                        &mut engine,
                    )
                };
                assert_eq!(status, capi::OK);
                const N: usize = 64;
                let inputs: Vec<f32> = (0..4 * N).map(|k| (k + t) as f32).collect();
                let mut outputs = vec![0.0f32; 4 * N];
                let batch = capi::Batch {
                    count: N,
                    inputs: inputs.as_ptr(),
                    input_mask: 1,
                    input_stride: N,
                    outputs: outputs.as_mut_ptr(),
                    output_mask: 1,
                    output_stride: N,
                    flow: null_mut(),
                    errors: null_mut(),
                    error_capacity: 0,
                };
                for _ in 0..20 {
                    // SAFETY: the buffers have the extents the batch states.
                    let failed = unsafe {
                        capi::picajit_run_batch(
                            engine,
                            uniforms_at as *const capi::UniformsHandle,
                            &batch,
                        )
                    };
                    assert_eq!(failed, 0);
                    assert_eq!(outputs, inputs, "o0 = v0");
                }
                // SAFETY: made above, freed once.
                unsafe { capi::picajit_engine_free(engine) };
            });
        }
    });
    let mut stats = capi::CacheStats::default();
    // SAFETY: live handles, freed once.
    unsafe {
        assert_eq!(capi::picajit_cache_get_stats(cache, &mut stats), capi::OK);
        capi::picajit_uniforms_free(uniforms);
        capi::picajit_cache_free(cache);
    }
    assert_eq!((stats.compiles, stats.misses + stats.hits), (1, 4));
}
