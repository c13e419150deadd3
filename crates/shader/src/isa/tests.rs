use super::*;

/// picasso's format-1 expression, written out independently of the encoder.
fn picasso_format1(op: u32, desc: u32, src1: u32, src2: u32, idx: u32, dst: u32) -> u32 {
    (op << 26) | desc | (src2 << 7) | (src1 << 12) | (idx << 19) | (dst << 21)
}

#[test]
fn format1_matches_picasso_expression() {
    let inst = Instruction::Binary {
        op: BinaryOp::Mul,
        dst: DstReg::temp(0),
        src1: SrcReg::uniform(4),
        src2: SrcReg::input(1),
        rel: RelIndex::A0X,
        desc: 5,
    };
    let word = picasso_format1(0x08, 5, 0x24, 0x01, 1, 0x10);
    assert_eq!(encode(&inst), Ok(word));
    assert_eq!(decode(word), inst);
}

#[test]
fn format1i_puts_the_wide_operand_in_src2() {
    // picasso: FMT_OPCODE(opi) | opdesc | (src2<<7) | (src1<<14) | (src2Idx<<19) | (dest<<21)
    let word = (0x1A << 26) | 3 | (0x30 << 7) | (0x12 << 14) | (3 << 19) | (0x05 << 21);
    let inst = decode(word);
    assert_eq!(
        inst,
        Instruction::Binary {
            op: BinaryOp::Sgei,
            dst: DstReg::output(5),
            src1: SrcReg::temp(2),
            src2: SrcReg::uniform(16),
            rel: RelIndex::AL,
            desc: 3,
        }
    );
    assert_eq!(encode(&inst), Ok(word));
}

#[test]
fn mad_and_madi_layouts() {
    // MAD: opdesc | (src3<<5) | (src2<<10) | (src1<<17) | (src2Idx<<22) | (dest<<24)
    let mad =
        (0x38 << 26) | 31 | (0x02 << 5) | (0x7F << 10) | (0x11 << 17) | (2 << 22) | (0x1F << 24);
    assert_eq!(
        decode(mad),
        Instruction::Mad {
            inverted: false,
            dst: DstReg::temp(15),
            src1: SrcReg::temp(1),
            src2: SrcReg::uniform(95),
            src3: SrcReg::input(2),
            rel: RelIndex::A0Y,
            desc: 31,
        }
    );
    // MADI: opdesc | (src3<<5) | (src2<<12) | (src1<<17) | (src3Idx<<22) | (dest<<24)
    let madi =
        (0x30 << 26) | 7 | (0x40 << 5) | (0x03 << 12) | (0x04 << 17) | (1 << 22) | (0x02 << 24);
    assert_eq!(
        decode(madi),
        Instruction::Mad {
            inverted: true,
            dst: DstReg::output(2),
            src1: SrcReg::input(4),
            src2: SrcReg::input(3),
            src3: SrcReg::uniform(32),
            rel: RelIndex::A0X,
            desc: 7,
        }
    );
    for word in [mad, madi] {
        assert_eq!(encode(&decode(word)), Ok(word));
    }
}

#[test]
fn every_mad_opcode_and_both_cmp_opcodes_decode() {
    for op in 0x30..0x40u32 {
        assert!(
            matches!(decode(op << 26), Instruction::Mad { inverted, .. } if inverted == (op < 0x38))
        );
    }
    // CMP: opdesc | (src2<<7) | (src1<<12) | (src1Idx<<19) | (cmpy<<21) | (cmpx<<24), opcode 0b10111.
    let word = (0x17 << 27) | 9 | (0x01 << 7) | (0x25 << 12) | (5 << 21) | (6 << 24);
    assert_eq!(word >> 26, 0x2F, "CMPX 6 sets the opcode's low bit");
    assert_eq!(
        decode(word),
        Instruction::Cmp {
            src1: SrcReg::uniform(5),
            src2: SrcReg::input(1),
            rel: RelIndex::None,
            desc: 9,
            cmp_x: CompareOp::True(6),
            cmp_y: CompareOp::Ge,
        }
    );
    assert_eq!(encode(&decode(word)), Ok(word));
}

