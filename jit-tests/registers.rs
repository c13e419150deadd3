//! Operand handling through whole programs: relative addressing (docs/execution-model.md §4),
//! swizzle then negate, destination masks, MOVA, CMP operators, LITP, DST, the invocation state
//! reset, and each precision mode on rounding edge cases.

mod common;

use common::*;
use picajit::float24::{CANONICAL_NAN_BITS, MAX_FINITE, MIN_NORMAL, Precision};
use picajit::program::Uniforms;

/// c_k = (k, k, k, k) for every uniform, so a read tells which register was selected.
fn indexed_uniforms() -> Uniforms {
    let mut u = Uniforms::default();
    for k in 0..96 {
        u.float[k] = [k as f32; 4];
    }
    u
}

/// Reads c40[a0.x] after `mova a0.x` of `offset`.
fn read_c40_at(offset: f32) -> f32 {
    let mut b = Builder::new();
    b.ops("mova a0.x, v0; nop; mov o0, c40[a0.x]; end");
    o0(&b, &indexed_uniforms(), &inputs(&[(0, [offset; 4])]))[0]
}

#[test]
fn relative_addressing_matches_the_hardware_test_table() {
    // Citra's "Address Register Offset" test mirrors Steveice10's hardware test (base c40).
    let ones = f32::NAN; // marker: the operand reads (1, 1, 1, 1)
    let table = [
        (0.0, 40.0),
        (13.0, 53.0),
        (50.0, 90.0),
        (60.0, ones),
        (74.0, ones),
        (87.0, ones),
        (88.0, 0.0),
        (128.0, 40.0), // outside -128..127: offset 0
        (-40.0, 0.0),
        (-42.0, ones),
        (-70.0, ones),
        (-73.0, 95.0),
        (-127.0, 41.0),
        (-129.0, 40.0),
    ];
    for (offset, expected) in table {
        let got = read_c40_at(offset);
        if expected.is_nan() {
            // Index above 95 reads ones; c1 = 1 too, so check against a uniform set with no ones.
            let mut u = indexed_uniforms();
            u.float[1] = [-1.0; 4];
            let mut b = Builder::new();
            b.ops("mova a0.x, v0; nop; mov o0, c40[a0.x]; end");
            assert_eq!(
                o0(&b, &u, &inputs(&[(0, [offset; 4])]))[0],
                1.0,
                "offset {offset}"
            );
        } else {
            assert_eq!(got, expected, "offset {offset}");
        }
    }
}

#[test]
fn a0_y_and_al_also_offset_and_the_index_register_is_ignored_on_temporaries() {
    let mut b = Builder::new();
    b.ops("mova a0.y, v0; nop; mov o0, c10[a0.y]; mov r3, c7; mov o1, r3; end");
    let result = run_vs(
        &b,
        Precision::F24Truncate,
        &indexed_uniforms(),
        &inputs(&[(0, [0.0, 5.0, 0.0, 0.0])]),
    );
    let result = result.unwrap();
    assert_eq!(result.outputs[0][0], 15.0);
    assert_eq!(result.flow.a0, [0, 5], "only a0.y was written");
    // An index register on a temporary (the hardware ignores it) reads the register itself.
    let mut b = Builder::new();
    b.op("mova a0.x, v0");
    b.op("nop");
    b.op("mov r2, c9");
    let mut inst = b.parse("mov o0, r2");
    if let picajit::isa::Instruction::Unary { rel, .. } = &mut inst {
        *rel = picajit::isa::RelIndex::A0X;
    }
    b.word(picajit::isa::encode(&inst).unwrap());
    b.op("end");
    assert_eq!(
        o0(&b, &indexed_uniforms(), &inputs(&[(0, [3.0; 4])]))[0],
        9.0
    );
}

#[test]
fn mova_truncates_toward_zero_and_saturates() {
    let cases = [
        (0.9f32, 0),
        (-0.9, 0),
        (-1.5, -1),
        (127.9, 127),
        (1.0e10, i32::MAX),
        (-1.0e10, i32::MIN),
        (f32::INFINITY, i32::MAX),
        (f32::NAN, 0),
    ];
    for (value, expected) in cases {
        let mut b = Builder::new();
        b.ops("mova a0.xy, v0; end");
        let result = run_vs(
            &b,
            Precision::F24Truncate,
            &Uniforms::default(),
            &inputs(&[(0, [value; 4])]),
        );
        assert_eq!(result.unwrap().flow.a0, [expected; 2], "mova {value}");
    }
}

#[test]
fn swizzle_applies_before_negate_and_masks_keep_other_lanes() {
    let mut b = Builder::new();
    b.ops("mov o0, c0; mov o0.yw, -c1.wzyx; end");
    let u = uniforms(&[(0, [9.0; 4]), (1, [1.0, 2.0, 3.0, 4.0])]);
    assert_bits(o0(&b, &u, &inputs(&[])), [9.0, -3.0, 9.0, -1.0]);
    // Negation is a raw sign flip: -(+0) is -0 on a MOV (non-arithmetic), NaN keeps its payload.
    let mut b = Builder::new();
    b.ops("mov o0, -v0; end");
    let nan_payload = f32::from_bits(0x7FC1_2300);
    let v = inputs(&[(0, [0.0, nan_payload, -0.0, 1.0])]);
    let out = run_vs(&b, Precision::F32, &Uniforms::default(), &v)
        .unwrap()
        .outputs[0];
    assert_eq!(
        out.map(f32::to_bits),
        [0x8000_0000, 0xFFC1_2300, 0, 0xBF80_0000]
    );
}

