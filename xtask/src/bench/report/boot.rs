//! report.md's `boot` suite: its targets (elfsig's boot within 5% of baseline, and ahead of
//! IMA's), its section (boot and workload times, what the module verified), and what the
//! difference is made of.

use std::fmt::Write as _;

use super::verdict::met;
use crate::bench::boot::{self, CONFIGS, GOAL, SUITE};
use crate::bench::native::Native;
use crate::bench::results::{Results, mean_sd};

/// The times measured: case, what the report calls it, unit.
const TIMES: [(&str, &str, &str); 8] = [
    ("boot-to-default-target", "boot to the default target", "s"),
    ("kernel-and-initramfs", "of which kernel and initramfs", "s"),
    ("initramfs-end", "&nbsp;&nbsp;the initramfs's last script, from the kernel's start (`/proc/uptime`)", "s"),
    ("initramfs-idle", "&nbsp;&nbsp;&nbsp;&nbsp;of which the CPU was idle (waiting on timers and devices)", "s"),
    (
        "initramfs-scripts",
        "&nbsp;&nbsp;&nbsp;&nbsp;of which from the bench's init-top script on (elfsig's own runs before it, and starts loading the module and the guard in the background, which init-top's end waits for)",
        "s",
    ),
    ("initramfs-scripts-idle", "&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;of which the CPU was idle", "s"),
    ("systemd-to-default-target", "of which systemd to the default target", "s"),
    ("workload", "workload, right after boot", "ms"),
];

/// Within `limit` of the reference, from a difference and its 95% interval (fractions): met
/// when the whole interval is within the limit, not met when the whole interval is above it,
/// inconclusive otherwise (an interval too wide to tell, or none).
fn within(diff: f64, interval: f64, limit: f64) -> &'static str {
    if interval.is_nan() {
        "**inconclusive**: one run, no interval"
    } else if diff + interval <= limit {
        met(true)
    } else if diff - interval > limit {
        met(false)
    } else {
        "**inconclusive**: the interval reaches past 5%; more runs, or a quieter machine, would tell"
    }
}

/// Ahead of the reference (a negative difference): met when below it by more than the
/// interval, not met when above it by more than the interval, inconclusive otherwise.
fn ahead(diff: f64, interval: f64) -> &'static str {
    if interval.is_nan() {
        "**inconclusive**: one run, no interval"
    } else if diff + interval < 0.0 {
        met(true)
    } else if diff - interval > 0.0 {
        met(false)
    } else {
        "**inconclusive**: not told apart from IMA's within the interval"
    }
}

fn difference(results: &Results, case: &str, config: &str, reference: &str) -> (f64, f64) {
    results.paired_difference(SUITE, case, config, reference).unwrap_or((f64::NAN, f64::NAN))
}

/// The rows of the targets table.
pub(super) fn targets(md: &mut String, results: &Results) {
    if !results.has(SUITE) {
        return;
    }
    let results = &boot::without_stalled(results);
    let against_baseline = difference(results, "boot-to-default-target", "elfsig", "baseline");
    let against_ima = difference(results, "boot-to-default-target", "elfsig", "ima");
    for (target, (diff, interval), against, verdict) in [
        (
            "the signed Debian system's boot to its default target within 5% of baseline",
            against_baseline,
            "",
            within(against_baseline.0, against_baseline.1, GOAL),
        ),
        ("elfsig's boot ahead of IMA appraisal's", against_ima, " against IMA", ahead(against_ima.0, against_ima.1)),
    ] {
        let _ =
            writeln!(md, "| boot: {target} | {:+.1}% ± {:.1}%{against} | {verdict} |", diff * 100.0, interval * 100.0);
    }
}

fn mean(results: &Results, case: &str, config: &str) -> f64 {
    mean_sd(&results.values(SUITE, case, config)).0
}

