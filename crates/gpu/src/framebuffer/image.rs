//! Reading the render target back as a linear image (what `picajit render` writes as PNG):
//! the tiled buffer's memory rows in order, so the first row is the top of the picture
//! (docs/gpu-rasterizer-and-framebuffer.md §3.12).

use super::color::{ColorFormat, Rgba8, tiled_offset};

/// A colour image, rows top first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Pixels, row by row.
    pub pixels: Vec<Rgba8>,
}

/// A depth image, rows top first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DepthImage {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Bits of depth per value (16 or 24).
    pub bits: u32,
    /// Depth values, row by row.
    pub values: Vec<u32>,
    /// Stencil values (0 without a stencil buffer).
    pub stencil: Vec<u8>,
}

/// The pixels of a tiled surface `data` of `width` × `height` pixels in memory order (`bytes`
/// per pixel), each decoded by `read` from its bytes.
pub fn pixels<T: Copy + Default>(
    (width, height): (u32, u32),
    bytes: usize,
    data: &[u8],
    read: impl Fn(&[u8]) -> T,
) -> Vec<T> {
    let (w, h) = (width, height);
    let (width, height) = (w as usize, h as usize);
    if width % 8 != 0 || height % 8 != 0 || data.len() < width * height * bytes {
        // Not whole tiles: pixel by pixel.
        let mut out = Vec::with_capacity(width * height);
        for row in 0..h {
            for x in 0..w {
                let at = tiled_offset(x, row, w, bytes as u32);
                out.push(data.get(at..at + bytes).map_or_else(T::default, &read));
            }
        }
        return out;
    }
    // Tile by tile in memory order, each tile's 64 pixels in its Morton order.
    let mut out = vec![T::default(); width * height];
    let columns = width / 8;
    for (tile, texels) in data
        .chunks_exact(64 * bytes)
        .take(columns * (height / 8))
        .enumerate()
    {
        let first = (tile / columns) * 8 * width + (tile % columns) * 8;
        for (k, pixel) in texels.chunks_exact(bytes).enumerate() {
            let (x, y) = TILE_PLACES[k];
            out[first + y as usize * width + x as usize] = read(pixel);
        }
    }
    out
}

/// The colours of a tiled colour surface of `size` in `format`, decoded by a loop compiled for
/// the format, in memory order.
pub fn colours(size: (u32, u32), format: ColorFormat, data: &[u8]) -> Vec<Rgba8> {
    let bytes = format.bytes();
    match format {
        ColorFormat::Rgba8 => pixels(size, bytes, data, |p| ColorFormat::Rgba8.decode(p)),
        ColorFormat::Rgb8 => pixels(size, bytes, data, |p| ColorFormat::Rgb8.decode(p)),
        ColorFormat::Rgb5a1 => pixels(size, bytes, data, |p| ColorFormat::Rgb5a1.decode(p)),
        ColorFormat::Rgb565 => pixels(size, bytes, data, |p| ColorFormat::Rgb565.decode(p)),
        ColorFormat::Rgba4 => pixels(size, bytes, data, |p| ColorFormat::Rgba4.decode(p)),
    }
}

/// `colours` stored in `format` into `out`, one after another, by a loop compiled for the
/// format.
pub fn encode_row(format: ColorFormat, colours: &[Rgba8], out: &mut [u8]) {
    let bytes = format.bytes();
    let pixels = colours.iter().zip(out.chunks_exact_mut(bytes));
    match format {
        ColorFormat::Rgba8 => pixels.for_each(|(&c, p)| ColorFormat::Rgba8.encode(c, p)),
        ColorFormat::Rgb8 => pixels.for_each(|(&c, p)| ColorFormat::Rgb8.encode(c, p)),
        ColorFormat::Rgb5a1 => pixels.for_each(|(&c, p)| ColorFormat::Rgb5a1.encode(c, p)),
        ColorFormat::Rgb565 => pixels.for_each(|(&c, p)| ColorFormat::Rgb565.encode(c, p)),
        ColorFormat::Rgba4 => pixels.for_each(|(&c, p)| ColorFormat::Rgba4.encode(c, p)),
    }
}

/// Where the k-th pixel of a tile's memory order sits in the tile: (x, y), the inverse of
/// [`super::color::morton`].
const TILE_PLACES: [(u8, u8); 64] = {
    let mut places = [(0, 0); 64];
    let mut y = 0;
    while y < 8 {
        let mut x = 0;
        while x < 8 {
            places[super::color::morton(x, y) as usize] = (x as u8, y as u8);
            x += 1;
        }
        y += 1;
    }
    places
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pixel comes from its tiled place (`tiled_offset`), read tile by tile on whole tiles
    /// and pixel by pixel otherwise; bytes past a short surface read as the default.
    #[test]
    fn pixels_come_from_their_tiled_places() {
        for (width, height, bytes) in [(16u32, 24u32, 2usize), (24, 8, 4), (12, 10, 3)] {
            let len = (width * height) as usize * bytes;
            let data: Vec<u8> = (0..len).map(|k| (k * 31 + k / 251) as u8).collect();
            // The bytes, and a last 1 for "read".
            let read = |pixel: &[u8]| {
                let mut out = [0u8; 5];
                out[..pixel.len()].copy_from_slice(pixel);
                out[4] = 1;
                out
            };
            let out = pixels((width, height), bytes, &data, read);
            for row in 0..height {
                for x in 0..width {
                    let at = tiled_offset(x, row, width, bytes as u32);
                    let expected = data.get(at..at + bytes).map_or([0; 5], read);
                    assert_eq!(out[(row * width + x) as usize], expected, "({x}, {row})");
                }
            }
        }
    }
}
