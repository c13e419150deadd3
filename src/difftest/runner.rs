//! A whole differential run: N generated programs per precision mode, checked in parallel,
//! each mismatch shrunk and written as a reproducer, and a report that depends only on the
//! options (program `i` is generated from a seed derived from the run seed and `i`, and the
//! report lists programs in index order whatever the thread count).

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::exec::ExecConfig;
use crate::float24::Precision;

use super::DifftestError;
use super::case::TestCase;
use super::compare::{Differ, EngineFactory, describe};
use super::generate::{
    GeneratorOptions, MAX_PROGRAM_LEN, MAX_VERTEX_PROGRAM_LEN, MIN_PROGRAM_LEN, generate,
};
use super::reproducer::write_reproducer;
use super::rng::{Entropy, program_seed};
use super::shard::Shard;
use super::shrink::{DEFAULT_ATTEMPTS, shrink};

/// The instruction budget of every invocation: small, so programs that never end stop fast
/// (both engines must report the same budget error).
pub const DEFAULT_BUDGET: u64 = 5_000;

/// What a run does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// Programs per precision mode.
    pub programs: u64,
    /// The run seed.
    pub seed: u64,
    /// The precision modes, run one after the other on the same programs.
    pub precisions: Vec<Precision>,
    /// The most code words of a program (a vertex shader stops at 512).
    pub max_len: usize,
    /// The instruction budget of an invocation.
    pub budget: u64,
    /// Where reproducers go (with several modes, a folder per mode inside).
    pub out_dir: PathBuf,
    /// Worker threads (at least 1).
    pub threads: usize,
    /// Shrink mismatches before writing them (otherwise they are written as found).
    pub shrink: bool,
    /// The part of the run's programs checked here: program `i` when the shard contains `i`
    /// ([`Shard`]; the whole run by default).
    pub shard: Shard,
    /// Count the programs whose translation for host GPUs takes the general form
    /// ([`ModeSummary::general_form`]): set when a GPU engine is a candidate.
    pub count_forms: bool,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            programs: 1000,
            seed: 1,
            precisions: vec![Precision::F24Truncate],
            max_len: GeneratorOptions::default().max_len,
            budget: DEFAULT_BUDGET,
            out_dir: PathBuf::from("difftest-out"),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            shrink: true,
            shard: Shard::WHOLE,
            count_forms: false,
        }
    }
}

impl RunOptions {
    /// Checks the values an embedder or the command line gave.
    pub fn check(&self) -> Result<(), DifftestError> {
        if !(MIN_PROGRAM_LEN..=MAX_PROGRAM_LEN).contains(&self.max_len) {
            return Err(DifftestError::InvalidOption {
                option: "--max-len",
                message: format!(
                    "{} is outside {MIN_PROGRAM_LEN}..={MAX_PROGRAM_LEN} (program memory; vertex shaders stop at {MAX_VERTEX_PROGRAM_LEN}, picasso's limit)",
                    self.max_len
                ),
            });
        }
        if self.threads == 0 {
            return Err(DifftestError::InvalidOption {
                option: "--threads",
                message: "must be at least 1".to_string(),
            });
        }
        if self.budget == 0 {
            return Err(DifftestError::InvalidOption {
                option: "--budget",
                message: "must be at least 1".to_string(),
            });
        }
        if self.precisions.is_empty() {
            return Err(DifftestError::InvalidOption {
                option: "--precision",
                message: "no precision mode".to_string(),
            });
        }
        Ok(())
    }
}

/// One mismatching program, as reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The precision mode.
    pub precision: Precision,
    /// The program's index in the run.
    pub index: u64,
    /// The report: what differed, the reproducer files and command, both engines' outputs.
    pub report: String,
}

/// The totals of one precision mode.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModeSummary {
    /// Programs checked.
    pub programs: u64,
    /// Invocations run (on each engine).
    pub invocations: u64,
    /// Programs whose engines disagreed.
    pub mismatches: u64,
    /// Programs some engine does not run (geometry shaders on a device without them), checked
    /// on the others only.
    pub not_run: u64,
    /// Programs translated for host GPUs and run by every engine (with
    /// [`RunOptions::count_forms`]).
    pub translated: u64,
    /// Of those, the programs whose translation took the general form (the dispatch loop)
    /// rather than the structured one.
    pub general_form: u64,
}

