//! Native benchmarks: verification (parse, hash, signature check) of real programs and of a
//! generated 128 MiB file, and signing a directory of a few hundred programs on one core and on
//! all of them. `cargo xtask bench` runs this and reports MB/s next to OpenSSL's SHA-256.

use std::path::{Path, PathBuf};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use elfsig_cli::commands::sign::{Entitle, sign_file};
use elfsig_cli::commands::verify::verify_file;
use elfsig_cli::crypto::cert::{self, TrustedCert};
use elfsig_cli::crypto::cms::RecordSigner;
use elfsig_cli::crypto::key;
use elfsig_cli::crypto::public_key::Algorithm;
use elfsig_fixtures::{Class, Endian, Spec};
use rayon::prelude::*;

const LARGE_LEN: usize = 128 << 20;

struct Setup {
    dir: tempfile::TempDir,
    signer: RecordSigner,
    trusted: Vec<TrustedCert>,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let private_key = key::PrivateKey::generate(Algorithm::Rsa, 3072).unwrap();
    let certificate = cert::self_signed(&private_key, cert::parse_subject("CN=elfsig bench").unwrap()).unwrap();
    let cert_path = dir.path().join("bench.crt");
    std::fs::write(&cert_path, cert::to_pem(&certificate).unwrap()).unwrap();
    let trusted = cert::load(&cert_path).unwrap();
    let signer = RecordSigner::new(private_key, &trusted[0]).unwrap();
    Setup { dir, signer, trusted }
}

/// A signed copy of `bytes` named `name` in the setup's directory.
fn signed_copy(setup: &Setup, name: &str, bytes: &[u8]) -> PathBuf {
    let path = setup.dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    sign_file(&path, None, &setup.signer, Entitle::Keep).unwrap();
    path
}

/// A 128 MiB ELF file: a small program followed by pseudo-random trailing bytes (hashed like any
/// other byte).
fn large_file() -> Vec<u8> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut trailing = vec![0u8; LARGE_LEN];
    for chunk in trailing.chunks_mut(8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
    }
    elfsig_fixtures::synth(&Spec::new(Class::Elf64, Endian::Little).trailing(&trailing))
}

fn verify(c: &mut Criterion) {
    let setup = setup();
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for program in ["ls", "tar", "python3"] {
        if let Some(path) = elfsig_fixtures::system_binary(program) {
            files.push((program.to_owned(), signed_copy(&setup, program, &std::fs::read(path).unwrap())));
        }
    }
    files.push(("generated-128MiB".to_owned(), signed_copy(&setup, "large", &large_file())));

    let mut group = c.benchmark_group("verify");
    for (name, path) in &files {
        let len = std::fs::metadata(path).unwrap().len();
        group.throughput(Throughput::Bytes(len));
        if len > 16 << 20 {
            group.sample_size(10);
        }
        group.bench_function(name.as_str(), |b| b.iter(|| verify_file(path, &setup.trusted).unwrap()));
    }
    group.finish();
}

/// Regular ELF files from /usr/bin and /usr/sbin, up to `count`.
fn system_elf_files(count: usize) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in ["/usr/bin", "/usr/sbin", "/usr/lib/x86_64-linux-gnu"] {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            let is_small_file = path.symlink_metadata().is_ok_and(|m| m.is_file() && m.len() < (8 << 20));
            if is_small_file && elfsig_cli::elf_file::has_elf_magic(&path) && found.len() < count {
                found.push(path);
            }
        }
    }
    found
}

