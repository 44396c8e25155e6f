//! The chart's `boot` panel: the signed Debian system's boot and workload, each configuration's
//! difference from the baseline booted in the same run, with its 95% interval, and the goal.

use std::fmt::Write as _;

use super::panel::{WIDTH, legend, marks};
use crate::bench::boot::{GOAL, SUITE};
use crate::bench::results::Results;

/// Height of the panel.
pub const HEIGHT: f64 = 360.0;

/// The measures, as the guest names them and as the chart labels them.
const MEASURES: [(&str, &str); 4] = [
    ("boot-to-default-target", "boot to default target"),
    ("kernel-and-initramfs", "kernel and initramfs"),
    ("systemd-to-default-target", "systemd to default target"),
    ("workload", "workload after boot"),
];

const SERIES: [(&str, &str); 2] = [("elfsig", "#1b9e77"), ("ima", "#7570b3")];

/// Mean difference from baseline and the half width of its 95% interval, as fractions.
fn difference(results: &Results, case: &str, config: &str) -> (f64, f64) {
    results.paired_difference(SUITE, case, config, "baseline").unwrap_or((f64::NAN, f64::NAN))
}

/// The panel, as SVG elements (the caller places it).
pub fn panel(all: &Results) -> String {
    let left_out = crate::bench::boot::stalled(all).len();
    let results = &crate::bench::boot::without_stalled(all);
    let (left, right, top, bottom) = (60.0, 20.0, 40.0, 60.0);
    let cells: Vec<Vec<(f64, f64)>> = MEASURES
        .iter()
        .map(|(case, _)| SERIES.iter().map(|(config, _)| difference(results, case, config)).collect())
        .collect();
    // A symmetric axis, in steps of 5%, wide enough for every bar and whisker, and the goal.
    let reach = cells
        .iter()
        .flatten()
        .map(|(diff, interval)| diff.abs() + if interval.is_finite() { *interval } else { 0.0 })
        .filter(|r| r.is_finite())
        .fold(GOAL * 2.0, f64::max);
    // Ticks 5%, 10%, 25%, 50%, ... apart: at most six each side.
    let steps = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0];
    let step = steps.into_iter().find(|step| reach / step <= 6.0).unwrap_or(reach / 6.0);
    let limit = (reach / step).ceil() * step;
    let plot_h = HEIGHT - top - bottom;
    let y = |diff: f64| top + plot_h * (0.5 - diff / (2.0 * limit));
    let group_w = (WIDTH - left - right) / MEASURES.len() as f64;
    let bar_w = group_w * 0.5 / SERIES.len() as f64;
    let x_end = WIDTH - right;

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="20" text-anchor="middle" font-size="14">Signed Debian system: difference from baseline booted alongside (whiskers: 95% interval){}</text>"#,
        WIDTH / 2.0,
        if left_out > 0 { format!("; {left_out} stalled run(s) left out, see report.md") } else { String::new() }
    );
    let mut tick = -limit;
    while tick <= limit + 1e-9 {
        let ty = y(tick);
        let _ = writeln!(svg, r##"<line x1="{left}" x2="{x_end}" y1="{ty:.1}" y2="{ty:.1}" stroke="#ddd"/>"##);
        let _ = writeln!(
            svg,
            r##"<text x="{}" y="{:.1}" text-anchor="end">{:+.0}%</text>"##,
            left - 5.0,
            ty + 4.0,
            tick * 100.0
        );
        tick += step;
    }
    marks(&mut svg, (left, x_end), y(0.0), (y(GOAL), "goal: elfsig's boot to the default target within +5%"));
    for (i, ((_, label), values)) in MEASURES.iter().zip(&cells).enumerate() {
        let x0 = left + group_w * i as f64 + group_w * 0.25;
        for (j, ((config, color), (diff, interval))) in SERIES.iter().zip(values).enumerate() {
            if !diff.is_finite() {
                continue;
            }
            let x = x0 + bar_w * j as f64;
            let (top_y, bottom_y) = (y(diff.max(0.0)), y(diff.min(0.0)));
            let _ = writeln!(
                svg,
                r#"<rect x="{x:.1}" y="{top_y:.1}" width="{bar_w:.1}" height="{:.1}" fill="{color}"><title>{label}, {config}: {:+.1}% ± {:.1}%</title></rect>"#,
                bottom_y - top_y,
                diff * 100.0,
                interval * 100.0
            );
            if interval.is_finite() {
                let mid = x + bar_w / 2.0;
                let (hi, lo) = (y(diff + interval), y(diff - interval));
                let _ =
                    writeln!(svg, r##"<line x1="{mid:.1}" x2="{mid:.1}" y1="{hi:.1}" y2="{lo:.1}" stroke="#333"/>"##);
            }
        }
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{label}</text>"#,
            x0 + bar_w,
            HEIGHT - bottom + 15.0
        );
    }
    legend(&mut svg, &SERIES, left, HEIGHT);
    svg
}

#[cfg(test)]
mod tests {
    use crate::bench::chart::svg;
    use crate::bench::results::{Record, Results};

    #[test]
    fn boot_only_results_chart_the_boot_panel_alone() {
        let records = (0..2)
            .flat_map(|run| {
                [("baseline", 20.0), ("elfsig", 20.4), ("ima", 21.0)].map(|(config, value)| Record {
                    suite: "boot".into(),
                    case: "boot-to-default-target".into(),
                    config: config.into(),
                    run,
                    value: value + run as f64,
                    unit: "s".into(),
                })
            })
            .collect();
        let chart = svg(&Results { records });
        assert!(chart.contains("Signed Debian system"), "{chart}");
        assert!(!chart.contains("per program"), "{chart}");
        assert!(chart.contains("boot to default target, elfsig: +2.0%"), "{chart}");
        assert!(chart.contains(r#"height="360""#), "{chart}");
    }
}
