//! Containers under enforce (`cargo xtask distro`'s dracut boot, beside the upgrade): podman,
//! installed from the signed archive, runs an image made from Debian's packages and signed by
//! `elfsig oci sign` as root with crun and with runc, and as an unprivileged user (rootless:
//! the image's layers in the user's home, overlayfs in a user namespace), with nothing refused;
//! the same image unsigned is refused at its first exec, the kernel's log names the file,
//! podman says it failed, and the host keeps running.

use elfsig_guest::debian::{run, succeeds, tail};
use elfsig_guest::harness::{self, Outcome, Suite, ensure};
use elfsig_guest::image::{CONTAINER_IMAGES, CONTAINER_SIGNED, CONTAINER_UNSIGNED};

use crate::upgrade::refusing_nothing;

/// The names the images get once loaded.
const SIGNED: &str = "localhost/elfsig-signed";
const UNSIGNED: &str = "localhost/elfsig-unsigned";

/// The cases, after the signed system's own.
pub(crate) fn containers(suite: &mut Suite<'_>) {
    suite.case("podman loads the signed image and the unsigned one, refusing nothing", || {
        refusing_nothing(|| {
            load(CONTAINER_SIGNED, SIGNED)?;
            load(CONTAINER_UNSIGNED, UNSIGNED)
        })
    });
    for runtime in ["crun", "runc"] {
        suite.case(
            format!(
                "as root with {runtime}: the signed image runs a pipeline, dynamically linked programs and perl's \
                 XS modules (dlopen); podman exec works; nothing refused"
            ),
            move || refusing_nothing(|| runs_signed(runtime)),
        );
    }
    suite.case(
        "as root: the unsigned image's program is refused at exec, the kernel names it, podman fails, the host runs on",
        unsigned_refused,
    );
    suite.case(
        "rootless, as a user with subordinate ids: the signed image loads and runs a pipeline and perl's XS modules; \
         podman exec works; nothing refused",
        || refusing_nothing(rootless),
    );
}

/// The unprivileged user rootless podman runs as.
const USER: &str = "elfsig-podman";

/// Runs `script` as [`USER`], in a login-like environment of its own (no systemd session: a
/// runtime directory made for it), as `sh` would.
fn as_user(script: &str) -> Result<(bool, String), String> {
    let path = "/tmp/elfsig-rootless.sh";
    std::fs::write(path, script).map_err(|e| format!("{path}: {e}"))?;
    run(&format!(
        "runuser -u {USER} -- env -i HOME=/home/{USER} PATH=/usr/bin:/bin XDG_RUNTIME_DIR=/run/user/$(id -u {USER}) \
         sh {path}"
    ))
}

fn rootless() -> Outcome {
    // As useradd makes a user where uidmap is installed: subordinate ids for its namespaces.
    succeeds(&format!("id {USER} >/dev/null 2>&1 || useradd --create-home --shell /bin/sh {USER}"))?;
    succeeds(&format!(
        "grep -q '^{USER}:' /etc/subuid || usermod --add-subuids 200000-265535 --add-subgids 200000-265535 {USER}"
    ))?;
    succeeds(&format!("install -d -m 700 -o {USER} -g {USER} /run/user/$(id -u {USER})"))?;
    let podman = "podman --cgroup-manager cgroupfs";
    let (ok, output) = as_user(&format!(
        "set -e; {podman} load --input {CONTAINER_IMAGES}/{CONTAINER_SIGNED} > /tmp/elfsig-rootless-load; \
         loaded=$(sed -n 's/^Loaded image[^:]*: //p' /tmp/elfsig-rootless-load | cut -d, -f1); \
         {podman} tag \"$loaded\" {SIGNED}; \
         {podman} info --format '{{{{.Store.GraphDriverName}}}} rootless={{{{.Host.Security.Rootless}}}}'; \
         {podman} run --rm --network none {SIGNED} sh -c 'ls -l /usr/bin | sort | tail -n 3 | wc -l; id -u'; \
         {podman} run --rm --network none {SIGNED} perl -MPOSIX -e 'print POSIX::floor(7.5), qq(\\n)'; \
         {podman} run -d --name rootless-exec --network none {SIGNED} sleep 600 >/dev/null; \
         {podman} exec rootless-exec sh -c 'echo exec'; {podman} rm -f -t 0 rootless-exec >/dev/null"
    ))?;
    for expected in ["overlay rootless=true", "3\n0\n", "7\n", "exec\n"] {
        ensure(ok && output.contains(expected), || {
            format!("rootless podman (exit ok: {ok}), without {expected:?}: {}", tail(&output))
        })?;
    }
    Ok(())
}

