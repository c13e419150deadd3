use super::*;

fn f(bits: u32) -> f32 {
    f32::from_bits(bits)
}

#[test]
fn f24_to_f32_normal_and_special_patterns() {
    // 1.0: exponent 63, mantissa 0.
    assert_eq!(F24::ONE.to_f32(), 1.0);
    // -2.5 = -1.25 * 2^1: exponent 64, mantissa 0.25 * 2^16 = 0x4000.
    assert_eq!(F24::from_bits(0xC0_4000).unwrap().to_f32(), -2.5);
    assert_eq!(F24::from_bits(0x7F_0000).unwrap().to_f32(), f32::INFINITY);
    assert_eq!(
        F24::from_bits(0xFF_0000).unwrap().to_f32(),
        f32::NEG_INFINITY
    );
    assert_eq!(
        F24::from_bits(CANONICAL_NAN_F24).unwrap().to_f32_bits(),
        CANONICAL_NAN_BITS
    );
    assert_eq!(
        F24::from_bits(0x80_0000).unwrap().to_f32_bits(),
        0x8000_0000
    );
    // Smallest normal 2^-62 and the largest finite value.
    assert_eq!(F24::from_bits(0x01_0000).unwrap().to_f32(), MIN_NORMAL);
    assert_eq!(MIN_NORMAL, 2f32.powi(-62));
    assert_eq!(F24::from_bits(0x7E_FFFF).unwrap().to_f32(), MAX_FINITE);
    assert_eq!(MAX_FINITE as f64, (2.0 - 2f64.powi(-16)) * 2f64.powi(63));
    assert!(F24::from_bits(0x100_0000).is_none());
}

#[test]
fn f24_subnormals_are_exact() {
    // Exponent 0 with mantissa m has the value m * 2^-78.
    for m in [1u32, 2, 3, 0x8000, 0xFFFF, 0x1234] {
        let value = F24::from_bits(m).unwrap().to_f32();
        assert_eq!(value as f64, m as f64 * 2f64.powi(-78), "mantissa {m:#x}");
        let negative = F24::from_bits(0x80_0000 | m).unwrap().to_f32();
        assert_eq!(negative, -value);
    }
}

#[test]
fn every_f24_pattern_round_trips_through_f32() {
    for bits in 0..=0xFF_FFFFu32 {
        let value = F24::from_bits(bits).unwrap();
        let back = F24::from_f32_exact(value.to_f32()).expect("every f24 is an exact f32");
        assert_eq!(back.bits(), bits, "pattern {bits:#08x}");
    }
}

#[test]
fn from_f32_exact_rejects_values_outside_float24() {
    assert!(F24::from_f32_exact(1.0 + f32::EPSILON).is_none()); // 23 mantissa bits
    assert!(F24::from_f32_exact(2f32.powi(64)).is_none()); // exponent too large
    assert!(F24::from_f32_exact(2f32.powi(-79)).is_none()); // below the subnormals
    assert!(F24::from_f32_exact(f(0x7F80_0001)).is_none()); // NaN payload only in dropped bits
    assert!(F24::from_f32_exact(f(0x0000_0001)).is_none()); // f32 subnormal
}

#[test]
fn truncation_rounds_toward_zero() {
    let p = Precision::F24Truncate;
    // 1 + 2^-17 (half an f24 ulp) and 1 + 3*2^-18 truncate to 1.
    assert_eq!(round(1.0 + 2f32.powi(-17), p), 1.0);
    assert_eq!(round(1.0 + 3.0 * 2f32.powi(-18), p), 1.0);
    assert_eq!(round(-(1.0 + 3.0 * 2f32.powi(-18)), p), -1.0);
    // 1 - 2^-24 (an f32 mantissa of all ones below 1) truncates to 1 - 2^-17 (no carry).
    assert_eq!(round(1.0 - 2f32.powi(-24), p), 1.0 - 2f32.powi(-17));
}

#[test]
fn nearest_even_ties_and_carry() {
    let p = Precision::F24Nearest;
    // Tie at 1 + 2^-17: the f24 lsb of 1.0 is even, so it stays.
    assert_eq!(round(1.0 + 2f32.powi(-17), p), 1.0);
    // Tie at 1 + 3*2^-17 (between 1+2^-16 (odd) and 1+2^-15 (even)) goes up.
    assert_eq!(round(1.0 + 3.0 * 2f32.powi(-17), p), 1.0 + 2f32.powi(-15));
    // Above the tie goes up.
    assert_eq!(round(1.0 + 3.0 * 2f32.powi(-18), p), 1.0 + 2f32.powi(-16));
    // Carry into the exponent: 2 - 2^-24 rounds to 2.0.
    assert_eq!(round(2.0 - 2f32.powi(-24), p), 2.0);
    assert_eq!(round(-(2.0 - 2f32.powi(-24)), p), -2.0);
}

#[test]
fn largest_finite_and_overflow() {
    let just_above = f(MAX_FINITE.to_bits() + 1); // more bits than f24 holds, still below 2^64
    assert_eq!(round(just_above, Precision::F24Truncate), MAX_FINITE);
    assert_eq!(round(-just_above, Precision::F24Truncate), -MAX_FINITE);
    // Round to nearest: the tie above MAX_FINITE carries into 2^64, which is infinite in f24.
    let tie = f(MAX_FINITE.to_bits() + 0x40);
    assert_eq!(round(tie, Precision::F24Nearest), f32::INFINITY);
    assert_eq!(round(just_above, Precision::F24Nearest), MAX_FINITE);
    assert_eq!(round(2f32.powi(64), Precision::F24Truncate), f32::INFINITY);
    assert_eq!(round(-1.0e30, Precision::F24Truncate), f32::NEG_INFINITY);
    assert_eq!(round(f32::MAX, Precision::F24Nearest), f32::INFINITY);
    assert_eq!(round(1.0e30, Precision::F32), 1.0e30);
}

