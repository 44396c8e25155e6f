//! Containers under enforce (`cargo xtask distro`'s dracut boot, beside the upgrade): podman,
//! installed from the signed archive, runs an image made from Debian's packages and signed by
//! `elfsig oci sign` as root with crun and with runc, and as an unprivileged user (rootless:
//! the image's layers in the user's home, overlayfs in a user namespace), with nothing refused;
//! the same image unsigned is refused at its first exec, as root and rootless, the kernel's log
//! names the file, podman says it failed, and the host keeps running. A signed image's file
//! rewritten in podman's storage afterwards is refused; `podman build` from the signed image
//! runs its programs and a signed build output, and refuses an unsigned one.

use elfsig_guest::debian::{run, succeeds, tail};
use elfsig_guest::harness::{self, Outcome, Suite, ensure};
use std::os::unix::fs::FileExt;

use elfsig_guest::image::{
    CONTAINER_BUILD_CONTEXT, CONTAINER_BUILT_SIGNED, CONTAINER_BUILT_UNSIGNED, CONTAINER_EXTRA_SIGNED,
    CONTAINER_EXTRA_UNSIGNED, CONTAINER_IMAGES, CONTAINER_SIGNED, CONTAINER_UNSIGNED,
};

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
        "as root: a program of the signed image rewritten in podman's storage is refused; restored, it runs",
        rewritten_in_storage,
    );
    suite.case(
        "podman build from the signed image: RUN runs its programs and a signed build output; an unsigned one is \
         refused at its RUN step, failing the build",
        built,
    );
    suite.case(
        "rootless, as a user with subordinate ids: the signed image loads and runs a pipeline and perl's XS modules; \
         podman exec works; nothing refused",
        || refusing_nothing(rootless),
    );
    suite.case(
        "rootless: the unsigned image's program is refused at exec, the kernel names it, podman fails, the host runs on",
        || rootless_unsigned_refused(CONTAINER_UNSIGNED, UNSIGNED, "/usr/bin/true", "true"),
    );
    if std::path::Path::new(&format!("{CONTAINER_IMAGES}/{CONTAINER_EXTRA_SIGNED}")).exists() {
        suite.case(
            "rootless, an image made elsewhere (ELFSIG_DISTRO_IMAGE): signed by elfsig oci sign it runs; unsigned it \
             is refused",
            extra_image,
        );
    }
}

