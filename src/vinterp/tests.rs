use super::*;
use crate::isa::PROGRAM_WORDS;

fn program(code: &[u32], entry: u32) -> ShaderProgram {
    ShaderProgram::new(
        code,
        &[0x0000_036F],
        entry,
        crate::program::ShaderKind::Vertex,
        0xFFFF,
    )
    .unwrap()
}

/// Preparing decodes one op per reachable word and no more.
#[test]
fn preparing_decodes_only_reachable_words() {
    // A single END: one reachable word.
    let end = 0x8800_0000;
    let prepared = VectorInterpreter::new(&program(&[end], 0), ExecConfig::default());
    assert_eq!(prepared.stats().reachable_words, 1);
    assert_eq!(prepared.stats().decoded_ops, 1);
    // No END: the zero words fill program memory, all reachable.
    let prepared = VectorInterpreter::new(&program(&[], 0), ExecConfig::default());
    assert_eq!(prepared.stats().decoded_ops, PROGRAM_WORDS);
    assert!(prepared.stats().decoded_ops <= prepared.stats().reachable_words);
}