#[test]
fn small_values_flush_to_positive_zero() {
    for p in [Precision::F24Truncate, Precision::F24Nearest] {
        assert_eq!(round(2f32.powi(-62), p), 2f32.powi(-62));
        assert_eq!(round(2f32.powi(-63), p).to_bits(), 0);
        assert_eq!(round(-2f32.powi(-63), p).to_bits(), 0, "no negative zero");
        assert_eq!(round(-0.0, p).to_bits(), 0);
        // Subnormal f24 patterns are flushed on output.
        assert_eq!(
            round(F24::from_bits(0xFFFF).unwrap().to_f32(), p).to_bits(),
            0
        );
    }
    // Round to nearest may lift a value just below 2^-62 up to it before the range check.
    assert_eq!(
        round(
            2f32.powi(-62) * (1.0 - 2f32.powi(-20)),
            Precision::F24Nearest
        ),
        MIN_NORMAL
    );
    assert_eq!(
        round(
            2f32.powi(-62) * (1.0 - 2f32.powi(-20)),
            Precision::F24Truncate
        ),
        0.0
    );
    // F32 keeps small values and negative zero.
    assert_eq!(round(-0.0, Precision::F32).to_bits(), 0x8000_0000);
    assert_eq!(round(2f32.powi(-63), Precision::F32), 2f32.powi(-63));
}

#[test]
fn nan_payloads_become_canonical() {
    for payload in [0x7F80_0001, 0xFFC0_0000, 0x7FFF_FFFF, 0xFF80_1234] {
        for p in Precision::ALL {
            assert_eq!(
                round(f(payload), p).to_bits(),
                CANONICAL_NAN_BITS,
                "{p} {payload:#x}"
            );
        }
        // Conversion keeps F32 payloads, canonicalises in F24 modes.
        assert_eq!(convert_f32(f(payload), Precision::F32).to_bits(), payload);
        assert_eq!(
            convert_f32(f(payload), Precision::F24Nearest).to_bits(),
            CANONICAL_NAN_BITS
        );
    }
}

#[test]
fn input_flush_only_in_f24_modes() {
    let sub = F24::from_bits(0x00_8000).unwrap().to_f32();
    for p in [Precision::F24Truncate, Precision::F24Nearest] {
        assert_eq!(flush_input(sub, p).to_bits(), 0);
        assert_eq!(flush_input(-sub, p).to_bits(), 0);
        assert_eq!(flush_input(-0.0, p).to_bits(), 0);
        assert_eq!(flush_input(MIN_NORMAL, p), MIN_NORMAL);
        assert!(flush_input(f32::NAN, p).is_nan());
    }
    assert_eq!(flush_input(-0.0, Precision::F32).to_bits(), 0x8000_0000);
    assert_eq!(flush_input(sub, Precision::F32), sub);
}

#[test]
fn sanitized_multiply() {
    assert_eq!(sanitized_mul(f32::INFINITY, 0.0).to_bits(), 0);
    assert_eq!(sanitized_mul(0.0, f32::NEG_INFINITY).to_bits(), 0);
    assert!(sanitized_mul(f32::NAN, 0.0).is_nan());
    assert!(sanitized_mul(0.0, f32::NAN).is_nan());
    assert_eq!(sanitized_mul(-2.0, 3.0), -6.0);
    assert_eq!(sanitized_mul(f32::INFINITY, -1.0), f32::NEG_INFINITY);
}

#[test]
fn uniform_packing_matches_the_documented_layout() {
    let v = [0x3F_0000, 0x40_0000, 0xC0_8000, 0x12_3456].map(|b| F24::from_bits(b).unwrap());
    let words = pack_uniform(v);
    // word0 = w<<8 | z>>16; word1 = (z & 0xFFFF)<<16 | y>>8; word2 = (y & 0xFF)<<24 | x.
    assert_eq!(words, [0x1234_56C0, 0x8000_4000, 0x003F_0000]);
    assert_eq!(unpack_uniform(words), v);
    // Decoding random words and re-encoding gives the words back (all 96 bits are used).
    let mut state = 0x1234_5678_9ABC_DEF0u64;
    for _ in 0..10_000 {
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u32
        };
        let words = [next(), next(), next()];
        assert_eq!(pack_uniform(unpack_uniform(words)), words);
    }
}

#[test]
fn f32_upload_converts_with_the_mode_and_reverses_lane_order() {
    let words = [4.0f32, 3.0, 2.0, 1.0 + 2f32.powi(-20)].map(f32::to_bits); // w z y x
    assert_eq!(
        unpack_uniform_f32(words, Precision::F24Truncate),
        [1.0, 2.0, 3.0, 4.0]
    );
    assert_eq!(
        unpack_uniform_f32(words, Precision::F32)[0],
        1.0 + 2f32.powi(-20)
    );
}

#[test]
fn precision_names() {
    for p in Precision::ALL {
        assert_eq!(Precision::from_name(p.name()), Some(p));
    }
    assert_eq!(Precision::from_name("f16"), None);
    assert_eq!(Precision::default(), Precision::F24Truncate);
}

#[test]
fn constant_conversion_truncates_like_picasso() {
    assert_eq!(F24::from_f32_picasso(1.0).bits(), 0x3F_0000);
    assert_eq!(F24::from_f32_picasso(-0.0).bits(), 0x80_0000);
    assert_eq!(
        F24::from_f32_picasso(1.0 + 2f32.powi(-20)).bits(),
        0x3F_0000,
        "truncated"
    );
    assert_eq!(
        F24::from_f32_picasso(2f32.powi(-64)).bits(),
        0,
        "below 2^-63"
    );
    assert_eq!(
        F24::from_f32_picasso(1.5 * 2f32.powi(-63)).bits(),
        0x00_8000,
        "exponent 0 keeps its mantissa"
    );
    assert_eq!(F24::from_f32_picasso(f32::INFINITY).bits(), 0x7F_0000);
    assert_eq!(F24::from_f32_picasso(-1.0e30).bits(), 0xFF_0000);
    assert_eq!(
        F24::from_f32_picasso(1.5 * 2f32.powi(64)).bits(),
        0x7F_0000,
        "deliberate: infinity"
    );
    assert_eq!(
        F24::from_f32_picasso(f32::NAN).bits(),
        CANONICAL_NAN_F24,
        "deliberate: NaN stays NaN"
    );
}

