//! The PICA200's internal register file: 0x400 words written by command buffers through byte
//! masks, the names of the registers, and which of them the software pipeline models
//! (docs/gpu.md, "Registers"). Register IDs are the word indices command headers carry.

use std::collections::BTreeMap;

/// Words in the register file (IDs 0x000-0x3FF).
pub const REGISTER_COUNT: usize = 0x400;

/// Register IDs the pipeline reads or acts on.
#[allow(missing_docs)]
pub mod id {
    pub const FINALIZE: u16 = 0x010;

    pub const FACECULLING_CONFIG: u16 = 0x040;
    pub const VIEWPORT_WIDTH: u16 = 0x041;
    pub const VIEWPORT_INVW: u16 = 0x042;
    pub const VIEWPORT_HEIGHT: u16 = 0x043;
    pub const VIEWPORT_INVH: u16 = 0x044;
    pub const FRAGOP_CLIP: u16 = 0x047;
    pub const FRAGOP_CLIP_DATA0: u16 = 0x048;
    pub const DEPTHMAP_SCALE: u16 = 0x04D;
    pub const DEPTHMAP_OFFSET: u16 = 0x04E;
    pub const SH_OUTMAP_TOTAL: u16 = 0x04F;
    pub const SH_OUTMAP_O0: u16 = 0x050;
    pub const EARLYDEPTH_FUNC: u16 = 0x061;
    pub const EARLYDEPTH_TEST1: u16 = 0x062;
    pub const EARLYDEPTH_CLEAR: u16 = 0x063;
    pub const SH_OUTATTR_MODE: u16 = 0x064;
    pub const SCISSORTEST_MODE: u16 = 0x065;
    pub const SCISSORTEST_POS: u16 = 0x066;
    pub const SCISSORTEST_DIM: u16 = 0x067;
    pub const VIEWPORT_XY: u16 = 0x068;
    pub const EARLYDEPTH_DATA: u16 = 0x06A;
    pub const DEPTHMAP_ENABLE: u16 = 0x06D;
    pub const RENDERBUF_DIM: u16 = 0x06E;
    pub const SH_OUTATTR_CLOCK: u16 = 0x06F;

    pub const TEXUNIT_CONFIG: u16 = 0x080;
    pub const TEXUNIT0_SHADOW: u16 = 0x08B;
    pub const LIGHTING_ENABLE: u16 = 0x08F;
    pub const LIGHTING_AMBIENT: u16 = 0x1C0;
    pub const LIGHTING_NUM_LIGHTS: u16 = 0x1C2;
    pub const LIGHTING_CONFIG0: u16 = 0x1C3;
    pub const LIGHTING_CONFIG1: u16 = 0x1C4;
    pub const LIGHTING_LUT_INDEX: u16 = 0x1C5;
    pub const LIGHTING_LUT_DATA0: u16 = 0x1C8;
    pub const LIGHTING_LUT_DATA7: u16 = 0x1CF;
    pub const LIGHTING_LUTINPUT_ABS: u16 = 0x1D0;
    pub const LIGHTING_LUTINPUT_SELECT: u16 = 0x1D1;
    pub const LIGHTING_LUTINPUT_SCALE: u16 = 0x1D2;
    pub const LIGHTING_LIGHT_PERMUTATION: u16 = 0x1D9;
    /// TEXUNIT3_PROCTEX0-5: the procedural texture's settings.
    pub const TEXUNIT3_PROCTEX: [u16; 6] = [0x0A8, 0x0A9, 0x0AA, 0x0AB, 0x0AC, 0x0AD];
    pub const PROCTEX_LUT: u16 = 0x0AF;
    pub const PROCTEX_LUT_DATA0: u16 = 0x0B0;
    pub const PROCTEX_LUT_DATA7: u16 = 0x0B7;
    /// The six combiner stages' first registers (five words each).
    pub const TEXENV: [u16; 6] = [0x0C0, 0x0C8, 0x0D0, 0x0D8, 0x0F0, 0x0F8];
    pub const TEXENV_UPDATE_BUFFER: u16 = 0x0E0;
    pub const FOG_COLOR: u16 = 0x0E1;
    pub const GAS_ATTENUATION: u16 = 0x0E4;
    pub const GAS_ACCMAX: u16 = 0x0E5;
    pub const FOG_LUT_INDEX: u16 = 0x0E6;
    pub const FOG_LUT_DATA0: u16 = 0x0E8;
    pub const FOG_LUT_DATA7: u16 = 0x0EF;
    pub const TEXENV_BUFFER_COLOR: u16 = 0x0FD;

