//! The zip container checks of spec 8, made from the central directory before any member
//! is inflated: at most [`MAX_MEMBERS`] members and [`MAX_EXPANDED_BYTES`] declared
//! uncompressed bytes. Reads of members are capped too, since a declared size may lie.

use super::{DocError, MAX_EXPANDED_BYTES, MAX_MEMBERS};
use std::io::{Cursor, Read};
use zip::ZipArchive;

pub type Archive<'a> = ZipArchive<Cursor<&'a [u8]>>;

/// Checks the container's declared sizes (a file that is no zip fails).
pub fn check(bytes: &[u8]) -> Result<(), DocError> {
    open(bytes).map(|_| ())
}

/// Opens the container after [`check`]'s tests.
pub fn open(bytes: &[u8]) -> Result<Archive<'_>, DocError> {
    let mut archive = ZipArchive::new(Cursor::new(bytes)).map_err(|_| DocError::Failed)?;
    if archive.len() > MAX_MEMBERS {
        return Err(DocError::Limit);
    }
    let mut declared: u64 = 0;
    for i in 0..archive.len() {
        let member = archive.by_index_raw(i).map_err(|_| DocError::Failed)?;
        declared = declared.saturating_add(member.size());
    }
    if declared > MAX_EXPANDED_BYTES {
        return Err(DocError::Limit);
    }
    Ok(archive)
}

/// The text of member `name`, `None` when there is none; at most [`MAX_EXPANDED_BYTES`]
/// are inflated whatever the member declares.
pub fn member(archive: &mut Archive<'_>, name: &str) -> Result<Option<String>, DocError> {
    let file = match archive.by_name(name) {
        Ok(file) => file,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(_) => return Err(DocError::Failed),
    };
    let mut out = Vec::new();
    file.take(MAX_EXPANDED_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(|_| DocError::Failed)?;
    if out.len() as u64 > MAX_EXPANDED_BYTES {
        return Err(DocError::Limit);
    }
    String::from_utf8(out)
        .map(Some)
        .map_err(|_| DocError::Failed)
}

/// The names of every member.
pub fn names(archive: &Archive<'_>) -> Vec<String> {
    archive
        .file_names()
        .filter_map(|name| name.ok().map(|n| n.into_owned()))
        .collect()
}
