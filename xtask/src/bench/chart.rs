//! chart.svg: per-program overhead of each configuration against baseline, the coreutils table
//! as grouped bars, with the earlier C module's best ratio marked; below it, the signed Debian
//! system's boot and workload against baseline (the `boot` suite). Each panel when its suite ran.

mod boot;
mod coreutils;
mod panel;

use std::fmt::Write as _;

use self::panel::WIDTH;
use super::results::Results;

/// The chart, as SVG.
pub fn svg(results: &Results) -> String {
    let mut panels = String::new();
    let mut height = 0.0;
    if results.has("coreutils") {
        let _ = writeln!(panels, r#"<g transform="translate(0 {height})">"#);
        panels.push_str(&coreutils::panel(results));
        panels.push_str("</g>\n");
        height += coreutils::HEIGHT;
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
