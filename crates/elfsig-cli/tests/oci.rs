//! `elfsig oci sign` and `elfsig oci verify` on images in the OCI layout and in OCI archives,
//! with the container tools' own readers as oracles: skopeo (which checks every blob's digest
//! as it copies, and reads zstd layers) and umoci (which unpacks the layers, whiteouts and all,
//! as a runtime's root file system). Before and after re-signing, the unpacked trees differ
//! only in the signed files' sizes; every ELF file unpacked verifies or was left alone byte for
//! byte; each layer's entries keep their headers and pax records but the size; the
//! configuration, manifest and index keep every field but the digests. Then what `oci verify`
//! says of unsigned, tampered and foreign-signed images, multi-platform indexes, and that no
//! input crashes either command.

#[allow(unreachable_pub)]
mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::images::{self, Layer, TAR};
use common::{Keys, Scratch, elfsig, is_root, keys};
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;
use serde_json::Value;

fn system_binary(name: &str) -> Vec<u8> {
    fs::read(elfsig_fixtures::system_binary(name).unwrap_or_else(|| panic!("{name} is installed"))).unwrap()
}

fn run(program: &str, args: &[&std::ffi::OsStr]) -> Output {
    let out = Command::new(program).args(args).output().unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// A `security.capability` value (VFS_CAP_REVISION_2, effective, cap_net_raw permitted): binary,
/// with a newline byte in it, as pax records must carry it.
const CAPABILITY: [u8; 20] = [1, 0, 0, 2, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, b'\n'];

/// A path longer than ustar's fields: a pax `path` record names it.
const LONG_DIR: &str =
    "usr/lib/elfsig-test/a-directory-whose-name-is-long-enough/that-the-whole-path/passes-one-hundred-bytes";

/// An entry of a layer.
enum Put<'a> {
    File(&'a [u8]),
    Dir,
    Symlink(&'a str),
    HardLink(&'a str),
    Fifo,
}

/// Builds a layer's tar as Go's archive/tar would: ustar headers, pax records where a header
/// cannot say it.
struct LayerTar(tar::Builder<Vec<u8>>);

impl LayerTar {
    fn new() -> Self {
        LayerTar(tar::Builder::new(Vec::new()))
    }

    fn put(&mut self, path: &str, put: Put<'_>, mode: u32, owner: (u64, u64), pax: &[(&str, &[u8])]) -> &mut Self {
        let mut header = tar::Header::new_ustar();
        let (kind, data, link) = match put {
            Put::File(data) => (tar::EntryType::Regular, data, None),
            Put::Dir => (tar::EntryType::Directory, &[][..], None),
            Put::Symlink(to) => (tar::EntryType::Symlink, &[][..], Some(to)),
            Put::HardLink(to) => (tar::EntryType::Link, &[][..], Some(to)),
            Put::Fifo => (tar::EntryType::Fifo, &[][..], None),
        };
        header.set_entry_type(kind);
        header.set_mode(mode);
        header.set_uid(owner.0);
        header.set_gid(owner.1);
        header.set_mtime(1_700_000_000 + path.len() as u64);
        header.set_size(data.len() as u64);
        let mut records: Vec<(&str, &[u8])> = pax.to_vec();
        if path.len() > 99 {
            records.push(("path", path.as_bytes()));
        } else {
            header.set_path(path).unwrap();
        }
        if let Some(to) = link {
            header.set_link_name(to).unwrap();
        }
        if !records.is_empty() {
            self.0.append_pax_extensions(records).unwrap();
        }
        if path.len() > 99 {
            header.as_old_mut().name[..99].copy_from_slice(&path.as_bytes()[..99]);
        }
        header.set_cksum();
        self.0.append(&header, data).unwrap();
        self
    }

    fn finish(self) -> Vec<u8> {
        self.0.into_inner().unwrap()
    }
}

fn gzip(tar: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(tar).unwrap();
    encoder.finish().unwrap()
}

fn gz(tar: Vec<u8>) -> Layer {
    let blob = gzip(&tar);
    (tar, blob, "application/vnd.oci.image.layer.v1.tar+gzip")
}

fn zst(tar: Vec<u8>) -> Layer {
    let blob = zstd::encode_all(&tar[..], 1).unwrap();
    (tar, blob, "application/vnd.oci.image.layer.v1.tar+zstd")
}

fn plain(tar: Vec<u8>) -> Layer {
    (tar.clone(), tar, TAR)
}

/// An x86-64 program made for `machine` (`e_machine` changed): what signing sees of a program
/// for that architecture.
fn program_for(machine: u16) -> Vec<u8> {
    let mut bytes = elfsig_fixtures::synth(&elfsig_fixtures::Spec::new(
        elfsig_fixtures::Class::Elf64,
        elfsig_fixtures::Endian::Little,
    ));
    bytes[18..20].copy_from_slice(&machine.to_le_bytes());
    bytes
}

/// The ELF files of the base image that `oci sign` signs, as unpacked.
const SIGNED: &[&str] = &[
    "usr/bin/program",
    "usr/bin/owned-elsewhere",
    "usr/bin/capable",
    "usr/lib/libls.so",
    "usr/local/bin/added",
    "usr/bin/program-again",
    "usr/lib/firmware/remoteproc.mdt",
];

/// The base image's layers: a gzip layer with what a distribution's base holds (a set-user-ID
/// program and a second name for it, a symbolic link, a file owned by someone else, a file
/// with a capability in a pax record, a library, a program under a long path, scripts, text, a
/// FIFO, a program where firmware goes, which in an image is signed like any other (a lower
/// layer's symbolic link could put it anywhere), and ELF files left alone: a kernel module, a
/// program for another architecture); a zstd layer that deletes a file (whiteout), makes a directory opaque and
/// adds a program; a plain layer whose only program is signed already, which stays as it is.
fn base_layers(keys: &Keys, scratch: &Scratch) -> Vec<Layer> {
    let program = system_binary("true");
    let ls = system_binary("ls");
    let module = elfsig_fixtures::synth(
        &elfsig_fixtures::Spec::new(elfsig_fixtures::Class::Elf64, elfsig_fixtures::Endian::Little)
            .kind(elfsig_fixtures::Kind::Rel),
    );
    let s390x = elfsig_fixtures::synth(&elfsig_fixtures::Spec::new(
        elfsig_fixtures::Class::Elf64,
        elfsig_fixtures::Endian::Big,
    ));
    let mut base = LayerTar::new();
    base.put("usr/", Put::Dir, 0o755, (0, 0), &[])
        .put("usr/bin/", Put::Dir, 0o755, (0, 0), &[])
        .put("usr/bin/program", Put::File(&program), 0o4755, (0, 0), &[])
        .put("usr/bin/program-again", Put::HardLink("usr/bin/program"), 0o4755, (0, 0), &[])
        .put("usr/bin/symlink", Put::Symlink("program"), 0o777, (0, 0), &[])
        .put("usr/bin/owned-elsewhere", Put::File(&program), 0o750, (1234, 5678), &[])
        .put(
            "usr/bin/capable",
            Put::File(&program),
            0o755,
            (0, 0),
            &[("SCHILY.xattr.security.capability", &CAPABILITY[..])],
        )
        .put("usr/bin/script", Put::File(b"#!/bin/sh\necho hello\n"), 0o755, (0, 0), &[])
        .put("usr/lib/", Put::Dir, 0o755, (0, 0), &[])
        .put("usr/lib/libls.so", Put::File(&ls), 0o644, (0, 0), &[])
        .put(&format!("{LONG_DIR}/program"), Put::File(&program), 0o755, (0, 0), &[])
        .put("usr/lib/modules/7.0.0/extra/driver.ko", Put::File(&module), 0o644, (0, 0), &[])
        .put("usr/lib/firmware/remoteproc.mdt", Put::File(&program), 0o644, (0, 0), &[])
        .put("usr/share/", Put::Dir, 0o755, (0, 0), &[])
        .put("usr/share/elfsig-test/hello-s390x", Put::File(&s390x), 0o755, (0, 0), &[])
        .put("usr/share/removed-later", Put::File(b"gone in the next layer\n"), 0o644, (0, 0), &[])
        .put("usr/share/opaque/", Put::Dir, 0o755, (0, 0), &[])
        .put("usr/share/opaque/old", Put::File(b"hidden by the next layer\n"), 0o644, (0, 0), &[])
        .put("run/", Put::Dir, 0o755, (0, 0), &[])
        .put("run/fifo", Put::Fifo, 0o600, (0, 0), &[]);
    let mut second = LayerTar::new();
    second
        .put("usr/share/.wh.removed-later", Put::File(b""), 0o644, (0, 0), &[])
        .put("usr/share/opaque/", Put::Dir, 0o755, (0, 0), &[])
        .put("usr/share/opaque/.wh..wh..opq", Put::File(b""), 0o644, (0, 0), &[])
        .put("usr/share/opaque/new", Put::File(b"the opaque directory's only file\n"), 0o644, (0, 0), &[])
        .put("usr/local/bin/added", Put::File(&ls), 0o755, (0, 0), &[]);
    let presigned = scratch.write("presigned", &program);
    common::sign(keys, &presigned);
    let presigned = fs::read(presigned).unwrap();
    let mut third = LayerTar::new();
    third.put("usr/local/bin/presigned", Put::File(&presigned), 0o755, (0, 0), &[]).put(
        "etc/motd",
        Put::File(b"signed images only\n"),
        0o644,
        (0, 0),
        &[],
    );
    vec![gz(base.finish()), zst(second.finish()), plain(third.finish())]
}

/// The layout `name` in `scratch` holding the base image as `latest`.
fn base_image(keys: &Keys, scratch: &Scratch, name: &str) -> PathBuf {
    let dir = scratch.path(name);
    let manifest = images::image(&dir, "amd64", &base_layers(keys, scratch));
    images::layout(&dir, &[manifest], "latest");
    dir
}

fn oci_sign(keys: &Keys) -> assert_cmd::Command {
    let mut cmd = elfsig();
    cmd.args(["oci", "sign", "--key"]).arg(&keys.key).arg("--cert").arg(&keys.cert);
    cmd
}

fn oci_verify(keys: &Keys) -> assert_cmd::Command {
    let mut cmd = elfsig();
    cmd.args(["oci", "verify", "--cert"]).arg(&keys.cert);
    cmd
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

/// The blob a descriptor names in the layout `dir`.
fn blob(dir: &Path, descriptor: &Value) -> Vec<u8> {
    let digest = descriptor["digest"].as_str().unwrap();
    fs::read(dir.join("blobs/sha256").join(digest.trim_start_matches("sha256:"))).unwrap()
}

/// The manifest and configuration of the image the layout's index lists first.
fn manifest_and_config(dir: &Path) -> (Value, Value) {
    let index = json(&dir.join("index.json"));
    let manifest: Value = serde_json::from_slice(&blob(dir, &index["manifests"][0])).unwrap();
    let config: Value = serde_json::from_slice(&blob(dir, &manifest["config"])).unwrap();
    (manifest, config)
}

/// What skopeo and umoci make of the image `latest` of the layout `dir`: skopeo copies it
/// (checking each blob's digest, reading zstd, writing gzip, which umoci reads), umoci unpacks
/// it into a bundle. The unpacked root.
fn unpacked(dir: &Path, scratch: &Scratch, name: &str) -> PathBuf {
    let gzipped = scratch.path(&format!("{name}-gzip"));
    let (from, to) = (format!("oci:{}:latest", dir.display()), format!("oci:{}:latest", gzipped.display()));
    run("skopeo", &["copy", "-q", "--dest-compress-format", "gzip", "--dest-compress", &from, &to].map(|a| a.as_ref()));
    let bundle = scratch.path(&format!("{name}-bundle"));
    let image = format!("{}:latest", gzipped.display());
    let mut args = vec!["unpack", "--image", image.as_str()];
    if !is_root() {
        args.push("--rootless");
    }
    let bundle_arg = bundle.to_str().unwrap().to_owned();
    args.push(&bundle_arg);
    run("umoci", &args.iter().map(|a| a.as_ref()).collect::<Vec<_>>());
    bundle.join("rootfs")
}

/// Every name under `root`: its kind, mode, owner, links, time (not a directory's), link target
/// and capability; and its size.
fn listing(root: &Path) -> BTreeMap<String, (String, u64)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            let name = path.strip_prefix(root).unwrap().display().to_string();
            let target = fs::read_link(&path).map(|t| t.display().to_string()).unwrap_or_default();
            let capability = xattr::get(&path, "security.capability").ok().flatten();
            let size = if meta.is_dir() { 0 } else { meta.size() };
            // umoci makes directories a layer does not list when it unpacks: their times are
            // its own (the layers' entries are compared below).
            let time = if meta.is_dir() { 0 } else { meta.mtime() };
            let what = format!(
                "{:o} {}:{} links {} time {} -> {target} cap {capability:?}",
                meta.mode(),
                meta.uid(),
                meta.gid(),
                if meta.is_dir() { 0 } else { meta.nlink() },
                time
            );
            out.insert(name, (what, size));
            if meta.is_dir() {
                stack.push(path);
            }
        }
    }
    out
}

/// Each entry of a layer's tar, by an independent reader (the tar crate): its path, header
/// fields but the size and checksum, pax records but the size; and its contents.
fn entries(tar: &[u8]) -> Vec<(String, Vec<u8>)> {
    use std::io::Read;
    let mut archive = tar::Archive::new(tar);
    let mut out = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let header = entry.header().clone();
        // Every byte of the header but its size and checksum (owners' names, device numbers).
        let mut raw = header.as_bytes().to_vec();
        raw[124..136].fill(0);
        raw[148..156].fill(0);
        let mut pax: Vec<String> = entry
            .pax_extensions()
            .unwrap()
            .map(|records| {
                records
                    .filter_map(Result::ok)
                    .filter(|r| r.key() != Ok("size"))
                    .map(|r| format!("{}={:?}", r.key().unwrap_or("?"), r.value_bytes()))
                    .collect()
            })
            .unwrap_or_default();
        pax.sort();
        let what = format!(
            "{} {:?} {:o} {}:{} {} {:?} {pax:?} {raw:?}",
            entry.path().unwrap().display(),
            header.entry_type(),
            header.mode().unwrap(),
            header.uid().unwrap(),
            header.gid().unwrap(),
            header.mtime().unwrap(),
            entry.link_name().unwrap(),
        );
        let mut contents = Vec::new();
        entry.read_to_end(&mut contents).unwrap();
        out.push((what, contents));
    }
    out
}