    pub const COLOR_OPERATION: u16 = 0x100;
    pub const FRAGOP_SHADOW: u16 = 0x130;
    pub const GAS_LIGHT_XY: u16 = 0x120;
    pub const GAS_LIGHT_Z: u16 = 0x121;
    pub const GAS_LIGHT_Z_COLOR: u16 = 0x122;
    pub const GAS_LUT_INDEX: u16 = 0x123;
    pub const GAS_LUT_DATA: u16 = 0x124;
    pub const GAS_ACCMAX_FEEDBACK: u16 = 0x125;
    pub const GAS_DELTAZ_DEPTH: u16 = 0x126;
    pub const BLEND_FUNC: u16 = 0x101;
    pub const LOGIC_OP: u16 = 0x102;
    pub const BLEND_COLOR: u16 = 0x103;
    pub const FRAGOP_ALPHA_TEST: u16 = 0x104;
    pub const STENCIL_TEST: u16 = 0x105;
    pub const STENCIL_OP: u16 = 0x106;
    pub const DEPTH_COLOR_MASK: u16 = 0x107;
    pub const FRAMEBUFFER_INVALIDATE: u16 = 0x110;
    pub const FRAMEBUFFER_FLUSH: u16 = 0x111;
    pub const COLORBUFFER_READ: u16 = 0x112;
    pub const COLORBUFFER_WRITE: u16 = 0x113;
    pub const DEPTHBUFFER_READ: u16 = 0x114;
    pub const DEPTHBUFFER_WRITE: u16 = 0x115;
    pub const DEPTHBUFFER_FORMAT: u16 = 0x116;
    pub const COLORBUFFER_FORMAT: u16 = 0x117;
    pub const EARLYDEPTH_TEST2: u16 = 0x118;
    pub const FRAMEBUFFER_BLOCK32: u16 = 0x11B;
    pub const DEPTHBUFFER_LOC: u16 = 0x11C;
    pub const COLORBUFFER_LOC: u16 = 0x11D;
    pub const FRAMEBUFFER_DIM: u16 = 0x11E;

    pub const ATTRIBBUFFERS_LOC: u16 = 0x200;
    pub const ATTRIBBUFFERS_FORMAT_LOW: u16 = 0x201;
    pub const ATTRIBBUFFERS_FORMAT_HIGH: u16 = 0x202;
    /// Array k's offset, then its two configuration words, at this + 3k.
    pub const ATTRIBBUFFER0_OFFSET: u16 = 0x203;
    pub const INDEXBUFFER_CONFIG: u16 = 0x227;
    pub const NUMVERTICES: u16 = 0x228;
    pub const GEOSTAGE_CONFIG: u16 = 0x229;
    pub const VERTEX_OFFSET: u16 = 0x22A;
    pub const POST_VERTEX_CACHE_NUM: u16 = 0x22D;
    pub const DRAWARRAYS: u16 = 0x22E;
    pub const DRAWELEMENTS: u16 = 0x22F;
    pub const VTX_FUNC: u16 = 0x231;
    pub const FIXEDATTRIB_INDEX: u16 = 0x232;
    pub const FIXEDATTRIB_DATA0: u16 = 0x233;
    pub const FIXEDATTRIB_DATA2: u16 = 0x235;
    pub const CMDBUF_SIZE0: u16 = 0x238;
    pub const CMDBUF_SIZE1: u16 = 0x239;
    pub const CMDBUF_ADDR0: u16 = 0x23A;
    pub const CMDBUF_ADDR1: u16 = 0x23B;
    pub const CMDBUF_JUMP0: u16 = 0x23C;
    pub const CMDBUF_JUMP1: u16 = 0x23D;
    pub const VSH_NUM_ATTR: u16 = 0x242;
    pub const VSH_COM_MODE: u16 = 0x244;
    pub const START_DRAW_FUNC0: u16 = 0x245;
    pub const VSH_OUTMAP_TOTAL1: u16 = 0x24A;
    pub const VSH_OUTMAP_TOTAL2: u16 = 0x251;
    pub const GSH_MISC0: u16 = 0x252;
    pub const GEOSTAGE_CONFIG2: u16 = 0x253;
    pub const GSH_MISC1: u16 = 0x254;
    pub const PRIMITIVE_CONFIG: u16 = 0x25E;
    pub const RESTART_PRIMITIVE: u16 = 0x25F;