#[test]
fn cmp_operators_and_the_always_true_ones() {
    let ops = [
        ("eq", [false, true]),
        ("ne", [true, false]),
        ("lt", [true, false]),
        ("le", [true, true]),
    ];
    for (op, expected) in ops {
        let mut b = Builder::new();
        b.op(&format!("cmp c0, {op}, {op}, v0"));
        b.op("end");
        // c0 = (1, 2), v0 = (2, 2)
        let u = uniforms(&[(0, [1.0, 2.0, 0.0, 0.0])]);
        let r = run_vs(
            &b,
            Precision::F24Truncate,
            &u,
            &inputs(&[(0, [2.0, 2.0, 0.0, 0.0])]),
        )
        .unwrap();
        assert_eq!(r.flow.cmp, expected, "{op}");
    }
    for (op, expected) in [
        ("gt", [false, false]),
        ("ge", [false, true]),
        ("op6", [true, true]),
        ("op7", [true, true]),
    ] {
        let mut b = Builder::new();
        b.op(&format!("cmp c0, {op}, {op}, v0"));
        b.op("end");
        let u = uniforms(&[(0, [1.0, 2.0, 0.0, 0.0])]);
        let v = inputs(&[(0, [f32::NAN, 2.0, 0.0, 0.0])]);
        let r = run_vs(&b, Precision::F24Truncate, &u, &v).unwrap();
        let expected = if op.starts_with("op") {
            expected
        } else {
            [false, expected[1]]
        };
        assert_eq!(r.flow.cmp, expected, "{op} with a NaN on x");
    }
}

#[test]
fn litp_clamps_and_sets_the_flags() {
    let mut b = Builder::new();
    b.ops("litp o0, v0; end");
    let v = inputs(&[(0, [-2.0, 300.0, 7.0, 0.5])]);
    let r = run_vs(&b, Precision::F24Truncate, &Uniforms::default(), &v).unwrap();
    assert_bits(r.outputs[0], [0.0, 127.996_09, 0.0, 0.5]);
    assert_eq!(r.flow.cmp, [false, true]);
    let v = inputs(&[(0, [3.0, -300.0, 7.0, -1.0])]);
    let r = run_vs(&b, Precision::F24Truncate, &Uniforms::default(), &v).unwrap();
    assert_bits(r.outputs[0], [3.0, -127.996_09, 0.0, 0.0]);
    assert_eq!(r.flow.cmp, [true, false]);
}

/// MAX and MIN are x86's `maxps` and `minps` (`a > b ? a : b`, `a < b ? a : b`): the second
/// operand when either is NaN; SGE and SLT are IEEE comparisons, false on NaN; LITP's max is
/// MAX's (a NaN x or w gives +0) and its clamp passes a NaN y on; DPH reads 1 for a.w whatever
/// a.w holds (docs/execution-model.md §3).
#[test]
fn the_raw_value_instructions_on_nan_follow_the_documented_forms() {
    let nan = f32::from_bits(0x7FC0_0000);
    let mut b = Builder::new();
    b.ops(
        "max o0, v0, v1; max o1, v1, v0; min o2, v0, v1; min o3, v1, v0; \
         sge o4, v0, v1; slt o5, v0, v1; sge o6, v1, v1; litp o7, v2; dph o8, v3, v4; end",
    );
    let v = inputs(&[
        (0, [nan, 2.0, nan, -1.0]),
        (1, [3.0, nan, nan, 1.0]),
        (2, [nan, nan, 5.0, nan]),
        (3, [1.0, 2.0, 3.0, nan]),
        (4, [4.0, 5.0, 6.0, 7.0]),
    ]);
    let r = run_vs(&b, Precision::F24Truncate, &Uniforms::default(), &v).unwrap();
    let o = r.outputs;
    assert_bits(o[0], [3.0, nan, nan, 1.0]);
    assert_bits(o[1], [nan, 2.0, nan, 1.0]);
    assert_bits(o[2], [3.0, nan, nan, -1.0]);
    assert_bits(o[3], [nan, 2.0, nan, -1.0]);
    assert_bits(o[4], [0.0, 0.0, 0.0, 0.0]);
    assert_bits(o[5], [0.0, 0.0, 0.0, 1.0]);
    assert_bits(o[6], [1.0, 0.0, 0.0, 1.0]);
    assert_bits(o[7], [0.0, nan, 0.0, 0.0]);
    assert_eq!(r.flow.cmp, [false, false]);
    // 1*4 + 2*5 + 3*6 + 1*7.
    assert_bits(o[8], [39.0; 4]);
}

#[test]
fn dst_copies_raw_lanes_and_multiplies_y() {
    let mut b = Builder::new();
    b.ops("dst o0, v0, v1; end");
    let sub = f24(0x00_0001);
    let v = inputs(&[(0, [5.0, 3.0, sub, 6.0]), (1, [7.0, 4.0, 8.0, sub])]);
    let out = run_vs(&b, Precision::F24Truncate, &Uniforms::default(), &v)
        .unwrap()
        .outputs[0];
    assert_bits(out, [1.0, 12.0, sub, sub]);
}

#[test]
fn every_invocation_starts_from_zeroed_state() {
    let mut b = Builder::new();
    b.ops("add r0, c0, r0; mov o0, r0; mova a0.x, c0; end");
    let interp = picajit::interp::Interpreter::new(
        b.program(picajit::program::ShaderKind::Vertex),
        picajit::exec::ExecConfig::default(),
    );
    let u = uniforms(&[(0, [1.0; 4])]);
    for _ in 0..3 {
        let r = interp.run_vertex(&u, &inputs(&[])).unwrap();
        assert_eq!(r.outputs[0][0], 1.0, "r0 starts at 0 every time");
        assert_eq!(r.outputs[1], [0.0; 4], "unwritten outputs are 0");
        assert_eq!(r.flow.a0, [1, 0]);
    }
}

