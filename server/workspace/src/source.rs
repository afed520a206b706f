//! Reading and writing Python sources without losing their encoding facts.
//!
//! The analyzer sees text without a byte-order mark. Writing puts the BOM back and, in a file
//! whose lines all end in `\r\n` (or `\r`), turns line breaks that fixes inserted as `\n` into
//! the file's own. A file that was not valid UTF-8 is read lossily (so it can still be checked)
//! and is never written back, since the replacement characters would corrupt it. Writing keeps
//! permissions, ownership and hard links, and never touches a read-only file.

use std::io::{self, Write};
use std::path::Path;

const BOM: &str = "\u{feff}";

/// How a file ends its lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEndings {
    /// No line break at all.
    None,
    Lf,
    CrLf,
    Cr,
    /// More than one kind; fixes' insertions are left as they are.
    Mixed,
}

impl LineEndings {
    /// Classifies the line breaks of `text`.
    pub fn detect(text: &str) -> LineEndings {
        let bytes = text.as_bytes();
        let (mut lf, mut crlf, mut cr) = (false, false, false);
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                    crlf = true;
                    i += 1;
                }
                b'\r' => cr = true,
                b'\n' => lf = true,
                _ => {}
            }
            i += 1;
        }
        match (lf, crlf, cr) {
            (false, false, false) => LineEndings::None,
            (true, false, false) => LineEndings::Lf,
            (false, true, false) => LineEndings::CrLf,
            (false, false, true) => LineEndings::Cr,
            _ => LineEndings::Mixed,
        }
    }
}

/// A source file's text and the facts needed to write it back faithfully.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceText {
    /// The text without its BOM; invalid UTF-8 sequences replaced by U+FFFD when `lossy`.
    pub text: String,
    pub bom: bool,
    pub line_endings: LineEndings,
    /// The bytes were not valid UTF-8: the file may be checked but must never be written.
    pub lossy: bool,
}

impl SourceText {
    /// Decodes raw bytes (from a file or stdin).
    pub fn decode(bytes: Vec<u8>) -> SourceText {
        let (text, lossy) = match String::from_utf8(bytes) {
            Ok(text) => (text, false),
            Err(error) => (String::from_utf8_lossy(error.as_bytes()).into_owned(), true),
        };
        let (text, bom) = match text.strip_prefix(BOM) {
            Some(rest) => (rest.to_string(), true),
            None => (text, false),
        };
        let line_endings = LineEndings::detect(&text);
        SourceText {
            text,
            bom,
            line_endings,
            lossy,
        }
    }

    /// The bytes to write for `new_text` (a fixed version of this file's text): the BOM restored
    /// and inserted line breaks converted to the file's own when it uses one kind consistently.
    pub fn encode(&self, new_text: &str) -> Vec<u8> {
        let mut out = String::with_capacity(new_text.len() + 8);
        if self.bom {
            out.push_str(BOM);
        }
        let wanted = match self.line_endings {
            LineEndings::CrLf => Some("\r\n"),
            LineEndings::Cr => Some("\r"),
            _ => None,
        };
        match wanted {
            Some(ending) => {
                let bytes = new_text.as_bytes();
                let mut last = 0;
                for (index, byte) in bytes.iter().enumerate() {
                    let lone_lf = *byte == b'\n' && (index == 0 || bytes[index - 1] != b'\r');
                    if lone_lf {
                        out.push_str(&new_text[last..index]);
                        out.push_str(ending);
                        last = index + 1;
                    }
                }
                out.push_str(&new_text[last..]);
            }
            None => out.push_str(new_text),
        }
        out.into_bytes()
    }
}

/// Reads a source file.
pub fn read_source(path: &Path) -> io::Result<SourceText> {
    Ok(SourceText::decode(std::fs::read(path)?))
}

/// Writes `new_text` over `path`, keeping the file's BOM, line endings, permissions, ownership
/// and hard links. Refuses lossily read files, read-only files (no write permission bit for
/// anyone: a file someone marked read-only is not rewritten, even by root) and files the user
/// may not write.
///
/// The new bytes go to a temporary file in the same directory, which then replaces the original
/// by a rename, so a crash never leaves half a file. A file with several hard links, or whose
/// owner the temporary copy cannot be given, is instead rewritten in place: a rename would
/// detach it from its other names or hand it to the current user.
pub fn write_source(path: &Path, original: &SourceText, new_text: &str) -> io::Result<()> {
    if original.lossy {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not valid UTF-8; refusing to write it back",
        ));
    }
    // Write through a symlink to its target rather than replacing the link with a file.
    let target = std::fs::canonicalize(path)?;
    let metadata = std::fs::metadata(&target)?;
    if metadata.permissions().readonly() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the file is read-only",
        ));
    }
    // Opening for writing asks the system whether this user may change the file; a rename
    // into the directory would succeed without that permission.
    let mut file = std::fs::OpenOptions::new().write(true).open(&target)?;
    let bytes = original.encode(new_text);
    if has_other_links(&metadata) {
        return write_in_place(&mut file, &bytes);
    }
    drop(file);
    let directory = target.parent().unwrap_or_else(|| Path::new("."));
    let mut temporary = tempfile::Builder::new()
        .prefix(".tpulint-")
        .suffix(".tmp")
        .tempfile_in(directory)?;
    temporary.write_all(&bytes)?;
    temporary.as_file().sync_all()?;
    temporary
        .as_file()
        .set_permissions(metadata.permissions())?;
    if !give_same_owner(temporary.as_file(), &metadata) {
        drop(temporary);
        let mut file = std::fs::OpenOptions::new().write(true).open(&target)?;
        return write_in_place(&mut file, &bytes);
    }
    temporary.persist(&target).map_err(|error| error.error)?;
    Ok(())
}

