//! Opening an ELF file and taking it apart with the core: layout, signature location, payload and
//! record; and recovering the original of a signed file.

use std::fs::{File, Metadata};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use elfsig_core::view::{OriginalView, SignedView};
use elfsig_core::{ByteRange, ElfFile, Payload, Reason, SignatureLocation, SignedLayout, SignedRecord};

use crate::error::Error;
use crate::reader::{self, FileReader};
use crate::stream::{self, StreamError};

/// An open regular file.
#[derive(Debug)]
pub struct OpenFile {
    /// The path it was opened by.
    pub path: PathBuf,
    /// The file, read-only.
    pub file: File,
    /// Its metadata when opened.
    pub meta: Metadata,
}

impl OpenFile {
    /// Opens `path` for reading; refuses anything but a regular file.
    pub fn open(path: &Path) -> Result<Self, Error> {
        // Non-blocking, so that a FIFO is refused below instead of waiting for a writer; the
        // flag changes nothing for regular files.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| Error::io("cannot open", path, e))?;
        let meta = file.metadata().map_err(|e| Error::io("cannot stat", path, e))?;
        if !meta.is_file() {
            return Err(Error::msg(format!("{} is not a regular file", path.display())));
        }
        Ok(OpenFile { path: path.to_owned(), file, meta })
    }

    /// An open file, called `path` in messages: a temporary copy of a package's file is called
    /// by the package's name for it.
    pub fn from_file(path: PathBuf, file: File) -> Result<Self, Error> {
        let meta = file.metadata().map_err(|e| Error::io("cannot stat", &path, e))?;
        Ok(OpenFile { path, file, meta })
    }

    /// Size when opened.
    pub fn size(&self) -> u64 {
        self.meta.len()
    }

    /// A reader over the file.
    pub fn reader(&self) -> FileReader<'_> {
        reader::reader(&self.file, self.size())
    }

    /// Turns a core error into the CLI's, naming this file when a read failed.
    pub fn core_error(&self, error: elfsig_core::Error) -> Error {
        match error {
            elfsig_core::Error::Io(e) => Error::io("cannot read", &self.path, reader::io_error(e)),
            other => other.into(),
        }
    }

    /// Turns a stream error into the CLI's: a failed read of this file, or a failed write of
    /// `written`.
    pub fn stream_error(&self, error: StreamError, written: &Path) -> Error {
        match error {
            StreamError::Read(e) => Error::io("cannot read", &self.path, reader::io_error(e)),
            StreamError::Write(e) => Error::io("cannot write", written, e),
        }
    }
}

/// Whether the file starts with the ELF magic (false for unreadable or short files).
pub fn has_elf_magic(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && magic == *b"\x7fELF"
}

/// A file's signature, read and structurally checked.
#[derive(Clone, Debug)]
pub struct Signature {
    /// Where it is.
    pub location: SignatureLocation,
    /// The payload's bytes.
    pub payload: Vec<u8>,
    /// The decoded record.
    pub record: SignedRecord,
}

impl Signature {
    /// The payload, parsed (it parsed once already).
    pub fn parts(&self) -> Result<Payload<'_>, Error> {
        Ok(Payload::parse(&self.payload)?)
    }
}

/// A validated ELF file and its signature, if any.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// The validated layout.
    pub elf: ElfFile,
    /// The signature.
    pub signature: Option<Signature>,
}

/// Validates the file's layout and reads its signature.
pub fn analyze(file: &OpenFile) -> Result<Analysis, Error> {
    let mut reader = file.reader();
    let elf = ElfFile::parse(&mut reader, file.size()).map_err(|e| file.core_error(e))?;
    let signature = match elf.signature {
        None => None,
        Some(location) => {
            let mut payload = vec![0u8; location.payload_len()];
            let record = Payload::read(&mut reader, &location, &mut payload).map_err(|e| file.core_error(e))?.record;
            Some(Signature { location, payload, record })
        }
    };
    Ok(Analysis { elf, signature })
}

/// Recovers the original of a signed file: checks that the file is, byte for byte, what signing
/// that original produced (so that rewriting it loses nothing elfsig did not add) and returns the
/// original's validated layout. Read it through [`original_view`].
pub fn recover_original(file: &OpenFile, signature: &Signature) -> Result<ElfFile, Error> {
    let cannot = |why: String| Error::refused_with(Reason::Modified, why);
    let mut reader = file.reader();
    let mut view = OriginalView::new(&mut reader, &signature.location, &signature.record)?;
    let original_len = view.len();
    let original = ElfFile::parse(&mut view, original_len)
        .map_err(|e| cannot(format!("the original the signature describes is not valid ({e})")))?;
    if original.signature.is_some() {
        return Err(cannot("the original the signature describes is itself signed".into()));
    }
    let layout = SignedLayout::plan(&original, signature.location.payload.len)?;
    let not_ours = || {
        cannot(
            "bytes outside the original differ from what elfsig wrote; \
             refusing to rewrite the file, which would lose them"
                .into(),
        )
    };
    if layout.file_len != file.size() || layout.payload != signature.location.payload {
        return Err(not_ours());
    }
    let mut expected = SignedView::new(&mut view, layout, &signature.payload)?;
    let mut actual = file.reader();
    let header = ByteRange { offset: 0, len: original.header.class.header_len() };
    let appended = ByteRange { offset: layout.original_len, len: layout.file_len - layout.original_len };
    for range in [header, appended] {
        match stream::ranges_equal(&mut expected, &mut actual, range) {
            Ok(true) => {}
            Ok(false) => return Err(not_ours()),
            Err(e) => return Err(file.stream_error(e, &file.path)),
        }
    }
    Ok(original)
}

/// The original of a signed file, for reading.
pub fn original_view<'r>(reader: &'r mut FileReader<'_>, signature: &Signature) -> Result<OriginalView<'r>, Error> {
    Ok(OriginalView::new(reader, &signature.location, &signature.record)?)
}
