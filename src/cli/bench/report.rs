//! The report: the settings line, the table with its legend and agreement line, or the JSON
//! document.

use super::*;

pub(super) fn settings_line(options: &Options, programs: usize) -> String {
    let precisions: Vec<&str> = options.precisions.iter().map(|p| p.name()).collect();
    let engines: Vec<&str> = options.engines.iter().map(|e| e.name()).collect();
    format!(
        "picajit bench: {programs} DVLE run(s); precision {}; engines {}; {} vertices (geometry \
         shaders: invocations) per run, vertex batches of at most {ONE_THREAD_BATCH} (one thread) and {BATCH} (threads); {} thread(s); best of \
         {}, engines interleaved\n",
        precisions.join(", "),
        engines.join(", "),
        options.count,
        options.threads,
        options.repeat
    )
}
pub(super) fn table_report(
    results: &[JobResult],
    options: &Options,
    overall: Option<u64>,
    disagreements: &[String],
) -> String {
    let threads = options.threads;
    let mut rows = vec![vec![
        "program".to_string(),
        "dvle".to_string(),
        "stage".to_string(),
        "words".to_string(),
        "precision".to_string(),
        "engine".to_string(),
        "ready ms".to_string(),
        "compile ms".to_string(),
        "cache hit us".to_string(),
        "1 thread".to_string(),
        "rate".to_string(),
        if threads > 1 {
            format!("{threads} threads")
        } else {
            "threads".to_string()
        },
        "speed-up".to_string(),
        "peak memory".to_string(),
        "exact".to_string(),
    ]];
    let right = [
        false, true, false, true, false, false, true, true, true, true, true, true, true, false,
    ];
    for result in results {
        let unit = result.unit();
        for (i, engine) in result.engines.iter().enumerate() {
            let mark = if result.fastest == Some(i) { "*" } else { " " };
            let (threaded, speedup) = match engine.threaded {
                Some(t) => (
                    format!("{:.1} ns/{unit}", nanos_each(options.count, t)),
                    format!(
                        "{:.2}x",
                        engine.single.as_secs_f64() / t.as_secs_f64().max(1e-12)
                    ),
                ),
                None => ("-".to_string(), "-".to_string()),
            };
            rows.push(vec![
                result.name.clone(),
                result.dvle.to_string(),
                result.stage.name().to_string(),
                format!("{}/{}", result.code_words, result.reachable_words),
                result.precision.name().to_string(),
                format!("{mark} {}", engine.kind.name()),
                format!("{:.3}", engine.ready.as_secs_f64() * 1e3),
                format!("{:.3}", engine.compile.as_secs_f64() * 1e3),
                format!("{:.2}", engine.cache_hit.as_secs_f64() * 1e6),
                format!("{:.1} ns/{unit}", nanos_each(options.count, engine.single)),
                rate(per_second(options.count, engine.single)),
                threaded,
                speedup,
                mib(engine.peak),
                if engine.exact { "yes" } else { "NO" }.to_string(),
            ]);
        }
    }
    let mut text = settings_line(options, results.len());
    text.push('\n');
    text += &layout(&rows, &right);
    text.push('\n');
    text += &format!(
        "* the fastest exact engine (one thread) of each program and precision; exact: agrees bit \
         for bit with {} (the reference). words: code/reachable. rate: vertices (or \
         invocations) per second on one thread.\n",
        reference().name()
    );
    for result in results.iter().filter(|r| r.stage == ShaderKind::Geometry) {
        text += &format!(
            "{} DVLE {} (geometry shader, {}): {} invocations per run (draws of {}), {} vertices \
             emitted per run\n",
            result.name,
            result.dvle,
            result.precision,
            options.count,
            result.fixture_len,
            result.emitted.unwrap_or(0)
        );
    }
    let same = results
        .iter()
        .all(|r| r.engines.iter().all(|e| e.cache_same));
    text += &format!(
        "cache: each engine prepared once through a program cache, then {HIT_ROUNDS} identical \
         uploads: {}\n",
        if same {
            "every hit returned the same program"
        } else {
            "A HIT RETURNED A DIFFERENT PROGRAM"
        }
    );
    text += &format!("peak memory: {} (VmHWM over the whole run)\n", mib(overall));
    if disagreements.is_empty() {
        text += &format!(
            "agreement: every engine agrees bit for bit with {} on every vertex and invocation\n",
            reference().name()
        );
    } else {
        for line in disagreements {
            text += &format!("ENGINES DISAGREE: {line}\n");
        }
    }
    text
}

