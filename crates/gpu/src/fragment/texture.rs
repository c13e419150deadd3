//! Texture units 0-2 (docs/gpu-texturing.md): the fourteen texel formats in the 8×8
//! Morton-tiled layout, each expanded to 8 bits per channel as the hardware does; 2D, projected
//! and cube-map textures; the wrap modes; nearest and linear filtering; level of detail with
//! bias, clamps and mipmaps; and a cache of decoded textures keyed by their bytes.
//!
//! Sampling works on decoded images: a texture's levels (and faces) are decoded once into
//! 8-bit RGBA arrays, and a batch of triangles samples those. A decoded texture is reused while
//! the bytes it came from are unchanged ([`TextureCache`]), so a texture is decoded once per
//! upload, not once per draw.

use std::sync::Arc;

use crate::framebuffer::color::{ColorFormat, Rgba8, morton, widen};
use crate::framebuffer::memory::{MemoryError, PhysicalMemory};
use crate::regs::{RegisterFile, bits};
use shader::numbers::signed_fixed;

/// A texel format (TEXUNITi_TYPE bits 0-3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TextureFormat {
    /// 32 bits: bytes a, b, g, r.
    Rgba8,
    /// 24 bits: bytes b, g, r.
    Rgb8,
    /// 16 bits: r5 g5 b5 a1.
    Rgba5551,
    /// 16 bits: r5 g6 b5.
    Rgb565,
    /// 16 bits: r4 g4 b4 a4.
    Rgba4,
    /// 16 bits: alpha byte, then intensity byte.
    Ia8,
    /// 16 bits: green (low) byte, then red (high) byte.
    Hilo8,
    /// 8 bits of intensity.
    I8,
    /// 8 bits of alpha.
    A8,
    /// 8 bits: intensity in the high nibble, alpha in the low.
    Ia4,
    /// 4 bits of intensity.
    I4,
    /// 4 bits of alpha.
    A4,
    /// ETC1: 4×4 blocks of 64 bits.
    Etc1,
    /// ETC1 with 4-bit alpha: 64 bits of alpha before each block.
    Etc1a4,
}

impl TextureFormat {
    /// Every format, in code order.
    pub const ALL: [TextureFormat; 14] = [
        TextureFormat::Rgba8,
        TextureFormat::Rgb8,
        TextureFormat::Rgba5551,
        TextureFormat::Rgb565,
        TextureFormat::Rgba4,
        TextureFormat::Ia8,
        TextureFormat::Hilo8,
        TextureFormat::I8,
        TextureFormat::A8,
        TextureFormat::Ia4,
        TextureFormat::I4,
        TextureFormat::A4,
        TextureFormat::Etc1,
        TextureFormat::Etc1a4,
    ];

    /// The format of a TYPE code; `None` for 0xE and 0xF.
    pub fn from_code(code: u32) -> Option<TextureFormat> {
        TextureFormat::ALL.get(code as usize).copied()
    }

    /// The TYPE code.
    pub fn code(self) -> u32 {
        TextureFormat::ALL
            .iter()
            .position(|&f| f == self)
            .expect("listed") as u32
    }

    /// The libctru-style name.
    pub fn name(self) -> &'static str {
        [
            "RGBA8", "RGB8", "RGBA5551", "RGB565", "RGBA4", "IA8", "HILO8", "I8", "A8", "IA4",
            "I4", "A4", "ETC1", "ETC1A4",
        ][self.code() as usize]
    }

    /// Bits per texel.
    pub fn bits_per_texel(self) -> u32 {
        match self {
            TextureFormat::Rgba8 => 32,
            TextureFormat::Rgb8 => 24,
            TextureFormat::Rgba5551
            | TextureFormat::Rgb565
            | TextureFormat::Rgba4
            | TextureFormat::Ia8
            | TextureFormat::Hilo8 => 16,
            TextureFormat::I8 | TextureFormat::A8 | TextureFormat::Ia4 | TextureFormat::Etc1a4 => 8,
            TextureFormat::I4 | TextureFormat::A4 | TextureFormat::Etc1 => 4,
        }
    }

    /// Bytes of one 8×8 tile.
    pub fn tile_bytes(self) -> usize {
        self.bits_per_texel() as usize * 8
    }

    /// Bytes of a `width` × `height` image (whole tiles).
    pub fn image_bytes(self, width: u32, height: u32) -> usize {
        (width.div_ceil(8) * height.div_ceil(8)) as usize * self.tile_bytes()
    }
}

/// The 8-bit expansion of a 4-bit channel (x · 17), as for every 4-bit field.
fn expand4(x: u32) -> u8 {
    widen(x, 4)
}

/// Texel `index` (its position in memory order) of a non-ETC format in `bytes`.
fn texel(format: TextureFormat, bytes: &[u8], index: usize) -> Rgba8 {
    let at = |n: usize| index * n;
    match format {
        TextureFormat::Rgba8 => ColorFormat::Rgba8.decode(&bytes[at(4)..]),
        TextureFormat::Rgb8 => ColorFormat::Rgb8.decode(&bytes[at(3)..]),
        TextureFormat::Rgba5551 => ColorFormat::Rgb5a1.decode(&bytes[at(2)..]),
        TextureFormat::Rgb565 => ColorFormat::Rgb565.decode(&bytes[at(2)..]),
        TextureFormat::Rgba4 => ColorFormat::Rgba4.decode(&bytes[at(2)..]),
        TextureFormat::Ia8 => {
            let (a, i) = (bytes[at(2)], bytes[at(2) + 1]);
            [i, i, i, a]
        }
        TextureFormat::Hilo8 => {
            let (g, r) = (bytes[at(2)], bytes[at(2) + 1]);
            [r, g, 0, 255]
        }
        TextureFormat::I8 => {
            let i = bytes[index];
            [i, i, i, 255]
        }
        TextureFormat::A8 => [0, 0, 0, bytes[index]],
        TextureFormat::Ia4 => {
            let v = bytes[index] as u32;
            let i = expand4(v >> 4);
            [i, i, i, expand4(v)]
        }
        TextureFormat::I4 | TextureFormat::A4 => {
            // Two texels a byte: the even one in the low nibble.
            let v = expand4((bytes[index / 2] >> (4 * (index % 2))) as u32);
            if format == TextureFormat::I4 {
                [v, v, v, 255]
            } else {
                [0, 0, 0, v]
            }
        }
        TextureFormat::Etc1 | TextureFormat::Etc1a4 => unreachable!("ETC formats decode by block"),
    }
}

