//! Rules about the repository itself: data flows one way through the library's modules
//! (docs/architecture.md), and every integration test file is a test target.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The library's top-level modules, lowest layer first. A module may import only modules of a
/// strictly lower layer; modules of one layer (the two engines) never import each other.
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
    &["interp", "jit", "vinterp"],
    &["engine"],
    &["gpu"],
    &["document"],
    &["difftest"],
    &["cli", "capi"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable source folder") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
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
    path_references(code, "crate::")
}

/// The names that follow `prefix` in a piece of code: `prefix x::...` and every item of
/// `prefix {x, y::z, ...}` (but `self`).
fn path_references(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let after = &rest[at + prefix.len()..];
        let names: Vec<&str> = match after.strip_prefix('{') {
            Some(group) => group[..group.find('}').unwrap_or(group.len())]
                .split(',')
                .collect(),
            None => vec![after],
        };
        for name in names {
            let name: String = name
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != "self" {
                found.insert(name);
            }
        }
        rest = after;
    }
    found
}

/// The top-level module a source file belongs to (`src/jit/lower.rs` → `jit`), or `None` for
/// the crate root and the binary.
fn module_of(path: &Path) -> Option<String> {
    let relative = path.strip_prefix(root().join("src")).ok()?;
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_string())
}

#[test]
fn every_module_is_in_a_layer() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let modules: BTreeSet<String> = files.iter().filter_map(|p| module_of(p)).collect();
    for module in &modules {
        assert!(
            layer_of(module).is_some(),
            "src/{module} is in no layer: add it to LAYERS here and to docs/architecture.md"
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
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut violations = Vec::new();
    for path in &files {
        let Some(module) = module_of(path) else {
            continue;
        };
        let Some(own) = layer_of(&module) else {
            continue; // reported by every_module_is_in_a_layer
        };
        let code = code_of(&fs::read_to_string(path).expect("readable source"));
        for target in crate_references(&code) {
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

/// The software GPU's stages, lowest first (src/gpu/mod.rs, docs/gpu.md): a stage imports
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

/// The stages a GPU source file at `relative` (inside src/gpu) names: through
/// `crate::gpu::x`, and through `super::x` where `super` is the GPU's root.
fn gpu_references(relative: &Path, code: &str) -> BTreeSet<String> {
    let parts: Vec<&str> = relative.iter().map(|p| p.to_str().unwrap()).collect();
    // `super` is the GPU's root in a stage folder's mod.rs and in the root's own files.
    let super_is_root = parts.len() == 1 || parts.last() == Some(&"mod.rs");
    let mut found = path_references(code, "crate::gpu::");
    if super_is_root {
        // Not `super::super::`: the root's files have no such path.
        found.extend(path_references(code, "super::"));
    }
    found
}

#[test]
fn gpu_stages_import_only_stages_below_them() {
    let gpu = root().join("src").join("gpu");
    let mut files = Vec::new();
    rust_files(&gpu, &mut files);
    let mut stages = BTreeSet::new();
    let mut violations = Vec::new();
    for path in &files {
        let relative = path.strip_prefix(&gpu).unwrap();
        let first = relative.iter().next().unwrap().to_str().unwrap();
        let stage = first.strip_suffix(".rs").unwrap_or(first);
        if stage == "mod" {
            continue; // the root ties the stages together
        }
        stages.insert(stage.to_string());
        let Some(own) = gpu_stage_of(stage) else {
            violations.push(format!("src/gpu/{stage} is in no stage of GPU_STAGES"));
            continue;
        };
        let code = code_of(&fs::read_to_string(path).expect("readable source"));
        for name in gpu_references(relative, &code) {
            if name == stage {
                continue;
            }
            match gpu_stage_of(&name) {
                Some(theirs) if theirs >= own => violations.push(format!(
                    "src/gpu/{} ({stage}) imports {name}, which is not below it",
                    relative.display()
                )),
                Some(_) => {}
                None if name.starts_with(char::is_uppercase) => violations.push(format!(
                    "src/gpu/{} names the root's {name}: add it to GPU_ROOT_ITEMS",
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
        "use crate::gpu::raster::{self, Triangle};\nuse crate::gpu::{regs::id, Gpu};\n\
         use super::combiner::Sources; // crate::gpu::front in a comment\n",
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
}

/// Every `jit-tests/*.rs` file is a `[[test]]` target of Cargo.toml (with `autotests = false`,
/// a file that is not listed would silently never run).
#[test]
fn every_test_file_is_a_test_target() {
    let manifest = fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let listed: BTreeSet<String> = manifest
        .lines()
        .filter_map(|line| {
            let value = line.trim().strip_prefix("path = \"jit-tests/")?;
            Some(value.trim_end_matches('"').to_string())
        })
        .collect();
    let mut missing = Vec::new();
    for entry in fs::read_dir(root().join("jit-tests")).expect("jit-tests/") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "rs") {
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            if !listed.contains(&name) {
                missing.push(name);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "jit-tests files that are not [[test]] targets in Cargo.toml: {missing:?}"
    );
}