/// The fast path's rounding agrees with `round` wherever it does not flag the element, and it
/// flags every NaN and infinite result and nothing below the finite range's end (checked on a sweep of bit
/// patterns that covers every exponent with many mantissas, and on the landmarks).
#[test]
fn flagging_round_is_round_where_unflagged() {
    use lanes::{Exact, round, round_flagging};
    let landmarks = [
        0,
        0x8000_0000,
        MIN_NORMAL_BITS,
        MIN_NORMAL_BITS - 1,
        MAX_FINITE_BITS,
        MAX_FINITE_BITS + 1,
        MAX_FINITE_BITS + 0x40,
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0000,
        0xFFFF_FFFF,
    ];
    let sweep = (0..=u32::MAX).step_by(4099);
    for precision in Precision::ALL {
        for bits in landmarks.into_iter().chain(sweep.clone()) {
            let v = [f(bits); 4];
            let mut unusual = None;
            let fast = round_flagging(&mut Exact, v, precision, &mut unusual);
            let exact = round(&mut Exact, v, precision);
            let flagged = unusual.unwrap()[0];
            let must_flag = exact[0].is_nan() || (precision.is_f24() && exact[0].is_infinite());
            let may_flag = f(bits).is_nan() || (bits & lanes::MAGNITUDE_BITS) > MAX_FINITE_BITS;
            assert!(
                !must_flag || flagged,
                "{precision:?} {bits:#010x} not flagged"
            );
            assert!(!flagged || may_flag, "{precision:?} {bits:#010x} flagged");
            if !flagged {
                assert_eq!(
                    fast[0].to_bits(),
                    exact[0].to_bits(),
                    "{precision:?} {bits:#010x}"
                );
            }
        }
    }
}

/// Every rule finished by [`lanes::FlaggingNan`] (the structure-of-arrays JIT's fast path) gives
/// the exact rule's bits in every element it does not flag, and flags every element whose exact
/// result is a NaN.
#[test]
fn flagging_rules_are_the_exact_rules_where_unflagged() {
    use lanes::{Exact, Exactly, FlaggingNan};
    let specials: Vec<f32> = [
        0u32,
        0x8000_0000,
        MIN_NORMAL_BITS,
        MIN_NORMAL_BITS - 1,
        0x0000_0001,
        MAX_FINITE_BITS,
        MAX_FINITE_BITS | 0x8000_0000,
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0000,
        0xFFC1_2300,
        0x3F80_0000,
        0xBF80_0000,
        0x4000_0000,
        0x5F00_0000,
        0x2000_0000,
        0x3EAA_AA80,
        0xC2F0_0000,
        0x4300_0000,
    ]
    .into_iter()
    .map(f)
    .collect();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let pick = |next: &mut dyn FnMut() -> u64| -> [f32; 4] {
        std::array::from_fn(|_| {
            let r = next();
            if r.is_multiple_of(3) {
                specials[(r >> 8) as usize % specials.len()]
            } else {
                // A float24-representable value of moderate size.
                f(((r >> 20) as u32 & 0x807F_FF80) | (((r >> 8) as u32 % 60 + 97) << 23))
            }
        })
    };
    type Rule3<F> = fn(&mut Exact, &mut F, [f32; 4], [f32; 4], [f32; 4], Precision) -> [f32; 4];
    // Each rule once, run with either finish.
    macro_rules! rules {
        ($finish:ty) => {{
            let ops: [(&str, Rule3<$finish>); 9] = [
                ("add", |l, fin, a, b, _, p| lanes::add_by(l, fin, a, b, p)),
                ("mul", |l, fin, a, b, _, p| lanes::mul_by(l, fin, a, b, p)),
                ("mad", lanes::mad_by),
                (
                    // Three products of element-wise vectors (one component of four vertices
                    // each).
                    "dot3",
                    |l, fin, a, b, c, p| {
                        let products = [
                            lanes::mul_by(l, fin, a, b, p),
                            lanes::mul_by(l, fin, b, c, p),
                            lanes::mul_by(l, fin, c, a, p),
                        ];
                        lanes::dot_sum_by(l, fin, &products, p)
                    },
                ),
                ("rcp", |l, fin, a, _, _, p| lanes::rcp_each_by(l, fin, a, p)),
                ("rsq", |l, fin, a, _, _, p| lanes::rsq_each_by(l, fin, a, p)),
                ("ex2", |l, fin, a, _, _, p| lanes::ex2_each_by(l, fin, a, p)),
                ("lg2", |l, fin, a, _, _, p| lanes::lg2_each_by(l, fin, a, p)),
                ("flr", |l, fin, a, _, _, p| lanes::flr_by(l, fin, a, p)),
            ];
            ops
        }};
    }
    let exact_ops = rules!(Exactly);
    let fast_ops = rules!(FlaggingNan<[bool; 4]>);
    for precision in Precision::ALL {
        for ((name, exact_op), (_, fast_op)) in exact_ops.into_iter().zip(fast_ops) {
            for _ in 0..4000 {
                let (a, b, c) = (pick(&mut next), pick(&mut next), pick(&mut next));
                let exact = exact_op(&mut Exact, &mut Exactly, a, b, c, precision);
                let mut finish = FlaggingNan::default();
                let fast = fast_op(&mut Exact, &mut finish, a, b, c, precision);
                let flags = finish.unusual.unwrap_or([false; 4]);
                for lane in 0..4 {
                    let e = exact[lane];
                    let must = e.is_nan();
                    let what = format!("{name} {precision:?} {a:?} {b:?} {c:?} lane {lane}");
                    assert!(!must || flags[lane], "{what}: not flagged");
                    if !flags[lane] {
                        assert_eq!(fast[lane].to_bits(), e.to_bits(), "{what}");
                    }
                }
            }
        }
    }
}