/// ETC1's modifier magnitudes per table codeword (small, large).
const ETC1_MODIFIERS: [[i32; 2]; 8] = [
    [2, 8],
    [5, 17],
    [9, 29],
    [13, 42],
    [18, 60],
    [24, 80],
    [33, 106],
    [47, 183],
];

/// Decodes one ETC1 block: `color` is the block's 64-bit word as the PICA stores it (read
/// little-endian), `alpha` the ETC1A4 alpha word. Texel (x, y), y being the memory row, is
/// entry `4y + x`.
pub fn etc1_block(color: u64, alpha: Option<u64>) -> [Rgba8; 16] {
    let field = |first: u32, count: u32| ((color >> first) & ((1 << count) - 1)) as i32;
    let flip = field(32, 1) != 0;
    let differential = field(33, 1) != 0;
    let tables = [field(37, 3), field(34, 3)];
    let bases: [[i32; 3]; 2] = if differential {
        let base = [field(59, 5), field(51, 5), field(43, 5)];
        let delta = [field(56, 3), field(48, 3), field(40, 3)].map(|d| (d << 29) >> 29);
        let second: [i32; 3] = std::array::from_fn(|c| base[c] + delta[c]);
        [base, second].map(|b| b.map(|c| widen(c as u32, 5) as i32))
    } else {
        [
            [field(60, 4), field(52, 4), field(44, 4)],
            [field(56, 4), field(48, 4), field(40, 4)],
        ]
        .map(|b| b.map(|c| expand4(c as u32) as i32))
    };
    std::array::from_fn(|k| {
        let (x, y) = (k % 4, k / 4);
        let bit = etc_bit(x, y);
        let sub = usize::from(if flip { y >= 2 } else { x >= 2 });
        let magnitude = ETC1_MODIFIERS[tables[sub] as usize][field(bit as u32, 1) as usize];
        let modifier = if field(16 + bit as u32, 1) != 0 {
            -magnitude
        } else {
            magnitude
        };
        let [r, g, b] = bases[sub].map(|c| (c + modifier).clamp(0, 255) as u8);
        let a = alpha.map_or(255, |word| expand4((word >> (4 * bit)) as u32 & 0xF));
        [r, g, b, a]
    })
}

/// Decodes a tiled `width` × `height` image of `format` from `bytes` (at least
/// [`TextureFormat::image_bytes`] long). Texel (x, row) is entry `row · width + x`, `row`
/// counting memory rows: row 0 is sampled at the top of the texture (t = 1).
pub fn decode(format: TextureFormat, width: u32, height: u32, bytes: &[u8]) -> Vec<Rgba8> {
    let (w, h) = (width as usize, height as usize);
    let mut out = vec![[0u8; 4]; w * h];
    let mut put = |x: usize, y: usize, color: Rgba8| {
        if x < w && y < h {
            out[y * w + x] = color;
        }
    };
    let tile_bytes = format.tile_bytes();
    for (offset, x0, y0) in tiles(width, height, tile_bytes) {
        let tile = &bytes[offset..offset + tile_bytes];
        if is_etc(format) {
            for (b, block) in tile.chunks_exact(tile_bytes / 4).enumerate() {
                let word =
                    |at: usize| u64::from_le_bytes(block[at..at + 8].try_into().expect("8 bytes"));
                let texels = if format == TextureFormat::Etc1a4 {
                    etc1_block(word(8), Some(word(0)))
                } else {
                    etc1_block(word(0), None)
                };
                let (bx, by) = etc_block_origin(x0, y0, b);
                for (k, &color) in texels.iter().enumerate() {
                    put(bx + k % 4, by + k / 4, color);
                }
            }
            continue;
        }
        for y in 0..8 {
            for x in 0..8 {
                let index = morton(x as u32, y as u32) as usize;
                put(x0 + x, y0 + y, texel(format, tile, index));
            }
        }
    }
    out
}

/// Each 8×8 tile of a `width` × `height` image in memory order: its byte offset and the
/// (x, memory row) of its first texel. Tiles run along a tile row, then tile rows follow.
fn tiles(
    width: u32,
    height: u32,
    tile_bytes: usize,
) -> impl Iterator<Item = (usize, usize, usize)> {
    let across = width.div_ceil(8) as usize;
    (0..across * height.div_ceil(8) as usize)
        .map(move |k| (k * tile_bytes, 8 * (k % across), 8 * (k / across)))
}

/// Whether `format` is stored in ETC blocks.
fn is_etc(format: TextureFormat) -> bool {
    matches!(format, TextureFormat::Etc1 | TextureFormat::Etc1a4)
}

/// The first texel of ETC block `b` (0-3) of the tile at (x0, y0): (0-3, 0-3), (4-7, 0-3),
/// (0-3, 4-7), (4-7, 4-7).
fn etc_block_origin(x0: usize, y0: usize, b: usize) -> (usize, usize) {
    (x0 + 4 * (b % 2), y0 + 4 * (b / 2))
}

/// The bit of texel (x, y) of an ETC block in its index fields (and the nibble of its alpha):
/// column-major.
fn etc_bit(x: usize, y: usize) -> usize {
    4 * x + y
}

