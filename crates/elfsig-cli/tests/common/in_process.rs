//! The CLI run in this process, as the fuzz targets run it and the tests that share their
//! checks (`roundtrip.rs`, `packages.rs`): a directory in memory, a throwaway key made once per
//! process, and `elfsig -q ARGS`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;

use clap::Parser;
use elfsig_cli::cli::Cli;

/// Where the checks work, and the key they sign with.
pub struct Setup {
    pub dir: PathBuf,
    pub key: PathBuf,
    pub cert: PathBuf,
}

/// A directory in memory and a throwaway key, made once per process.
pub fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let base = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
        let dir = base.join(format!("elfsig-in-process-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let (key, cert) = (dir.join("key.pem"), dir.join("cert.pem"));
        assert!(elfsig(&["keygen", "--bits", "2048", "--key", path(&key), "--cert", path(&cert)]));
        Setup { dir, key, cert }
    })
}

/// A path as the command line takes it.
pub fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs `elfsig -q ARGS` in this process; true on exit status 0.
pub fn elfsig(args: &[&str]) -> bool {
    let cli = Cli::try_parse_from(["elfsig", "-q"].iter().chain(args)).unwrap();
    elfsig_cli::run(&cli) == ExitCode::SUCCESS
}
