//! `elfsig`: sign ELF binaries for the elfsig kernel module, and verify, inspect and remove
//! signatures.

use clap::Parser;

fn main() -> std::process::ExitCode {
    elfsig_cli::run(&elfsig_cli::cli::Cli::parse())
}