/// `podman load`s the archive `name` of [`CONTAINER_IMAGES`] and names the image `tag`.
fn load(name: &str, tag: &str) -> Outcome {
    let (ok, output) = run(&format!("podman load --input {CONTAINER_IMAGES}/{name}"))?;
    ensure(ok, || format!("podman load of {name} failed: {}", tail(&output)))?;
    // `Loaded image: localhost/debian:latest` (or the image's id, when it has no name).
    let loaded = output
        .lines()
        .find_map(|l| l.strip_prefix("Loaded image: ").or_else(|| l.strip_prefix("Loaded image(s): ")))
        .and_then(|names| names.split(',').next())
        .ok_or_else(|| format!("podman load of {name} named no image: {}", tail(&output)))?;
    succeeds(&format!("podman tag {} {tag}", loaded.trim()))
}

/// `podman run` options every case uses: no network (the image needs none), removed after.
const RUN: &str = "podman run --rm --network none";

fn runs_signed(runtime: &str) -> Outcome {
    let run_in = |script: &str, expected: &str| -> Outcome {
        let (ok, output) = run(&format!("{RUN} --runtime {runtime} {SIGNED} sh -c '{script}'"))?;
        ensure(ok && output.contains(expected), || {
            format!("`{script}` in the signed image with {runtime} (exit ok: {ok}): {}", tail(&output))
        })
    };
    run_in("ls -l /usr/bin | sort | tail -n 3 | wc -l", "3")?;
    run_in("perl -MPOSIX -e \"print POSIX::floor(7.5), qq(\\n)\"", "7")?;
    run_in("id -un; cat /etc/debian_version", "root")?;
    // A container left running, and a process exec'd into it.
    let name = format!("elfsig-exec-{runtime}");
    succeeds(&format!("podman run -d --name {name} --network none --runtime {runtime} {SIGNED} sleep 600"))?;
    let (ok, output) = run(&format!("podman exec {name} sh -c 'echo exec; uname -s'"))?;
    let _ = run(&format!("podman rm -f -t 0 {name}"));
    ensure(ok && output.contains("exec\nLinux"), || format!("podman exec with {runtime}: {}", tail(&output)))
}

fn unsigned_refused() -> Outcome {
    let before = harness::stats()?;
    let (ok, output) = run(&format!("{RUN} {UNSIGNED} /usr/bin/true"))?;
    ensure(!ok, || format!("the unsigned image's /usr/bin/true ran: {}", tail(&output)))?;
    ensure(output.to_lowercase().contains("permission denied"), || {
        format!("podman did not say the exec was refused: {}", tail(&output))
    })?;
    let after = harness::stats()?;
    ensure(harness::grew(&before, &after, "denied") >= 1, || "the module refused no exec".into())?;
    let log = harness::kernel_log()?;
    ensure(log.iter().any(|l| l.starts_with("elfsig: refused") && l.contains("true")), || {
        format!("the kernel's log names no refused true: {:?}", &log[log.len().saturating_sub(5)..])
    })?;
    harness::runs("/usr/bin/true", &[], None)?;
    let (ok, output) = run(&format!("{RUN} {SIGNED} echo still"))?;
    ensure(ok && output.contains("still"), || format!("the signed image after the refusal: {}", tail(&output)))
}
