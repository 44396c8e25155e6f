//! Code that arrives after the check, tried as the unprivileged user would (uid 1000) with the
//! signed programs already installed. A writer racing the mapping check: one thread rewrites,
//! in place, a library in a directory the user owns (open for writing, write, close), between
//! its signed bytes and an unsigned payload, while the user's programs map it executable. The
//! module refuses writers to a file from before its verdict until the file is released, so a
//! mapping that was allowed holds the signed bytes for as long as it exists, and `dlopen` never
//! runs the payload, whatever the scheduler does. As the attack did, a third thread widens the
//! window between a mapping's check and its creation by holding the process's `mmap_lock`
//! (which the mapping must take after its check): without the module's write refusal, a
//! writer lands its payload in mappings the check allowed.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use elfsig_fixtures::{GUARD_LIBRARY, GUARD_LIBRARY_LOADED};
use elfsig_guest::harness::{Context, Outcome, Stats, Suite, diagnostic, ensure, read, run, stats};
use elfsig_guest::image::{GUARD_PROBE, LIB_SIGNED, LIB_UNSIGNED};
use elfsig_guest::system;

use crate::unprivileged::{as_user, user_dir};

/// How long each way of mapping races the writer at least: hundreds of attempts and dozens of
/// `dlopen`s under TCG.
const RACE: Duration = Duration::from_secs(2);

/// How long it races at most, until both outcomes were seen (on a loaded debug kernel, 4 s
/// once saw only 4 mappings allowed).
const RACE_AT_MOST: Duration = Duration::from_secs(30);

/// Whether to race on: for [`RACE`] at least, then until `seen` says both outcomes were seen, for
/// [`RACE_AT_MOST`] at most.
fn racing(started: Instant, seen: impl Fn() -> bool) -> bool {
    let elapsed = started.elapsed();
    elapsed < RACE || (elapsed < RACE_AT_MOST && !seen())
}

/// How much anonymous memory the lock holder faults in, holding `mmap_lock` meanwhile.
const LOCK_HELD_BY: usize = 16 << 20;

/// What the payload prints when loaded, where the signed library prints
/// [`GUARD_LIBRARY_LOADED`] (the same length: the payload is the library with that text changed).
const PAYLOAD_LOADED: &[u8] = b"libelfsig-guard PWNED!\n";

pub(crate) fn cases(suite: &mut Suite<'_>) {
    suite.case("a_writer_racing_the_mapping_check_never_gets_its_code_mapped", racing_writer);
}

/// The unsigned library, changed to say [`PAYLOAD_LOADED`] when loaded.
fn payload() -> Result<Vec<u8>, String> {
    let mut bytes = read(format!("{LIB_UNSIGNED}/{GUARD_LIBRARY}"))?;
    let at = bytes
        .windows(GUARD_LIBRARY_LOADED.len())
        .position(|w| w == GUARD_LIBRARY_LOADED)
        .ok_or("the unsigned library does not say it is loaded")?;
    bytes.get_mut(at..at + PAYLOAD_LOADED.len()).ok_or("the library is too short")?.copy_from_slice(PAYLOAD_LOADED);
    Ok(bytes)
}

/// What the race saw.
#[derive(Default)]
struct Tally {
    /// Writes of the payload that landed.
    payloads_written: AtomicU64,
    /// Opens for writing refused (ETXTBSY: the library was mapped, or being checked).
    writes_refused: AtomicU64,
    /// Mappings allowed, whose bytes were then the signed library's throughout.
    mapped: AtomicU64,
    /// Mappings refused (the check found the payload, or a file being written).
    refused: AtomicU64,
    /// `dlopen`s that ran the signed library, and that were refused.
    loaded: AtomicU64,
    dlopen_refused: AtomicU64,
}

