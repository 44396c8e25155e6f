//! `cargo xtask`: the project's automation, in Rust.
//!
//! Each task lives in its own module and prints every command it runs. Tools the tasks need are
//! installed when running as root (Debian packages, rustup components, cargo tools) or named
//! exactly when not.

// A binary: `pub` marks what a module offers the others, and nothing is reachable from outside.
#![allow(unreachable_pub)]

mod bench;
mod btf;
mod chroot;
mod cmd;
mod debian_kernel;
mod deps;
mod distro;
mod dkms;
mod flags;
mod fuzz;
mod kernel;
mod keys;
mod kmod;
mod mok;
mod nopanic;
mod paths;
mod stress;
mod test;
mod tools;
mod vm;

use std::process::ExitCode;

/// A task's failure, with the message to print.
pub type Result<T = ()> = std::result::Result<T, String>;

fn main() -> ExitCode {
    // Run by keys.rs to initialise the test token, with its PINs in the environment.
    if let Some(result) = elfsig_fixtures::softhsm::init_from_env() {
        return match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("xtask: SoftHSM2 token: {message}");
                ExitCode::FAILURE
            }
        };
    }
    let flags = flags::Xtask::from_env_or_exit();
    let result = match flags.subcommand {
        flags::XtaskCmd::Test(options) => test::run(&options),
        flags::XtaskCmd::BuildKmod(options) => kmod::run(&options),
        flags::XtaskCmd::Dkms(options) => dkms::run(&options),
        flags::XtaskCmd::Bench(options) => bench::run(&options),
        flags::XtaskCmd::Fuzz(options) => fuzz::run(&options),
        flags::XtaskCmd::Stress(options) => stress::run(&options),
        flags::XtaskCmd::Distro(options) => distro::run(&options),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}
