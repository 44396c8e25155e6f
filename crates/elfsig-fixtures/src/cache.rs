//! The on-disk cache of built fixtures: content keys, and building each entry once even when
//! threads and processes ask for it at the same time.
//!
//! An entry is named `<stem>-<key>` where the key hashes everything that determines the output
//! (sources, flags, tool versions). It is built in a private temporary directory inside the
//! cache and renamed into place, so a reader never sees a partial file; a lock file per entry
//! makes concurrent callers wait for the first builder instead of repeating its work. The lock
//! is `flock(2)` (through [`File::lock`]), which also excludes other threads of the same process
//! because each caller opens the file separately.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::system::{cache_dir, unique};

/// 64-bit FNV-1a: a stable hash, unlike `std`'s `DefaultHasher`, whose algorithm may change
/// between Rust releases. Collisions are not a concern for a cache key.
#[derive(Clone, Debug)]
pub(crate) struct Key(u64);

impl Key {
    pub(crate) fn new() -> Key {
        Key(0xcbf2_9ce4_8422_2325)
    }

    fn byte(&mut self, b: u8) {
        self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }

    /// Adds a length-prefixed field, so that ("ab", "c") and ("a", "bc") differ.
    pub(crate) fn add(mut self, bytes: impl AsRef<[u8]>) -> Key {
        let bytes = bytes.as_ref();
        for b in (bytes.len() as u64).to_le_bytes() {
            self.byte(b);
        }
        for &b in bytes {
            self.byte(b);
        }
        self
    }

    pub(crate) fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

/// Returns the cache entry `<stem>-<key><ext>`, first building it if it does not exist.
///
/// `make` is given an empty private directory to work in and returns the path of the finished
/// file, which must be inside that directory; it is renamed into the cache. A failed build leaves
/// nothing behind and is retried by the next call.
pub(crate) fn cached(
    stem: &str,
    key: &Key,
    ext: &str,
    make: impl FnOnce(&Path) -> Result<PathBuf, String>,
) -> Result<PathBuf, String> {
    let dir = cache_dir();
    let name = format!("{stem}-{}", key.hex());
    let entry = dir.join(format!("{name}{ext}"));
    if entry.is_file() {
        return Ok(entry);
    }

    let lock_path = dir.join(format!("{name}.lock"));
    let lock = File::create(&lock_path).map_err(|e| format!("cannot create {}: {e}", lock_path.display()))?;
    lock.lock().map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
    // Someone else may have built it while we waited for the lock.
    if entry.is_file() {
        return Ok(entry);
    }

    let work = dir.join(format!("tmp-{name}-{}-{}", std::process::id(), unique()));
    std::fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
    let result = make(&work).and_then(|built| {
        std::fs::rename(&built, &entry)
            .map_err(|e| format!("cannot move {} to {}: {e}", built.display(), entry.display()))
    });
    let _ = std::fs::remove_dir_all(&work);
    if result.is_ok() {
        // Tidy up while still holding the lock. Anyone who opens the lock file from now on
        // finds the entry first; anyone already waiting on it finds the entry once they hold it.
        let _ = std::fs::remove_file(&lock_path);
    }
    drop(lock);
    result.map(|()| entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_is_stable_and_delimited() {
        // FNV-1a of nothing is the offset basis.
        assert_eq!(Key::new().hex(), "cbf29ce484222325");
        assert_eq!(Key::new().add("ab").add("c").hex(), Key::new().add("ab").add("c").hex());
        assert_ne!(Key::new().add("ab").add("c").hex(), Key::new().add("a").add("bc").hex());
    }

    #[test]
    fn builds_once_across_threads() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let builds = AtomicUsize::new(0);
        let key = Key::new().add("cache test").add(std::process::id().to_le_bytes()).add(unique().to_le_bytes());
        let paths: Vec<PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        cached("cache-test", &key, ".txt", |work| {
                            builds.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(50));
                            let out = work.join("out.txt");
                            std::fs::write(&out, b"built").map_err(|e| e.to_string())?;
                            Ok(out)
                        })
                        .unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        assert!(paths.windows(2).all(|w| w[0] == w[1]));
        assert_eq!(std::fs::read(&paths[0]).unwrap(), b"built");
        assert!(!cache_dir().join(format!("cache-test-{}.lock", key.hex())).exists());
        let _ = std::fs::remove_file(&paths[0]);
    }
}