fn sign_directory(c: &mut Criterion) {
    let setup = setup();
    let originals = system_elf_files(300);
    let work = setup.dir.path().join("tree");
    std::fs::create_dir(&work).unwrap();
    let copies: Vec<(PathBuf, Vec<u8>)> = originals
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (work.join(format!("{i:03}-{}", p.file_name().unwrap().to_string_lossy())), std::fs::read(p).unwrap())
        })
        .collect();
    // Files the signer refuses (none expected among system binaries) would skew the figure.
    let total: u64 = copies.iter().map(|(_, b)| b.len() as u64).sum();
    let restore = |copies: &[(PathBuf, Vec<u8>)]| {
        for (path, bytes) in copies {
            std::fs::write(path, bytes).unwrap();
        }
    };
    let sign_all = |paths: &[(PathBuf, Vec<u8>)], signer: &RecordSigner| {
        paths.par_iter().for_each(|(path, _)| {
            sign_file(Path::new(path), None, signer, Entitle::Keep).unwrap();
        })
    };

    let mut group = c.benchmark_group("sign");
    group.throughput(Throughput::Bytes(total));
    group.sample_size(10);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for threads in [1, cores] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let name = format!("{}-files-{threads}-thread{}", copies.len(), if threads == 1 { "" } else { "s" });
        group.bench_function(name, |b| {
            b.iter_batched(
                || restore(&copies),
                |()| pool.install(|| sign_all(&copies, &setup.signer)),
                BatchSize::PerIteration,
            )
        });
        if cores == 1 {
            break;
        }
    }
    group.finish();
}

/// The programs `cargo xtask bench` measures in the VM, and the dynamic loader, so that their
/// first-exec cost can be projected onto this machine.
const EXEC_PATH_PROGRAMS: [&str; 18] = [
    "cp", "df", "echo", "false", "grep", "kill", "less", "ls", "mkdir", "mount", "mv", "rm", "rmdir", "tar", "touch",
    "true", "umount", "uname",
];

/// Trusts every signature: the kernel's PKCS#7 check is its own RSA, not this crate's, and
/// `cargo xtask bench` times it with `openssl speed` instead.
struct AnySignature;

impl elfsig_core::Trust for AnySignature {
    type Signer = ();
    type Detail = String;

    fn check_signature(&mut self, _: &[u8], _: &[u8]) -> Result<(), elfsig_core::Refused<String>> {
        Ok(())
    }

    fn check_revocation(&mut self, _: &[u8; 32]) -> Result<(), elfsig_core::Refused<String>> {
        Ok(())
    }
}

/// The kernel's page cache, as the module reads a file on a local disk file system: the bytes
/// are in memory already; the headers are copied out (`kernel_read`), everything hashed is lent
/// in place, in pieces of at most 64 KiB (kmod/shim/file.c's `ELFSIG_LEND_MAX`). Counts the
/// bytes it lends, as the module's `bytes_hashed_in_cache` does.
struct PageCache<'a> {
    bytes: &'a [u8],
    lent: u64,
}

/// What the shim lends at a time.
const LEND_MAX: usize = 64 * 1024;

impl elfsig_core::ReadSomeAt for PageCache<'_> {
    fn read_some_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize, elfsig_core::IoError> {
        let rest = usize::try_from(offset).ok().and_then(|at| self.bytes.get(at..)).unwrap_or(&[]);
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        Ok(n)
    }

    fn lend_at(
        &mut self,
        offset: u64,
        len: u64,
        to: &mut elfsig_core::LendTo<'_>,
    ) -> Result<bool, elfsig_core::IoError> {
        let range = usize::try_from(offset).ok().zip(usize::try_from(len).ok());
        let bytes =
            range.and_then(|(at, len)| self.bytes.get(at..at.checked_add(len)?)).ok_or(elfsig_core::IoError::End)?;
        for piece in bytes.chunks(LEND_MAX) {
            self.lent += piece.len() as u64;
            if to(piece).is_break() {
                break;
            }
        }
        Ok(true)
    }
}

/// The module's window for small reads (kmod/verdict/verify.rs).
const KERNEL_WINDOW: usize = 1024;