    /// The geometry shader unit's registers start here; the vertex shader unit's at
    /// [`VSH_BASE`]. Offsets within a unit are the `SH_*` constants.
    pub const GSH_BASE: u16 = 0x280;
    pub const VSH_BASE: u16 = 0x2B0;
    pub const SH_BOOLUNIFORM: u16 = 0x00;
    pub const SH_INTUNIFORM_I0: u16 = 0x01;
    pub const SH_INTUNIFORM_I3: u16 = 0x04;
    pub const SH_INPUTBUFFER_CONFIG: u16 = 0x09;
    pub const SH_ENTRYPOINT: u16 = 0x0A;
    pub const SH_ATTRIBUTES_PERMUTATION_LOW: u16 = 0x0B;
    pub const SH_ATTRIBUTES_PERMUTATION_HIGH: u16 = 0x0C;
    pub const SH_OUTMAP_MASK: u16 = 0x0D;
    pub const SH_CODETRANSFER_END: u16 = 0x0F;
    pub const SH_FLOATUNIFORM_INDEX: u16 = 0x10;
    pub const SH_FLOATUNIFORM_DATA0: u16 = 0x11;
    pub const SH_FLOATUNIFORM_DATA7: u16 = 0x18;
    pub const SH_CODETRANSFER_INDEX: u16 = 0x1B;
    pub const SH_CODETRANSFER_DATA0: u16 = 0x1C;
    pub const SH_CODETRANSFER_DATA7: u16 = 0x23;
    pub const SH_OPDESCS_INDEX: u16 = 0x25;
    pub const SH_OPDESCS_DATA0: u16 = 0x26;
    pub const SH_OPDESCS_DATA7: u16 = 0x2D;
    /// Registers in one shader unit's block.
    pub const SH_BLOCK: u16 = 0x30;
}

/// Ranges of register IDs with the name the documentation gives them (first, last, name).
/// Registers in no range are unknown.
const NAMES: &[(u16, u16, &str)] = &[
    (0x000, 0x000, "IRQ_ACK"),
    (0x010, 0x010, "FINALIZE"),
    (0x020, 0x03F, "IRQ"),
    (0x040, 0x040, "FACECULLING_CONFIG"),
    (0x041, 0x044, "VIEWPORT"),
    (0x047, 0x04B, "FRAGOP_CLIP"),
    (0x04D, 0x04E, "DEPTHMAP"),
    (0x04F, 0x056, "SH_OUTMAP"),
    (0x061, 0x063, "EARLYDEPTH"),
    (0x064, 0x064, "SH_OUTATTR_MODE"),
    (0x065, 0x067, "SCISSORTEST"),
    (0x068, 0x068, "VIEWPORT_XY"),
    (0x06A, 0x06A, "EARLYDEPTH_DATA"),
    (0x06D, 0x06D, "DEPTHMAP_ENABLE"),
    (0x06E, 0x06E, "RENDERBUF_DIM"),
    (0x06F, 0x06F, "SH_OUTATTR_CLOCK"),
    (0x080, 0x080, "TEXUNIT_CONFIG"),
    (0x08F, 0x08F, "LIGHTING_ENABLE"),
    (0x081, 0x08E, "TEXUNIT0"),
    (0x091, 0x096, "TEXUNIT1"),
    (0x099, 0x09E, "TEXUNIT2"),
    (0x0A8, 0x0B7, "PROCTEX"),
    (0x0C0, 0x0C4, "TEXENV0"),
    (0x0C8, 0x0CC, "TEXENV1"),
    (0x0D0, 0x0D4, "TEXENV2"),
    (0x0D8, 0x0DC, "TEXENV3"),
    (0x0E0, 0x0E0, "TEXENV_UPDATE_BUFFER"),
    (0x0E1, 0x0EF, "FOG"),
    (0x0F0, 0x0F4, "TEXENV4"),
    (0x0F8, 0x0FC, "TEXENV5"),
    (0x0FD, 0x0FD, "TEXENV_BUFFER_COLOR"),
    (0x100, 0x107, "FRAGOP"),
    (0x110, 0x11E, "FRAMEBUFFER"),
    (0x120, 0x12F, "GAS"),
    (0x130, 0x130, "FRAGOP_SHADOW"),
    (0x140, 0x1D9, "LIGHTING"),
    (0x200, 0x226, "ATTRIBBUFFERS"),
    (0x227, 0x22F, "VERTEX_DRAW"),
    (0x231, 0x235, "VERTEX_FIXED_ATTRIBUTES"),
    (0x238, 0x23D, "CMDBUF"),
    (0x242, 0x25F, "PIPELINE"),
    (0x280, 0x2AD, "GSH"),
    (0x2B0, 0x2DD, "VSH"),
];

