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
//!
//! Memory made executable at run time (W^X): `guard-probe code WAY` writes machine code into
//! memory one way after another, as a JIT or an exploit in a signed interpreter would, and runs
//! it. Signed as it is, every way is refused and counted (`needs_jit`); signed with the `jit`
//! entitlement, the same program runs its code every way but one: no one makes a file mapping
//! executable after the fact. A program that asks for an executable stack is refused alike.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use elfsig_fixtures::{GUARD_LIBRARY, GUARD_LIBRARY_LOADED};
use elfsig_guest::harness::{
    Context, Outcome, Stats, Suite, copy_exec, counters_grew, diagnostic, ensure, grew, kernel_log, read, refused, run,
    runs, stats, wait_for_log_budget, write_control, write_exec,
};
use elfsig_guest::image::{
    CERT, ELFSIG, GUARD_PROBE, HELLO, HELLO_OUTPUT, HELLO_UNSIGNED, KEY, LIB_SIGNED, LIB_UNSIGNED, MODULE, STRACE,
};
use elfsig_guest::system;

use crate::guard_control;
use crate::mapping_checks::library;
use crate::unprivileged::{as_user, audit, audited_process, own, user_dir};

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
    suite.case("code_made_at_run_time_runs_only_with_the_jit_entitlement", code_made_at_run_time);
    suite.case("an_executable_stack_needs_the_jit_entitlement", executable_stack);
    suite.case("a_writable_and_executable_segment_needs_the_jit_entitlement", writable_executable_segment);
    suite.case("permissive_mode_lists_programs_that_would_need_jit", permissive_jit);
    suite.case("runtime_off_lets_programs_make_memory_executable", runtime_off);
    suite.case("process_memory_is_reached_only_with_the_debugger_entitlement", injection);
    suite.case("strace_traces_only_when_signed_with_the_debugger_entitlement", strace);
}

/// A process whose program ran before the guard was attached has no record, and nothing is
/// known of it; unless the initramfs loaded the module (`trust_initramfs`) and attached the
/// guard: its programs are entitled to nothing, and initramfs-tools' hooks attach the guard
/// while udevd runs (kmod/boot). This suite's own process is one of the initramfs's programs,
/// which ran before any guard. Run with the guard detached; leaves it so.
pub(crate) fn before_the_guard_case(suite: &mut Suite<'_>) {
    const UNSIGNED_ON_TMPFS: &str = "/tmp/hello-unsigned-exec-fails";
    suite.case("programs_that_ran_before_the_guard_are_bound_once_the_initramfs_loaded_the_module", || {
        let executable = || system::map_anonymous(4096, libc::PROT_READ | libc::PROT_EXEC).map(drop);
        let reload = |params: &str| -> Outcome {
            // Released (an error when it was not attached, which the checks below tell).
            let _ = write_control("guard", "release");
            elfsig_guest::harness::unload_when_idle("elfsig")?;
            system::load_module(std::path::Path::new(MODULE), params).context(&format!("load with {params:?}"))
        };
        // Loaded by hand: the rules leave this process alone.
        let unknown = guard_control::attach().map(|()| executable());
        let bound = reload("trust_initramfs=1").and_then(|()| {
            guard_control::attach()?;
            let before = stats()?;
            let bound = executable();
            // An exec that fails (an unsigned program, refused after the exec began) leaves
            // the process running what it ran, bound as before. Not the initramfs's own copy,
            // which the module trusts now: one on a tmpfs, refused to a child first, so that
            // this process is never replaced.
            std::fs::copy(HELLO_UNSIGNED, UNSIGNED_ON_TMPFS).context(UNSIGNED_ON_TMPFS)?;
            refused(UNSIGNED_ON_TMPFS)?;
            let exec =
                std::os::unix::process::CommandExt::exec(&mut std::process::Command::new(UNSIGNED_ON_TMPFS));
            let _ = std::fs::remove_file(UNSIGNED_ON_TMPFS);
            let after_exec = executable();
            Ok(([bound, after_exec], exec, grew(&before, &stats()?, "memory_denied")))
        });
        reload("")?;
        let unknown = unknown?;
        ensure(unknown.is_ok(), || format!("loaded by hand, anonymous executable memory gave {unknown:?}"))?;
        let (bound, exec, refused) = bound?;
        ensure(exec.raw_os_error() == Some(libc::EACCES), || format!("the unsigned program's exec gave {exec:?}"))?;
        for (when, bound) in ["first", "after a failed exec"].iter().zip(&bound) {
            ensure(bound.as_ref().is_err_and(|e| matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM))), || {
                format!("loaded by the initramfs, anonymous executable memory ({when}) gave {bound:?}, expected a refusal")
            })?;
        }
        ensure(refused == 2, || format!("memory_denied grew by {refused}, expected 2"))
    });
}

