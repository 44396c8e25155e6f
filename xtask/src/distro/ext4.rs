//! The system's disk: its tree as an ext4 file system, made by `mke2fs -d`, which keeps owners,
//! modes, hard links and extended attributes (file capabilities), under the UUID and label the
//! system is known by.

use std::fs;
use std::path::Path;

use super::files::size_mib;
use crate::Result;
use crate::cmd::Cmd;

/// The UUID of the image's file system (IMA policies name it).
pub const FS_UUID: &str = "e1f5e1f5-0000-4000-8000-000000000001";
/// Its label.
const FS_LABEL: &str = "elfsig-root";

/// `mke2fs -d`: the tree as an ext4 image, with room to spare for what the system writes.
pub(super) fn make(root: &Path, disk: &Path) -> Result {
    let used = size_mib(root, None)?;
    let _ = fs::remove_file(disk);
    Cmd::new("mke2fs")
        .args(["-q", "-F", "-t", "ext4", "-L", FS_LABEL, "-U", FS_UUID, "-E", "root_owner=0:0", "-d"])
        .arg(root)
        .arg(disk)
        .arg(format!("{}M", used + used / 2 + 512))
        .run()
}