/// Encodes a `width` × `height` image (texels by memory row, as [`decode`] returns them) in
/// `format`'s tiled layout: what a tool such as tex3ds produces, for scenes and tests. Channels
/// keep their top bits; intensity is the red channel; ETC1 blocks come from a small encoder
/// (per 2×4 half-block: the mean colour in 4 bits, then the modifier table with the least
/// squared error).
pub fn encode(format: TextureFormat, width: u32, height: u32, texels: &[Rgba8]) -> Vec<u8> {
    let (w, h) = (width as usize, height as usize);
    let mut out = vec![0u8; format.image_bytes(width, height)];
    let get = |x: usize, y: usize| -> Rgba8 {
        if x < w && y < h {
            texels[y * w + x]
        } else {
            [0; 4]
        }
    };
    let tile_bytes = format.tile_bytes();
    for (offset, x0, y0) in tiles(width, height, tile_bytes) {
        let tile = &mut out[offset..offset + tile_bytes];
        if is_etc(format) {
            for (b, block) in tile.chunks_exact_mut(tile_bytes / 4).enumerate() {
                let (bx, by) = etc_block_origin(x0, y0, b);
                let pixels: [Rgba8; 16] = std::array::from_fn(|k| get(bx + k % 4, by + k / 4));
                let color = etc1_encode(&pixels).to_le_bytes();
                if format == TextureFormat::Etc1a4 {
                    let mut alpha = 0u64;
                    for (k, pixel) in pixels.iter().enumerate() {
                        alpha |= ((pixel[3] >> 4) as u64) << (4 * etc_bit(k % 4, k / 4));
                    }
                    block[..8].copy_from_slice(&alpha.to_le_bytes());
                    block[8..].copy_from_slice(&color);
                } else {
                    block.copy_from_slice(&color);
                }
            }
            continue;
        }
        for y in 0..8 {
            for x in 0..8 {
                let index = morton(x as u32, y as u32) as usize;
                encode_texel(format, get(x0 + x, y0 + y), tile, index);
            }
        }
    }
    out
}

/// Stores `color` as texel `index` of a non-ETC format.
fn encode_texel(format: TextureFormat, color: Rgba8, bytes: &mut [u8], index: usize) {
    let [r, g, _, a] = color;
    match format {
        TextureFormat::Rgba8 => ColorFormat::Rgba8.encode(color, &mut bytes[index * 4..]),
        TextureFormat::Rgb8 => ColorFormat::Rgb8.encode(color, &mut bytes[index * 3..]),
        TextureFormat::Rgba5551 => ColorFormat::Rgb5a1.encode(color, &mut bytes[index * 2..]),
        TextureFormat::Rgb565 => ColorFormat::Rgb565.encode(color, &mut bytes[index * 2..]),
        TextureFormat::Rgba4 => ColorFormat::Rgba4.encode(color, &mut bytes[index * 2..]),
        TextureFormat::Ia8 => bytes[index * 2..index * 2 + 2].copy_from_slice(&[a, r]),
        TextureFormat::Hilo8 => bytes[index * 2..index * 2 + 2].copy_from_slice(&[g, r]),
        TextureFormat::I8 => bytes[index] = r,
        TextureFormat::A8 => bytes[index] = a,
        TextureFormat::Ia4 => bytes[index] = (r & 0xF0) | a >> 4,
        TextureFormat::I4 | TextureFormat::A4 => {
            let v = if format == TextureFormat::I4 { r } else { a } >> 4;
            let shift = 4 * (index % 2);
            bytes[index / 2] = bytes[index / 2] & !(0xF << shift) | v << shift;
        }
        TextureFormat::Etc1 | TextureFormat::Etc1a4 => unreachable!("ETC formats encode by block"),
    }
}

/// An ETC1 colour word (individual mode, no flip) for 16 texels (entry `4y + x`).
fn etc1_encode(pixels: &[Rgba8; 16]) -> u64 {
    let mut word = 0u64;
    for sub in 0..2 {
        // Sub-block `sub`: columns 2·sub and 2·sub + 1.
        let members: Vec<usize> = (0..16).filter(|k| (k % 4) / 2 == sub).collect();
        let mean: [u32; 3] = std::array::from_fn(|c| {
            members.iter().map(|&k| pixels[k][c] as u32).sum::<u32>() / members.len() as u32
        });
        let base4 = mean.map(|c| (c + 8) / 17);
        let base = base4.map(|c| expand4(c) as i32);
        let choose = |table: usize, pixel: Rgba8| -> (u32, u64) {
            (0..4)
                .map(|code| {
                    let magnitude = ETC1_MODIFIERS[table][code & 1];
                    let modifier = if code & 2 != 0 { -magnitude } else { magnitude };
                    let error = (0..3)
                        .map(|c| {
                            let d = (base[c] + modifier).clamp(0, 255) - pixel[c] as i32;
                            (d * d) as u64
                        })
                        .sum::<u64>();
                    (code as u32, error)
                })
                .min_by_key(|&(_, error)| error)
                .expect("four codes")
        };
        let table = (0..8)
            .min_by_key(|&table| {
                members
                    .iter()
                    .map(|&k| choose(table, pixels[k]).1)
                    .sum::<u64>()
            })
            .expect("eight tables");
        for &k in &members {
            let (code, _) = choose(table, pixels[k]);
            let bit = etc_bit(k % 4, k / 4);
            word |= ((code & 1) as u64) << bit | ((code >> 1) as u64) << (16 + bit);
        }
        // Table codewords: sub-block 1 in bits 37-39, sub-block 2 in 34-36.
        word |= (table as u64) << if sub == 0 { 37 } else { 34 };
        let shifts = if sub == 0 { [60, 52, 44] } else { [56, 48, 40] };
        for (c, shift) in shifts.into_iter().enumerate() {
            word |= (base4[c] as u64) << shift;
        }
    }
    word
}

/// A wrap mode (PARAM bits 8-10 for t, 12-14 for s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrap {
    /// Clamp to the edge texel.
    ClampToEdge,
    /// Outside the texture, the border colour.
    ClampToBorder,
    /// Repeat.
    Repeat,
    /// Repeat, every other copy mirrored.
    MirroredRepeat,
}