/// The ways `guard-probe inject` reaches a process's memory (a child's, or its own through
/// `/proc`).
const INJECTIONS: [&str; 5] = ["ptrace", "traceme", "vm-writev", "proc-mem", "proc-self-mem"];

/// The ways `guard-probe code` makes code at run time, and whether the probe entitled to `jit`
/// runs it: a file mapping made executable once it was not is refused to every program.
const WAYS: [(&str, bool); 10] = [
    ("anon-wx", true),
    ("anon-w-then-x", true),
    ("shared-wx", true),
    ("shared-w-then-x", true),
    ("implied", true),
    ("implied-brk", true),
    ("stack", true),
    ("uffd", true),
    ("text-wx", true),
    ("text-w-then-x", false),
];

/// Signs a copy of `from` at `to` with the test key and `--entitle entitlement`, for the user.
fn entitled(from: &str, to: &str, entitlement: &str) -> Outcome {
    let out = run(ELFSIG, &["-q", "sign", "--key", KEY, "--cert", CERT, "--entitle", entitlement, "-o", to, from])
        .context("run elfsig sign")?;
    ensure(out.status.success(), || format!("elfsig sign --entitle {entitlement}: {}", shown(&out.stderr)))?;
    own(to)
}

fn shown(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim().to_owned()
}

/// `probe code WAY` as it is now: `Ok(true)` when the code ran, `Ok(false)` when it was refused.
fn code_ran(probe: &str, way: &str) -> Result<bool, String> {
    probe_ran(probe, &["code", way, &library(LIB_SIGNED)], way)
}

/// `probe ARGS`, which tries `way`: `Ok(true)` when it ran, `Ok(false)` when it was refused.
fn probe_ran(probe: &str, args: &[&str], way: &str) -> Result<bool, String> {
    let out = run(probe, args).context(&format!("run {probe} {args:?}"))?;
    let stdout = shown(&out.stdout);
    match out.status.code() {
        Some(0) if stdout.ends_with(&format!("{way}: ran")) => Ok(true),
        Some(1) if stdout.contains(&format!("{way}: refused: ")) => Ok(false),
        _ => Err(format!("{probe} {args:?}: {} printing {stdout:?} ({})", out.status, shown(&out.stderr))),
    }
}

/// The probe as signed, and a copy entitled to `entitlement`, in a directory of the user's.
fn probes(case: &str, entitlement: &str) -> Result<(String, String), String> {
    let dir = user_dir(case)?;
    let (plain, entitled_copy) = (format!("{dir}/plain"), format!("{dir}/{entitlement}"));
    copy_exec(GUARD_PROBE, &plain)?;
    own(&plain)?;
    entitled(GUARD_PROBE, &entitled_copy, entitlement)?;
    Ok((plain, entitled_copy))
}

