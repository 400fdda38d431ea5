//! Output files written all or nothing: the one way tlblab writes a file.
//!
//! An [`AtomicFile`] is a temporary file in the target's directory (so that the final rename
//! stays on one filesystem); [`AtomicFile::commit`] flushes it, syncs it to disk and renames it
//! over the target. Dropped without a commit (an error, a full disk, a panic, a signal the
//! command handles) it is removed, so a reader sees the old file or the new one, never a part,
//! and no temporary file is left behind. Only a process killed outright (SIGKILL) leaves its
//! temporary file, named `.NAME.XXXXXX.tmp` beside the target.
//!
//! ```
//! use std::io::Write;
//! use tlblab_types::atomic::{write_file, AtomicFile};
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("out.txt");
//! write_file(&path, b"old\n")?;
//!
//! let mut file = AtomicFile::create(&path)?;
//! file.write_all(b"new, half written")?;
//! drop(file); // no commit: the target keeps its old contents, the temporary file is gone
//! assert_eq!(std::fs::read(&path)?, b"old\n");
//! assert_eq!(std::fs::read_dir(dir.path())?.count(), 1);
//!
//! let mut file = AtomicFile::create(&path)?;
//! file.write_all(b"new\n")?;
//! file.commit()?;
//! assert_eq!(std::fs::read(&path)?, b"new\n");
//! # Ok::<(), std::io::Error>(())
//! ```

use std::fs::{File, Permissions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use tempfile::TempPath;

/// Write buffer: large enough that streaming a trace makes few system calls.
const BUFFER: usize = 256 << 10;

/// A file being written under a temporary name beside `path`; see the [module](self) docs.
#[derive(Debug)]
pub struct AtomicFile {
    // The plain file, not tempfile's wrapper, whose errors repeat the temporary name.
    out: BufWriter<File>,
    // None when `path` is a device or a pipe (`-o /dev/stdout`), written in place.
    tmp: Option<TempPath>,
    path: PathBuf,
}

impl AtomicFile {
    /// Starts writing `path`: creates a temporary file in its directory (which must exist).
    /// Nothing happens to `path` itself until [`commit`](Self::commit). A symbolic link is
    /// followed (its target is replaced, not the link); a target that is not a regular file
    /// (`/dev/stdout`, `/dev/null`, a FIFO) is opened and written in place, since it cannot be
    /// replaced.
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        let path = match std::fs::canonicalize(path) {
            Ok(target) if path.is_symlink() => target,
            _ => path.to_path_buf(),
        };
        if std::fs::metadata(&path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
            let file = std::fs::OpenOptions::new().write(true).truncate(true).open(&path)?;
            return Ok(AtomicFile { out: BufWriter::with_capacity(BUFFER, file), tmp: None, path });
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(path.file_name().unwrap_or_default());
        prefix.push(".");
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".tmp")
            // What File::create gives (less the umask); tempfile's default is owner-only.
            .permissions(Permissions::from_mode(0o666))
            .tempfile_in(dir)?;
        let (file, tmp) = tmp.into_parts();
        Ok(AtomicFile { out: BufWriter::with_capacity(BUFFER, file), tmp: Some(tmp), path })
    }

    /// The file this one replaces on commit.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The temporary file being written (`None` for a device or pipe, written in place).
    pub fn temp_path(&self) -> Option<&Path> {
        self.tmp.as_deref()
    }

    /// Flushes, syncs to disk and renames the temporary file over the target. On an error the
    /// temporary file is removed and the target is left as it was.
    pub fn commit(self) -> io::Result<()> {
        let file = self.out.into_inner().map_err(io::IntoInnerError::into_error)?;
        let Some(tmp) = self.tmp else { return Ok(()) };
        file.sync_all()?;
        drop(file);
        tmp.persist(&self.path).map_err(|e| e.error)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.out.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Writes `bytes` to `path` all or nothing (an [`AtomicFile`] committed at once).
pub fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)?;
    file.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn commit_replaces_and_leaves_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        std::fs::write(&path, "old").unwrap();
        let mut f = AtomicFile::create(&path).unwrap();
        let beside = f.temp_path().is_some_and(|t| t.starts_with(dir.path()));
        assert!(beside, "the temporary file is beside the target");
        f.write_all(b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"old", "the target is untouched until commit");
        f.commit().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(names(dir.path()), ["r.json"]);
    }

    #[test]
    fn a_failed_write_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ft");
        let result = (|| -> io::Result<()> {
            let mut f = AtomicFile::create(&path)?;
            f.write_all(&[1; 1000])?;
            Err(io::Error::from(io::ErrorKind::StorageFull))
        })();
        assert!(result.is_err());
        assert!(names(dir.path()).is_empty(), "left behind: {:?}", names(dir.path()));
    }

    #[test]
    fn permissions_are_those_of_file_create() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.html");
        write_file(&path, b"<html>").unwrap();
        let plain = dir.path().join("plain.html");
        std::fs::File::create(&plain).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), mode(&plain), "as File::create makes it");
    }

    #[test]
    fn a_relative_name_is_written_in_the_current_directory() {
        let f = AtomicFile::create(Path::new("no-such-dir-tlblab/x.txt"));
        assert!(f.is_err(), "the directory must exist");
        let f = AtomicFile::create(Path::new("x-tlblab-atomic-test.txt")).unwrap();
        let here = std::env::current_dir().unwrap();
        assert_eq!(f.temp_path().and_then(Path::parent).map(|d| here.join(d)), Some(here));
    }

    #[test]
    fn a_link_is_followed_and_a_device_written_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.txt");
        let link = dir.path().join("link.txt");
        std::fs::write(&target, "old").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_file(&link, b"new").unwrap();
        assert!(link.is_symlink(), "the link stays a link");
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(names(dir.path()), ["link.txt", "target.txt"]);

        let null = AtomicFile::create(Path::new("/dev/null")).unwrap();
        assert_eq!(null.temp_path(), None);
        null.commit().unwrap();
        assert!(Path::new("/dev/null").exists(), "not replaced");
    }
}
