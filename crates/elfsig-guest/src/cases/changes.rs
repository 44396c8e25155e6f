//! Files changed between execs (rewritten in place, truncated, replaced by rename, signed in the
//! VM and unsigned again): each is verified again, never served a stale verdict from the cache.

use elfsig_guest::harness::{
    Context, Outcome, Suite, copy_exec, counters_grew, ensure, read, refused, runs, stats, write_exec,
};
use elfsig_guest::image::{self, CERT, ELFSIG, HELLO_OUTPUT as HELLO, HELLO_UNSIGNED, KEY};

use crate::tamper::Map;

const WORK: &str = "/tmp/work";

/// A signed file changed between execs must be verified again.
pub(crate) fn cases(suite: &mut Suite<'_>) {
    const PATH: &str = "/tmp/work/changing";
    /// A fresh signed copy at `PATH`, verified once and then served by the cache.
    fn fresh() -> Outcome {
        copy_exec(image::HELLO, PATH)?;
        runs(PATH, &[], Some(HELLO))?;
        let before = stats()?;
        runs(PATH, &[], Some(HELLO))?;
        // The exec's check and the guard's, when binfmt_elf maps it: both from the cache.
        counters_grew(&before, &stats()?, &[("cache_hits", 2), ("cache_misses", 0)])
    }
    let _ = std::fs::create_dir_all(WORK);
    suite.case("unchanged_file_is_cached", fresh);
    suite.case("modified_in_place_between_execs_refused", || {
        fresh()?;
        let mut bytes = read(PATH)?;
        let at = Map::of(&bytes)?.section(".text")?.0;
        bytes[at] ^= 0xff;
        // Rewrite the same inode, same size.
        std::fs::OpenOptions::new()
            .write(true)
            .open(PATH)
            .and_then(|mut f| {
                use std::io::{Seek, SeekFrom, Write};
                f.seek(SeekFrom::Start(at as u64))?;
                f.write_all(&bytes[at..at + 1])
            })
            .context("write in place")?;
        refused(PATH)
    });
    suite.case("truncated_between_execs_refused", || {
        fresh()?;
        let len = std::fs::metadata(PATH).context("stat")?.len();
        std::fs::OpenOptions::new().write(true).open(PATH).and_then(|f| f.set_len(len - 1)).context("truncate")?;
        refused(PATH)
    });
    suite.case("replaced_by_rename_refused", || {
        fresh()?;
        let unsigned = format!("{WORK}/unsigned-copy");
        copy_exec(HELLO_UNSIGNED, &unsigned)?;
        std::fs::rename(&unsigned, PATH).context("rename")?;
        refused(PATH)
    });
    suite.case("signed_in_the_vm_runs_and_removed_is_refused", || {
        copy_exec(HELLO_UNSIGNED, PATH)?;
        refused(PATH)?;
        runs(ELFSIG, &["sign", "-q", "--key", KEY, "--cert", CERT, PATH], None)?;
        runs(PATH, &[], Some(HELLO))?;
        runs(ELFSIG, &["verify", "-q", "--cert", CERT, PATH], None)?;
        runs(ELFSIG, &["remove", "-q", PATH], None)?;
        refused(PATH)?;
        ensure(read(PATH)? == read(HELLO_UNSIGNED)?, || "remove did not restore the unsigned file".into())
    });
    suite.case("restored_file_runs_again", || {
        fresh()?;
        std::fs::OpenOptions::new().write(true).open(PATH).and_then(|f| f.set_len(10)).context("truncate")?;
        refused(PATH)?;
        write_exec(PATH, &read(image::HELLO)?)?;
        runs(PATH, &[], Some(HELLO))
    });
}
