//! The kernel's BTF, read no further than the IDs of named functions: the hooks the programs
//! attach to (`bpf_lsm_HOOK`, in vmlinux's BTF) and the kfuncs they call (in the module's).
//!
//! A type's ID is its place in the type section, so finding one means walking the types before
//! it; each is read only for its size and, for a function, its name. Nothing else is checked:
//! the kernel made these bytes, and the verifier checks what the loader gives it against them.
//! (libbpf parses and checks every type of vmlinux's BTF, five megabytes, before its first
//! lookup: a fifth of the guard's attach time at boot.) Format: the kernel's
//! Documentation/bpf/btf.rst.

use std::collections::HashMap;

const MAGIC: u16 = 0xeb9f;
const HEADER: usize = 24;
const TYPE: usize = 12;
/// The kinds' numbers (include/uapi/linux/btf.h).
const KIND_FUNC: u32 = 12;

/// One BTF object: vmlinux's, or a module's split on top of it.
#[derive(Debug)]
pub(crate) struct Btf<'a> {
    types: &'a [u8],
    strings: &'a [u8],
    /// The ID of the first type here: 1 for vmlinux, one past vmlinux's last for a module's.
    first_id: u32,
    /// Where this object's strings start among those of vmlinux's and its own.
    first_string: u32,
    /// How many types this object has.
    count: u32,
}

impl<'a> Btf<'a> {
    /// vmlinux's BTF (`/sys/kernel/btf/vmlinux`), and the IDs of the functions named in
    /// `names`, each found or not.
    pub(crate) fn vmlinux(data: &'a [u8], names: &[&str]) -> Result<(Btf<'a>, HashMap<String, u32>), String> {
        Btf::parse(data, None, names)
    }

    /// A module's BTF, whose type IDs and string offsets follow vmlinux's, and the IDs of the
    /// functions named in `names` (whose names may be vmlinux's strings).
    pub(crate) fn split(
        data: &'a [u8],
        base: &Btf<'_>,
        names: &[&str],
    ) -> Result<(Btf<'a>, HashMap<String, u32>), String> {
        Btf::parse(data, Some(base), names)
    }

    /// The ID after the last type here, which a split object's first type takes.
    fn next_id(&self) -> u32 {
        self.first_id + self.count
    }

    /// One walk of the types finds the functions and counts the types, which a split object's
    /// IDs follow: vmlinux has some hundred and thirty thousand.
    fn parse(
        data: &'a [u8],
        base: Option<&Btf<'_>>,
        names: &[&str],
    ) -> Result<(Btf<'a>, HashMap<String, u32>), String> {
        let u16_at = |at: usize| data.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
        if u16_at(0) != Some(MAGIC) {
            return Err("not BTF of this machine's byte order (no magic)".into());
        }
        let field = |n: usize| u32_at(data, 4 + 4 * n).map(|v| v as usize).ok_or("BTF header cut short");
        let header = field(0)?;
        let (type_off, type_len, str_off, str_len) = (field(1)?, field(2)?, field(3)?, field(4)?);
        if header < HEADER {
            return Err(format!("BTF header of {header} bytes"));
        }
        let section = |off: usize, len: usize, what: &str| {
            header
                .checked_add(off)
                .and_then(|start| Some((start, start.checked_add(len)?)))
                .and_then(|(start, end)| data.get(start..end))
                .ok_or(format!("BTF {what} section past the end of the data"))
        };
        let types = section(type_off, type_len, "type")?;
        let strings = section(str_off, str_len, "string")?;
        let (first_id, first_string) = match base {
            None => (1, 0),
            Some(base) => (base.next_id(), base.first_string + base.strings.len() as u32),
        };
        let mut btf = Btf { types, strings, first_id, first_string, count: 0 };
        let (found, count) = btf.functions(names, base)?;
        btf.count = count;
        Ok((btf, found))
    }