/// The uncompressed tar of a layer blob.
fn layer_tar(blob: &[u8], media_type: &str) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    if media_type.ends_with("+gzip") {
        flate2::read::GzDecoder::new(blob).read_to_end(&mut out).unwrap();
    } else if media_type.ends_with("+zstd") {
        out = zstd::decode_all(blob).unwrap();
    } else {
        out = blob.to_vec();
    }
    out
}

fn is_elf(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
        && fs::read(path).is_ok_and(|bytes| bytes.starts_with(b"\x7fELF"))
}

#[test]
fn images_are_resigned_faithfully_in_every_compression() {
    let keys = keys("oci");
    let scratch = Scratch::new();
    let unsigned = base_image(&keys, &scratch, "unsigned");
    let signed = scratch.path("signed");
    oci_sign(&keys)
        .arg("-o")
        .arg(&signed)
        .arg(&unsigned)
        .assert()
        .success()
        .stdout(contains(": 6 ELF files signed, 2 left alone (").and(contains(": 1 ELF file signed -> sha256:")))
        .stdout(contains(": 1 ELF file signed so already; unchanged").and(contains("signed: signed\n")));

    // What the tools unpack: only the signed files' sizes differ.
    let before = unpacked(&unsigned, &scratch, "before");
    let after = unpacked(&signed, &scratch, "after");
    let (old, new) = (listing(&before), listing(&after));
    assert_eq!(old.keys().collect::<Vec<_>>(), new.keys().collect::<Vec<_>>(), "the same names");
    assert!(!new.contains_key("usr/share/removed-later") && !new.contains_key("usr/share/opaque/old"));
    for (name, (what, size)) in &old {
        let (new_what, new_size) = &new[name];
        assert_eq!(what, new_what, "{name}: kept as it was");
        let long = *name == format!("{LONG_DIR}/program");
        if SIGNED.contains(&name.as_str()) || long {
            assert!(new_size > size, "{name}: signed, so longer");
        } else {
            assert_eq!(size, new_size, "{name}: not signed, so the same size");
        }
    }
    if is_root() {
        assert!(new["usr/bin/capable"].0.contains(&format!("{:?}", Some(CAPABILITY.to_vec()))), "the capability");
        assert!(
            new["usr/bin/owned-elsewhere"].0.contains("1234:5678") && new["usr/bin/program"].0.starts_with("104755")
        );
    }
    // Every ELF file unpacked verifies, or was left alone byte for byte.
    for (name, _) in new.iter().filter(|(name, _)| is_elf(&after.join(name))) {
        let left_alone = ["driver.ko", "hello-s390x"].iter().any(|n| name.ends_with(n));
        if left_alone {
            assert_eq!(fs::read(after.join(name)).unwrap(), fs::read(before.join(name)).unwrap(), "{name}");
        } else {
            common::verify(&keys, &after.join(name)).success();
        }
    }

    // Each layer's entries, read by another reader: headers and pax records kept, order too.
    let ((old_manifest, old_config), (new_manifest, new_config)) =
        (manifest_and_config(&unsigned), manifest_and_config(&signed));
    let layers = |manifest: &Value| manifest["layers"].as_array().unwrap().clone();
    for (old_layer, new_layer) in layers(&old_manifest).iter().zip(layers(&new_manifest).iter()) {
        let media_type = old_layer["mediaType"].as_str().unwrap();
        assert_eq!(new_layer["mediaType"], old_layer["mediaType"], "compressed as it was");
        assert_eq!(new_layer["annotations"], old_layer["annotations"]);
        let (old_entries, new_entries) = (
            entries(&layer_tar(&blob(&unsigned, old_layer), media_type)),
            entries(&layer_tar(&blob(&signed, new_layer), media_type)),
        );
        assert_eq!(old_entries.len(), new_entries.len());
        for ((what, contents), (new_what, new_contents)) in old_entries.iter().zip(&new_entries) {
            assert_eq!(what, new_what);
            if !contents.starts_with(b"\x7fELF") {
                assert_eq!(contents, new_contents, "{what}");
            }
        }
    }
    // The plain layer, signed already, is the same blob; the others are new.
    let digests = |manifest: &Value| layers(manifest).iter().map(|l| l["digest"].clone()).collect::<Vec<_>>();
    let (old_digests, new_digests) = (digests(&old_manifest), digests(&new_manifest));
    assert!(old_digests[0] != new_digests[0] && old_digests[1] != new_digests[1] && old_digests[2] == new_digests[2]);
    // The configuration: diff_ids follow the layers, every other field as it was, in order.
    let diff_ids = |config: &Value| config["rootfs"]["diff_ids"].as_array().unwrap().clone();
    for (index, (layer, diff_id)) in layers(&new_manifest).iter().zip(diff_ids(&new_config)).enumerate() {
        let tar = layer_tar(&blob(&signed, layer), layer["mediaType"].as_str().unwrap());
        assert_eq!(diff_id.as_str().unwrap(), images::sha256(&tar), "layer {index}'s diff_id");
    }
    let without = |config: &Value| {
        let mut config = config.clone();
        config["rootfs"]["diff_ids"] = Value::Null;
        serde_json::to_string(&config).unwrap()
    };
    assert_eq!(without(&old_config), without(&new_config));
    let without_blobs = |manifest: &Value| {
        let mut manifest = manifest.clone();
        let object = manifest.as_object_mut().unwrap();
        let mut config = object.shift_remove("config").unwrap();
        for descriptor in object["layers"].as_array_mut().unwrap().iter_mut().chain([&mut config]) {
            descriptor["digest"] = Value::Null;
            descriptor["size"] = Value::Null;
        }
        object.insert("config".into(), config);
        serde_json::to_string(&manifest).unwrap()
    };
    assert_eq!(without_blobs(&old_manifest), without_blobs(&new_manifest), "the manifest but its digests");
    let index = json(&signed.join("index.json"));
    assert_eq!(index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"], "latest");
    assert_eq!(index["manifests"][0]["platform"], json(&unsigned.join("index.json"))["manifests"][0]["platform"]);

    // The same image and key give the same bytes; signing the result again changes nothing.
    let again = scratch.path("again");
    oci_sign(&keys).arg("-o").arg(&again).arg(&unsigned).assert().success();
    assert_eq!(tree(&again), tree(&signed));
    let index_before = fs::read(signed.join("index.json")).unwrap();
    oci_sign(&keys).arg(&signed).assert().success().stdout(contains("signed so already; unchanged"));
    assert_eq!(fs::read(signed.join("index.json")).unwrap(), index_before);
    oci_verify(&keys).arg(&signed).assert().success().stdout(contains("OK (").count(3));
}

/// Every file under `dir`, by its path below it, with its bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(below) = stack.pop() {
        for entry in fs::read_dir(&below).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(path.strip_prefix(dir).unwrap().to_owned(), fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// An OCI archive, as skopeo writes one, is re-signed in place; skopeo reads the result back,
/// and `oci verify` reads archives too.
#[test]
fn archives_are_resigned_in_place_and_skopeo_reads_them() {
    let keys = keys("oci");
    let scratch = Scratch::new();
    let unsigned = base_image(&keys, &scratch, "unsigned");
    let archive = scratch.path("image.tar");
    let (from, to) = (format!("oci:{}:latest", unsigned.display()), format!("oci-archive:{}", archive.display()));
    run("skopeo", &["copy", "-q", &from, &to].map(|a| a.as_ref()));
    fs::set_permissions(&archive, fs::Permissions::from_mode(0o640)).unwrap();
    oci_verify(&keys).arg(&archive).assert().failure().stderr(contains("usr/bin/program: not signed"));
    oci_sign(&keys).arg(&archive).assert().success();
    assert_eq!(fs::metadata(&archive).unwrap().mode() & 0o777, 0o640, "the archive keeps its mode");
    oci_verify(&keys).arg(&archive).assert().success();
    let back = scratch.path("back");
    let (from, to) = (format!("oci-archive:{}", archive.display()), format!("oci:{}:latest", back.display()));
    run("skopeo", &["copy", "-q", &from, &to].map(|a| a.as_ref()));
    oci_verify(&keys).arg(&back).assert().success();
    let listed = run("tar", &["tf".as_ref(), archive.as_os_str()]);
    let names = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(names.starts_with("oci-layout\nindex.json\nblobs/\nblobs/sha256/\n"), "{names}");
    // As many blobs as the new image has: three layers, a configuration, a manifest.
    assert_eq!(names.lines().filter(|l| l.starts_with("blobs/sha256/") && l.len() > 20).count(), 5);
}

/// In a multi-platform index, images for other architectures are left as they are unless
/// `--architecture` names them; ELF files for another machine inside an image are left alone.
#[test]
fn other_platforms_are_left_alone_unless_asked_for() {
    let keys = keys("oci");
    let scratch = Scratch::new();
    let dir = scratch.path("multi");
    let mut amd64 = LayerTar::new();
    amd64.put("usr/bin/true", Put::File(&system_binary("true")), 0o755, (0, 0), &[]);
    let mut arm64 = LayerTar::new();
    arm64.put("usr/bin/hello", Put::File(&program_for(183)), 0o755, (0, 0), &[]).put(
        "usr/bin/hello-x86-64",
        Put::File(&program_for(62)),
        0o755,
        (0, 0),
        &[],
    );
    let manifests =
        [images::image(&dir, "amd64", &[gz(amd64.finish())]), images::image(&dir, "arm64", &[gz(arm64.finish())])];
    let nested = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{}],"annotations":{{"org.example":"kept"}}}}"#,
        manifests.join(",")
    );
    let (digest, size) = images::blob(&dir, nested.as_bytes());
    images::layout(
        &dir,
        &[format!(r#"{{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"{digest}","size":{size}}}"#)],
        "multi",
    );
    let children = |dir: &Path| {
        let top = json(&dir.join("index.json"));
        let nested: Value = serde_json::from_slice(&blob(dir, &top["manifests"][0])).unwrap();
        assert_eq!(nested["annotations"]["org.example"], "kept");
        nested["manifests"].as_array().unwrap().iter().map(|m| m["digest"].clone()).collect::<Vec<_>>()
    };
    let original = children(&dir);
    let host = scratch.path("host");
    oci_sign(&keys).args(["--architecture", "amd64", "-o"]).arg(&host).arg(&dir).assert().success();
    let signed = children(&host);
    assert!(signed[0] != original[0] && signed[1] == original[1], "amd64 signed, arm64 as it was");
    // The arm64 image's blobs came along, unchanged.
    oci_verify(&keys).args(["--architecture", "arm64"]).arg(&host).assert().failure().stderr(contains("not signed"));
    let all = scratch.path("all");
    oci_sign(&keys)
        .args(["--architecture", "all", "-o"])
        .arg(&all)
        .arg(&dir)
        .assert()
        .success()
        .stdout(contains("1 ELF file signed, 1 left alone (1 for other architectures)"));
    let both = children(&all);
    assert!(both[0] == signed[0] && both[1] != original[1]);
    oci_verify(&keys).args(["--architecture", "all"]).arg(&all).assert().success();
    oci_sign(&keys)
        .args(["--architecture", "s390x", "-o"])
        .arg(scratch.path("none"))
        .arg(&dir)
        .assert()
        .failure()
        .stderr(contains("no image for the architectures asked for"));
    assert!(!scratch.path("none").exists());
}

/// `oci verify` names each file the module would refuse, layer by layer: unsigned, signed by
/// another key, changed after signing. A damaged blob is found before anything is written.
#[test]
fn verify_names_what_the_module_would_refuse_and_damage_is_found() {
    let other = keys("oci-other");
    let keys = keys("oci");
    let scratch = Scratch::new();
    let unsigned = base_image(&keys, &scratch, "unsigned");
    oci_verify(&keys)
        .arg(&unsigned)
        .assert()
        .failure()
        .stderr(contains("unsigned layer sha256:").and(contains("6 ELF files the module would refuse")))
        .stderr(contains(":usr/bin/program: not signed").and(contains(":usr/local/bin/added: not signed")))
        .stdout(contains("OK (1 ELF file verified)"));
    let by_other = scratch.path("by-other");
    oci_sign(&other).arg("-o").arg(&by_other).arg(&unsigned).assert().success();
    oci_verify(&keys).arg(&by_other).assert().failure().stderr(contains("usr/bin/capable"));

    // A signed program changed in its layer afterwards, the layer's digests made to match.
    let signed = scratch.path("signed");
    oci_sign(&keys).arg("-o").arg(&signed).arg(&unsigned).assert().success();
    let (manifest, _) = manifest_and_config(&signed);
    let layer = &manifest["layers"][0];
    let mut tar = layer_tar(&blob(&signed, layer), layer["mediaType"].as_str().unwrap());
    let at = tar.windows(4).position(|w| w == b"\x7fELF").unwrap() + 200;
    tar[at] ^= 0x01;
    let tampered = scratch.path("tampered");
    let manifest = images::image(&tampered, "amd64", &[gz(tar)]);
    images::layout(&tampered, &[manifest], "latest");
    oci_verify(&keys).arg(&tampered).assert().failure().stderr(contains("usr/bin/program"));

    // A blob that does not match its digest: found, nothing written.
    let damaged = scratch.path("damaged");
    let manifest = images::image(&damaged, "amd64", &base_layers(&keys, &scratch));
    images::layout(&damaged, &[manifest], "latest");
    let (manifest, _) = manifest_and_config(&damaged);
    let digest = manifest["layers"][1]["digest"].as_str().unwrap().trim_start_matches("sha256:").to_owned();
    let path = damaged.join("blobs/sha256").join(digest);
    let mut bytes = fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    fs::write(&path, bytes).unwrap();
    let out = scratch.path("out");
    oci_sign(&keys).arg("-o").arg(&out).arg(&damaged).assert().failure().stderr(contains("the layout is damaged"));
    oci_verify(&keys).arg(&damaged).assert().failure().stderr(contains("the layout is damaged"));
    assert!(!out.exists(), "a failed sign leaves no output");
    let before = tree(&damaged);
    oci_sign(&keys).arg(&damaged).assert().failure();
    assert_eq!(tree(&damaged), before, "a failed sign in place leaves the layout as it was");
}

/// A configuration whose diff_id is not its layer's tar, or that is for another platform than
/// the index lists it for: the engine would unpack or pick something else than elfsig read.
#[test]
fn images_whose_documents_disagree_are_refused() {
    let keys = keys("oci");
    let scratch = Scratch::new();
    let mut layer = LayerTar::new();
    layer.put("usr/bin/true", Put::File(&system_binary("true")), 0o755, (0, 0), &[]);
    let tar = layer.finish();
    let mut other = tar.clone();
    other.extend_from_slice(&[0; 512]);
    // A diff_id of other bytes than the blob's.
    let wrong_diff_id = scratch.path("wrong-diff-id");
    let blob = gzip(&tar);
    let manifest =
        images::image(&wrong_diff_id, "amd64", &[(other, blob, "application/vnd.oci.image.layer.v1.tar+gzip")]);
    images::layout(&wrong_diff_id, &[manifest], "latest");
    oci_verify(&keys).arg(&wrong_diff_id).assert().failure().stderr(contains("the image is damaged"));
    oci_sign(&keys).arg(&wrong_diff_id).assert().failure().stderr(contains("the image is damaged"));
    // Listed for amd64, configured for arm64.
    let mismatch = scratch.path("mismatch");
    let manifest = images::image(&mismatch, "arm64", &[gz(tar)]);
    images::layout(&mismatch, &[manifest.replace("\"arm64\"", "\"amd64\"")], "latest");
    oci_verify(&keys)
        .arg(&mismatch)
        .assert()
        .failure()
        .stderr(contains("listed for linux/amd64, and its configuration is for linux/arm64"));
}

/// What described the old blob for partial pulls goes with it; new files are readable by all.
#[test]
fn a_new_layer_drops_what_described_the_old_blob() {
    let keys = keys("oci");
    let scratch = Scratch::new();
    let dir = scratch.path("chunked");
    let mut layer = LayerTar::new();
    layer.put("usr/bin/true", Put::File(&system_binary("true")), 0o755, (0, 0), &[]);
    let manifest = images::image(&dir, "amd64", &[zst(layer.finish())]);
    images::layout(&dir, &[manifest], "latest");
    // Give the layer zstd:chunked's annotations, as podman writes them.
    let (mut manifest, _) = manifest_and_config(&dir);
    manifest["layers"][0]["annotations"]["io.github.containers.zstd-chunked.manifest-position"] = "1:2:3:4".into();
    manifest["layers"][0]["annotations"]["io.github.containers.zstd-chunked.manifest-checksum"] = "sha256:00".into();
    let (digest, size) = images::blob(&dir, &serde_json::to_vec(&manifest).unwrap());
    images::layout(&dir, &[images::manifest_listed(&digest, size)], "latest");
    let signed = scratch.path("signed");
    oci_sign(&keys).arg("-o").arg(&signed).arg(&dir).assert().success();
    let (manifest, _) = manifest_and_config(&signed);
    assert_eq!(
        manifest["layers"][0]["annotations"],
        serde_json::json!({"org.example.layer": "0"}),
        "only the annotations about the old blob went"
    );
    for path in tree(&signed).keys() {
        assert_eq!(fs::metadata(signed.join(path)).unwrap().mode() & 0o777, 0o644, "{}", path.display());
    }
}

#[test]
fn usage_errors_and_images_elfsig_cannot_read() {
    let keys = keys("oci");
    let scratch = Scratch::new();
    oci_sign(&keys).arg(scratch.path("missing")).assert().code(1).stderr(contains("cannot open"));
    oci_sign(&keys).arg(scratch.dir.path()).assert().code(1).stderr(contains("not an OCI image layout"));
    oci_sign(&keys).args(["--architecture", "x86_64"]).arg(scratch.dir.path()).assert().code(2);
    let not_archive = scratch.write("not.tar", b"not a tar at all");
    oci_sign(&keys).arg(&not_archive).assert().code(1);
    // An encrypted layer: said so.
    let dir = scratch.path("encrypted");
    let (digest, size) = images::blob(&dir, b"ciphertext");
    let (config_digest, config_size) = images::blob(
        &dir,
        format!(r#"{{"architecture":"amd64","os":"linux","rootfs":{{"type":"layers","diff_ids":["{digest}"]}}}}"#)
            .as_bytes(),
    );
    let manifest = format!(
        r#"{{"schemaVersion":2,"config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{config_digest}","size":{config_size}}},"layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip+encrypted","digest":"{digest}","size":{size}}}]}}"#
    );
    let (digest, size) = images::blob(&dir, manifest.as_bytes());
    images::layout(&dir, &[images::manifest_listed(&digest, size)], "x");
    oci_sign(&keys).arg(&dir).assert().code(1).stderr(contains("decrypt the image"));
    // An existing, non-empty output directory is not overwritten.
    let unsigned = base_image(&keys, &scratch, "unsigned");
    oci_sign(&keys).arg("-o").arg(&dir).arg(&unsigned).assert().code(2).stderr(contains("not empty"));
    // An output it cannot write: said, and the image left as it was.
    let before = tree(&unsigned);
    oci_sign(&keys).arg("-o").arg("/proc/elfsig-oci-output").arg(&unsigned).assert().code(1).stderr(contains("cannot"));
    assert_eq!(tree(&unsigned), before);
}

/// The checks the fuzz target `oci` makes (`common/images.rs`), on the base image's layers and
/// on broken copies of one: cut short anywhere, one byte changed anywhere.
#[test]
fn no_layer_crashes_either_command_and_what_oci_sign_writes_verifies() {
    let keys = keys("oci");
    let scratch = Scratch::new();
    let mut inputs: Vec<Vec<u8>> = vec![Vec::new(), b"not a tar at all\n".to_vec(), vec![0; 1024]];
    inputs.extend(base_layers(&keys, &scratch).into_iter().map(|(tar, _, _)| tar));
    let original = inputs[3].clone();
    let step = original.len() / 60;
    for at in (0..2048).step_by(97).chain((2048..original.len()).step_by(step)) {
        inputs.push(original[..at].to_vec());
        let mut flipped = original.clone();
        flipped[at] ^= 0x5a;
        inputs.push(flipped);
    }
    let signed: Vec<bool> =
        inputs.iter().enumerate().map(|(index, bytes)| images::check(bytes, &format!("layer-{index}"))).collect();
    // The real layers (and an empty archive of zeros) are signed: the checks above ran.
    assert_eq!(&signed[2..6], &[true; 4], "the base image's layers are signed");
}