/// The documented name of the range holding register `id`, or `None` for an unknown ID.
pub fn name_of(id: u16) -> Option<&'static str> {
    NAMES
        .iter()
        .find(|&&(first, last, _)| (first..=last).contains(&id))
        .map(|&(_, _, name)| name)
}

/// Ranges of registers whose values the pipeline acts on (first, last). A write to any other
/// register is kept in the register file and counted in [`RegisterFile::unmodelled`]; the list
/// of what is recorded but not modelled is docs/gpu.md, "Registers".
const MODELLED: &[(u16, u16)] = &[
    (0x010, 0x010),
    (0x040, 0x041),
    (0x043, 0x043),
    (0x047, 0x04B),
    (0x04D, 0x056),
    (0x065, 0x068),
    (0x06D, 0x06D),
    (0x080, 0x08B),
    (0x08E, 0x08F),
    (0x091, 0x096),
    (0x099, 0x09E),
    (0x0A8, 0x0AD),
    (0x0AF, 0x0B7),
    (0x0C0, 0x0C4),
    (0x0C8, 0x0CC),
    (0x0D0, 0x0D4),
    (0x0D8, 0x0DC),
    (0x0E0, 0x0E1),
    (0x0E4, 0x0E5),
    (0x0E6, 0x0E6),
    (0x0E8, 0x0EF),
    (0x0F0, 0x0F4),
    (0x0F8, 0x0FD),
    (0x100, 0x107),
    (0x110, 0x111),
    (0x113, 0x113),
    (0x115, 0x117),
    (0x11C, 0x11E),
    (0x120, 0x126),
    (0x130, 0x130),
    (0x140, 0x147),
    (0x149, 0x14B),
    (0x150, 0x157),
    (0x159, 0x15B),
    (0x160, 0x167),
    (0x169, 0x16B),
    (0x170, 0x177),
    (0x179, 0x17B),
    (0x180, 0x187),
    (0x189, 0x18B),
    (0x190, 0x197),
    (0x199, 0x19B),
    (0x1A0, 0x1A7),
    (0x1A9, 0x1AB),
    (0x1B0, 0x1B7),
    (0x1B9, 0x1BB),
    (0x1C0, 0x1C0),
    (0x1C2, 0x1C5),
    (0x1C8, 0x1D2),
    (0x1D9, 0x1D9),
    (0x200, 0x22A),
    (0x22E, 0x22F),
    (0x231, 0x235),
    (0x238, 0x23D),
    (0x242, 0x242),
    (0x244, 0x244),
    (0x24A, 0x24A),
    (0x252, 0x252),
    (0x254, 0x254),
    (0x25E, 0x25F),
    (0x280, 0x284),
    (0x289, 0x28D),
    (0x28F, 0x298),
    (0x29B, 0x2A3),
    (0x2A5, 0x2B4),
    (0x2B9, 0x2BD),
    (0x2BF, 0x2C8),
    (0x2CB, 0x2D3),
    (0x2D5, 0x2DD),
];

/// Whether the pipeline acts on register `id`.
pub fn is_modelled(id: u16) -> bool {
    MODELLED
        .iter()
        .any(|&(first, last)| (first..=last).contains(&id))
}

/// The register file, with a count of writes to registers the pipeline does not model.
#[derive(Clone, Debug)]
pub struct RegisterFile {
    words: Box<[u32; REGISTER_COUNT]>,
    unmodelled: BTreeMap<u16, u64>,
}

impl Default for RegisterFile {
    fn default() -> RegisterFile {
        RegisterFile {
            words: Box::new([0; REGISTER_COUNT]),
            unmodelled: BTreeMap::new(),
        }
    }
}