    /// The IDs of the functions named in `names`, each found or not, and how many types there
    /// are.
    fn functions(&self, names: &[&str], base: Option<&Btf<'_>>) -> Result<(HashMap<String, u32>, u32), String> {
        // vmlinux has some sixty thousand functions: most are told apart from the names wanted
        // by the prefixes those share (`bpf_lsm_`, `elfsig_kfunc_`; one for the names of each
        // first letter), in a few bytes.
        let mut prefixes: Vec<&[u8]> = Vec::new();
        for name in names.iter().map(|n| n.as_bytes()) {
            match prefixes.iter_mut().find(|p| p.first() == name.first()) {
                Some(prefix) => *prefix = &prefix[..prefix.iter().zip(name).take_while(|(x, y)| x == y).count()],
                None => prefixes.push(name),
            }
        }
        let mut found = HashMap::new();
        let (_, count) = self.walk(|id, kind, name_off| {
            if kind != KIND_FUNC {
                return None::<()>;
            }
            // None walks on.
            let rest = self.string(name_off, base).filter(|rest| prefixes.iter().any(|p| rest.starts_with(p)))?;
            if let Some(name) = names.iter().find(|n| rest.starts_with(n.as_bytes()) && rest.get(n.len()) == Some(&0)) {
                found.insert((*name).to_owned(), id);
            }
            None
        })?;
        Ok((found, count))
    }