fn code_made_at_run_time() -> Outcome {
    let (plain, jit) = probes("jit", "jit")?;
    let daemon = audit()?;
    let before = stats()?;
    as_user(|| {
        for (way, entitled_runs) in WAYS {
            ensure(!code_ran(&plain, way)?, || format!("{way}: code made at run time ran without jit"))?;
            ensure(code_ran(&jit, way)? == entitled_runs, || {
                format!("{way}: the program entitled to jit {}", if entitled_runs { "was refused" } else { "ran" })
            })?;
        }
        Ok(())
    })?;
    let after = stats()?;
    // Every way but the last was refused for want of jit (some more than once: the probe's
    // printf allocates under READ_IMPLIES_EXEC); the last one for making a file mapping
    // executable, to both probes.
    let ways = WAYS.len() as u64 - 1;
    ensure(grew(&before, &after, "needs_jit") >= ways && grew(&before, &after, "memory_denied") >= ways, || {
        format!(
            "needs_jit grew by {}, memory_denied by {}, expected {ways} at least",
            grew(&before, &after, "needs_jit"),
            grew(&before, &after, "memory_denied")
        )
    })?;
    ensure(grew(&before, &after, "made_executable") == 2, || "text-w-then-x was not refused twice".into())?;
    audited_process(&daemon, "elfsig_memory", "needs_jit", "plain")
}

/// `PT_GNU_STACK`, `PT_LOAD`, and `PF_X`, `PF_W`.
const PT_GNU_STACK: u64 = 0x6474_e551;
const PT_LOAD: u64 = 1;
const PF_X: u32 = 1;
const PF_W: u32 = 2;

/// A copy of `bytes`, an ELF64 little-endian program, whose first program header of type
/// `p_type` with all of `having` among its flags gets `added` too.
fn with_flags(bytes: &[u8], p_type: u64, having: u32, added: u32) -> Result<Vec<u8>, String> {
    let mut out = bytes.to_vec();
    let field = |at: usize, len: usize| -> Result<u64, String> {
        let mut word = [0u8; 8];
        word[..len].copy_from_slice(bytes.get(at..at + len).ok_or("a truncated ELF header")?);
        Ok(u64::from_le_bytes(word))
    };
    let (phoff, entry, count) = (field(32, 8)? as usize, field(54, 2)? as usize, field(56, 2)? as usize);
    for index in 0..count {
        let at = phoff + index * entry;
        let flags = field(at + 4, 4)? as u32;
        if field(at, 4)? == p_type && flags & having == having {
            out.get_mut(at + 4..at + 8)
                .ok_or("a truncated program header")?
                .copy_from_slice(&(flags | added).to_le_bytes());
            return Ok(out);
        }
    }
    Err(format!("no program header of type {p_type:#x} with flags {having:#x}"))
}

/// The probe changed to ask exec for memory writable and executable (`changed` makes the copy),
/// signed as it is and with `jit`: the one is refused at its exec, cleanly, the other runs.
fn exec_needs_jit(case: &str, changed: impl FnOnce(&[u8]) -> Result<Vec<u8>, String>) -> Outcome {
    let dir = user_dir(case)?;
    let (plain, jit) = (format!("{dir}/plain"), format!("{dir}/jit"));
    write_exec(&plain, &changed(&read(GUARD_PROBE)?)?)?;
    // Changed, the copy must be signed again: as it is, then with jit.
    let out = run(ELFSIG, &["-q", "sign", "--key", KEY, "--cert", CERT, &plain]).context("run elfsig sign")?;
    ensure(out.status.success(), || format!("elfsig sign: {}", shown(&out.stderr)))?;
    own(&plain)?;
    entitled(&plain, &jit, "jit")?;
    let before = stats()?;
    as_user(|| {
        refused(&plain)?;
        runs(&jit, &["hello"], Some(b"hello\n"))
    })?;
    let after = stats()?;
    counters_grew(&before, &after, &[("needs_jit", 1), ("denied", 1)])
}

fn executable_stack() -> Outcome {
    exec_needs_jit("execstack", |probe| with_flags(probe, PT_GNU_STACK, 0, PF_X))
}

/// binfmt_elf would map the segment writable and executable past the point of no return, where
/// the guard's refusal kills the process: the exec is refused before, with its reason.
fn writable_executable_segment() -> Outcome {
    exec_needs_jit("wx-segment", |probe| with_flags(probe, PT_LOAD, PF_X, PF_W))
}

