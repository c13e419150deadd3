//! The vectorised interpreter: a zero-compile tier for vertex shaders.
//!
//! [`VectorInterpreter::new`] pre-decodes the reachable words of program memory into steps, each
//! instruction as the operation visitor states it (every register, swizzle component, negation
//! and relative index resolved), and
//! marks, per address, the straight line of instructions whose control part does nothing
//! (docs/execution-model.md §5.3), so preparing a program costs microseconds. A batch runs in
//! groups of [`WIDTH`] vertices held as structure-of-arrays registers: each register component
//! is a vector of one value per vertex ([`Wide`]), computed with the element-wise rules of
//! [`shader::float24::lanes`] finished by [`shader::float24::lanes::Flagging`]. Control flow runs
//! once per group with the flow model's scalar driver, the same rules as every engine.
//!
//! It is a [`GroupKernel`]. A group first runs with the flagging rules; when one of its values
//! is unusual (a NaN or, in the float24 modes, an infinity or a result beyond the largest finite
//! float24, where those rules are not exact) it runs again with the exact rules, so values never
//! cause a decline. Vertices whose control flow diverges (a test of the condition flags that
//! they disagree on) run each way as a masked path until the paths meet again. A group is
//! declined (left to an exact per-vertex engine) when a vertex exceeds the instruction budget,
//! or when it would fail (BREAK outside a loop). Every vertex it does
//! not decline has exactly the reference interpreter's outputs and final a0/aL/cmp
//! (docs/execution-model.md §8).

mod decode;
mod run;
mod wide;

pub use run::RunStats;
pub use wide::Wide;

use shader::exec::{BatchIo, ExecConfig, GroupKernel};
use shader::program::{ShaderProgram, Uniforms};

use decode::Decoded;
#[cfg(target_arch = "x86_64")]
use run::Avx2;
use run::{Baseline, precision_index, run_batch};

/// Vertices per group (the width of every register component vector).
pub const WIDTH: usize = 16;

/// What preparing a program produced (a deterministic measure of its cost).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrepareStats {
    /// Addresses control can reach (`flow::explore::reachable_addresses`).
    pub reachable_words: usize,
    /// Ops decoded (one per reachable word).
    pub decoded_ops: usize,
}

/// Which copy of the run loop the host runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Host {
    /// Compiled for the baseline of the target.
    Portable,
    /// Compiled with AVX2 (detected at preparation).
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Host {
    fn detect() -> Host {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Host::Avx2;
        }
        Host::Portable
    }
}

/// A vertex program prepared for the vectorised interpreter.
#[derive(Clone, Debug)]
pub struct VectorInterpreter {
    decoded: Decoded,
    config: ExecConfig,
    host: Host,
}

impl VectorInterpreter {
    /// Prepares `program` (pre-decodes its reachable words).
    pub fn new(program: &ShaderProgram, config: ExecConfig) -> VectorInterpreter {
        VectorInterpreter {
            decoded: decode::decode_program(program),
            config,
            host: Host::detect(),
        }
    }

    /// The settings.
    pub fn config(&self) -> ExecConfig {
        self.config
    }

    /// What preparing produced.
    pub fn stats(&self) -> PrepareStats {
        PrepareStats {
            reachable_words: self.decoded.reachable,
            decoded_ops: self.decoded.ops.len(),
        }
    }
}

/// The run loop for precision `P`, compiled for the target's baseline.
fn run_portable<const P: u8>(
    program: &Decoded,
    budget: u64,
    uniforms: &Uniforms,
    io: &mut BatchIo<'_>,
    declined: &mut Vec<usize>,
) -> RunStats {
    run_batch::<WIDTH, P, Baseline>(program, budget, uniforms, io, declined)
}

/// The run loop for precision `P`, compiled with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn run_avx2<const P: u8>(
    program: &Decoded,
    budget: u64,
    uniforms: &Uniforms,
    io: &mut BatchIo<'_>,
    declined: &mut Vec<usize>,
) -> RunStats {
    run_batch::<WIDTH, P, Avx2>(program, budget, uniforms, io, declined)
}

impl VectorInterpreter {
    /// [`GroupKernel::run`], reporting what the run did.
    pub fn run_with_stats(
        &self,
        uniforms: &Uniforms,
        io: &mut BatchIo<'_>,
        declined: &mut Vec<usize>,
    ) -> RunStats {
        let program = &self.decoded;
        let budget = self.config.instruction_budget;
        macro_rules! dispatch {
            ($run:ident) => {
                match precision_index(self.config.precision) {
                    0 => $run::<0>(program, budget, uniforms, io, declined),
                    1 => $run::<1>(program, budget, uniforms, io, declined),
                    _ => $run::<2>(program, budget, uniforms, io, declined),
                }
            };
        }
        match self.host {
            Host::Portable => dispatch!(run_portable),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Host::Avx2` is chosen only when the host has AVX2.
            Host::Avx2 => unsafe { dispatch!(run_avx2) },
        }
    }
}

impl GroupKernel for VectorInterpreter {
    fn name(&self) -> &'static str {
        "vinterp"
    }

    fn run(&self, uniforms: &Uniforms, io: &mut BatchIo<'_>, declined: &mut Vec<usize>) {
        self.run_with_stats(uniforms, io, declined);
    }
}
