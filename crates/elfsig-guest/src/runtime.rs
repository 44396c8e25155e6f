//! Code that arrives after the check, tried as the unprivileged user would (uid 1000) with the
//! signed programs already installed. A writer racing the mapping check: one thread rewrites,
//! in place, a library in a directory the user owns (open for writing, write, close), between
//! its signed bytes and an unsigned payload, while the user's programs map it executable. The
//! module refuses writers to a file from before its verdict until the file is released, so a
//! mapping that was allowed holds the signed bytes for as long as it exists, and `dlopen` never
//! runs the payload, whatever the scheduler does.

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use elfsig_fixtures::{GUARD_LIBRARY, GUARD_LIBRARY_LOADED};
use elfsig_guest::harness::{Context, Outcome, Stats, Suite, diagnostic, ensure, read, run, stats};
use elfsig_guest::image::{GUARD_PROBE, LIB_SIGNED, LIB_UNSIGNED};
use elfsig_guest::system;

use crate::unprivileged::{as_user, user_dir};

/// How long each way of mapping races the writer: hundreds of mappings and dozens of
/// `dlopen`s under TCG.
const RACE: Duration = Duration::from_secs(4);

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

/// Until `stop`: rewrites `path` in place, the payload and the signed bytes in turn, in storms of
/// 100 ms, each followed by a calm of 150 ms that leaves the signed bytes (when the last write
/// of the storm landed), long enough for a `dlopen` under TCG to find them whole: the storms
/// race the checks, the calms show that signed code still loads.
fn rewrite(path: &str, signed: &[u8], payload: &[u8], stop: &AtomicBool, tally: &Tally) {
    while !stop.load(Ordering::Relaxed) {
        let storm = Instant::now();
        let mut payload_next = true;
        // Ends with a signed write: the next one would be the payload.
        while storm.elapsed() < Duration::from_millis(100) || !payload_next {
            let bytes = if payload_next { payload } else { signed };
            match File::options().write(true).truncate(true).open(path) {
                Ok(mut file) => {
                    if file.write_all(bytes).is_ok() && payload_next {
                        tally.payloads_written.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                    tally.writes_refused.fetch_add(1, Ordering::Relaxed);
                }
                // A refusal of another kind is a finding in itself.
                Err(e) => panic!("opening the library for writing: {e}"),
            }
            payload_next = !payload_next;
        }
        std::thread::sleep(Duration::from_millis(150));
    }
}

/// Maps `path` executable, as ld.so maps a library's text, until `deadline`: a mapping allowed
/// must hold the signed bytes, now and after the writer had time to change them.
fn map_until(path: &str, signed: &[u8], deadline: Instant, tally: &Tally) -> Outcome {
    while Instant::now() < deadline {
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

/// `dlopen`s `path` in a signed program until `deadline`: the payload never runs.
fn dlopen_until(path: &str, deadline: Instant, tally: &Tally) -> Outcome {
    while Instant::now() < deadline {
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
            let mapped = map_until(&library, &signed, Instant::now() + RACE, &tally);
            let dlopened = mapped.and_then(|()| dlopen_until(&library, Instant::now() + RACE, &tally));
            stop.store(true, Ordering::Relaxed);
            let wrote = writer.join().map_err(|_| "the writer failed".to_owned());
            dlopened.and(wrote)
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
