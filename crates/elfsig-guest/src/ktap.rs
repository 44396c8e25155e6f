//! KTAP, the kernel's test output format (`Documentation/dev-tools/ktap.rst`): the guest writes
//! its results in it on the serial console ([`Writer`]), and `cargo xtask` reads them back
//! ([`parse`]), skipping whatever else the console printed.
//!
//! ```text
//! KTAP version 1
//! 1..3
//! ok 1 signed_programs_run
//! # a diagnostic line
//! not ok 2 unsigned_static_refused # exec /t/unsigned/hello was allowed
//! ok 3 concurrent_execs
//! # Totals: pass:2 fail:1 skip:0
//! ```
//!
//! A run ends with the totals line, which tells the host that the guest has finished.

use std::fmt;
use std::io::{self, Write};

/// The version line.
pub const VERSION: &str = "KTAP version 1";
/// How the totals line, the last of a run, starts.
pub const TOTALS: &str = "# Totals: ";

/// Writes KTAP results, on standard output unless told otherwise. Each line is written whole
/// and flushed, so that the host sees it at once and no other output cuts it.
#[derive(Debug)]
pub struct Writer<W: Write = io::Stdout> {
    out: W,
    planned: usize,
    reported: usize,
    passed: usize,
    failed: usize,
    skipped: usize,
}

impl Writer {
    /// Starts a run of `planned` tests on standard output, with the version and plan lines.
    pub fn start(planned: usize) -> Self {
        Writer::start_on(io::stdout(), planned)
    }
}

impl<W: Write> Writer<W> {
    /// Starts a run of `planned` tests on `out`.
    pub fn start_on(out: W, planned: usize) -> Self {
        let mut writer = Writer { out, planned, reported: 0, passed: 0, failed: 0, skipped: 0 };
        writer.line(format_args!("{VERSION}\n1..{planned}"));
        writer
    }

    fn line(&mut self, line: fmt::Arguments<'_>) {
        // The console is all there is; a failed write has nowhere to be reported.
        let _ = writeln!(self.out, "{line}").and_then(|()| self.out.flush());
    }

    /// Reports the next test: `ok` when `failure` is `None`, else `not ok` with the failure as
    /// diagnostic data (on one line).
    pub fn result(&mut self, name: &str, failure: Option<&str>) {
        self.reported += 1;
        // A description may hold neither `#` nor a line break.
        let name = name.replace(['#', '\n'], " ");
        let number = self.reported;
        match failure {
            None => {
                self.passed += 1;
                self.line(format_args!("ok {number} {name}"));
            }
            Some(why) => {
                self.failed += 1;
                self.line(format_args!("not ok {number} {name} # {}", why.replace('\n', " | ")));
            }
        }
    }

    /// Reports the next test as skipped, saying why (KTAP's `SKIP` directive).
    pub fn skipped(&mut self, name: &str, why: &str) {
        self.reported += 1;
        self.skipped += 1;
        let name = name.replace(['#', '\n'], " ");
        let number = self.reported;
        self.line(format_args!("ok {number} {name} # SKIP {}", why.replace('\n', " | ")));
    }

    /// A diagnostic line.
    pub fn diagnostic(&mut self, text: impl fmt::Display) {
        self.line(format_args!("# {}", text.to_string().replace('\n', " | ")));
    }

    /// Ends the run with the totals line; true when every planned test was reported and passed.
    pub fn finish(mut self) -> bool {
        let (passed, failed, skipped) = (self.passed, self.failed, self.skipped);
        self.line(format_args!("{TOTALS}pass:{passed} fail:{failed} skip:{skipped}"));
        failed == 0 && self.reported == self.planned
    }
}

/// One test's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestResult {
    /// Whether it passed.
    pub ok: bool,
    /// Its number.
    pub number: usize,
    /// Its description.
    pub name: String,
    /// What follows `#`: a directive and diagnostic data, or why it failed.
    pub diagnostic: Option<String>,
}

/// A run, as read back: the top level only (nested tests are indented and skipped).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The number of tests planned.
    pub planned: Option<usize>,
    /// The results, in order.
    pub results: Vec<TestResult>,
    /// Whether the run ended with its totals line.
    pub finished: bool,
}

/// Reads the KTAP run in `console`: from its version line on, every top-level plan, result and
/// totals line; anything else (kernel messages, nested tests) is skipped.
pub fn parse(console: &str) -> Report {
    let mut report = Report::default();
    let mut started = false;
    for line in console.lines().map(|l| l.trim_end_matches('\r')) {
        if line == VERSION {
            // A second run starts afresh: the last one counts.
            report = Report::default();
            started = true;
            continue;
        }
        if !started {
            continue;
        }
        if line.starts_with(TOTALS) {
            report.finished = true;
        } else if let Some(planned) = line.strip_prefix("1..").and_then(|n| n.parse().ok()) {
            report.planned = Some(planned);
        } else if let Some(result) = parse_result(line) {
            report.results.push(result);
        }
    }
    report
}