#[test]
fn flow_control_layouts() {
    // Format 2: NUM 0-7, DST 10-21, CONDOP 22-23, REFY 24, REFX 25.
    let ifc = (0x28 << 26) | 3 | (0x012 << 10) | (1 << 22) | (1 << 25);
    assert_eq!(
        decode(ifc),
        Instruction::CondFlow {
            op: CondFlowOp::Ifc,
            cond: Condition {
                ref_x: true,
                ref_y: false,
                combine: CondCombine::And
            },
            target: 0x12,
            count: 3,
            ignored: 0,
        }
    );
    // Format 3: bool id 22-25; LOOP int id 22-23.
    let jmpu = (0x2D << 26) | 1 | (0x100 << 10) | (15 << 22);
    assert_eq!(
        decode(jmpu),
        Instruction::BoolFlow {
            op: BoolFlowOp::Jmpu,
            bool_id: 15,
            target: 0x100,
            count: 1,
            ignored: 0
        }
    );
    let lp = (0x29 << 26) | (0xFFF << 10) | (3 << 22) | (1 << 24) | (1 << 8);
    assert_eq!(
        decode(lp),
        Instruction::Loop {
            int_id: 3,
            target: 0xFFF,
            count: 0,
            ignored: (1 << 24) | (1 << 8)
        }
    );
    // Format 4: winding 22, primitive 23, vertex 24-25.
    let setemit = (0x2B << 26) | (2 << 24) | (1 << 23) | (1 << 22);
    assert_eq!(
        decode(setemit),
        Instruction::SetEmit {
            vertex: 2,
            primitive: true,
            winding: true,
            ignored: 0
        }
    );
    for word in [ifc, jmpu, lp, setemit] {
        assert_eq!(encode(&decode(word)), Ok(word));
    }
}

#[test]
fn unknown_opcodes_keep_the_word() {
    for op in [
        0x10u32, 0x11, 0x14, 0x15, 0x16, 0x17, 0x1C, 0x1D, 0x1E, 0x1F,
    ] {
        let word = (op << 26) | 0x0123_4567 & 0x03FF_FFFF;
        assert_eq!(decode(word), Instruction::Unknown { word });
        assert_eq!(encode(&decode(word)), Ok(word));
    }
    assert_eq!(
        encode(&Instruction::Unknown { word: 0x8400_0000 }),
        Err(EncodeError::KnownOpcode(0x8400_0000))
    );
}

#[test]
fn the_table_has_every_documented_opcode() {
    let count = |m: Mnemonic| OPCODES.iter().filter(|i| i.mnemonic == m).count();
    assert_eq!(count(Mnemonic::Unknown), 10);
    assert_eq!(count(Mnemonic::Mad), 8);
    assert_eq!(count(Mnemonic::Madi), 8);
    assert_eq!(count(Mnemonic::Cmp), 2);
    assert_eq!(OPCODES[0x29].name, "loop");
    assert_eq!(OPCODES[0x22].mnemonic, Mnemonic::End);
}

#[test]
fn encoder_rejects_fields_that_do_not_fit() {
    let mad = Instruction::Mad {
        inverted: false,
        dst: DstReg::temp(0),
        src1: SrcReg::temp(1),
        src2: SrcReg::uniform(0),
        src3: SrcReg::temp(2),
        rel: RelIndex::None,
        desc: 32,
    };
    assert_eq!(
        encode(&mad),
        Err(EncodeError::OpdescOutOfRange {
            desc: 32,
            limit: 32
        })
    );
    let narrow = Instruction::Binary {
        op: BinaryOp::Add,
        dst: DstReg::temp(0),
        src1: SrcReg::temp(0),
        src2: SrcReg::uniform(1),
        rel: RelIndex::None,
        desc: 0,
    };
    assert!(matches!(
        encode(&narrow),
        Err(EncodeError::UniformInNarrowSlot {
            operand: "src2",
            ..
        })
    ));
    let call = Instruction::CondFlow {
        op: CondFlowOp::Call,
        cond: Condition {
            ref_x: true,
            ref_y: true,
            combine: CondCombine::Or,
        },
        target: 4096,
        count: 1,
        ignored: 0,
    };
    assert_eq!(encode(&call), Err(EncodeError::TargetOutOfRange(4096)));
    let nop = Instruction::Simple {
        op: SimpleOp::Nop,
        ignored: 1 << 26,
    };
    assert!(matches!(
        encode(&nop),
        Err(EncodeError::IgnoredBitsOutOfPlace { .. })
    ));
}

