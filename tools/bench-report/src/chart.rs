//! Charts of a summary: SVG (the primary output) and PNG, both drawn by plotters.
//!
//! Each chart is a header (title and a one-line legend) above the plot. File systems keep one
//! colour across charts. Text goes through [`TextGuard`], so a chart without a font on the host
//! still renders (see text.rs).

use std::collections::BTreeMap;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::summary::{CreateDelRow, Measurement, Summary, ThroughputRow};
use crate::text::{ChartFont, TextGuard};

/// The family written into the SVG; the PNG uses the font given to [`render_png`].
const FONT: &str = "sans-serif";

/// Which chart to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartKind {
    /// Grouped bars: MB/s per benchmark, one bar per file system.
    Throughput,
    /// Lines: creates/s and deletes/s against N, one line per file system.
    CreateDel,
    /// Grouped bars: a whole run's seconds per benchmark (lower is better).
    Seconds,
    /// Grouped bars on a log scale: each file system's MB/s over its row's ceiling (rawq, or
    /// raw where the row has no rawq), so 4 KiB rows show as plainly as 1 MiB ones.
    Ratio,
}

impl ChartKind {
    pub fn file_stem(self) -> &'static str {
        match self {
            ChartKind::Throughput => "throughput",
            ChartKind::CreateDel => "createdel",
            ChartKind::Seconds => "seconds",
            ChartKind::Ratio => "ratio",
        }
    }

    fn size(self) -> (u32, u32) {
        match self {
            ChartKind::Throughput => (1000, 560),
            ChartKind::CreateDel => (1000, 480),
            ChartKind::Seconds => (1000, 480),
            ChartKind::Ratio => (1400, 560),
        }
    }

    /// Whether the summary has anything for this chart.
    pub fn has_data(self, summary: &Summary) -> bool {
        match self {
            ChartKind::Throughput => !summary.throughput.is_empty(),
            ChartKind::CreateDel => !summary.createdel.is_empty(),
            ChartKind::Seconds => !summary.seconds.is_empty(),
            ChartKind::Ratio => !ceiling_ratios(summary).is_empty(),
        }
    }
}

/// The chart as an SVG document.
pub fn render_svg(
    kind: ChartKind,
    summary: &Summary,
    title: &str,
    font: Option<&ChartFont>,
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let inner = SVGBackend::with_string(&mut svg, kind.size());
        let root = TextGuard::vector(inner, font).into_drawing_area();
        draw(kind, &root, summary, title)?;
        root.present().map_err(drawing_error)?;
    }
    Ok(svg)
}

/// The chart as a PNG file (RGB, 8 bits). Without a font, the same chart without text.
pub fn render_png(
    kind: ChartKind,
    summary: &Summary,
    title: &str,
    font: Option<&ChartFont>,
) -> Result<Vec<u8>, String> {
    let (width, height) = kind.size();
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    {
        let inner = BitMapBackend::with_buffer(&mut pixels, (width, height));
        let root = TextGuard::bitmap(inner, font).into_drawing_area();
        draw(kind, &root, summary, title)?;
        root.present().map_err(drawing_error)?;
    }
    let mut png_bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut png_bytes, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Best);
    let mut writer = encoder
        .write_header()
        .map_err(|e| format!("PNG encoding failed: {e}"))?;
    writer
        .write_image_data(&pixels)
        .map_err(|e| format!("PNG encoding failed: {e}"))?;
    writer
        .finish()
        .map_err(|e| format!("PNG encoding failed: {e}"))?;
    Ok(png_bytes)
}

fn drawing_error<E: std::fmt::Display>(error: E) -> String {
    format!("drawing failed: {error}")
}

fn draw<DB: DrawingBackend>(
    kind: ChartKind,
    root: &DrawingArea<DB, Shift>,
    summary: &Summary,
    title: &str,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(drawing_error)?;
    match kind {
        ChartKind::Throughput => draw_bars(
            root,
            summary,
            &summary.throughput,
            &format!("{title}: throughput (MB/s, higher is better)"),
            "MB/s (10^6 bytes/s)",
        ),
        ChartKind::Seconds => draw_bars(
            root,
            summary,
            &summary.seconds,
            &format!("{title}: run time (seconds, lower is better)"),
            "seconds",
        ),
        ChartKind::CreateDel => draw_createdel(root, summary, title),
        ChartKind::Ratio => draw_ratios(root, summary, title),
    }
}

/// Fixed colours by position in `Summary::fs_order` (dbfs, fat32, raw, then others), so a file
/// system has the same colour in every chart of a report.
fn fs_color(index: usize) -> RGBColor {
    const COLORS: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(127, 127, 127),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
    ];
    COLORS[index % COLORS.len()]
}

