//! The crate's one error type: every variant names the file, line, CPU or byte offset involved,
//! or the permission that is missing.

use std::io;
use std::path::{Path, PathBuf};

/// What the user has to do when tracefs is missing or not accessible.
pub const NEED_ROOT: &str = "run as root or `mount -t tracefs nodev /sys/kernel/tracing`";

/// Errors of tracefs access, format parsing and ring-buffer decoding.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No tracefs mount was found and mounting one failed for lack of privilege.
    #[error(
        "tracefs: tracefs is not mounted and mounting it needs root (CAP_SYS_ADMIN): {NEED_ROOT}"
    )]
    NotMounted,
    /// Mounting tracefs failed for another reason than privilege.
    #[error("tracefs: mounting tracefs at {path} failed")]
    Mount {
        /// The mount point tried.
        path: PathBuf,
        /// The error of mount(2).
        source: io::Error,
    },
    /// A tracefs file or directory exists but we may not use it.
    #[error(
        "tracefs: permission denied on {path}: tracefs needs root (CAP_SYS_ADMIN): {NEED_ROOT}"
    )]
    PermissionDenied {
        /// The file that refused access.
        path: PathBuf,
    },
    /// Any other I/O error on a named file.
    #[error("tracefs: {op} {path}")]
    Io {
        /// What we were doing ("read", "write", "rmdir", ...).
        op: &'static str,
        /// The file involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A format file (`events/<sys>/<name>/format`, `events/header_page`) did not parse.
    #[error("tracefs: {path}:{line}: {msg}")]
    Format {
        /// The file (or a label for text parsed from memory).
        path: PathBuf,
        /// 1-based line number, 0 when the problem is the file as a whole.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// A ring-buffer page or event did not decode.
    #[error("tracefs: CPU {cpu}: byte {offset}: {msg}")]
    Decode {
        /// The CPU whose buffer the page came from.
        cpu: u32,
        /// Byte offset in that CPU's stream (page index × page size + offset in the page).
        offset: u64,
        /// What is wrong.
        msg: String,
    },
    /// An event that was required is not available on this kernel.
    #[error("tracefs: event {event} is not available: {path} does not exist")]
    MissingEvent {
        /// `system/name`.
        event: String,
        /// The directory that was looked for.
        path: PathBuf,
    },
    /// The reading thread of a [`crate::FlushCounter`] panicked.
    #[error("tracefs: the flush-counting thread panicked")]
    ReaderPanicked,
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps an I/O error on `path`, turning "permission denied" into the variant that says
    /// which privilege is missing.
    pub fn io(op: &'static str, path: &Path, source: io::Error) -> Error {
        if source.kind() == io::ErrorKind::PermissionDenied {
            Error::PermissionDenied { path: path.to_path_buf() }
        } else {
            Error::Io { op, path: path.to_path_buf(), source }
        }
    }

    /// A format error at `line` (1-based) of `path`.
    pub fn format(path: &Path, line: usize, msg: impl Into<String>) -> Error {
        Error::Format { path: path.to_path_buf(), line, msg: msg.into() }
    }
}

/// Reads a whole tracefs file as text.
///
/// NOTE: `events/header_page` and `header_event` answer only the *first* read() (a later read
/// at a non-zero offset returns 0, seen on 6.18), and `std::fs::read_to_string` starts with a
/// 32-byte probe read on files that report size 0. So read with a buffer large enough for
/// any control file in one go, then keep reading until EOF for the files that do continue.
pub(crate) fn read_text(path: &Path) -> Result<String> {
    use std::io::Read;
    let err = |e| Error::io("read", path, e);
    let mut file = std::fs::File::open(path).map_err(err)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(len * 2, 0);
        }
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(err(e)),
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|e| Error::format(path, 0, format!("not UTF-8: {e}")))
}

/// Writes a tracefs control file (one write, as the kernel parses it per write).
pub(crate) fn write_text(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::io("write", path, e))
}
