//! The `elfsig` command-line tool as a library: the binary is a thin `main`, and benchmarks and
//! tests call the same code.

pub mod architecture;
pub mod cli;
pub mod commands;
pub mod crypto;
pub mod deb;
pub mod elf_file;
pub mod error;
pub mod hex;
pub mod links;
pub mod oci;
pub mod output;
pub mod reader;
pub mod replace;
pub mod skip;
pub mod stream;
pub mod tar_stream;
pub mod walk;

use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::error::Error;

/// Runs the parsed command line and returns the exit status: 0 when everything succeeded, 1
/// when anything failed, 2 on usage errors.
pub fn run(cli: &Cli) -> ExitCode {
    let result = match &cli.command {
        Command::Keygen(args) => commands::keygen::run(args, cli.quiet).map(|()| ExitCode::SUCCESS),
        Command::Sign(args) => commands::sign::run(args, cli.quiet),
        Command::Verify(args) => commands::verify::run(args, cli.quiet),
        Command::Inspect(args) => commands::inspect::run(args, cli.quiet),
        Command::Remove(args) => commands::remove::run(args, cli.quiet),
        Command::Status(args) => commands::status::run(args),
        Command::Mode(args) => commands::settings::mode(args, cli.quiet),
        Command::Loader(args) => commands::settings::loader(args, cli.quiet),
        Command::Untrusted(args) => commands::settings::untrusted(args, cli.quiet),
        Command::Runtime(args) => commands::settings::runtime(args, cli.quiet),
        Command::Flush => commands::settings::flush(cli.quiet),
        Command::Deb(args) => commands::deb::run(args, cli.quiet),
        Command::Oci(args) => commands::oci::run(args, cli.quiet),
        Command::Policy(args) => commands::policy::run(args, cli.quiet),
    };
    match result {
        Ok(code) => code,
        Err(error @ Error::Usage(_)) => {
            eprintln!("elfsig: {error}");
            ExitCode::from(2)
        }
        Err(error) => {
            eprintln!("elfsig: {error}");
            ExitCode::FAILURE
        }
    }
}
