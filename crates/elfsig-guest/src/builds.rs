//! Building on a host under enforce (`cargo xtask distro`'s dracut boot, the one that does not
//! upgrade, so that these run beside the upgrade): what a module build for a new kernel runs is
//! refused, which is why README says to build the module in the pipeline; and under
//! `elfsig loader deny` an initramfs rebuild fails, saying so, and keeps the initramfs there is.

use elfsig_guest::debian::{initramfs, run, succeeds, tail};
use elfsig_guest::harness::{self, Context, Outcome, Suite, ensure};

/// The cases, after the signed system's own; the last locks the loader policy to deny.
pub(crate) fn builds(suite: &mut Suite<'_>) {
    suite.case(
        "what a module build runs is refused: a program gcc just compiled, a proc-macro library rustc just built",
        build_helpers_refused,
    );
    // Last: the loader policy cannot go back to allow while the module is locked.
    suite.case(
        "under loader deny ldd cannot run: an initramfs rebuild fails, saying so, and keeps the one there is",
        || {
            let initramfs = initramfs()?;
            let (_, before) = run(&format!("sha256sum {initramfs}"))?;
            succeeds("elfsig loader deny")?;
            let (ok, output) = run("update-initramfs -u")?;
            ensure(!ok && output.contains("ldd cannot list libraries"), || {
                format!("update-initramfs under loader deny (exit ok: {ok}): {}", tail(&output))
            })?;
            let (_, after) = run(&format!("sha256sum {initramfs}"))?;
            ensure(after == before, || format!("{initramfs} changed"))
        },
    );
}

/// Where [`build_helpers_refused`] builds.
const BUILD: &str = "/var/tmp/elfsig-module-build";

/// What DKMS's build of a module for a new kernel runs besides signed programs, refused: a
/// helper Kbuild compiles and runs (fixdep, kconfig's conf), and a proc-macro library rustc
/// compiles and then loads (the kernel's `macros`). Why README says to build the module in the
/// pipeline instead.
fn build_helpers_refused() -> Outcome {
    let before = harness::stats()?;
    succeeds(&format!(
        "rm -rf {BUILD} && mkdir -p {BUILD} && cd {BUILD} && printf 'int main(void) {{ return 0; }}\\n' >helper.c \
         && gcc -o helper helper.c"
    ))?;
    harness::refused(&format!("{BUILD}/helper"))?;
    std::fs::write(
        format!("{BUILD}/m.rs"),
        "extern crate proc_macro;\n#[proc_macro]\npub fn empty(_: proc_macro::TokenStream) -> proc_macro::TokenStream \
         {\n    proc_macro::TokenStream::new()\n}\n",
    )
    .context("m.rs")?;
    std::fs::write(format!("{BUILD}/user.rs"), "m::empty!();\nfn main() {}\n").context("user.rs")?;
    succeeds(&format!("cd {BUILD} && rustc --edition 2021 --crate-type proc-macro --crate-name m -o libm.so m.rs"))?;
    // rustc maps the library executable to run its macro: refused, which rustc reports as a
    // crate it cannot find. The kernel log names the library.
    let (ok, output) = run(&format!("cd {BUILD} && rustc --edition 2021 --extern m=libm.so -o user user.rs"))?;
    ensure(!ok, || format!("rustc ran the new proc-macro: {}", tail(&output)))?;
    let after = harness::stats()?;
    harness::counters_grew(&before, &after, &[("denied", 1)])?;
    ensure(harness::grew(&before, &after, "mmap_denied") >= 1, || "no mapping was refused".into())?;
    let logged = harness::kernel_log()?;
    ensure(logged.iter().any(|l| l.starts_with("elfsig: refused") && l.contains(&format!("{BUILD}/libm.so"))), || {
        format!("no refusal of {BUILD}/libm.so in the kernel log; rustc said: {}", tail(&output))
    })?;
    let (state, failed) = elfsig_guest::debian::system_state()?;
    ensure(state == "running", || format!("systemd says {state:?}; failed: {failed}"))?;
    succeeds(&format!("rm -rf {BUILD}"))
}