fn parse_result(line: &str) -> Option<TestResult> {
    let (ok, rest) = match line.strip_prefix("not ok ") {
        Some(rest) => (false, rest),
        None => (true, line.strip_prefix("ok ")?),
    };
    let (number, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let (name, diagnostic) = match rest.split_once('#') {
        Some((name, diagnostic)) => (name, Some(diagnostic.trim().to_owned())),
        None => (rest, None),
    };
    Some(TestResult { ok, number: number.parse().ok()?, name: name.trim().to_owned(), diagnostic })
}

impl Report {
    /// Checks that the run finished, reported every planned test in order, and that all
    /// passed; returns how many did.
    pub fn check(&self) -> Result<usize, String> {
        let failed: Vec<String> = self
            .results
            .iter()
            .filter(|r| !r.ok)
            .map(|r| format!("{} {}: {}", r.number, r.name, r.diagnostic.as_deref().unwrap_or("")))
            .collect();
        if !failed.is_empty() {
            return Err(format!("{} test(s) failed:\n  {}", failed.len(), failed.join("\n  ")));
        }
        let planned = self.planned.ok_or("no KTAP plan: the guest did not start its tests")?;
        let numbers: Vec<usize> = self.results.iter().map(|r| r.number).collect();
        if numbers != (1..=planned).collect::<Vec<_>>() {
            return Err(format!(
                "{} of {planned} planned tests reported{}",
                numbers.len(),
                if self.finished { " (out of order or duplicated)" } else { ": the guest did not finish" }
            ));
        }
        if !self.finished {
            return Err("the guest did not print its totals".into());
        }
        Ok(planned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "\
[    1.0] early kernel message
KTAP version 1
1..3
ok 1 first
# a diagnostic
[    2.0] elfsig: refused /x: unsigned
ok 2 second # SKIP not here
  KTAP version 1
  1..1
  not ok 1 nested # nested results are the parent's business
ok 3 third
# Totals: pass:3 fail:0 skip:0
";

    #[test]
    fn a_finished_run_with_every_test_passing_checks() {
        let report = parse(GOOD);
        assert_eq!(report.planned, Some(3));
        assert_eq!(report.results.len(), 3);
        assert_eq!(report.results[1].diagnostic.as_deref(), Some("SKIP not here"));
        assert_eq!(report.check(), Ok(3));
    }

    #[test]
    fn failures_missing_tests_and_unfinished_runs_do_not_check() {
        let failed = GOOD.replace("ok 3 third", "not ok 3 third # it broke | twice");
        let error = parse(&failed).check().unwrap_err();
        assert!(error.contains("3 third: it broke | twice"), "{error}");
        let missing = GOOD.replace("ok 2 second # SKIP not here\n", "");
        assert!(parse(&missing).check().unwrap_err().contains("2 of 3"));
        let unfinished = GOOD.replace("# Totals: pass:3 fail:0 skip:0\n", "");
        assert!(parse(&unfinished).check().unwrap_err().contains("totals"));
        let cut = &GOOD[..GOOD.find("ok 3").unwrap()];
        assert!(parse(cut).check().unwrap_err().contains("did not finish"));
        assert!(parse("no ktap here\n").check().unwrap_err().contains("no KTAP plan"));
        let renumbered = GOOD.replace("ok 3 third", "ok 4 third");
        assert!(parse(&renumbered).check().unwrap_err().contains("out of order"));
    }

    #[test]
    fn what_the_writer_writes_parses_back() {
        let mut out = Vec::new();
        let mut writer = Writer::start_on(&mut out, 2);
        writer.result("a#b\nc", Some("x\ny # z"));
        writer.diagnostic("note\nmore");
        writer.result("second", None);
        assert!(!writer.finish(), "a failed test passed the run");
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("# note | more\n"), "{text}");
        let report = parse(&text);
        assert!(report.finished);
        assert_eq!(report.planned, Some(2));
        assert_eq!(
            report.results[0],
            TestResult { ok: false, number: 1, name: "a b c".into(), diagnostic: Some("x | y # z".into()) }
        );
        assert_eq!(report.results[1].name, "second");
        assert!(report.check().unwrap_err().contains("1 test(s) failed"));

        let mut out = Vec::new();
        let mut short = Writer::start_on(&mut out, 2);
        short.result("only", None);
        assert!(!short.finish(), "a run that reported one of two tests passed");
    }

    #[test]
    fn a_skipped_test_says_why_and_is_counted() {
        let mut out = Vec::new();
        let mut writer = Writer::start_on(&mut out, 2);
        writer.result("ran", None);
        writer.skipped("needs#a\nkernel", "not here\nat all");
        assert!(writer.finish(), "a skipped test failed the run");
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("ok 2 needs a kernel # SKIP not here | at all\n"), "{text}");
        assert!(text.ends_with("# Totals: pass:1 fail:0 skip:1\n"), "{text}");
        let report = parse(&text);
        assert_eq!(report.results[1].diagnostic.as_deref(), Some("SKIP not here | at all"));
        assert_eq!(report.check(), Ok(2));
    }
}
