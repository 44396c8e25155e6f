//! What the user sees while a command works through files: a progress bar on a terminal,
//! per-file results in the order the files were given, and the exit status.

use std::fmt::Display;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use crate::error::Error;
use crate::skip::Skip;

/// How one file went.
#[derive(Debug)]
pub enum Outcome {
    /// Done; the line to print on standard output, if any, and notes for standard error.
    Done {
        /// Printed on stdout unless quiet.
        line: Option<String>,
        /// Printed on stderr unless quiet.
        notes: Vec<String>,
    },
    /// Found while walking a directory and left alone (see [`Skip`]).
    Skipped(Skip),
    /// Failed; with a line for standard output when the format reports failures there too.
    Failed(Error, Option<String>),
}

impl Outcome {
    /// Success with nothing to say.
    pub fn done() -> Self {
        Outcome::Done { line: None, notes: Vec::new() }
    }
}

/// How much to say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verbosity {
    /// Everything.
    Normal,
    /// Errors only (`-q`).
    Quiet,
    /// Errors and the result lines, which are the command's output (`inspect -q`).
    ResultsOnly,
}

impl Verbosity {
    /// `Quiet` for `-q`, else `Normal`.
    pub fn from_quiet(quiet: bool) -> Self {
        if quiet { Verbosity::Quiet } else { Verbosity::Normal }
    }
}

/// Runs `work` on every path (with its index) on all cores, showing progress on a terminal,
/// then reports each outcome in order. Returns the exit status: 1 if any file failed.
pub fn run_all(
    paths: &[PathBuf],
    verbosity: Verbosity,
    verb: &str,
    work: impl Fn(usize, &Path) -> Outcome + Sync + Send,
) -> ExitCode {
    let quiet = verbosity != Verbosity::Normal;
    let print_lines = verbosity != Verbosity::Quiet;
    let bar = (!quiet && paths.len() > 1 && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(paths.len() as u64);
        if let Ok(style) = ProgressStyle::with_template("{msg} {wide_bar} {pos}/{len} {eta}") {
            bar.set_style(style);
        }
        bar.set_message(verb.to_owned());
        bar
    });
    let outcomes: Vec<Outcome> = paths
        .par_iter()
        .enumerate()
        .map(|(index, path)| {
            let outcome = work(index, path);
            if let Some(bar) = &bar {
                bar.inc(1);
            }
            outcome
        })
        .collect();
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }

    let (mut done, mut failed) = (0usize, 0usize);
    let mut skipped: std::collections::BTreeMap<Skip, usize> = std::collections::BTreeMap::new();
    let stdout = std::io::stdout();
    let mut stdout = stdout.lock();
    for (path, outcome) in paths.iter().zip(outcomes) {
        match outcome {
            Outcome::Done { line, notes } => {
                done += 1;
                if let Some(line) = line.filter(|_| print_lines) {
                    let _ = writeln!(stdout, "{line}");
                }
                if !quiet {
                    for note in notes {
                        note_about(path, note);
                    }
                }
            }
            Outcome::Skipped(skip) => {
                *skipped.entry(skip).or_default() += 1;
                if !quiet && skip.noted() {
                    note_about(path, format_args!("skipped: {}", skip.why()));
                }
            }
            Outcome::Failed(error, line) => {
                failed += 1;
                if let Some(line) = line.filter(|_| print_lines) {
                    let _ = writeln!(stdout, "{line}");
                }
                fail_about(path, &error);
            }
        }
    }
    let _ = stdout.flush();
    if !quiet && paths.len() > 1 {
        let mut summary = format!("{verb}: {done} done");
        if let Some(skipped) = skipped_summary(&skipped, "skipped") {
            summary += &format!(", {skipped}");
        }
        if failed > 0 {
            summary += &format!(", {failed} failed");
        }
        eprintln!("elfsig: {summary}");
    }
    if failed > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// How many files were left alone, and why, said as `what`: `3 skipped (2 kernel modules, 1
/// objects)`; `None` for none.
pub fn skipped_summary(skipped: &std::collections::BTreeMap<Skip, usize>, what: &str) -> Option<String> {
    let total: usize = skipped.values().sum();
    let each: Vec<String> = skipped.iter().map(|(skip, n)| skip.counted(*n)).collect();
    (total > 0).then(|| format!("{total} {what} ({})", each.join(", ")))
}

/// ", 3 left alone (2 kernel modules, 1 for other architectures)", or nothing: what a package
/// or layer's line adds about the ELF files it did not sign or check.
pub fn left_alone(skipped: &std::collections::BTreeMap<Skip, usize>) -> String {
    skipped_summary(skipped, "left alone").map(|s| format!(", {s}")).unwrap_or_default()
}

/// A note about a file on standard error.
pub fn note_about(path: &Path, note: impl Display) {
    eprintln!("elfsig: {}: {note}", path.display());
}

/// A failure about a file on standard error.
pub fn fail_about(path: &Path, error: &Error) {
    eprintln!("elfsig: {}: {error}", path.display());
}
