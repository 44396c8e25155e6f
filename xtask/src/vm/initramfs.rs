//! What the test VM boots into: the guest program as `/init`, the module, test programs
//! signed (on the host, with the real CLI) by each test key or not at all, and the CLI itself
//! with the kernel key, for the cases that sign inside the VM. The guest's `cases.rs` and
//! `stress.rs` name the paths they expect.

use std::fs;
use std::path::{Path, PathBuf};

use elfsig_fixtures::{Built, Class, Endian, Kind, Spec};
use elfsig_guest::image;

use crate::Result;
use crate::cmd::Cmd;
use crate::keys::{KeyPair, TestKeys};
use crate::vm::cpio::Cpio;
use crate::vm::real;
use crate::vm::staged::{Staged, read, shared_libraries, sign_all, stage_libraries, stage_program, system};
use crate::{paths, tools};

/// The coreutils the guest runs, dynamically linked.
const COREUTILS: &[&str] = &["ls", "cat", "echo", "true", "uname"];

/// The initramfs of the end-to-end suite; `modules` are kernel modules (uncompressed) the guest
/// loads first, in that order.
pub fn test_suite<'k>(
    elfsig: &Path,
    guest: &Path,
    ko: &Path,
    keys: &'k TestKeys,
    modules: &[PathBuf],
) -> Result<Vec<u8>> {
    let hello = elfsig_fixtures::synth(&Spec::new(Class::Elf64, Endian::Little));
    let hello32 = elfsig_fixtures::synth(&Spec::new(Class::Elf32, Endian::Little));
    let object = elfsig_fixtures::synth(&Spec::new(Class::Elf64, Endian::Little).kind(Kind::Rel));
    let revokeme = elfsig_fixtures::synth(&Spec::new(Class::Elf64, Endian::Little).trailing(b"revoke me"));
    let policy_revokeme =
        elfsig_fixtures::synth(&Spec::new(Class::Elf64, Endian::Little).trailing(b"a policy revokes me"));
    let busybox = read(&system("busybox")?)?;
    let ld_so = read(&Path::new(image::LD_SO).canonicalize().map_err(|e| format!("{}: {e}", image::LD_SO))?)?;
    let stage = |guest_path: &str, bytes: &[u8], key: Option<&'k KeyPair>| Staged {
        guest_path: guest_path.to_owned(),
        bytes: bytes.to_vec(),
        key,
    };

    let mut staged = vec![
        stage(image::HELLO, &hello, Some(&keys.kernel)),
        stage(image::REVOKEME, &revokeme, Some(&keys.kernel)),
        stage(image::POLICY_REVOKEME, &policy_revokeme, Some(&keys.kernel)),
        stage(image::BUSYBOX, &busybox, Some(&keys.kernel)),
        stage(image::LD_SO, &ld_so, Some(&keys.kernel)),
        stage(image::HELLO_MODULE_KEY, &hello, Some(&keys.module)),
        stage(&format!("{}/hello", image::ECDSA_SIGNED[0]), &hello, Some(&keys.ecdsa_p256)),
        stage(&format!("{}/hello", image::ECDSA_SIGNED[1]), &hello, Some(&keys.ecdsa_p384)),
        stage(&format!("{}/hello", image::TOKEN_SIGNED[0]), &hello, Some(&keys.token_rsa)),
        stage(&format!("{}/hello", image::TOKEN_SIGNED[1]), &hello, Some(&keys.token_ecdsa)),
        stage(image::HELLO_OTHER_KEY, &hello, Some(&keys.other)),
        stage(image::HELLO_ADDED_KEY, &hello, Some(&keys.added)),
        stage(image::HELLO_UNSIGNED, &hello, None),
        stage(image::HELLO32, &hello32, Some(&keys.kernel)),
        stage(image::HELLO32_UNSIGNED, &hello32, None),
        stage(image::OBJECT, &object, Some(&keys.kernel)),
        stage(image::BUSYBOX_UNSIGNED, &busybox, None),
        stage(image::LS_UNSIGNED, &read(&system("ls")?)?, None),
    ];
    let mut cpio = Cpio::new();
    for (built, name) in [(Built::CStatic, "cstatic"), (Built::CStaticPie, "cstaticpie"), (Built::CDynamic, "cdynamic")]
    {
        let bytes = read(&elfsig_fixtures::build(built)?)?;
        staged.push(stage(&format!("{}/{name}", image::SIGNED), &bytes, Some(&keys.kernel)));
        if let Some(expected) = elfsig_fixtures::expected_output(built) {
            cpio.file(&format!("{}/{name}", image::EXPECTED), 0o644, expected);
        }
        if matches!(built, Built::CStatic | Built::CDynamic) {
            let dirs = image::ECDSA_SIGNED.iter().chain(&image::TOKEN_SIGNED);
            for (dir, key) in dirs.zip([&keys.ecdsa_p256, &keys.ecdsa_p384, &keys.token_rsa, &keys.token_ecdsa]) {
                staged.push(stage(&format!("{dir}/{name}"), &bytes, Some(key)));
            }
        }
        if built == Built::CDynamic {
            let renamed = with_interpreter(&bytes, image::STRESS_INTERPRETER)?;
            staged.push(stage(image::CDYNAMIC_STRESS_INTERPRETER, &renamed, Some(&keys.kernel)));
        }
    }
    let guard = elfsig_fixtures::guard_programs(image::GUARD_RUNPATH)?;
    let library = read(&guard.library)?;
    let revoked_library = [&library[..], b"revoke me"].concat();
    let policy_revoked_library = [&library[..], b"a policy revokes me"].concat();
    let in_dir = |dir: &str| format!("{dir}/{}", elfsig_fixtures::GUARD_LIBRARY);
    staged.extend([
        stage(&in_dir(image::LIB_SIGNED), &library, Some(&keys.kernel)),
        stage(&in_dir(image::LIB_UNSIGNED), &library, None),
        stage(&in_dir(image::LIB_OTHER_KEY), &library, Some(&keys.other)),
        stage(&in_dir(image::LIB_REVOKED), &revoked_library, Some(&keys.kernel)),
        stage(&in_dir(image::LIB_POLICY_REVOKED), &policy_revoked_library, Some(&keys.kernel)),
        stage(image::GUARD_USER, &read(&guard.user)?, Some(&keys.kernel)),
        stage(image::GUARD_PROBE, &read(&guard.probe)?, Some(&keys.kernel)),
    ]);
    let mut libraries = Vec::new();
    for name in COREUTILS {
        stage_program(&mut staged, &mut libraries, format!("{}/{name}", image::SIGNED), &system(name)?, &keys.kernel)?;
    }
    libraries.extend(shared_libraries(&elfsig_fixtures::build(Built::CDynamic)?)?);
    staged.push(stage(image::ELFSIG, &stripped(elfsig)?, Some(&keys.kernel)));
    libraries.extend(shared_libraries(elfsig)?);
    let elfsig_guard = tools::build_guard()?;
    staged.push(stage(image::GUARD, &stripped(&elfsig_guard)?, Some(&keys.kernel)));
    libraries.extend(shared_libraries(&elfsig_guard)?);
    libraries.extend(shared_libraries(&guard.probe)?);
    real::add(&mut staged, &mut cpio, &mut libraries, &keys.kernel)?;
    stage_libraries(&mut staged, libraries, &keys.kernel)?;

    let signed = sign_all(elfsig, &staged, &paths::target().join("vm/stage"))?;
    for (file, bytes) in staged.iter().zip(&signed) {
        cpio.file(&file.guest_path, 0o755, bytes);
    }

    cpio.chardev("/dev/console", 5, 1);
    cpio.file("/init", 0o755, &read(guest)?);
    cpio.file(image::MODULE, 0o644, &read(ko)?);
    cpio.file(image::MODULE_NO_BTF, 0o644, &without_btf(ko)?);
    cpio.file(image::MODULE_FOREIGN_BTF_IDS, 0o644, &with_foreign_btf_ids(ko)?);
    cpio.symlink("/bin/sh", "busybox");
    cpio.file(image::SCRIPT_SIGNED_INTERPRETER, 0o755, b"#!/bin/sh\necho script ran\n");
    let unsigned_script = format!("#!{} sh\necho script ran\n", image::BUSYBOX_UNSIGNED);
    cpio.file(image::SCRIPT_UNSIGNED_INTERPRETER, 0o755, unsigned_script.as_bytes());
    cpio.file(image::BTRFS_IMAGE, 0o644, &btrfs_image()?);
    let mut order = String::new();
    for module in modules {
        let name = module.file_name().and_then(|n| n.to_str()).ok_or("a module without a name")?;
        cpio.file(&format!("{}/{name}", image::MODULES), 0o644, &read(module)?);
        order.push_str(name);
        order.push('\n');
    }
    if !modules.is_empty() {
        cpio.file(&format!("{}/order", image::MODULES), 0o644, order.as_bytes());
    }

    // Revocation: the digest of /t/signed/revokeme, and a blacklist entry for it signed with the
    // kernel key, as CONFIG_SYSTEM_BLACKLIST_AUTH_UPDATE requires.
    let signed_at = |path: &str| {
        staged
            .iter()
            .zip(&signed)
            .find(|(s, _)| s.guest_path == path)
            .map(|(_, b)| b)
            .ok_or(format!("{path} was not staged"))
    };
    let digest = digest_of(elfsig, signed_at(image::REVOKEME)?)?;
    let lib_digest = digest_of(elfsig, signed_at(&in_dir(image::LIB_REVOKED))?)?;
    cpio.file(image::ADDED_CERT, 0o644, &read(&keys.added.cert)?);
    cpio.file(image::KEY, 0o600, &read(&keys.kernel.key)?);
    cpio.file(image::CERT, 0o644, &read(&keys.kernel.cert)?);
    cpio.file(image::POLICY_KEY, 0o600, &read(&keys.policy.key)?);
    cpio.file(image::POLICY_CERT, 0o644, &read(&keys.policy.cert)?);
    cpio.file(image::MODULE_CERT, 0o644, &read(&keys.module.cert)?);
    cpio.file(image::OTHER_CERT, 0o644, &read(&keys.other.cert)?);
    cpio.file(image::MANIFEST, 0o644, format!("revoke_digest {digest}\nrevoke_lib_digest {lib_digest}\n").as_bytes());
    cpio.file(image::REVOCATION, 0o644, &sign_description(&format!("bin:{digest}"), &keys.kernel)?);
    cpio.file(image::LIB_REVOCATION, 0o644, &sign_description(&format!("bin:{lib_digest}"), &keys.kernel)?);
    Ok(cpio.finish())
}