impl Wrap {
    /// The field's code.
    pub fn code(self) -> u32 {
        match self {
            Wrap::ClampToEdge => 0,
            Wrap::ClampToBorder => 1,
            Wrap::Repeat => 2,
            Wrap::MirroredRepeat => 3,
        }
    }

    /// The mode of a 3-bit field. Codes 4-7 are undocumented; they read as repeat
    /// (docs/gpu-texturing.md).
    pub fn from_code(code: u32) -> Wrap {
        match code {
            0 => Wrap::ClampToEdge,
            1 => Wrap::ClampToBorder,
            3 => Wrap::MirroredRepeat,
            _ => Wrap::Repeat,
        }
    }

    /// The texel index for integer coordinate `i` in a dimension of `size` texels; `None`
    /// for the border.
    #[inline(always)]
    pub fn apply(self, i: i32, size: i32) -> Option<i32> {
        match self {
            Wrap::ClampToEdge => Some(i.clamp(0, size - 1)),
            Wrap::ClampToBorder => (0..size).contains(&i).then_some(i),
            Wrap::Repeat => Some(i.rem_euclid(size)),
            Wrap::MirroredRepeat => {
                let c = i.rem_euclid(2 * size);
                Some(if c >= size { 2 * size - 1 - c } else { c })
            }
        }
    }
}

/// What a texture unit holds (unit 0's PARAM bits 28-30; units 1 and 2 are always 2D).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextureKind {
    /// A 2D texture at (u, v).
    Texture2d,
    /// A cube map at the direction (u, v, w).
    CubeMap,
    /// A 2D texture at (u/w, v/w).
    Projection,
    /// A 2D shadow map (unit 0, type 2): compared with the depth |w| at (u, v), or at
    /// (u/w, v/w) with the perspective divide (docs/gpu-shadows.md, "Lookups").
    Shadow2d,
    /// A cube shadow map (unit 0, type 4): compared with the depth of the major axis.
    ShadowCube,
}

impl TextureKind {
    /// Whether the kind reads six faces by direction.
    pub fn is_cube(self) -> bool {
        matches!(self, TextureKind::CubeMap | TextureKind::ShadowCube)
    }

    /// Whether the kind is a shadow map, compared rather than sampled.
    pub fn is_shadow(self) -> bool {
        matches!(self, TextureKind::Shadow2d | TextureKind::ShadowCube)
    }
}

/// Unit 0's shadow lookups (TEXUNIT0_SHADOW, 0x08B).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShadowLookup {
    /// Bit 0: orthographic, no perspective divide of a 2D shadow map's coordinates.
    pub orthographic: bool,
    /// Bits 1-23: the bias subtracted from the 24-bit depth before the comparison.
    pub bias: u32,
}

/// The faces of a cube map in address order (ADDR1-ADDR6).
pub const CUBE_FACES: usize = 6;

/// One texture unit's configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UnitConfig {
    /// What the unit holds.
    pub kind: TextureKind,
    /// Width of level 0 in texels.
    pub width: u32,
    /// Height of level 0.
    pub height: u32,
    /// The texel format.
    pub format: TextureFormat,
    /// Level 0's address; for a cube map, each face's (+X, −X, +Y, −Y, +Z, −Z).
    pub addresses: [u32; CUBE_FACES],
    /// Wrap mode along s.
    pub wrap_s: Wrap,
    /// Wrap mode along t.
    pub wrap_t: Wrap,
    /// Linear (not nearest) filtering when magnified.
    pub mag_linear: bool,
    /// Linear filtering when minified.
    pub min_linear: bool,
    /// Linear blending between mipmap levels.
    pub mip_linear: bool,
    /// The level-of-detail bias.
    pub lod_bias: f32,
    /// The lowest level of detail used.
    pub min_level: u32,
    /// The highest level (mipmaps 1..=max are stored after level 0).
    pub max_level: u32,
    /// The border colour.
    pub border: Rgba8,
    /// Unit 0's shadow lookups.
    pub shadow: ShadowLookup,
}

/// Each unit's first register: BORDER_COLOR, then DIM, PARAM, LOD, ADDR1.
pub const UNIT_BASE: [u16; 3] = [0x081, 0x091, 0x099];

/// Each unit's TYPE register: unit 0's follows its five cube-face addresses and the shadow
/// register, so the units' TYPEs are not at one offset from their bases (3dbrew, *GPU/Internal
/// Registers*: TEXUNIT0_TYPE 0x08E, TEXUNIT1_TYPE 0x096, TEXUNIT2_TYPE 0x09E). Reading unit 2's
/// TYPE for unit 1 made a real program's RGB8 normal map on unit 1 decode as RGBA8.
pub const UNIT_TYPE: [u16; 3] = [0x08E, 0x096, 0x09E];

/// Unit 0's face addresses 2-6 (ADDR2-ADDR6).
const CUBE_ADDRESSES: u16 = 0x086;

