//! What every panel of the chart has alike: the chart's width, the line of no difference with a
//! marked one across the plot, and the legend of its series.

use std::fmt::Write as _;

/// Width of the chart.
pub const WIDTH: f64 = 1000.0;

/// Across the plot from `x.0` to `x.1`: the line of no difference at `zero`, and a dashed red
/// line at `mark.0`, labelled `mark.1`.
pub fn marks(svg: &mut String, (left, x_end): (f64, f64), zero: f64, (mark, label): (f64, &str)) {
    let _ = writeln!(svg, r##"<line x1="{left}" x2="{x_end}" y1="{zero:.1}" y2="{zero:.1}" stroke="#000"/>"##);
    let _ = writeln!(
        svg,
        r##"<line x1="{left}" x2="{x_end}" y1="{mark:.1}" y2="{mark:.1}" stroke="#c00" stroke-dasharray="4 3"/>"##
    );
    let _ = writeln!(svg, r##"<text x="{x_end}" y="{:.1}" text-anchor="end" fill="#c00">{label}</text>"##, mark - 4.0);
}

/// The series' colours and names along the bottom of a panel `height` high.
pub fn legend(svg: &mut String, series: &[(&str, &str)], left: f64, height: f64) {
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