pub(super) fn json_report(
    results: &[JobResult],
    scenes: &[scenes::SceneResult],
    options: &Options,
    overall: Option<u64>,
) -> String {
    let programs: Vec<Value> = results
        .iter()
        .map(|result| {
            let speed_key = match result.stage {
                ShaderKind::Vertex => "ns_per_vertex",
                ShaderKind::Geometry => "ns_per_invocation",
            };
            let rate_key = match result.stage {
                ShaderKind::Vertex => "vertices_per_s",
                ShaderKind::Geometry => "invocations_per_s",
            };
            let engines: Vec<Value> = result
                .engines
                .iter()
                .enumerate()
                .map(|(i, engine)| {
                    let mut entry = serde_json::Map::new();
                    entry.insert("engine".into(), json!(engine.kind.name()));
                    entry.insert(
                        "compile_ms".into(),
                        json!(engine.compile.as_secs_f64() * 1e3),
                    );
                    entry.insert("ready_ms".into(), json!(engine.ready.as_secs_f64() * 1e3));
                    entry.insert(
                        "cache_hit_us".into(),
                        json!(engine.cache_hit.as_secs_f64() * 1e6),
                    );
                    entry.insert(
                        speed_key.into(),
                        json!(nanos_each(options.count, engine.single)),
                    );
                    entry.insert(
                        rate_key.into(),
                        json!(per_second(options.count, engine.single)),
                    );
                    entry.insert(
                        "threaded".into(),
                        match engine.threaded {
                            Some(t) => json!({
                                "threads": options.threads,
                                speed_key: nanos_each(options.count, t),
                                rate_key: per_second(options.count, t),
                                "speedup": engine.single.as_secs_f64() / t.as_secs_f64().max(1e-12),
                            }),
                            None => Value::Null,
                        },
                    );
                    entry.insert("peak_memory_bytes".into(), json!(engine.peak));
                    entry.insert("exact".into(), json!(engine.exact));
                    entry.insert("cache_hit_same".into(), json!(engine.cache_same));
                    entry.insert("fastest".into(), json!(result.fastest == Some(i)));
                    Value::Object(entry)
                })
                .collect();
            json!({
                "job": result.job,
                "program": result.name,
                "path": result.path,
                "dvle": result.dvle,
                "stage": result.stage.name(),
                "precision": result.precision.name(),
                "code_words": result.code_words,
                "reachable_words": result.reachable_words,
                "fixture_len": result.fixture_len,
                "emitted_per_run": result.emitted,
                "agree": result.agree(),
                "engines": engines,
            })
        })
        .collect();
    let document = json!({
        "kind": "bench",
        "shards": {"count": options.shard.count, "indices": [options.shard.index]},
        "settings": {
            "count": options.count,
            "vertex_batch": ONE_THREAD_BATCH,
            "threads_vertex_batch": BATCH,
            "threads": options.threads,
            "repeat": options.repeat,
            "precisions": options.precisions.iter().map(|p| p.name()).collect::<Vec<_>>(),
            "engines": options.engines.iter().map(|e| e.name()).collect::<Vec<_>>(),
            "reference": reference().name(),
        },
        "results": programs,
        "scenes": scenes::json(scenes),
        "agree": results.iter().all(JobResult::agree) && scenes.iter().all(|s| s.agree()),
        "peak_memory_bytes": overall,
    });
    // One line: the shards of a run concatenate into JSON lines (`picajit merge` joins them).
    let mut text = document.to_string();
    text.push('\n');
    text
}
