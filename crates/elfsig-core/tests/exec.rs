//! What exec makes of real files: their interpreter, which of them are dynamic loaders, and
//! whose stack is executable.

use elfsig_core::elf::ExecInfo;
use elfsig_fixtures::{self as fixtures, Built};

fn info(bytes: &[u8]) -> ExecInfo {
    let mut file = bytes;
    ExecInfo::read(&mut file, bytes.len() as u64).unwrap()
}

fn interpreter(bytes: &[u8]) -> Option<&[u8]> {
    let range = info(bytes).interpreter?;
    bytes.get(range.offset as usize..(range.offset + range.len) as usize)
}

#[test]
fn the_system_loader_is_a_loader_and_its_programs_are_not() {
    let loader_path = std::fs::canonicalize("/lib64/ld-linux-x86-64.so.2").unwrap();
    let loader = std::fs::read(loader_path).unwrap();
    assert_eq!(
        info(&loader),
        ExecInfo { interpreter: None, loader: true, executable_stack: false, writable_executable: false }
    );

    let ls = std::fs::read(fixtures::system_binary("ls").unwrap()).unwrap();
    assert_eq!(interpreter(&ls), Some(&b"/lib64/ld-linux-x86-64.so.2\0"[..]));
    assert!(!info(&ls).loader);
}

#[test]
fn libraries_that_name_an_interpreter_are_not_loaders() {
    // libc.so.6 runs directly (it prints its version) through the loader it names.
    let libc = std::fs::read("/lib/x86_64-linux-gnu/libc.so.6").unwrap();
    assert!(info(&libc).interpreter.is_some());
    assert!(!info(&libc).loader);
}

#[test]
fn static_and_static_pie_programs_are_not_loaders() {
    for built in [Built::CStatic, Built::CStaticPie, Built::Go, Built::NoSectionHeaders] {
        let bytes = std::fs::read(fixtures::build(built).unwrap()).unwrap();
        assert_eq!(
            info(&bytes),
            ExecInfo { interpreter: None, loader: false, executable_stack: false, writable_executable: false },
            "{built:?}"
        );
    }
    for built in [Built::CDynamic, Built::CPie, Built::Rust, Built::C32] {
        let bytes = std::fs::read(fixtures::build(built).unwrap()).unwrap();
        let interp = interpreter(&bytes).unwrap_or_default();
        assert!(interp.starts_with(b"/lib") && interp.ends_with(b"\0"), "{built:?}: {interp:?}");
        assert!(!info(&bytes).loader, "{built:?}");
        // Compilers mark the stack not executable (PT_GNU_STACK without PF_X), 32-bit too.
        assert!(!info(&bytes).executable_stack, "{built:?}");
    }
}