impl Tally {
    fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// Until `stop`: rewrites `path` in place, as the attack did, in storms of 100 ms, each followed
/// by a calm of 150 ms that leaves the signed bytes, long enough for a `dlopen` under TCG to
/// find them whole (the storms race the checks, the calms show that signed code still loads).
/// In a storm it opens the file for writing again and again and, each time it may, writes the
/// payload over the start of the file and the signed bytes back, several times, before it
/// closes it: a descriptor opened between a mapping's check and the mapping's creation writes
/// under the mapping for as long as it stays open. The payload is shorter than the signed file,
/// whose length never changes.
fn rewrite(path: &str, signed: &[u8], payload: &[u8], stop: &AtomicBool, tally: &Tally) {
    while !stop.load(Ordering::Relaxed) {
        let storm = Instant::now();
        while storm.elapsed() < Duration::from_millis(100) {
            let file = match File::options().write(true).open(path) {
                Ok(file) => file,
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                    tally.writes_refused.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                // A refusal of another kind is a finding in itself.
                Err(e) => panic!("opening the library for writing: {e}"),
            };
            for _ in 0..4 {
                if file.write_all_at(payload, 0).is_ok() {
                    tally.payloads_written.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_micros(500));
                let _ = file.write_all_at(signed, 0);
            }
        }
        std::thread::sleep(Duration::from_millis(150));
    }
}

/// Maps `path` executable, as ld.so maps a library's text, for a bounded time ([`racing`]): a mapping allowed
/// must hold the signed bytes, now and after the writer had time to change them.
fn map_until(path: &str, signed: &[u8], tally: &Tally) -> Outcome {
    let started = Instant::now();
    while racing(started, || Tally::get(&tally.mapped) > 0 && Tally::get(&tally.refused) > 0) {
        let file = File::open(path).context("open the library")?;
        match system::map(&file, signed.len(), libc::PROT_READ | libc::PROT_EXEC, libc::MAP_PRIVATE) {
            Ok(mapping) => {
                drop(file);
                for _ in 0..2 {
                    ensure(mapping.read_all().get(..signed.len()) == Some(signed), || {
                        "a mapping allowed holds other bytes than the signed library's".into()
                    })?;
                    std::thread::sleep(Duration::from_millis(1));
                }
                tally.mapped.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
                tally.refused.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => return Err(format!("mapping the library executable: {e}")),
        }
        // A file mapping made executable afterwards is refused outright.
        let file = File::open(path).context("open the library")?;
        let mapping = system::map(&file, signed.len(), libc::PROT_READ, libc::MAP_PRIVATE).context("map it")?;
        let changed = mapping.protect(libc::PROT_READ | libc::PROT_EXEC);
        ensure(changed.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EACCES)), || {
            format!("making a file mapping executable by mprotect gave {changed:?}")
        })?;
    }
    Ok(())
}

/// `dlopen`s `path` in a signed program for a bounded time ([`racing`]): the payload never runs.
fn dlopen_until(path: &str, tally: &Tally) -> Outcome {
    let started = Instant::now();
    while racing(started, || Tally::get(&tally.loaded) > 0 && Tally::get(&tally.dlopen_refused) > 0) {
        let out = run(GUARD_PROBE, &["dlopen", path]).context("run guard-probe")?;
        ensure(!out.stdout.starts_with(PAYLOAD_LOADED), || "dlopen ran the payload".into())?;
        match out.status.code() {
            Some(0) if out.stdout.starts_with(GUARD_LIBRARY_LOADED) => tally.loaded.fetch_add(1, Ordering::Relaxed),
            Some(1) => tally.dlopen_refused.fetch_add(1, Ordering::Relaxed),
            _ => {
                return Err(format!(
                    "guard-probe dlopen: {} printing {:?}",
                    out.status,
                    String::from_utf8_lossy(&out.stdout)
                ));
            }
        };
    }
    Ok(())
}

/// Files holding writers off, once the user's processes are gone and their files released.
fn held(stats: &Stats) -> u64 {
    stats.get("mapped_writes_held").copied().unwrap_or(0)
}

fn racing_writer() -> Outcome {
    let dir = user_dir("race")?;
    let library = format!("{dir}/{GUARD_LIBRARY}");
    let signed = read(format!("{LIB_SIGNED}/{GUARD_LIBRARY}"))?;
    let payload = payload()?;
    let before = held(&stats()?);
    std::fs::write(&library, &signed).context("write the library")?;
    crate::unprivileged::own(&library)?;
    let tally = Tally::default();
    as_user(|| {
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let writer = scope.spawn(|| rewrite(&library, &signed, &payload, &stop, &tally));
            let holder = scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    system::hold_mmap_lock(LOCK_HELD_BY)?;
                }
                Ok::<(), std::io::Error>(())
            });
            let mapped = map_until(&library, &signed, &tally);
            let dlopened = mapped.and_then(|()| dlopen_until(&library, &tally));
            stop.store(true, Ordering::Relaxed);
            let wrote = writer.join().map_err(|_| "the writer failed".to_owned());
            let held = holder
                .join()
                .map_err(|_| "the lock holder panicked".to_owned())
                .and_then(|held| held.map_err(|e| format!("holding mmap_lock: {e}")));
            dlopened.and(wrote).and(held)
        })?;
        diagnostic(format_args!(
            "race payloads_written={} writes_refused={} mapped={} refused={} loaded={} dlopen_refused={}",
            Tally::get(&tally.payloads_written),
            Tally::get(&tally.writes_refused),
            Tally::get(&tally.mapped),
            Tally::get(&tally.refused),
            Tally::get(&tally.loaded),
            Tally::get(&tally.dlopen_refused),
        ));
        // The race ran both ways: the payload landed, and was refused; the signed library
        // was mapped and loaded, and kept writers off.
        let ran = [&tally.payloads_written, &tally.writes_refused, &tally.mapped, &tally.refused, &tally.loaded];
        ensure(ran.iter().all(|c| Tally::get(c) > 0), || "the race did not run both ways".into())
    })?;
    // Every refusal of writers was given back with its file: none is left of the user's.
    let after = (0..50).map(|_| {
        std::thread::sleep(Duration::from_millis(100));
        stats().map(|s| held(&s))
    });
    let mut last = 0;
    for now in after {
        last = now?;
        if last <= before {
            return File::options().write(true).open(&library).map(drop).context("open the library for writing");
        }
    }
    Err(format!("{last} files hold writers off after the race, {before} before"))
}
