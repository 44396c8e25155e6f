//! chart.svg: per-program overhead of each configuration against baseline, the coreutils table
//! as grouped bars, with the earlier C module's best ratio marked; below it, the signed Debian
//! system's boot and workload against baseline (the `boot` suite). Each panel when its suite ran.

mod boot;

use std::fmt::Write as _;

use super::native::COREUTILS;
use super::report::coreutils_ratio;
use super::results::Results;

const SERIES: [(&str, &str); 3] = [("elfsig-cold", "#d95f02"), ("elfsig-warm", "#1b9e77"), ("ima", "#7570b3")];

/// Width of the chart.
const WIDTH: f64 = 1000.0;

/// The chart, as SVG.
pub fn svg(results: &Results) -> String {
    let mut panels = String::new();
    let mut height = 0.0;
    if results.has("coreutils") {
        let _ = writeln!(panels, r#"<g transform="translate(0 {height})">"#);
        panels.push_str(&coreutils_panel(results));
        panels.push_str("</g>\n");
        height += COREUTILS_HEIGHT;
    }
    if results.has(super::boot::SUITE) {
        let _ = writeln!(panels, r#"<g transform="translate(0 {height})">"#);
        panels.push_str(&boot::panel(results));
        panels.push_str("</g>\n");
        height += boot::HEIGHT;
    }
    if panels.is_empty() {
        panels
            .push_str(r#"<text x="20" y="30">No chart for the suites that ran (coreutils and boot have one).</text>"#);
        height = 50.0;
    }
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    svg.push_str(&panels);
    svg.push_str("</svg>\n");
    svg
}

/// Height of the coreutils panel.
const COREUTILS_HEIGHT: f64 = 420.0;

/// The coreutils table: exec time against baseline, per program.
fn coreutils_panel(results: &Results) -> String {
    let (width, height) = (WIDTH, COREUTILS_HEIGHT);
    let (left, right, top, bottom) = (60.0, 20.0, 40.0, 70.0);
    let ratios: Vec<Vec<f64>> = COREUTILS
        .iter()
        .map(|p| SERIES.iter().map(|(config, _)| coreutils_ratio(results, p, config)).collect())
        .collect();
    let max = ratios.iter().flatten().copied().filter(|r| r.is_finite()).fold(1.5f64, f64::max).ceil();
    let plot_h = height - top - bottom;
    let y = |ratio: f64| top + plot_h * (1.0 - (ratio - 0.0) / max);
    let group_w = (width - left - right) / COREUTILS.len() as f64;
    let bar_w = group_w * 0.8 / SERIES.len() as f64;

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="20" text-anchor="middle" font-size="14">Exec time against baseline, per program (1.0 = no overhead)</text>"#,
        width / 2.0
    );
    let x_end = width - right;
    let mut tick = 0.0;
    while tick <= max {
        let (ty, label_x) = (y(tick), left - 5.0);
        let _ = writeln!(svg, r##"<line x1="{left}" x2="{x_end}" y1="{ty:.1}" y2="{ty:.1}" stroke="#ddd"/>"##);
        let _ = writeln!(svg, r##"<text x="{label_x}" y="{:.1}" text-anchor="end">{tick:.1}x</text>"##, ty + 4.0);
        tick += 0.5;
    }
    marks(&mut svg, (left, x_end), y(1.0), (y(1.35), "earlier C module, best 1.35x"));
    for (i, (program, values)) in COREUTILS.iter().zip(&ratios).enumerate() {
        let x0 = left + group_w * i as f64 + group_w * 0.1;
        for (j, ((config, color), ratio)) in SERIES.iter().zip(values).enumerate() {
            let ratio = if ratio.is_finite() { *ratio } else { 0.0 };
            let (y0, y1) = (y(ratio), y(0.0));
            let _ = writeln!(
                svg,
                r#"<rect x="{:.1}" y="{y0:.1}" width="{bar_w:.1}" height="{:.1}" fill="{color}"><title>{program} {config}: {ratio:.3}x</title></rect>"#,
                x0 + bar_w * j as f64,
                y1 - y0
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{program}</text>"#,
            x0 + group_w * 0.4,
            height - bottom + 15.0
        );
    }
    legend(&mut svg, &SERIES, left, height);
    svg
}

/// Across the plot from `x.0` to `x.1`: the line of no difference at `zero`, and a dashed red
/// line at `mark.0`, labelled `mark.1`.
fn marks(svg: &mut String, (left, x_end): (f64, f64), zero: f64, (mark, label): (f64, &str)) {
    let _ = writeln!(svg, r##"<line x1="{left}" x2="{x_end}" y1="{zero:.1}" y2="{zero:.1}" stroke="#000"/>"##);
    let _ = writeln!(
        svg,
        r##"<line x1="{left}" x2="{x_end}" y1="{mark:.1}" y2="{mark:.1}" stroke="#c00" stroke-dasharray="4 3"/>"##
    );
    let _ = writeln!(svg, r##"<text x="{x_end}" y="{:.1}" text-anchor="end" fill="#c00">{label}</text>"##, mark - 4.0);
}

/// The series' colours and names along the bottom of a panel `height` high.
fn legend(svg: &mut String, series: &[(&str, &str)], left: f64, height: f64) {
    for (j, (config, color)) in series.iter().enumerate() {
        let x = left + 160.0 * j as f64;
        let _ = writeln!(
            svg,
            r#"<rect x="{x}" y="{}" width="12" height="12" fill="{color}"/><text x="{}" y="{}">{config}</text>"#,
            height - 30.0,
            x + 16.0,
            height - 20.0
        );
    }
}