impl UnitConfig {
    /// Unit `unit`'s configuration (0-2); `None` when the unit is off (TEXUNIT_CONFIG), its
    /// type says disabled, or its format code is undefined.
    pub fn configure(regs: &RegisterFile, unit: usize) -> Option<UnitConfig> {
        if regs.get(crate::regs::id::TEXUNIT_CONFIG) & (1 << unit) == 0 {
            return None;
        }
        let base = UNIT_BASE[unit];
        let dim = regs.get(base + 1);
        let param = regs.get(base + 2);
        let lod = regs.get(base + 3);
        let format = TextureFormat::from_code(bits(regs.get(UNIT_TYPE[unit]), 0, 4))?;
        let kind = if unit == 0 {
            match bits(param, 28, 3) {
                0 => TextureKind::Texture2d,
                1 => TextureKind::CubeMap,
                2 => TextureKind::Shadow2d,
                3 => TextureKind::Projection,
                4 => TextureKind::ShadowCube,
                _ => return None,
            }
        } else {
            TextureKind::Texture2d
        };
        let first = bits(regs.get(base + 4), 0, 28) << 3;
        let mut addresses = [first; CUBE_FACES];
        if kind.is_cube() {
            for (face, address) in addresses.iter_mut().enumerate().skip(1) {
                let word = regs.get(CUBE_ADDRESSES + face as u16 - 1);
                // The low 22 bits are the face's own; the top 6 are ADDR1's.
                *address = ((first >> 3) & !0x3F_FFFF | bits(word, 0, 22)) << 3;
            }
        }
        let (width, height) = (bits(dim, 16, 11), bits(dim, 0, 11));
        let mut config = UnitConfig {
            kind,
            width,
            height,
            format,
            addresses,
            wrap_s: Wrap::from_code(bits(param, 12, 3)),
            wrap_t: Wrap::from_code(bits(param, 8, 3)),
            mag_linear: param & 2 != 0,
            min_linear: param & 4 != 0,
            mip_linear: param & (1 << 24) != 0,
            lod_bias: signed_fixed(lod, 5, 8),
            min_level: bits(lod, 24, 4),
            max_level: bits(lod, 16, 4),
            border: regs.get(base).to_le_bytes(),
            shadow: if unit == 0 {
                let word = regs.get(crate::regs::id::TEXUNIT0_SHADOW);
                ShadowLookup {
                    orthographic: word & 1 != 0,
                    bias: word & 0xFF_FFFE,
                }
            } else {
                ShadowLookup::default()
            },
        };
        config.max_level = config.max_level.min(config.deepest_level());
        config.min_level = config.min_level.min(config.max_level);
        Some(config)
    }

    /// The last level whose sides are both at least 8 texels (one tile): no smaller level is
    /// addressable.
    pub fn deepest_level(&self) -> u32 {
        let side = self.width.min(self.height).max(8);
        side.ilog2() - 3
    }

    /// Level `level`'s size.
    pub fn level_size(&self, level: u32) -> (u32, u32) {
        ((self.width >> level).max(1), (self.height >> level).max(1))
    }

    /// Bytes of one face, every level from 0 to `max_level`.
    pub fn face_bytes(&self) -> usize {
        (0..=self.max_level)
            .map(|level| {
                let (w, h) = self.level_size(level);
                self.format.image_bytes(w, h)
            })
            .sum()
    }

    /// The faces the unit reads (one unless a cube map).
    pub fn faces(&self) -> usize {
        if self.kind.is_cube() { CUBE_FACES } else { 1 }
    }

    /// Whether the texture has something to sample (a zero-sized texture samples as
    /// transparent black).
    fn is_empty(&self) -> bool {
        self.width == 0 || self.height == 0
    }

    /// Whether a fragment's level of detail changes its texel: only when the texture has
    /// levels above 0. The level of detail is clamped to the levels first, so with level 0
    /// alone it is 0 and every fragment is magnified, whatever the two filters are
    /// (docs/gpu-texturing.md, "Level of detail"). Shadow maps read level 0 only.
    pub fn needs_lod(&self) -> bool {
        // The minimum level is at most the maximum (`configure`), so it adds nothing.
        !self.kind.is_shadow() && self.max_level > 0
    }

    /// The face and the texture-space coordinates (s, t in [0, 1] across the texture) of
    /// the interpolated coordinates (u, v, w). For a cube map `face` is given to keep the
    /// face of another sample (level-of-detail neighbours), `None` to choose by major axis.
    pub fn project(&self, [u, v, w]: [f32; 3], face: Option<usize>) -> (usize, f32, f32) {
        match self.kind {
            TextureKind::CubeMap | TextureKind::ShadowCube => {
                let face = face.unwrap_or_else(|| cube_face([u, v, w]));
                // The major axis's magnitude and the face's (s, t) axes: OpenGL's faces with
                // t reversed, so that t = 0 reads a face's first memory row where a 2D
                // texture's t = 0 reads its last: the PICA's cube faces are stored upside
                // down, as the texture converters for the PICA store them
                // (docs/gpu-texturing.md, "Cube maps").
                let (major, sc, tc) = match face {
                    0 => (u, -w, -v),
                    1 => (-u, w, -v),
                    2 => (v, u, w),
                    3 => (-v, u, -w),
                    4 => (w, u, -v),
                    _ => (-w, -u, -v),
                };
                let major = major.abs();
                (face, 0.5 * (sc / major + 1.0), 0.5 * (tc / major + 1.0))
            }
            TextureKind::Projection => (0, u / w, v / w),
            TextureKind::Shadow2d if !self.shadow.orthographic => (0, u / w, v / w),
            _ => (0, u, v),
        }
    }
}

/// The cube face of direction (u, v, w): the axis of largest magnitude, ties going to x, then
/// y; its sign picks the positive or negative face.
pub fn cube_face([u, v, w]: [f32; 3]) -> usize {
    let (au, av, aw) = (u.abs(), v.abs(), w.abs());
    if au >= av && au >= aw {
        usize::from(u < 0.0)
    } else if av >= aw {
        2 + usize::from(v < 0.0)
    } else {
        4 + usize::from(w < 0.0)
    }
}

/// One decoded level of one face.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Level {
    /// Width in texels.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// Texels by memory row ([`decode`]).
    pub texels: Vec<Rgba8>,
}

/// A decoded texture: per face, its levels from 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedTexture {
    /// The faces (one, or six for a cube map), each with its levels.
    pub faces: Vec<Vec<Level>>,
}

impl DecodedTexture {
    /// Decodes every face and level `config` describes from the faces' bytes.
    pub fn decode(config: &UnitConfig, face_bytes: &[Vec<u8>]) -> DecodedTexture {
        let faces = face_bytes
            .iter()
            .map(|bytes| {
                let mut at = 0;
                (0..=config.max_level)
                    .map(|level| {
                        let (width, height) = config.level_size(level);
                        let len = config.format.image_bytes(width, height);
                        let texels = decode(config.format, width, height, &bytes[at..at + len]);
                        at += len;
                        Level {
                            width,
                            height,
                            texels,
                        }
                    })
                    .collect()
            })
            .collect();
        DecodedTexture { faces }
    }