impl ModeSummary {
    /// `N programs, M invocations, K mismatches`.
    pub fn line(&self) -> String {
        format!(
            "{} programs, {} invocations, {} mismatches",
            self.programs, self.invocations, self.mismatches
        )
    }
}

/// What a run found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunSummary {
    /// Per precision mode, in run order.
    pub modes: Vec<(Precision, ModeSummary)>,
    /// Every mismatch, by mode then program index.
    pub findings: Vec<Finding>,
}

impl RunSummary {
    /// The totals over every mode.
    pub fn total(&self) -> ModeSummary {
        self.modes
            .iter()
            .fold(ModeSummary::default(), |total, (_, mode)| ModeSummary {
                programs: total.programs + mode.programs,
                invocations: total.invocations + mode.invocations,
                mismatches: total.mismatches + mode.mismatches,
                not_run: total.not_run + mode.not_run,
                translated: total.translated + mode.translated,
                general_form: total.general_form + mode.general_form,
            })
    }

    /// The report for stdout: each finding, per-mode totals when there are several modes, and
    /// last the line `N programs, M invocations, K mismatches`.
    pub fn report(&self) -> String {
        let mut text = String::new();
        for finding in &self.findings {
            text += &finding.report;
            if !finding.report.ends_with('\n') {
                text.push('\n');
            }
        }
        if self.modes.len() > 1 {
            for (precision, mode) in &self.modes {
                text += &format!("{precision}: {}\n", mode.line());
            }
        }
        let not_run = self.total().not_run;
        if not_run > 0 {
            text += &format!(
                "{not_run} programs not run by every engine (geometry shaders on a device \
                 without them), checked on the others\n"
            );
        }
        let total = self.total();
        if total.translated > 0 {
            text += &format!(
                "{} of {} programs took the general form on the host GPU, the others the \
                 structured form\n",
                total.general_form, total.translated
            );
        }
        text += &total.line();
        text.push('\n');
        text
    }
}

impl RunSummary {
    /// The run as one line of JSON (`picajit difftest --json`; docs/architecture.md, "Runs past
    /// one machine"): `settings` (what decides which programs run and how: the seed, the run's
    /// program count, the modes, the program length, the budget, shrinking and `engines`), the
    /// `shards` checked (`count` and `indices`), per mode the totals and the indices of the
    /// mismatching programs, and each finding's report. Shards of one run merge into the
    /// unsharded run's line (`picajit merge`); nothing in it depends on the machine or the time.
    pub fn json(&self, options: &RunOptions, engines: &[&str]) -> String {
        let modes: Vec<serde_json::Value> = self
            .modes
            .iter()
            .map(|(precision, mode)| {
                let mismatched: Vec<u64> = self
                    .findings
                    .iter()
                    .filter(|f| f.precision == *precision)
                    .map(|f| f.index)
                    .collect();
                serde_json::json!({
                    "precision": precision.name(),
                    "programs": mode.programs,
                    "invocations": mode.invocations,
                    "mismatches": mode.mismatches,
                    "not_run": mode.not_run,
                    "translated": mode.translated,
                    "general_form": mode.general_form,
                    "mismatched": mismatched,
                })
            })
            .collect();
        let findings: Vec<serde_json::Value> = self
            .findings
            .iter()
            .map(|f| {
                serde_json::json!({
                    "precision": f.precision.name(),
                    "index": f.index,
                    "report": f.report,
                })
            })
            .collect();
        let document = serde_json::json!({
            "kind": "difftest",
            "settings": {
                "seed": options.seed,
                "programs": options.programs,
                "precisions": options.precisions.iter().map(|p| p.name()).collect::<Vec<_>>(),
                "max_len": options.max_len,
                "budget": options.budget,
                "shrink": options.shrink,
                "engines": engines,
            },
            "shards": {"count": options.shard.count, "indices": [options.shard.index]},
            "modes": modes,
            "findings": findings,
        });
        let mut line = document.to_string();
        line.push('\n');
        line
    }
}

/// Progress of a run, for a status line on stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The mode being run.
    pub precision: Precision,
    /// Programs done in this mode.
    pub done: u64,
    /// Programs in this mode.
    pub total: u64,
    /// Mismatches so far in this mode.
    pub mismatches: u64,
}

