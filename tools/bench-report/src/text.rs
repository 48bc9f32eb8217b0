//! Chart text: a TTF found on the host, and a backend wrapper that measures and draws with it.
//!
//! Contract: plotters (built without its font features) only estimates text size with a fixed
//! rule and cannot draw glyphs into a bitmap. [`TextGuard`] wraps any plotters backend and
//! takes over text: it measures with the loaded font, or with a per-character estimate when
//! there is none; it lets a backend that writes text itself (SVG `<text>`) do so, and for a
//! bitmap it rasterises glyphs with ab_glyph, or draws no text when there is no font. So a
//! missing font never fails a chart, and no C font library (fontconfig, freetype) is linked.
//!
//! Sizes follow plotters: a text style of size `s` is set at `s / 1.24` pixels per em, the
//! size plotters' SVG backend writes as `font-size`, so PNG and SVG text match.

use std::path::{Path, PathBuf};

use ab_glyph::{point, Font, FontVec, GlyphId, PxScale, ScaleFont};
use plotters::prelude::DrawingBackend;
use plotters::style::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

/// Tried in order after `--font`: the usual Debian, Fedora and Arch locations of DejaVu Sans
/// (Debian package fonts-dejavu-core) and Liberation Sans.
const FONT_CANDIDATES: [&str; 6] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
];

/// Plotters' ratio between a text style's size and the em size it is drawn at.
const PLOTTERS_SIZE_PER_EM: f64 = 1.24;

/// A TrueType font read from the host.
pub struct ChartFont {
    pub path: PathBuf,
    font: FontVec,
}

/// Reads the first usable font: `preferred`, then the usual system paths. `None` when there is
/// none; unreadable or invalid files are skipped (with a note for `preferred`).
pub fn load_font(preferred: Option<&Path>) -> Option<ChartFont> {
    let candidates = preferred
        .map(Path::to_path_buf)
        .into_iter()
        .chain(FONT_CANDIDATES.iter().map(PathBuf::from));
    for path in candidates {
        let explicit = preferred == Some(path.as_path());
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) => {
                if explicit {
                    eprintln!(
                        "bench-report: note: cannot read font {}: {e}",
                        path.display()
                    );
                }
                continue;
            }
        };
        match FontVec::try_from_vec(bytes) {
            Ok(font) => return Some(ChartFont { path, font }),
            Err(_) => eprintln!(
                "bench-report: note: {} is not a usable font",
                path.display()
            ),
        }
    }
    None
}

impl ChartFont {
    fn scale(&self, style_size: f64) -> PxScale {
        // ab_glyph scales by line height (ascent - descent); convert from the em size.
        let em = (style_size / PLOTTERS_SIZE_PER_EM) as f32;
        let units_per_em = self.font.units_per_em().unwrap_or(1000.0);
        PxScale::from(em * self.font.height_unscaled() / units_per_em)
    }

    /// Width and height in pixels of `text` on one line.
    fn extent(&self, style_size: f64, text: &str) -> (u32, u32) {
        let scaled = self.font.as_scaled(self.scale(style_size));
        let mut width = 0.0f32;
        let mut previous: Option<GlyphId> = None;
        for c in text.chars() {
            let id = scaled.glyph_id(c);
            if let Some(previous) = previous {
                width += scaled.kern(previous, id);
            }
            width += scaled.h_advance(id);
            previous = Some(id);
        }
        (
            width.ceil().max(0.0) as u32,
            scaled.height().ceil().max(0.0) as u32,
        )
    }

    /// Calls `plot(x, y, coverage)` for every covered pixel of `text`, with (0, 0) at the top
    /// left of its line box.
    fn rasterize(&self, style_size: f64, text: &str, mut plot: impl FnMut(i32, i32, f32)) {
        let scaled = self.font.as_scaled(self.scale(style_size));
        let baseline = scaled.ascent();
        let mut caret = 0.0f32;
        let mut previous: Option<GlyphId> = None;
        for c in text.chars() {
            let id = scaled.glyph_id(c);
            if let Some(previous) = previous {
                caret += scaled.kern(previous, id);
            }
            let glyph = id.with_scale_and_position(scaled.scale(), point(caret, baseline));
            if let Some(outline) = self.font.outline_glyph(glyph) {
                let bounds = outline.px_bounds();
                outline.draw(|gx, gy, coverage| {
                    plot(
                        bounds.min.x as i32 + gx as i32,
                        bounds.min.y as i32 + gy as i32,
                        coverage,
                    )
                });
            }
            caret += scaled.h_advance(id);
            previous = Some(id);
        }
    }
}

