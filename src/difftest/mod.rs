//! The differential tester: random valid programs and special-value inputs, run on the
//! reference interpreter and the JIT, compared bit for bit (docs/execution-model.md §8).
//!
//! One concern per module:
//!
//! * [`rng`]: where the generator's decisions come from (a seed, or a fuzzer's bytes);
//! * [`case`]: a test case (typed instructions with descriptors, uniforms, invocations), its
//!   SHBIN, picasso source and `run` input document;
//! * [`values`]: register values rich in float24 edge cases;
//! * [`generate`]: the program generator;
//! * [`compare`]: running both engines and comparing them;
//! * [`shrink`]: reducing a mismatching case to a small one;
//! * [`reproducer`]: writing `.pica` + `.json` and the command that reruns them;
//! * [`runner`]: a whole run, in parallel, deterministic for a seed;
//! * [`shard`]: a run split into disjoint parts for several machines;
//! * [`fuzz`]: the per-input logic of the cargo-fuzz targets.
//!
//! ```
//! use picajit::difftest::runner::{RunOptions, run};
//! use picajit::difftest::compare::jit;
//!
//! let options = RunOptions { programs: 20, threads: 1, ..RunOptions::default() };
//! let summary = run(&options, &[&jit], &|_| {}).unwrap();
//! assert_eq!(summary.total().mismatches, 0);
//! let last = summary.report().lines().last().unwrap_or_default().to_string();
//! assert!(last.starts_with("20 programs, ") && last.ends_with(", 0 mismatches"));
//! ```

pub mod case;
pub mod compare;
mod error;
pub mod fuzz;
pub mod generate;
pub mod reproducer;
pub mod rng;
pub mod runner;
pub mod shard;
pub mod shrink;
pub mod values;

pub use error::DifftestError;