/// A small btrfs filesystem (mixed block groups, the smallest mkfs.btrfs makes), gzipped: the
/// guest unpacks it and makes subvolumes in it.
fn btrfs_image() -> Result<Vec<u8>> {
    let image = paths::target().join("vm/stage/btrfs.img");
    fs::create_dir_all(paths::target().join("vm/stage")).map_err(|e| format!("cannot create the stage: {e}"))?;
    fs::File::create(&image)
        .and_then(|f| f.set_len(16 << 20))
        .map_err(|e| format!("cannot create {}: {e}", image.display()))?;
    Cmd::new("mkfs.btrfs").args(["-q", "-f", "--mixed"]).arg(&image).run()?;
    Cmd::new("gzip").args(["-n", "-c"]).arg(&image).read_bytes()
}

/// The module with its `.BTF` section removed, as a kernel without module BTF would build it.
fn without_btf(ko: &Path) -> Result<Vec<u8>> {
    let out = paths::target().join("vm/elfsig-nobtf.ko");
    Cmd::new("objcopy").args(["--remove-section=.BTF"]).arg(ko).arg(&out).run()?;
    read(&out)
}

/// The module as if built for another build of the kernel: the BTF IDs it holds for the kfuncs'
/// first two argument types (`struct file`, `struct vm_area_struct`: `elfsig_kfunc_arg_types`,
/// kmod/shim/kfunc_ids.c) swapped, so that each names a type of another size.
fn with_foreign_btf_ids(ko: &Path) -> Result<Vec<u8>> {
    const LIST: &str = "elfsig_kfunc_arg_types";
    let number = |text: &str, radix: u32| {
        u64::from_str_radix(text, radix).map_err(|e| format!("{}: readelf said {text:?}: {e}", ko.display()))
    };
    let sections = Cmd::new("readelf").args(["-S", "-W"]).arg(ko).read()?;
    let (index, offset) = sections
        .lines()
        .find_map(|line| {
            let (index, rest) = line.trim_start().strip_prefix('[')?.split_once(']')?;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            (fields.first() == Some(&".BTF_ids")).then(|| (index.trim().to_owned(), fields.get(3).copied()))
        })
        .ok_or_else(|| format!("{} has no .BTF_ids section", ko.display()))?;
    let offset = number(offset.ok_or("readelf gave .BTF_ids no offset")?, 16)?;
    let symbols = Cmd::new("readelf").args(["-s", "-W"]).arg(ko).read()?;
    let value = symbols
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .find(|fields| fields.len() == 8 && fields[7] == LIST && fields[6] == index)
        .map(|fields| fields[1].to_owned())
        .ok_or_else(|| format!("{} has no {LIST} in .BTF_ids", ko.display()))?;
    let at = usize::try_from(offset + number(&value, 16)?).map_err(|e| e.to_string())?;
    let mut bytes = read(ko)?;
    let ids = bytes.get_mut(at..at + 8).ok_or_else(|| format!("{LIST} past the end of {}", ko.display()))?;
    let (first, second) = ids.split_at_mut(4);
    first.swap_with_slice(second);
    Ok(bytes)
}

