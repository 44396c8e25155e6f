//! The largest binary: a generated, signed ELF of at least 128 MiB whose executable segment is
//! at least 76 MiB, executed with an empty cache. Reports the time, the module's verification
//! time and throughput (from its own counters), the most memory the module held for it, and how
//! much the kernel's slab and vmalloc use grew while it ran (sampled every millisecond).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use elfsig_core::ElfFile;
use elfsig_guest::harness::{Context, grew, stats};

use crate::config::{Config, Switch};
use crate::console::{emit, progress};
use crate::ima;
use crate::measure::exec_us;
use crate::rounds::Effort;

const PROGRAM: &str = "large";

/// Slab plus vmalloc use, in bytes.
fn kernel_memory() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let field = |name: &str| -> u64 {
        meminfo
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    field("Slab:") + field("VmallocUsed:")
}

/// Runs `path` while sampling [`kernel_memory`]; returns the time and the peak growth.
fn exec_sampling_memory(path: &str) -> Result<(f64, u64), String> {
    let before = kernel_memory();
    let peak = Arc::new(AtomicU64::new(before));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(kernel_memory(), Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
    };
    let result = exec_us(path, &[]);
    done.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    Ok((result?, peak.load(Ordering::Relaxed).saturating_sub(before)))
}

/// Runs the suite.
pub(crate) fn run(switch: &mut Switch, effort: Effort) -> Result<(), String> {
    let path = Config::ElfsigCold.program(PROGRAM);
    let bytes = std::fs::read(&path).context("read the large binary")?;
    let elf = ElfFile::parse(&mut &bytes[..], bytes.len() as u64).map_err(|e| format!("parse {path}: {e}"))?;
    let text = (0..elf.segments.count)
        .filter_map(|i| elf.segments.entry(&mut &bytes[..], i).ok())
        .filter(|s| s.p_type == 1 && s.p_flags & 1 != 0)
        .map(|s| s.p_filesz)
        .max()
        .unwrap_or(0);
    drop(bytes);
    let size = std::fs::metadata(&path).context("stat")?.len();
    if effort.first() {
        emit("large", "file-size", "-", 0, size as f64, "bytes");
        emit("large", "text-segment-size", "-", 0, text as f64, "bytes");
    }
    let ima_signature = std::fs::read(format!("{}/{PROGRAM}.sig", elfsig_guest::image::BENCH_IMA_SIGNATURES))
        .context("read the IMA signature")?;

    for run in effort.rounds(effort.pick(4, 2, 1)) {
        for config in Config::order(run) {
            progress(&format!("large run {}: {}", run + 1, config.name()));
            match config {
                Config::ElfsigCold => {
                    // A fresh module: its memory peak is this exec's.
                    switch.reload()?;
                    let before = stats()?;
                    let (us, kernel_growth) = exec_sampling_memory(&path)?;
                    let after = stats()?;
                    let verify_ns = grew(&before, &after, "verify_ns");
                    let hashed = grew(&before, &after, "bytes_hashed");
                    emit("large", "exec-time", config.name(), run, us, "us");
                    emit("large", "verify-time", config.name(), run, verify_ns as f64 / 1000.0, "us");
                    emit(
                        "large",
                        "verify-throughput",
                        config.name(),
                        run,
                        hashed as f64 / verify_ns.max(1) as f64 * 1000.0,
                        "MB/s",
                    );
                    emit(
                        "large",
                        "module-memory-peak",
                        config.name(),
                        run,
                        after.get("memory_peak").copied().unwrap_or(0) as f64,
                        "bytes",
                    );
                    emit("large", "kernel-memory-growth", config.name(), run, kernel_growth as f64, "bytes");
                }
                Config::Ima => {
                    switch.enter(config)?;
                    // Setting the signature again makes IMA appraise the file afresh.
                    ima::copy_signed(PROGRAM, &ima_signature)?;
                    let (us, kernel_growth) = exec_sampling_memory(&config.program(PROGRAM))?;
                    emit("large", "exec-time", config.name(), run, us, "us");
                    emit("large", "kernel-memory-growth", config.name(), run, kernel_growth as f64, "bytes");
                }
                Config::Baseline | Config::ElfsigWarm => {
                    switch.enter(config)?;
                    exec_us(&config.program(PROGRAM), &[])?;
                    emit("large", "exec-time", config.name(), run, exec_us(&config.program(PROGRAM), &[])?, "us");
                }
            }
        }
    }
    Ok(())
}