    /// The bytes from a string's offset on (the string and what follows it), which in a split
    /// object may be vmlinux's.
    fn string<'s>(&'s self, offset: u32, base: Option<&'s Btf<'_>>) -> Option<&'s [u8]> {
        let (strings, at) = match offset.checked_sub(self.first_string) {
            Some(at) => (self.strings, at),
            None => (base?.strings, offset),
        };
        strings.get(at as usize..)
    }

    /// Calls `visit` with each type's ID, kind and name offset until it returns something;
    /// returns that and how many types were walked.
    fn walk<T>(&self, mut visit: impl FnMut(u32, u32, u32) -> Option<T>) -> Result<(Option<T>, u32), String> {
        let mut at = 0;
        let mut count = 0u32;
        while at < self.types.len() {
            let (Some(name_off), Some(info)) = (u32_at(self.types, at), u32_at(self.types, at + 4)) else {
                return Err(format!("BTF type {} cut short", self.first_id + count));
            };
            // Linux 7.x widened both fields (BTF_INFO_KIND, BTF_INFO_VLEN); the bits they
            // took are zero before.
            let kind = (info >> 24) & 0x7f;
            let vlen = (info & 0xff_ffff) as usize;
            let extra = match kind {
                // INT, VAR, DECL_TAG: one word.
                1 | 14 | 17 => 4,
                // PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT, TYPE_TAG.
                2 | 7..=12 | 16 | 18 => 0,
                // ARRAY.
                3 => 12,
                // STRUCT, UNION, DATASEC: 12 bytes a member; ENUM64 too.
                4 | 5 | 15 | 19 => 12 * vlen,
                // ENUM, FUNC_PROTO: 8 bytes a value or parameter.
                6 | 13 => 8 * vlen,
                _ => return Err(format!("BTF type {} of unknown kind {kind}", self.first_id + count)),
            };
            if let Some(found) = visit(self.first_id + count, kind, name_off) {
                return Ok((Some(found), count + 1));
            }
            at += TYPE + extra;
            count += 1;
        }
        if at != self.types.len() {
            return Err("BTF type section ends within a type".into());
        }
        Ok((None, count))
    }
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    data.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BTF object of `types` (each a type's bytes) and `strings`.
    fn btf(types: &[Vec<u8>], strings: &[u8]) -> Vec<u8> {
        let types: Vec<u8> = types.concat();
        let mut data = Vec::new();
        data.extend(MAGIC.to_le_bytes());
        data.extend([1, 0]);
        for word in [HEADER as u32, 0, types.len() as u32, types.len() as u32, strings.len() as u32] {
            data.extend(word.to_le_bytes());
        }
        data.extend(types);
        data.extend(strings);
        data
    }

    fn ty(name_off: u32, kind: u32, vlen: u32, extra: usize) -> Vec<u8> {
        let mut t = Vec::new();
        t.extend(name_off.to_le_bytes());
        t.extend(((kind << 24) | vlen).to_le_bytes());
        t.extend(0u32.to_le_bytes());
        t.extend(vec![0; extra]);
        t
    }

    #[test]
    fn functions_are_found_by_name_past_types_of_every_size() {
        let strings = b"\0int\0s\0bpf_lsm_file_open\0f\0";
        let base = btf(
            &[
                ty(1, 1, 0, 4),          // 1: int
                ty(5, 4, 2, 24),         // 2: struct s, two members
                ty(0, 13, 3, 24),        // 3: a prototype of three parameters
                ty(7, KIND_FUNC, 0, 0),  // 4: bpf_lsm_file_open
                ty(0, 6, 2, 16),         // 5: an enum of two values
                ty(25, KIND_FUNC, 0, 0), // 6: f
            ],
            strings,
        );
        let (vmlinux, found) = Btf::vmlinux(&base, &["bpf_lsm_file_open", "f", "absent"]).unwrap();
        assert_eq!(vmlinux.count, 6);
        assert_eq!(found.get("bpf_lsm_file_open"), Some(&4));
        assert_eq!(found.get("f"), Some(&6));
        assert_eq!(found.get("absent"), None);
        // A module's: IDs after vmlinux's, its strings after vmlinux's, vmlinux's names usable.
        let module =
            btf(&[ty(0, 13, 1, 8), ty(strings.len() as u32 + 1, KIND_FUNC, 0, 0), ty(25, KIND_FUNC, 0, 0)], b"\0k\0");
        let (_, found) = Btf::split(&module, &vmlinux, &["k", "f"]).unwrap();
        assert_eq!(found.get("k"), Some(&8));
        assert_eq!(found.get("f"), Some(&9));
    }

    /// Names that share a prefix: each found by its whole name, not by a longer one.
    #[test]
    fn a_name_is_matched_whole() {
        let strings = b"\0bpf_lsm_file_open_extra\0bpf_lsm_file_open\0bpf_lsm_mmap_file\0bpf_lsm\0";
        let vmlinux = btf(
            &[ty(1, KIND_FUNC, 0, 0), ty(25, KIND_FUNC, 0, 0), ty(43, KIND_FUNC, 0, 0), ty(61, KIND_FUNC, 0, 0)],
            strings,
        );
        let (_, found) = Btf::vmlinux(&vmlinux, &["bpf_lsm_file_open", "bpf_lsm_mmap_file"]).unwrap();
        assert_eq!(found.get("bpf_lsm_file_open"), Some(&2));
        assert_eq!(found.get("bpf_lsm_mmap_file"), Some(&3));
        assert_eq!(found.len(), 2);
    }

    #[test]
    fn damaged_btf_is_refused() {
        let good = btf(&[ty(0, 1, 0, 4)], b"\0");
        assert!(Btf::vmlinux(&good, &[]).is_ok());
        assert!(Btf::vmlinux(&good[..good.len() - 3], &[]).is_err(), "cut short");
        let mut unknown = good.clone();
        unknown[HEADER + 7] = 25;
        assert!(Btf::vmlinux(&unknown, &[]).is_err(), "an unknown kind");
        let mut magic = good.clone();
        magic[0] = 0;
        assert!(Btf::vmlinux(&magic, &[]).is_err(), "no magic");
        // A type section that ends within a type.
        let half = btf(&[ty(0, 4, 1, 12)[..16].to_vec()], b"\0");
        assert!(Btf::vmlinux(&half, &[]).is_err());
    }
}
