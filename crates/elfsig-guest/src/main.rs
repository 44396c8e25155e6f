//! The program that runs inside elfsig's test and bench VMs, as PID 1.
//!
//! It mounts what the tests need, runs the suite the kernel command line names
//! (`elfsig.suite=test|probe`), reports on the serial console, and powers off. The host
//! (`cargo xtask test`) parses the report: one `ELFSIG-TEST ok|FAIL <case>` line per case and a
//! final `ELFSIG-DONE ok|failed`.

mod cases;
mod harness;
mod system;
mod tamper;

fn main() {
    let init = std::process::id() == 1;
    if init {
        for (fstype, target) in [
            ("proc", "/proc"),
            ("sysfs", "/sys"),
            ("devtmpfs", "/dev"),
            ("securityfs", "/sys/kernel/security"),
            ("tmpfs", "/tmp"),
        ] {
            if let Err(e) = system::mount(fstype, target) {
                println!("ELFSIG-SETUP cannot mount {fstype} on {target}: {e}");
            }
        }
    }
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let suite = cmdline.split_whitespace().find_map(|w| w.strip_prefix("elfsig.suite=")).unwrap_or("test");
    let ok = match suite {
        "probe" => {
            println!("ELFSIG-PROBE ok");
            true
        }
        "test" => cases::run_all(),
        other => {
            println!("ELFSIG-SETUP unknown suite {other}");
            false
        }
    };
    println!("ELFSIG-DONE {}", if ok { "ok" } else { "failed" });
    if init {
        system::power_off();
    }
}
