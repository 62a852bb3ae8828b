//! Images for vision models and image tools: recognising a format from
//! its bytes, decoding once within memory limits, and the preprocessing
//! variants (grayscale, CLAHE contrast equalisation, downscaling), each
//! encoded once as PNG straight into a base64 `data:` URL.
//!
//! Memory: a decoded image is borrowed by every variant; a variant that
//! changes nothing (a resize of a small image) borrows instead of copying;
//! PNG bytes are written through a base64 encoder into the URL string, so
//! no separate PNG buffer exists.

mod clahe;

use std::borrow::Cow;
use std::io::Cursor;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use image::codecs::png::{CompressionType, FilterType as PngFilter, PngEncoder};
use image::{DynamicImage, GrayImage, ImageReader, Limits};

pub(crate) use clahe::{clahe, DEFAULT_CLIP_LIMIT, DEFAULT_TILES};

/// Largest width or height decoded: beyond this a file is more likely a
/// decompression bomb than a photo.
const MAX_SIDE: u32 = 16_384;

/// Largest allocation a decoder may make.
const MAX_ALLOC: u64 = 512 * 1024 * 1024;

/// The MIME type of an image, from its first bytes.
pub(crate) fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 26 && bytes.starts_with(b"BM") {
        Some("image/bmp")
    } else {
        None
    }
}

/// The file extension for an image MIME type.
pub(crate) fn extension(mime: &str) -> &'static str {
    match mime {
        "image/jpeg" => "jpg",
        "image/webp" => "webp",
        "image/gif" => "gif",
        "image/bmp" => "bmp",
        _ => "png",
    }
}

/// Decodes a PNG, JPEG or WebP image; the error says why in words a
/// caller can act on.
pub(crate) fn decode(bytes: &[u8]) -> Result<DynamicImage, String> {
    if bytes.is_empty() {
        return Err("the data is empty".into());
    }
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| format!("cannot read it ({e})"))?;
    let Some(format) = reader.format() else {
        return Err("it is not an image format mcpyard recognises (send PNG, JPEG or WebP)".into());
    };
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_ALLOC);
    reader.limits(limits);
    reader.decode().map_err(|e| match e {
        image::ImageError::Unsupported(_) => {
            format!("{format:?} images are not supported (send PNG, JPEG or WebP)")
        }
        image::ImageError::Limits(_) => format!(
            "it is too large to decode (at most {MAX_SIDE} px a side and {} MiB of pixels)",
            MAX_ALLOC >> 20
        ),
        other => format!("it is not a valid {format:?} image ({other})"),
    })
}

/// One preprocessing of an image, sent to the model as its own image.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Variant {
    /// Luma only.
    Grayscale,
    /// CLAHE on the luma; colour (chroma) is kept.
    Equalize { clip_limit: f32, tiles: u32 },
    /// Downscaled so the longer side is at most `max_side` (never
    /// upscaled), keeping the aspect ratio.
    Resize { max_side: u32 },
}

impl Variant {
    /// How the variant is named to the model and in results.
    pub(crate) fn label(&self) -> String {
        match self {
            Self::Grayscale => "grayscale".into(),
            Self::Equalize { clip_limit, tiles } => {
                format!(
                    "contrast-equalized (CLAHE, clip limit {clip_limit}, {tiles}x{tiles} tiles)"
                )
            }
            Self::Resize { max_side } => format!("resized (max side {max_side} px)"),
        }
    }

    /// The variant of `img`; borrowed when it would equal `img`.
    pub(crate) fn apply<'a>(&self, img: &'a DynamicImage) -> Cow<'a, DynamicImage> {
        match *self {
            Self::Grayscale => Cow::Owned(grayscale(img)),
            Self::Equalize { clip_limit, tiles } => Cow::Owned(equalize(img, tiles, clip_limit)),
            Self::Resize { max_side } => {
                let max_side = max_side.max(1);
                if img.width().max(img.height()) <= max_side {
                    Cow::Borrowed(img)
                } else {
                    // Area averaging: sharp enough for downscaling, and
                    // several times faster than a windowed filter.
                    Cow::Owned(img.thumbnail(max_side, max_side))
                }
            }
        }
    }
}

fn grayscale(img: &DynamicImage) -> DynamicImage {
    if img.color().has_alpha() {
        DynamicImage::ImageLumaA8(img.to_luma_alpha8())
    } else {
        DynamicImage::ImageLuma8(img.to_luma8())
    }
}

/// CLAHE on the luma. For colour images the luma change is added to R, G
/// and B alike, which is exactly replacing Y in full-range YCbCr while
/// keeping Cb and Cr.
pub(crate) fn equalize(img: &DynamicImage, tiles: u32, clip_limit: f32) -> DynamicImage {
    let (w, h) = (img.width(), img.height());
    match img {
        DynamicImage::ImageLuma8(_) | DynamicImage::ImageLuma16(_) => {
            let luma = img.to_luma8();
            let out = clahe(luma.as_raw(), w, h, tiles, clip_limit);
            GrayImage::from_raw(w, h, out).map_or_else(|| img.clone(), DynamicImage::ImageLuma8)
        }
        DynamicImage::ImageLumaA8(_) | DynamicImage::ImageLumaA16(_) => {
            let mut la = img.to_luma_alpha8();
            let luma: Vec<u8> = la.pixels().map(|p| p.0[0]).collect();
            let out = clahe(&luma, w, h, tiles, clip_limit);
            for (p, v) in la.pixels_mut().zip(out) {
                p.0[0] = v;
            }
            DynamicImage::ImageLumaA8(la)
        }
        _ if img.color().has_alpha() => {
            let mut rgba = img.to_rgba8();
            shift_luma(rgba.as_mut(), 4, w, h, tiles, clip_limit);
            DynamicImage::ImageRgba8(rgba)
        }
        _ => {
            let mut rgb = img.to_rgb8();
            shift_luma(rgb.as_mut(), 3, w, h, tiles, clip_limit);
            DynamicImage::ImageRgb8(rgb)
        }
    }
}