/// `program` without its symbols and debug information (the release CLI is 8 times smaller
/// so, and quicker to verify under emulation).
fn stripped(program: &Path) -> Result<Vec<u8>> {
    let out = paths::target().join("vm/stage/stripped");
    fs::create_dir_all(paths::target().join("vm/stage")).map_err(|e| format!("cannot create the stage: {e}"))?;
    Cmd::new("strip").arg("-o").arg(&out).arg(program).run()?;
    read(&out)
}

/// The signed digest of a signed file, as `elfsig inspect --json` reports it.
fn digest_of(elfsig: &Path, bytes: &[u8]) -> Result<String> {
    let path = paths::target().join("vm/stage/digest-of");
    fs::write(&path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let json = Cmd::new(elfsig).args(["inspect", "--json"]).arg(&path).read()?;
    let report: serde_json::Value =
        serde_json::from_str(&json).map_err(|e| format!("`elfsig inspect --json` printed no JSON: {e}"))?;
    report["signature"]["digest"].as_str().map(str::to_owned).ok_or_else(|| format!("no digest in {json}"))
}

/// `program` with the ELF interpreter its `PT_INTERP` names replaced by `interpreter`, which
/// must fit in the bytes of the original name (the rest is NUL padding, as binfmt_elf reads up
/// to the first NUL).
fn with_interpreter(program: &[u8], interpreter: &str) -> Result<Vec<u8>> {
    let info = elfsig_core::elf::ExecInfo::read(&mut &program[..], program.len() as u64)
        .map_err(|e| format!("cannot read the program's headers: {e}"))?;
    let range = info.interpreter.ok_or("the program names no ELF interpreter")?;
    let (start, len) = (range.offset as usize, range.len as usize);
    if interpreter.len() >= len {
        return Err(format!("{interpreter} is longer than the interpreter name it replaces"));
    }
    let mut out = program.to_vec();
    out[start..start + len].fill(0);
    out[start..start + interpreter.len()].copy_from_slice(interpreter.as_bytes());
    Ok(out)
}

/// A detached PKCS#7 signature over `description` by `key`, for `add_key("blacklist", ...)`.
fn sign_description(description: &str, key: &KeyPair) -> Result<Vec<u8>> {
    let input = paths::target().join("vm/stage/description");
    fs::write(&input, description).map_err(|e| format!("cannot write {}: {e}", input.display()))?;
    Cmd::new("openssl")
        .args(["cms", "-sign", "-binary", "-noattr", "-nocerts", "-md", "sha256", "-outform", "DER", "-in"])
        .arg(&input)
        .arg("-signer")
        .arg(&key.cert)
        .arg("-inkey")
        .arg(&key.key)
        .read_bytes()
}
