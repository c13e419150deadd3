//! `picajit merge`: joins the `--json` lines of the shards of one `difftest` or `bench` run
//! (`--shard K/N`, [`Shard`]) into the line of the run they are parts of
//! (docs/architecture.md, "Runs past one machine").
//!
//! Every line must be of the same kind and have the same `settings`; no shard may come twice.
//! The shards' `indices` are joined (all N of them give the whole run, `0/1`); a difftest's
//! per-mode totals are summed and its mismatching programs and findings joined in program
//! order, so the merge of all the shards of a run is the unsharded run's line byte for byte;
//! a bench's results and scenes are joined in job order, `agree` holds when it holds for every shard and
//! the peak memory is the largest. Exit status 1 when the merged run has a mismatch or a
//! disagreement, as the run itself would.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};

use crate::difftest::shard::Shard;

use super::{CliError, print, read_text, warn};

/// One line read: the document and where it came from.
struct Line {
    path: PathBuf,
    number: usize,
    document: Value,
}

impl Line {
    fn error(&self, why: impl Into<String>) -> CliError {
        CliError::Merge {
            path: self.path.clone(),
            why: format!("document {}: {}", self.number, why.into()),
        }
    }

    fn field(&self, key: &str) -> Result<&Value, CliError> {
        self.document
            .get(key)
            .ok_or_else(|| self.error(format!("no `{key}` (not a --json line of picajit)")))
    }

    fn array(&self, key: &str) -> Result<&Vec<Value>, CliError> {
        self.field(key)?
            .as_array()
            .ok_or_else(|| self.error(format!("`{key}` is not an array")))
    }

    /// The shard count and indices.
    fn shards(&self) -> Result<(u64, Vec<u64>), CliError> {
        let shards = self.field("shards")?;
        let bad = || self.error("`shards` is not {\"count\": N, \"indices\": [K, ...]}");
        let count = shards
            .get("count")
            .and_then(Value::as_u64)
            .ok_or_else(bad)?;
        let indices = shards
            .get("indices")
            .and_then(Value::as_array)
            .ok_or_else(bad)?
            .iter()
            .map(|k| k.as_u64().filter(|&k| k < count).ok_or_else(bad))
            .collect::<Result<Vec<u64>, CliError>>()?;
        Ok((count, indices))
    }
}

/// Reads every JSON document of each file (`-`: standard input), in order.
fn read_lines(paths: &[PathBuf]) -> Result<Vec<Line>, CliError> {
    let mut lines = Vec::new();
    for path in paths {
        let text = if path == Path::new("-") {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|e| {
                CliError::Merge {
                    path: path.clone(),
                    why: format!("cannot read standard input: {e}"),
                }
            })?;
            text
        } else {
            read_text(path)?
        };
        let documents = serde_json::Deserializer::from_str(&text).into_iter::<Value>();
        let before = lines.len();
        for (k, document) in documents.enumerate() {
            let document = document.map_err(|e| CliError::Merge {
                path: path.clone(),
                why: format!("document {}: not JSON: {e}", k + 1),
            })?;
            lines.push(Line {
                path: path.clone(),
                number: k + 1,
                document,
            });
        }
        if lines.len() == before {
            // An empty shard file is a shard whose run failed before it printed its line.
            return Err(CliError::Merge {
                path: path.clone(),
                why: "holds no JSON document (was its run's --json line written?)".to_string(),
            });
        }
    }
    Ok(lines)
}