/// What the kernel module does on a cache miss, minus the PKCS#7 check: elfsig-core's verifier
/// on the kernel's path (locate the signature, read and parse the payload, hash everything else
/// with SHA-256), the file's bytes in the page cache as they are for a first exec of a program
/// that was read before (installed, copied, or verified at an earlier boot): the module hashes
/// them where they are (`PageCache`). Returns the digest and whether every hashed byte was lent.
fn exec_path_cost(file: &[u8]) -> ([u8; 32], bool) {
    use elfsig_cli::crypto::trust::{Heap, Sha2};
    let source = PageCache { bytes: file, lent: 0 };
    let mut reader = elfsig_core::Windowed::new(source, file.len() as u64, [0u8; KERNEL_WINDOW]);
    let verified =
        elfsig_core::verify::<Sha2, _, _>(&mut reader, elfsig_core::Structure::Locate, &mut AnySignature, &mut Heap)
            .unwrap();
    (verified.digest, reader.file().lent == verified.location.hashed_len())
}

/// The programs of [`EXEC_PATH_PROGRAMS`] and ld.so, signed, by name.
fn exec_path_files(setup: &Setup) -> Vec<(String, Vec<u8>)> {
    let ld_so = Path::new("/lib64/ld-linux-x86-64.so.2").canonicalize().unwrap();
    let programs = EXEC_PATH_PROGRAMS.iter().filter_map(|p| Some((p.to_string(), elfsig_fixtures::system_binary(p)?)));
    programs
        .chain([("ld.so".to_string(), ld_so)])
        .map(|(name, path)| {
            let signed =
                std::fs::read(signed_copy(setup, &format!("exec-path-{name}"), &std::fs::read(path).unwrap())).unwrap();
            // Otherwise the bench would time the copy the module no longer makes.
            assert!(exec_path_cost(&signed).1, "{name}: some hashed bytes were read instead of lent");
            (name, signed)
        })
        .collect()
}

fn exec_path(c: &mut Criterion) {
    let setup = setup();
    let files = exec_path_files(&setup);
    let mut group = c.benchmark_group("exec-path");
    group.warm_up_time(std::time::Duration::from_millis(500));
    group.measurement_time(std::time::Duration::from_secs(2));
    for (name, signed) in &files {
        group.throughput(Throughput::Bytes(signed.len() as u64));
        group.bench_function(name.as_str(), |b| b.iter(|| exec_path_cost(signed)));
    }
    group.finish();
    first_exec(c, &files);
}

/// A first exec with more than one CPU, neither the program nor ld.so cached: the module
/// verifies the program in the task while a worker, woken for it, checks ld.so
/// (kmod/verdict/ahead.rs), and the exec goes on once both are done. Here the worker is a
/// thread waiting on a channel, as a kworker waits for work. Not run with one CPU, where the
/// module checks them one after the other (`exec-path/PROGRAM` plus `exec-path/ld.so`).
fn first_exec(c: &mut Criterion, files: &[(String, Vec<u8>)]) {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return;
    }
    let Some((_, ld_so)) = files.iter().find(|(name, _)| name == "ld.so") else { return };
    let (jobs, worker_jobs) = std::sync::mpsc::channel::<()>();
    let (worker_done, done) = std::sync::mpsc::channel::<[u8; 32]>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for () in worker_jobs {
                if worker_done.send(exec_path_cost(ld_so).0).is_err() {
                    return;
                }
            }
        });
        let mut group = c.benchmark_group("first-exec");
        group.warm_up_time(std::time::Duration::from_millis(500));
        group.measurement_time(std::time::Duration::from_secs(2));
        for (name, signed) in files.iter().filter(|(name, _)| name != "ld.so") {
            group.bench_function(name.as_str(), |b| {
                b.iter(|| {
                    jobs.send(()).unwrap();
                    let program = exec_path_cost(signed).0;
                    (program, done.recv().unwrap())
                })
            });
        }
        group.finish();
        // The worker's loop ends with the channel.
        drop(jobs);
    });
}

criterion_group!(benches, verify, sign_directory, exec_path);
criterion_main!(benches);
