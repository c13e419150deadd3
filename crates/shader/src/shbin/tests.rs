use super::*;

/// Little-endian byte builder for the hand-written file.
struct Bytes(Vec<u8>);

impl Bytes {
    fn u8(&mut self, value: u8) -> &mut Self {
        self.0.push(value);
        self
    }
    fn u16(&mut self, value: u16) -> &mut Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }
    fn u32(&mut self, value: u32) -> &mut Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }
    fn raw(&mut self, value: &[u8]) -> &mut Self {
        self.0.extend_from_slice(value);
        self
    }
    fn at(&self, offset: usize) {
        assert_eq!(self.0.len(), offset, "hand-built layout drifted");
    }
}

// File offsets of the hand-built file's fields.
const DVLE_COUNT: usize = 0x04;
const DVLE0_OFFSET: usize = 0x08;
const DVLP: usize = 0x0C;
const DVLE: usize = 0x44;
const CONSTANT0: usize = DVLE + 0x40;
const CONSTANT1: usize = CONSTANT0 + 20;
const LABEL0: usize = CONSTANT1 + 20;
const OUTPUT0: usize = LABEL0 + 16;
const UNIFORM0: usize = OUTPUT0 + 8;
const SYMBOLS: usize = UNIFORM0 + 8;
const FILE_LEN: usize = SYMBOLS + 16;

const FLOAT_C95: [u32; 4] = [0x3F_0000, 0x40_0000, 0xBF_0000, 0x7F_8000];

/// A one-DVLE file in picasso's layout, written field by field (independent of the writer).
fn hand_file() -> Vec<u8> {
    let mut b = Bytes(Vec::new());
    // DVLB
    b.raw(b"DVLB").u32(1).u32(DVLE as u32);
    b.at(DVLP);
    // DVLP: code at 0x28 (2 words), opdescs at 0x30 (1 entry), dvlpSize 0x38.
    b.raw(b"DVLP")
        .u32(0)
        .u32(0x28)
        .u32(2)
        .u32(0x30)
        .u32(1)
        .u32(0x38);
    b.u32(0).u32(0).u32(0);
    b.u32(0x4C00_0000).u32(0x8800_0000);
    b.u32(0x0000_036F).u32(0x1234_5678);
    b.at(DVLE);
    // DVLE header
    b.raw(b"DVLE").u16(0x1002).u8(0).u8(0);
    b.u32(0).u32(2).u16(0x0001).u16(0x0003);
    b.u8(0).u8(0).u8(0).u8(0);
    b.u32(0x40).u32(2); // constants
    b.u32(0x68).u32(1); // labels
    b.u32(0x78).u32(1); // outputs
    b.u32(0x80).u32(1); // uniforms
    b.u32(0x88).u32(16); // symbols
    b.at(CONSTANT0);
    b.u16(2).u16(95);
    FLOAT_C95.iter().for_each(|&w| {
        b.u32(w);
    });
    b.at(CONSTANT1);
    b.u16(0).u16(3).u32(1).u32(0).u32(0).u32(0);
    b.at(LABEL0);
    b.u16(7).u16(0).u32(0).u32(2).u32(11);
    b.at(OUTPUT0);
    b.u16(0).u16(0).u16(0xF).u16(0);
    b.at(UNIFORM0);
    b.u32(0).u16(0x10).u16(0x13);
    b.at(SYMBOLS);
    b.raw(b"projection\0main\0");
    b.at(FILE_LEN);
    b.0
}

