//! Contrast-limited adaptive histogram equalisation (CLAHE) of a luma
//! plane: the image is cut into a grid of tiles, each tile's histogram is
//! clipped at a limit (so flat areas and noise are not blown up) and
//! equalised, and every pixel is mapped by bilinear interpolation between
//! the four nearest tiles' mappings, so no tile edges show.

/// Tiles per side of the grid, as OpenCV's default (8×8).
pub(crate) const DEFAULT_TILES: u32 = 8;

/// Clip limit, as a multiple of a tile's mean histogram bin height. 1.0
/// leaves the image nearly untouched; 2–4 is the usual range.
pub(crate) const DEFAULT_CLIP_LIMIT: f32 = 2.0;

/// The equalised copy of `luma` (`width × height`, row-major, one byte a
/// pixel). `tiles` is clamped to the image size; `clip_limit` below 1.0 is
/// taken as 1.0.
pub(crate) fn clahe(luma: &[u8], width: u32, height: u32, tiles: u32, clip_limit: f32) -> Vec<u8> {
    let w = width as usize;
    let h = height as usize;
    if w == 0 || h == 0 || luma.len() < w * h {
        return luma.to_vec();
    }
    let tx = (tiles.max(1) as usize).min(w);
    let ty = (tiles.max(1) as usize).min(h);
    let luts = tile_luts(luma, w, h, tx, ty, clip_limit.max(1.0));

    // Per column: the two tiles to blend and the weight of the second;
    // computed once instead of per pixel.
    let xs = blend_positions(w, tx);
    let ys = blend_positions(h, ty);
    let mut out = vec![0u8; w * h];
    for (y, &(y0, y1, wy)) in ys.iter().enumerate() {
        let row = &luma[y * w..(y + 1) * w];
        let out_row = &mut out[y * w..(y + 1) * w];
        for (x, &(x0, x1, wx)) in xs.iter().enumerate() {
            let v = row[x] as usize;
            let a = luts[y0 * tx + x0][v] as f32;
            let b = luts[y0 * tx + x1][v] as f32;
            let c = luts[y1 * tx + x0][v] as f32;
            let d = luts[y1 * tx + x1][v] as f32;
            let top = a + (b - a) * wx;
            let bottom = c + (d - c) * wx;
            out_row[x] = (top + (bottom - top) * wy).round().clamp(0.0, 255.0) as u8;
        }
    }
    out
}

/// Start of tile `i` of `n` over `len` pixels (tiles differ by at most one
/// pixel in size, and every tile has at least one since `n <= len`).
fn bound(i: usize, n: usize, len: usize) -> usize {
    i * len / n
}

/// Each tile's mapping from input to output level.
fn tile_luts(luma: &[u8], w: usize, h: usize, tx: usize, ty: usize, clip: f32) -> Vec<[u8; 256]> {
    let mut luts = Vec::with_capacity(tx * ty);
    for j in 0..ty {
        let (y_start, y_end) = (bound(j, ty, h), bound(j + 1, ty, h));
        for i in 0..tx {
            let (x_start, x_end) = (bound(i, tx, w), bound(i + 1, tx, w));
            let mut hist = [0u32; 256];
            for y in y_start..y_end {
                for &v in &luma[y * w + x_start..y * w + x_end] {
                    hist[v as usize] += 1;
                }
            }
            let area = ((x_end - x_start) * (y_end - y_start)) as u32;
            luts.push(equalise(&mut hist, area, clip));
        }
    }
    luts
}

/// Clips `hist` at `clip` × its mean bin height, spreads the excess over
/// all bins (as OpenCV does: evenly, then the remainder at a regular
/// step), and returns the cumulative mapping scaled to 0..=255.
fn equalise(hist: &mut [u32; 256], area: u32, clip: f32) -> [u8; 256] {
    let limit = ((clip * area as f32 / 256.0).ceil() as u32).max(1);
    let mut excess = 0u32;
    for bin in hist.iter_mut() {
        if *bin > limit {
            excess += *bin - limit;
            *bin = limit;
        }
    }
    let share = excess / 256;
    let mut rest = excess % 256;
    for bin in hist.iter_mut() {
        *bin += share;
    }
    if rest > 0 {
        let step = (256 / rest as usize).max(1);
        let mut i = 0;
        while i < 256 && rest > 0 {
            hist[i] += 1;
            rest -= 1;
            i += step;
        }
    }
    let scale = 255.0 / area.max(1) as f32;
    let mut lut = [0u8; 256];
    let mut sum = 0u32;
    for (v, bin) in hist.iter().enumerate() {
        sum += bin;
        lut[v] = (sum as f32 * scale).round().clamp(0.0, 255.0) as u8;
    }
    lut
}