/// Wraps a plotters backend to take over text (see the module docs). Everything else goes
/// straight to `inner`.
pub struct TextGuard<'f, B> {
    inner: B,
    font: Option<&'f ChartFont>,
    /// The backend writes text itself without rasterising it (SVG), so it needs no glyphs.
    backend_draws_text: bool,
}

impl<'f, B: DrawingBackend> TextGuard<'f, B> {
    /// For a backend that writes text as text (SVG).
    pub fn vector(inner: B, font: Option<&'f ChartFont>) -> Self {
        TextGuard {
            inner,
            font,
            backend_draws_text: true,
        }
    }

    /// For a backend of pixels: glyphs are rasterised here.
    pub fn bitmap(inner: B, font: Option<&'f ChartFont>) -> Self {
        TextGuard {
            inner,
            font,
            backend_draws_text: false,
        }
    }
}

impl<B: DrawingBackend> DrawingBackend for TextGuard<'_, B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vertices: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vertices, style)
    }

    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        if self.backend_draws_text {
            return self.inner.draw_text(text, style, pos);
        }
        let color = style.color();
        let Some(font) = self.font else {
            return Ok(());
        };
        if color.alpha == 0.0 {
            return Ok(());
        }
        // Same anchoring and rotation as plotters' own bitmap text.
        let (width, height) = font.extent(style.size(), text);
        let (width, height) = (width as i32, height as i32);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Center => -width / 2,
            HPos::Right => -width,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let transform = style.transform();
        let inner = &mut self.inner;
        let mut result = Ok(());
        font.rasterize(style.size(), text, |x, y, coverage| {
            if result.is_err() || coverage <= 0.0 {
                return;
            }
            let (x, y) = transform.transform(x + dx, y + dy);
            let pixel = BackendColor {
                alpha: color.alpha * f64::from(coverage.min(1.0)),
                rgb: color.rgb,
            };
            result = inner.draw_pixel((pos.0 + x, pos.1 + y), pixel);
        });
        result
    }

    fn estimate_text_size<TStyle: BackendTextStyle>(
        &self,
        text: &str,
        style: &TStyle,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        if let Some(font) = self.font {
            return Ok(font.extent(style.size(), text));
        }
        // Average glyph of a sans-serif face: about 0.55 em wide; a line about 1.2 em high.
        let em = style.size() / PLOTTERS_SIZE_PER_EM;
        let width = em * 0.55 * text.chars().count() as f64;
        Ok((width.round() as u32, (em * 1.2).round() as u32))
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_preferred_font_falls_back() {
        let found = load_font(Some(Path::new("/nonexistent/font.ttf")));
        if let Some(font) = found {
            assert_ne!(font.path, Path::new("/nonexistent/font.ttf"));
        }
    }

    #[test]
    fn non_font_file_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let bogus = dir.path().join("bogus.ttf");
        std::fs::write(&bogus, b"not a font").unwrap();
        if let Some(font) = load_font(Some(&bogus)) {
            assert_ne!(font.path, bogus);
        }
    }

    #[test]
    fn extent_grows_with_text_and_size() {
        let Some(font) = load_font(None) else {
            eprintln!("no TTF installed: font metrics not checked");
            return;
        };
        let (short, height) = font.extent(15.0, "raw");
        let (long, _) = font.extent(15.0, "randwrite4k");
        let (bigger, bigger_height) = font.extent(30.0, "raw");
        assert!(short > 0 && long > short && bigger > short && bigger_height > height);
        // About one em high at 15 / 1.24 = 12 px per em.
        assert!((10..=18).contains(&height), "height {height}");
    }
}
