//! A suite's rounds: which of them this VM measures ([`Effort`]), each announced as it starts;
//! and, for the suites that time every case in every configuration round after round
//! ([`Totals`]), each round's totals recorded.

use elfsig_guest::image::BenchEffort;

use crate::config::{Config, Switch};
use crate::console::{emit, progress};

/// How much to measure (full, `--quick`, or a smoke run), and which share of it this VM measures.
///
/// The host runs two bench VMs at once, one per CPU, because the emulated exec path does not
/// scale with guest CPUs: VM `index` of `count` measures the rounds (runs) whose number modulo
/// `count` is `index`. Each VM interleaves every configuration, and round numbers are global, so
/// the host merges the results as if one VM had measured them all.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Effort {
    pub(crate) level: BenchEffort,
    pub(crate) index: usize,
    pub(crate) count: usize,
}

impl Effort {
    /// `full` in a full run, `quick` with `--quick`, `smoke` in a smoke run.
    pub(crate) fn pick<T>(self, full: T, quick: T, smoke: T) -> T {
        self.level.pick(full, quick, smoke)
    }

    /// The rounds out of `0..total` this VM measures.
    pub(crate) fn rounds(self, total: usize) -> impl Iterator<Item = usize> {
        (0..total).filter(move |r| r % self.count.max(1) == self.index)
    }

    /// [`Effort::rounds`], each announced as it starts: `{what} N/total`, where `what` is the
    /// suite and its word for a round.
    pub(crate) fn announced(self, what: &str, total: usize) -> impl Iterator<Item = usize> {
        self.rounds(total).inspect(move |round| progress(&format!("{what} {}/{total}", round + 1)))
    }

    /// Whether this VM reports what is measured once.
    pub(crate) fn first(self) -> bool {
        self.index == 0
    }

    /// Records, from the first VM only, how many times each case of a suite runs per
    /// configuration over the whole run: the `meta` row `case`.
    pub(crate) fn record_execs(self, case: &str, execs: usize) {
        if self.first() {
            emit("meta", case, "-", 0, execs as f64, "execs");
        }
    }
}

/// Sums per-slice values (as [`Switch::interleave`] returns them) over the slices: per
/// configuration, one total per case.
pub(crate) fn totals(slices: &[[Vec<f64>; 4]]) -> [Vec<f64>; 4] {
    let mut totals: [Vec<f64>; 4] = Default::default();
    for slice in slices {
        for (total, values) in totals.iter_mut().zip(slice) {
            total.resize(values.len(), 0.0);
            for (t, v) in total.iter_mut().zip(values) {
                *t += v;
            }
        }
    }
    totals
}

/// A suite that times each of its cases in every configuration, round after round, and records
/// each case's total over a round (`coreutils`, `libs`, `apps`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Totals<'a> {
    /// The suite's name in results.
    pub(crate) suite: &'a str,
    /// What its progress lines call one of its rounds.
    pub(crate) round: &'a str,
    /// Its cases, in the order its measurements return their values.
    pub(crate) cases: &'a [&'a str],
    /// The unit of the totals.
    pub(crate) unit: &'a str,
}

impl Totals<'_> {
    /// Measures the rounds out of `0..rounds` this VM measures, each announced, in `slices`
    /// slices ([`Switch::interleave`], with `prepare` and `measure`), and records each case's
    /// totals over the slices.
    pub(crate) fn measure(
        self,
        switch: &mut Switch,
        effort: Effort,
        (rounds, slices): (usize, usize),
        mut prepare: impl FnMut(Config) -> Result<(), String>,
        mut measure: impl FnMut(Config) -> Result<Vec<f64>, String>,
    ) -> Result<(), String> {
        let what = format!("{} {}", self.suite, self.round);
        for round in effort.announced(&what, rounds) {
            let totals = totals(&switch.interleave(round, slices, &mut prepare, &mut measure)?);
            self.emit_totals(round, &totals);
        }
        Ok(())
    }

    /// Records a round's [`totals`]: one measurement per configuration and case.
    fn emit_totals(self, round: usize, totals: &[Vec<f64>; 4]) {
        for config in Config::ALL {
            for (case, total) in self.cases.iter().zip(&totals[config.index()]) {
                emit(self.suite, case, config.name(), round, *total, self.unit);
            }
        }
    }
}