/// The image `cargo xtask distro` was given, rootless: its shell runs signed, and is refused
/// unsigned.
fn extra_image() -> Outcome {
    const EXTRA: &str = "localhost/elfsig-extra";
    let podman = ROOTLESS_PODMAN;
    refusing_nothing(|| {
        let (ok, output) = as_user(&format!(
            "set -e; {}; {podman} run --rm --network none {EXTRA} /bin/sh -c 'echo ran; ls /bin | wc -l'",
            rootless_load(CONTAINER_EXTRA_SIGNED, EXTRA)
        ))?;
        ensure(ok && output.contains("ran\n"), || format!("the signed image made elsewhere: {}", tail(&output)))
    })?;
    // Whatever file /bin/sh is there (busybox, on Alpine), refused since the run.
    rootless_unsigned_refused(CONTAINER_EXTRA_UNSIGNED, &format!("{EXTRA}-unsigned"), "/bin/sh", "")
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

/// podman as [`USER`]: cgroupfs, as no systemd user session runs here.
const ROOTLESS_PODMAN: &str = "podman --cgroup-manager cgroupfs";

/// `script` loading the archive `name` of [`CONTAINER_IMAGES`] as [`USER`] and naming the image
/// `tag`.
fn rootless_load(name: &str, tag: &str) -> String {
    let podman = ROOTLESS_PODMAN;
    format!(
        "{podman} load --input {CONTAINER_IMAGES}/{name} > /tmp/elfsig-rootless-load; \
         loaded=$(sed -n 's/^Loaded image[^:]*: //p' /tmp/elfsig-rootless-load | cut -d, -f1); \
         {podman} tag \"$loaded\" {tag}"
    )
}

fn rootless() -> Outcome {
    // As useradd makes a user where uidmap is installed: subordinate ids for its namespaces.
    succeeds(&format!("id {USER} >/dev/null 2>&1 || useradd --create-home --shell /bin/sh {USER}"))?;
    succeeds(&format!(
        "grep -q '^{USER}:' /etc/subuid || usermod --add-subuids 200000-265535 --add-subgids 200000-265535 {USER}"
    ))?;
    succeeds(&format!("install -d -m 700 -o {USER} -g {USER} /run/user/$(id -u {USER})"))?;
    let podman = ROOTLESS_PODMAN;
    let (ok, output) = as_user(&format!(
        "set -e; {}; \
         {podman} info --format '{{{{.Store.GraphDriverName}}}} rootless={{{{.Host.Security.Rootless}}}}'; \
         {podman} run --rm --network none {SIGNED} sh -c 'ls -l /usr/bin | sort | tail -n 3 | wc -l; id -u'; \
         {podman} run --rm --network none {SIGNED} perl -MPOSIX -e 'print POSIX::floor(7.5), qq(\\n)'; \
         {podman} run -d --name rootless-exec --network none {SIGNED} sleep 600 >/dev/null; \
         {podman} exec rootless-exec sh -c 'echo exec'; {podman} rm -f -t 0 rootless-exec >/dev/null",
        rootless_load(CONTAINER_SIGNED, SIGNED)
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
    refused(&format!("{RUN} {UNSIGNED} /usr/bin/true"), "the unsigned image's /usr/bin/true", "unsigned", "true")?;
    let (ok, output) = run(&format!("{RUN} {SIGNED} echo still"))?;
    ensure(ok && output.contains("still"), || format!("the signed image after the refusal: {}", tail(&output)))
}

/// Loads the archive `name` as [`USER`], names it `tag`, and runs `program` in it: refused, the
/// kernel's log naming `file` (any file, given "").
fn rootless_unsigned_refused(name: &str, tag: &str, program: &str, file: &str) -> Outcome {
    let podman = ROOTLESS_PODMAN;
    refused_by(
        || {
            let (_, output) = as_user(&format!(
                "set -e; {}; set +e; {podman} run --rm --network none {tag} {program}; echo \"exit $?\"",
                rootless_load(name, tag)
            ))?;
            // The load went through when the run's status is there.
            let status = output.lines().rev().find_map(|l| l.strip_prefix("exit ")).map(str::to_owned);
            let status = status.ok_or_else(|| format!("rootless podman load failed: {}", tail(&output)))?;
            Ok((status != "0", output))
        },
        &format!("{program} of {name}, rootless"),
        "unsigned",
        file,
    )
}

/// Runs `script`, which must fail as a refused exec of `what` does: podman says permission
/// denied, the module counted a refusal for `reason`, the kernel's log names `file`, and the
/// host runs on.
fn refused(script: &str, what: &str, reason: &str, file: &str) -> Outcome {
    refused_by(|| run(script).map(|(ok, output)| (!ok, output)), what, reason, file)
}

/// [`refused`], for a `failing` that says whether it failed and what it printed.
fn refused_by(
    failing: impl FnOnce() -> Result<(bool, String), String>,
    what: &str,
    reason: &str,
    file: &str,
) -> Outcome {
    let before = harness::stats()?;
    let mut log = harness::KernelLog::from_now()?;
    let (failed, output) = failing()?;
    ensure(failed, || format!("{what} ran: {}", tail(&output)))?;
    ensure(output.to_lowercase().contains("permission denied"), || {
        format!("podman did not say the exec of {what} was refused: {}", tail(&output))
    })?;
    let after = harness::stats()?;
    for counter in ["denied", reason] {
        ensure(harness::grew(&before, &after, counter) >= 1, || format!("{what}: {counter} did not grow"))?;
    }
    let since = log.records()?;
    ensure(since.iter().any(|l| l.starts_with("elfsig: refused") && l.contains(file)), || {
        format!("the kernel's log names no refused {file} since the run: {since:?}")
    })?;
    harness::runs("/usr/bin/true", &[], None)
}

/// Flips the byte in the middle of `path`, in place, and returns what it was.
fn flip_middle(path: &str, restore: Option<u8>) -> Result<u8, String> {
    let file = std::fs::OpenOptions::new().read(true).write(true).open(path).map_err(|e| format!("{path}: {e}"))?;
    let middle = file.metadata().map_err(|e| format!("{path}: {e}"))?.len() / 2;
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, middle).map_err(|e| format!("read {path}: {e}"))?;
    let was = byte[0];
    file.write_all_at(&[restore.unwrap_or(!was)], middle).map_err(|e| format!("write {path}: {e}"))?;
    Ok(was)
}

/// What a host's administrator, or anyone who can write podman's storage, might do: rewrite a
/// file of a signed image's layer after it was loaded. The container's overlay reads it from
/// there: refused as modified, though the image's verdicts were cached; restored, it runs.
fn rewritten_in_storage() -> Outcome {
    let (ok, layer) = run(&format!("podman image inspect --format '{{{{.GraphDriver.Data.UpperDir}}}}' {SIGNED}"))?;
    let program = format!("{}/usr/bin/tac", layer.trim());
    ensure(ok && std::path::Path::new(&program).is_file(), || format!("no layer with tac: {}", tail(&layer)))?;
    let tac = format!("{RUN} {SIGNED} tac /etc/debian_version");
    succeeds(&tac)?;
    let was = flip_middle(&program, None)?;
    let result = refused(&tac, "tac rewritten in the layer", "modified", "tac");
    flip_middle(&program, Some(was))?;
    result?;
    succeeds(&tac)
}

/// `podman build` as a pipeline runs it, from the signed image: its RUN steps run the image's
/// signed programs and what the build adds once signed; a program added unsigned (a build's
/// output, before the pipeline signs it) is refused at the RUN step that runs it.
fn built() -> Outcome {
    let context = "/tmp/elfsig-build";
    let _ = std::fs::remove_dir_all(context);
    succeeds(&format!(
        "mkdir -p {context} && tar --extract --file {CONTAINER_IMAGES}/{CONTAINER_BUILD_CONTEXT} --directory {context}"
    ))?;
    let build = |containerfile: &str, tag: &str| -> Result<(bool, String), String> {
        let file = format!("{context}/Containerfile.{tag}");
        std::fs::write(&file, format!("FROM {SIGNED}\n{containerfile}")).map_err(|e| format!("{file}: {e}"))?;
        run(&format!("podman build --pull=never --network none -f {file} -t localhost/elfsig-{tag} {context}"))
    };
    let (ok, output) = build(
        &format!(
            "RUN ls /usr/bin | sort | tail -n 3 | wc -l > /ran && perl -MPOSIX -e 'print POSIX::floor(7.5), qq(\\n)' >> /ran\n\
             COPY {CONTAINER_BUILT_SIGNED} /usr/local/bin/built\n\
             RUN /usr/local/bin/built && echo built >> /ran\n"
        ),
        "built-signed",
    )?;
    ensure(ok, || format!("podman build with a signed output failed: {}", tail(&output)))?;
    let (ok, output) =
        run(&format!("{RUN} localhost/elfsig-built-signed sh -c 'cat /ran; /usr/local/bin/built && echo again'"))?;
    ensure(ok && output.contains("3\n7\nbuilt\nagain"), || format!("the built image: {}", tail(&output)))?;
    refused_by(
        || {
            build(
                &format!("COPY {CONTAINER_BUILT_UNSIGNED} /usr/local/bin/built\nRUN /usr/local/bin/built\n"),
                "built-unsigned",
            )
            .map(|(ok, output)| (!ok, output))
        },
        "an unsigned build output, in its RUN step",
        "unsigned",
        "built",
    )
}