/// The bits of a word a 4-bit byte-enable mask selects (bit i enables byte i).
pub const fn byte_mask(mask: u8) -> u32 {
    let mut bits = 0u32;
    let mut byte = 0;
    while byte < 4 {
        if mask & (1 << byte) != 0 {
            bits |= 0xFF << (8 * byte);
        }
        byte += 1;
    }
    bits
}

impl RegisterFile {
    /// The value of register `id` (IDs wrap at 0x400).
    pub fn get(&self, id: u16) -> u32 {
        self.words[id as usize % REGISTER_COUNT]
    }

    /// Writes the bytes of `value` that `mask` enables into register `id` and returns the
    /// register's new value. A write to a register the pipeline does not model is counted.
    pub fn write(&mut self, id: u16, value: u32, mask: u8) -> u32 {
        let id = id % REGISTER_COUNT as u16;
        let bits = byte_mask(mask);
        let word = &mut self.words[id as usize];
        *word = (*word & !bits) | (value & bits);
        if !is_modelled(id) && mask != 0 {
            *self.unmodelled.entry(id).or_insert(0) += 1;
        }
        *word
    }

    /// Sets register `id` without counting (restoring a saved state).
    pub fn set(&mut self, id: u16, value: u32) {
        self.words[id as usize % REGISTER_COUNT] = value;
    }

    /// The index in bits 0..`width` of a lookup table's index register `id`, which then
    /// advances by one, wrapping within those bits and leaving the register's other bits: what
    /// a write to the table's data FIFO does.
    pub fn take_index(&mut self, id: u16, width: u32) -> u32 {
        let word = self.get(id);
        let mask = (1 << width) - 1;
        let index = word & mask;
        self.set(id, word & !mask | (index + 1) & mask);
        index
    }

    /// Writes to registers the pipeline does not model, by register ID.
    pub fn unmodelled(&self) -> &BTreeMap<u16, u64> {
        &self.unmodelled
    }

    /// All 0x400 words.
    pub fn words(&self) -> &[u32; REGISTER_COUNT] {
        &self.words
    }
}

/// Bits `first..first + count` of `word`.
pub const fn bits(word: u32, first: u32, count: u32) -> u32 {
    (word >> first) & (((1u64 << count) - 1) as u32)
}

/// The semantic codes of the output map's fields (SH_OUTMAP_O0-O6): what each interpolated
/// attribute a stage reads means.
/// Semantics an output component can carry (codes 0x00-0x17; others are unused).
pub const SEMANTICS: usize = 0x18;

/// The code of an unused component.
pub const UNUSED_SEMANTIC: u8 = 0x1F;

/// Semantic codes.
#[allow(missing_docs)]
pub mod semantic {
    pub const POSITION: usize = 0x00;
    pub const QUATERNION: usize = 0x04;
    pub const COLOR: usize = 0x08;
    pub const TEXCOORD0: usize = 0x0C;
    pub const TEXCOORD1: usize = 0x0E;
    pub const TEXCOORD0_W: usize = 0x10;
    pub const VIEW: usize = 0x12;
    pub const TEXCOORD2: usize = 0x16;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_masks_select_bytes() {
        assert_eq!(byte_mask(0xF), u32::MAX);
        assert_eq!(byte_mask(0x1), 0xFF);
        assert_eq!(byte_mask(0xA), 0xFF00_FF00);
        let mut file = RegisterFile::default();
        file.write(0x100, 0x1122_3344, 0xF);
        assert_eq!(file.write(0x100, 0xAABB_CCDD, 0x6), 0x11BB_CC44);
    }

    #[test]
    fn unmodelled_writes_are_counted_by_register() {
        let mut file = RegisterFile::default();
        // 0x0E2, in the fog registers' range, with no known function.
        file.write(0x0E2, 1, 0xF);
        file.write(0x0E2, 2, 0xF);
        file.write(id::BLEND_FUNC, 3, 0xF);
        assert_eq!(file.unmodelled().get(&0x0E2), Some(&2));
        assert!(!file.unmodelled().contains_key(&id::BLEND_FUNC));
        assert_eq!(name_of(0x0E2), Some("FOG"));
        assert_eq!(name_of(0x3FF), None);
    }
}
