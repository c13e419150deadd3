//! The exhaustive encoding test: every one of the 2^32 instruction words decodes to a typed
//! instruction that encodes back to the same word. Bits the hardware ignores are kept in the
//! instructions' `ignored` fields, so the identity holds for every word, defined opcode or not.
//!
//! Four billion words take about a minute in release mode, so the full sweep is an ignored test
//! that `.ci/run` runs (`cargo test --release --test isa_sweep -- --ignored`); the ordinary test
//! run sweeps every opcode with a sample of operand bits instead.

use std::sync::atomic::{AtomicU64, Ordering};

use picajit::isa::{Instruction, decode, encode};

/// Checks `start..end` (inclusive start, exclusive end, as u64 to reach 2^32); returns the number
/// of words checked.
fn sweep(start: u64, end: u64) -> u64 {
    for word in start..end {
        let word = word as u32;
        let inst = decode(word);
        match encode(&inst) {
            Ok(back) if back == word => {}
            other => panic!("{word:#010x} decodes to {inst:?}, which encodes to {other:?}"),
        }
    }
    end - start
}

#[test]
#[ignore = "exhaustive (2^32 words, a minute in release): cargo test --release --test isa_sweep -- --ignored"]
fn every_word_round_trips() {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
    let total = 1u64 << 32;
    let chunk = total / threads;
    let checked = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let checked = &checked;
            scope.spawn(move || {
                let end = if t + 1 == threads {
                    total
                } else {
                    (t + 1) * chunk
                };
                checked.fetch_add(sweep(t * chunk, end), Ordering::Relaxed);
            });
        }
    });
    assert_eq!(checked.into_inner(), total);
}

#[test]
fn every_opcode_with_sampled_operands() {
    // Each opcode with all-zero, all-one and a walking-one pattern in the 26 operand bits.
    for opcode in 0u32..64 {
        let base = opcode << 26;
        let mut patterns = vec![0, (1 << 26) - 1, 0x0155_5555, 0x02AA_AAAA];
        patterns.extend((0..26).map(|bit| 1 << bit));
        for operands in patterns {
            sweep((base | operands) as u64, (base | operands) as u64 + 1);
        }
    }
    // Every word of one opcode family in a range, to exercise every field value.
    sweep(0x3800_0000, 0x3802_0000);
    assert!(matches!(decode(0x4000_0000), Instruction::Unknown { .. }));
}