/// The section; `accel` is what the VMs ran on.
pub(super) fn section(md: &mut String, all: &Results, native: &Native, accel: &str) {
    if !all.has(SUITE) {
        return;
    }
    let results = &boot::without_stalled(all);
    let runs = results.values(SUITE, "boot-to-default-target", "baseline").len();
    let _ = writeln!(
        md,
        "## boot: the signed Debian system, booted\n\n\
         The Debian 13 system of `cargo xtask distro` (systemd, udev, python3, sudo, ssh, elfsig and \
         its module from their packages, no compiler, ...), every ELF file signed by `elfsig sign --recursive`, and every ELF and executable \
         file by evmctl for IMA, one image booted on its own kernel (Debian's 7.2) {runs} times in each \
         configuration, interleaved (two VMs of 1 vCPU side by \
         side, each booting all three in rotating order per run): `baseline` (`elfsig=off`: the module not \
         loaded), `elfsig` (loaded from the initramfs, enforcing, locked, its mapping guard attached: every \
         program and library verified at first use), `ima` (`elfsig=off`; IMA's key and policy loaded from the \
         initramfs: `appraise func=BPRM_CHECK` and `func=MMAP_CHECK`, `appraise_type=imasig`, on the image's \
         file system; executed scripts are appraised too, which elfsig does not check). Boot times are \
         systemd's (`systemd-analyze`'s: from the kernel's start; the program that measures starts once the \
         boot has ended: only the shell and `systemctl` that wait for the end run within it). The workload runs right after: what the boot did not run is met for the first time. \
         Mean ± sd; against baseline, the mean of each run's ratio ± its 95% interval (Student's t).\n"
    );
    for (run, config, seconds, median) in boot::stalled(all) {
        let _ = writeln!(
            md,
            "Left out: run {run}, in which `{config}` booted in {seconds:.1} s, more than twice its median boot \
             ({median:.1} s): a stall of the emulated machine, as seen on this shared host (rare enough to leave \
             out: at most a quarter of the runs are). Its other configurations are left out with it, so that \
             the runs stay paired; results.csv has them all.\n"
        );
    }
    md.push_str("| measure | baseline | elfsig | ima |\n|---|---:|---:|---:|\n");
    let workload: Vec<(String, String, &str)> = elfsig_guest::debian::WORKLOAD
        .iter()
        .map(|(id, name, _)| (format!("workload-{id}"), format!("&nbsp;&nbsp;{name}"), "ms"))
        .collect();
    let times = TIMES.iter().map(|(case, label, unit)| ((*case).to_owned(), (*label).to_owned(), *unit));
    for (case, label, unit) in times.chain(workload) {
        // A smoke run times the workload's first case only.
        if CONFIGS.into_iter().all(|config| results.values(SUITE, &case, config).is_empty()) {
            continue;
        }
        let cells: Vec<String> = CONFIGS
            .into_iter()
            .map(|config| {
                let (m, sd) = mean_sd(&results.values(SUITE, &case, config));
                let digits = if unit == "s" { 2 } else { 0 };
                if config == "baseline" {
                    format!("{m:.digits$} ± {sd:.digits$} {unit}")
                } else {
                    let (diff, interval) = difference(results, &case, config, "baseline");
                    format!("{m:.digits$} ± {sd:.digits$} {unit} ({:+.1}% ± {:.1}%)", diff * 100.0, interval * 100.0)
                }
            })
            .collect();
        let _ = writeln!(md, "| {label} | {} |", cells.join(" | "));
    }

    let at = |case: &str, when: &str| mean(results, &format!("{case}-{when}"), "elfsig");
    md.push_str("\nWhat the module did (`elfsig`, mean over the runs):\n\n");
    md.push_str(
        "| | files verified | distinct files | checks of the initramfs's own files, trusted | MB hashed \
         | of which in the page cache, not copied out | ms verifying \
         | exec checks (programs and their ELF interpreters) | executable mappings checked \
         |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (when, label) in [
        ("in-initramfs", "by the initramfs's end"),
        ("at-boot", "by the default target"),
        ("after-workload", "after the workload"),
    ] {
        if results.values(SUITE, &format!("files-verified-{when}"), "elfsig").is_empty() {
            continue;
        }
        let _ = writeln!(
            md,
            "| {label} | {:.0} | {:.0} | {:.0} | {:.1} | {:.1} | {:.0} | {:.0} | {:.0} |",
            at("files-verified", when),
            at("distinct-files-cached", when),
            at("initramfs-files-trusted", when),
            at("bytes-hashed", when) / 1e6,
            at("bytes-hashed-in-cache", when) / 1e6,
            at("verify-time", when),
            at("execs-checked", when),
            at("mappings-checked", when)
        );
    }
    let peak = results.values(SUITE, "module-memory-peak", "elfsig").into_iter().fold(0.0, f64::max);
    let _ = writeln!(md, "\nThe module's memory for verification peaked at {:.0} KiB.\n", peak / 1024.0);

    breakdown(md, results);
    why(md, results, native, accel);
    upgrade(md, results);
    containers(md, results);
}