/// Asserts `got` has `exact`'s bits in every lane `flags` leaves unflagged; with
/// `flags_specials`, also that every lane whose exact result is a NaN (or, in the float24 modes,
/// an infinity) is flagged.
fn assert_exact_where_unflagged(
    what: &dyn Fn() -> String,
    p: Precision,
    exact: [f32; 4],
    got: [f32; 4],
    flags: [bool; 4],
    flags_specials: bool,
) {
    for lane in 0..4 {
        let special = exact[lane].is_nan() || (p.is_f24() && exact[lane].is_infinite());
        assert!(
            !(flags_specials && special) || flags[lane],
            "{} lane {lane} not flagged",
            what()
        );
        if !flags[lane] {
            assert_eq!(
                got[lane].to_bits(),
                exact[lane].to_bits(),
                "{} lane {lane}",
                what()
            );
        }
    }
}

/// Operands for the fast finishes' tests: zeros, subnormals, the normal range's ends,
/// infinities, NaNs and ordinary values.
fn landmark_operands() -> Vec<f32> {
    [
        0,
        0x8000_0000,
        1,
        MIN_NORMAL_BITS,
        MIN_NORMAL_BITS - 1,
        MIN_NORMAL_BITS | 0x8000_0000,
        MAX_FINITE_BITS,
        MAX_FINITE_BITS | 0x8000_0000,
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0000,
        0xFFC0_1234,
        0x3F80_0000,
        0xBF80_0000,
        0x4049_0FDB,
        0x3EAA_AAAB,
        0xC2F6_E979,
        0x5F00_0001,
        0x2000_0001,
        0x4300_0000,
    ]
    .into_iter()
    .map(f)
    .collect()
}

/// Every rule finished by [`lanes::Flagging`] gives the exact rule's bits in every element it
/// does not flag, and flags every element whose exact result is a NaN or (float24 modes) an
/// infinity, on operands drawn from the landmarks (zeros, subnormals, the normal range's ends,
/// infinities, NaNs) and ordinary values.
#[test]
fn flagging_rules_are_exact_where_unflagged() {
    use lanes::{Exact, Exactly, Flagging};
    let values = landmark_operands();
    for precision in Precision::ALL {
        let p = precision;
        for &a in &values {
            for &b in &values {
                for &c in [values[0], values[12], values[8], values[10]].iter() {
                    let (x, y, z) = ([a, b, c, a], [b, c, a, b], [c, a, b, c]);
                    let check = |name: &str,
                                 exact: [f32; 4],
                                 fast: [f32; 4],
                                 unusual: Option<[bool; 4]>| {
                        let what = || format!("{name} {p:?} {x:?} {y:?} {z:?}");
                        let flags = unusual.unwrap_or([false; 4]);
                        assert_exact_where_unflagged(&what, p, exact, fast, flags, true);
                    };
                    macro_rules! compare {
                        ($name:literal, |$l:ident, $fin:ident| $body:expr) => {{
                            let exact = {
                                let $l = &mut Exact;
                                let $fin = &mut Exactly;
                                $body
                            };
                            let mut flagging = Flagging::default();
                            let fast = {
                                let $l = &mut Exact;
                                let $fin = &mut flagging;
                                $body
                            };
                            check($name, exact, fast, flagging.unusual);
                        }};
                    }
                    compare!("add", |l, fin| lanes::add_by(l, fin, x, y, p));
                    compare!("mul", |l, fin| lanes::mul_by(l, fin, x, y, p));
                    compare!("mad", |l, fin| lanes::mad_by(l, fin, x, y, z, p));
                    compare!("dot3", |l, fin| {
                        let products = [x, y, z].map(|t| lanes::mul_by(l, fin, t, y, p));
                        lanes::dot_sum_by(l, fin, &products, p)
                    });
                    compare!("dot4", |l, fin| {
                        let products = [x, y, z, x].map(|t| lanes::mul_by(l, fin, t, z, p));
                        lanes::dot_sum_by(l, fin, &products, p)
                    });
                    compare!("rcp", |l, fin| lanes::rcp_each_by(l, fin, x, p));
                    compare!("rsq", |l, fin| lanes::rsq_each_by(l, fin, x, p));
                    compare!("ex2", |l, fin| lanes::ex2_each_by(l, fin, x, p));
                    compare!("lg2", |l, fin| lanes::lg2_each_by(l, fin, x, p));
                    compare!("flr", |l, fin| lanes::flr_by(l, fin, x, p));
                }
            }
        }
    }
}