#[test]
fn the_jit_starts_every_vertex_invocation_from_zeroed_temporaries() {
    use picajit::program::ShaderKind;
    // A vertex shader entered only at its start zeroes its temporaries in its own code (its
    // first run starts with them +0 and stores them when it ends; the temporaries left at END
    // are not stored), any other the caller's context (jit::lower Lowering::zero_temps). Each
    // invocation here leaves every temporary it reads non-zero, so a stale one shows.
    let mut straight = Builder::new();
    straight.ops(
        // r0 read before written, r1 written in part; then four runs of four (cuts at 4, 8,
        // 12): r1 and r3 are read from their homes in the third, r3 never written before.
        "add r0, r0, v0; mov r1.x, v0; mov o0, r0; add r5, v0, v0; \
         add r6, v0, v0; add r7, v0, v0; add r8, v0, v0; add r9, v0, v0; \
         add o1, r3, r1; mov r3, v1; mov r0, v1; mov r1, v1; end",
    );
    let mut back = Builder::new();
    // Jumps back to its entry: r0 counts up to 3 from the +0 it starts at.
    back.ops(
        "add r0, c0, r0; cmp c1, gt, gt, r0; jmpc cmp.x, 0; mov o0, r0; \
         mov r0, c1; end",
    );
    let u = uniforms(&[(0, [1.0; 4]), (1, [3.0; 4])]);
    let vertices = [
        inputs(&[(0, [1.0, 2.0, 3.0, 4.0]), (1, [5.0, 6.0, 7.0, 8.0])]),
        inputs(&[(0, [-1.5, 0.5, 2.5, 8.0]), (1, [9.0, 10.0, 11.0, 12.0])]),
    ];
    for p in Precision::ALL {
        let config = picajit::exec::ExecConfig {
            precision: p,
            ..Default::default()
        };
        let mut fast =
            picajit::jit::JitShader::compile(straight.program(ShaderKind::Vertex), config).unwrap();
        assert_eq!(fast.has_fast_form(), p.is_f24());
        fast.set_fast_policy(picajit::jit::FastPolicy::Always);
        let exact =
            picajit::jit::JitShader::compile(straight.program(ShaderKind::Vertex), config).unwrap();
        let looping =
            picajit::jit::JitShader::compile(back.program(ShaderKind::Vertex), config).unwrap();
        for _ in 0..3 {
            for v in &vertices {
                for jit in [&fast, &exact] {
                    let r = jit.run_vertex(&u, v).unwrap();
                    assert_bits(r.outputs[0], v[0]);
                    assert_bits(r.outputs[1], [v[0][0], 0.0, 0.0, 0.0]);
                }
                let mut outputs = [[7.0; 4]; 16];
                looping.run_vertex_into(&u, v, &mut outputs).unwrap();
                assert_bits(outputs[0], [3.0; 4]);
                assert_bits(outputs[1], [0.0; 4]);
            }
        }
    }
}

/// Runs `add o0, v0, v1` (or `mul`) on one lane in a mode and returns the bits.
fn binary(op: &str, a: f32, b: f32, p: Precision) -> u32 {
    let mut builder = Builder::new();
    builder.op(&format!("{op} o0, v0, v1"));
    builder.op("end");
    let v = inputs(&[(0, [a; 4]), (1, [b; 4])]);
    run_vs(&builder, p, &Uniforms::default(), &v)
        .unwrap()
        .outputs[0][0]
        .to_bits()
}

#[test]
fn precision_modes_on_rounding_edges() {
    use Precision::*;
    let ulp = 2f32.powi(-16);
    // A tie: 1 + 2^-17 (half an f24 ulp) -> truncate 1, nearest-even 1, f32 kept.
    let tie = 2f32.powi(-17);
    assert_eq!(binary("add", 1.0, tie, F24Truncate), 1f32.to_bits());
    assert_eq!(binary("add", 1.0, tie, F24Nearest), 1f32.to_bits());
    assert_eq!(binary("add", 1.0, tie, F32), (1.0 + tie).to_bits());
    // The tie above an odd mantissa rounds up in nearest-even.
    assert_eq!(
        binary("add", 1.0 + ulp, tie, F24Nearest),
        (1.0 + 2.0 * ulp).to_bits()
    );
    assert_eq!(
        binary("add", 1.0 + ulp, tie, F24Truncate),
        (1.0 + ulp).to_bits()
    );
    // mul(255, f24(1/255)): the f24 of 1/255 truncated is below 1/255, so the product is below 1.
    let third = picajit::float24::convert_f32(1.0 / 255.0, F24Truncate);
    let product = 255.0 * third;
    assert!(product < 1.0);
    assert_eq!(
        binary("mul", 255.0, third, F24Truncate),
        picajit::float24::round(product, F24Truncate).to_bits()
    );
    // A carry into the exponent: (2 - 2^-16) + 2^-17 -> nearest-even 2.0, truncate stays.
    assert_eq!(binary("add", 2.0 - ulp, tie, F24Nearest), 2f32.to_bits());
    assert_eq!(
        binary("add", 2.0 - ulp, tie, F24Truncate),
        (2.0 - ulp).to_bits()
    );
    // The largest finite value doubles to infinity in F24 modes, not in F32.
    for p in [F24Truncate, F24Nearest] {
        assert_eq!(
            binary("add", MAX_FINITE, MAX_FINITE, p),
            f32::INFINITY.to_bits()
        );
        assert_eq!(binary("mul", MAX_FINITE, 1.0, p), MAX_FINITE.to_bits());
    }
    assert_eq!(
        binary("add", MAX_FINITE, MAX_FINITE, F32),
        (2.0 * MAX_FINITE).to_bits()
    );
    // 2^-62 survives, 2^-63 flushes to +0 in F24 modes, survives in F32.
    for p in [F24Truncate, F24Nearest] {
        assert_eq!(binary("mul", MIN_NORMAL, 1.0, p), MIN_NORMAL.to_bits());
        assert_eq!(binary("mul", MIN_NORMAL, 0.5, p), 0);
        assert_eq!(binary("mul", -MIN_NORMAL, 0.5, p), 0, "no -0");
    }
    assert_eq!(
        binary("mul", MIN_NORMAL, 0.5, F32),
        2f32.powi(-63).to_bits()
    );
    assert_eq!(binary("mul", -1.0, 0.0, F32), 0x8000_0000, "F32 keeps -0");
    // Subnormal f24 inputs read as zero in arithmetic (F24), as themselves in F32.
    let sub = f24(0x00_4000);
    for p in [F24Truncate, F24Nearest] {
        assert_eq!(binary("add", sub, 0.0, p), 0);
    }
    assert_eq!(binary("add", sub, 0.0, F32), sub.to_bits());
    // NaN payloads: every arithmetic NaN is canonical.
    let payload = f32::from_bits(0x7FC0_1234);
    for p in Precision::ALL {
        assert_eq!(binary("add", payload, 1.0, p), CANONICAL_NAN_BITS, "{p}");
        assert_eq!(binary("mul", payload, 0.0, p), CANONICAL_NAN_BITS, "{p}");
    }
}

