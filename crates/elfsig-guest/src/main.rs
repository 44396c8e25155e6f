//! The test VM's init: runs the suite the kernel command line names (`elfsig.suite=test|stress|probe`)
//! and reports on the serial console. The host (`cargo xtask test`) parses one
//! `ELFSIG-TEST ok|FAIL <case>` line per case and a final `ELFSIG-DONE ok|failed`.

mod cases;
mod stress;
mod tamper;

fn main() {
    elfsig_guest::boot();
    let ok = match elfsig_guest::cmdline("elfsig.suite").as_deref().unwrap_or("test") {
        "probe" => {
            println!("ELFSIG-PROBE ok");
            true
        }
        "test" => cases::run_all(),
        "stress" => stress::run_all(),
        other => {
            println!("ELFSIG-SETUP unknown suite {other}");
            false
        }
    };
    elfsig_guest::finish(ok);
}