/// Every rule finished by [`lanes::FlaggingSignedZeros`] (the scalar JIT's fast path) gives the
/// exact rule's bits in every element it does not flag, except that a zero may be −0 where the
/// rule gives +0; it flags every element whose exact result is a NaN or (float24 modes) an
/// infinity, and (float24 modes) only elements whose exact result is one of those or comes from
/// a magnitude the range rules change. The operands are the landmarks and ordinary values; the
/// rules that only add and multiply also run on operands whose zeros are read as flushed
/// whatever their sign (as the JIT reads that finish's results and their negations), and must
/// still give those bits.
#[test]
fn signed_zero_flagging_rules_are_exact_up_to_a_zero_sign_where_unflagged() {
    use lanes::{Exact, Exactly, FlaggingSignedZeros};
    let mut values = landmark_operands();
    values.extend([0x8000_0001, 0x3F80_0041, 0x9F00_0000].map(f));
    let mut flagged_lanes = 0usize;
    let mut kept_negative_zeros = 0usize;
    for p in Precision::ALL {
        for &a in &values {
            for &b in &values {
                for c in [0.0, -0.0, 1.0, f32::INFINITY, f32::NAN] {
                    let (x, y, z) = ([a, b, c, a], [b, c, a, b], [c, a, b, c]);
                    let mut check =
                        |name: &str, exact: [f32; 4], got: [f32; 4], flags: [bool; 4]| {
                            let what = || format!("{name} {p:?} {x:?} {y:?} {z:?}");
                            for lane in 0..4 {
                                let e = exact[lane];
                                let special = e.is_nan() || (p.is_f24() && e.is_infinite());
                                assert!(
                                    !special || flags[lane],
                                    "{} lane {lane} not flagged",
                                    what()
                                );
                                if flags[lane] {
                                    flagged_lanes += 1;
                                    continue;
                                }
                                let (e, g) = (e.to_bits(), got[lane].to_bits());
                                let kept_sign = p.is_f24() && e == 0 && g == 0x8000_0000;
                                kept_negative_zeros += usize::from(kept_sign);
                                assert!(
                                    e == g || kept_sign,
                                    "{} lane {lane}: {g:#x}, not {e:#x}",
                                    what()
                                );
                            }
                        };
                    macro_rules! compare {
                        ($name:literal, $either_sign:expr, |$l:ident, $fin:ident| $body:expr) => {{
                            let exact = {
                                let $l = &mut Exact;
                                let $fin = &mut Exactly;
                                $body
                            };
                            for either_sign in [false, $either_sign] {
                                let mut fast = FlaggingSignedZeros::default();
                                let $l = &mut Knowing {
                                    precision: p,
                                    fast: true,
                                    zeros_of_either_sign: either_sign,
                                };
                                let got = {
                                    let $fin = &mut fast;
                                    $body
                                };
                                let flags = fast.flagged($l).unwrap_or([false; 4]);
                                check($name, exact, got, flags);
                            }
                        }};
                    }
                    compare!("add", true, |l, fin| lanes::add_by(l, fin, x, y, p));
                    compare!("mul", true, |l, fin| lanes::mul_by(l, fin, x, y, p));
                    compare!("mad", true, |l, fin| lanes::mad_by(l, fin, x, y, z, p));
                    compare!("dp3", true, |l, fin| lanes::dot_by(
                        l,
                        fin,
                        &[(x, y), (y, z), (z, x)],
                        p
                    ));
                    compare!("dp4", true, |l, fin| lanes::dot_by(
                        l,
                        fin,
                        &[(x, y), (y, z), (z, x), (x, z)],
                        p
                    ));
                    compare!("rcp", false, |l, fin| lanes::rcp_each_by(l, fin, x, p));
                    compare!("rsq", false, |l, fin| lanes::rsq_each_by(l, fin, x, p));
                    compare!("ex2", false, |l, fin| lanes::ex2_each_by(l, fin, x, p));
                    compare!("lg2", false, |l, fin| lanes::lg2_each_by(l, fin, x, p));
                    compare!("flr", false, |l, fin| lanes::flr_by(l, fin, x, p));
                }
            }
        }
    }
    // The sweep meets both: flagged elements, and zeros whose sign is left.
    assert!(flagged_lanes > 0 && kept_negative_zeros > 0);
}

