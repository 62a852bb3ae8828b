//! The large image of the memory benchmark: an RGB PNG of pseudo-random
//! pixels. Noise does not compress, so the file is as large as its pixels
//! (a 1826 × 1826 image is about 10 MB), and the same seed always gives
//! the same bytes.

use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::{ExtendedColorType, ImageEncoder as _};

/// A `side` × `side` RGB PNG of noise from `seed`.
pub fn noise_png(side: u32, seed: u64) -> anyhow::Result<Vec<u8>> {
    let len = side as usize * side as usize * 3;
    let mut pixels = Vec::with_capacity(len);
    // xorshift64*: plenty for pixels, no dependency.
    let mut state = seed | 1;
    while pixels.len() < len {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let word = state.wrapping_mul(0x2545_F491_4F6C_DD1D);
        pixels.extend_from_slice(&word.to_le_bytes());
    }
    pixels.truncate(len);
    let mut png = Vec::with_capacity(len + len / 64);
    // Compressing noise only costs time: store it quickly, unfiltered.
    PngEncoder::new_with_quality(&mut png, CompressionType::Fast, FilterType::NoFilter)
        .write_image(&pixels, side, side, ExtendedColorType::Rgb8)?;
    Ok(png)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_noise_png_is_about_as_large_as_its_pixels_and_decodes() {
        let png = noise_png(64, 7).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert!(png.len() >= 64 * 64 * 3, "{} bytes", png.len());
        let img = image::load_from_memory(&png).unwrap();
        assert_eq!((img.width(), img.height()), (64, 64));
        assert_eq!(noise_png(64, 7).unwrap(), png, "same seed, same bytes");
    }
}
