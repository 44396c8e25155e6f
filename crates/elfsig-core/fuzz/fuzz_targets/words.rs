//! Any bytes as what the kernel module reads from user space besides files and policies: the
//! first bytes of a `#!` script (the interpreter binfmt_script would run), a write to a control
//! file (a word, a setting, a descriptor), and the facts its shim reads off an inode (where the
//! file lives, as the verdict's admission sees it). Nothing panics, and what parses is what the
//! kernel would read.
#![no_main]

use elfsig_core::control::{self, LOADER, MODE, RUNTIME, UNTRUSTED};
use elfsig_core::filesystem::{self, Facts, Keeping, Untrusted, CACHED};
use elfsig_core::script::{self, HEAD_LEN};
use libfuzzer_sys::fuzz_target;

fn script(data: &[u8]) {
    let mut out = [0u8; HEAD_LEN];
    let Some(name) = script::interpreter(data, &mut out) else {
        return;
    };
    let name = name.to_bytes();
    let head = &data[..data.len().min(HEAD_LEN)];
    assert!(head.starts_with(b"#!"));
    assert!(!name.is_empty());
    assert!(!name.iter().any(|b| matches!(b, b' ' | b'\t' | b'\n' | 0)));
    // The name is on the first line, after the blanks that follow `#!`.
    let line = head[2..].split(|b| *b == b'\n').next().unwrap();
    let start = line.iter().position(|b| *b != b' ' && *b != b'\t').unwrap();
    assert!(line[start..].starts_with(name));
}

fn words(data: &[u8]) {
    let word = control::trim(data);
    assert!(word.first().map_or(true, |b| !b.is_ascii_whitespace()));
    assert!(word.last().map_or(true, |b| !b.is_ascii_whitespace()));
    assert_eq!(control::trim(word), word);
    for toggle in [MODE, UNTRUSTED, LOADER, RUNTIME] {
        if let Some(on) = toggle.parse(word) {
            assert_eq!(toggle.word(on).as_bytes(), word);
        }
    }
    for word in control::words(data) {
        assert!(!word.is_empty() && !word.iter().any(u8::is_ascii_whitespace));
        if let Some(fd) = control::parse_fd(word) {
            assert!(fd >= 0);
            let digits = word.iter().skip_while(|b| **b == b'0').count();
            let shown = fd.to_string();
            assert_eq!(shown.trim_start_matches('0').len(), digits);
        }
    }
}

fn admission(data: &[u8]) {
    let Some((numbers, fs)) = data.split_first_chunk::<8>() else {
        return;
    };
    let file = filesystem::File {
        fs,
        facts: u32::from_le_bytes(numbers[..4].try_into().unwrap()),
        seals: u32::from_le_bytes(numbers[4..].try_into().unwrap()),
    };
    let refused = filesystem::admit(&file, Untrusted::Refuse);
    let verified = filesystem::admit(&file, Untrusted::Verify);
    let untrusted_mount = file.facts & (Facts::USERNS | Facts::UNVERIFIABLE) != 0;
    // Allowing untrusted mounts relaxes nothing else, and never caches their verdicts.
    if refused.is_ok() {
        assert_eq!(refused, verified);
    }
    if untrusted_mount {
        assert!(verified != Ok(Keeping::Cache));
    }
    if let Ok(Keeping::Cache) = verified {
        assert!(CACHED.iter().any(|(name, _)| name.as_bytes() == fs));
        assert!(!file.has(Facts::WRITERS));
    }
}

fuzz_target!(|data: &[u8]| {
    script(data);
    words(data);
    admission(data);
});
