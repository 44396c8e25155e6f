//! The test VM's init: runs the suite the kernel command line names (`elfsig.suite=test|beside|nobpf|stress|probe`)
//! and reports it in KTAP on the serial console, which `cargo xtask test` parses.

mod admin;
mod audit;
mod builds;
mod cases;
mod containers;
mod distro;
mod fuse;
mod guard_control;
mod guard_sealed;
mod kernel_log;
mod kernel_update;
mod locked;
mod manifest;
mod mapping;
mod mapping_checks;
mod policy_files;
mod runtime;
mod secure_boot;
mod signed_policy;
mod stress;
mod tamper;
mod unprivileged;
mod upgrade;

use elfsig_guest::harness::Suite;
use elfsig_guest::image;

fn main() {
    // In the signed Debian system, started by systemd rather than as init.
    if std::env::args().nth(1).as_deref() == Some("distro") {
        distro::run();
        return;
    }
    elfsig_guest::boot();
    match elfsig_guest::cmdline(image::SUITE).as_deref().unwrap_or("test") {
        "probe" => {
            let mut suite = Suite::default();
            suite.case("boots", || Ok(()));
            suite.run("elfsig: does this accelerator boot the test kernel?");
        }
        "test" => {
            cases::run_all();
        }
        "beside" => {
            cases::run_beside();
        }
        "stress" => {
            stress::run_all();
        }
        "nobpf" => {
            mapping::without_bpf_lsm();
        }
        other => {
            let mut suite = Suite::default();
            suite.case("suite", move || Err(format!("unknown suite {other}")));
            suite.run("elfsig");
        }
    }
    elfsig_guest::power_off_if_init();
}
