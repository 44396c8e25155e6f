//! What the bench says on the console, for `cargo xtask bench`: every raw measurement as one
//! `ELFSIG-BENCH suite,case,config,run,value,unit` line, which the host writes to results.csv,
//! and progress on `ELFSIG-PROGRESS` lines.

use elfsig_guest::image;

/// Records one measurement.
pub(crate) fn emit(suite: &str, case: &str, config: &str, run: usize, value: f64, unit: &str) {
    println!("{}{suite},{case},{config},{run},{value:.3},{unit}", image::BENCH_MEASUREMENT);
}

/// Says what is being measured.
pub(crate) fn progress(message: &str) {
    println!("{}{message}", image::BENCH_PROGRESS);
}
