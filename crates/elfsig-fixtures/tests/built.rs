//! The real binaries: each builds here or names the package it needs, has the expected ELF
//! header, passes readelf, and prints its expected output.

mod common;

use std::path::PathBuf;

use common::{ET_DYN, ET_EXEC, ET_REL, Elf, PT_INTERP, assert_readelf_clean, tool_or_skip};
use elfsig_fixtures::{ALL_BUILT, Built, build, emulated_output, expected_output, host_runs_i386, run_program};

/// Builds `what`, or prints why it cannot be built here and returns `None`. The only acceptable
/// failure is a missing tool, reported with the package that provides it.
fn build_or_skip(what: Built) -> Option<PathBuf> {
    match build(what) {
        Ok(path) => Some(path),
        Err(e) => {
            assert!(e.contains("is not installed"), "{what:?} failed to build: {e}");
            eprintln!("skipped {what:?}: {e}");
            None
        }
    }
}

#[test]
fn every_variant_builds_or_names_what_is_missing() {
    for &what in ALL_BUILT {
        if let Some(path) = build_or_skip(what) {
            assert!(path.is_absolute() && path.is_file(), "{what:?}: {path:?}");
            eprintln!("{what:?}: {}", path.display());
        }
    }
}

#[test]
fn building_again_returns_the_cached_file() {
    let Some(first) = build_or_skip(Built::CStatic) else {
        return;
    };
    let modified = first.metadata().unwrap().modified().unwrap();
    let again = build(Built::CStatic).unwrap();
    assert_eq!(first, again);
    assert_eq!(again.metadata().unwrap().modified().unwrap(), modified);
}

#[test]
fn headers_are_what_each_recipe_promises() {
    for &what in ALL_BUILT {
        let Some(path) = build_or_skip(what) else {
            continue;
        };
        let bytes = std::fs::read(&path).unwrap();
        let e = Elf::parse(&bytes);
        let interp = e.phdrs().iter().any(|p| p.p_type == PT_INTERP);
        // (64-bit, big-endian, e_type, e_machine, has PT_INTERP)
        let expected = match what {
            Built::CDynamic => (true, false, ET_EXEC, 62, true),
            Built::CPie | Built::Rust => (true, false, ET_DYN, 62, true),
            Built::CStatic | Built::Go | Built::NoSectionHeaders => (true, false, ET_EXEC, 62, false),
            Built::CStaticPie => (true, false, ET_DYN, 62, false),
            Built::C32 => (false, false, ET_DYN, 3, true),
            Built::ManySectionsObject => (true, false, ET_REL, 62, false),
            Built::BigEndian64 => (true, true, ET_EXEC, 22, false),
            Built::BigEndian32 => (false, true, ET_EXEC, 20, false),
        };
        assert_eq!((e.h.is64, e.h.big, e.h.e_type, e.h.e_machine, interp), expected, "{what:?}");
        assert_eq!(what.is_object(), e.h.e_type == ET_REL, "{what:?}");
    }
}

#[test]
fn readelf_prints_no_warnings() {
    let Some(readelf) = tool_or_skip("readelf", "binutils") else {
        return;
    };
    for &what in ALL_BUILT {
        if let Some(path) = build_or_skip(what) {
            assert_readelf_clean(&readelf, &path, &["Warning:", "Error:"]);
        }
    }
}

#[test]
fn native_programs_print_their_expected_output() {
    for &what in ALL_BUILT {
        let Some(expected) = expected_output(what) else {
            continue;
        };
        let Some(path) = build_or_skip(what) else {
            continue;
        };
        if what == Built::C32 && !host_runs_i386() {
            eprintln!("skipped running {what:?}: this kernel does not run i386 programs");
            continue;
        }
        let out = run_program(&path, &[] as &[&str]).unwrap();
        assert!(out.status.success(), "{what:?}: {:?}", out.status);
        assert_eq!(String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(expected), "{what:?}");
    }
}

#[test]
fn big_endian_programs_print_their_expected_output_under_qemu() {
    for &what in ALL_BUILT {
        let Some((qemu, expected)) = emulated_output(what) else {
            continue;
        };
        assert_eq!(expected_output(what), None, "{what:?} is not native");
        let Some(path) = build_or_skip(what) else {
            continue;
        };
        let Some(qemu) = tool_or_skip(qemu, "qemu-user") else {
            continue;
        };
        let out = run_program(&qemu, &[&path]).unwrap();
        assert!(out.status.success(), "{what:?}: {:?}", out.status);
        assert_eq!(out.stdout, expected, "{what:?}");
    }
}

#[test]
fn many_sections_object_uses_extended_numbering() {
    let Some(path) = build_or_skip(Built::ManySectionsObject) else {
        return;
    };
    let bytes = std::fs::read(&path).unwrap();
    let e = Elf::parse(&bytes);
    assert_eq!(e.h.e_shnum, 0, "e_shnum");
    assert_eq!(e.h.e_shstrndx, 0xffff, "e_shstrndx is SHN_XINDEX");
    let (count, shstrndx) = e.section0_size_link();
    assert!(count > 0xff00, "{count} sections");
    assert!(u64::from(shstrndx) >= 0xff00 && u64::from(shstrndx) < count);
    if let Some(elflint) = tool_or_skip("eu-elflint", "elfutils") {
        let (ok, lines) = common::elflint(&elflint, &path, &[]);
        assert!(ok && lines == ["No errors"], "elflint: {lines:#?}");
    }
}

#[test]
fn no_section_headers_binary_is_stripped_and_runs() {
    let Some(path) = build_or_skip(Built::NoSectionHeaders) else {
        return;
    };
    let bytes = std::fs::read(&path).unwrap();
    let e = Elf::parse(&bytes);
    assert_eq!((e.h.e_shoff, e.h.e_shnum, e.h.e_shstrndx), (0, 0, 0));
    assert_eq!(e.segments_end(), bytes.len() as u64, "ends with the last segment");

    let full = std::fs::read(build(Built::CStatic).unwrap()).unwrap();
    assert!(bytes.len() < full.len());
    assert_eq!(bytes[64..], full[64..bytes.len()], "only the ELF header differs");

    let out = run_program(&path, &[] as &[&str]).unwrap();
    assert!(out.status.success());
    assert_eq!(Some(out.stdout.as_slice()), expected_output(Built::NoSectionHeaders));
}