/// [`lanes::FlaggingSignedZeros`] checking operands ([`lanes::Checks::Operands`]): where it
/// flags no element, the rules that only add and multiply give the exact rule's bits up to the
/// sign of a zero; it flags every element with an operand beyond 2^30 (NaNs and infinities
/// included) or one the input flush changes; and it flags no MUL, ADD or dot-product element
/// whose operands are zeros or within [2^-20, 2^30] (it is conservative only near the range's
/// ends). The operands are the landmarks, the bounds and their neighbours, and a
/// pseudo-random sweep (every exponent from 2^-70 to 2^34, mantissas of 24 bits, both signs,
/// zeros), in both float24 modes.
#[test]
fn operand_checking_rules_are_exact_up_to_a_zero_sign_where_unflagged() {
    use lanes::{CHECKED_LEAST_BITS, Exact, Exactly, FlaggingSignedZeros, OPERAND_GREATEST_BITS};
    let mut values = landmark_operands();
    for bound in [CHECKED_LEAST_BITS, OPERAND_GREATEST_BITS, 0x3580_0000] {
        for bits in [bound - 1, bound, bound + 1] {
            values.extend([f(bits), f(bits | 0x8000_0000)]);
        }
    }
    // 2^-25·(1 + 2^-16) and 2^-25: with c = −2^-25 below, a dot product's first two products
    // cancel to 2^-66, which the range rules make +0.
    values.extend([f(0x3300_0080), f(0x3300_0000)]);
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut random = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // Exponents 2^-70 to 2^34.
    let (low, high) = (0x1C80_0000u32, 0x5080_0000u32);
    let mut swept: Vec<f32> = (0..600)
        .map(|_| {
            let r = random();
            if r % 9 == 0 {
                return if r & 16 == 0 { 0.0 } else { -0.0 };
            }
            let magnitude = low + ((r >> 8) % u64::from(high - low)) as u32;
            f(magnitude | ((r >> 5) as u32 & 1) << 31)
        })
        .collect();
    swept.extend([1.0, -1.0, 0.5, 3.0]);
    let magnitude = |v: f32| v.to_bits() & lanes::MAGNITUDE_BITS;
    let must_flag = |v: f32| {
        let m = magnitude(v);
        m > OPERAND_GREATEST_BITS || (m != 0 && m < MIN_NORMAL_BITS)
    };
    let comfortable = |v: f32| {
        let m = magnitude(v);
        m == 0 || (0x3580_0000..=OPERAND_GREATEST_BITS).contains(&m)
    };
    let (mut flagged_lanes, mut exact_lanes) = (0usize, 0usize);
    for p in [Precision::F24Truncate, Precision::F24Nearest] {
        let mut check = |name: &str, operands: &[[f32; 4]], exact: [f32; 4], got, flags| {
            let got: [f32; 4] = got;
            let flags: [bool; 4] = flags;
            for lane in 0..4 {
                let lane_operands: Vec<f32> = operands.iter().map(|o| o[lane]).collect();
                let what = || format!("{name} {p:?} {lane_operands:?}");
                if lane_operands.iter().any(|&v| must_flag(v)) {
                    assert!(flags[lane], "{}: not flagged", what());
                }
                if name != "mad" && lane_operands.iter().all(|&v| comfortable(v)) {
                    assert!(!flags[lane], "{}: flagged", what());
                }
                if flags[lane] {
                    flagged_lanes += 1;
                    continue;
                }
                exact_lanes += 1;
                let (e, g) = (exact[lane].to_bits(), got[lane].to_bits());
                let kept_sign = e == 0 && g == 0x8000_0000;
                assert!(e == g || kept_sign, "{}: {g:#x}, not {e:#x}", what());
            }
        };
        let mut compare = |x: [f32; 4], y: [f32; 4], z: [f32; 4]| {
            macro_rules! compare {
                ($name:literal, [$($operand:expr),*], |$l:ident, $fin:ident| $body:expr) => {{
                    let exact = {
                        let $l = &mut Exact;
                        let $fin = &mut Exactly;
                        $body
                    };
                    let mut fast = FlaggingSignedZeros::checking_operands();
                    let got = {
                        let $l = &mut Exact;
                        let $fin = &mut fast;
                        $body
                    };
                    let flags = fast.flagged(&mut Exact).unwrap_or([false; 4]);
                    check($name, &[$($operand),*], exact, got, flags);
                }};
            }
            compare!("add", [x, y], |l, fin| lanes::add_by(l, fin, x, y, p));
            compare!("mul", [x, y], |l, fin| lanes::mul_by(l, fin, x, y, p));
            compare!("mad", [x, y, z], |l, fin| lanes::mad_by(l, fin, x, y, z, p));
            compare!("dp3", [x, y, z], |l, fin| lanes::dot_by(
                l,
                fin,
                &[(x, y), (y, z), (z, x)],
                p
            ));
            compare!("dp4", [x, y, z], |l, fin| lanes::dot_by(
                l,
                fin,
                &[(x, y), (y, z), (z, x), (x, z)],
                p
            ));
        };
        for &a in &values {
            for &b in &values {
                let edges = [f(OPERAND_GREATEST_BITS), f(0xB300_0000)];
                for c in [0.0, -0.0, 1.0, f32::INFINITY, f32::NAN, edges[0], edges[1]] {
                    compare([a, b, c, a], [b, c, a, b], [c, a, b, c]);
                }
            }
        }
        for chunk in swept.chunks_exact(12) {
            let vector = |k: usize| std::array::from_fn(|lane| chunk[4 * k + lane]);
            for rotation in 0..3 {
                let [x, y, z] = std::array::from_fn(|k| vector((k + rotation) % 3));
                compare(x, y, z);
            }
        }
        for &a in &swept {
            for &b in swept.iter().step_by(7) {
                compare([a, b, -a, b], [b, a, b, -b], [a, -b, b, a]);
            }
        }
    }
    assert!(flagged_lanes > 0 && exact_lanes > 0);
}

/// The fast rounding of [`lanes::FlaggingSignedZeros`] on one value: unflagged, it is `round`
/// up to the sign of a zero; it flags every NaN and infinite result and every non-zero value
/// that rounds below 2^-62, and otherwise only magnitudes past the largest finite float24 or
/// non-zero ones below 2^-62 (a sweep of bit patterns and the landmarks around both bounds, in
/// every mode).
#[test]
fn signed_zero_flagging_round_flags_only_the_range_rules() {
    use lanes::{Exact, FlaggingSignedZeros, round, round_flagging_signed_zeros};
    let mut landmarks = vec![0, 0x8000_0000, MAX_FINITE_BITS, 0x7F80_0000, 0x7FC0_0000];
    for bound in [MIN_NORMAL_BITS, MAX_FINITE_BITS + 0x80] {
        landmarks.extend((bound - 0x90..bound + 0x90).flat_map(|b| [b, b | 0x8000_0000]));
    }
    let sweep = (0..=u32::MAX).step_by(4099);
    for p in Precision::ALL {
        for bits in landmarks.iter().copied().chain(sweep.clone()) {
            let v = [f(bits); 4];
            let mut fin = FlaggingSignedZeros::default();
            let fast = round_flagging_signed_zeros(&mut Exact, v, p, &mut fin);
            let exact = round(&mut Exact, v, p)[0];
            let flagged = fin.flagged(&mut Exact).unwrap_or([false; 4])[0];
            let magnitude = bits & lanes::MAGNITUDE_BITS;
            let changed_by_range =
                p.is_f24() && magnitude != 0 && exact.to_bits() & lanes::MAGNITUDE_BITS == 0;
            let small = magnitude != 0 && magnitude < MIN_NORMAL_BITS;
            let may_flag =
                f(bits).is_nan() || (p.is_f24() && (magnitude > MAX_FINITE_BITS || small));
            let must_flag =
                exact.is_nan() || (p.is_f24() && exact.is_infinite()) || changed_by_range;
            assert!(!must_flag || flagged, "{p:?} {bits:#010x} not flagged");
            assert!(!flagged || may_flag, "{p:?} {bits:#010x} flagged");
            if !flagged {
                let (e, g) = (exact.to_bits(), fast[0].to_bits());
                let kept_sign = p.is_f24() && e == 0 && g == 0x8000_0000;
                assert!(
                    e == g || kept_sign,
                    "{p:?} {bits:#010x}: {g:#x}, not {e:#x}"
                );
            }
        }
    }
}

/// [`lanes::Exact`] that knows which of its values are zero or +1.0 in every element and which
/// the rounding leaves unchanged, as a code generator specialised on uniforms knows them: the
/// rules that skip vanishing work ([`lanes::KnownFactor`]) must give the plain rules' bits.
struct Knowing {
    precision: Precision,
    /// Finishing by a fast path, whose rounded values are finite wherever they are not flagged
    /// (elsewhere in the program): only finite values count as rounded by it.
    fast: bool,
    /// Reads a zero of either sign as flushed, as the scalar JIT does with the results of
    /// [`lanes::FlaggingSignedZeros`] and their negations.
    zeros_of_either_sign: bool,
}

