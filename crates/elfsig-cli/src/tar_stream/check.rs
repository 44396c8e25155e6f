//! Checking the ELF files of a tar stream as the kernel module will check them once unpacked:
//! every ELF file `sign --recursive` would sign must carry a valid signature by a trusted
//! certificate.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::files::{self, Found};
use super::{Kind, Reader};
use crate::architecture::Machines;
use crate::commands::verify;
use crate::crypto::cert::TrustedCert;
use crate::error::Error;
use crate::output::{self, Outcome};
use crate::skip::Skip;

/// What checking a stream found.
#[derive(Debug, Default)]
pub struct Checked {
    /// ELF files that verified.
    pub verified: usize,
    /// ELF files left alone, and why.
    pub skipped: BTreeMap<Skip, usize>,
    /// ELF files the module would refuse, each named `PACKAGE:PATH`, and why.
    pub refused: Vec<(PathBuf, Error)>,
}

impl Checked {
    /// How checking the stream of `name` (a package, a layer) went, as `verify` reports it:
    /// a line for a stream the module would run whole, else a failure naming each file it
    /// would refuse.
    pub fn outcome(self, name: &Path) -> Outcome {
        if self.refused.is_empty() {
            let line = format!(
                "{}: OK ({} ELF {} verified{})",
                name.display(),
                self.verified,
                if self.verified == 1 { "file" } else { "files" },
                output::left_alone(&self.skipped)
            );
            return Outcome::Done { line: Some(line), notes: Vec::new() };
        }
        let each: Vec<String> = self.refused.iter().map(|(file, e)| format!("  {}: {e}", file.display())).collect();
        let count = self.refused.len();
        let what = if count == 1 { "file" } else { "files" };
        Outcome::Failed(Error::msg(format!("{count} ELF {what} the module would refuse:\n{}", each.join("\n"))), None)
    }
}

/// Checks the ELF files for `native` machines in the stream `reader` reads against `trusted`.
/// `stream` names the stream in messages (`data.tar`), `package` the file that holds it.
pub fn check<R: Read>(
    mut reader: Reader<R>,
    stream: &str,
    package: &Path,
    native: &Machines,
    trusted: &[TrustedCert],
) -> Result<Checked, Error> {
    let failed = |e: &dyn std::fmt::Display| Error::msg(format!("{stream}: {e}"));
    let mut checked = Checked::default();
    let mut left_by_place = files::LeftByPlace::default();
    while let Some(entry) = reader.next_entry(&mut Vec::new()).map_err(|e| failed(&e))? {
        match entry.kind {
            Kind::Other | Kind::Global => {}
            Kind::HardLink => {
                if let Some(why) = left_by_place.unsigned_name(&entry) {
                    checked.refused.push((files::name(package, &entry), Error::msg(why)));
                }
            }
            Kind::Regular => match files::examine(&mut reader, &entry, package, native)? {
                Found::Other(_) => {}
                Found::Elf { skip: Some(skip), .. } => {
                    *checked.skipped.entry(skip).or_default() += 1;
                    left_by_place.note(&entry, skip);
                }
                Found::Elf { file, skip: None, .. } => match verify::verify_open(&file, trusted) {
                    Ok(_) => checked.verified += 1,
                    Err(e) => checked.refused.push((file.path.clone(), e)),
                },
            },
        }
    }
    Ok(checked)
}