/// The steps of loading elfsig, as the initramfs takes them, measured after `baseline`'s boot:
/// case, what the report calls it.
pub const LOADING: [(&str, &str); 3] = [
    (
        "load-module",
        "loading the module (`modprobe elfsig`: the kernel checks its signature, reads its BTF, runs its init)",
    ),
    ("load-policy", "loading its signed policy"),
    (
        "attach-guard",
        "attaching the mapping guard (`elfsig-guard`: finding the hooks in the kernel's BTF, the BPF verifier, \
         attaching; not its own verification, which the boot does not do: the initramfs's copy is trusted)",
    ),
];

/// The part of loading the module that is the kernel's: the first RSA signature it checks after
/// boot (the module's certificates' own, at its init) makes it build the algorithm and test it.
pub const MODULE_PARTS: [(&str, &str); 1] = [(
    "load-module-crypto-self-test",
    "the kernel's self-test of the RSA signature algorithm it builds at the first RSA signature checked \
     since boot (the module's certificates' own): RSA/SHA-512, which it does not test (RSA/SHA-256, what \
     elfsig signed with until December 2026, it tests with an RSA private-key operation: 67 ms; IMA, whose \
     signatures are over its file hash, SHA-256, pays that at its first appraisal)",
)];

/// The parts of attaching the guard (`elfsig-guard --verbose`'s steps): case, what the report
/// calls it.
pub const GUARD_PARTS: [(&str, &str); 3] = [
    ("attach-guard-btf", "reading BTF (vmlinux's and the module's, for the hooks' and kfuncs' IDs)"),
    (
        "attach-guard-verifier",
        "the BPF verifier (the guard's programs, and the kfunc filter's checks before and after the hand-over)",
    ),
    ("attach-guard-attach", "attaching (a trampoline on each of the guard's hooks)"),
];

/// Cases and what the report calls them.
type Labelled = [(&'static str, &'static str)];

/// The steps of loading whose parts are measured too: the step, its parts, what the rest is.
const STEP_PARTS: [(&str, &Labelled, &str); 2] = [
    (
        "load-module",
        &MODULE_PARTS,
        "the rest (modprobe, the kernel checking the module's signature and placing it, its init)",
    ),
    ("attach-guard", &GUARD_PARTS, "the rest (starting `elfsig-guard`, handing the links to the module, its canary)"),
];

