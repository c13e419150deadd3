//! Entry points for fuzzing the GPU with arbitrary bytes (the cargo-fuzz targets `gpu_trace`
//! and `gpu_commands`, and the seeded mutation tests): whatever the bytes, reading and replaying
//! ends with an answer, never a panic, a hang or unbounded memory. The limits are small so
//! that each input runs in milliseconds.

use engine::EngineKind;

use super::front::trace;
use super::{Gpu, GpuConfig};

/// What became of an input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The bytes are not a trace (the reader's message).
    Rejected(String),
    /// Replay stopped with an error (its message).
    Failed(String),
    /// Replay ran to the end; this many triangles were drawn.
    Rendered(u64),
}

/// The configuration fuzzing runs with: the interpreter, one thread, small limits.
pub fn config() -> GpuConfig {
    GpuConfig {
        engine: EngineKind::Interpreter,
        threads: 1,
        max_draw_vertices: 1 << 12,
        max_command_words: 1 << 16,
        max_texture_side: 128,
        ..GpuConfig::default()
    }
}

/// Reads `bytes` as a CiTrace file and replays it.
pub fn check_trace(bytes: &[u8]) -> Outcome {
    let trace = match trace::read(bytes) {
        Ok(trace) => trace,
        Err(error) => return Outcome::Rejected(error.to_string()),
    };
    match trace::replay(&trace, Gpu::new(config()), None, |_, _| {}) {
        Ok(replayer) => Outcome::Rendered(replayer.gpu.stats.triangles),
        Err(error) => Outcome::Failed(error.to_string()),
    }
}

/// Runs `bytes` (little-endian words, a trailing partial word dropped) as a command buffer.
pub fn check_commands(bytes: &[u8]) -> Outcome {
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    let mut gpu = Gpu::new(config());
    match gpu.run_commands(&words).and_then(|_| gpu.finish()) {
        Ok(()) => Outcome::Rendered(gpu.stats.triangles),
        Err(error) => Outcome::Failed(error.to_string()),
    }
}