    /// Bytes the decoded texels take.
    pub fn bytes(&self) -> usize {
        self.faces
            .iter()
            .flatten()
            .map(|level| level.texels.len() * 4)
            .sum()
    }
}

/// Sub-texel precision of linear filtering: weights in 1/256ths (docs/gpu-texturing.md).
const WEIGHT_ONE: u32 = 256;

/// A weight in [0, 1] as a fixed-point fraction of [`WEIGHT_ONE`].
fn weight(fraction: f32) -> u32 {
    ((fraction * WEIGHT_ONE as f32 + 0.5) as u32).min(WEIGHT_ONE)
}

/// `a` and `b` mixed with `b`'s weight `w` (in 1/256ths), rounded to nearest.
fn mix(a: Rgba8, b: Rgba8, w: u32) -> Rgba8 {
    let channel = |c: usize| {
        ((a[c] as u32 * (WEIGHT_ONE - w) + b[c] as u32 * w + WEIGHT_ONE / 2) / WEIGHT_ONE) as u8
    };
    [channel(0), channel(1), channel(2), channel(3)]
}

/// A texture unit bound for a batch: its configuration and its decoded texture.
#[derive(Clone, Debug)]
pub struct BoundUnit {
    /// The configuration.
    pub config: UnitConfig,
    /// The texture.
    pub texture: Arc<DecodedTexture>,
}

/// How a level's integer coordinates wrap: [`Wrap::apply`] for its columns and for its rows.
/// The general sampler passes the unit's modes; a flat sampler ([`flat`]) the modes it was
/// compiled for, so that the same texel lookup folds its wraps away.
trait Wraps {
    fn column(&self, s: i32, width: i32) -> Option<i32>;
    fn row(&self, t: i32, height: i32) -> Option<i32>;
}

impl Wraps for UnitConfig {
    #[inline(always)]
    fn column(&self, s: i32, width: i32) -> Option<i32> {
        self.wrap_s.apply(s, width)
    }
    #[inline(always)]
    fn row(&self, t: i32, height: i32) -> Option<i32> {
        self.wrap_t.apply(t, height)
    }
}

/// The texel at integer coordinates (s, t) (t up) of a level, wrapped, or `border`.
#[inline(always)]
fn fetch(level: &Level, wraps: &impl Wraps, border: Rgba8, s: i32, t: i32) -> Rgba8 {
    let (w, h) = (level.width as i32, level.height as i32);
    match (wraps.column(s, w), wraps.row(t, h)) {
        (Some(s), Some(t)) => {
            // Memory rows run from the top: t = 0 is the last row.
            level.texels[((h - 1 - t) * w + s) as usize]
        }
        _ => border,
    }
}

/// The four texels around texel-space (x, y) of a level (texel centres at half-integers),
/// wrapped or `border`, with their weights, the products of the fractions in 1/256ths
/// ([`WEIGHT_ONE`]² in all). Each column and row is wrapped once for the two texels on it.
#[inline(always)]
fn quad(level: &Level, wraps: &impl Wraps, border: Rgba8, x: f32, y: f32) -> [(Rgba8, u32); 4] {
    let (x, y) = (x - 0.5, y - 0.5);
    let (x0, y0) = (floor_i32(x), floor_i32(y));
    let (wx, wy) = (weight(x - x0 as f32), weight(y - y0 as f32));
    let (w, h) = (level.width as i32, level.height as i32);
    let columns = [wraps.column(x0, w), wraps.column(x0 + 1, w)];
    // Memory rows run from the top: t = 0 is the last row.
    let row = |t: i32| wraps.row(t, h).map(|t| (h - 1 - t) * w);
    let rows = [row(y0), row(y0 + 1)];
    let texel = |column: Option<i32>, row: Option<i32>| match (column, row) {
        (Some(column), Some(row)) => level.texels[(row + column) as usize],
        _ => border,
    };
    [
        (
            texel(columns[0], rows[0]),
            (WEIGHT_ONE - wx) * (WEIGHT_ONE - wy),
        ),
        (texel(columns[1], rows[0]), wx * (WEIGHT_ONE - wy)),
        (texel(columns[0], rows[1]), (WEIGHT_ONE - wx) * wy),
        (texel(columns[1], rows[1]), wx * wy),
    ]
}

/// One level sampled at (s, t), nearest or linear. Linear: the four texels around (x, y),
/// weighted by the products of the fractions (in 1/256ths each) and rounded once.
#[inline(always)]
fn sample_level(
    level: &Level,
    wraps: &impl Wraps,
    border: Rgba8,
    (s, t): (f32, f32),
    linear: bool,
) -> Rgba8 {
    let (x, y) = (s * level.width as f32, t * level.height as f32);
    if !linear {
        return fetch(level, wraps, border, floor_i32(x), floor_i32(y));
    }
    let mut sums = [WEIGHT_ONE * WEIGHT_ONE / 2; 4];
    for (texel, w) in quad(level, wraps, border, x, y) {
        for c in 0..4 {
            sums[c] += texel[c] as u32 * w;
        }
    }
    let one = WEIGHT_ONE * WEIGHT_ONE;
    [
        (sums[0] / one) as u8,
        (sums[1] / one) as u8,
        (sums[2] / one) as u8,
        (sums[3] / one) as u8,
    ]
}

impl BoundUnit {
    /// What a unit samples anywhere when it cannot sample at (s, t): transparent black for a
    /// zero-sized texture, the border for coordinates that are not finite; `None` otherwise.
    #[inline(always)]
    fn unsampled(&self, s: f32, t: f32) -> Option<Rgba8> {
        let config = &self.config;
        if config.is_empty() {
            Some([0; 4])
        } else if !s.is_finite() || !t.is_finite() {
            Some(config.border)
        } else {
            None
        }
    }

    /// One level sampled at (s, t) with the unit's wrap modes, nearest or linear.
    fn sample_level(&self, level: &Level, s: f32, t: f32, linear: bool) -> Rgba8 {
        sample_level(level, &self.config, self.config.border, (s, t), linear)
    }