/// The rows of the breakdown: what the report calls them, and milliseconds.
pub fn breakdown_rows(results: &Results) -> Option<Vec<(String, f64)>> {
    let elfsig = |case: &str| results.values(SUITE, case, "elfsig");
    if elfsig("verify-time-in-initramfs").is_empty() || elfsig("hash-time-at-boot").is_empty() {
        return None;
    }
    let at = |case: &str, when: &str| mean(results, &format!("{case}-{when}"), "elfsig");
    let boot = |config: &str| mean(results, "boot-to-default-target", config) * 1000.0;
    let mut rows =
        vec![("the boot's difference, `elfsig` less `baseline`".to_owned(), boot("elfsig") - boot("baseline"))];
    let mut accounted = 0.0;
    for (case, label) in LOADING {
        let ms = mean(results, case, "baseline");
        accounted += ms;
        rows.push((label.to_owned(), ms));
        if let Some((_, parts, rest)) = STEP_PARTS.iter().find(|(step, ..)| *step == case) {
            // A part an older run did not measure is left out, not shown as nothing.
            let mut measured = 0.0;
            for (part, label) in parts.iter() {
                if !results.values(SUITE, part, "baseline").is_empty() {
                    let value = mean(results, part, "baseline");
                    measured += value;
                    rows.push((format!("&nbsp;&nbsp;of which {label}"), value));
                }
            }
            rows.push((format!("&nbsp;&nbsp;of which {rest}"), ms - measured));
        }
    }
    let part = |case: &str, when: &str| match when {
        "after" => at(case, "at-boot") - at(case, "in-initramfs"),
        _ => at(case, when),
    };
    for (when, label) in [("in-initramfs", "in the initramfs"), ("after", "after it, until the default target")] {
        let verify = part("verify-time", when);
        let (hash, signature) = (part("hash-time", when), part("signature-time", when));
        accounted += verify;
        rows.push((
            format!(
                "verifying {label}: {:.0} files, {:.1} MB hashed",
                part("files-verified", when),
                part("bytes-hashed", when) / 1e6
            ),
            verify,
        ));
        rows.push(("&nbsp;&nbsp;of which SHA-256".to_owned(), hash));
        rows.push(("&nbsp;&nbsp;of which the signatures (PKCS#7, the keyrings)".to_owned(), signature));
        rows.push((
            "&nbsp;&nbsp;of which the rest (reading the file, parsing, revocation lists)".to_owned(),
            verify - hash - signature,
        ));
    }
    let difference = rows[0].1;
    rows.push(("the difference less the parts above".to_owned(), difference - accounted));
    Some(rows)
}

/// Where elfsig's extra boot goes, part by part.
fn breakdown(md: &mut String, results: &Results) {
    let Some(rows) = breakdown_rows(results) else {
        return;
    };
    md.push_str(
        "### Where elfsig's boot goes

\
         The boot's difference, part by part (means over the runs). Loading elfsig is measured in `baseline`, \
         once its boot is measured: the steps the initramfs takes, one after the other, nothing else running. \
         Verifying is the module's own count, from each verification's start to its end, summed over the files \
         it verified and split at the initramfs's end by a copy of its counters made there with shell builtins: \
         with one vCPU, a verification preempted while the boot runs other things counts their time too, so \
         these rows can exceed the verifications' own work. The boot is not all work either: it waits on timers \
         and devices, and work added during a wait does not lengthen it (the initramfs loads elfsig in the \
         background, the guard at idle priority, where udev leaves the CPU idle: the idle rows above show what \
         it took). So the parts need not add up to the \
         difference: the last row is what is left, negative when they exceed it. The first exec's breakdown \
         (coreutils section, one program at a time, nothing else running) gives verification's own cost.\n\n\
         | part | ms | of the difference |\n|---|---:|---:|\n",
    );
    let difference = rows[0].1;
    for (label, ms) in &rows {
        let _ = writeln!(md, "| {label} | {ms:.1} | {:.0}% |", ms / difference * 100.0);
    }
    md.push('\n');
}

/// What the boots that upgrade time of podman after the upgrade: case, what the report calls it.
const CONTAINER_CASES: [(&str, &str); 4] = [
    ("containers-load", "`podman load` of the signed image"),
    ("container-start-first", "the first `podman run --rm IMAGE true`"),
    ("container-start", "`podman run --rm IMAGE true`, the next ones (mean)"),
    ("container-workload", "a short workload in a container"),
];

/// Containers' start and a short workload in one, with and without elfsig, when the runs
/// measured them.
fn containers(md: &mut String, results: &Results) {
    let runs = results.values(SUITE, "container-start", "baseline").len();
    if runs == 0 {
        return;
    }
    let _ = writeln!(
        md,
        "### Containers, with and without elfsig\n\n\
         After upgrading, {runs} runs of `baseline` and `elfsig` each loaded the signed image the system \
         holds (Debian 13's minimal base, one layer, signed by `elfsig oci sign`) into podman's storage, \
         started containers of it as root with crun (`podman run --rm --network none IMAGE true`: the first \
         meets the image's files for the first time, the next four find the module's verdicts cached), and \
         ran a short workload in one (a pipeline over /usr/bin, perl's XS modules, tar and gzip). Mean ± sd; \
         `elfsig` against `baseline`, the mean of each run's ratio ± its 95% interval.\n\n\
         | step | baseline | elfsig |\n|---|---:|---:|"
    );
    table(md, results, &CONTAINER_CASES, 2);
    md.push('\n');
}