/// File systems that have a value in `rows`, with their colours.
fn series_of(summary: &Summary, mut has_value: impl FnMut(&str) -> bool) -> Vec<(&str, RGBColor)> {
    summary
        .fs_order
        .iter()
        .enumerate()
        .filter(|(_, fs)| has_value(fs))
        .map(|(index, fs)| (fs.as_str(), fs_color(index)))
        .collect()
}

/// Upper end of a value axis: a little headroom above the largest value.
fn axis_top(largest: f64) -> f64 {
    if largest > 0.0 {
        largest * 1.1
    } else {
        1.0
    }
}

/// Tick label of a value axis: whole numbers unless the values are small.
fn axis_label(value: &f64) -> String {
    if value.abs() >= 10.0 || *value == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

const LIGHT_GRID: RGBColor = RGBColor(238, 238, 238);

const HEADER_HEIGHT: u32 = 76;

/// Title and a one-line legend above the plot; returns the area left for the plot. The legend
/// is drawn here rather than by plotters' series labels so it never covers data.
fn draw_header<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    series: &[(&str, RGBColor)],
) -> Result<DrawingArea<DB, Shift>, String> {
    let (header, body) = root.split_vertically(HEADER_HEIGHT);
    let width = header.dim_in_pixel().0 as i32;
    let title_style =
        TextStyle::from((FONT, 24).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    header
        .draw_text(title, &title_style, (width / 2, 10))
        .map_err(drawing_error)?;

    const SWATCH: i32 = 14;
    const SWATCH_GAP: i32 = 6;
    const ENTRY_GAP: i32 = 30;
    let label_style =
        TextStyle::from((FONT, 17).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let mut label_widths = Vec::with_capacity(series.len());
    for (name, _) in series {
        let (text_width, _) = header
            .estimate_text_size(name, &label_style)
            .map_err(drawing_error)?;
        label_widths.push(text_width as i32);
    }
    let total: i32 = label_widths
        .iter()
        .map(|w| SWATCH + SWATCH_GAP + w)
        .sum::<i32>()
        + ENTRY_GAP * (series.len() as i32 - 1).max(0);
    let mut x = ((width - total) / 2).max(0);
    let y = 56;
    for ((name, color), text_width) in series.iter().zip(label_widths) {
        let swatch = Rectangle::new(
            [(x, y - SWATCH / 2), (x + SWATCH, y + SWATCH / 2)],
            color.filled(),
        );
        header.draw(&swatch).map_err(drawing_error)?;
        header
            .draw_text(name, &label_style, (x + SWATCH + SWATCH_GAP, y))
            .map_err(drawing_error)?;
        x += SWATCH + SWATCH_GAP + text_width + ENTRY_GAP;
    }
    Ok(body)
}

/// The x axis of the bar chart: one unit per benchmark, ticks and labels at the unit centres
/// (plotters' own key-point wrapper does not allow a label formatter).
struct BenchAxis {
    count: usize,
}

impl Ranged for BenchAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, (start, end): (i32, i32)) -> i32 {
        let fraction = value / self.count.max(1) as f64;
        start + ((end - start) as f64 * fraction).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        (0..self.count).map(|index| index as f64 + 0.5).collect()
    }

    fn range(&self) -> std::ops::Range<f64> {
        0.0..self.count as f64
    }
}

/// Grouped bars of `rows` (a value per benchmark and file system: MB/s, or seconds).
/// The benchmark (row index) under the x coordinate `x`, if any of `count` rows.
fn bench_at(x: f64, count: usize) -> Option<usize> {
    let index = x.floor();
    (index >= 0.0 && (index as usize) < count).then_some(index as usize)
}

/// The bar of file system number `slot` (of `slots`) in row `index`, from `span.0` to `span.1`
/// on the y axis: the bars fill 80% of each unit, split evenly between the file systems.
fn bar(
    index: usize,
    slot: usize,
    slots: usize,
    span: (f64, f64),
    color: RGBColor,
) -> Rectangle<(f64, f64)> {
    let width = 0.8 / slots.max(1) as f64;
    let left = index as f64 + 0.1 + slot as f64 * width;
    Rectangle::new(
        [(left, span.0), (left + width * 0.9, span.1)],
        color.filled(),
    )
}

fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    summary: &Summary,
    rows: &[ThroughputRow],
    header: &str,
    y_desc: &str,
) -> Result<(), String> {
    let series = series_of(summary, |fs| {
        rows.iter().any(|row| row.values.contains_key(fs))
    });
    let body = draw_header(root, header, &series)?;

    let largest = rows
        .iter()
        .flat_map(|row| row.values.values())
        .map(|m| m.value)
        .fold(0.0, f64::max);
    let bench_count = rows.len();
    let mut chart = ChartBuilder::on(&body)
        .margin_left(10)
        .margin_right(20)
        .margin_bottom(10)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(BenchAxis { count: bench_count }, 0.0..axis_top(largest))
        .map_err(drawing_error)?;
    let bench_label = |x: &f64| {
        bench_at(*x, bench_count)
            .map(|index| rows[index].bench.clone())
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(bench_count)
        .x_label_formatter(&bench_label)
        .y_desc(y_desc)
        .y_label_formatter(&axis_label)
        .light_line_style(LIGHT_GRID)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .draw()
        .map_err(drawing_error)?;

    for (slot, (fs, color)) in series.iter().enumerate() {
        let bars = rows.iter().enumerate().filter_map(|(index, row)| {
            let value = row.values.get(*fs)?.value;
            Some(bar(index, slot, series.len(), (0.0, value), *color))
        });
        chart.draw_series(bars).map_err(drawing_error)?;
    }
    Ok(())
}

/// The file system a row's ratios are taken against: `rawq` (every request of a pass in
/// flight), else `raw` (the random rows, which rawq does not run).
const CEILINGS: [&str; 2] = ["rawq", "raw"];

/// One throughput row as ratios to its ceiling: (benchmark, ceiling, fs -> fs MB/s / ceiling
/// MB/s). Rows with neither ceiling (or a ceiling of 0) are left out; the ceiling itself is not
/// among the ratios (it is 1 by definition), but raw is where the ceiling is rawq.
pub fn ceiling_ratios(summary: &Summary) -> Vec<(String, &'static str, BTreeMap<String, f64>)> {
    summary
        .throughput
        .iter()
        .filter_map(|row| {
            let (ceiling, top) = CEILINGS.iter().find_map(|c| {
                let v = row.values.get(*c)?.value;
                (v > 0.0).then_some((*c, v))
            })?;
            let ratios: BTreeMap<String, f64> = row
                .values
                .iter()
                .filter(|(fs, m)| fs.as_str() != ceiling && fs.as_str() != "rawq" && m.value > 0.0)
                .map(|(fs, m)| (fs.clone(), m.value / top))
                .collect();
            (!ratios.is_empty()).then(|| (row.bench.clone(), ceiling, ratios))
        })
        .collect()
}

/// Tick label of the ratio axis: "0.05x", "1x", "12x".
fn ratio_label(value: &f64) -> String {
    if *value >= 10.0 {
        format!("{value:.0}x")
    } else if *value >= 1.0 {
        format!("{value:.1}x")
    } else {
        format!("{value:.2}x")
    }
}

/// Grouped bars of [`ceiling_ratios`] on a log axis, each bar drawn from 1x (the ceiling) to
/// its ratio: up for a file system faster than the ceiling, down for one slower. Each
/// benchmark is labelled with its ceiling ("seqwrite/rawq", "randwrite/raw").
fn draw_ratios<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    summary: &Summary,
    title: &str,
) -> Result<(), String> {
    let rows = ceiling_ratios(summary);
    let series = series_of(summary, |fs| {
        rows.iter().any(|(_, _, r)| r.contains_key(fs))
    });
    let body = draw_header(
        root,
        &format!("{title}: MB/s over the ceiling (rawq, else raw; log scale)"),
        &series,
    )?;
    let values = rows.iter().flat_map(|(_, _, r)| r.values().copied());
    let (lo, hi) = values.fold((1.0f64, 1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let bench_count = rows.len();
    let mut chart = ChartBuilder::on(&body)
        .margin_left(10)
        .margin_right(20)
        .margin_bottom(10)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(
            BenchAxis { count: bench_count },
            (lo / 1.5..hi * 1.5).log_scale(),
        )
        .map_err(drawing_error)?;
    let bench_label = |x: &f64| {
        bench_at(*x, bench_count)
            .map(|index| format!("{}/{}", rows[index].0, rows[index].1))
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(bench_count)
        .x_label_formatter(&bench_label)
        .y_desc("MB/s / ceiling MB/s")
        .y_labels(12)
        .y_label_formatter(&ratio_label)
        .light_line_style(LIGHT_GRID)
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 16))
        .draw()
        .map_err(drawing_error)?;
    for (slot, (fs, color)) in series.iter().enumerate() {
        let bars = rows.iter().enumerate().filter_map(|(index, (_, _, r))| {
            let value = *r.get(*fs)?;
            Some(bar(index, slot, series.len(), (1.0, value), *color))
        });
        chart.draw_series(bars).map_err(drawing_error)?;
    }
    // The ceiling.
    chart
        .draw_series(LineSeries::new(
            [(0.0, 1.0), (bench_count as f64, 1.0)],
            BLACK.stroke_width(1),
        ))
        .map_err(drawing_error)?;
    Ok(())
}

fn draw_createdel<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    summary: &Summary,
    title: &str,
) -> Result<(), String> {
    let rows = &summary.createdel;
    let series = series_of(summary, |fs| {
        rows.iter().any(|row| row.creates_per_sec.contains_key(fs))
    });
    let body = draw_header(
        root,
        &format!("{title}: createdel (files/s, higher is better)"),
        &series,
    )?;
    let half = body.dim_in_pixel().0 / 2;
    let (left, right) = body.split_horizontally(half);
    draw_rate_panel(&left, "creates/s", rows, &series, |row| {
        &row.creates_per_sec
    })?;
    draw_rate_panel(&right, "deletes/s", rows, &series, |row| {
        &row.deletes_per_sec
    })
}

