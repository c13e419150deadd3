//! `proctex.ctf`: the procedural texture (texture unit 3, docs/gpu-proctex.md) in sixteen
//! settings, four to a row from the top left: each mapping function with a variety of clamp
//! modes; noise on two of them; the shifts; clamp to zero; separate alpha (a soft round
//! sprite, blended over the background like citro2d's circles); the colour table's filters
//! with eight colour entries rewritten mid-frame (nearest bands, linear blends); and linear
//! mipmaps on a quad in perspective. Each quad's colour is combiner source 3, blended by its alpha
//! over a dark grey.

use picajit::gpu::builder::{Attribute, Element, SceneBuilder};
use picajit::gpu::fragment::combiner::{CombinerStage, source};
use picajit::gpu::fragment::proctex::{
    clamp, color_diffs, filter, map_table_from_fn, mapping, table,
};
use picajit::gpu::framebuffer::color::Rgba8;
use picajit::gpu::front::trace::Trace;
use picajit::gpu::geometry::assembly::Topology;
use picajit::gpu::geometry::loader::ComponentType;
use picajit::gpu::regs::id;

use super::common::*;
use super::texture_formats::PASS_TEXCOORD;

/// A palette of 256 colours: dark blue, teal, gold, red, white.
fn palette() -> [Rgba8; 256] {
    const STOPS: [[f32; 3]; 5] = [
        [20.0, 30.0, 90.0],
        [30.0, 150.0, 160.0],
        [240.0, 200.0, 60.0],
        [200.0, 40.0, 40.0],
        [250.0, 250.0, 250.0],
    ];
    std::array::from_fn(|i| {
        let x = i as f32 / 255.0 * 4.0;
        let k = (x as usize).min(3);
        let f = x - k as f32;
        let [r, g, b] =
            std::array::from_fn(|c| (STOPS[k][c] + (STOPS[k + 1][c] - STOPS[k][c]) * f) as u8);
        [r, g, b, 255]
    })
}

/// One setting: PROCTEX0's fields, the filter, the width and first entry of the colour table,
/// and the quad's texture coordinates (from, to).
struct Setting {
    proctex0: u32,
    filter: u32,
    width: u32,
    offset: u32,
    coords: ([f32; 2], [f32; 2]),
}

/// PROCTEX0 from its fields: the clamps, the RGB mapping function, the shifts.
const fn fields(u_clamp: u32, v_clamp: u32, rgb: u32) -> u32 {
    u_clamp | v_clamp << 3 | rgb << 6
}

const NOISE: u32 = 1 << 15;
const SEPARATE_ALPHA: u32 = 1 << 14;

fn settings() -> [Setting; 16] {
    use clamp::*;
    use mapping::*;
    let plain = |proctex0: u32, coords| Setting {
        proctex0,
        filter: filter::NEAREST,
        width: 255,
        offset: 0,
        coords,
    };
    let unit = ([0.0, 0.0], [1.0, 1.0]);
    let centred = ([-1.0, -1.0], [1.0, 1.0]);
    [
        plain(fields(TO_EDGE, TO_EDGE, U), unit),
        plain(
            fields(TO_EDGE, MIRRORED_REPEAT, V2),
            ([0.0, 0.0], [1.0, 3.0]),
        ),
        plain(
            fields(SYMMETRICAL_REPEAT, SYMMETRICAL_REPEAT, ADD),
            ([0.0, 0.0], [2.0, 2.0]),
        ),
        plain(fields(TO_EDGE, TO_EDGE, ADD2), centred),
        Setting {
            filter: filter::LINEAR,
            ..plain(fields(TO_EDGE, TO_EDGE, SQRT2), centred)
        },
        plain(
            fields(MIRRORED_REPEAT, MIRRORED_REPEAT, MIN),
            ([0.0, 0.0], [2.0, 2.0]),
        ),
        plain(fields(PULSE, TO_EDGE, MAX), unit),
        plain(fields(TO_EDGE, TO_EDGE, RMAX), centred),
        // Noise: marble rings, and a wavy ramp.
        Setting {
            filter: filter::LINEAR,
            ..plain(
                fields(SYMMETRICAL_REPEAT, SYMMETRICAL_REPEAT, SQRT2) | NOISE,
                centred,
            )
        },
        plain(
            fields(SYMMETRICAL_REPEAT, TO_EDGE, U) | NOISE,
            ([0.0, 0.0], [2.0, 2.0]),
        ),
        // Bricks: u shifted by half on odd rows, v in pulses.
        plain(
            fields(SYMMETRICAL_REPEAT, SYMMETRICAL_REPEAT, MIN) | 1 << 16,
            ([0.0, 0.0], [4.0, 4.0]),
        ),
        // Clamp to zero beyond 1.
        plain(fields(TO_ZERO, TO_ZERO, ADD), ([0.0, 0.0], [1.5, 1.5])),
        // A soft round sprite: colour from u, alpha from the distance to the centre.
        plain(
            fields(TO_EDGE, TO_EDGE, U) | SQRT2 << 10 | SEPARATE_ALPHA,
            centred,
        ),
        // Eight colour entries: nearest bands, then linear blends.
        Setting {
            width: 8,
            offset: 40,
            ..plain(fields(TO_EDGE, TO_EDGE, ADD), unit)
        },
        Setting {
            width: 8,
            offset: 40,
            filter: filter::LINEAR,
            ..plain(fields(TO_EDGE, TO_EDGE, ADD), unit)
        },
        // Linear mipmaps on a quad seen in perspective (its top four times as far): the
        // coordinates shrink towards the top, so the level rises.
        Setting {
            width: 128,
            filter: filter::LINEAR_MIPMAP_LINEAR,
            ..plain(
                fields(SYMMETRICAL_REPEAT, SYMMETRICAL_REPEAT, ADD),
                ([0.0, 0.0], [2.0, 6.0]),
            )
        },
    ]
}