#[test]
fn dot_products_round_each_step_and_sum_pairwise() {
    // [2^20, 1, -2^20, 1]·[1, 1, 1, 1], F24 truncation, pairwise: 2^20 + 1 needs 21 bits and
    // truncates to 2^20; -2^20 + 1 = -(2^20 - 1) keeps 17 significant bits: -(2^20 - 8).
    // Their sum is 8. (Sequential summation would give round(round(2^20 + 1) - 2^20) + 1 = 1.)
    let mut b = Builder::new();
    b.ops("dp4 o0, v0, v1; end");
    let big = 2f32.powi(20);
    let v = inputs(&[(0, [big, 1.0, -big, 1.0]), (1, [1.0; 4])]);
    let f24t = |x: f32| picajit::float24::round(x, Precision::F24Truncate);
    let expected = f24t(f24t(big + 1.0) + f24t(-big + 1.0));
    let got = run_vs(&b, Precision::F24Truncate, &Uniforms::default(), &v)
        .unwrap()
        .outputs[0][0];
    assert_eq!(got, expected);
    assert_eq!(got, 8.0);
    // F32 mode sums sequentially from +0: ((2^20 + 1) - 2^20) + 1 = 2.
    let got = run_vs(&b, Precision::F32, &Uniforms::default(), &v)
        .unwrap()
        .outputs[0][0];
    assert_eq!(got, 2.0);
    // The sign of a zero dot product in F32 mode: 0 + (-0) = +0.
    let v = inputs(&[(0, [-1.0, 0.0, 0.0, 0.0]), (1, [0.0, 0.0, 0.0, 0.0])]);
    let got = run_vs(&b, Precision::F32, &Uniforms::default(), &v)
        .unwrap()
        .outputs[0][0];
    assert_eq!(got.to_bits(), 0);
}

#[test]
fn the_jit_reads_inputs_where_the_caller_keeps_them_at_any_f32_alignment() {
    // The compiled code reads the inputs and uniforms through pointers into the caller's
    // memory (no copy), with the same load flags for both; an emulator's registers are aligned
    // only as f32s are. Here every input register sits at an address that is not a multiple
    // of 16, and the results equal the interpreter's and the same inputs' aligned.
    let mut b = Builder::new();
    b.ops("add r0, c2, v0; mul r1, c95, v15; dp4 o0, r0, v7; mad o1, r1, c0, v3; end");
    let mut u = Uniforms::default();
    for k in 0..96 {
        u.float[k] = [k as f32 + 0.5, -(k as f32), 0.25, 2.0];
    }
    let aligned = inputs(&[
        (0, [1.0, 2.0, 3.0, 4.0]),
        (3, [-1.5, 0.5, 8.0, 1.0]),
        (7, [0.125, -2.0, 16.0, 3.0]),
        (15, [7.0, 6.0, 5.0, 4.0]),
    ]);
    let expected = run_vs(&b, Precision::F24Truncate, &u, &aligned).unwrap();
    let mut storage = vec![0f32; 16 * 4 + 3];
    let mut misaligned = 0;
    for shift in 0..4 {
        let slice = &mut storage[shift..shift + 64];
        for (n, register) in aligned.iter().enumerate() {
            slice[4 * n..4 * n + 4].copy_from_slice(register);
        }
        let (head, shifted, _) = unsafe { slice.align_to::<[[f32; 4]; 16]>() };
        // A [[f32; 4]; 16] is 4-aligned, so the slice is one at offset 0 whatever its address.
        assert!(head.is_empty());
        let shifted = &shifted[0];
        misaligned += usize::from(!(shifted.as_ptr() as usize).is_multiple_of(16));
        let got = run_vs(&b, Precision::F24Truncate, &u, shifted).unwrap();
        assert_eq!(got, expected, "shift {shift}");
    }
    // Four consecutive f32 offsets hold one multiple of 16 at most.
    assert!(misaligned >= 3);
}

