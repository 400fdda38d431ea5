//! Finding (or mounting) tracefs, and the online CPUs.

use std::io;
use std::path::{Path, PathBuf};

use crate::error::{read_text, Error, Result};
use crate::format::{parse_event_format, parse_header_page, EventFormat, EventName, HeaderPage};

/// Where tracefs is mounted by default on current kernels.
pub const DEFAULT_MOUNT: &str = "/sys/kernel/tracing";

/// A tracefs mount: the directory holding `instances/`, `events/`, `trace_pipe`, ...
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracefs {
    root: PathBuf,
}

impl Tracefs {
    /// Uses the tracefs mounted at `root` (checks that `root/instances` is accessible).
    pub fn at(root: impl Into<PathBuf>) -> Result<Tracefs> {
        let root = root.into();
        let instances = root.join("instances");
        std::fs::metadata(&instances).map_err(|e| Error::io("stat", &instances, e))?;
        Ok(Tracefs { root })
    }

    /// Finds a mounted tracefs through `/proc/mounts`; never mounts anything.
    pub fn find() -> Result<Tracefs> {
        let mounts = Path::new("/proc/mounts");
        let text = read_text(mounts)?;
        match tracefs_from_mounts(&text) {
            Some(root) => Tracefs::at(root),
            None => Err(Error::NotMounted),
        }
    }

    /// Like [`Tracefs::find`], but when nothing is mounted, mounts tracefs at
    /// [`DEFAULT_MOUNT`] (needs CAP_SYS_ADMIN).
    pub fn find_or_mount() -> Result<Tracefs> {
        match Tracefs::find() {
            Err(Error::NotMounted) => {}
            other => return other,
        }
        let target = Path::new(DEFAULT_MOUNT);
        match rustix::mount::mount(
            "nodev",
            target,
            "tracefs",
            rustix::mount::MountFlags::empty(),
            None,
        ) {
            Ok(()) => Tracefs::at(target),
            Err(e) if e == rustix::io::Errno::PERM || e == rustix::io::Errno::ACCESS => {
                Err(Error::NotMounted)
            }
            Err(e) => Err(Error::Mount { path: target.to_path_buf(), source: io::Error::from(e) }),
        }
    }

    /// The mount point.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Parses `events/header_page` of the top-level buffer.
    pub fn header_page(&self) -> Result<HeaderPage> {
        let path = self.root.join("events/header_page");
        parse_header_page(&read_text(&path)?, &path)
    }

    /// Parses `events/<system>/<name>/format` of the top-level buffer.
    pub fn event_format(&self, event: &EventName) -> Result<EventFormat> {
        read_event_format(&self.root, event)
    }
}

/// Reads and parses the format file of `event` under the tracefs (or instance) dir `dir`.
pub(crate) fn read_event_format(dir: &Path, event: &EventName) -> Result<EventFormat> {
    let path = dir.join("events").join(&event.system).join(&event.name).join("format");
    let text = read_text(&path)?;
    parse_event_format(&text, &path)
}

/// Picks the tracefs directory out of the text of `/proc/mounts`: a `tracefs` mount, or else
/// the `tracing` directory of a `debugfs` mount (older kernels and distributions).
pub fn tracefs_from_mounts(mounts: &str) -> Option<PathBuf> {
    let mut debugfs = None;
    for line in mounts.lines() {
        let mut fields = line.split_whitespace();
        let (Some(_dev), Some(dir), Some(fstype)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        match fstype {
            "tracefs" => return Some(PathBuf::from(unescape_mount_path(dir))),
            "debugfs" if debugfs.is_none() => {
                debugfs = Some(PathBuf::from(unescape_mount_path(dir)).join("tracing"));
            }
            _ => {}
        }
    }
    debugfs
}

/// `/proc/mounts` writes space, tab, newline and backslash in paths as `\ooo` octal escapes.
fn unescape_mount_path(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (bytes[i], octal) {
            (b'\\', Some(d)) => {
                let v = d.iter().fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
                out.push(u8::try_from(v).unwrap_or(b'?'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The online CPUs, from `/sys/devices/system/cpu/online`.
pub fn online_cpus() -> Result<Vec<u32>> {
    let path = Path::new("/sys/devices/system/cpu/online");
    tlblab_types::parse_cpu_list(&read_text(path)?)
        .map_err(|e| Error::format(path, 1, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracefs_mount_is_preferred_over_debugfs() {
        let m = "sysfs /sys sysfs rw 0 0\n\
                 debugfs /sys/kernel/debug debugfs rw,relatime 0 0\n\
                 nodev /sys/kernel/tracing tracefs rw,relatime 0 0\n";
        assert_eq!(tracefs_from_mounts(m), Some(PathBuf::from("/sys/kernel/tracing")));
    }

    #[test]
    fn debugfs_tracing_dir_is_the_fallback() {
        let m = "debugfs /sys/kernel/debug debugfs rw 0 0\nproc /proc proc rw 0 0\n";
        assert_eq!(tracefs_from_mounts(m), Some(PathBuf::from("/sys/kernel/debug/tracing")));
        assert_eq!(tracefs_from_mounts("proc /proc proc rw 0 0\n"), None);
    }

    #[test]
    fn octal_escapes_in_mount_points() {
        let m = "nodev /mnt/my\\040trace tracefs rw 0 0\n";
        assert_eq!(tracefs_from_mounts(m), Some(PathBuf::from("/mnt/my trace")));
        assert_eq!(unescape_mount_path("a\\134b\\011"), "a\\b\t");
        assert_eq!(unescape_mount_path("trailing\\04"), "trailing\\04");
    }
}