    /// The texel colour at (s, t) of `face` with level of detail `lod` (log2 of texels per
    /// pixel at level 0, before the bias; 0 when the unit needs none).
    pub fn sample(&self, face: usize, s: f32, t: f32, lod: f32) -> Rgba8 {
        let config = &self.config;
        if let Some(color) = self.unsampled(s, t) {
            return color;
        }
        let levels = &self.texture.faces[face.min(self.texture.faces.len() - 1)];
        let lod = (lod + config.lod_bias).clamp(config.min_level as f32, config.max_level as f32);
        if lod.is_nan() || lod <= 0.0 {
            return self.sample_level(&levels[0], s, t, config.mag_linear);
        }
        if !config.mip_linear {
            // The nearest level: rounding half down, as OpenGL's nearest mipmap.
            let above = lod + 0.5;
            let whole = above as u32;
            let ceiling = whole + u32::from((whole as f32) < above);
            let level = ceiling.saturating_sub(1).min(config.max_level);
            return self.sample_level(&levels[level as usize], s, t, config.min_linear);
        }
        let lower = lod as u32;
        let upper = (lower + 1).min(config.max_level);
        let a = self.sample_level(&levels[lower as usize], s, t, config.min_linear);
        if upper == lower {
            return a;
        }
        let b = self.sample_level(&levels[upper as usize], s, t, config.min_linear);
        mix(a, b, weight(lod - lower as f32))
    }

    /// A shadow map's lookup at (s, t) of `face` for a fragment at `depth` (|w| for a 2D
    /// map, the major axis's magnitude for a cube; docs/gpu-shadows.md, "Lookups"). A texel
    /// holds the stored depth in A·2^16 + B·2^8 + G and the intensity in R; the fragment is
    /// lit by the intensity where the stored depth is at least its own (⌊min(depth, 1) ·
    /// 0xFFFFFF⌋ less the bias), else 0. With linear magnification the four texels around
    /// are compared and their results weighted as linear filtering weights colours; else the
    /// nearest. The result is the same in all four channels.
    pub fn sample_shadow(&self, face: usize, s: f32, t: f32, depth: f32) -> Rgba8 {
        let config = &self.config;
        if config.is_empty() {
            return [0; 4];
        }
        let level = &self.texture.faces[face.min(self.texture.faces.len() - 1)][0];
        let depth = (depth.min(1.0) * 0xFF_FFFF as f32) as u32;
        let depth = depth.saturating_sub(config.shadow.bias);
        let lit = |texel: Rgba8| {
            let stored = u32::from_be_bytes([0, texel[3], texel[2], texel[1]]);
            if stored >= depth { texel[0] as u32 } else { 0 }
        };
        let (x, y) = (s * level.width as f32, t * level.height as f32);
        let value = if config.mag_linear {
            let mut sum = WEIGHT_ONE * WEIGHT_ONE / 2;
            for (texel, w) in quad(level, config, config.border, x, y) {
                sum += lit(texel) * w;
            }
            (sum / (WEIGHT_ONE * WEIGHT_ONE)) as u8
        } else {
            lit(fetch(
                level,
                config,
                config.border,
                floor_i32(x),
                floor_i32(y),
            )) as u8
        };
        [value; 4]
    }

    /// The level of detail of a fragment from its texture-space coordinates and those of its
    /// right and upper neighbours: log2 of the longer screen-space step in level-0 texels.
    pub fn lod(&self, centre: (f32, f32), right: (f32, f32), up: (f32, f32)) -> f32 {
        let (w, h) = (self.config.width as f32, self.config.height as f32);
        let length = |(s, t): (f32, f32)| {
            let (ds, dt) = ((s - centre.0) * w, (t - centre.1) * h);
            ds * ds + dt * dt
        };
        0.5 * length(right).max(length(up)).log2()
    }
}

/// [`BoundUnit::sample`] at level 0 of a 2D texture that needs no level of detail, compiled
/// for one filter and one pair of wrap modes ([`flat_sampler`]): what the textured fragment
/// path samples with.
pub type FlatSample = fn(&BoundUnit, f32, f32) -> Rgba8;

/// A wrap mode as a type, so that a sampler is compiled for it.
trait WrapRule {
    /// [`Wrap::apply`] for this mode.
    fn apply(i: i32, size: i32) -> Option<i32>;
}

macro_rules! wrap_rule {
    ($name:ident, $mode:expr) => {
        struct $name;
        impl WrapRule for $name {
            #[inline(always)]
            fn apply(i: i32, size: i32) -> Option<i32> {
                $mode.apply(i, size)
            }
        }
    };
}
wrap_rule!(EdgeRule, Wrap::ClampToEdge);
wrap_rule!(BorderRule, Wrap::ClampToBorder);
wrap_rule!(RepeatRule, Wrap::Repeat);
wrap_rule!(MirrorRule, Wrap::MirroredRepeat);

/// Columns wrapped by `S`, rows by `T`.
struct Fixed<S, T>(std::marker::PhantomData<(S, T)>);

impl<S: WrapRule, T: WrapRule> Wraps for Fixed<S, T> {
    #[inline(always)]
    fn column(&self, s: i32, width: i32) -> Option<i32> {
        S::apply(s, width)
    }
    #[inline(always)]
    fn row(&self, t: i32, height: i32) -> Option<i32> {
        T::apply(t, height)
    }
}

/// [`BoundUnit::sample`]`(0, s, t, 0.0)` of a 2D texture with level 0 alone: the same checks,
/// then level 0 with the magnification filter (`LINEAR`), the wrap modes `S` and `T` fixed.
fn flat<const LINEAR: bool, S: WrapRule, T: WrapRule>(unit: &BoundUnit, s: f32, t: f32) -> Rgba8 {
    if let Some(color) = unit.unsampled(s, t) {
        return color;
    }
    let wraps = Fixed::<S, T>(std::marker::PhantomData);
    let level = &unit.texture.faces[0][0];
    sample_level(level, &wraps, unit.config.border, (s, t), LINEAR)
}

