//! The bench's batching, reports and folder rule.

use std::sync::Mutex;

use super::*;
use crate::document::input::parse_input;
use crate::exec::VertexResult;
use crate::interp::Interpreter;
use crate::program::InputRegisters;

/// The interpreter, noting the length and buffers of every batch it is given.
struct Recording {
    inner: Interpreter,
    batches: Mutex<Vec<(usize, usize, usize)>>,
}

impl ShaderEngine for Recording {
    fn name(&self) -> &'static str {
        "recording"
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
        inputs: &InputRegisters,
    ) -> Result<VertexResult, ExecError> {
        self.inner.run_vertex(uniforms, inputs)
    }
    fn run_batch(
        &self,
        uniforms: &Uniforms,
        io: &mut BatchIo<'_>,
        errors: &mut Vec<(usize, ExecError)>,
    ) {
        self.batches.lock().unwrap().push((
            io.count(),
            io.inputs.data().as_ptr() as usize,
            io.outputs.base_ptr() as usize,
        ));
        self.inner.run_batch(uniforms, io, errors);
    }
    fn run_geometry(
        &self,
        state: &mut GeometryState,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        sink: &mut dyn EmitSink,
    ) -> Result<(), ExecError> {
        self.inner.run_geometry(state, uniforms, inputs, sink)
    }
}

fn program() -> ShaderProgram {
    let shbin = crate::asm::assemble(
        &[crate::asm::SourceFile {
            name: "t.pica".into(),
            text: ".out o position\n.proc main\nmov o, v0\nend\n.end\n".into(),
        }],
        crate::asm::AsmOptions::default(),
    )
    .unwrap()
    .shbin;
    ShaderProgram::from_shbin(&shbin, 0).unwrap()
}

fn vertices(text: &str) -> RunInput {
    parse_input(text, Precision::F24Truncate, ShaderKind::Vertex).unwrap()
}

