//! Arbitrary bytes drive the program generator (one decision per byte or two); the interpreter
//! and the JIT run the case and must agree bit for bit.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(failure) = picajit::difftest::fuzz::check_bytes(data) {
        panic!("{failure}");
    }
});