/// A quad from (x0, y0) to (x1, y1) in clip space with texture coordinates `from` to `to`;
/// its top edge's w is `top_w` (1: flat; more: the top farther away, in perspective).
fn quad(
    scene: &mut SceneBuilder,
    (x0, y0): (f32, f32),
    (x1, y1): (f32, f32),
    coords: ([f32; 2], [f32; 2]),
    top_w: f32,
) {
    let ([s0, t0], [s1, t1]) = coords;
    let mut data = Vec::new();
    for (x, y, s, t, w) in [
        (x0, y0, s0, t0, 1.0),
        (x1, y0, s1, t0, 1.0),
        (x0, y1, s0, t1, top_w),
        (x1, y1, s1, t1, top_w),
    ] {
        data.extend(floats(&[x * w, y * w, -0.5 * w, w, s, t, 0.0, 0.0]));
    }
    scene.attributes(&[
        Attribute::new(0, ComponentType::Float, 4),
        Attribute::new(1, ComponentType::Float, 4),
    ]);
    scene.buffer(&data, 32, &[Element::Attribute(0), Element::Attribute(1)]);
    scene.draw_arrays(Topology::Strip, 0, 4);
}

/// Builds the scene.
pub fn build() -> Trace {
    let mut scene = SceneBuilder::new();
    begin(&mut scene, 0x2A2A_2AFF);
    scene.program(
        &shaders(&[("pass-texcoord.v.pica", PASS_TEXCOORD)]),
        0,
        None,
    );
    scene.cull(0);
    scene.depth_test(false, 1, 0x0F);
    scene.blend((0, 0), [6, 7, 6, 7], [0; 4]);
    scene.texture_units_and_proctex(0, false, Some(0));
    scene.combiner(0, &CombinerStage::new(0, [source::TEXTURE3; 3]));
    for k in 1..6 {
        scene.combiner(k, &CombinerStage::PASS_THROUGH);
    }
    // The tables: smoothstep noise, identity RGB map, an alpha map falling from 1 to 0 over
    // [0.7, 1], the palette.
    let colors = palette();
    scene.proctex_lut(
        table::NOISE,
        &map_table_from_fn(|x| x * x * (3.0 - 2.0 * x)),
    );
    scene.proctex_lut(table::RGB_MAP, &map_table_from_fn(|x| x));
    scene.proctex_lut(
        table::ALPHA_MAP,
        &map_table_from_fn(|x| ((1.0 - x) / 0.3).clamp(0.0, 1.0)),
    );
    scene.proctex_lut(table::COLOR, &colors.map(u32::from_le_bytes));
    scene.proctex_lut(table::COLOR_DIFF, &color_diffs(&colors));
    let cell = 2.0 / 4.0;
    let inset = 3.0 / SIZE as f32 * 2.0;
    let settings = settings();
    // The mipmapped quad (15) before the banded ones (13, 14), which rewrite colour entries
    // 40-47 with eight distinct colours first.
    for k in (0..13).chain([15, 13, 14]) {
        let setting = &settings[k];
        if k == 13 {
            let bands: [Rgba8; 8] = [
                [230, 60, 50, 255],
                [240, 150, 40, 255],
                [240, 220, 60, 255],
                [90, 190, 80, 255],
                [40, 160, 200, 255],
                [60, 80, 200, 255],
                [140, 70, 190, 255],
                [240, 240, 240, 255],
            ];
            let mut colors = colors;
            colors[40..48].copy_from_slice(&bands);
            let diffs = color_diffs(&colors);
            scene.write(id::PROCTEX_LUT, table::COLOR << 8 | 40);
            for color in bands {
                scene.write(id::PROCTEX_LUT_DATA0, u32::from_le_bytes(color));
            }
            scene.write(id::PROCTEX_LUT, table::COLOR_DIFF << 8 | 40);
            for diff in &diffs[40..48] {
                scene.write(id::PROCTEX_LUT_DATA0, *diff);
            }
        }
        // Noise: amplitude 0.3 (0x4CC in 4095ths), phase 0.25 (0x3400) on u, 0 on v;
        // frequency 0.75 (0x3A00) on both axes. Levels 0-7; the bias 0.125 (0x3000) in the
        // high byte of PROCTEX4 (its low byte, in PROCTEX0, is 0). Levels 1-3 at 128, 192, 224.
        let proctex4 = setting.filter | 7 << 7 | setting.width << 11 | 0x30 << 19;
        scene.proctex(&[
            setting.proctex0,
            0x4CC | 0x3400 << 16,
            0x4CC,
            0x3A00 | 0x3A00 << 16,
            proctex4,
            setting.offset | 0xE0_C080 << 8,
        ]);
        let (column, row) = ((k % 4) as f32, (k / 4) as f32);
        let x0 = -1.0 + column * cell + inset;
        let y1 = 1.0 - row * cell - inset;
        let top_w = if k == 15 { 4.0 } else { 1.0 };
        quad(
            &mut scene,
            (x0, y1 - cell + 2.0 * inset),
            (x0 + cell - 2.0 * inset, y1),
            setting.coords,
            top_w,
        );
    }
    scene.end_frame();
    scene.finish()
}
