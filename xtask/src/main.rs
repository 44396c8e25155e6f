//! `cargo xtask`: the project's automation, in Rust.
//!
//! Each task lives in its own module and prints every command it runs. Tools the tasks need are
//! installed when running as root (Debian packages, rustup components, cargo tools) or named
//! exactly when not.

// A binary: `pub` marks what a module offers the others, and nothing is reachable from outside.
#![allow(unreachable_pub)]

mod bench;
mod cmd;
mod deps;
mod fuzz;
mod kernel;
mod keys;
mod kmod;
mod nopanic;
mod paths;
mod stress;
mod test;
mod tools;
mod vm;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <task> [options]

tasks:
  test [--vm-only]      formatting, lints, the panic-freedom check, every test, a fuzz smoke run,
                        the kernel module's end-to-end tests in a VM (--vm-only: just those),
                        the quick stress run and the quick bench as smoke tests
  build-kmod [--kdir DIR] [--cert CERT]...
                        the kernel module, against the cached test kernel or a prepared tree
  bench [--quick] [--suite S]...
                        build and run the benchmarks; report in target/bench/latest
  fuzz [--seconds N] [--target T]
                        fuzz elfsig-core and the CLI round trip (default: 60 s per target)
  stress [--quick] [--seconds N]
                        the stress and fault-injection suite in the debug kernel (default 300 s)
  help                  this text
";

/// A task's failure, with the message to print.
pub type Result<T = ()> = std::result::Result<T, String>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (task, rest) = match args.split_first() {
        Some((task, rest)) => (task.as_str(), rest),
        None => ("help", &[][..]),
    };
    let result = match task {
        "test" => test::run(rest),
        "build-kmod" => kmod::run(rest),
        "bench" => bench::run(rest),
        "fuzz" => fuzz::run(rest),
        "stress" => stress::run(rest),
        "help" | "-h" | "--help" => {
            print!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown task {other:?}\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Parses `--name VALUE` options and flags from `args`; returns an error for anything unknown.
pub fn parse_options(args: &[String], flags: &[&str], valued: &[&str]) -> Result<Options> {
    let mut options = Options::default();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if flags.contains(&arg.as_str()) {
            options.flags.push(arg.clone());
        } else if valued.contains(&arg.as_str()) {
            let value = iter.next().ok_or_else(|| format!("{arg} needs a value"))?;
            options.values.push((arg.clone(), value.clone()));
        } else {
            return Err(format!("unknown option {arg:?}"));
        }
    }
    Ok(options)
}

/// Parsed options.
#[derive(Debug, Default)]
pub struct Options {
    flags: Vec<String>,
    values: Vec<(String, String)>,
}

impl Options {
    /// Whether `flag` was given.
    pub fn flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    /// Every value given for `name`, in order.
    pub fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.values.iter().filter(move |(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The last value given for `name`.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.values.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}