#[test]
fn dot_product_groups_give_each_lane_its_own_instructions_result() {
    // Consecutive DP3/DP4/DPH into disjoint lanes of one register are computed together by the
    // JIT (docs/architecture.md, "Dot-product groups"); each lane must still be its own instruction's
    // result. v0 = (1, 0, 1, 1) and the rows below make each lane show one rule:
    // c4: the pairwise float24 sum (see dot_products_round_each_step_and_sum_pairwise):
    //     2^20 + 0 and -2^20 + 1 -> 8 truncating, 0 rounding to nearest (-(2^20 - 1) rounds to
    //     -2^20 at 17 significant bits), 1 in F32 mode ((((0 + 2^20) + 0) - 2^20) + 1);
    // c5: inf·0 = 0, so 1 + 0 + 2 + 0 = 3; c6: a NaN row, the canonical NaN; c7: -0·1 sums to
    //     +0 (no negative zero in the float24 modes, 0 + (-0) = +0 in F32 mode).
    let big = 2f32.powi(20);
    let u = uniforms(&[
        (4, [big, 1.0, -big, 1.0]),
        (5, [1.0, f32::INFINITY, 2.0, 0.0]),
        (6, [f32::NAN, 1.0, 1.0, 1.0]),
        (7, [-0.0, 0.0, 0.0, 0.0]),
        (8, [10.0, 20.0, 30.0, 40.0]),
    ]);
    let v = inputs(&[(0, [1.0, 0.0, 1.0, 1.0])]);
    let mut b = Builder::new();
    b.ops(
        "dp4 r0.x, c4, v0; dp4 r0.y, c5, v0; dp4 r0.z, c6, v0; dp4 r0.w, c7, v0; \
         mov r1, c8; dp3 r1.xz, c5, v0; dp3 r1.y, c6, v0; \
         dph r2.y, c7, v0; dph r2.x, c4, v0; \
         dp4 r3.x, c4, v0; dp4 r3.y, c5, r3; \
         mov o0, r0; mov o1, r1; mov o2, r2; mov o3, r3; end",
    );
    let nan = f32::from_bits(CANONICAL_NAN_BITS);
    for (p, pairwise) in [
        (Precision::F24Truncate, 8.0),
        (Precision::F24Nearest, 0.0),
        (Precision::F32, 1.0),
    ] {
        let r = run_vs(&b, p, &u, &v).unwrap();
        assert_bits(r.outputs[0], [pairwise, 3.0, nan, 0.0]);
        // DP3 ignores w: 1 + inf·0 + 2 = 3 in x and z; y the NaN; w keeps c8.w.
        assert_bits(r.outputs[1], [3.0, nan, 3.0, 40.0]);
        // DPH reads SRC1.w as 1: c7 gives 0 + 0 + 0 + 1 = 1, c4 the pairwise sum again.
        assert_bits(r.outputs[2], [pairwise, 1.0, 0.0, 0.0]);
        // r3.y reads the r3.x just written: (x, 0, 0, 0)·c5 = x.
        assert_bits(r.outputs[3], [pairwise, pairwise, 0.0, 0.0]);
    }
}

#[test]
fn only_temporaries_that_always_hold_float24_values_skip_the_input_flush() {
    // The JIT skips the float24 input flush on the temporary lanes every write keeps canonical
    // (jit::analysis FlowFacts::find_canonical_temps) and flushes everything else. Each output
    // below shows a case where a skipped flush would change the bits (docs/execution-model.md
    // §2: arithmetic reads |x| < 2^-62 and -0 as +0): 2^-70 · 2^20 is +0 after the flush
    // (2^-50 without), and RCP of -0 is +inf after it (-inf without). The fast forms read such
    // an operand without flushing it and flag it (float24::lanes::FlaggingSignedZeros).
    let tiny = 2f32.powi(-70);
    let mut u = uniforms(&[
        (0, [2f32.powi(20); 4]),
        (1, [2f32.powi(20), 2f32.powi(20), 2f32.powi(20), 0.0]),
    ]);
    u.int[0] = [1, 0, 1, 0]; // two passes
    let v = inputs(&[(0, [tiny, -0.0, tiny, 1.0])]);
    let mut b = Builder::new();
    b.ops(
        "loop i0, 0x002; mov r7, r8; mov r8, v0; \
         mul o2, c0, r7; \
         mov r1, v0; mul o0, c0, r1; \
         mov r2, -r0; rcp o1, r2; \
         max r3, r2, r2; rcp o3, r3; \
         dp4 r4, c0, r0; mov r5, r4; rcp o4, r5; \
         dp4 o5.x, c1, r1; dp4 o5.y, c1, r1; end",
    );
    for p in [Precision::F24Truncate, Precision::F24Nearest] {
        let r = run_vs(&b, p, &u, &v).unwrap();
        // r7 holds v0 only in the second pass (a copy of a copy of an input).
        assert_bits(r.outputs[2], [0.0, 0.0, 0.0, 2f32.powi(20)]);
        assert_bits(r.outputs[0], [0.0, 0.0, 0.0, 2f32.powi(20)]);
        assert_bits(r.outputs[1], [f32::INFINITY; 4]);
        assert_bits(r.outputs[3], [f32::INFINITY; 4]);
        // r5 = r4 = +0, a rounded result: canonical, and still +inf.
        assert_bits(r.outputs[4], [f32::INFINITY; 4]);
        // A dot-product group's fast form reads the row of r1 once for all its members.
        assert_bits(r.outputs[5], [0.0; 4]);
    }
}

#[test]
fn registers_keep_their_values_across_the_cuts_of_a_long_straight_line() {
    // The JIT cuts a straight line into runs of four instructions (0-3, 4-7, 8-11) and hands a
    // run's register values to the next one, dropping those a whole run did not use
    // (jit::analysis FlowFacts::continues). r0 and r2 are written in the first run, unused in
    // the second and read in the third (from their homes); r1 and r4 are used in consecutive
    // runs (carried); o1 is written only in the first run.
    let v = inputs(&[(0, [1.0, 2.0, 3.0, 4.0]), (1, [5.0, 6.0, 7.0, 8.0])]);
    let mut b = Builder::new();
    b.ops(
        "mov r0, v0; add r1, v0, v0; mov o1, r0; mov r2, v1; \
         add r3, r1, r1; mov r4, r3; mov r5, v1; mov r6, v1; \
         mul r7, r2, r2; add o0, r0, r4; mov o2, r7; mov o3, r5; end",
    );
    for p in Precision::ALL {
        let r = run_vs(&b, p, &Uniforms::default(), &v).unwrap();
        assert_bits(r.outputs[0], [5.0, 10.0, 15.0, 20.0]);
        assert_bits(r.outputs[1], [1.0, 2.0, 3.0, 4.0]);
        assert_bits(r.outputs[2], [25.0, 36.0, 49.0, 64.0]);
        assert_bits(r.outputs[3], [5.0, 6.0, 7.0, 8.0]);
    }
}