/// Rows of `cases` in `baseline` and `elfsig`, in seconds to `decimals` places, with elfsig's
/// difference.
fn table(md: &mut String, results: &Results, cases: &[(&str, &str)], decimals: usize) {
    for (case, label) in cases {
        let (base, base_sd) = mean_sd(&results.values(SUITE, case, "baseline"));
        let (with, with_sd) = mean_sd(&results.values(SUITE, case, "elfsig"));
        let (diff, interval) = difference(results, case, "elfsig", "baseline");
        let _ = writeln!(
            md,
            "| {label} | {:.decimals$} ± {:.decimals$} s | {:.decimals$} ± {:.decimals$} s ({:+.1}% ± {:.1}%) |",
            base / 1000.0,
            base_sd / 1000.0,
            with / 1000.0,
            with_sd / 1000.0,
            diff * 100.0,
            interval * 100.0
        );
    }
}

/// The upgrade's steps: case, what the report calls it.
const UPGRADE_STEPS: [(&str, &str); 4] = [
    ("upgrade-update", "`apt-get update`"),
    ("upgrade-upgrade", "`apt-get upgrade`"),
    ("upgrade-install", "`apt-get install openssh-server`"),
    ("upgrade", "the whole upgrade"),
];

/// The upgrade from the signed archive, with and without elfsig, when the runs measured it.
fn upgrade(md: &mut String, results: &Results) {
    let runs = results.values(SUITE, "upgrade", "baseline").len();
    if runs == 0 {
        return;
    }
    let _ = writeln!(
        md,
        "### Keeping the system up to date, with and without elfsig\n\n\
         After the workload, {runs} runs of `baseline` and `elfsig` each upgraded the system from the signed \
         archive the image holds (the day's trixie-updates and trixie-security, kmod rebuilt with a higher \
         version so that there is always an upgrade, whose trigger rebuilds the initramfs, and openssh-server \
         installed: its postinst runs `ssh-keygen`). `baseline` is a host without elfsig: the module not \
         loaded, and the package gate taken out first (its APT hook removed, dpkg's `no-debsig` back). \
         `elfsig` is a host with all of it: the gate verifying every package before dpkg unpacks it (APT's \
         hook, then dpkg's verification slot: twice), and the module verifying every program and library the \
         upgrade runs. `ima` does not upgrade: the packages carry no IMA signature, so IMA would refuse what \
         they install. Mean ± sd; `elfsig` against `baseline`, the mean of each run's ratio ± its 95% \
         interval.\n\n\
         | step | baseline | elfsig |\n|---|---:|---:|"
    );
    table(md, results, &UPGRADE_STEPS, 1);
    let during = |case: &str| {
        mean(results, &format!("{case}-after-upgrade"), "elfsig")
            - mean(results, &format!("{case}-after-workload"), "elfsig")
    };
    let _ = writeln!(
        md,
        "\nDuring the upgrade the module verified {:.0} files ({:.1} MB hashed, {:.0} ms verifying) and checked \
         {:.0} execs and {:.0} executable mappings; nothing was refused.\n",
        during("files-verified"),
        during("bytes-hashed") / 1e6,
        during("verify-time"),
        during("execs-checked"),
        during("mappings-checked")
    );
}

