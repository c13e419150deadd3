//! Arbitrary bytes as a command buffer, run on the software GPU: an answer, never a
//! panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = picajit::gpu::fuzz::check_commands(data);
});
