//! The chart's `coreutils` panel: the published table as grouped bars, each program's exec time
//! in each configuration against baseline, with the earlier C module's best ratio marked.

use std::fmt::Write as _;

use super::panel::{WIDTH, legend, marks};
use crate::bench::native::COREUTILS;
use crate::bench::report::coreutils::coreutils_ratio;
use crate::bench::results::Results;

const SERIES: [(&str, &str); 3] = [("elfsig-cold", "#d95f02"), ("elfsig-warm", "#1b9e77"), ("ima", "#7570b3")];

/// Height of the panel.
pub const HEIGHT: f64 = 420.0;

/// The coreutils table: exec time against baseline, per program.
pub fn panel(results: &Results) -> String {
    let (width, height) = (WIDTH, HEIGHT);
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