impl lanes::Elements for Knowing {
    type Float = [f32; 4];
    type Bits = [u32; 4];
    type Mask = [bool; 4];

    fn bits_of(&mut self, v: [f32; 4]) -> [u32; 4] {
        lanes::Exact.bits_of(v)
    }
    fn float_of(&mut self, v: [u32; 4]) -> [f32; 4] {
        lanes::Exact.float_of(v)
    }
    fn splat_bits(&mut self, bits: u32) -> [u32; 4] {
        lanes::Exact.splat_bits(bits)
    }
    fn and(&mut self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        lanes::Exact.and(a, b)
    }
    fn or(&mut self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        lanes::Exact.or(a, b)
    }
    fn add_bits(&mut self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        lanes::Exact.add_bits(a, b)
    }
    fn shift_right(&mut self, a: [u32; 4], amount: u32) -> [u32; 4] {
        lanes::Exact.shift_right(a, amount)
    }
    fn below(&mut self, a: [u32; 4], b: [u32; 4]) -> [bool; 4] {
        lanes::Exact.below(a, b)
    }
    fn above(&mut self, a: [u32; 4], b: [u32; 4]) -> [bool; 4] {
        lanes::Exact.above(a, b)
    }
    fn is_nan(&mut self, a: [f32; 4]) -> [bool; 4] {
        lanes::Exact.is_nan(a)
    }
    fn is_number(&mut self, a: [f32; 4]) -> [bool; 4] {
        lanes::Exact.is_number(a)
    }
    fn both(&mut self, a: [bool; 4], b: [bool; 4]) -> [bool; 4] {
        lanes::Exact.both(a, b)
    }
    fn either(&mut self, a: [bool; 4], b: [bool; 4]) -> [bool; 4] {
        lanes::Exact.either(a, b)
    }
    fn select(&mut self, mask: [bool; 4], a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        lanes::Exact.select(mask, a, b)
    }
    fn fadd(&mut self, a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        lanes::Exact.fadd(a, b)
    }
    fn fmul(&mut self, a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        lanes::Exact.fmul(a, b)
    }
    fn fdiv(&mut self, a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        lanes::Exact.fdiv(a, b)
    }
    fn sqrt(&mut self, a: [f32; 4]) -> [f32; 4] {
        lanes::Exact.sqrt(a)
    }
    fn floor(&mut self, a: [f32; 4]) -> [f32; 4] {
        lanes::Exact.floor(a)
    }
    fn exp2_each(&mut self, a: [f32; 4]) -> [f32; 4] {
        lanes::Exact.exp2_each(a)
    }
    fn log2_each(&mut self, a: [f32; 4]) -> [f32; 4] {
        lanes::Exact.log2_each(a)
    }
    fn known_factor(&mut self, v: [f32; 4]) -> Option<lanes::KnownFactor> {
        // Factors reach the rules flushed: in the float24 modes a zero is +0 there.
        if v.iter().all(|x| x.to_bits() & lanes::MAGNITUDE_BITS == 0) {
            Some(lanes::KnownFactor::Zero)
        } else if v.iter().all(|&x| x.to_bits() == 1.0f32.to_bits()) {
            Some(lanes::KnownFactor::One)
        } else {
            None
        }
    }
    fn flushed_already(&mut self, v: [f32; 4]) -> Option<[f32; 4]> {
        let flushed = lanes::flush(&mut lanes::Exact, v, self.precision);
        let same_up_to_zero_sign = (0..4)
            .all(|i| v[i].to_bits() == flushed[i].to_bits() || (v[i] == 0.0 && flushed[i] == 0.0));
        (self.zeros_of_either_sign && same_up_to_zero_sign).then_some(v)
    }
    fn is_rounded(&mut self, v: [f32; 4]) -> bool {
        let rounded = lanes::round(&mut lanes::Exact, v, self.precision);
        rounded.map(f32::to_bits) == v.map(f32::to_bits)
            && !(self.fast && v.iter().any(|x| !x.is_finite()))
    }
}