fn put32(bytes: &mut [u8], offset: usize, value: u32) {
    bytes[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
}

fn parse_err(bytes: &[u8]) -> (ShbinError, String) {
    let err = parse(bytes).expect_err("parse should fail");
    let message = err.to_string();
    assert!(!message.contains('\n'), "multi-line message: {message}");
    (err, message)
}

#[test]
fn hand_built_file_parses_field_by_field() {
    let shbin = parse(&hand_file()).unwrap();
    assert_eq!(shbin.code, [0x4C00_0000, 0x8800_0000]);
    assert_eq!(shbin.opdescs, [0x36F]);
    assert_eq!(shbin.opdesc_extra, [0x1234_5678]);
    assert_eq!(shbin.dvles.len(), 1);
    let dvle = &shbin.dvles[0];
    assert_eq!(dvle.version, 0x1002);
    assert_eq!(dvle.kind, ShaderKind::Vertex);
    assert!(!dvle.merge_outmaps);
    assert_eq!((dvle.entry, dvle.end), (0, 2));
    assert_eq!((dvle.input_mask, dvle.output_mask), (1, 3));
    assert_eq!(dvle.gs, GsConfig::default());
    let Constant::Float { index, value } = dvle.constants[0] else {
        panic!("constant 0 is {:?}", dvle.constants[0]);
    };
    assert_eq!(index, 95);
    assert_eq!(value.map(F24::bits), FLOAT_C95);
    assert_eq!(value.map(F24::to_f32)[..3], [1.0, 2.0, -1.0]);
    assert!(value[3].to_f32().is_nan());
    assert_eq!(
        dvle.constants[1],
        Constant::Bool {
            index: 3,
            value: true
        }
    );
    assert_eq!(
        dvle.labels,
        [Label {
            id: 7,
            unknown: 0,
            offset: 0,
            size: 2,
            name: "main".into()
        }]
    );
    assert_eq!(
        dvle.outputs,
        [OutputEntry {
            semantic: OutputSemantic::Position,
            register: 0,
            mask: 0xF,
            unknown: 0
        }]
    );
    assert_eq!(
        dvle.uniforms,
        [UniformEntry {
            name: "projection".into(),
            first: 0x10,
            last: 0x13
        }]
    );
    assert_eq!(dvle.uniforms[0].describe(), "c0-c3");
    assert_eq!(dvle.symbols, b"projection\0main\0");
    assert_eq!(dvle.output_registers(), [(0, 0xF)]);
}

#[test]
fn hand_built_file_is_rewritten_exactly() {
    let bytes = hand_file();
    assert_eq!(write(&parse(&bytes).unwrap()), bytes);
}

#[test]
fn tables_in_any_order_parse() {
    // Symbol table first, then the uniform table, both placed by hand.
    let mut b = Bytes(Vec::new());
    b.raw(b"DVLB").u32(1).u32(0x34);
    b.raw(b"DVLP")
        .u32(0)
        .u32(0x28)
        .u32(0)
        .u32(0x28)
        .u32(0)
        .u32(0x28);
    b.u32(0).u32(0).u32(0);
    b.at(0x34);
    b.raw(b"DVLE")
        .u16(0)
        .u8(1)
        .u8(1)
        .u32(5)
        .u32(9)
        .u16(0)
        .u16(0);
    b.u8(2).u8(4).u8(0).u8(3);
    b.u32(0x40).u32(0).u32(0x40).u32(0).u32(0x40).u32(0);
    b.u32(0x48).u32(1); // uniforms after the symbols
    b.u32(0x40).u32(8); // symbols at 0x40
    b.raw(b"x\0bools\0");
    b.u32(2).u16(0x78).u16(0x87);
    let shbin = parse(&b.0).unwrap();
    let dvle = &shbin.dvles[0];
    assert_eq!(dvle.kind, ShaderKind::Geometry);
    assert!(dvle.merge_outmaps);
    assert_eq!(
        dvle.gs,
        GsConfig {
            mode: GsMode::Fixed,
            fixed_start: 4,
            variable_vertices: 0,
            fixed_vertices: 3
        }
    );
    assert_eq!(dvle.uniforms[0].name, "bools");
    assert_eq!(dvle.uniforms[0].describe(), "b0-b15");
}

#[test]
fn float_constant_ignores_the_top_byte() {
    let mut bytes = hand_file();
    put32(&mut bytes, CONSTANT0 + 4, 0xAB3F_0000);
    let dvle = &parse(&bytes).unwrap().dvles[0];
    let Constant::Float { value, .. } = dvle.constants[0] else {
        panic!("not a float constant");
    };
    assert_eq!(value[0], F24::ONE);
}

#[test]
fn non_utf8_names_are_decoded_lossily() {
    let mut bytes = hand_file();
    bytes[SYMBOLS] = 0xFF;
    let shbin = parse(&bytes).unwrap();
    assert_eq!(shbin.dvles[0].uniforms[0].name, "\u{FFFD}rojection");
    // The rewrite appends the replaced form; the result reads back with the same names.
    let again = parse(&write(&shbin)).unwrap();
    assert_eq!(again.dvles[0].uniforms, shbin.dvles[0].uniforms);
    assert_eq!(again.dvles[0].labels, shbin.dvles[0].labels);
}

// ---- writer round trips ----

fn f24(bits: u32) -> F24 {
    F24::from_bits_truncated(bits)
}

fn vertex_dvle() -> Dvle {
    let mut dvle = Dvle {
        version: PICASSO_DVLE_VERSION,
        kind: ShaderKind::Vertex,
        merge_outmaps: false,
        entry: 0,
        end: 3,
        input_mask: 0b11,
        output_mask: 0b111,
        gs: GsConfig::default(),
        constants: vec![
            Constant::Float {
                index: 95,
                value: [f24(0x3F_0000), F24::ZERO, f24(0xFF_FFFF), f24(0x80_0000)],
            },
            Constant::Int {
                index: 3,
                value: [1, 2, 3, 255],
            },
            Constant::Bool {
                index: 15,
                value: false,
            },
            Constant::Bool {
                index: 0,
                value: true,
            },
        ],
        labels: vec![Label {
            id: 1,
            unknown: 0xBEEF,
            offset: 2,
            size: 0xFFFF_FFFF,
            name: "main".into(),
        }],
        outputs: [
            OutputSemantic::Position,
            OutputSemantic::NormalQuat,
            OutputSemantic::Color,
            OutputSemantic::TexCoord0,
            OutputSemantic::TexCoord0W,
            OutputSemantic::TexCoord1,
            OutputSemantic::TexCoord2,
            OutputSemantic::View,
            OutputSemantic::Dummy,
            OutputSemantic::Other(7),
            OutputSemantic::Other(0x1234),
        ]
        .into_iter()
        .zip(0u16..)
        .map(|(semantic, register)| OutputEntry {
            semantic,
            register,
            mask: register % 16,
            unknown: register * 3,
        })
        .collect(),
        uniforms: vec![
            uniform("projection", 0x10, 0x13),
            uniform("flags", 0x78, 0x7A),
            uniform("loop", 0x70, 0x70),
            uniform("position", 0x00, 0x00),
            uniform("projection", 0x14, 0x17), // a repeated name shares its symbol
        ],
        symbols: Vec::new(),
    };
    dvle.rebuild_symbols();
    dvle
}

fn uniform(name: &str, first: u16, last: u16) -> UniformEntry {
    UniformEntry {
        name: name.into(),
        first,
        last,
    }
}

fn geometry_dvle(mode: GsMode) -> Dvle {
    let mut dvle = Dvle {
        version: 0x1002,
        kind: ShaderKind::Geometry,
        merge_outmaps: mode == GsMode::Point,
        entry: 3,
        end: 5,
        input_mask: 0xFFFF,
        output_mask: 0x8001,
        gs: GsConfig {
            mode,
            fixed_start: 40,
            variable_vertices: 2,
            fixed_vertices: 4,
        },
        constants: Vec::new(),
        labels: Vec::new(),
        outputs: vec![OutputEntry {
            semantic: OutputSemantic::Position,
            register: 0,
            mask: 0xF,
            unknown: 0,
        }],
        uniforms: vec![uniform("x.y", 0x6F, 0x6F)],
        symbols: Vec::new(),
    };
    dvle.rebuild_symbols();
    dvle
}

fn models() -> Vec<Shbin> {
    let code: Vec<u32> = (0..4096u32).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
    vec![
        Shbin {
            code: Vec::new(),
            opdescs: Vec::new(),
            opdesc_extra: Vec::new(),
            dvles: Vec::new(),
        },
        Shbin {
            code: vec![0x8800_0000],
            opdescs: vec![0x36F],
            opdesc_extra: vec![0xF],
            dvles: vec![vertex_dvle()],
        },
        Shbin {
            code: code[..6].to_vec(),
            opdescs: (0..128).collect(),
            opdesc_extra: (0..128).map(|i| i * 7).collect(),
            dvles: vec![
                vertex_dvle(),
                geometry_dvle(GsMode::Point),
                geometry_dvle(GsMode::Variable),
                geometry_dvle(GsMode::Fixed),
            ],
        },
        Shbin {
            code,
            opdescs: vec![1],
            opdesc_extra: vec![2],
            dvles: vec![geometry_dvle(GsMode::Fixed)],
        },
    ]
}

#[test]
fn write_then_parse_round_trips() {
    for model in models() {
        let bytes = write(&model);
        assert_eq!(bytes.len() % 4, 0);
        assert_eq!(parse(&bytes).as_ref(), Ok(&model));
        // And the writer is a fixed point on its own output.
        assert_eq!(write(&parse(&bytes).unwrap()), bytes);
    }
}

#[test]
fn writer_uses_picassos_layout() {
    let model = &models()[2];
    let bytes = write(model);
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let dvlp = 8 + 4 * 4;
    assert_eq!(&bytes[dvlp..dvlp + 4], b"DVLP");
    assert_eq!(word(dvlp + 0x08), 0x28);
    assert_eq!(word(dvlp + 0x10), 0x28 + 4 * 6);
    let dvlp_size = 0x28 + 4 * 6 + 8 * 128;
    assert_eq!(word(dvlp + 0x18), dvlp_size);
    let first = word(8) as usize;
    assert_eq!(first, dvlp + dvlp_size as usize);
    assert_eq!(word(first + 0x18), 0x40);
    // label table right after the constants, then outputs, uniforms, symbols.
    assert_eq!(word(first + 0x20), 0x40 + 4 * 20);
    assert_eq!(word(first + 0x28), 0x40 + 4 * 20 + 16);
    assert_eq!(word(first + 0x30), 0x40 + 4 * 20 + 16 + 11 * 8);
    assert_eq!(word(first + 0x38), 0x40 + 4 * 20 + 16 + 11 * 8 + 5 * 8);
    for offset in (0..4).map(|i| word(8 + 4 * i)) {
        assert_eq!(offset % 4, 0);
    }
}

#[test]
fn symbols_are_reused_and_missing_names_appended() {
    let mut dvle = geometry_dvle(GsMode::Point);
    dvle.symbols = b"unused\0x.y\0".to_vec();
    let model = Shbin {
        code: Vec::new(),
        opdescs: Vec::new(),
        opdesc_extra: Vec::new(),
        dvles: vec![dvle.clone()],
    };
    assert_eq!(parse(&write(&model)), Ok(model.clone()));

    // An unterminated fragment is closed before the missing name is appended.
    let mut fragment = model.clone();
    fragment.dvles[0].symbols = b"junk".to_vec();
    let parsed = parse(&write(&fragment)).unwrap();
    assert_eq!(parsed.dvles[0].symbols, b"junk\0x.y\0");
    assert_eq!(parsed.dvles[0].uniforms, dvle.uniforms);
    assert_eq!(write(&parsed), write(&fragment));
}

#[test]
fn rebuild_symbols_lists_each_name_once() {
    let dvle = vertex_dvle();
    assert_eq!(
        dvle.symbols,
        b"projection\0flags\0loop\0position\0main\0".to_vec()
    );
}

// ---- helpers ----

#[test]
fn output_registers_combine_entries() {
    let mut dvle = geometry_dvle(GsMode::Point);
    let entry = |semantic, register, mask| OutputEntry {
        semantic,
        register,
        mask,
        unknown: 0,
    };
    dvle.outputs = vec![
        entry(OutputSemantic::TexCoord0, 2, 0b0011),
        entry(OutputSemantic::Position, 0, 0b1111),
        entry(OutputSemantic::TexCoord0W, 2, 0b0100),
        entry(OutputSemantic::Color, 15, 0b1000),
        entry(OutputSemantic::Color, 16, 0b1111),
    ];
    assert_eq!(
        dvle.output_registers(),
        [(0, 0b1111), (2, 0b0111), (15, 0b1000)]
    );
}

#[test]
fn uniform_ranges_are_described_in_assembler_syntax() {
    assert_eq!(uniform("a", 0x14, 0x17).describe(), "c4-c7");
    assert_eq!(uniform("a", 0x7B, 0x7B).describe(), "b3");
    assert_eq!(uniform("a", 0x70, 0x70).describe(), "i0");
    assert_eq!(uniform("a", 0x02, 0x02).describe(), "v2");
    assert_eq!(uniform("a", 0x6F, 0x6F).describe(), "c95");
    assert_eq!(uniform("a", 0x87, 0x87).describe(), "b15");
    assert_eq!(uniform("a", 0x74, 0x74).describe(), "?0x74");
    assert_eq!(uniform("a", 0x6E, 0x71).describe(), "c94-i1");
    for index in 0..0x100 {
        if let Some(register) = UniformRegister::from_unified(index) {
            assert_eq!(register.unified(), index);
        }
    }
}

#[test]
fn output_semantic_codes_and_names() {
    let names = [
        "position",
        "normalquat",
        "color",
        "texcoord0",
        "texcoord0w",
        "texcoord1",
        "texcoord2",
        "unknown",
        "view",
        "dummy",
    ];
    for (code, name) in (0u16..).zip(names) {
        let semantic = OutputSemantic::from_code(code);
        assert_eq!(semantic.code(), code);
        assert_eq!(semantic.name(), name);
    }
    assert_eq!(OutputSemantic::from_code(7), OutputSemantic::Other(7));
    assert_eq!(OutputSemantic::Other(7).to_string(), "unknown(7)");
    assert_eq!(OutputSemantic::TexCoord0W.to_string(), "texcoord0w");
}

// ---- malformed input ----

#[test]
fn every_truncation_is_an_error() {
    let bytes = hand_file();
    for len in 0..bytes.len() {
        let (_, message) = parse_err(&bytes[..len]);
        assert!(message.contains("past the end"), "{len}: {message}");
    }
    assert_eq!(
        parse_err(&bytes[..3]).1,
        "DVLB header (0x8 bytes at 0x0) extends past the end of the file (0x3 bytes)"
    );
}

#[test]
fn bad_magic_in_each_header() {
    for (offset, expected) in [(0, "DVLB"), (DVLP, "DVLP"), (DVLE, "DVLE")] {
        let mut bytes = hand_file();
        bytes[offset + 3] = b'X';
        let (err, message) = parse_err(&bytes);
        assert!(matches!(err, ShbinError::BadMagic { .. }));
        let found = format!("{}X", &expected[..3]);
        assert_eq!(
            message,
            format!("bad magic at {offset:#x}: expected \"{expected}\", found \"{found}\"")
        );
    }
    let mut bytes = hand_file();
    bytes[..4].copy_from_slice(&[0, 0xFF, b'"', b'\n']);
    let message = parse_err(&bytes).1;
    assert_eq!(
        message,
        r#"bad magic at 0x0: expected "DVLB", found "\x00\xff\"\n""#
    );
}

/// Each corrupted field, the values it is set to, and the text the error must contain.
#[test]
fn corrupt_offsets_and_counts_name_their_table() {
    let len = FILE_LEN as u32;
    let dvle_table = |field: usize| DVLE + field;
    let cases: [(usize, &str); 16] = [
        (DVLE_COUNT, "DVLE offset table"),
        (DVLE0_OFFSET, "DVLE 0 (at "),
        (DVLP + 0x08, "DVLP (at 0xc): code (offset"),
        (DVLP + 0x0C, "DVLP (at 0xc): code "),
        (
            DVLP + 0x10,
            "DVLP (at 0xc): operand descriptor table (offset",
        ),
        (DVLP + 0x14, "DVLP (at 0xc): operand descriptor count"),
        (dvle_table(0x18), "DVLE 0 (at 0x44): constant table (offset"),
        (dvle_table(0x1C), "DVLE 0 (at 0x44): constant table (offset"),
        (dvle_table(0x20), "DVLE 0 (at 0x44): label table (offset"),
        (dvle_table(0x24), "DVLE 0 (at 0x44): label table (offset"),
        (dvle_table(0x28), "DVLE 0 (at 0x44): output table (offset"),
        (dvle_table(0x2C), "DVLE 0 (at 0x44): output table (offset"),
        (dvle_table(0x30), "DVLE 0 (at 0x44): uniform table (offset"),
        (dvle_table(0x34), "DVLE 0 (at 0x44): uniform table (offset"),
        (dvle_table(0x38), "DVLE 0 (at 0x44): symbol table (offset"),
        (dvle_table(0x3C), "DVLE 0 (at 0x44): symbol table (offset"),
    ];
    for (field, needle) in cases {
        for value in [0xFFFF_FFFF, 0x7FFF_FFFF, len] {
            let mut bytes = hand_file();
            put32(&mut bytes, field, value);
            let message = parse_err(&bytes).1;
            assert!(
                message.contains(needle),
                "field {field:#x} = {value:#x}: {message}"
            );
        }
    }
}

#[test]
fn table_error_message_gives_offset_entries_and_file_size() {
    let mut bytes = hand_file();
    put32(&mut bytes, DVLE + 0x2C, 3);
    put32(&mut bytes, DVLE + 0x28, 0x88);
    assert_eq!(
        parse_err(&bytes).1,
        "DVLE 0 (at 0x44): output table (offset 0x88 + 3 entries of 8 bytes) extends past the \
         end of the file (0xdc bytes)"
    );
    let mut bytes = hand_file();
    put32(&mut bytes, DVLE + 0x3C, 17);
    assert_eq!(
        parse_err(&bytes).1,
        "DVLE 0 (at 0x44): symbol table (offset 0x88 + 0x11 bytes) extends past the end of the \
         file (0xdc bytes)"
    );
    let mut bytes = hand_file();
    put32(&mut bytes, DVLE_COUNT, 0xFFFF_FFFF);
    assert_eq!(
        parse_err(&bytes).1,
        "DVLE offset table (offset 0x8 + 4294967295 entries of 4 bytes) extends past the end \
         of the file (0xdc bytes)"
    );
    let mut bytes = hand_file();
    put32(&mut bytes, DVLE0_OFFSET, 0xA0);
    assert_eq!(
        parse_err(&bytes).1,
        "DVLE 0 (at 0xa0): DVLE header (0x40 bytes at 0xa0) extends past the end of the file \
         (0xdc bytes)"
    );
}

#[test]
fn hardware_limits_on_code_and_opdescs() {
    let mut bytes = hand_file();
    put32(&mut bytes, DVLP + 0x0C, 4097);
    assert_eq!(
        parse_err(&bytes).1,
        "DVLP (at 0xc): code size 4097 (at 0x18) exceeds the maximum of 4096"
    );
    let mut bytes = hand_file();
    put32(&mut bytes, DVLP + 0x14, 129);
    let (err, message) = parse_err(&bytes);
    assert!(matches!(err, ShbinError::TooLarge { max: 128, .. }));
    assert!(
        message.contains("operand descriptor count 129"),
        "{message}"
    );
}

#[test]
fn bad_constants_are_errors() {
    let mut bytes = hand_file();
    bytes[CONSTANT1] = 7;
    assert_eq!(
        parse_err(&bytes).1,
        "DVLE 0 (at 0x44): constant 1 at 0x98 has unknown type 7"
    );
    for (kind, max, file) in [(0u8, 15u16, 'b'), (1, 3, 'i'), (2, 95, 'c')] {
        for register in [max + 1, 0x100, 0xFFFF] {
            let mut bytes = hand_file();
            bytes[CONSTANT0] = kind;
            bytes[CONSTANT0 + 2..CONSTANT0 + 4].copy_from_slice(&register.to_le_bytes());
            assert_eq!(
                parse_err(&bytes).1,
                format!(
                    "DVLE 0 (at 0x44): constant 0 at 0x84: register {file}{register} is out of \
                     range ({file}0-{file}{max})"
                )
            );
        }
        let mut bytes = hand_file();
        bytes[CONSTANT0] = kind;
        bytes[CONSTANT0 + 2..CONSTANT0 + 4].copy_from_slice(&max.to_le_bytes());
        assert!(parse(&bytes).is_ok());
    }
}

#[test]
fn invalid_header_bytes_are_errors() {
    let cases = [
        (0x06, 2, "shader type at 0x4a has invalid value 2"),
        (0x07, 2, "merge-outmaps flag at 0x4b has invalid value 2"),
        (0x14, 3, "GS mode at 0x58 has invalid value 3"),
    ];
    for (field, value, text) in cases {
        let mut bytes = hand_file();
        bytes[DVLE + field] = value;
        assert_eq!(parse_err(&bytes).1, format!("DVLE 0 (at 0x44): {text}"));
    }
}

#[test]
fn output_register_above_o15_is_an_error() {
    let mut bytes = hand_file();
    bytes[OUTPUT0 + 2] = 16;
    assert_eq!(
        parse_err(&bytes).1,
        "DVLE 0 (at 0x44): output 0 at 0xbc: register o16 is out of range (o0-o15)"
    );
}

#[test]
fn bad_symbol_offsets_are_errors() {
    for value in [16, 0x7FFF_FFFF, 0xFFFF_FFFF] {
        let mut bytes = hand_file();
        put32(&mut bytes, UNIFORM0, value);
        let (err, message) = parse_err(&bytes);
        assert!(matches!(
            err,
            ShbinError::BadSymbol {
                problem: SymbolProblem::OutsideTable,
                ..
            }
        ));
        assert_eq!(
            message,
            format!(
                "DVLE 0 (at 0x44): uniform 0 at 0xc4: name at symbol offset {value:#x} is \
                 outside the symbol table (0x10 bytes)"
            )
        );
    }
    let mut bytes = hand_file();
    bytes[FILE_LEN - 1] = b'x';
    assert_eq!(
        parse_err(&bytes).1,
        "DVLE 0 (at 0x44): label 0 at 0xac: name at symbol offset 0xb is not NUL-terminated \
         within the symbol table (0x10 bytes)"
    );
    // A shorter symbol table cuts the label's name off.
    let mut bytes = hand_file();
    put32(&mut bytes, DVLE + 0x3C, 11);
    assert!(parse_err(&bytes).1.contains("label 0 at 0xac"));
    // An empty name at the last byte is fine.
    let mut bytes = hand_file();
    put32(&mut bytes, LABEL0 + 12, 15);
    assert_eq!(parse(&bytes).unwrap().dvles[0].labels[0].name, "");
}

#[test]
fn empty_tables_are_fine() {
    let mut bytes = hand_file();
    for field in [0x1C, 0x24, 0x2C, 0x34, 0x3C] {
        put32(&mut bytes, DVLE + field, 0);
    }
    let dvle = &parse(&bytes).unwrap().dvles[0];
    assert!(dvle.constants.is_empty() && dvle.labels.is_empty() && dvle.symbols.is_empty());
    assert!(dvle.outputs.is_empty() && dvle.uniforms.is_empty());
}

#[test]
fn entry_point_beyond_the_code_is_not_a_parse_error() {
    let mut bytes = hand_file();
    put32(&mut bytes, DVLE + 0x08, 0xFFFF_FFFF);
    put32(&mut bytes, DVLE + 0x0C, 0xFFFF_FFFF);
    let dvle = &parse(&bytes).unwrap().dvles[0];
    assert_eq!((dvle.entry, dvle.end), (u32::MAX, u32::MAX));
}

#[test]
fn errors_implement_std_error() {
    let err: Box<dyn std::error::Error> = Box::new(parse(b"DVLX").unwrap_err());
    assert!(err.to_string().contains("DVLB header"));
}

/// xorshift64: a deterministic generator for the mutation loop.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Compares two parsed models, ignoring the symbol tables (a rewrite may append to them).
fn without_symbols(mut shbin: Shbin) -> Shbin {
    shbin.dvles.iter_mut().for_each(|d| d.symbols.clear());
    shbin
}

#[test]
fn random_mutations_never_panic() {
    let bases = [hand_file(), write(&models()[2])];
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut accepted = 0;
    for round in 0..20_000 {
        let mut bytes = bases[round % 2].clone();
        for _ in 0..=rng.below(4) {
            mutate(&mut bytes, &mut rng);
        }
        if let Ok(shbin) = parse(&bytes) {
            accepted += 1;
            // Whatever parses, writes to a file that parses back to the same model.
            let again = parse(&write(&shbin)).expect("rewrite of a parsed file");
            assert_eq!(without_symbols(again), without_symbols(shbin));
        }
    }
    assert!(accepted > 1000, "only {accepted} mutants parsed");
}

fn mutate(bytes: &mut Vec<u8>, rng: &mut Rng) {
    let len = bytes.len();
    match rng.below(4) {
        0 | 1 => {
            let at = rng.below(len);
            bytes[at] = rng.next() as u8;
        }
        2 => {
            let at = rng.below(len / 4) * 4;
            let interesting = [0, 1, 4, 0x40, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF];
            let value = match rng.below(interesting.len() + 2) {
                i if i < interesting.len() => interesting[i],
                i if i == interesting.len() => len as u32,
                _ => rng.next() as u32,
            };
            put32(bytes, at, value);
        }
        _ => bytes.truncate(rng.below(len + 1).max(4)),
    }
}