/// For each of `len` pixels along one axis split in `n` tiles: the tile
/// whose centre is at or before it, the next one, and how far between the
/// two centres it lies. Pixels before the first centre or after the last
/// use that tile alone.
fn blend_positions(len: usize, n: usize) -> Vec<(usize, usize, f32)> {
    let size = len as f32 / n as f32;
    (0..len)
        .map(|p| {
            let f = (p as f32 + 0.5) / size - 0.5;
            if f <= 0.0 {
                return (0, 0, 0.0);
            }
            let i0 = f.floor() as usize;
            if i0 >= n - 1 {
                return (n - 1, n - 1, 0.0);
            }
            (i0, i0 + 1, f - i0 as f32)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic low-contrast image: levels 100..=115 in a pattern
    /// mixing a gradient with pseudo-random texture.
    fn low_contrast(w: u32, h: u32) -> Vec<u8> {
        let mut state = 12345u32;
        (0..w * h)
            .map(|i| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let x = i % w;
                100 + ((x * 8 / w) + (state >> 16) % 8) as u8
            })
            .collect()
    }

    fn spread(p: &[u8]) -> (u8, u8, f64) {
        let min = p.iter().copied().min().unwrap_or(0);
        let max = p.iter().copied().max().unwrap_or(0);
        let mean = p.iter().map(|&v| v as f64).sum::<f64>() / p.len() as f64;
        let var = p.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / p.len() as f64;
        (min, max, var.sqrt())
    }

    #[test]
    fn low_contrast_gets_a_wider_histogram() {
        let (w, h) = (128, 96);
        let input = low_contrast(w, h);
        let out = clahe(&input, w, h, DEFAULT_TILES, DEFAULT_CLIP_LIMIT);
        assert_eq!(out.len(), input.len());
        let (in_min, in_max, in_sd) = spread(&input);
        let (out_min, out_max, out_sd) = spread(&out);
        assert!(in_min >= 100 && in_max <= 115, "{in_min}..{in_max}");
        assert!(
            out_max - out_min > 2 * (in_max - in_min),
            "range {out_min}..{out_max} from {in_min}..{in_max}"
        );
        assert!(out_sd > 2.0 * in_sd, "sd {out_sd} from {in_sd}");
        let distinct_in = input.iter().collect::<std::collections::HashSet<_>>().len();
        let distinct_out = out.iter().collect::<std::collections::HashSet<_>>().len();
        assert!(
            distinct_out >= distinct_in,
            "{distinct_out} < {distinct_in}"
        );
    }

    #[test]
    fn a_higher_clip_limit_gives_more_contrast() {
        let (w, h) = (64, 64);
        let input = low_contrast(w, h);
        let (_, _, gentle) = spread(&clahe(&input, w, h, 8, 1.5));
        let (_, _, strong) = spread(&clahe(&input, w, h, 8, 8.0));
        assert!(strong > gentle, "{strong} <= {gentle}");
    }

    #[test]
    fn the_clip_limit_bounds_the_gain_on_flat_areas() {
        // A flat image: plain equalisation would map it to white; the
        // clip keeps it near where it was, and the same everywhere.
        let input = vec![60u8; 40 * 40];
        let out = clahe(&input, 40, 40, 8, 2.0);
        assert!(out.iter().all(|&v| v == out[0]), "flat stays flat");
        assert!(out[0] < 160, "mapped to {}", out[0]);
    }

    #[test]
    fn order_is_kept() {
        // Equalisation never swaps two levels within one tile.
        let w = 32;
        let input: Vec<u8> = (0..w * w).map(|i| (i % 256) as u8).collect();
        let out = clahe(&input, w, w, 1, 3.0);
        for pair in input.iter().zip(&out).collect::<Vec<_>>().windows(2) {
            let ((a, oa), (b, ob)) = (pair[0], pair[1]);
            if a < b {
                assert!(oa <= ob, "{a}->{oa} vs {b}->{ob}");
            }
        }
    }

    #[test]
    fn tiny_and_odd_sizes_work() {
        assert_eq!(clahe(&[7], 1, 1, 8, 2.0).len(), 1);
        let odd: Vec<u8> = (0..(13 * 7)).map(|i| (i * 3) as u8).collect();
        assert_eq!(clahe(&odd, 13, 7, 8, 2.0).len(), 13 * 7);
        assert!(clahe(&[], 0, 0, 8, 2.0).is_empty());
    }
}
