//! A built kernel's BTF, read just enough to check it: the mapping guard's BPF programs pass a
//! hook's `struct file` to the module's kfuncs, and the verifier accepts that only when vmlinux
//! describes `struct file` once, and the module's kfuncs must take that one. A BTF type tag that
//! clang 14 leaves off in a few compilation units has left three copies of it (kernel.rs,
//! `NO_BTF_TYPE_TAGS`), and then every mapping check fails to load: better to say so when the
//! kernel and the module are built than in 40 failed VM cases.

use std::fs;
use std::path::Path;

use crate::Result;
use crate::cmd::Cmd;
use crate::paths;

/// `BTF_KIND_STRUCT`.
const KIND_STRUCT: u32 = 4;

/// Fails unless `vmlinux`'s BTF holds exactly one `struct file` and one `struct task_struct`.
pub fn check_deduplicated(vmlinux: &Path) -> Result {
    let btf = section(vmlinux)?;
    for name in ["file", "task_struct"] {
        let copies = count_structs(&btf, name).ok_or_else(|| format!("{} has no readable BTF", vmlinux.display()))?;
        if copies != 1 {
            return Err(format!(
                "{}'s BTF describes struct {name} {copies} times: pahole did not deduplicate its types, and the \
                 mapping guard's programs would not load (the kernel's C flags for BTF, kernel::NO_BTF_TYPE_TAGS, did not take \
                 effect with this pahole)",
                vmlinux.display()
            ));
        }
    }
    Ok(())
}

/// Fails if the module `ko`'s BTF holds a structure of its own: its BTF describes only its
/// kfuncs, in the kernel's types, and a structure there is a copy of one of the kernel's that
/// did not deduplicate against vmlinux's (the verifier then refuses to pass the kernel's).
pub fn check_module_deduplicated(ko: &Path) -> Result {
    let btf = section(ko)?;
    match count_kind(&btf, KIND_STRUCT) {
        Some(0) => Ok(()),
        Some(n) => Err(format!(
            "{}'s BTF holds {n} structures of its own: its types did not deduplicate against the kernel's, \
             and the mapping guard's programs would not load",
            ko.display()
        )),
        None => Err(format!("{} has no readable BTF", ko.display())),
    }
}

/// The `.BTF` section of the ELF file `path`.
fn section(path: &Path) -> Result<Vec<u8>> {
    let dir = paths::target().join("btf");
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let (dump, rest) = (dir.join("section"), dir.join("rest.o"));
    Cmd::new("objcopy").arg("--dump-section").arg(format!(".BTF={}", dump.display())).arg(path).arg(&rest).run()?;
    let btf = fs::read(&dump).map_err(|e| format!("cannot read {}: {e}", dump.display()));
    let _ = fs::remove_dir_all(&dir);
    btf
}

/// How many types of `kind` the raw BTF `btf` holds.
fn count_kind(btf: &[u8], kind: u32) -> Option<usize> {
    let mut count = 0;
    walk(btf, |k, _| count += usize::from(k == kind))?;
    Some(count)
}

/// Calls `each(kind, name)` for every type of the raw BTF `btf` (header, types, strings); the
/// name is empty when it is not in this BTF's own strings (a split BTF's base holds it).
fn walk(btf: &[u8], mut each: impl FnMut(u32, &[u8])) -> Option<()> {
    let u32_at = |bytes: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(bytes.get(at..at.checked_add(4)?)?.try_into().ok()?))
    };
    let header_len = u32_at(btf, 4)? as usize;
    let (type_off, type_len) = (u32_at(btf, 8)? as usize, u32_at(btf, 12)? as usize);
    let (str_off, str_len) = (u32_at(btf, 16)? as usize, u32_at(btf, 20)? as usize);
    let types = btf.get(header_len + type_off..header_len + type_off + type_len)?;
    let strings = btf.get(header_len + str_off..header_len + str_off + str_len)?;
    let mut at = 0;
    while at < types.len() {
        let (name_off, info) = (u32_at(types, at)? as usize, u32_at(types, at + 4)?);
        let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
        at += 12;
        // What follows each kind's 12-byte header (include/uapi/linux/btf.h).
        at += match kind {
            1 | 14 | 17 => 4,
            3 => 12,
            4 | 5 | 15 | 19 => 12 * vlen,
            6 | 13 => 8 * vlen,
            _ => 0,
        };
        let name = strings.get(name_off..).and_then(|s| s.split(|b| *b == 0).next()).unwrap_or_default();
        each(kind, name);
    }
    Some(())
}

/// How many structures named `name` the raw BTF `btf` (header, types, strings) holds.
fn count_structs(btf: &[u8], name: &str) -> Option<usize> {
    let mut count = 0;
    walk(btf, |kind, found| count += usize::from(kind == KIND_STRUCT && found == name.as_bytes()))?;
    Some(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Raw BTF with the given `(kind, name, vlen)` types, members zeroed.
    fn btf(types: &[(u32, &str, u32)]) -> Vec<u8> {
        let mut strings = vec![0u8];
        let mut section = Vec::new();
        for (kind, name, vlen) in types {
            let name_off = strings.len() as u32;
            strings.extend_from_slice(name.as_bytes());
            strings.push(0);
            section.extend_from_slice(&name_off.to_le_bytes());
            section.extend_from_slice(&((kind << 24) | vlen).to_le_bytes());
            section.extend_from_slice(&8u32.to_le_bytes());
            // An INT's encoding word; a structure's members.
            let extra = if *kind == 1 { 4 } else { 12 * *vlen as usize };
            section.resize(section.len() + extra, 0);
        }
        let mut out = vec![0x9f, 0xeb, 1, 0];
        for v in [24u32, 0, section.len() as u32, section.len() as u32, strings.len() as u32] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend(section);
        out.extend(strings);
        out
    }

    #[test]
    fn counts_structures_by_name_across_every_kind() {
        let blob = btf(&[(1, "int", 0), (4, "file", 3), (2, "", 0), (4, "filesystem", 1), (4, "file", 2)]);
        assert_eq!(count_structs(&blob, "file"), Some(2));
        assert_eq!(count_structs(&blob, "task_struct"), Some(0));
        assert_eq!(count_structs(&blob[..10], "file"), None);
    }
}
