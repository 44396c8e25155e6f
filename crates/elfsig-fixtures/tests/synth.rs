//! The synthetic files: accepted by readelf and eu-elflint, laid out as documented, and running.

mod common;

use common::{ET_DYN, ET_EXEC, ET_REL, Elf, PT_LOAD, Scratch, assert_readelf_clean, tool_or_skip};
use elfsig_fixtures::{
    Class, Endian, HELLO_OUTPUT, Kind, Sections, Spec, TRAILING, run_program, synth, synth_matrix, synth_specs,
};

#[test]
fn matrix_names_match_specs() {
    let matrix = synth_matrix();
    let specs = synth_specs();
    assert_eq!(matrix.len(), specs.len());
    for ((name, bytes), spec) in matrix.iter().zip(&specs) {
        assert_eq!(name, &spec.name());
        assert_eq!(bytes, &synth(spec), "{name} is not deterministic");
    }
    for name in [
        "elf64-le-exec-named",
        "elf32-be-dyn-nosections",
        "elf64-be-rel-nonames",
        "elf32-le-exec-named-x3",
        "elf64-le-exec-named-trailing",
        "elf64-le-rel-extended",
        "elf32-be-exec-extended",
    ] {
        assert!(matrix.iter().any(|(n, _)| n == name), "{name} missing");
    }
}

#[test]
fn readelf_prints_no_warnings() {
    let Some(readelf) = tool_or_skip("readelf", "binutils") else {
        return;
    };
    let dir = Scratch::new("synth-readelf");
    for (name, bytes) in synth_matrix() {
        assert_readelf_clean(&readelf, &dir.write(&name, &bytes), &["Warning", "Error"]);
    }
}

/// eu-elflint reads names through `.shstrtab`; without one it reports each section's name as
/// invalid. That is the only complaint it may have, and only about `nonames` files.
fn is_missing_names_complaint(line: &str) -> bool {
    (line.starts_with("section [") && line.ends_with("]: invalid name")) || line == "cannot get section header"
}

#[test]
fn elflint_reports_no_errors() {
    let Some(elflint) = tool_or_skip("eu-elflint", "elfutils") else {
        return;
    };
    let dir = Scratch::new("synth-elflint");
    for (name, bytes) in synth_matrix() {
        let path = dir.write(&name, &bytes);
        let (ok, lines) = common::elflint(&elflint, &path, &[]);
        if name.contains("-nonames") {
            assert!(!lines.is_empty(), "{name}: elflint now accepts a file without names");
            for line in &lines {
                assert!(is_missing_names_complaint(line), "{name}: elflint: {line}");
            }
        } else {
            assert!(ok && lines == ["No errors"], "{name}: elflint: {lines:#?}");
        }
    }
}

#[test]
fn headers_match_the_spec() {
    for spec in synth_specs() {
        let bytes = synth(&spec);
        let e = Elf::parse(&bytes);
        let name = spec.name();
        assert_eq!(e.h.is64, spec.class == Class::Elf64, "{name}");
        assert_eq!(e.h.big, spec.endian == Endian::Big, "{name}");
        let e_type = match spec.kind {
            Kind::Exec => ET_EXEC,
            Kind::Dyn => ET_DYN,
            Kind::Rel => ET_REL,
        };
        assert_eq!(e.h.e_type, e_type, "{name}");
        let machine = match (spec.class, spec.endian) {
            (Class::Elf64, Endian::Little) => 62,
            (Class::Elf32, Endian::Little) => 3,
            (Class::Elf64, Endian::Big) => 22,
            (Class::Elf32, Endian::Big) => 20,
        };
        assert_eq!(e.h.e_machine, machine, "{name}");
        assert_eq!(e.h.e_machine, spec.e_machine(), "{name}");
        assert_eq!(u64::from(e.h.e_ehsize), if e.h.is64 { 64 } else { 52 });

        match spec.sections {
            Sections::None => {
                assert_eq!((e.h.e_shoff, e.h.e_shnum, e.h.e_shstrndx), (0, 0, 0), "{name}");
            }
            Sections::NoNames => {
                assert_eq!((e.h.e_shnum, e.h.e_shstrndx), (5, 0), "{name}");
            }
            s @ Sections::Named { .. } if s.is_extended() => {
                assert_eq!((e.h.e_shnum, e.h.e_shstrndx), (0, 0xffff), "{name}");
                let (size, link) = e.section0_size_link();
                assert_eq!(size, s.count() as u64, "{name}");
                assert_eq!(u64::from(link), size - 1, "{name}: .shstrtab is last");
                assert!(size >= 0xff00, "{name}");
            }
            s @ Sections::Named { .. } => {
                assert_eq!(usize::from(e.h.e_shnum), s.count(), "{name}");
                assert_eq!(usize::from(e.h.e_shstrndx), s.count() - 1, "{name}");
                assert_eq!(e.section0_size_link(), (0, 0), "{name}");
            }
        }

        // Linker-like layout: section header table last (aligned), then the trailing bytes.
        let body = bytes.len() as u64 - spec.trailing.len() as u64;
        assert!(bytes.ends_with(&spec.trailing), "{name}");
        if e.h.e_shoff != 0 {
            let word = if e.h.is64 { 8 } else { 4 };
            assert_eq!(e.h.e_shoff % word, 0, "{name}");
            assert_eq!(e.h.e_shoff + e.section_count() * u64::from(e.h.e_shentsize), body, "{name}");
        } else if spec.has_segments() {
            assert_eq!(e.segments_end(), body, "{name}: the file ends with the data segment");
        }

        if spec.has_segments() {
            assert_eq!(e.h.e_phoff, u64::from(e.h.e_ehsize), "{name}");
            let loads: Vec<_> = e.phdrs().into_iter().filter(|p| p.p_type == PT_LOAD).collect();
            assert_eq!(loads.len(), 2, "{name}");
            for p in &loads {
                assert_eq!(p.p_offset % p.p_align, p.p_vaddr % p.p_align, "{name}");
                assert!(p.p_filesz <= p.p_memsz, "{name}");
            }
            assert_eq!(loads[0].p_offset, 0, "{name}: headers are loaded");
            assert_eq!(loads[0].p_flags, 5, "{name}: R+X");
            assert_eq!(loads[1].p_flags, 6, "{name}: R+W");
            assert!(loads[1].p_memsz > loads[1].p_filesz, "{name}: has .bss");
            let entry = e.h.e_entry;
            assert!(
                entry >= loads[0].p_vaddr && entry < loads[0].p_vaddr + loads[0].p_filesz,
                "{name}: entry in the R+X segment"
            );
        } else {
            assert_eq!((e.h.e_phoff, e.h.e_phnum), (0, 0), "{name}");
        }
    }
}