fn draw_rate_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    rate: &str,
    rows: &[CreateDelRow],
    series: &[(&str, RGBColor)],
    pick: fn(&CreateDelRow) -> &BTreeMap<String, Measurement>,
) -> Result<(), String> {
    let first_n = rows.iter().map(|row| row.n).min().unwrap_or(0) as f64;
    let last_n = rows.iter().map(|row| row.n).max().unwrap_or(0) as f64;
    // A single N still needs a non-empty axis.
    let pad = if last_n > first_n {
        (last_n - first_n) * 0.05
    } else {
        first_n.max(1.0) * 0.1
    };
    let largest = rows
        .iter()
        .flat_map(|row| pick(row).values())
        .map(|m| m.value)
        .fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption(rate, (FONT, 18))
        .margin(10)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (first_n - pad).max(0.0)..last_n + pad,
            0.0..axis_top(largest),
        )
        .map_err(drawing_error)?;
    chart
        .configure_mesh()
        .x_desc("N (files)")
        .y_desc(rate)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&axis_label)
        .light_line_style(LIGHT_GRID)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .draw()
        .map_err(drawing_error)?;
    for (fs, color) in series {
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter_map(|row| pick(row).get(*fs).map(|m| (row.n as f64, m.value)))
            .collect();
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                Color::stroke_width(color, 2),
            ))
            .map_err(drawing_error)?;
        chart
            .draw_series(
                points
                    .iter()
                    .map(|&point| Circle::new(point, 4, color.filled())),
            )
            .map_err(drawing_error)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_log;
    use crate::summary::summarize;
    use crate::text::load_font;

    const LOG: &str = "\
RESULT bench=seqwrite fs=fat32 MBps=117.76
RESULT bench=seqwrite fs=raw MBps=452.59
RESULT bench=seqwrite fs=dbfs MBps=67.17
RESULT bench=randread4k fs=fat32 MBps=80.37
RESULT bench=randread4k fs=dbfs MBps=161.83
RESULT bench=createdel fs=fat32 n=100 creates_per_sec=120.7 deletes_per_sec=401.5
RESULT bench=createdel fs=dbfs n=100 creates_per_sec=78.1 deletes_per_sec=227.3
RESULT bench=createdel fs=dbfs n=200 creates_per_sec=97.5 deletes_per_sec=146.9
";

    fn summary() -> Summary {
        summarize(&parse_log(LOG).0)
    }

    #[test]
    fn throughput_svg_names_benchmarks_and_file_systems() {
        let font = load_font(None);
        let dir = tempfile::tempdir().unwrap();
        let svg = render_svg(ChartKind::Throughput, &summary(), "Test run", font.as_ref()).unwrap();
        let path = dir.path().join("throughput.svg");
        std::fs::write(&path, &svg).unwrap();
        let written = std::fs::read_to_string(&path).unwrap();
        assert!(written.starts_with("<svg"));
        for text in [
            "seqwrite",
            "randread4k",
            "dbfs",
            "fat32",
            "raw",
            "Test run",
            "MB/s",
        ] {
            assert!(written.contains(text), "SVG lacks {text:?}");
        }
        // One filled bar per (benchmark, fs) result: dbfs blue appears twice.
        assert_eq!(
            written.matches("fill=\"#1F77B4\"").count(),
            2 + 1,
            "two bars and one swatch"
        );
    }

    #[test]
    fn seconds_svg_names_the_benchmark_and_says_lower_is_better() {
        let log =
            "RESULT bench=speedtest1 fs=dbfs secs=2.4\nRESULT bench=speedtest1 fs=fat secs=3.4\n";
        let (records, _) = crate::parse::parse_log(log);
        let summary = crate::summary::summarize(&records);
        assert!(ChartKind::Seconds.has_data(&summary));
        assert!(!ChartKind::Throughput.has_data(&summary));
        let svg = render_svg(ChartKind::Seconds, &summary, "sqlite", None).unwrap();
        assert!(svg.contains("speedtest1"));
        assert!(svg.contains("lower is better"));
        assert!(svg.contains("dbfs") && svg.contains("fat"));
    }

    #[test]
    fn ratio_chart_takes_rawq_else_raw_as_the_ceiling() {
        let log = "\
RESULT bench=seqwrite fs=dbfs MBps=800
RESULT bench=seqwrite fs=fat32 MBps=400
RESULT bench=seqwrite fs=raw MBps=500
RESULT bench=seqwrite fs=rawq MBps=1000
RESULT bench=randwrite4k fs=dbfs MBps=200
RESULT bench=randwrite4k fs=raw MBps=100
RESULT bench=other fs=dbfs MBps=5
";
        let summary = summarize(&parse_log(log).0);
        let rows = ceiling_ratios(&summary);
        assert_eq!(rows.len(), 2, "a row without a ceiling is left out");
        let (bench, ceiling, r) = &rows[0];
        assert_eq!((bench.as_str(), *ceiling), ("seqwrite", "rawq"));
        assert_eq!(r.get("dbfs"), Some(&0.8));
        assert_eq!(r.get("fat32"), Some(&0.4));
        assert_eq!(r.get("raw"), Some(&0.5));
        assert!(!r.contains_key("rawq"));
        let (bench, ceiling, r) = &rows[1];
        assert_eq!((bench.as_str(), *ceiling), ("randwrite4k", "raw"));
        assert_eq!(r.get("dbfs"), Some(&2.0));
        assert!(!r.contains_key("raw"));
        assert!(ChartKind::Ratio.has_data(&summary));
        let svg = render_svg(ChartKind::Ratio, &summary, "ratios", None).unwrap();
        for text in [
            "seqwrite/rawq",
            "randwrite4k/raw",
            "log scale",
            "dbfs",
            "fat32",
        ] {
            assert!(svg.contains(text), "SVG lacks {text:?}");
        }
        let png = render_png(ChartKind::Ratio, &summary, "ratios", None).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    }

    #[test]
    fn createdel_svg_has_both_panels() {
        let svg = render_svg(
            ChartKind::CreateDel,
            &summary(),
            "t",
            load_font(None).as_ref(),
        )
        .unwrap();
        for text in ["creates/s", "deletes/s", "N (files)", "dbfs", "fat32"] {
            assert!(svg.contains(text), "SVG lacks {text:?}");
        }
        assert!(!svg.contains(">raw<"), "raw has no createdel results");
    }

    #[test]
    fn charts_render_without_a_font() {
        let summary = summary();
        for kind in [ChartKind::Throughput, ChartKind::CreateDel] {
            let svg = render_svg(kind, &summary, "no font", None).unwrap();
            assert!(svg.contains("no font"));
            let png = render_png(kind, &summary, "no font", None).unwrap();
            assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        }
    }

    #[test]
    fn png_has_text_when_a_font_is_installed() {
        let Some(font) = load_font(None) else {
            eprintln!("no TTF installed: PNG text not checked");
            return;
        };
        let summary = summary();
        let with_text = render_png(ChartKind::Throughput, &summary, "title", Some(&font)).unwrap();
        let without_text = render_png(ChartKind::Throughput, &summary, "title", None).unwrap();
        assert!(with_text.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert_ne!(with_text, without_text, "glyphs change the image");
    }

    #[test]
    fn single_point_charts_render() {
        let summary = summarize(
            &parse_log(
                "RESULT bench=seqread fs=ext4 MBps=0\n\
                 RESULT bench=createdel fs=ext4 n=5 creates_per_sec=0 deletes_per_sec=0\n",
            )
            .0,
        );
        for kind in [ChartKind::Throughput, ChartKind::CreateDel] {
            assert!(kind.has_data(&summary));
            let svg = render_svg(kind, &summary, "one", None).unwrap();
            assert!(svg.contains("ext4"));
        }
    }
}