#[test]
fn vertex_runs_reuse_one_buffer_in_batches_of_at_most_2048() {
    let program = program();
    let input = vertices(r#"{"vertices": [{"v0": [1]}, {"v0": [2]}, {"v0": [3]}]}"#);
    let count = 3 * BATCH as u64 + 5;
    let mut run = VertexRun::new(&program, &input, Uniforms::default(), count);
    let engine = Recording {
        inner: Interpreter::new(program.clone(), ExecConfig::default()),
        batches: Mutex::new(Vec::new()),
    };
    run.pass(&engine, 1, None);
    let mut hasher = Xxh3Default::new();
    run.pass(&engine, 1, Some(&mut hasher));
    let batches = engine.batches.into_inner().unwrap();
    let lengths: Vec<usize> = batches.iter().map(|b| b.0).collect();
    let one_thread = BATCH / ONE_THREAD_BATCH;
    let expected: Vec<usize> = std::iter::repeat_n(ONE_THREAD_BATCH, 3 * one_thread)
        .chain([5])
        .collect();
    assert_eq!(lengths, expected.repeat(2));
    // Every batch reads the one input buffer and writes the one output buffer (the first
    // batch starts them), a whole number of batches from their start.
    let in_buffer = |b: &(usize, usize, usize)| {
        [(b.1, batches[0].1), (b.2, batches[0].2)]
            .iter()
            .all(|&(at, start)| {
                let vertices = at.wrapping_sub(start) / size_of::<f32>();
                at >= start && vertices < BATCH && vertices.is_multiple_of(ONE_THREAD_BATCH)
            })
    };
    assert!(batches.iter().all(in_buffer));

    // The digest covers the inputs in order: a different order differs.
    let digest = hasher.digest128();
    let reordered = vertices(r#"{"vertices": [{"v0": [2]}, {"v0": [1]}, {"v0": [3]}]}"#);
    let mut other = VertexRun::new(&program, &reordered, Uniforms::default(), count);
    let mut hasher = Xxh3Default::new();
    other.pass(&engine.inner, 1, Some(&mut hasher));
    assert_ne!(digest, hasher.digest128());
    // And threads give the same bits.
    let mut hasher = Xxh3Default::new();
    run.pass(&engine.inner, 3, Some(&mut hasher));
    assert_eq!(digest, hasher.digest128());
}

/// A folder is a program folder by its fixtures, never by how many sources it holds: two
/// sources that each define `main` without a fixture are skipped (they assembled as one
/// program before), the same two with fixtures in folders of their own are two programs,
/// and a program folder's subfolders and SHBIN files are searched as any folder's.
#[test]
fn a_program_folder_is_one_with_fixtures() {
    let root = std::env::temp_dir().join(format!("picajit-bench-rule-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let source = ".out o position\n.proc main\n    mov o, v0\n    end\n.end\n";
    let fixture = r#"{"vertices": [{"v0": [1, 2, 3, 1]}]}"#;
    let write = |path: &str, text: &str| {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("loose/a.v.pica", source);
    write("loose/b.v.pica", source);
    write("one/0-main.v.pica", source);
    write("one/dvle0.input.json", fixture);
    write("one/nested/0-main.v.pica", source);
    write("one/nested/dvle0.input.json", fixture);
    let shbin = asm::assemble(
        &[SourceFile {
            name: "s.v.pica".into(),
            text: source.into(),
        }],
        AsmOptions::default(),
    )
    .unwrap()
    .shbin;
    std::fs::write(root.join("one/extra.shbin"), crate::shbin::write(&shbin)).unwrap();
    write("one/extra.json", fixture);

    let found = |path: &str| {
        let mut options = options();
        options.paths = vec![root.join(path)];
        let mut scenes = Vec::new();
        targets(&options, &mut scenes).map(|targets| {
            targets
                .iter()
                .map(|t| format!("{}:{}", t.name, t.dvle))
                .collect::<Vec<_>>()
        })
    };
    let loose = found("loose").expect_err("sources without fixtures are no program");
    assert!(loose.to_string().contains("holds no SHBIN file"), "{loose}");
    assert_eq!(
        found("one").unwrap(),
        ["one:0", "extra.shbin:0", "nested:0"]
    );
    assert_eq!(found("").unwrap(), ["one:0", "extra.shbin:0", "nested:0"]);
    std::fs::remove_dir_all(&root).unwrap();
}

fn options() -> Options {
    Options {
        paths: Vec::new(),
        input: None,
        dvle: None,
        precisions: vec![Precision::F24Truncate],
        engines: EngineKind::ALL.to_vec(),
        count: 1000,
        threads: 2,
        repeat: 1,
        json: false,
        shard: Shard::WHOLE,
    }
}

/// A result whose last engine disagrees with the reference.
fn disagreeing() -> JobResult {
    let engine = |kind, exact, micros| EngineResult {
        kind,
        ready: Duration::from_micros(5),
        compile: Duration::from_micros(5),
        cache_hit: Duration::from_nanos(1500),
        cache_same: true,
        single: Duration::from_micros(micros),
        threaded: Some(Duration::from_micros(micros / 2)),
        peak: None,
        exact,
    };
    let last = EngineKind::ALL.len() - 1;
    JobResult {
        job: 0,
        name: "p".into(),
        path: "dir/p".into(),
        dvle: 0,
        stage: ShaderKind::Vertex,
        precision: Precision::F24Truncate,
        code_words: 3,
        reachable_words: 3,
        fixture_len: 1,
        emitted: None,
        // The disagreeing engine is the quickest, but only exact ones can be the fastest.
        engines: EngineKind::ALL
            .iter()
            .enumerate()
            .map(|(i, &kind)| engine(kind, i != last, 100 - i as u64))
            .collect(),
        fastest: Some(0),
    }
}

#[test]
fn a_disagreement_is_loud() {
    let result = disagreeing();
    assert!(!result.agree());
    let line = "p DVLE 0 in f24: x differ from interp".to_string();
    let text = table_report(std::slice::from_ref(&result), &options(), None, &[line]);
    assert!(text.contains("ENGINES DISAGREE: p DVLE 0"), "{text}");
    assert!(text.contains("  NO\n"), "{text}");
    assert!(!text.contains("agreement: every engine agrees"), "{text}");
    assert!(text.contains("peak memory: n/a"), "{text}");
    let json: Value = serde_json::from_str(&json_report(&[result], &[], &options(), None)).unwrap();
    assert_eq!(json["agree"], false);
    assert_eq!(json["results"][0]["engines"][0]["fastest"], true);
    assert_eq!(json["peak_memory_bytes"], Value::Null);
    assert_eq!(
        json["results"][0]["engines"][0]["threaded"]["ns_per_vertex"],
        50.0
    );
}

#[test]
fn the_table_lays_out_columns() {
    let rows = vec![
        vec!["a".to_string(), "1".to_string()],
        vec!["bbb".to_string(), "100".to_string()],
    ];
    assert_eq!(layout(&rows, &[false, true]), "a      1\nbbb  100\n");
}
