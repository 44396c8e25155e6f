//! What the benchmarks build with gcc besides the test programs: many small, distinct shared
//! libraries for the `libs` suite to `dlopen` (with [`guard_programs`](crate::guard_programs)'
//! probe), cached like every built fixture.

use std::path::PathBuf;
use std::process::Command;

use crate::built::{gcc, run, version, write_source};
use crate::cache::{Key, cached};

const LIBRARY_C: &str = include_str!("programs/bench-lib.c");

/// The file name (and `DT_SONAME`) of library `index`.
pub fn bench_library_name(index: usize) -> String {
    format!("libelfsig-bench-{index:02}.so")
}

/// Builds libraries `0..count` (once each; cached) and returns their paths, in order.
pub fn bench_libraries(count: usize) -> Result<Vec<PathBuf>, String> {
    let gcc = gcc()?;
    let gcc_version = version(&gcc, &["--version"])?;
    (0..count)
        .map(|index| {
            let name = bench_library_name(index);
            let key = Key::new().add("bench-lib").add(&gcc_version).add(LIBRARY_C).add(&name);
            cached(&name, &key, "", |work| {
                write_source(work, "lib.c", LIBRARY_C)?;
                let soname = format!("-Wl,-soname,{name}");
                run(
                    Command::new(&gcc)
                        .args(["-O2", "-Wall", "-Werror", "-fPIC", "-shared", &soname, "-o", &name, "lib.c"]),
                    work,
                )?;
                Ok(work.join(&name))
            })
        })
        .collect()
}
