//! The inputs kept in a crate's `tests/regressions/`: ones that once crashed a fuzz target or
//! broke an invariant, replayed by that crate's tests.

use std::io;
use std::path::Path;

/// Every file in `dir` but its `README.md`, as (name, bytes), sorted by name. An empty
/// directory is an error: a replay of nothing would pass without checking anything.
pub fn regression_inputs(dir: &Path) -> io::Result<Vec<(String, Vec<u8>)>> {
    let mut inputs = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        inputs.push((name, std::fs::read(&path)?));
    }
    if inputs.is_empty() {
        return Err(io::Error::new(io::ErrorKind::NotFound, format!("no regression inputs in {}", dir.display())));
    }
    inputs.sort();
    Ok(inputs)
}
