//! Rules about the repository itself: data flows one way through the library's modules, across
//! the workspace's crates and inside the GPU (docs/architecture.md, docs/gpu.md), and every
//! integration test file is a test target.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

mod common;

use common::files_under;

/// The library's top-level modules, lowest layer first. A module may import only modules of a
/// strictly lower layer; modules of one layer (the engines) never import each other.
const LAYERS: &[&[&str]] = &[
    &["float24"],
    &["numbers"],
    &["isa"],
    &["shbin"],
    &["program"],
    &["flow"],
    &["validate"],
    &["asm"],
    &["exec"],
    &["interp", "jit", "vinterp", "translate"],
    &["engine"],
    &["gpu"],
    &["document"],
    &["difftest"],
    &["extract"],
    &["cli", "capi"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The text of a Rust file without its comments (`//` to the end of a line), so that a doc link
/// to another module is not mistaken for an import.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules a piece of code names through `crate::`: `crate::x::...` and every
/// item of `crate::{x, y::z, ...}`.
fn crate_references(code: &str) -> BTreeSet<String> {
    prefixed_references(code, "crate::")
}

/// Where the modules live: each crate's source folder, and the module its files make (`None`:
/// each top-level entry of the folder is a module of its own).
const SOURCES: &[(&str, Option<&str>)] = &[
    ("src", None),
    ("crates/shader/src", None),
    ("crates/jit/src", Some("jit")),
    ("crates/vinterp/src", Some("vinterp")),
    ("crates/translate/src", Some("translate")),
    ("crates/engine/src", Some("engine")),
    ("crates/gpu/src", Some("gpu")),
];

/// Every Rust file of the library with the crate source folder it is in.
fn library_files() -> Vec<(PathBuf, &'static (&'static str, Option<&'static str>))> {
    let mut out = Vec::new();
    for source in SOURCES {
        let files = files_under(&root().join(source.0), "rs");
        out.extend(files.into_iter().map(|file| (file, source)));
    }
    out
}

/// The top-level module a source file belongs to (`crates/shader/src/isa/decode.rs` → `isa`,
/// `crates/jit/src/scalar/lower/mod.rs` → `jit`), or `None` for a crate root that is no module of
/// its own and the binary.
fn module_of(path: &Path, (folder, module): &(&str, Option<&str>)) -> Option<String> {
    if let Some(module) = module {
        return Some(module.to_string());
    }
    let relative = path.strip_prefix(root().join(folder)).ok()?;
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_string())
}

/// The modules a file names: through `crate::` where the crate is made of modules (the shader
/// model, this package), and by crate name (`shader::x`, `jit::`, `vinterp::`, `engine::`,
/// `gpu::`) at the start of a path.
fn references(code: &str, (_, module): &(&str, Option<&str>)) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    if module.is_none() {
        found.extend(crate_references(code));
    }
    found.extend(prefixed_references(code, "shader::"));
    for (_, crate_module) in SOURCES {
        let Some(name) = crate_module else { continue };
        let path = format!("{name}::");
        let mut rest = code;
        while let Some(at) = rest.find(&path) {
            if starts_path(rest, at) {
                found.insert(name.to_string());
            }
            rest = &rest[at + path.len()..];
        }
    }
    found
}

/// Whether the text at `at` starts a path (is not the end of a longer name or path).
fn starts_path(text: &str, at: usize) -> bool {
    let before = text[..at].chars().next_back();
    !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// The names that follow `prefix` where it starts a path: `prefix x::...` and every item of
/// `prefix {x, y::z, ...}`.
fn prefixed_references(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let after = &rest[at + prefix.len()..];
        if starts_path(rest, at) {
            let names: Vec<&str> = match after.strip_prefix('{') {
                Some(group) => group[..group.find('}').unwrap_or(group.len())]
                    .split(',')
                    .collect(),
                None => vec![after],
            };
            for name in names {
                let name = ident(name);
                if !name.is_empty() && name != "self" {
                    found.insert(name);
                }
            }
        }
        rest = after;
    }
    found
}

