//! Arbitrary bytes as raw program memory: code words, operand descriptors, an entry point and
//! a stage (`picajit::difftest::fuzz::raw_case` says how), with no generator in between; the
//! interpreter and the JIT run them and must agree bit for bit, errors to the address and the
//! geometry-shader state after every invocation included.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(failure) = picajit::difftest::fuzz::check_raw_words(data) {
        panic!("{failure}");
    }
});
