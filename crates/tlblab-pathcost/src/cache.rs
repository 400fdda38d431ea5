//! The measurement cache: one JSON file per (CPU model and signature, kernel release, version of
//! the measuring code), written atomically.

use crate::{PathCostError, PathCosts};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The version of the measuring code: raise it when a method changes, so old caches are
/// ignored.
pub const CODE_VERSION: u32 = 14;

/// What a measurement is valid for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheKey {
    /// `model name` of `/proc/cpuinfo` (its first processor).
    pub cpu_model: String,
    /// `cpu family`, `model`, `stepping` of `/proc/cpuinfo`, as written there.
    pub signature: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// tlblab's version and [`CODE_VERSION`]: `0.1.0/1`.
    pub code: String,
}

impl CacheKey {
    /// The key of this machine, now.
    pub fn of_this_machine() -> CacheKey {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let release = nix::sys::utsname::uname()
            .map(|u| u.release().to_string_lossy().into_owned())
            .unwrap_or_else(|_| "unknown".into());
        CacheKey::from_parts(&cpuinfo, &release)
    }

    /// The key from the text of `/proc/cpuinfo` and a kernel release.
    pub fn from_parts(cpuinfo: &str, kernel_release: &str) -> CacheKey {
        let field = |name: &str| {
            cpuinfo
                .lines()
                .take_while(|l| !l.trim().is_empty())
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    (k.trim() == name).then(|| v.trim().to_owned())
                })
                .unwrap_or_else(|| "?".into())
        };
        CacheKey {
            cpu_model: field("model name"),
            signature: format!(
                "family {} model {} stepping {}",
                field("cpu family"),
                field("model"),
                field("stepping")
            ),
            kernel_release: kernel_release.to_owned(),
            code: format!("{}/{CODE_VERSION}", env!("CARGO_PKG_VERSION")),
        }
    }

    /// 16 hex digits of a 64-bit FNV-1a hash of the key's fields (stable across Rust versions).
    pub fn digest(&self) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for part in [&self.cpu_model, &self.signature, &self.kernel_release, &self.code] {
            for b in part.bytes().chain([0u8]) {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        format!("{h:016x}")
    }

    /// `host-costs-<digest>.json`.
    pub fn file_name(&self) -> String {
        format!("host-costs-{}.json", self.digest())
    }
}

/// `$XDG_CACHE_HOME/tlblab` (when absolute), else `$HOME/.cache/tlblab`.
pub fn cache_dir_from(xdg_cache_home: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let xdg = xdg_cache_home.map(PathBuf::from).filter(|p| p.is_absolute());
    let base = xdg.or_else(|| {
        home.map(PathBuf::from).filter(|p| p.is_absolute()).map(|h| h.join(".cache"))
    })?;
    Some(base.join("tlblab"))
}

/// [`cache_dir_from`] the environment.
pub fn cache_dir() -> Option<PathBuf> {
    cache_dir_from(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME"))
}

/// The cached costs at `path` if they were measured for `key`; `Ok(None)` when there is no
/// file or it is for another key; an error naming the file when it cannot be read or parsed.
pub fn read_cache(path: &Path, key: &CacheKey) -> Result<Option<PathCosts>, PathCostError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(PathCostError::Io { path: path.to_owned(), source }),
    };
    let costs: PathCosts = serde_json::from_str(&text)
        .map_err(|e| PathCostError::Corrupt { path: path.to_owned(), message: e.to_string() })?;
    Ok((costs.key == *key).then_some(costs))
}

/// Writes `costs` to `path` all or nothing (see [`tlblab_types::atomic`]).
pub fn write_cache(path: &Path, costs: &PathCosts) -> Result<(), PathCostError> {
    let io = |source| PathCostError::Io { path: path.to_owned(), source };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let text = serde_json::to_string_pretty(costs).map_err(|e| PathCostError::Corrupt {
        path: path.to_owned(),
        message: format!("cannot serialize: {e}"),
    })?;
    tlblab_types::atomic::write_file(path, text.as_bytes()).map_err(io)
}

/// Costs from the cache or, failing that, measured now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cached {
    /// The costs.
    pub costs: PathCosts,
    /// The cache file read or written (`None` with no cache folder).
    pub file: Option<PathBuf>,
    /// Whether the costs came from the file.
    pub from_cache: bool,
    /// What went wrong with the cache (a corrupt file, a failed write), for the provenance.
    pub notes: Vec<String>,
}

/// The costs for `key` from `dir` (if given), else `measure()`d and written there.
/// Measures, and writes the result into `dir` for later [`cached_or_measure_in`] calls.
pub fn measure_into(dir: Option<&Path>, measure: impl FnOnce() -> PathCosts) -> Cached {
    let costs = measure();
    let mut notes = vec!["measured afresh (the cache is not read)".to_owned()];
    let file = dir.map(|d| d.join(costs.key.file_name()));
    if let Some(f) = &file {
        if let Err(e) = write_cache(f, &costs) {
            notes.push(format!("not cached: {e}"));
        }
    }
    Cached { costs, file, from_cache: false, notes }
}

/// The cached measurement for `key` in `dir`, or a new one (then cached).
pub fn cached_or_measure_in(
    dir: Option<&Path>,
    key: &CacheKey,
    measure: impl FnOnce() -> PathCosts,
) -> Cached {
    let mut notes = Vec::new();
    let Some(dir) = dir else {
        notes.push("no cache folder ($XDG_CACHE_HOME and $HOME unset): measured, not kept".into());
        return Cached { costs: measure(), file: None, from_cache: false, notes };
    };
    let file = dir.join(key.file_name());
    match read_cache(&file, key) {
        Ok(Some(costs)) => return Cached { costs, file: Some(file), from_cache: true, notes },
        Ok(None) => {}
        Err(e) => notes.push(format!("{e}; measured again")),
    }
    let costs = measure();
    if let Err(e) = write_cache(&file, &costs) {
        notes.push(format!("not cached: {e}"));
    }
    Cached { costs, file: Some(file), from_cache: false, notes }
}