fn permissive_jit() -> Outcome {
    let (plain, _) = probes("jit-permissive", "jit")?;
    wait_for_log_budget();
    write_control("mode", "permissive").context("set permissive")?;
    let before = stats()?;
    let ran =
        as_user(|| ensure(code_ran(&plain, "anon-wx")?, || "permissive mode refused code made at run time".into()));
    let after = stats()?;
    write_control("mode", "enforce").context("set enforce")?;
    ran?;
    counters_grew(&before, &after, &[("needs_jit", 1), ("memory_denied", 0)])?;
    let line = "would refuse (permissive) executable memory in plain (pid ";
    let log = kernel_log()?;
    let said = "needs_jit (anonymous memory)";
    ensure(log.iter().any(|l| l.contains(line) && l.ends_with(said)), || {
        format!("no {line:?} ending {said:?} in the kernel log")
    })
}

fn runtime_off() -> Outcome {
    let (plain, _) = probes("jit-off", "jit")?;
    ensure(read("/sys/kernel/security/elfsig/runtime")? == b"enforce\n", || {
        "runtime is not enforce by default".into()
    })?;
    for word in ["of", "enforce off", "1", "Enforce"] {
        let written = write_control("runtime", word);
        ensure(written.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EINVAL)), || {
            format!("writing {word:?} to runtime gave {written:?}")
        })?;
    }
    ensure(read("/sys/kernel/security/elfsig/runtime")? == b"enforce\n", || {
        "runtime changed after words it refused".into()
    })?;
    write_control("runtime", "off").context("set runtime off")?;
    let ran = as_user(|| ensure(code_ran(&plain, "anon-w-then-x")?, || "runtime off refused it".into()));
    write_control("runtime", "enforce").context("set runtime enforce")?;
    ran?;
    as_user(|| ensure(!code_ran(&plain, "anon-w-then-x")?, || "runtime enforce allowed it".into()))
}

/// A real debugger: Debian's strace, signed as its package would be, cannot trace a program (it
/// says why and fails, and the program does not run under it); a copy signed with `debugger`
/// traces it, and the program runs.
fn strace() -> Outcome {
    let dir = user_dir("strace")?;
    let entitled_strace = format!("{dir}/strace");
    entitled(STRACE, &entitled_strace, "debugger")?;
    let before = stats()?;
    as_user(|| {
        let out = run(STRACE, &["-o", "/dev/null", HELLO]).context("run strace")?;
        ensure(!out.status.success() && out.stdout.is_empty(), || {
            format!("strace without the entitlement: {}, said {:?}", out.status, shown(&out.stderr))
        })?;
        runs(&entitled_strace, &["-o", "/dev/null", HELLO], Some(HELLO_OUTPUT))
    })?;
    let after = stats()?;
    ensure(grew(&before, &after, "needs_debugger") >= 1, || "needs_debugger did not grow".into())
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

fn injection() -> Outcome {
    let (plain, debugger) = probes("debugger", "debugger")?;
    let daemon = audit()?;
    let before = stats()?;
    as_user(|| {
        for way in INJECTIONS {
            let args = ["inject", way];
            ensure(!probe_ran(&plain, &args, way)?, || format!("{way}: allowed without the debugger entitlement"))?;
            ensure(probe_ran(&debugger, &args, way)?, || {
                format!("{way}: refused to the program entitled to debugger")
            })?;
        }
        Ok(())
    })?;
    let after = stats()?;
    let ways = INJECTIONS.len() as u64;
    ensure(grew(&before, &after, "needs_debugger") == ways && grew(&before, &after, "ptrace_denied") == ways, || {
        format!(
            "needs_debugger grew by {}, ptrace_denied by {}, expected {ways}",
            grew(&before, &after, "needs_debugger"),
            grew(&before, &after, "ptrace_denied")
        )
    })?;
    audited_process(&daemon, "elfsig_ptrace", "needs_debugger", "plain")
}