#[test]
fn a_zero_has_the_models_sign_wherever_the_sign_is_seen() {
    // In the float24 modes every rounded zero is +0 (docs/execution-model.md §2), but the JIT's
    // fast path leaves the sign of a zero product (−2·0 = −0) to the places that see it
    // (docs/architecture.md, "Negative zeros left pending"): a raw copy, a negation one
    // passes on, MAX and MIN, DST's copied lanes, RCP and LG2, and a register's home (an
    // output, or a temporary stored at a cut and loaded again). r0 and r3 hold such products
    // (−0 in x and y where the model has +0), and r4 a move of r0; r1 mixes a −0 that is
    // the model's own (a negated +0 moved) with such a product; r2 crosses a cut that is a
    // jump target.
    let v = inputs(&[
        (0, [-2.0, -3.0, 2.0, 5.0]),
        (1, [0.0; 4]),
        (2, [-1.0; 4]),
        (3, [f32::INFINITY; 4]),
        (4, [1.0; 4]),
    ]);
    let mut b = Builder::new();
    b.ops(
        "mul r0, v0, v1; mov o0, r0; mov o1, -r0; max o2, -r0, v2; \
         rcp o3, r0.x; lg2 o4, r0.y; min o5, -r0, v4; dst o6, v0, r0; \
         max r5, r0, -v1; mov o12, r5; mov r4, r0; mov o13, r4; \
         mov o14, -r4; mov r1.xz, -v1; mul r1.yw, v0, v1; mul r2, v0, v1; \
         jmpu b0, 17; mov o7, r1; mov o8, -r2; mul r3, v0, v1; \
         mul o9, -r3, v3; flr o10, -r3; add o11, -r3, -r3; end",
    );
    let (zero, negative_zero) = (0.0, -0.0);
    for p in [Precision::F24Truncate, Precision::F24Nearest] {
        let r = run_vs(&b, p, &Uniforms::default(), &v).unwrap();
        assert_bits(r.outputs[0], [zero; 4]);
        assert_bits(r.outputs[1], [negative_zero; 4]);
        assert_bits(r.outputs[2], [negative_zero; 4]);
        assert_bits(r.outputs[3], [f32::INFINITY; 4]);
        assert_bits(r.outputs[4], [f32::NEG_INFINITY; 4]);
        assert_bits(r.outputs[5], [negative_zero; 4]);
        assert_bits(r.outputs[6], [1.0, zero, 2.0, zero]);
        assert_bits(r.outputs[7], [negative_zero, zero, negative_zero, zero]);
        assert_bits(r.outputs[8], [negative_zero; 4]);
        // inf·0 = +0, however the zero was signed before the flush.
        assert_bits(r.outputs[9], [zero; 4]);
        assert_bits(r.outputs[10], [zero; 4]);
        assert_bits(r.outputs[11], [zero; 4]);
        // max(+0, −0) is the second operand, the model's own −0; a moved value keeps the
        // record of its pending zeros, and a negated move settles them first.
        assert_bits(r.outputs[12], [negative_zero; 4]);
        assert_bits(r.outputs[13], [zero; 4]);
        assert_bits(r.outputs[14], [negative_zero; 4]);
    }
    // f32 mode keeps the product's −0 (and run_vs compares the engines there too).
    let r = run_vs(&b, Precision::F32, &Uniforms::default(), &v).unwrap();
    assert_bits(r.outputs[0], [negative_zero, negative_zero, zero, zero]);
}

#[test]
fn ex2_and_lg2_give_the_interpreters_bits_on_edge_values() {
    // The JIT computes EX2 and LG2 inline (the f64 part of float24::transcendental), or calls
    // the Rust functions in a program with more than INLINE_TRANSCENDENTALS of them (the second
    // program); run_vs compares every output with the interpreter's. Lane 0 (of the swizzled
    // source) is the operand; the other lanes hold other values, which must not matter.
    let values = [
        0.0,
        -0.0,
        f32::from_bits(1),
        f32::MIN_POSITIVE,
        MIN_NORMAL,
        0.5,
        1.0,
        -1.0,
        1.5,
        63.999,
        64.0,
        -64.0,
        127.9,
        128.0,
        -126.5,
        -150.0,
        1e30,
        MAX_FINITE,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(0x7F80_0001),
        3.0e-20,
        0.1,
    ];
    let body = "ex2 o0, v0.y; lg2 o1, v0.y; ex2 o2.xz, v0; lg2 o3.yw, v0; end";
    let mut inline = Builder::new();
    inline.ops(body);
    let mut called = Builder::new();
    for k in 0..=picajit::jit::INLINE_TRANSCENDENTALS {
        called.op(&format!("ex2 r{}, v0.y", k % 16));
    }
    called.ops(body);
    for b in [&inline, &called] {
        for p in Precision::ALL {
            for &x in &values {
                let v = inputs(&[(0, [7.0, x, -3.0, 0.25])]);
                let r = run_vs(b, p, &Uniforms::default(), &v).unwrap();
                // Every lane of o0 is EX2 of lane 0: one value, broadcast.
                let lane0 = r.outputs[0][0].to_bits();
                assert!(r.outputs[0].iter().all(|y| y.to_bits() == lane0), "{p} {x}");
            }
        }
    }
}

