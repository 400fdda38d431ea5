//! Result files and saved baselines.

use std::fs;
use std::path::{Path, PathBuf};
use tlblab_types::atomic::write_file;

use crate::error::BenchError;
use crate::results::{BenchResults, SCHEMA};

/// Writes `results` to `path` so that a reader sees the old file or the new one, never a part
/// (see [`tlblab_types::atomic`]).
pub fn write_atomic(path: &Path, results: &BenchResults) -> Result<(), BenchError> {
    let io = |action, source| BenchError::Io { path: path.to_path_buf(), action, source };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| io("creating its directory", e))?;
    }
    let text = serde_json::to_string_pretty(results).expect("results serialize") + "\n";
    write_file(path, text.as_bytes()).map_err(|e| io("writing", e))
}

/// Reads a result file, checking its schema first so that a wrong file gets a clear message,
/// and its values after, so that a damaged one is refused with the run it names rather than
/// failing in the statistics. Anything wrong with the contents is [`BenchError::Parse`].
pub fn load_results(path: &Path) -> Result<BenchResults, BenchError> {
    let bytes = fs::read(path).map_err(|source| BenchError::Io {
        path: path.to_path_buf(),
        action: "reading",
        source,
    })?;
    let parse = |message: String| BenchError::Parse { path: path.to_path_buf(), message };
    let text = tlblab_types::plain::utf8_text(&bytes)
        .map_err(|e| parse(format!("not a bench result file: {e}")))?;
    #[derive(serde::Deserialize)]
    struct Header {
        schema: Option<String>,
    }
    let header: Header = serde_json::from_str(text)
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
    let results: BenchResults = serde_json::from_str(text)
        .map_err(|e| parse(tlblab_types::plain::serde_message(&e.to_string())))?;
    for c in &results.configs {
        for (i, run) in c.runs.iter().enumerate() {
            // Zero, or a positive normal number: a subnormal (1e-320) or an infinity is no
            // measurement, and would make a ratio of means infinite.
            if !(run.value == 0.0 || run.value.is_normal() && run.value > 0.0) {
                return Err(parse(format!(
                    "{}, run {} of {}: value {:?} {} is not a measurement",
                    c.config.key(),
                    i + 1,
                    c.runs.len(),
                    run.value,
                    c.config.unit
                )));
            }
        }
    }
    Ok(results)
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