/// The sampler of a bound 2D unit that needs no level of detail ([`FlatSample`]); `None` for
/// any other unit, which [`BoundUnit::sample`] serves.
pub fn flat_sampler(unit: &BoundUnit) -> Option<FlatSample> {
    let config = &unit.config;
    if config.kind != TextureKind::Texture2d || config.needs_lod() {
        return None;
    }
    macro_rules! for_t {
        ($linear:expr, $s:ty) => {
            match config.wrap_t {
                Wrap::ClampToEdge => flat::<$linear, $s, EdgeRule> as FlatSample,
                Wrap::ClampToBorder => flat::<$linear, $s, BorderRule>,
                Wrap::Repeat => flat::<$linear, $s, RepeatRule>,
                Wrap::MirroredRepeat => flat::<$linear, $s, MirrorRule>,
            }
        };
    }
    macro_rules! for_s {
        ($linear:expr) => {
            match config.wrap_s {
                Wrap::ClampToEdge => for_t!($linear, EdgeRule),
                Wrap::ClampToBorder => for_t!($linear, BorderRule),
                Wrap::Repeat => for_t!($linear, RepeatRule),
                Wrap::MirroredRepeat => for_t!($linear, MirrorRule),
            }
        };
    }
    Some(if config.mag_linear {
        for_s!(true)
    } else {
        for_s!(false)
    })
}

/// ⌊x⌋ as an integer, saturating far outside the texture.
fn floor_i32(x: f32) -> i32 {
    // Truncation, one down for negative fractions: `f32::floor` is a library call on the
    // baseline x86-64 target.
    let x = x.clamp(-(1 << 24) as f32, (1 << 24) as f32);
    let truncated = x as i32;
    truncated - i32::from((truncated as f32) > x)
}

/// Decoded textures kept between batches, keyed by what they were decoded from.
#[derive(Debug, Default)]
pub struct TextureCache {
    entries: Vec<CacheEntry>,
    /// Textures decoded (misses), for tests and statistics.
    pub decodes: u64,
}

#[derive(Debug)]
struct CacheEntry {
    key: CacheKey,
    /// The memory generation at which the bytes were last seen equal.
    generation: u64,
    texture: Arc<DecodedTexture>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct CacheKey {
    format: TextureFormat,
    size: (u32, u32),
    max_level: u32,
    addresses: Vec<u32>,
    hash: u64,
}

/// The most decoded bytes the cache keeps; older textures are dropped beyond it.
const CACHE_BYTES: usize = 128 << 20;

impl TextureCache {
    /// The decoded texture of `config`, from the cache when its bytes are unchanged.
    pub fn get(
        &mut self,
        config: &UnitConfig,
        memory: &PhysicalMemory,
    ) -> Result<Arc<DecodedTexture>, MemoryError> {
        let addresses: Vec<u32> = config.addresses[..config.faces()].to_vec();
        let shape = |key: &CacheKey| {
            key.format == config.format
                && key.size == (config.width, config.height)
                && key.max_level == config.max_level
                && key.addresses == addresses
        };
        let generation = memory.generation();
        if let Some(entry) = self
            .entries
            .iter()
            .find(|e| shape(&e.key) && e.generation == generation)
        {
            return Ok(entry.texture.clone());
        }
        let len = config.face_bytes();
        let bytes = addresses
            .iter()
            .map(|&address| memory.read_vec(address, len))
            .collect::<Result<Vec<_>, _>>()?;
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        for face in &bytes {
            hasher.update(face);
        }
        let key = CacheKey {
            format: config.format,
            size: (config.width, config.height),
            max_level: config.max_level,
            addresses,
            hash: hasher.digest(),
        };
        if let Some(entry) = self.entries.iter_mut().find(|e| e.key == key) {
            entry.generation = generation;
            return Ok(entry.texture.clone());
        }
        let texture = Arc::new(DecodedTexture::decode(config, &bytes));
        self.decodes += 1;
        self.entries.push(CacheEntry {
            key,
            generation,
            texture: texture.clone(),
        });
        // Oldest first out, keeping the newest whatever its size.
        let mut total: usize = self.entries.iter().map(|e| e.texture.bytes()).sum();
        while total > CACHE_BYTES && self.entries.len() > 1 {
            total -= self.entries.remove(0).texture.bytes();
        }
        Ok(texture)
    }

    /// Bytes of decoded texels held.
    pub fn bytes_held(&self) -> usize {
        self.entries.iter().map(|e| e.texture.bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_modes_map_coordinates() {
        let size = 4;
        let map =
            |wrap: Wrap| -> Vec<Option<i32>> { (-5..9).map(|i| wrap.apply(i, size)).collect() };
        let some = |v: &[i32]| v.iter().map(|&i| Some(i)).collect::<Vec<_>>();
        assert_eq!(
            map(Wrap::ClampToEdge),
            some(&[0, 0, 0, 0, 0, 0, 1, 2, 3, 3, 3, 3, 3, 3])
        );
        assert_eq!(
            map(Wrap::Repeat),
            some(&[3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0])
        );
        assert_eq!(
            map(Wrap::MirroredRepeat),
            some(&[3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0, 0])
        );
        let border = map(Wrap::ClampToBorder);
        assert_eq!(border[5..9], some(&[0, 1, 2, 3])[..]);
        assert!(border[..5].iter().chain(&border[9..]).all(Option::is_none));
    }

    #[test]
    fn cube_faces_follow_the_major_axis() {
        assert_eq!(cube_face([1.0, 0.5, -0.5]), 0);
        assert_eq!(cube_face([-1.0, 0.5, -0.5]), 1);
        assert_eq!(cube_face([0.1, 2.0, 0.5]), 2);
        assert_eq!(cube_face([0.1, -2.0, 0.5]), 3);
        assert_eq!(cube_face([0.1, 0.2, 0.5]), 4);
        assert_eq!(cube_face([0.1, 0.2, -0.5]), 5);
    }
}