/// Equalises the luma of interleaved RGB(A) pixels in place.
fn shift_luma(px: &mut [u8], stride: usize, w: u32, h: u32, tiles: u32, clip: f32) {
    let luma: Vec<u8> = px
        .chunks_exact(stride)
        .map(|p| luma_of(p[0], p[1], p[2]))
        .collect();
    let out = clahe(&luma, w, h, tiles, clip);
    for ((p, &before), &after) in px.chunks_exact_mut(stride).zip(&luma).zip(&out) {
        let delta = after as i16 - before as i16;
        for c in &mut p[..3] {
            *c = (*c as i16 + delta).clamp(0, 255) as u8;
        }
    }
}

/// BT.601 luma, as JPEG's YCbCr uses.
fn luma_of(r: u8, g: u8, b: u8) -> u8 {
    (0.299 * r as f32 + 0.587 * g as f32 + 0.114 * b as f32)
        .round()
        .clamp(0.0, 255.0) as u8
}

/// `data:<mime>;base64,<bytes>`, base64 written once into the string.
pub(crate) fn data_url(mime: &str, bytes: &[u8]) -> String {
    let prefix = format!("data:{mime};base64,");
    let mut url = String::with_capacity(prefix.len() + bytes.len().div_ceil(3) * 4);
    url.push_str(&prefix);
    STANDARD.encode_string(bytes, &mut url);
    url
}

/// The image as a PNG `data:` URL, encoded straight into base64.
pub(crate) fn png_data_url(img: &DynamicImage) -> Result<String, String> {
    // PNG has no float samples: those become 8-bit first.
    let img: Cow<'_, DynamicImage> = match img {
        DynamicImage::ImageRgb32F(_) => Cow::Owned(DynamicImage::ImageRgb8(img.to_rgb8())),
        DynamicImage::ImageRgba32F(_) => Cow::Owned(DynamicImage::ImageRgba8(img.to_rgba8())),
        other => Cow::Borrowed(other),
    };
    let raw = img.as_bytes().len();
    // Compressed PNG is usually well under half the raw size; start there
    // so the string rarely grows.
    let mut url = String::with_capacity(raw / 2 + 64);
    url.push_str("data:image/png;base64,");
    let mut writer = base64::write::EncoderStringWriter::from_consumer(url, &STANDARD);
    img.write_with_encoder(PngEncoder::new_with_quality(
        &mut writer,
        CompressionType::Fast,
        PngFilter::Adaptive,
    ))
    .map_err(|e| format!("encoding it as PNG failed ({e})"))?;
    Ok(writer.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage};

    fn colourful(w: u32, h: u32) -> DynamicImage {
        DynamicImage::ImageRgb8(RgbImage::from_fn(w, h, |x, y| {
            Rgb([(x * 4) as u8, (y * 4) as u8, 128])
        }))
    }

    fn from_url(url: &str) -> DynamicImage {
        let b64 = url
            .strip_prefix("data:image/png;base64,")
            .expect("a PNG data URL");
        let bytes = STANDARD.decode(b64).expect("valid base64");
        assert_eq!(sniff(&bytes), Some("image/png"));
        decode(&bytes).expect("decodes")
    }

    #[test]
    fn variants_round_trip_through_png_data_urls() {
        let img = colourful(40, 20);
        let gray = from_url(&png_data_url(&Variant::Grayscale.apply(&img)).expect("png"));
        assert!(gray
            .to_rgb8()
            .pixels()
            .all(|p| p[0] == p[1] && p[1] == p[2]));
        let small =
            from_url(&png_data_url(&Variant::Resize { max_side: 10 }.apply(&img)).expect("png"));
        assert_eq!((small.width(), small.height()), (10, 5));
        let same = Variant::Resize { max_side: 100 }.apply(&img);
        assert!(
            matches!(same, Cow::Borrowed(_)),
            "no copy when nothing changes"
        );
    }

    #[test]
    fn equalize_keeps_grays_gray_and_alpha() {
        let img = DynamicImage::ImageRgba8(image::RgbaImage::from_fn(16, 16, |x, _| {
            let v = 120 + (x % 4) as u8;
            image::Rgba([v, v, v, 77])
        }));
        let out = equalize(&img, 8, 2.0).to_rgba8();
        assert!(out
            .pixels()
            .all(|p| p[0] == p[1] && p[1] == p[2] && p[3] == 77));
        assert_ne!(out.as_raw(), img.to_rgba8().as_raw(), "pixels changed");
    }

    #[test]
    fn bad_bytes_say_why() {
        assert!(decode(b"").unwrap_err().contains("empty"));
        assert!(decode(b"hello, not an image").unwrap_err().contains("PNG"));
        let mut truncated = Vec::new();
        colourful(8, 8)
            .write_to(&mut Cursor::new(&mut truncated), image::ImageFormat::Png)
            .expect("encode");
        truncated.truncate(truncated.len() / 2);
        assert!(decode(&truncated).unwrap_err().contains("Png"));
        assert_eq!(sniff(b"GIF89a......"), Some("image/gif"));
    }

    #[test]
    fn data_urls_carry_the_mime_type() {
        assert_eq!(data_url("image/jpeg", b"hi"), "data:image/jpeg;base64,aGk=");
        assert_eq!(extension("image/jpeg"), "jpg");
    }
}