/// The test case of program `index` of a run.
pub fn case_for(seed: u64, index: u64, max_len: usize) -> TestCase {
    let mut entropy = Entropy::from_seed(program_seed(seed, index));
    let options = GeneratorOptions {
        max_len,
        ..GeneratorOptions::default()
    };
    generate(&mut entropy, &options)
}

/// Runs the differential test of the interpreter against each of `candidates` (every program
/// on every candidate; a program's finding is its first candidate's mismatch).
pub fn run(
    options: &RunOptions,
    candidates: &[&EngineFactory],
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<RunSummary, DifftestError> {
    options.check()?;
    let mut summary = RunSummary::default();
    for &precision in &options.precisions {
        let out_dir = if options.precisions.len() > 1 {
            options.out_dir.join(precision.name())
        } else {
            options.out_dir.clone()
        };
        let (mode, findings) = run_mode(options, precision, &out_dir, candidates, progress);
        summary.modes.push((precision, mode));
        summary.findings.extend(findings);
    }
    Ok(summary)
}

fn run_mode(
    options: &RunOptions,
    precision: Precision,
    out_dir: &std::path::Path,
    candidates: &[&EngineFactory],
    progress: &(dyn Fn(Progress) + Sync),
) -> (ModeSummary, Vec<Finding>) {
    let config = ExecConfig {
        precision,
        instruction_budget: options.budget,
    };
    let shard = options.shard;
    let programs = shard.len(options.programs);
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let invocations = AtomicU64::new(0);
    let mismatches = AtomicUsize::new(0);
    let not_run = AtomicU64::new(0);
    let translated = AtomicU64::new(0);
    let general_form = AtomicU64::new(0);
    let findings = Mutex::new(Vec::new());
    // Report about 20 times per mode (and never for tiny runs).
    let step = (programs / 20).max(50);
    std::thread::scope(|scope| {
        for _ in 0..options.threads.min(programs.max(1) as usize) {
            scope.spawn(|| {
                let mut differs: Vec<Differ> = candidates
                    .iter()
                    .map(|&candidate| Differ::new(&super::compare::interpreter, candidate, config))
                    .collect();
                loop {
                    let position = next.fetch_add(1, Ordering::Relaxed);
                    if position >= programs {
                        break;
                    }
                    let index = shard.item(position);
                    let case = case_for(options.seed, index, options.max_len);
                    let mut finding = None;
                    let mut counted = 0;
                    let mut skipped = false;
                    for differ in differs.iter_mut() {
                        let checked = check_case(differ, &case, options, precision, index, out_dir);
                        let (count, found) = match checked {
                            Some(checked) => checked,
                            None => {
                                skipped = true;
                                continue;
                            }
                        };
                        // Invocations of the program, counted once however many candidates.
                        counted = counted.max(count);
                        if found.is_some() {
                            finding = found;
                            break;
                        }
                    }
                    invocations.fetch_add(counted, Ordering::Relaxed);
                    if skipped {
                        not_run.fetch_add(1, Ordering::Relaxed);
                    } else if options.count_forms
                        && let Some(general) = takes_general_form(&case, config)
                    {
                        // Counted where every engine ran the program: the GPU engines that
                        // refuse geometry shaders translate none.
                        translated.fetch_add(1, Ordering::Relaxed);
                        general_form.fetch_add(u64::from(general), Ordering::Relaxed);
                    }
                    if let Some(finding) = finding {
                        mismatches.fetch_add(1, Ordering::Relaxed);
                        if let Ok(mut list) = findings.lock() {
                            list.push(finding);
                        }
                    }
                    let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if finished.is_multiple_of(step) || finished == programs {
                        progress(Progress {
                            precision,
                            done: finished,
                            total: programs,
                            mismatches: mismatches.load(Ordering::Relaxed) as u64,
                        });
                    }
                }
            });
        }
    });
    let mut findings = findings.into_inner().unwrap_or_default();
    findings.sort_by_key(|f| f.index);
    let mode = ModeSummary {
        programs,
        invocations: invocations.load(Ordering::Relaxed),
        mismatches: findings.len() as u64,
        not_run: not_run.load(Ordering::Relaxed),
        translated: translated.load(Ordering::Relaxed),
        general_form: general_form.load(Ordering::Relaxed),
    };
    (mode, findings)
}

/// Whether the translation for host GPUs of `case` takes the general form (`None`: it is not
/// translated).
fn takes_general_form(case: &TestCase, config: ExecConfig) -> Option<bool> {
    let program = case.program.to_program().ok()?;
    let options = crate::translate::Options::of(config, true);
    let translation = crate::translate::translate(&program, &options, "main").ok()?;
    Some(translation.form == crate::translate::Form::Dispatch)
}

/// Checks one program; returns the invocations it ran and, on a mismatch, the finding, or
/// `None` when the candidate does not run this kind of program
/// ([`crate::engine::EngineError::is_unsupported`]).
fn check_case(
    differ: &mut Differ,
    case: &TestCase,
    options: &RunOptions,
    precision: Precision,
    index: u64,
    out_dir: &std::path::Path,
) -> Option<(u64, Option<Finding>)> {
    let finding = |report: String| Finding {
        precision,
        index,
        report,
    };
    let header = format!(
        "MISMATCH: program {index} (seed {}), precision {precision}",
        options.seed
    );
    let comparison = match guarded_compare(differ, case) {
        Ok(comparison) => comparison,
        Err(DifftestError::Engine(e)) if e.is_unsupported() => return None,
        Err(e) => {
            let report = format!(
                "ERROR: program {index} (seed {}), precision {precision}: {e}",
                options.seed
            );
            return Some((0, Some(finding(report))));
        }
    };
    let count = comparison.invocations as u64;
    let found = match comparison.mismatch {
        None if comparison.panic.is_none() => return Some((count, None)),
        None => comparison.panic.unwrap_or_default(),
        Some(mismatch) => describe(&mismatch),
    };
    let mut report = format!("{header}\n  found: {found}\n");
    let shrunk = if options.shrink {
        let representable = case.program.to_source().is_ok();
        let mut still_fails = |candidate: &TestCase| {
            (!representable || candidate.program.to_source().is_ok())
                && matches!(guarded_compare(differ, candidate), Ok(c) if c.fails())
        };
        shrink(case, DEFAULT_ATTEMPTS, &mut still_fails)
    } else {
        case.clone()
    };
    if options.shrink {
        let described = match guarded_compare(differ, &shrunk) {
            Ok(c) => c
                .mismatch
                .map(|m| describe(&m))
                .or(c.panic)
                .unwrap_or_default(),
            Err(e) => e.to_string(),
        };
        report += &format!(
            "  shrunk to {} instructions, {} invocation(s): {described}\n",
            shrunk.program.instruction_count(),
            shrunk.inputs.invocations.len()
        );
    }
    let stem = format!("mismatch-{}-{index}", options.seed);
    let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        write_reproducer(out_dir, &stem, &shrunk, differ)
    }))
    .unwrap_or_else(|_| {
        Err(DifftestError::Reproducer(
            "an engine panicked on the reproducer".to_string(),
        ))
    });
    match written {
        Ok(reproducer) => {
            report += &format!(
                "  reproducer: {} {}\n  run: {}\n",
                reproducer.program.display(),
                reproducer.input.display(),
                reproducer.command
            );
            for line in &reproducer.differing_output {
                report += &format!("    {line}\n");
            }
        }
        Err(e) => report += &format!("  no reproducer: {e}\n"),
    }
    Some((count, Some(finding(report))))
}

/// A comparison, or the panic of an engine while preparing or running the case.
struct Guarded {
    invocations: usize,
    mismatch: Option<super::compare::Mismatch>,
    panic: Option<String>,
}

impl Guarded {
    fn fails(&self) -> bool {
        self.mismatch.is_some() || self.panic.is_some()
    }
}

/// [`Differ::compare`], turning an engine's panic into a finding instead of ending the run.
fn guarded_compare(differ: &mut Differ, case: &TestCase) -> Result<Guarded, DifftestError> {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| differ.compare(case)));
    match outcome {
        Ok(result) => result.map(|c| Guarded {
            invocations: c.invocations,
            mismatch: c.mismatch,
            panic: None,
        }),
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            Ok(Guarded {
                invocations: case.inputs.invocations.len(),
                mismatch: None,
                panic: Some(format!("an engine panicked: {message}")),
            })
        }
    }
}
