//! `/sys/devices/system/cpu/vulnerabilities/*`: one file per issue, one line of state each.

use crate::source::io_reason;
use crate::Error;
use std::collections::BTreeMap;
use std::path::Path;

/// Parses a listing in `grep -H . *` form (`NAME:STATE` per line), as the fixtures store it.
pub fn parse_vulnerability_listing(text: &str) -> Result<BTreeMap<String, String>, Error> {
    let mut map = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (name, state) = line.split_once(':').ok_or_else(|| Error::Parse {
            what: "vulnerability listing".to_owned(),
            line: i + 1,
            message: format!("expected NAME:STATE, found {line:?}"),
        })?;
        map.insert(name.trim().to_owned(), state.trim().to_owned());
    }
    Ok(map)
}

/// Reads every file of a vulnerabilities directory into `name -> state`; the error is a reason
/// naming the file.
pub fn read_vulnerability_dir(dir: &Path) -> Result<BTreeMap<String, String>, String> {
    let mut map = BTreeMap::new();
    let entries = std::fs::read_dir(dir).map_err(|e| io_reason(dir, &e, ""))?;
    for entry in entries {
        let path = entry.map_err(|e| io_reason(dir, &e, ""))?.path();
        let state = std::fs::read_to_string(&path).map_err(|e| io_reason(&path, &e, ""))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        map.insert(name, state.trim().to_owned());
    }
    Ok(map)
}