/// The interpreter and the JIT for `program` in precision `p`, the JIT running its
/// whole-invocation fast form on every invocation (which it must have).
fn on_the_fast_form(
    program: &picajit::program::ShaderProgram,
    p: Precision,
) -> (picajit::interp::Interpreter, picajit::jit::JitShader) {
    let config = picajit::exec::ExecConfig {
        precision: p,
        ..Default::default()
    };
    let interp = picajit::interp::Interpreter::new(program.clone(), config);
    let mut jit = picajit::jit::JitShader::compile(program.clone(), config).unwrap();
    assert!(jit.has_fast_form());
    jit.set_fast_policy(picajit::jit::FastPolicy::Always);
    (interp, jit)
}

#[test]
fn a_read_of_lanes_one_partial_write_made_or_kept_is_exact() {
    // A read that needs only lanes a partial write wrote, or only lanes it kept, takes them
    // from the value written or the value before (docs/architecture.md, "Partial writes read
    // from their sides"); its other lanes are what the written instruction computed there.
    // Here those are infinite in the float24 modes (1e10·1e10 is past the range), which a
    // whole invocation's fast form checks and runs again. Every read below mixes or splits
    // the sides differently; each output must be the interpreter's, in every mode, on the
    // exact function and on the fast form.
    use picajit::jit::{FastPolicy, JitShader};
    use picajit::program::ShaderKind;
    let mut b = Builder::new();
    b.ops(
        "mov r0, v2; mul r0.x, v0, v1; add r1.x, r0, v3; add r1.y, r0.y, v3; \
         mul r1.zw, r0.xxyy, v1; mad r2.xy, r0.yx, v1, r0.xxxx; rsq r3.x, r0.x; \
         rcp r3.y, r0.z; dp3 r4.x, r0, v1; mov r5.yz, r0.xy; add r5.xw, r5.yyzz, v3; \
         mul r6, r5.zzyy, v1; mov o0, r1; mov o1, r2; mov o2, r3; mov o3, r4; mov o4, r5; \
         mov o5, r6; mov o6, r0; end",
    );
    let program = b.program(ShaderKind::Vertex);
    let vertices = [
        inputs(&[
            (0, [1.5, 2.0, -3.0, 0.5]),
            (1, [2.0, 0.25, 4.0, -1.0]),
            (2, [10.0, 20.0, 30.0, 40.0]),
            (3, [0.5, -0.5, 1.0, 2.0]),
        ]),
        inputs(&[
            (0, [1.5, 1e10, 1e10, 1e10]),
            (1, [2.0, 1e10, 1e10, -1e10]),
            (2, [10.0, 20.0, 30.0, 40.0]),
            (3, [0.5, -0.5, 1.0, 2.0]),
        ]),
    ];
    let u = Uniforms::default();
    for p in Precision::ALL {
        let config = picajit::exec::ExecConfig {
            precision: p,
            ..Default::default()
        };
        let interp = picajit::interp::Interpreter::new(program.clone(), config);
        let mut jit = JitShader::compile(program.clone(), config).unwrap();
        let policies: &[FastPolicy] = if jit.has_fast_form() {
            &[FastPolicy::Never, FastPolicy::Always]
        } else {
            &[FastPolicy::Never]
        };
        for &policy in policies {
            jit.set_fast_policy(policy);
            for v in &vertices {
                assert_same_vertex(&interp.run_vertex(&u, v), &jit.run_vertex(&u, v));
            }
        }
        // The written lanes and the kept ones, as the program's reads saw them.
        let outputs = interp.run_vertex(&u, &vertices[0]).unwrap().outputs;
        assert_bits(outputs[0], [3.5, 19.5, 80.0, -20.0]);
        assert_bits(outputs[6], [3.0, 20.0, 30.0, 40.0]);
    }
}

#[test]
fn infinite_transcendentals_do_not_send_the_fast_form_back() {
    // RSQ, RCP, EX2 and LG2 results may be infinite for ordinary inputs (rsq(0) of a zero
    // normal, lg2(0) of a specular term facing away). The whole-invocation fast form lowers an
    // instruction with products that reads such a lane apart (docs/architecture.md, "Wild
    // lanes"): a LG2 result by the exact rule, another by a fast form with an exact one in a
    // cold block, and a wild lane the rule does not read is made +0 before the operand checks.
    // So none of these invocations runs again, and the bits are the interpreter's.
    use picajit::program::ShaderKind;
    let mut b = Builder::new();
    b.ops(
        "dp3 r0.w, v0, v0; rsq r0.w, r0.w; mul r0.xyz, r0.w, v0; \
         dp3 r2.x, r0, v1; max r3.x, r2.x, v3.x; lg2 r3.x, r3.x; mul r3.x, v2.x, r3.x; \
         ex2 r3.x, r3.x; mul r4, r3.x, v1; mad r5, v1, v2, r4; dp4 r6.x, v1, v2; \
         mov o0, r0; mov o1, r5; mov o2, r2; mov o3, r6; end",
    );
    let program = b.program(ShaderKind::Vertex);
    let vertex = |normal: [f32; 4], light: [f32; 4]| {
        inputs(&[
            (0, normal),
            (1, light),
            (2, [8.0, 0.5, -2.0, 1.0]),
            (3, [0.0; 4]),
        ])
    };
    let vertices = [
        // Ordinary: a normal facing the light.
        vertex([0.0, 0.6, 0.8, 0.0], [0.0, 0.0, 1.0, 0.0]),
        // A zero normal: rsq(0) = inf, inf·0 = +0 in the product (the cold exact block).
        vertex([0.0; 4], [0.0, 0.0, 1.0, 0.0]),
        // Facing away: lg2(0) = -inf, its product -inf, and EX2 of it +0.
        vertex([0.0, 0.6, 0.8, 0.0], [0.0, 0.0, -1.0, 0.0]),
    ];
    for p in [Precision::F24Truncate, Precision::F24Nearest] {
        let (interp, jit) = on_the_fast_form(&program, p);
        let u = Uniforms::default();
        for (k, v) in vertices.iter().enumerate() {
            let expected = interp.run_vertex(&u, v);
            assert_same_vertex(&expected, &jit.run_vertex(&u, v));
            let outputs = expected.unwrap().outputs;
            match k {
                1 => assert_bits(outputs[0], [0.0, 0.0, 0.0, f32::INFINITY]),
                2 => assert_eq!(outputs[1][0].to_bits(), 0.0f32.to_bits(), "{p:?}"),
                _ => {}
            }
            assert_eq!(jit.fast_form_reruns(), 0, "{p:?}: vertex {k} stands");
        }
    }
}

