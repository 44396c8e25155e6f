//! The four configurations measured, and switching between them.
//!
//! - `baseline`: the module not loaded.
//! - `elfsig-cold`: the module enforcing with its mapping guard attached, its verdict cache
//!   flushed before every exec: the cost of a first exec (program, ld.so and every library).
//! - `elfsig-warm`: the same with a warm cache: the steady state.
//! - `ima`: the kernel's IMA appraisal (`appraise func=BPRM_CHECK` and `func=MMAP_CHECK`,
//!   `appraise_type=imasig`), on copies of the same programs owned by [`IMA_UID`]: an IMA policy
//!   cannot be removed once loaded, so the rules match that owner only, and the other
//!   configurations run root's files.
//!
//! Measurements interleave the configurations (A B C D, then B C D A, ...) in short slices, so
//! that drift hits them all alike.

use elfsig_guest::harness::write_control;
use elfsig_guest::{image, system};

use crate::console::progress;

/// Owner of the files IMA appraises.
pub(crate) const IMA_UID: u32 = 4242;

/// A configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Config {
    Baseline,
    ElfsigCold,
    ElfsigWarm,
    Ima,
}

impl Config {
    pub(crate) const ALL: [Config; 4] = [Config::Baseline, Config::ElfsigCold, Config::ElfsigWarm, Config::Ima];

    /// The name in results.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Config::Baseline => "baseline",
            Config::ElfsigCold => "elfsig-cold",
            Config::ElfsigWarm => "elfsig-warm",
            Config::Ima => "ima",
        }
    }

    /// The directory holding this configuration's copies of the programs.
    pub(crate) fn bin_dir(self) -> &'static str {
        match self {
            Config::Ima => image::BENCH_IMA_COPIES,
            _ => image::BENCH_SIGNED,
        }
    }

    /// This configuration's copy of `program`.
    pub(crate) fn program(self, program: &str) -> String {
        format!("{}/{program}", self.bin_dir())
    }

    /// The position in [`Config::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The configurations in the order round `round` measures them.
    pub(crate) fn order(round: usize) -> [Config; 4] {
        let mut all = Config::ALL;
        all.rotate_left(round % Config::ALL.len());
        all
    }

    /// What the workload scripts take to know whether to flush the verdict cache before each
    /// exec: `cold` or `warm`.
    pub(crate) fn script_mode(self) -> &'static str {
        if self == Config::ElfsigCold { "cold" } else { "warm" }
    }

    /// Whether the module is loaded in this configuration.
    fn module_loaded(self) -> bool {
        matches!(self, Config::ElfsigCold | Config::ElfsigWarm)
    }

    /// Prepares the next timed exec: an empty verdict cache for `elfsig-cold`.
    pub(crate) fn before_exec(self) {
        if self == Config::ElfsigCold {
            let _ = write_control("flush", "1");
        }
    }
}

/// Loads and unloads the module as configurations require.
#[derive(Debug, Default)]
pub(crate) struct Switch {
    loaded: bool,
}

impl Switch {
    /// Puts the system in `config`: the module loaded and its mapping guard attached, or the
    /// guard released (the module cannot be unloaded while it holds it) and the module unloaded.
    pub(crate) fn enter(&mut self, config: Config) -> Result<(), String> {
        let want = config.module_loaded();
        if want && !self.loaded {
            system::load_module(std::path::Path::new(image::MODULE), "").map_err(|e| format!("load elfsig.ko: {e}"))?;
            attach_guard()?;
        } else if !want && self.loaded {
            write_control("guard", "release").map_err(|e| format!("release the mapping guard: {e}"))?;
            elfsig_guest::harness::unload_when_idle("elfsig")?;
        }
        self.loaded = want;
        Ok(())
    }

    /// Measures round `round` in `slices` slices, every configuration in each slice, in an order
    /// that rotates from slice to slice, so that drift within the round hits all alike.
    ///
    /// In each slice and configuration, `prepare(config)` runs untimed what is about to be
    /// measured (filling the page cache and, in `elfsig-warm`, the verdict cache the module
    /// starts without whenever it is loaded), then `measure(config)` returns one value per case.
    /// The result holds each configuration's sums over the slices, in [`Config::ALL`] order.
    /// It is an error for `elfsig-warm` to miss the cache while measuring: it would not be the
    /// steady state.
    pub(crate) fn interleave(
        &mut self,
        round: usize,
        slices: usize,
        mut prepare: impl FnMut(Config) -> Result<(), String>,
        mut measure: impl FnMut(Config) -> Result<Vec<f64>, String>,
    ) -> Result<Vec<[Vec<f64>; 4]>, String> {
        let mut all = Vec::with_capacity(slices);
        for slice in 0..slices {
            if slices > 1 {
                progress(&format!("  slice {}/{slices}", slice + 1));
            }
            let mut values: [Vec<f64>; 4] = Default::default();
            for config in Config::order(round + slice) {
                self.enter(config)?;
                prepare(config)?;
                let before = cache_misses(config)?;
                values[config.index()] = measure(config)?;
                let missed = cache_misses(config)? - before;
                if missed > 0 {
                    return Err(format!("elfsig-warm missed the verdict cache {missed} times while measuring"));
                }
            }
            all.push(values);
        }
        Ok(all)
    }

    /// Reloads the module (empty cache, counters and memory peak reset).
    pub(crate) fn reload(&mut self) -> Result<(), String> {
        self.enter(Config::Baseline)?;
        self.enter(Config::ElfsigWarm)
    }
}

/// Runs `elfsig-guard`, which attaches the mapping guard and proves it with its canary.
fn attach_guard() -> Result<(), String> {
    let out = std::process::Command::new(image::GUARD).output().map_err(|e| format!("run {}: {e}", image::GUARD))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{} failed ({}): {}", image::GUARD, out.status, String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// The module's cache misses so far in `elfsig-warm`, where none are allowed; 0 elsewhere.
fn cache_misses(config: Config) -> Result<u64, String> {
    if config != Config::ElfsigWarm {
        return Ok(0);
    }
    let stats = elfsig_guest::harness::stats()?;
    stats.get("cache_misses").copied().ok_or_else(|| "the module reports no cache_misses".into())
}