/// Truncates and rewrites an open file.
fn write_in_place(file: &mut std::fs::File, bytes: &[u8]) -> io::Result<()> {
    file.set_len(0)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(unix)]
fn has_other_links(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    metadata.nlink() > 1
}

#[cfg(not(unix))]
fn has_other_links(_metadata: &std::fs::Metadata) -> bool {
    false
}

/// Gives `file` the owner and group of the original; false when the system refuses.
#[cfg(unix)]
fn give_same_owner(file: &std::fs::File, original: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let current = match file.metadata() {
        Ok(metadata) => metadata,
        Err(_) => return false,
    };
    if current.uid() == original.uid() && current.gid() == original.gid() {
        return true;
    }
    std::os::unix::fs::fchown(file, Some(original.uid()), Some(original.gid())).is_ok()
}

#[cfg(not(unix))]
fn give_same_owner(_file: &std::fs::File, _original: &std::fs::Metadata) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bom_is_stripped_and_restored() {
        let source = SourceText::decode(b"\xEF\xBB\xBFx = 1\n".to_vec());
        assert!(source.bom);
        assert_eq!(source.text, "x = 1\n");
        assert_eq!(source.encode("y = 2\n"), b"\xEF\xBB\xBFy = 2\n");
    }

    #[test]
    fn crlf_is_kept_for_inserted_lines() {
        let source = SourceText::decode(b"a\r\nb\r\n".to_vec());
        assert_eq!(source.line_endings, LineEndings::CrLf);
        assert_eq!(source.encode("a\r\nnew\nb\r\n"), b"a\r\nnew\r\nb\r\n");
    }

    #[test]
    fn mixed_endings_are_left_alone() {
        let source = SourceText::decode(b"a\r\nb\n".to_vec());
        assert_eq!(source.line_endings, LineEndings::Mixed);
        assert_eq!(source.encode("a\r\nb\nc\n"), b"a\r\nb\nc\n");
    }

    #[test]
    fn invalid_utf8_is_lossy_and_never_written() {
        let source = SourceText::decode(b"x = '\xff'\n".to_vec());
        assert!(source.lossy);
        assert!(source.text.contains('\u{fffd}'));
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("bad.py");
        std::fs::write(&path, b"x = '\xff'\n").unwrap();
        assert!(write_source(&path, &source, "x = 1\n").is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"x = '\xff'\n");
    }

    #[test]
    fn atomic_write_replaces_content() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("a.py");
        std::fs::write(&path, b"\xEF\xBB\xBFa\r\n").unwrap();
        let source = read_source(&path).unwrap();
        write_source(&path, &source, "b\nc\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"\xEF\xBB\xBFb\r\nc\r\n");
        let leftovers: Vec<_> = std::fs::read_dir(directory.path())
            .unwrap()
            .flatten()
            .filter(|entry| entry.file_name() != "a.py")
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn read_only_files_are_refused_and_left_alone() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("a.py");
        std::fs::write(&path, b"a\n").unwrap();
        let mut permissions = std::fs::metadata(&path).unwrap().permissions();
        permissions.set_readonly(true);
        std::fs::set_permissions(&path, permissions).unwrap();
        let source = read_source(&path).unwrap();
        let error = write_source(&path, &source, "b\n").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(std::fs::read(&path).unwrap(), b"a\n");
    }

    #[cfg(unix)]
    #[test]
    fn hard_links_and_permissions_are_kept() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("a.py");
        let link = directory.path().join("b.py");
        std::fs::write(&path, b"a\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        std::fs::hard_link(&path, &link).unwrap();
        let inode = std::fs::metadata(&path).unwrap().ino();
        let source = read_source(&path).unwrap();
        write_source(&path, &source, "b\n").unwrap();
        assert_eq!(std::fs::read(&link).unwrap(), b"b\n");
        let metadata = std::fs::metadata(&path).unwrap();
        assert_eq!(metadata.ino(), inode);
        assert_eq!(metadata.nlink(), 2);
        assert_eq!(metadata.permissions().mode() & 0o777, 0o640);
    }
}