#[test]
fn a_whole_invocation_runs_on_the_fast_form_and_again_exactly_where_it_flags() {
    // A vertex shader with enough products has a whole-invocation fast form
    // (docs/architecture.md, "Whole invocations on the fast path"): run on every invocation
    // here, its result stands where its checks flag nothing (no rerun), and the exact function
    // runs the invocation again from the start where they flag. Either way the bits are the
    // interpreter's, zero signs and all.
    use picajit::exec::ExecConfig;
    use picajit::interp::Interpreter;
    use picajit::jit::{FastPolicy, JitShader};
    use picajit::program::ShaderKind;
    let mut b = Builder::new();
    b.ops(
        "mul r0, v0, v1; mad r1, v0, v1, v2; dp4 r2.x, v0, v1; dp3 r2.y, v1, v2; \
         add r3, r0, -r1; mul r4, r3, v2; dph r2.z, v0, r4; mov o0, r0; mov o1, r1; \
         mov o2, r2; mov o3, r3; mov o4, -r4; max o5, r0, -v2; end",
    );
    let program = b.program(ShaderKind::Vertex);
    // In bounds: zeros of both signs (−0 products left pending), ordinary magnitudes.
    let ordinary = inputs(&[
        (0, [-2.0, 0.0, 1.5, -0.0]),
        (1, [0.0, -3.0, 0.25, 7.0]),
        (2, [1.0, -0.5, 0.0, 1e-5]),
    ]);
    // Each leaves the bounds in one lane: an infinity, a NaN, a magnitude past 2^30, one the
    // input flush changes, a product below 2^-46, and a sum that cancels below it.
    let unusual = [
        inputs(&[
            (0, [f32::INFINITY, 1.0, 1.0, 1.0]),
            (1, [0.0, 1.0, 1.0, 1.0]),
        ]),
        inputs(&[(0, [1.0, f32::NAN, 1.0, 1.0]), (1, [1.0; 4])]),
        inputs(&[(0, [1.0, 1.0, 2e9, 1.0]), (1, [1.0; 4])]),
        inputs(&[(0, [1.0, 1.0, 1.0, MIN_NORMAL / 2.0]), (1, [1.0e9; 4])]),
        inputs(&[(0, [1e-8, 1.0, 1.0, 1.0]), (1, [1e-8, 1.0, 1.0, 1.0])]),
        inputs(&[
            (0, [1.0 + 1.0 / 65536.0, 1.0, 1.0, 1.0]),
            (1, [1e-10, 1.0, 1.0, 1.0]),
            (2, [-1e-10, 1.0, 1.0, 1.0]),
        ]),
    ];
    for p in [Precision::F24Truncate, Precision::F24Nearest] {
        let (interp, jit) = on_the_fast_form(&program, p);
        let u = Uniforms::default();
        let expected = interp.run_vertex(&u, &ordinary);
        assert_same_vertex(&expected, &jit.run_vertex(&u, &ordinary));
        // The ordinary vertex's products include −0s the model makes +0.
        assert_bits(
            expected.as_ref().unwrap().outputs[0],
            [0.0, 0.0, 0.375, 0.0],
        );
        assert_eq!(
            jit.fast_form_reruns(),
            0,
            "{p:?}: the fast form's result stands"
        );
        for (k, v) in unusual.iter().enumerate() {
            assert_same_vertex(&interp.run_vertex(&u, v), &jit.run_vertex(&u, v));
            assert_eq!(
                jit.fast_form_reruns(),
                k as u64 + 1,
                "{p:?}: vertex {k} runs again"
            );
        }
    }
    // The fast form reads uniforms unchecked, so a uniform beyond the bounds keeps every
    // invocation off it: here an infinite c0 times a zero input is +0 (inf·0), where the fast
    // form's plain product would be a NaN that no check of its flags.
    let mut b = Builder::new();
    b.ops(
        "mul r0, c0, v0; mul r1, r0, v0; mul r2, r1, v0; mad r3, r2, c1, v0; \
         dp4 o1.x, c0, v0; add r4, c1, r3; mov o0, r0; mov o2, r4; end",
    );
    let program = b.program(ShaderKind::Vertex);
    let v = inputs(&[(0, [0.0, 1.0, 1.0, 1.0])]);
    let u = uniforms(&[(0, [f32::INFINITY, 1.0, 1.0, 1.0]), (1, [1.0; 4])]);
    for p in [Precision::F24Truncate, Precision::F24Nearest] {
        let config = ExecConfig {
            precision: p,
            ..ExecConfig::default()
        };
        let mut jit = JitShader::compile(program.clone(), config).unwrap();
        assert!(jit.has_fast_form());
        jit.set_fast_policy(FastPolicy::Always);
        let expected = Interpreter::new(program.clone(), config).run_vertex(&u, &v);
        assert_same_vertex(&expected, &jit.run_vertex(&u, &v));
        assert_bits(expected.unwrap().outputs[0], [0.0, 1.0, 1.0, 1.0]);
        assert_eq!(
            jit.fast_form_reruns(),
            0,
            "{p:?}: the fast form is not tried"
        );
    }
    // f32 mode and geometry shaders have no fast form.
    let f32_config = ExecConfig {
        precision: Precision::F32,
        ..ExecConfig::default()
    };
    assert!(
        !JitShader::compile(program, f32_config)
            .unwrap()
            .has_fast_form()
    );
}