/// MUL, MAD and the dot products with a factor known to be zero or +1.0 skip the product (and
/// the rounding of a rounded value) and still give the plain rules' bits: NaN, infinite, signed
/// zero, subnormal and ordinary other factors, in every mode, finished exactly and by the fast
/// path (exact where it does not flag, flagged where the exact result is a NaN or, in the float24
/// modes, an infinity).
#[test]
fn known_factor_rules_are_the_plain_rules() {
    use lanes::{Exact, Exactly, Flagging};
    let values: Vec<f32> = [
        0,
        0x8000_0000,
        1,
        MIN_NORMAL_BITS,
        MIN_NORMAL_BITS - 1,
        MAX_FINITE_BITS,
        MAX_FINITE_BITS | 0x8000_0000,
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0000,
        0xFFC0_1234,
        0x3F80_0000,
        0xBF80_0000,
        0x3F80_0041,
        0xC2F6_E979,
        0x5F7F_FFC0,
    ]
    .into_iter()
    .map(f)
    .collect();
    // Known factors as a specialised uniform reads them, and a value that is neither.
    let factors = [0.0f32, -0.0, f(1), f(MIN_NORMAL_BITS - 1), 1.0, 2.0];
    let mut skipped = 0;
    for p in Precision::ALL {
        for (i, &a0) in values.iter().enumerate() {
            let a = [
                a0,
                values[(i + 3) % values.len()],
                values[(i + 7) % values.len()],
                1.0,
            ];
            let c = [values[(i + 5) % values.len()], a0, -0.0, 0.0];
            for &k in &factors {
                let k = lanes::flush(&mut Exact, [k; 4], p);
                let mut knowing = Knowing {
                    precision: p,
                    fast: false,
                    zeros_of_either_sign: false,
                };
                let known = lanes::Elements::known_factor(&mut knowing, k).is_some();
                skipped += usize::from(known);
                let check =
                    |name: &str, plain: [f32; 4], got: [f32; 4], flags: Option<[bool; 4]>| {
                        // A fast path's unflagged elements are exact. (Its rule that NaN and
                        // infinite results are flagged is kept where it computes; a product skipped
                        // here passes on a value that was flagged where it was rounded.)
                        let what = || format!("{name} {p:?} a {a:?} k {k:?} c {c:?}");
                        let flags = flags.unwrap_or([false; 4]);
                        assert_exact_where_unflagged(&what, p, plain, got, flags, false);
                    };
                macro_rules! compare {
                    ($name:literal, |$l:ident, $fin:ident| $body:expr) => {{
                        let plain = {
                            let $l = &mut Exact;
                            let $fin = &mut Exactly;
                            $body
                        };
                        let exact = {
                            let $l = &mut Knowing {
                                precision: p,
                                fast: false,
                                zeros_of_either_sign: false,
                            };
                            let $fin = &mut Exactly;
                            $body
                        };
                        check(concat!($name, " exact"), plain, exact, None);
                        let mut flagging = Flagging::default();
                        let fast = {
                            let $l = &mut Knowing {
                                precision: p,
                                fast: true,
                                zeros_of_either_sign: false,
                            };
                            let $fin = &mut flagging;
                            $body
                        };
                        let flags = Some(flagging.unusual.unwrap_or([false; 4]));
                        check(concat!($name, " fast"), plain, fast, flags);
                    }};
                }
                compare!("mul", |l, fin| lanes::mul_by(l, fin, a, k, p));
                compare!("mul swapped", |l, fin| lanes::mul_by(l, fin, k, a, p));
                compare!("mad", |l, fin| lanes::mad_by(l, fin, a, k, c, p));
                compare!("mad swapped", |l, fin| lanes::mad_by(l, fin, k, a, c, p));
                // The dot products of a transform: a known factor in one or several terms, the
                // others ordinary or special.
                let rounded_a = lanes::round(&mut Exact, a, p);
                let shapes: [[([f32; 4], [f32; 4]); 4]; 4] = [
                    [(a, k), (c, a), (a, c), (k, c)],
                    [(k, a), (k, c), (a, a), (c, k)],
                    [(a, k), (c, k), (k, a), (k, k)],
                    [(rounded_a, k), (k, rounded_a), (c, c), (a, k)],
                ];
                for pairs in shapes {
                    for n in [3, 4] {
                        compare!("dot", |l, fin| lanes::dot_by(l, fin, &pairs[..n], p));
                        // The plain rule spelt out: products, then the dot product's sum.
                        let plain = {
                            let products: Vec<[f32; 4]> = pairs[..n]
                                .iter()
                                .map(|&(x, y)| lanes::mul(&mut Exact, x, y, p))
                                .collect();
                            lanes::dot_sum(&mut Exact, &products, p)
                        };
                        let known = lanes::dot_by(
                            &mut Knowing {
                                precision: p,
                                fast: false,
                                zeros_of_either_sign: false,
                            },
                            &mut Exactly,
                            &pairs[..n],
                            p,
                        );
                        check("dot against its definition", plain, known, None);
                    }
                }
            }
        }
    }
    assert!(
        skipped > 0,
        "no factor was known: the rules were not exercised"
    );
}

/// The rounding in real arithmetic, independent of the bit operations `round` uses: a finite
/// non-zero value is a multiple of its ulp with 16 mantissa bits (2^(e-16) for 2^e ≤ |x| <
/// 2^(e+1)); truncation keeps the multiple toward zero, nearest-even the nearest one, ties to the
/// even multiple (f64 holds every quotient exactly). Then the range rules: below 2^-62 in
/// magnitude → +0, beyond the largest finite float24 → ±inf.
fn rounded_in_real_arithmetic(x: f32, precision: Precision) -> f32 {
    if x.is_nan() {
        return CANONICAL_NAN;
    }
    if precision == Precision::F32 {
        return x;
    }
    let value = x as f64;
    let rounded = if value == 0.0 || value.is_infinite() {
        value
    } else {
        let ulp = 2f64.powi(value.abs().log2().floor() as i32 - 16);
        let multiple = value / ulp;
        let kept = match precision {
            Precision::F24Nearest => multiple.round_ties_even(),
            _ => multiple.trunc(),
        };
        kept * ulp
    };
    if rounded.abs() < 2f64.powi(-62) {
        0.0
    } else if rounded.abs() > MAX_FINITE as f64 {
        f32::INFINITY.copysign(x)
    } else {
        rounded as f32
    }
}

/// `round` (whose range rules test the unrounded magnitude against bounds derived for each mode)
/// agrees with the rounding in real arithmetic: densely around both range bounds, at every ulp
/// edge near them, and on a sweep of all bit patterns.
#[test]
fn round_is_the_rounding_in_real_arithmetic() {
    let dense = |centre: u32| (centre - 4096..centre + 4096).flat_map(|m| [m, m | lanes::SIGN_BIT]);
    let bounds = [
        MIN_NORMAL_BITS,
        MAX_FINITE_BITS,
        MAX_FINITE_BITS + 0x80,
        0x3F80_0000,
    ];
    let patterns: Vec<u32> = bounds
        .into_iter()
        .flat_map(dense)
        .chain((0..=u32::MAX).step_by(251))
        .chain([
            0x7F80_0000,
            0xFF80_0000,
            0x7FC0_0001,
            1,
            lanes::SIGN_BIT | 1,
        ])
        .collect();
    for precision in Precision::ALL {
        for &bits in &patterns {
            let expected = rounded_in_real_arithmetic(f(bits), precision);
            assert_eq!(
                round(f(bits), precision).to_bits(),
                expected.to_bits(),
                "{precision:?} {bits:#010x}"
            );
        }
    }
}