#[test]
fn swizzle_and_mask_encodings() {
    assert_eq!(Swizzle::IDENTITY.0, 0x1B);
    assert_eq!(Swizzle::from_components([1, 1, 1, 1]).0, 0x55);
    assert_eq!(Swizzle(0x1B).apply([1, 2, 3, 4]), [1, 2, 3, 4]);
    assert_eq!(
        Swizzle::from_components([3, 2, 1, 0]).apply([1, 2, 3, 4]),
        [4, 3, 2, 1]
    );
    assert_eq!(Swizzle::from_components([0, 1, 1, 1]).to_string(), "xy");
    assert_eq!(DestMask(0b1100).to_string(), "xy");
    assert_eq!(DestMask(0b1000).lanes(), 0b0001);
    assert_eq!(DestMask(0b0001).lanes(), 0b1000);
    // OPDESC_MAKE(out, s1, s2, s3) = out | s1<<4 | s2<<13 | s3<<22 with OPSRC_MAKE(neg, sw) = neg | sw<<1.
    let desc = OperandDescriptor::new(
        DestMask(0b1100),
        [
            (true, Swizzle(0x1B)),
            (false, Swizzle(0x55)),
            (true, Swizzle(0xE4)),
        ],
    );
    assert_eq!(
        desc.0,
        0b1100 | ((1 | 0x1B << 1) << 4) | ((0x55 << 1) << 13) | ((1 | 0xE4 << 1) << 22)
    );
    assert!(desc.negate(0) && !desc.negate(1) && desc.negate(2));
    assert_eq!(desc.swizzle(1), Swizzle(0x55));
}

#[test]
fn disassembly_matches_picasso_syntax() {
    let desc = OperandDescriptor::new(
        DestMask(0b1100),
        [
            (true, Swizzle::from_components([3, 2, 1, 0])),
            (false, Swizzle::IDENTITY),
            (false, Swizzle::IDENTITY),
        ],
    );
    let word = picasso_format1(0x08, 0, 0x24, 0x01, 1, 0x10);
    assert_eq!(
        disasm::format_instruction(&decode(word), &[desc.0]),
        "mul r0.xy, -c4[a0.x].wzyx, v1"
    );
    let ifc = (0x28 << 26) | 3 | (0x012 << 10) | (1 << 22) | (1 << 25);
    assert_eq!(
        disasm::format_instruction(&decode(ifc), &[]),
        "ifc cmp.x && !cmp.y, 0x012, 3"
    );
    assert_eq!(disasm::format_instruction(&decode(0x8800_0000), &[]), "end");
    assert_eq!(
        disasm::format_instruction(&decode(0x8800_0001), &[]),
        "end ; ignored bits 0x00000001"
    );
}

#[test]
fn source_lanes_follow_the_operation() {
    let mask_xy = OperandDescriptor::new(DestMask(0b1100), [(false, Swizzle(0x1B)); 3]);
    let dp3 = decode(picasso_format1(0x01, 0, 0x20, 0x01, 0, 0));
    let lanes: Vec<u8> = dp3.sources(mask_xy).iter().map(|s| s.lanes).collect();
    assert_eq!(lanes, [0b0111, 0b0111]);
    let add = decode(picasso_format1(0x00, 0, 0x20, 0x01, 0, 0));
    let lanes: Vec<u8> = add.sources(mask_xy).iter().map(|s| s.lanes).collect();
    assert_eq!(lanes, [0b0011, 0b0011]);
    // .wwww reads only component w whatever lanes are used.
    let splat_w = OperandDescriptor::new(DestMask(0b1111), [(false, Swizzle(0xFF)); 3]);
    assert_eq!(add.sources(splat_w)[0].components(splat_w), 0b1000);
}

/// A sample of the full sweep that the release-mode test in `jit-tests/isa_sweep.rs` runs over
/// all 2^32 words: every opcode with pseudo-random operand bits.
#[test]
fn decode_encode_round_trip_sample() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..200_000 {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let word = (state >> 32) as u32;
        assert_eq!(encode(&decode(word)), Ok(word), "{word:#010x}");
    }
}