#[test]
fn trailing_bytes_are_appended_verbatim() {
    let spec = Spec::new(Class::Elf32, Endian::Big);
    let plain = synth(&spec);
    let with = synth(&spec.clone().trailing(TRAILING));
    assert_eq!(&with[..plain.len()], &plain[..]);
    assert_eq!(&with[plain.len()..], TRAILING);
}

#[test]
fn extended_numbering_starts_at_0xff00() {
    // 0xff00 - 6 extra sections make 0xfefa + 6 = 0xff00 entries: extended, but .shstrtab's
    // index 0xfeff still fits in e_shstrndx.
    let spec = Spec::new(Class::Elf64, Endian::Big).sections(Sections::Named { extra: 0xff00 - 6 });
    assert!(spec.sections.is_extended());
    let bytes = synth(&spec);
    let e = Elf::parse(&bytes);
    assert_eq!((e.h.e_shnum, e.h.e_shstrndx), (0, 0xfeff));
    assert_eq!(e.section0_size_link(), (0xff00, 0));

    let spec = spec.sections(Sections::Named { extra: 0xff00 - 7 });
    assert!(!spec.sections.is_extended());
    let bytes = synth(&spec);
    let e = Elf::parse(&bytes);
    assert_eq!((e.h.e_shnum, e.h.e_shstrndx), (0xfeff, 0xfefe));
    assert_eq!(e.section0_size_link(), (0, 0));
}

#[test]
fn executables_print_hello_on_this_host() {
    let dir = Scratch::new("synth-run");
    let mut ran = 0;
    for spec in synth_specs() {
        if !spec.runs_here() {
            continue;
        }
        let name = spec.name();
        let out = run_program(&dir.write(&name, &synth(&spec)), &[] as &[&str]).unwrap();
        assert!(out.status.success(), "{name}: {:?}", out.status);
        assert_eq!(out.stdout, HELLO_OUTPUT, "{name}");
        ran += 1;
    }
    if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        let x86_64 = Spec::new(Class::Elf64, Endian::Little);
        assert!(x86_64.runs_here());
        assert!(x86_64.clone().kind(Kind::Dyn).runs_here());
        assert!(ran >= 8, "only {ran} ran");
    }
}

#[test]
fn big_endian_executables_print_hello_under_qemu() {
    let dir = Scratch::new("synth-qemu");
    for (class, qemu) in [(Class::Elf64, "qemu-s390x"), (Class::Elf32, "qemu-ppc")] {
        let Some(qemu) = tool_or_skip(qemu, "qemu-user") else {
            continue;
        };
        for spec in synth_specs() {
            if spec.class != class || spec.endian != Endian::Big || !spec.prints_hello() {
                continue;
            }
            let name = spec.name();
            let path = dir.write(&name, &synth(&spec));
            let out = run_program(&qemu, &[&path]).unwrap();
            assert!(out.status.success(), "{name}: {:?}", out.status);
            assert_eq!(out.stdout, HELLO_OUTPUT, "{name}");
        }
    }
}

#[test]
fn text_padding_grows_the_executable_segment_and_the_program_still_runs() {
    let padding = 1 << 20;
    let small = synth(&Spec::new(Class::Elf64, Endian::Little));
    let bytes = synth(&Spec::new(Class::Elf64, Endian::Little).text_padding(padding));
    assert!(bytes.len() as u64 >= small.len() as u64 + padding);
    let elf = Elf::parse(&bytes);
    let code_segment = elf.phdrs().into_iter().find(|p| p.p_type == PT_LOAD && p.p_flags & 1 != 0).unwrap();
    assert!(code_segment.p_filesz >= padding, "the padding is in the executable segment");
    let dir = Scratch::new("synth-padding");
    let path = dir.write("padded", &bytes);
    if let Some(readelf) = tool_or_skip("readelf", "binutils") {
        assert_readelf_clean(&readelf, &path, &["Warning", "Error"]);
    }
    let out = run_program(&path, &[] as &[&str]).unwrap();
    assert_eq!(out.stdout, HELLO_OUTPUT);
}