/// What elfsig's difference from baseline is made of: the measured numbers side by side, and
/// the same work projected onto this host's CPU.
fn why(md: &mut String, results: &Results, native: &Native, accel: &str) {
    let boot = mean(results, "boot-to-default-target", "baseline");
    let (diff, interval) = difference(results, "boot-to-default-target", "elfsig", "baseline");
    let verifying = mean(results, "verify-time-at-boot", "elfsig") / 1000.0;
    let bytes = mean(results, "bytes-hashed-at-boot", "elfsig");
    let files = mean(results, "files-verified-at-boot", "elfsig");
    let projected_ms = bytes / (native.sha256_mbps * 1e6) * 1000.0 + files * native.rsa3072_verify_us / 1000.0;
    let emulated =
        if accel == "tcg" { " Under TCG the guest's SHA-256 instructions are emulated in software." } else { "" };
    let _ = writeln!(
        md,
        "Where elfsig's difference comes from. The boot took {:.2} s ({:+.1}% ± {:.1}%) longer than \
         baseline's. By then the module had verified {files:.0} files and hashed {:.1} MB; its verifications \
         took {verifying:.2} s, each counted from start to end (reading the file, hashing it, checking the \
         signature) and summed over processes, so they may overlap each other and the rest of the boot: \
         {:.0} MB/s, everything included, against {:.0} MB/s for SHA-256 natively on this host.{emulated} On \
         this host's CPU the same work, {:.1} MB hashed and {files:.0} RSA-3072 checks at {:.0} µs, takes about \
         {projected_ms:.0} ms even if none of it overlapped: within 5% of any boot longer than {:.2} s. In the \
         `ima` configuration IMA appraises the root file system's programs, libraries and executed scripts, \
         hashing each whole file with the same kernel SHA-256; elfsig besides loads its module and attaches \
         its BPF guard in the initramfs (\"kernel and initramfs\" above), whose own programs it trusts as \
         IMA does (`trust_initramfs`).\n",
        boot * diff,
        diff * 100.0,
        interval * 100.0,
        bytes / 1e6,
        bytes / 1e6 / verifying,
        native.sha256_mbps,
        bytes / 1e6,
        native.rsa3072_verify_us,
        projected_ms / 1000.0 / GOAL
    );
}

#[cfg(test)]
mod tests {
    use super::{ahead, breakdown_rows, within};
    use crate::bench::native::Native;
    use crate::bench::report::{Meta, markdown};
    use crate::bench::results::{Record, Results};

    fn record(case: &str, config: &str, run: usize, value: f64) -> Record {
        Record { suite: "boot".into(), case: case.into(), config: config.into(), run, value, unit: "s".into() }
    }

    /// The breakdown adds up: what the parts do not account for is the difference less them,
    /// and the verifications split at the initramfs's end.
    #[test]
    fn the_breakdown_accounts_for_the_difference() {
        let mut records = Vec::new();
        for run in 0..2 {
            records.push(record("boot-to-default-target", "baseline", run, 10.0));
            records.push(record("boot-to-default-target", "elfsig", run, 11.0));
            for (case, ms) in [
                ("load-module", 100.0),
                ("load-module-crypto-self-test", 60.0),
                ("load-policy", 10.0),
                ("attach-guard", 200.0),
                ("attach-guard-btf", 20.0),
                ("attach-guard-verifier", 100.0),
                ("attach-guard-attach", 50.0),
            ] {
                records.push(record(case, "baseline", run, ms));
            }
            for (case, initramfs, boot) in [
                ("verify-time", 300.0, 500.0),
                ("hash-time", 150.0, 250.0),
                ("signature-time", 100.0, 160.0),
                ("files-verified", 40.0, 100.0),
                ("bytes-hashed", 20e6, 60e6),
            ] {
                records.push(record(&format!("{case}-in-initramfs"), "elfsig", run, initramfs));
                records.push(record(&format!("{case}-at-boot"), "elfsig", run, boot));
            }
        }
        let rows = breakdown_rows(&Results { records }).unwrap();
        let value = |label: &str| rows.iter().find(|(l, _)| l.starts_with(label)).unwrap().1;
        assert_eq!(value("the boot's difference"), 1000.0);
        assert_eq!(value("verifying in the initramfs: 40 files, 20.0 MB"), 300.0);
        assert_eq!(value("verifying after it, until the default target: 60 files, 40.0 MB"), 200.0);
        // The guard's parts, and what they leave of its 200 ms.
        assert_eq!(value("&nbsp;&nbsp;of which the BPF verifier"), 100.0);
        assert_eq!(value("&nbsp;&nbsp;of which the rest (starting"), 30.0);
        // 1000 less 100 + 10 + 200 + 300 + 200: the module's and the guard's parts are in theirs.
        assert_eq!(value("the difference less the parts"), 190.0);
        let rests: Vec<f64> = rows.iter().filter(|(l, _)| l.contains("of which the rest")).map(|r| r.1).collect();
        assert_eq!(rests, [40.0, 30.0, 50.0, 40.0]);
        // Without the initramfs's counters (an older run), no breakdown.
        assert!(breakdown_rows(&Results::default()).is_none());
    }

