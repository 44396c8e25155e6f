//! How the report sets a configuration against baseline: its difference in percent, and the
//! verdicts on the targets (met, not met, within noise or inconclusive).

/// `value`'s difference from `base`, in percent with its sign.
pub(super) fn pct(value: f64, base: f64) -> String {
    format!("{:+.1}%", (value / base - 1.0) * 100.0)
}

/// The widest 95% interval a "within noise" verdict can rest on: a wider one would call a real
/// difference noise.
const WIDEST_INTERVAL: f64 = 0.05;

/// The verdict on differences from baseline, each `(difference, 95% interval)` as fractions,
/// that should be noise: not measured without any; not met when one is outside its interval
/// (and above 1%); inconclusive when all are inside but some interval is too wide to tell; met
/// otherwise.
pub(super) fn within_noise(rows: &[(f64, f64)]) -> &'static str {
    if rows.is_empty() {
        "not measured"
    } else if rows.iter().any(|&(_, interval)| interval.is_nan()) {
        "**inconclusive**: one run, no interval"
    } else if rows.iter().any(|&(diff, interval)| diff.abs() > interval.max(0.01)) {
        met(false)
    } else if rows.iter().any(|&(_, interval)| interval.is_nan() || interval > WIDEST_INTERVAL) {
        "**inconclusive**: an interval is wider than ±5%, rerun on a quiet machine"
    } else {
        met(true)
    }
}

/// The word for a target met, or not.
pub(super) fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "**not met**" }
}

#[cfg(test)]
mod tests {
    use super::within_noise;

    #[test]
    fn noise_is_met_only_when_every_interval_is_narrow_enough_to_tell() {
        assert_eq!(within_noise(&[(0.004, 0.02), (-0.01, 0.03)]), "met");
        assert_eq!(within_noise(&[(0.03, 0.01)]), "**not met**");
        // The loaded machine's row: +78.4% ± 136.9% is no evidence of anything.
        assert!(within_noise(&[(0.784, 1.369)]).starts_with("**inconclusive**"));
        assert!(within_noise(&[(0.0, 0.02), (0.001, f64::NAN)]).starts_with("**inconclusive**"));
        // One run: no interval, whatever the difference.
        assert!(within_noise(&[(0.3, f64::NAN)]).starts_with("**inconclusive**"));
        // A difference outside its interval is measured, however wide another interval is.
        assert_eq!(within_noise(&[(0.2, 0.1), (0.0, 0.9)]), "**not met**");
        assert_eq!(within_noise(&[]), "not measured");
    }
}
