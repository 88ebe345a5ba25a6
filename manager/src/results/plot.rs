//! SVG charts of results: one line per series against a parameter, with the
//! spread across seeds as a band (numeric axis) or as error bars
//! (categorical axis), a title and subtitle on top, and the legend in a
//! strip below the plot so that it never hides data.
//!
//! Only plotters' SVG backend is used, without its TrueType feature: text is
//! written as SVG `<text>` and laid out with plotters' built-in estimate,
//! so no system font or fontconfig is needed to produce a chart.
//!
//! Not here: what is plotted (see `sweep`, `figures`, `report`).

use std::path::Path;

use anyhow::{anyhow, Result};
use plotters::prelude::*;

/// Width of every chart, pixels.
const WIDTH: u32 = 960;
/// Height of the title strip.
const TITLE_H: u32 = 64;
/// Height of the plot area.
const PLOT_H: u32 = 520;
/// Height of one legend row.
const LEGEND_ROW_H: u32 = 26;
/// Legend entries per row.
const LEGEND_COLS: usize = 3;

/// Numeric series with more points than this are drawn without markers.
const MAX_MARKED_POINTS: usize = 60;

const FONT: &str = "sans-serif";

/// Tableau 10: distinguishable, and still different in grey.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// What the x axis is.
#[derive(Debug, Clone, PartialEq)]
pub enum XAxis {
    /// Numbers: lines with a min-max band.
    Numeric,
    /// Named cases at x = 0, 1, 2, ...: markers with min-max error bars.
    Categories(Vec<String>),
}

/// One plotted point: x, the mean over seeds, and the min and max.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Position on the x axis (the index for categories).
    pub x: f64,
    /// Mean over seeds.
    pub mean: f64,
    /// Smallest value over seeds.
    pub min: f64,
    /// Largest value over seeds.
    pub max: f64,
}

/// One series (a policy, or a policy with a knob set).
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Legend text.
    pub label: String,
    /// Its points, by increasing x (points without data left out).
    pub points: Vec<Point>,
}

/// A chart to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Title (one line).
    pub title: String,
    /// Smaller line under the title: set-up, seeds, what the band means.
    pub subtitle: String,
    /// X axis label, with unit.
    pub x_label: String,
    /// Y axis label, with unit.
    pub y_label: String,
    /// Numeric or categorical x.
    pub x_axis: XAxis,
    /// The series.
    pub lines: Vec<Line>,
}

/// A tick label: short, no float noise.
pub fn fmt_num(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e6).contains(&a) {
        return format!("{v:.1e}");
    }
    let decimals = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn err<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> anyhow::Error + '_ {
    move |e| anyhow!("drawing {}: {e}", path.display())
}

/// The y range to show: all means, mins and maxes, from 0 when every value
/// is non-negative, with a margin on top; a flat or empty set gets a unit
/// range.
fn y_range(lines: &[Line]) -> (f64, f64) {
    let vals = lines
        .iter()
        .flat_map(|l| l.points.iter())
        .flat_map(|p| [p.min, p.max, p.mean])
        .filter(|v| v.is_finite());
    let (mut lo, mut hi) = vals.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if lo >= 0.0 {
        lo = 0.0;
    }
    if hi - lo < 1e-12 {
        hi = lo + if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
    }
    let pad = (hi - lo) * 0.06;
    (if lo < 0.0 { lo - pad } else { lo }, hi + pad)
}

fn x_range(chart: &Chart) -> (f64, f64) {
    match &chart.x_axis {
        XAxis::Categories(c) => (-0.5, c.len().max(1) as f64 - 0.5),
        XAxis::Numeric => {
            let xs = chart
                .lines
                .iter()
                .flat_map(|l| l.points.iter().map(|p| p.x));
            let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
            if !lo.is_finite() {
                (0.0, 1.0)
            } else if hi - lo < 1e-12 {
                (lo - 0.5, hi + 0.5)
            } else {
                let pad = (hi - lo) * 0.03;
                (lo - pad, hi + pad)
            }
        }
    }
}

/// Draws one marker of shape `k` (circle, triangle, square, diamond, ...)
/// centred on `at`, in the area's own coordinates.
fn marker<DB: DrawingBackend, CT: CoordTranslate>(
    area: &DrawingArea<DB, CT>,
    at: CT::From,
    k: usize,
    color: RGBColor,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let style = color.filled();
    let base = EmptyElement::at(at);
    match k % 4 {
        0 => area.draw(&(base + Circle::new((0, 0), 5, style))),
        1 => area.draw(&(base + TriangleMarker::new((0, 0), 6, style))),
        2 => area.draw(&(base + Rectangle::new([(-4, -4), (4, 4)], style))),
        _ => area.draw(&(base + Polygon::new(vec![(0, -6), (6, 0), (0, 6), (-6, 0)], style))),
    }
}

