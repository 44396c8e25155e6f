//! Files changed between execs (rewritten in place, truncated, replaced by rename, signed in the
//! VM and unsigned again): each is verified again, never served a stale verdict from the cache.

use elfsig_guest::harness::{
    Context, Outcome, Suite, copy_exec, counters_grew, ensure, grew, read, refused, runs, stats, write_exec,
};
use elfsig_guest::image::{self, CERT, ELFSIG, HELLO_OUTPUT as HELLO, HELLO_UNSIGNED, KEY};
use elfsig_guest::system;

use crate::tamper::Map;
use crate::unprivileged::{vfat_mount, vfat_mounted};

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
    suite.case("block_device_file_hashed_from_the_page_cache_and_a_changed_byte_refused", page_cache);
}

/// On the local disk file systems (vfat on a loop device here; ext4, xfs, btrfs alike) the
/// module hashes the page cache's bytes where they lie instead of copying them out
/// (`bytes_hashed_in_cache`), reading in what is not cached (the file system mounted again
/// first, so that none of it is); on tmpfs it reads them. Either way a byte changed in the
/// middle of the file, far past its headers and first read, refuses it.
fn page_cache() -> Outcome {
    let dir = format!("{WORK}/block");
    std::fs::create_dir_all(&dir).context("create the directory")?;
    let (image, mnt) = (format!("{dir}/vfat.img"), format!("{dir}/mnt"));
    let device = vfat_mounted(&image, 16, &mnt, "umask=022")?;
    // Mounted again: nothing of its files is in the page cache.
    let remount =
        || system::unmount(&mnt).context("unmount vfat").and_then(|()| vfat_mount(&device, &mnt, "umask=022"));
    let outcome = (|| {
        let len = std::fs::metadata(ELFSIG).context("stat the CLI")?.len();
        for (path, in_place) in [(format!("{mnt}/elfsig"), true), (format!("{WORK}/elfsig-on-tmpfs"), false)] {
            copy_exec(ELFSIG, &path)?;
            if in_place {
                remount()?;
            }
            let before = stats()?;
            runs(&path, &["--version"], None)?;
            let after = stats()?;
            let (hashed, in_cache) =
                (grew(&before, &after, "bytes_hashed"), grew(&before, &after, "bytes_hashed_in_cache"));
            ensure(hashed > len / 2 && in_cache == if in_place { hashed } else { 0 }, || {
                format!("{path}: {hashed} bytes hashed of {len}, {in_cache} of them in the page cache")
            })?;
            let mut bytes = read(&path)?;
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0x40;
            std::fs::write(&path, &bytes).context("change a byte")?;
            if in_place {
                remount()?;
            }
            let before = stats()?;
            refused(&path)?;
            counters_grew(&before, &stats()?, &[("modified", 1)])?;
        }
        Ok(())
    })();
    let _ = system::unmount(&mnt);
    let _ = system::loop_detach(&device);
    let _ = std::fs::remove_file(&image);
    outcome
}
