//! The guard's BPF object (`bpf/guard.bpf.c`, compiled by build.rs), read as the kernel will be
//! given it: one program per `lsm/HOOK` or `lsm.s/HOOK` section, its instructions, and the
//! places where it calls a kfunc (a relocation against an undefined symbol). The object is
//! ours and built with this program; what it may not hold (data, maps, calls between
//! functions, relocations of any other kind) is refused rather than half loaded.

use goblin::elf::{Elf, section_header::SHT_PROGBITS};

/// `call` (BPF_JMP | BPF_CALL).
const CALL: u8 = 0x85;
/// The relocation clang writes for a call's 32-bit immediate (R_BPF_64_32).
const R_BPF_64_32: u32 = 10;

/// One program of the object.
#[derive(Debug)]
pub(crate) struct Program {
    /// The LSM hook it runs on (`file_open`).
    pub(crate) hook: String,
    /// Whether it may sleep (`lsm.s/`).
    pub(crate) sleepable: bool,
    /// Its name in the object (`guard_file_open`).
    pub(crate) name: String,
    /// Its instructions, 8 bytes each.
    pub(crate) insns: Vec<u8>,
    /// Each call to a kfunc: the instruction's index, and the kfunc's name.
    pub(crate) kfunc_calls: Vec<(usize, String)>,
}

/// The object's programs, in its order, and its license.
#[derive(Debug)]
pub(crate) struct Object {
    pub(crate) programs: Vec<Program>,
    pub(crate) license: String,
}

impl Object {
    pub(crate) fn parse(bytes: &[u8]) -> Result<Object, String> {
        let elf = Elf::parse(bytes).map_err(|e| format!("not an ELF object: {e}"))?;
        let mut programs = Vec::new();
        let mut license = None;
        for (index, section) in elf.section_headers.iter().enumerate() {
            let name = elf.shdr_strtab.get_at(section.sh_name).unwrap_or("");
            let data = || {
                section
                    .file_range()
                    .and_then(|range| bytes.get(range))
                    .ok_or(format!("section {name} past the end of the object"))
            };
            let hook = name.strip_prefix("lsm/").map(|h| (h, false)).or(name.strip_prefix("lsm.s/").map(|h| (h, true)));
            if let Some((hook, sleepable)) = hook {
                let insns = data()?.to_vec();
                if insns.len() % 8 != 0 {
                    return Err(format!("section {name} is not whole instructions"));
                }
                let symbol = elf.syms.iter().find(|s| s.st_shndx == index && s.is_function() && s.st_value == 0);
                let name = symbol.and_then(|s| elf.strtab.get_at(s.st_name)).unwrap_or(hook);
                programs.push(Program {
                    hook: hook.to_owned(),
                    sleepable,
                    name: name.to_owned(),
                    insns,
                    kfunc_calls: kfunc_calls(&elf, index)?,
                });
            } else if name == "license" {
                let text = data()?;
                let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
                license = Some(String::from_utf8_lossy(&text[..end]).into_owned());
            } else if section.sh_type == SHT_PROGBITS && section.sh_size > 0 {
                return Err(format!("section {name}: the loader takes programs and a license only"));
            }
        }
        let license = license.ok_or("no license section")?;
        Ok(Object { programs, license })
    }
}

/// The kfunc calls of the program in section `index`, from its relocation section.
fn kfunc_calls(elf: &Elf<'_>, index: usize) -> Result<Vec<(usize, String)>, String> {
    let mut calls = Vec::new();
    for (reloc_index, relocs) in &elf.shdr_relocs {
        if elf.section_headers.get(*reloc_index).map(|s| s.sh_info as usize) != Some(index) {
            continue;
        }
        for reloc in relocs.iter() {
            let symbol = elf.syms.get(reloc.r_sym).ok_or("a relocation names no symbol")?;
            let name = elf.strtab.get_at(symbol.st_name).unwrap_or("");
            if reloc.r_type != R_BPF_64_32 || symbol.st_shndx != 0 || reloc.r_offset % 8 != 0 {
                return Err(format!("relocation against {name:?}: only calls to kfuncs are loaded"));
            }
            calls.push(((reloc.r_offset / 8) as usize, name.to_owned()));
        }
    }
    Ok(calls)
}

impl Program {
    /// Makes each kfunc call one the kernel resolves: `imm` the kfunc's BTF ID, `off` its
    /// BTF object's place in the program's `fd_array`.
    pub(crate) fn resolve_kfuncs(&mut self, id_of: impl Fn(&str) -> Option<u32>, fd_index: i16) -> Result<(), String> {
        for (at, kfunc) in &self.kfunc_calls {
            let id = id_of(kfunc).ok_or_else(|| format!("the module offers no kfunc {kfunc}"))?;
            let insn = self
                .insns
                .get_mut(at * 8..at * 8 + 8)
                .filter(|insn| insn[0] == CALL)
                .ok_or_else(|| format!("{}: the call to {kfunc} is not a call instruction", self.name))?;
            // dst_reg in the low nibble (0 for a call), src_reg in the high one.
            insn[1] = crate::sys::BPF_PSEUDO_KFUNC_CALL << 4;
            insn[2..4].copy_from_slice(&fd_index.to_le_bytes());
            insn[4..8].copy_from_slice(&id.to_le_bytes());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GUARD: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/guard.bpf.o"));

    #[test]
    fn the_guard_has_a_program_for_each_hook_and_calls_kfuncs_only() {
        let object = Object::parse(GUARD).unwrap();
        assert_eq!(object.license, "GPL");
        let hooks: Vec<&str> = object.programs.iter().map(|p| p.hook.as_str()).collect();
        for hook in crate::load::HOOKS {
            assert!(hooks.contains(&hook), "{hook} has no program");
        }
        assert_eq!(hooks.len(), crate::load::HOOKS.len());
        let open = object.programs.iter().find(|p| p.hook == "file_open").unwrap();
        assert!(open.sleepable);
        assert_eq!(open.name, "guard_file_open");
        assert_eq!(open.kfunc_calls.iter().map(|(_, k)| k.as_str()).collect::<Vec<_>>(), ["elfsig_kfunc_file_open"]);
        let mut open = object.programs.into_iter().find(|p| p.hook == "file_open").unwrap();
        let (at, _) = open.kfunc_calls[0].clone();
        open.resolve_kfuncs(|name| (name == "elfsig_kfunc_file_open").then_some(0x1234_5678), 1).unwrap();
        assert_eq!(&open.insns[at * 8..at * 8 + 8], &[CALL, 0x20, 1, 0, 0x78, 0x56, 0x34, 0x12]);
        assert!(open.resolve_kfuncs(|_| None, 1).is_err(), "a kfunc the module lacks");
    }

    #[test]
    fn objects_with_more_than_programs_are_refused() {
        assert!(Object::parse(b"not an object").is_err());
        // The object without its license section's name: no license.
        let mut renamed = GUARD.to_vec();
        let at = renamed.windows(8).position(|w| w == b"license\0").unwrap();
        renamed[at] = b'L';
        assert!(Object::parse(&renamed).is_err());
    }
}