/// The decoded operand form follows docs/execution-model.md §4's table: the index offsets the
/// wide field only (SRC1 in formats 1, 1u and 1c, SRC2 in 1i and 5, SRC3 in 5i), and the
/// inverted forms compute their base operation.
#[test]
fn operations_put_the_index_on_the_wide_operand() {
    let rels = |inst: Instruction| -> Vec<(RelIndex, usize)> {
        let operation = inst.operation().expect("a data instruction");
        operation.operands().map(|o| (o.rel, o.slot)).collect()
    };
    let n = RelIndex::None;
    // Format 1: ADD (opcode 0); 1i: SGEI (0x1A); 1u: MOV (0x13); 1c: CMP (0x2E); MOVA (0x12).
    let format1 = (0x30 << 12) | (0x02 << 7) | (1 << 19);
    assert_eq!(rels(decode(format1)), [(RelIndex::A0X, 0), (n, 1)]);
    let format1i = (0x1A << 26) | (0x30 << 7) | (0x12 << 14) | (3 << 19);
    assert_eq!(rels(decode(format1i)), [(n, 0), (RelIndex::AL, 1)]);
    let mov = (0x13 << 26) | (0x30 << 12) | (2 << 19);
    assert_eq!(rels(decode(mov)), [(RelIndex::A0Y, 0)]);
    let mova = (0x12 << 26) | (0x30 << 12) | (3 << 19);
    assert_eq!(rels(decode(mova)), [(RelIndex::AL, 0)]);
    let cmp = (0x2E << 26) | (0x30 << 12) | (0x02 << 7) | (1 << 19);
    assert_eq!(rels(decode(cmp)), [(RelIndex::A0X, 0), (n, 1)]);
    // MAD: SRC2 wide; MADI: SRC3 wide.
    let mad = (0x38 << 26) | (0x02 << 5) | (0x7F << 10) | (0x11 << 17) | (2 << 22);
    assert_eq!(rels(decode(mad)), [(n, 0), (RelIndex::A0Y, 1), (n, 2)]);
    let madi = (0x30 << 26) | (0x40 << 5) | (0x03 << 12) | (0x04 << 17) | (1 << 22);
    assert_eq!(rels(decode(madi)), [(n, 0), (n, 1), (RelIndex::A0X, 2)]);
    // The inverted forms (DPHI 0x18, DSTI 0x19, SGEI 0x1A, SLTI 0x1B) are their base operation.
    for (opcode, base) in [
        (0x18, BinaryOperation::Dph),
        (0x19, BinaryOperation::Dst),
        (0x1A, BinaryOperation::Sge),
        (0x1B, BinaryOperation::Slt),
    ] {
        match decode(opcode << 26).operation() {
            Some(Operation::Binary { op, .. }) => assert_eq!(op, base),
            other => panic!("{opcode:#x}: {other:?}"),
        }
    }
    // No data operation: NOP (0x21), END (0x22), EMIT (0x23), JMPC (0x2C), an unknown opcode.
    for opcode in [0x21u32, 0x22, 0x23, 0x2C, 0x10] {
        assert_eq!(decode(opcode << 26).operation(), None, "{opcode:#x}");
    }
}

/// Decoding a whole memory gives each word's own decoding, across runs of equal words and
/// words that differ from their neighbour.
#[test]
fn decoding_a_memory_decodes_every_word() {
    let mut words = vec![0u32; 64];
    words[3] = 0x4E00_0000; // a MOV
    words[4] = 0x4E00_0000;
    words[5] = 0x8800_0000; // END
    words[20] = 0x0800_0000;
    words[63] = 0xFFFF_FFFF;
    let decoded = decode_words(&words);
    assert_eq!(decoded.len(), words.len());
    for (word, inst) in words.iter().zip(&decoded) {
        assert_eq!(*inst, decode(*word), "{word:#010x}");
    }
    let mut calls = 0;
    let ops = decode_each(&words, |inst| {
        calls += 1;
        inst.operation()
    });
    assert_eq!(
        ops,
        words
            .iter()
            .map(|&w| decode(w).operation())
            .collect::<Vec<_>>()
    );
    // Once per run of equal words: 0 | MOV MOV | END | 0… | 0x08… | 0… | 0xFF….
    assert_eq!(calls, 7);
}

#[test]
fn every_table_name_gives_its_mnemonics_opcode() {
    for (opcode, row) in OPCODES.iter().enumerate() {
        if row.mnemonic == Mnemonic::Unknown {
            continue;
        }
        let named = opcode_named(row.name).expect("every row's name is found");
        assert_eq!(named, opcode_of(row.mnemonic), "{}", row.name);
        assert!(named as usize <= opcode, "{}: the lowest opcode", row.name);
    }
    assert_eq!(opcode_named("for"), Some(0x29));
    assert_eq!(opcode_named("dphi"), Some(0x18));
    assert_eq!(opcode_named("unknown"), None);
    assert_eq!(opcode_named("frobnicate"), None);
}
