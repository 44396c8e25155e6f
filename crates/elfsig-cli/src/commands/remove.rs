//! `elfsig remove`: restore the original file byte for byte.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use elfsig_core::{ByteRange, Reason};

use crate::cli::RemoveArgs;
use crate::elf_file::{self, OpenFile};
use crate::error::Error;
use crate::output::{self, Outcome, Verbosity};
use crate::replace::{Keep, Replacement};
use crate::stream;

/// Runs the command.
pub fn run(args: &RemoveArgs, quiet: bool) -> Result<ExitCode, Error> {
    Ok(output::run_all(&args.files, Verbosity::from_quiet(quiet), "removed", |_, path| match remove_file(path) {
        Ok(notes) => Outcome::Done { line: None, notes },
        Err(e) => Outcome::Failed(e, None),
    }))
}

/// Removes the signature of one file, in place. Returns notes for the user.
pub fn remove_file(path: &Path) -> Result<Vec<String>, Error> {
    let target: PathBuf = path.canonicalize().map_err(|e| Error::io("cannot open", path, e))?;
    let file = OpenFile::open(&target)?;
    let analysis = elf_file::analyze(&file)?;
    let Some(signature) = analysis.signature else {
        return Err(Error::refused_with(Reason::Unsigned, "nothing to remove"));
    };
    elf_file::recover_original(&file, &signature)?;
    let mut replacement = Replacement::new(&target)?;
    let mut reader = file.reader();
    let copied = match elf_file::original_view(&mut reader, &signature) {
        Ok(mut original) => {
            let whole = ByteRange { offset: 0, len: original.len() };
            stream::copy_range(&mut original, whole, replacement.writer(), None, &mut Vec::new())
        }
        Err(e) => return Err(e),
    };
    copied.map_err(|e| file.stream_error(e, &target))?;
    replacement.commit(&file.file, &file.meta, Keep::Everything)?;
    Ok(crate::replace::hard_link_note(&file.meta, "restored").into_iter().collect())
}
