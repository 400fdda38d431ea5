//! Result files and saved baselines.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::BenchError;
use crate::results::{BenchResults, SCHEMA};

/// Writes `results` to `path` so that a reader sees the old file or the new one, never a part:
/// a temporary file in the same directory, flushed to disk, then renamed over `path`.
pub fn write_atomic(path: &Path, results: &BenchResults) -> Result<(), BenchError> {
    let io = |action, source| BenchError::Io { path: path.to_path_buf(), action, source };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| io("creating its directory", e))?;
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp.{}", std::process::id()));
    let tmp = path.with_file_name(name);
    let text = serde_json::to_string_pretty(results).expect("results serialize");
    let written = fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(text.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()
    });
    if let Err(e) = written.and_then(|()| fs::rename(&tmp, path)) {
        let _ = fs::remove_file(&tmp);
        return Err(io("writing", e));
    }
    Ok(())
}

/// Reads a result file, checking its schema first so that a wrong file gets a clear message.
pub fn load_results(path: &Path) -> Result<BenchResults, BenchError> {
    let text = fs::read_to_string(path).map_err(|source| BenchError::Io {
        path: path.to_path_buf(),
        action: "reading",
        source,
    })?;
    let parse = |message: String| BenchError::Parse { path: path.to_path_buf(), message };
    #[derive(serde::Deserialize)]
    struct Header {
        schema: Option<String>,
    }
    let header: Header = serde_json::from_str(&text)
        .map_err(|e| parse(tlblab_types::plain::serde_message(&e.to_string())))?;
    match header.schema.as_deref() {
        Some(SCHEMA) => {}
        Some(other) => {
            return Err(parse(format!(
                "schema {other:?} is not {SCHEMA:?} (not a tlblab bench result?)"
            )))
        }
        None => return Err(parse(format!("no \"schema\" field: not a {SCHEMA} result file"))),
    }
    serde_json::from_str(&text)
        .map_err(|e| parse(tlblab_types::plain::serde_message(&e.to_string())))
}

/// A directory of saved baselines, one `NAME.json` result file each.
#[derive(Debug, Clone)]
pub struct BaselineStore {
    dir: PathBuf,
}

impl BaselineStore {
    /// The store in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> BaselineStore {
        BaselineStore { dir: dir.into() }
    }

    /// The default store: `$TLBLAB_BASELINES`, else `$XDG_DATA_HOME/tlblab/baselines`, else
    /// `$HOME/.local/share/tlblab/baselines`, else `.tlblab/baselines`.
    pub fn default_location() -> BaselineStore {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let dir = var("TLBLAB_BASELINES")
            .or_else(|| var("XDG_DATA_HOME").map(|d| d.join("tlblab/baselines")))
            .or_else(|| var("HOME").map(|h| h.join(".local/share/tlblab/baselines")))
            .unwrap_or_else(|| PathBuf::from(".tlblab/baselines"));
        BaselineStore { dir }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of baseline `name`.
    pub fn path(&self, name: &str) -> Result<PathBuf, BenchError> {
        let ok = !name.is_empty()
            && !name.starts_with('.')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        if !ok {
            return Err(BenchError::BadBaselineName(name.to_string()));
        }
        Ok(self.dir.join(format!("{name}.json")))
    }

    /// Saves `results` as baseline `name` (replacing one of that name).
    pub fn save(&self, name: &str, results: &BenchResults) -> Result<PathBuf, BenchError> {
        let path = self.path(name)?;
        write_atomic(&path, results)?;
        Ok(path)
    }

    /// The saved baselines' names, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json").map(str::to_string))
            .collect();
        names.sort();
        names
    }

    /// Loads `name_or_path`: a file when it ends in `.json` or contains `/`, else a saved
    /// baseline of that name.
    pub fn load(&self, name_or_path: &str) -> Result<BenchResults, BenchError> {
        if name_or_path.ends_with(".json") || name_or_path.contains('/') {
            return load_results(Path::new(name_or_path));
        }
        let path = self.path(name_or_path)?;
        if !path.exists() {
            let names = self.names();
            let known = if names.is_empty() { "none".to_string() } else { names.join(", ") };
            return Err(BenchError::NoBaseline {
                name: name_or_path.to_string(),
                dir: self.dir.clone(),
                known,
            });
        }
        load_results(&path)
    }
}
