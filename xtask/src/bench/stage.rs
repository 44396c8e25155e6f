//! What the bench VM boots into: the bench program as `/init`, the module and `elfsig-guard`,
//! and the measured programs signed with the kernel test key (`/b/signed/`), with an IMA
//! signature for each made by evmctl (`/b/ima-sig/`) and the key's certificate for the `.ima`
//! keyring; their libraries and `ld.so`, signed; a tiny static program for the exec benchmark
//! and a generated binary of over 128 MiB for the large one; for the libs suite, 50 small
//! libraries, python3 with C extension modules and the standard library's sources it starts
//! with.

use std::fs;
use std::path::{Path, PathBuf};

use elfsig_fixtures::{Class, Endian, Spec};

use super::native::COREUTILS;
use crate::Result;
use crate::cmd::Cmd;
use crate::keys::TestKeys;
use crate::vm::cpio::Cpio;
use crate::vm::real;
use crate::vm::staged::{Staged, read, sign_all, stage_libraries, stage_program, system};
use crate::{paths, tools};
use elfsig_guest::image;

/// Programs the shell and application workloads use besides the coreutils table.
const WORKLOAD_PROGRAMS: [&str; 8] = ["sort", "od", "tee", "wc", "cat", "tr", "rsync", "busybox"];

/// Size of the large binary's executable segment padding and of its trailing data.
const LARGE_TEXT: u64 = 80 << 20;
const LARGE_TRAILING: usize = 49 << 20;

/// The large binary: a program whose executable segment holds 80 MiB of padding, followed by
/// 49 MiB of pseudo-random data; over 128 MiB in all.
fn large_binary() -> Vec<u8> {
    let mut trailing = vec![0u8; LARGE_TRAILING];
    let mut x = 0x1234_5678_9abc_def1u64;
    for chunk in trailing.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    elfsig_fixtures::synth(&Spec::new(Class::Elf64, Endian::Little).text_padding(LARGE_TEXT).trailing(&trailing))
}

/// Writes the bench initramfs for the kernel `ko` was built for, named `kernel` (each kernel
/// has its own: both are staged before either runs), and returns its path.
pub fn initramfs(kernel_name: &str, elfsig: &Path, bench: &Path, ko: &Path, keys: &TestKeys) -> Result<PathBuf> {
    let mut staged: Vec<Staged<'_>> = Vec::new();
    let kernel = &keys.kernel;
    let key = Some(kernel);
    let mut libraries = Vec::new();
    let signed_path = |name: &str| format!("{}/{name}", image::BENCH_SIGNED);
    for name in COREUTILS.iter().chain(&WORKLOAD_PROGRAMS) {
        stage_program(&mut staged, &mut libraries, signed_path(name), &system(name)?, kernel)?;
    }
    let hello = elfsig_fixtures::synth(&Spec::new(Class::Elf64, Endian::Little));
    let [_, (_, ecdsa_hello)] = image::BENCH_HELLO_BY_KEY;
    staged.push(Staged { guest_path: signed_path(ecdsa_hello), bytes: hello.clone(), key: Some(&keys.ecdsa_p256) });
    staged.push(Staged { guest_path: signed_path("hello"), bytes: hello, key });
    staged.push(Staged { guest_path: signed_path("large"), bytes: large_binary(), key });
    staged.push(Staged { guest_path: signed_path("elfsig-bench"), bytes: read(bench)?, key });
    let mut cpio = Cpio::new();
    // The mapping guard, and what the libs suite maps under it.
    stage_program(&mut staged, &mut libraries, image::GUARD.into(), &tools::build_guard()?, kernel)?;
    let probe = elfsig_fixtures::guard_programs(image::GUARD_RUNPATH)?.probe;
    stage_program(&mut staged, &mut libraries, signed_path("guard-probe"), &probe, kernel)?;
    for (i, library) in elfsig_fixtures::bench_libraries(image::BENCH_LIBRARIES)?.iter().enumerate() {
        stage_program(
            &mut staged,
            &mut libraries,
            signed_path(&elfsig_fixtures::bench_library_name(i)),
            library,
            kernel,
        )?;
    }
    stage_program(&mut staged, &mut libraries, signed_path("python3"), &real::python()?, kernel)?;
    for module in image::BENCH_PYTHON_EXTENSIONS {
        stage_program(
            &mut staged,
            &mut libraries,
            signed_path(&image::python_extension_file(module)),
            &real::python_extension(module),
            kernel,
        )?;
    }
    real::python_sources(&mut cpio)?;
    let ld_so = Path::new(image::LD_SO).canonicalize().map_err(|e| format!("{}: {e}", image::LD_SO))?;
    staged.push(Staged { guest_path: image::LD_SO.into(), bytes: read(&ld_so)?, key });
    stage_libraries(&mut staged, libraries, kernel)?;

    let dir = paths::target().join("bench/stage");
    let signed = sign_all(elfsig, &staged, &dir)?;
    cpio.chardev("/dev/console", 5, 1);
    cpio.file("/init", 0o755, &read(bench)?);
    cpio.file(image::MODULE, 0o644, &read(ko)?);
    cpio.file(
        image::BENCH_IMA_CERT,
        0o644,
        &Cmd::new("openssl").args(["x509", "-outform", "DER", "-in"]).arg(&keys.kernel.cert).read_bytes()?,
    );
    for (i, (file, bytes)) in staged.iter().zip(&signed).enumerate() {
        cpio.file(&file.guest_path, 0o755, bytes);
        if let Some(name) = file.guest_path.strip_prefix(image::BENCH_SIGNED).and_then(|p| p.strip_prefix('/')) {
            // IMA signs what it will appraise: the same bytes, in the copies the guest makes.
            let signature = ima_signature(&dir.join(format!("{i:02}")), &keys.kernel.key)?;
            cpio.file(&format!("{}/{name}.sig", image::BENCH_IMA_SIGNATURES), 0o644, &signature);
        }
    }
    let path = paths::target().join(format!("bench/initramfs-{kernel_name}.cpio"));
    fs::write(&path, cpio.finish()).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// The `security.ima` value evmctl makes for `file` with `key`.
fn ima_signature(file: &Path, key: &Path) -> Result<Vec<u8>> {
    Cmd::new("evmctl").args(["ima_sign", "--sigfile", "--hashalgo", "sha256", "--key"]).arg(key).arg(file).read()?;
    let sig = PathBuf::from(format!("{}.sig", file.display()));
    let bytes = read(&sig)?;
    let _ = fs::remove_file(&sig);
    Ok(bytes)
}