#[test]
fn every_module_is_in_a_layer() {
    let modules: BTreeSet<String> = library_files()
        .iter()
        .filter_map(|(path, source)| module_of(path, source))
        .collect();
    for module in &modules {
        assert!(
            layer_of(module).is_some(),
            "module {module} is in no layer: add it to LAYERS here and to docs/architecture.md"
        );
    }
    for layer in LAYERS {
        for module in *layer {
            assert!(
                modules.contains(*module),
                "LAYERS names {module}, which is gone"
            );
        }
    }
}

#[test]
fn modules_import_only_lower_layers() {
    let mut violations = Vec::new();
    for (path, source) in &library_files() {
        let Some(module) = module_of(path, source) else {
            continue;
        };
        let Some(own) = layer_of(&module) else {
            continue; // reported by every_module_is_in_a_layer
        };
        let code = code_of(&fs::read_to_string(path).expect("readable source"));
        for target in references(&code, source) {
            if target == module {
                continue;
            }
            if let Some(theirs) = layer_of(&target)
                && theirs >= own
            {
                violations.push(format!(
                    "{} ({module}) imports {target}, which is not below it",
                    path.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "data must flow one way (docs/architecture.md):\n{}",
        violations.join("\n")
    );
}

/// The software GPU's stages, lowest first (crates/gpu/src/lib.rs, docs/gpu.md): a stage imports
/// only the stages below it. The front end drives the geometry stage and the rasterizer, the
/// rasterizer calls the fragment stages, every stage reads the register file and memory.
const GPU_STAGES: &[&[&str]] = &[
    &["regs"],
    &["framebuffer"],
    &["fragment"],
    &["raster"],
    &["geometry"],
    &["front"],
    &["builder", "fuzz"],
];

/// What the GPU's root re-exports, by the stage that defines it.
const GPU_ROOT_ITEMS: &[(&str, &str)] = &[
    ("Gpu", "front"),
    ("GpuConfig", "front"),
    ("GpuError", "front"),
    ("GpuStats", "front"),
    ("ListEnd", "front"),
    ("StageTimes", "front"),
    ("Triangle", "raster"),
];

fn gpu_stage_of(name: &str) -> Option<usize> {
    let name = GPU_ROOT_ITEMS
        .iter()
        .find(|(item, _)| *item == name)
        .map_or(name, |(_, stage)| stage);
    GPU_STAGES.iter().position(|layer| layer.contains(&name))
}

/// The stages a GPU source file at `relative` (inside crates/gpu/src) names: through
/// `crate::x`, and through `super::x` where `super` is the GPU's root.
fn gpu_references(relative: &Path, code: &str) -> BTreeSet<String> {
    let parts: Vec<&str> = relative.iter().map(|p| p.to_str().unwrap()).collect();
    // `super` is the GPU's root in a stage folder's mod.rs and in the root's own files.
    let super_is_root = parts.len() == 1 || parts.last() == Some(&"mod.rs");
    let mut found = prefixed_references(code, "crate::");
    if super_is_root {
        // Not `super::super::`: the root's files have no such path.
        found.extend(prefixed_references(code, "super::"));
    }
    found
}

#[test]
fn gpu_stages_import_only_stages_below_them() {
    let gpu = root().join("crates/gpu/src");
    let files = files_under(&gpu, "rs");
    let mut stages = BTreeSet::new();
    let mut violations = Vec::new();
    for path in &files {
        let relative = path.strip_prefix(&gpu).unwrap();
        let first = relative.iter().next().unwrap().to_str().unwrap();
        let stage = first.strip_suffix(".rs").unwrap_or(first);
        if stage == "lib" {
            continue; // the root ties the stages together
        }
        stages.insert(stage.to_string());
        let Some(own) = gpu_stage_of(stage) else {
            violations.push(format!(
                "crates/gpu/src/{stage} is in no stage of GPU_STAGES"
            ));
            continue;
        };
        let code = code_of(&fs::read_to_string(path).expect("readable source"));
        for name in gpu_references(relative, &code) {
            if name == stage {
                continue;
            }
            match gpu_stage_of(&name) {
                Some(theirs) if theirs >= own => violations.push(format!(
                    "crates/gpu/src/{} ({stage}) imports {name}, which is not below it",
                    relative.display()
                )),
                Some(_) => {}
                None if name.starts_with(char::is_uppercase) => violations.push(format!(
                    "crates/gpu/src/{} names the root's {name}: add it to GPU_ROOT_ITEMS",
                    relative.display()
                )),
                None => {}
            }
        }
    }
    for layer in GPU_STAGES {
        for stage in *layer {
            assert!(
                stages.contains(*stage),
                "GPU_STAGES names {stage}, which is gone"
            );
        }
    }
    assert!(
        violations.is_empty(),
        "the GPU's stages import only those below them (docs/gpu.md, \"Layout\"):\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_gpu_scan_resolves_super_by_place() {
    let code = code_of(
        "use crate::raster::{self, Triangle};\nuse crate::{regs::id, Gpu};\n\
         use super::combiner::Sources; // crate::front in a comment\n",
    );
    let in_folder: Vec<String> = gpu_references(Path::new("fragment/ops.rs"), &code)
        .into_iter()
        .collect();
    assert_eq!(in_folder, ["Gpu", "raster", "regs"]);
    let at_root: Vec<String> = gpu_references(Path::new("fragment/mod.rs"), &code)
        .into_iter()
        .collect();
    assert_eq!(at_root, ["Gpu", "combiner", "raster", "regs"]);
    assert_eq!(gpu_stage_of("Gpu"), gpu_stage_of("front"));
    assert!(gpu_stage_of("raster") > gpu_stage_of("fragment"));
}

#[test]
fn the_import_scan_sees_every_form() {
    let code = code_of(
        "use crate::exec::ExecConfig;\nuse crate::{isa, flow::step};\n\
         let x = crate::jit::JitShader::compile(p); // crate::cli in a comment\n",
    );
    let found: Vec<String> = crate_references(&code).into_iter().collect();
    assert_eq!(found, ["exec", "flow", "isa", "jit"]);
    // In a crate that is one module, `crate::` is itself and other crates go by name.
    let code = code_of(
        "use shader::exec::ExecConfig;\nuse shader::{isa, flow::step};\nuse crate::run::x;\n\
         let e = engine::prepare(k); let j = vinterp::Wide; my_jit::x(); a::gpu::b();\n",
    );
    let found: Vec<String> = references(&code, &("crates/gpu/src", Some("gpu")))
        .into_iter()
        .collect();
    assert_eq!(found, ["engine", "exec", "flow", "isa", "vinterp"]);
}

/// Every `jit-tests/*.rs` file is a `[[test]]` target of Cargo.toml (with `autotests = false`,
/// a file that is not listed would silently never run).
#[test]
fn every_test_file_is_a_test_target() {
    let listed = manifest_paths("Cargo.toml", "jit-tests/");
    let missing: Vec<String> = rust_file_names("jit-tests")
        .into_iter()
        .filter(|name| !listed.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "jit-tests files that are not [[test]] targets in Cargo.toml: {missing:?}"
    );
}

/// The file names a manifest's `path = "FOLDER..."` lines give, without the folder.
fn manifest_paths(manifest: &str, folder: &str) -> BTreeSet<String> {
    let text = fs::read_to_string(root().join(manifest)).expect(manifest);
    let prefix = format!("path = \"{folder}");
    text.lines()
        .filter_map(|line| {
            let value = line.trim().strip_prefix(prefix.as_str())?;
            Some(value.trim_end_matches('"').to_string())
        })
        .collect()
}

/// The names of the `.rs` files directly in `folder`.
fn rust_file_names(folder: &str) -> BTreeSet<String> {
    fs::read_dir(root().join(folder))
        .expect(folder)
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| path.file_name().unwrap().to_str().unwrap().to_string())
        .collect()
}

/// ClusterFuzzLite builds what `cargo fuzz list` names (`.clusterfuzzlite/build.sh`): every
/// target file in fuzz/fuzz_targets must be a `[[bin]]` of fuzz/Cargo.toml, or continuous
/// fuzzing silently skips it; and the three files ClusterFuzzLite reads are there, for Rust.
#[test]
fn every_fuzz_target_is_built_for_continuous_fuzzing() {
    let listed = manifest_paths("fuzz/Cargo.toml", "fuzz_targets/");
    let targets = rust_file_names("fuzz/fuzz_targets");
    assert!(targets.len() >= 5, "{targets:?}");
    assert_eq!(
        targets, listed,
        "fuzz targets against fuzz/Cargo.toml's [[bin]]s"
    );
    let config = root().join(".clusterfuzzlite");
    let read = |name: &str| fs::read_to_string(config.join(name)).expect(name);
    assert!(
        read("project.yaml")
            .lines()
            .any(|l| l.trim() == "language: rust")
    );
    assert!(
        read("Dockerfile")
            .lines()
            .any(|l| l.trim() == "FROM gcr.io/oss-fuzz-base/base-builder-rust")
    );
    let build = read("build.sh");
    assert!(build.contains("cargo fuzz build") && build.contains("cargo fuzz list"));
    assert!(build.contains("$OUT"));
}

/// The most lines of a library source file: a file past it holds more than one concern and is
/// split along them (docs/architecture.md, "Layout"). Test files (`tests.rs`) are apart.
const MAX_FILE_LINES: usize = 1200;

#[test]
fn no_library_file_is_too_long_to_read() {
    let mut long = Vec::new();
    for (file, _) in library_files() {
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let lines = fs::read_to_string(&file).unwrap().lines().count();
        if lines > MAX_FILE_LINES {
            long.push(format!("{}: {lines} lines", file.display()));
        }
    }
    assert!(
        long.is_empty(),
        "library files over {MAX_FILE_LINES} lines (split them along their concerns):\n{}",
        long.join("\n")
    );
}

/// The sibling modules a file of a folder names through `super::NAME` (a file `NAME.rs` or a
/// folder `NAME/` beside it), comments left out.
fn sibling_references(file: &Path, siblings: &BTreeSet<String>) -> BTreeSet<String> {
    let code = code_of(&fs::read_to_string(file).unwrap());
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("super::") {
        let rest = &code[at + "super::".len()..];
        let mut names = vec![];
        if let Some(list) = rest.strip_prefix('{') {
            let end = list.find('}').unwrap_or(list.len());
            names.extend(list[..end].split(',').map(|item| item.trim()));
        } else {
            names.push(rest);
        }
        for name in names {
            let name: String = name
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if siblings.contains(&name) {
                found.insert(name);
            }
        }
    }
    found
}

#[test]
fn no_two_files_of_a_folder_import_each_other() {
    let mut cycles = Vec::new();
    let mut folders = BTreeSet::new();
    for (file, _) in library_files() {
        folders.insert(file.parent().unwrap().to_path_buf());
    }
    for folder in folders {
        // The modules of the folder: `NAME.rs` files (not mod.rs, lib.rs, main.rs) and folders.
        let mut modules = BTreeSet::new();
        for entry in fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            if path.is_dir()
                || (path.extension().is_some_and(|e| e == "rs")
                    && !["mod", "lib", "main"].contains(&name.as_str()))
            {
                modules.insert(name);
            }
        }
        let file_of = |name: &str| {
            let file = folder.join(format!("{name}.rs"));
            if file.is_file() {
                file
            } else {
                folder.join(name).join("mod.rs")
            }
        };
        for a in &modules {
            let a_file = file_of(a);
            if !a_file.is_file() {
                continue;
            }
            for b in sibling_references(&a_file, &modules) {
                if b > *a && sibling_references(&file_of(&b), &modules).contains(a) {
                    cycles.push(format!("{}: {a} <-> {b}", folder.display()));
                }
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "files of one folder that import each other (move what both need to where both can \
         import it):\n{}",
        cycles.join("\n")
    );
}
