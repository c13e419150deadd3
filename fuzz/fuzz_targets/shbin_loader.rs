//! Arbitrary bytes as a SHBIN file: parsing never panics; a file that parses loads and
//! validates every DVLE and writes back into a file that parses.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(failure) = picajit::difftest::fuzz::check_shbin(data) {
        panic!("{failure}");
    }
});