/// Runs `picajit merge`.
pub fn command(paths: &[PathBuf]) -> Result<ExitCode, CliError> {
    let lines = read_lines(paths)?;
    let (merged, failed) = merge(&lines)?;
    print(&format!("{merged}\n"))?;
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The merged document, and whether it has a mismatch or a disagreement.
fn merge(lines: &[Line]) -> Result<(Value, bool), CliError> {
    let Some(first) = lines.first() else {
        return Err(CliError::Merge {
            path: PathBuf::from("-"),
            why: "no JSON document to merge".to_string(),
        });
    };
    let kind = first
        .field("kind")?
        .as_str()
        .unwrap_or_default()
        .to_string();
    let settings = first.field("settings")?;
    let (count, _) = first.shards()?;
    let mut seen: BTreeSet<u64> = BTreeSet::new();
    for line in lines {
        if line.field("kind")?.as_str() != Some(&kind) {
            return Err(line.error(format!("not a `{kind}` line like the first")));
        }
        if line.field("settings")? != settings {
            return Err(line.error(format!(
                "its settings differ from those of {} (document {}): not shards of one run",
                first.path.display(),
                first.number
            )));
        }
        let (n, indices) = line.shards()?;
        if n != count {
            return Err(line.error(format!(
                "a shard of {n}, where the first is a shard of {count}"
            )));
        }
        for k in indices {
            if !seen.insert(k) {
                return Err(line.error(format!("shard {} comes twice", Shard { index: k, count })));
            }
        }
    }
    let mut merged = first.document.clone();
    let (merged_count, indices) = if seen.len() as u64 == count {
        (1, vec![0])
    } else {
        let missing: Vec<String> = (0..count)
            .filter(|k| !seen.contains(k))
            .map(|index| Shard { index, count }.to_string())
            .collect();
        warn(&format!(
            "picajit merge: shards missing: {} (the merged run is partial)",
            missing.join(", ")
        ));
        (count, seen.into_iter().collect())
    };
    merged["shards"] = json!({"count": merged_count, "indices": indices});
    let failed = match kind.as_str() {
        "difftest" => merge_difftest(lines, &mut merged)?,
        "bench" => merge_bench(lines, &mut merged)?,
        _ => return Err(first.error(format!("`kind` is `{kind}`: neither difftest nor bench"))),
    };
    Ok((merged, failed))
}

/// A difftest's modes (totals summed, mismatching programs joined) and findings (in mode
/// order, then program order). Returns whether there is a mismatch.
fn merge_difftest(lines: &[Line], merged: &mut Value) -> Result<bool, CliError> {
    let number = |line: &Line, value: &Value, key: &str| {
        value
            .get(key)
            .and_then(Value::as_u64)
            .ok_or_else(|| line.error(format!("a mode without a whole `{key}`")))
    };
    let precisions: Vec<String> = lines[0].array("modes")?.iter().map(precision_of).collect();
    let mut modes = Vec::new();
    let mut failed = false;
    for precision in &precisions {
        let mut totals = [0u64; 3];
        let mut not_run = 0u64;
        let mut forms = [0u64; 2];
        let mut mismatched = Vec::new();
        for line in lines {
            let mode = line
                .array("modes")?
                .iter()
                .find(|mode| &precision_of(mode) == precision)
                .ok_or_else(|| line.error(format!("no mode {precision}")))?;
            for (total, key) in totals
                .iter_mut()
                .zip(["programs", "invocations", "mismatches"])
            {
                *total += number(line, mode, key)?;
            }
            // Absent from lines of runs before engines could decline a program: none.
            not_run += mode.get("not_run").and_then(Value::as_u64).unwrap_or(0);
            for (total, key) in forms.iter_mut().zip(["translated", "general_form"]) {
                *total += mode.get(key).and_then(Value::as_u64).unwrap_or(0);
            }
            let indices = mode
                .get("mismatched")
                .and_then(Value::as_array)
                .ok_or_else(|| line.error("a mode without `mismatched`"))?;
            mismatched.extend(indices.iter().filter_map(Value::as_u64));
        }
        mismatched.sort_unstable();
        failed |= totals[2] > 0;
        modes.push(json!({
            "precision": precision,
            "programs": totals[0],
            "invocations": totals[1],
            "mismatches": totals[2],
            "not_run": not_run,
            "translated": forms[0],
            "general_form": forms[1],
            "mismatched": mismatched,
        }));
    }
    let mut findings = Vec::new();
    for line in lines {
        findings.extend(line.array("findings")?.iter().cloned());
    }
    findings.sort_by_key(|finding| {
        let precision = precision_of(finding);
        let mode = precisions.iter().position(|p| *p == precision);
        (mode, finding.get("index").and_then(Value::as_u64))
    });
    merged["modes"] = Value::Array(modes);
    merged["findings"] = Value::Array(findings);
    Ok(failed)
}

fn precision_of(value: &Value) -> String {
    value
        .get("precision")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A bench's results and scenes (each in job order), `agree` and the peak memory. Returns
/// whether an engine disagreed.
fn merge_bench(lines: &[Line], merged: &mut Value) -> Result<bool, CliError> {
    let mut results = Vec::new();
    let mut scenes = Vec::new();
    let mut agree = true;
    let mut peak: Option<u64> = None;
    for line in lines {
        results.extend(line.array("results")?.iter().cloned());
        if line.document.get("scenes").is_some() {
            scenes.extend(line.array("scenes")?.iter().cloned());
        }
        agree &= line.field("agree")?.as_bool().unwrap_or(false);
        if let Some(bytes) = line.field("peak_memory_bytes")?.as_u64() {
            peak = Some(peak.map_or(bytes, |p| p.max(bytes)));
        }
    }
    let job = |value: &Value| value.get("job").and_then(Value::as_u64);
    results.sort_by_key(job);
    scenes.sort_by_key(job);
    merged["results"] = Value::Array(results);
    if merged.get("scenes").is_some() {
        merged["scenes"] = Value::Array(scenes);
    }
    merged["agree"] = json!(agree);
    merged["peak_memory_bytes"] = json!(peak);
    Ok(!agree)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(number: usize, document: Value) -> Line {
        Line {
            path: PathBuf::from(format!("shard{number}.json")),
            number: 1,
            document,
        }
    }

    /// A difftest line of shard `k` of 2 over 10 programs: programs k, k + 2, ...; program 3
    /// (shard 1) mismatched in f32.
    fn difftest_shard(k: u64) -> Value {
        let f32_mismatched: Vec<u64> = if k == 1 { vec![3] } else { vec![] };
        let findings = if k == 1 {
            json!([{"precision": "f32", "index": 3, "report": "MISMATCH: program 3"}])
        } else {
            json!([])
        };
        json!({
            "kind": "difftest",
            "settings": {"seed": 7, "programs": 10, "precisions": ["f24", "f32"]},
            "shards": {"count": 2, "indices": [k]},
            "modes": [
                {"precision": "f24", "programs": 5, "invocations": 10 + k,
                 "mismatches": 0, "mismatched": []},
                {"precision": "f32", "programs": 5, "invocations": 20 + k,
                 "mismatches": f32_mismatched.len(), "mismatched": f32_mismatched},
            ],
            "findings": findings,
        })
    }

    #[test]
    fn difftest_shards_join_into_the_whole_run() {
        let lines = [line(1, difftest_shard(1)), line(0, difftest_shard(0))];
        let (merged, failed) = merge(&lines).unwrap();
        assert!(failed, "program 3 mismatched");
        assert_eq!(merged["shards"], json!({"count": 1, "indices": [0]}));
        assert_eq!(merged["modes"][0]["programs"], 10);
        assert_eq!(merged["modes"][0]["invocations"], 21);
        assert_eq!(merged["modes"][1]["invocations"], 41);
        assert_eq!(merged["modes"][1]["mismatches"], 1);
        assert_eq!(merged["modes"][1]["mismatched"], json!([3]));
        assert_eq!(merged["findings"][0]["index"], 3);
        assert_eq!(merged["settings"], difftest_shard(0)["settings"]);
        // One shard alone is a partial run: still shard indices of 2, no failure.
        let (partial, failed) = merge(&lines[1..]).unwrap();
        assert!(!failed);
        assert_eq!(partial["shards"], json!({"count": 2, "indices": [0]}));
    }

    #[test]
    fn lines_of_different_runs_are_refused_with_the_reason() {
        let mut other_seed = difftest_shard(1);
        other_seed["settings"]["seed"] = json!(8);
        let mut other_count = difftest_shard(1);
        other_count["shards"] = json!({"count": 3, "indices": [1]});
        let mut bench = difftest_shard(1);
        bench["kind"] = json!("bench");
        let mut beyond = difftest_shard(1);
        beyond["shards"] = json!({"count": 2, "indices": [2]});
        for (second, why) in [
            (other_seed, "settings differ"),
            (difftest_shard(0), "shard 0/2 comes twice"),
            (other_count, "a shard of 3, where the first is a shard of 2"),
            (bench, "not a `difftest` line"),
            (beyond, "`shards` is not"),
            (json!([1, 2]), "no `kind`"),
        ] {
            let lines = [line(0, difftest_shard(0)), line(1, second)];
            let error = merge(&lines).expect_err("refused").to_string();
            assert!(error.contains(why), "{error}");
            assert!(error.starts_with("shard1.json: document 1: "), "{error}");
        }
        assert!(merge(&[]).is_err());
    }

    #[test]
    fn an_empty_shard_file_is_named() {
        let dir = std::env::temp_dir().join(format!("picajit-merge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("difftest-1.json");
        std::fs::write(&empty, "").unwrap();
        let error = read_lines(std::slice::from_ref(&empty))
            .err()
            .expect("an empty file is refused")
            .to_string();
        assert!(error.starts_with(&empty.display().to_string()), "{error}");
        assert!(error.contains("holds no JSON document"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bench_shards_join_in_job_order() {
        let shard = |k: u64, jobs: &[u64], agree: bool, peak: Option<u64>| {
            let results: Vec<Value> = jobs.iter().map(|j| json!({"job": j})).collect();
            json!({
                "kind": "bench",
                "settings": {"count": 100},
                "shards": {"count": 2, "indices": [k]},
                "results": results,
                "agree": agree,
                "peak_memory_bytes": peak,
            })
        };
        let lines = [
            line(0, shard(1, &[1, 3], true, Some(5))),
            line(1, shard(0, &[0, 2, 4], false, Some(9))),
        ];
        let (merged, failed) = merge(&lines).unwrap();
        assert!(failed, "shard 0 disagreed");
        let jobs: Vec<u64> = merged["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["job"].as_u64().unwrap())
            .collect();
        assert_eq!(jobs, [0, 1, 2, 3, 4]);
        assert_eq!(merged["peak_memory_bytes"], 9);
        assert_eq!(merged["agree"], false);
    }
}