    /// A boot-only report: the boot section and its targets, no other suite's, and verdicts that
    /// follow the measurements.
    #[test]
    fn a_boot_only_report_judges_what_was_measured() {
        let native = Native {
            cpu: "test".into(),
            sha256_mbps: 1000.0,
            rsa3072_verify_us: 50.0,
            criterion: Vec::new(),
            exec_us: Vec::new(),
        };
        let meta = Meta {
            kernel: "k".into(),
            suffix: String::new(),
            effort: elfsig_guest::image::BenchEffort::Full,
            clock: crate::vm::qemu::Clock::Host,
            accel: "tcg".into(),
            qemu: "10.0".into(),
            started: "now".into(),
            seconds: 1.0,
        };
        let report = |elfsig: [f64; 4], ima: [f64; 4]| {
            let mut records = Vec::new();
            for run in 0..4 {
                for (config, value) in [("baseline", 20.0), ("elfsig", elfsig[run]), ("ima", ima[run])] {
                    records.push(record("boot-to-default-target", config, run, value));
                    records.push(record("workload", config, run, value * 1000.0));
                }
                records.push(record("verify-time-at-boot", "elfsig", run, 300.0));
            }
            markdown(&Results { records }, &native, &meta)
        };
        let md = report([20.2, 20.3, 20.2, 20.3], [22.0, 22.2, 22.1, 22.0]);
        assert!(md.contains("## boot: the signed Debian system"), "{md}");
        assert!(!md.contains("## coreutils") && !md.contains("non-exec UnixBench"), "{md}");
        assert!(md.contains("within 5% of baseline | +1.3% ± 0.5% | met"), "{md}");
        assert!(md.contains("ahead of IMA appraisal's | -8.3% ± 0.6% against IMA | met"), "{md}");
        // 10% slower than baseline and than IMA.
        let md = report([22.0, 22.0, 22.1, 21.9], [20.0, 20.1, 19.9, 20.0]);
        assert!(md.contains("+10.0% ± 0.6% | **not met**"), "{md}");
        assert!(md.contains("against IMA | **not met**"), "{md}");
        // A run in which one VM stalled is left out, every configuration of it, and said so.
        let md = report([20.2, 20.3, 20.2, 20.3], [180.0, 22.2, 22.1, 22.0]);
        assert!(md.contains("Left out: run 0, in which `ima` booted in 180.0 s"), "{md}");
        assert!(md.contains("3 times in each configuration"), "{md}");
        assert!(md.contains("ahead of IMA appraisal's | -8.3% ± 1.2% against IMA | met"), "{md}");
        // Noisy runs decide nothing.
        let md = report([20.0, 26.0, 17.0, 21.0], [19.0, 24.0, 20.0, 18.0]);
        assert!(md.contains("of baseline | +5.0% ± 29.8% | **inconclusive**"), "{md}");
        assert!(md.contains("against IMA | **inconclusive**"), "{md}");
    }

    #[test]
    fn verdicts_need_an_interval_narrow_enough_to_tell() {
        assert_eq!(within(0.02, 0.01, 0.05), "met");
        assert_eq!(within(0.07, 0.01, 0.05), "**not met**");
        // Above the limit by more than even a wide interval.
        assert_eq!(within(0.40, 0.2, 0.05), "**not met**");
        assert!(within(0.01, 0.3, 0.05).starts_with("**inconclusive**"));
        assert!(within(0.01, f64::NAN, 0.05).starts_with("**inconclusive**"));
        // The point is within the goal, but the interval reaches past it.
        assert!(within(0.049, 0.049, 0.05).starts_with("**inconclusive**"));
        assert_eq!(ahead(-0.05, 0.02), "met");
        assert_eq!(ahead(0.05, 0.02), "**not met**");
        assert!(ahead(-0.01, 0.02).starts_with("**inconclusive**"));
        assert!(ahead(-0.3, f64::NAN).starts_with("**inconclusive**"));
    }
}