/// Draws `chart` as an SVG file at `path`.
pub fn write_svg(path: &Path, chart: &Chart) -> Result<()> {
    let legend_rows = chart.lines.len().div_ceil(LEGEND_COLS).max(1) as u32;
    let height = TITLE_H + PLOT_H + 40 + legend_rows * LEGEND_ROW_H;
    let root = SVGBackend::new(path, (WIDTH, height)).into_drawing_area();
    let e = err(path);
    root.fill(&WHITE).map_err(&e)?;
    let (top, rest) = root.split_vertically(TITLE_H);
    let (plot, legend) = rest.split_vertically(PLOT_H + 30);

    let title_style = TextStyle::from((FONT, 22).into_font().style(FontStyle::Bold)).color(&BLACK);
    let sub_style = TextStyle::from((FONT, 15).into_font()).color(&RGBColor(70, 70, 70));
    top.draw(&Text::new(chart.title.clone(), (20, 10), title_style))
        .map_err(&e)?;
    top.draw(&Text::new(chart.subtitle.clone(), (20, 40), sub_style))
        .map_err(&e)?;

    let (x0, x1) = x_range(chart);
    let (y0, y1) = y_range(&chart.lines);
    let mut cc = ChartBuilder::on(&plot)
        .margin_left(10)
        .margin_right(30)
        .margin_top(10)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(&e)?;
    let categories = match &chart.x_axis {
        XAxis::Categories(c) => Some(c.clone()),
        XAxis::Numeric => None,
    };
    let x_fmt = |x: &f64| match &categories {
        Some(c) => {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < c.len() {
                c[i as usize].clone()
            } else {
                String::new()
            }
        }
        None => fmt_num(*x),
    };
    let n_x_labels = match &categories {
        Some(c) => c.len() * 2 + 1,
        None => 10,
    };
    cc.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .axis_desc_style((FONT, 17))
        .label_style((FONT, 15))
        .x_labels(n_x_labels)
        .y_labels(8)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&|y| fmt_num(*y))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(&e)?;

    let n = chart.lines.len().max(1) as f64;
    for (k, line) in chart.lines.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        match &categories {
            None => {
                // Band: min along x, then max back.
                let mut band: Vec<(f64, f64)> = line.points.iter().map(|p| (p.x, p.min)).collect();
                band.extend(line.points.iter().rev().map(|p| (p.x, p.max)));
                if line.points.iter().any(|p| p.max > p.min) {
                    cc.draw_series(std::iter::once(Polygon::new(
                        band,
                        color.mix(0.18).filled(),
                    )))
                    .map_err(&e)?;
                }
                cc.draw_series(LineSeries::new(
                    line.points.iter().map(|p| (p.x, p.mean)),
                    color.stroke_width(2),
                ))
                .map_err(&e)?;
                // Dense series (time series) are lines: markers would
                // merge into a smear.
                if line.points.len() <= MAX_MARKED_POINTS {
                    for p in &line.points {
                        marker(cc.plotting_area(), (p.x, p.mean), k, color).map_err(&e)?;
                    }
                }
            }
            Some(_) => {
                // Side by side within a category, so error bars do not overlap.
                let off = (k as f64 - (n - 1.0) / 2.0) * (0.6 / n);
                for p in &line.points {
                    let x = p.x + off;
                    cc.draw_series(std::iter::once(PathElement::new(
                        vec![(x, p.min), (x, p.max)],
                        color.stroke_width(2),
                    )))
                    .map_err(&e)?;
                    for y in [p.min, p.max] {
                        cc.plotting_area()
                            .draw(
                                &(EmptyElement::at((x, y))
                                    + PathElement::new(
                                        vec![(-5, 0), (5, 0)],
                                        color.stroke_width(2),
                                    )),
                            )
                            .map_err(&e)?;
                    }
                    marker(cc.plotting_area(), (x, p.mean), k, color).map_err(&e)?;
                }
            }
        }
    }

    // Legend strip: marker, line and label per series, LEGEND_COLS a row.
    let col_w = (WIDTH as i32 - 40) / LEGEND_COLS as i32;
    let label_style = TextStyle::from((FONT, 15).into_font()).color(&BLACK);
    for (k, line) in chart.lines.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        let (row, col) = (k / LEGEND_COLS, k % LEGEND_COLS);
        let x = 20 + col as i32 * col_w;
        let y = 8 + row as i32 * LEGEND_ROW_H as i32 + 8;
        legend
            .draw(&PathElement::new(
                vec![(x, y), (x + 28, y)],
                color.stroke_width(2),
            ))
            .map_err(&e)?;
        marker(&legend, (x + 14, y), k, color).map_err(&e)?;
        legend
            .draw(&Text::new(
                line.label.clone(),
                (x + 36, y - 8),
                label_style.clone(),
            ))
            .map_err(&e)?;
    }
    root.present().map_err(&e)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(0.1), "0.1");
        assert_eq!(fmt_num(0.30000000000000004), "0.3");
        assert_eq!(fmt_num(12.5), "12.5");
        assert_eq!(fmt_num(1500.0), "1500");
        assert_eq!(fmt_num(2.5e7), "2.5e7");
        assert_eq!(fmt_num(-0.25), "-0.25");
    }

    #[test]
    fn a_chart_is_an_svg_with_its_texts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.svg");
        let chart = Chart {
            title: "Title here".into(),
            subtitle: "subtitle".into(),
            x_label: "beta".into(),
            y_label: "profit".into(),
            x_axis: XAxis::Numeric,
            lines: vec![Line {
                label: "libra".into(),
                points: vec![
                    Point {
                        x: 0.1,
                        mean: 1.0,
                        min: 0.5,
                        max: 1.5,
                    },
                    Point {
                        x: 0.5,
                        mean: 2.0,
                        min: 2.0,
                        max: 2.0,
                    },
                ],
            }],
        };
        write_svg(&path, &chart).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100]);
        for t in ["Title here", "subtitle", "beta", "profit", "libra"] {
            assert!(svg.contains(t), "{t} missing");
        }
    }
}
