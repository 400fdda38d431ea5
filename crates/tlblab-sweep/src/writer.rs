//! A sweep's output directory: the spec and environment beside the results, a journal that
//! grows as jobs finish (so an interrupted sweep resumes where it stopped), and at the end the
//! results in plan order as JSON Lines and Parquet, and the summary.
//!
//! | file | written |
//! |---|---|
//! | `spec.toml` | at the start: the spec as read |
//! | `environment.json` | at the start: kernel, CPU, load (`tlblab_env`) |
//! | `journal.jsonl` | one row per finished job, in the order they finish, each with its checksum |
//! | `results.jsonl`, `results.parquet` | at the end: one row per job, in plan order |
//! | `summary.json`, `summary.txt` | at the end |
//!
//! The results and summary depend only on the spec: the same with any engine, thread count or
//! number of interruptions.

use crate::error::SweepError;
use crate::plan::{Job, Plan};
use crate::row::{measure_keys, Row};
use crate::summary::{render, summarise, Summary};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The files a sweep writes in its directory.
pub const FILES: &[&str] = &[
    "spec.toml",
    "environment.json",
    "journal.jsonl",
    "results.jsonl",
    "results.parquet",
    "summary.json",
    "summary.txt",
];

/// Records a sweep's rows in its directory.
pub struct Writer {
    dir: PathBuf,
    plan: Plan,
    journal: File,
    /// Plan index of each job hash.
    index: HashMap<String, u64>,
    rows: BTreeMap<u64, Row>,
    /// Rows found in the journal when resuming.
    resumed: u64,
}

impl Writer {
    /// Opens `dir` for `plan`'s rows. A new or empty directory starts the sweep; one that holds
    /// a sweep's journal continues it with `resume` (its rows whose job is in the plan are kept)
    /// or starts over with `force`, and is refused otherwise. A journal's last line cut short
    /// (the writer was killed mid-line) is dropped; a damaged row elsewhere is refused
    /// ([`read_journal`]).
    pub fn open(dir: &Path, plan: &Plan, resume: bool, force: bool) -> Result<Writer, SweepError> {
        let shown = dir.display().to_string();
        let io = |path: &Path| {
            let path = path.display().to_string();
            move |source| SweepError::Io { path, source }
        };
        let out = |message: String| SweepError::Output { dir: shown.clone(), message };
        if dir.is_file() {
            return Err(out("is a file, not a directory".into()));
        }
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let journal_path = dir.join("journal.jsonl");
        let has_journal = journal_path.exists();
        let others: Vec<String> = std::fs::read_dir(dir)
            .map_err(io(dir))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| !FILES.contains(&n.as_str()))
            .collect();
        if !others.is_empty() && !has_journal {
            return Err(out(format!(
                "holds other files ({}): give a new or empty directory",
                others.join(", ")
            )));
        }
        if has_journal && !resume {
            if !force {
                return Err(out(
                    "holds a sweep's results: --resume continues it, --force starts over".into(),
                ));
            }
            for f in FILES {
                let p = dir.join(f);
                if p.exists() {
                    std::fs::remove_file(&p).map_err(io(&p))?;
                }
            }
        }
        let index: HashMap<String, u64> =
            plan.jobs().iter().map(|j| (j.hash.clone(), j.index)).collect();
        let mut rows = BTreeMap::new();
        if resume && journal_path.exists() {
            let journal = read(&journal_path)?;
            if journal.unchecked && !journal.rows.is_empty() {
                // A journal from before rows had checksums: its rows are trusted as they were,
                // and written again with checksums, so that every row appended to it has one.
                let text: String = journal.rows.iter().map(journal_line).collect();
                tlblab_types::atomic::write_file(&journal_path, text.as_bytes())
                    .map_err(io(&journal_path))?;
            }
            for row in journal.rows {
                if let Some(&i) = index.get(&row.hash) {
                    rows.entry(i).or_insert(Row { index: i, ..row });
                }
            }
        }
        tlblab_types::atomic::write_file(&dir.join("spec.toml"), plan.text.as_bytes())
            .map_err(io(&dir.join("spec.toml")))?;
        let env = serde_json::to_string_pretty(&tlblab_env::Environment::capture())
            .expect("the environment serializes")
            + "\n";
        tlblab_types::atomic::write_file(&dir.join("environment.json"), env.as_bytes())
            .map_err(io(&dir.join("environment.json")))?;
        let journal = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&journal_path)
            .map_err(io(&journal_path))?;
        let resumed = rows.len() as u64;
        Ok(Writer { dir: dir.to_path_buf(), plan: plan.clone(), journal, index, rows, resumed })
    }

    /// The jobs with no row yet, in plan order.
    pub fn pending(&self) -> Vec<Job> {
        self.plan.jobs().iter().filter(|j| !self.rows.contains_key(&j.index)).cloned().collect()
    }

    /// Rows found in the journal when the writer opened (a resumed sweep's finished jobs).
    pub fn resumed(&self) -> u64 {
        self.resumed
    }

    /// Rows recorded so far, resumed ones included.
    pub fn done(&self) -> u64 {
        self.rows.len() as u64
    }

    /// The results directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Records a finished job's row at once (appended to the journal); `false` if its job
    /// already has one (a retried job), which is then ignored.
    pub fn record(&mut self, row: Row) -> Result<bool, SweepError> {
        let Some(&i) = self.index.get(&row.hash) else {
            return Err(SweepError::Output {
                dir: self.dir.display().to_string(),
                message: format!("a row for job {} is not of this sweep's plan", row.hash),
            });
        };
        if self.rows.contains_key(&i) {
            return Ok(false);
        }
        let line = journal_line(&row);
        let path = self.dir.join("journal.jsonl");
        // One write per line: a reader never sees half a row unless the process dies inside
        // the call, and then the resume drops that last line.
        self.journal
            .write_all(line.as_bytes())
            .map_err(|source| SweepError::Io { path: path.display().to_string(), source })?;
        self.rows.insert(i, Row { index: i, ..row });
        Ok(true)
    }

    /// Writes the results and the summary; every job must have its row.
    pub fn finish(self) -> Result<Summary, SweepError> {
        let missing = self.plan.jobs().len() - self.rows.len();
        if missing > 0 {
            return Err(SweepError::Output {
                dir: self.dir.display().to_string(),
                message: format!("{missing} jobs have no row yet: --resume runs them"),
            });
        }
        let io = |path: &Path| {
            let path = path.display().to_string();
            move |source| SweepError::Io { path, source }
        };
        let _ = self.journal.sync_all();
        let rows: Vec<Row> = self.rows.into_values().collect();
        let mut jsonl = String::new();
        for r in &rows {
            jsonl += &serde_json::to_string(r).expect("a row serializes");
            jsonl.push('\n');
        }
        let path = self.dir.join("results.jsonl");
        tlblab_types::atomic::write_file(&path, jsonl.as_bytes()).map_err(io(&path))?;
        write_parquet(&self.dir.join("results.parquet"), &rows, self.plan.spec.kind)?;
        let summary = summarise(&self.plan, &rows);
        let path = self.dir.join("summary.json");
        let json = serde_json::to_string_pretty(&summary).expect("a summary serializes") + "\n";
        tlblab_types::atomic::write_file(&path, json.as_bytes()).map_err(io(&path))?;
        let path = self.dir.join("summary.txt");
        tlblab_types::atomic::write_file(&path, render(&summary).as_bytes()).map_err(io(&path))?;
        Ok(summary)
    }
}

/// The key of a journal row's checksum: the last member of every line, the SHA-256 (hex) of
/// the line's bytes before it with the object closed (`{…}`, the row as serialised).
const SUM_KEY: &str = "row_sha256";

/// A journal line for `row`: its JSON with [`SUM_KEY`] appended.
fn journal_line(row: &Row) -> String {
    let body = serde_json::to_string(row).expect("a row serializes");
    let sum = hex_sha256(body.as_bytes());
    let open = body.strip_suffix('}').expect("a row is a JSON object");
    format!("{open},\"{SUM_KEY}\":\"{sum}\"}}\n")
}

fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A journal line's row text, if the line ends with a checksum: `Ok(Some(body))` when it
/// matches, `Err` when it does not, `Ok(None)` without one.
fn checked_body(line: &str) -> Result<Option<String>, String> {
    let marker = format!(",\"{SUM_KEY}\":\"");
    let Some((head, sum)) = line.strip_suffix("\"}").and_then(|l| l.rsplit_once(marker.as_str()))
    else {
        return Ok(None);
    };
    let body = format!("{head}}}");
    if sum.len() != 64 || hex_sha256(body.as_bytes()) != sum {
        return Err("the row does not match its checksum (a value was changed or damaged); \
                    move the file away to start over"
            .into());
    }
    Ok(Some(body))
}

/// What a journal holds.
struct Journal {
    rows: Vec<Row>,
    /// No row has a checksum: a journal written before rows had them, read as it is.
    unchecked: bool,
}

/// The rows of a sweep's journal. A last line cut short (no newline: the writer was killed
/// mid-line, wherever it was cut, also inside a character) is dropped and cut from the file,
/// so that appending goes on from a whole line. Every other line must be a row whose checksum
/// matches, and a job (hash) may have a second row only if it is the same; anything else is
/// [`SweepError::Corrupt`] naming the line. A journal without any checksum (written by tlblab
/// before rows had them) is read as it is.
pub fn read_journal(path: &Path) -> Result<Vec<Row>, SweepError> {
    read(path).map(|j| j.rows)
}

fn read(path: &Path) -> Result<Journal, SweepError> {
    let shown = path.display().to_string();
    let bytes =
        std::fs::read(path).map_err(|source| SweepError::Io { path: shown.clone(), source })?;
    let corrupt =
        |line: usize, message: String| SweepError::Corrupt { path: shown.clone(), line, message };
    // Whole lines only: a last line without its newline is the cut one.
    let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let text = std::str::from_utf8(&bytes[..whole]).map_err(|e| {
        let at = e.valid_up_to();
        let line = 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count();
        let why = tlblab_types::plain::utf8_text(&bytes[..whole]).err().unwrap_or_default();
        corrupt(line, why)
    })?;
    let mut parsed = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let body = checked_body(line).map_err(|e| corrupt(i + 1, e))?;
        parsed.push((i + 1, line, body));
    }
    let checked = parsed.iter().any(|(_, _, body)| body.is_some());
    let mut rows: Vec<Row> = Vec::new();
    let mut first_of: HashMap<String, (usize, usize)> = HashMap::new();
    for (number, text, body) in parsed {
        let json = match (&body, checked) {
            (Some(body), _) => body.as_str(),
            (None, false) => text,
            (None, true) => {
                return Err(corrupt(
                    number,
                    format!("the row has no checksum (`{SUM_KEY}`), while the others have one: the line was damaged; move the file away to start over"),
                ))
            }
        };
        let row = serde_json::from_str::<Row>(json).map_err(|e| {
            corrupt(
                number,
                format!(
                    "not a sweep row ({}); move the file away to start over",
                    tlblab_types::plain::serde_message(&e.to_string())
                ),
            )
        })?;
        match first_of.get(&row.hash) {
            None => {
                first_of.insert(row.hash.clone(), (number, rows.len()));
                rows.push(row);
            }
            // The same row twice is harmless, and read once; the index is the plan's, not the
            // job's, and may differ between two runs.
            Some(&(_, at)) if (Row { index: row.index, ..rows[at].clone() }) == row => {}
            Some(&(line, _)) => {
                return Err(corrupt(
                    number,
                    format!(
                        "a second row for job {}, with other values than line {line}'s; move the file away to start over",
                        row.hash
                    ),
                ))
            }
        }
    }
    if whole < bytes.len() {
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|source| SweepError::Io { path: shown.clone(), source })?;
        f.set_len(whole as u64).map_err(|source| SweepError::Io { path: shown.clone(), source })?;
    }
    Ok(Journal { rows, unchecked: !checked })
}

/// `results.parquet`: the axes, `finished`, every measure as `m.<key>` (float, null where the
/// run has none) and every counter any row has as `c.<key>` (null where a row lacks it).
fn write_parquet(path: &Path, rows: &[Row], kind: crate::spec::Kind) -> Result<(), SweepError> {
    use arrow_array::builder::{BooleanBuilder, Float64Builder, StringBuilder, UInt64Builder};
    use arrow_array::{ArrayRef, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    let parquet_err = |e: &dyn std::fmt::Display| SweepError::Parquet {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    let mut text = |name: &str, get: &dyn Fn(&Row) -> String| {
        let mut b = StringBuilder::new();
        rows.iter().for_each(|r| b.append_value(get(r)));
        fields.push(Field::new(name, DataType::Utf8, false));
        columns.push(Arc::new(b.finish()));
    };
    text("hash", &|r| r.hash.clone());
    // The point's columns, in its serialized order, typed by their JSON values.
    let points: Vec<serde_json::Map<String, serde_json::Value>> = rows
        .iter()
        .map(|r| match serde_json::to_value(&r.point) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        })
        .collect();
    let mut index = UInt64Builder::new();
    rows.iter().for_each(|r| index.append_value(r.index));
    let mut head: Vec<(Field, ArrayRef)> =
        vec![(Field::new("index", DataType::UInt64, false), Arc::new(index.finish()))];
    let point_keys: Vec<String> =
        points.first().map(|m| m.keys().cloned().collect()).unwrap_or_default();
    for key in &point_keys {
        if points[0][key].is_string() {
            let mut b = StringBuilder::new();
            points.iter().for_each(|m| b.append_option(m.get(key).and_then(|v| v.as_str())));
            head.push((Field::new(key, DataType::Utf8, true), Arc::new(b.finish())));
        } else {
            let mut b = UInt64Builder::new();
            points.iter().for_each(|m| b.append_option(m.get(key).and_then(|v| v.as_u64())));
            head.push((Field::new(key, DataType::UInt64, true), Arc::new(b.finish())));
        }
    }
    let (head_fields, head_columns): (Vec<Field>, Vec<ArrayRef>) = head.into_iter().unzip();
    let mut finished = BooleanBuilder::new();
    rows.iter().for_each(|r| finished.append_value(r.finished));
    let mut all_fields = head_fields;
    all_fields.extend(fields);
    let mut all_columns = head_columns;
    all_columns.extend(columns);
    all_fields.push(Field::new("finished", DataType::Boolean, false));
    all_columns.push(Arc::new(finished.finish()));
    for key in measure_keys(kind) {
        let mut b = Float64Builder::new();
        rows.iter().for_each(|r| b.append_option(r.measures.get(key).copied().flatten()));
        all_fields.push(Field::new(format!("m.{key}"), DataType::Float64, true));
        all_columns.push(Arc::new(b.finish()));
    }
    let counters: BTreeSet<&String> = rows.iter().flat_map(|r| r.counters.keys()).collect();
    for key in counters {
        let mut b = UInt64Builder::new();
        rows.iter().for_each(|r| b.append_option(r.counters.get(key).copied()));
        all_fields.push(Field::new(format!("c.{key}"), DataType::UInt64, true));
        all_columns.push(Arc::new(b.finish()));
    }
    let schema = Arc::new(Schema::new(all_fields));
    let batch = RecordBatch::try_new(schema.clone(), all_columns).map_err(|e| parquet_err(&e))?;
    let file = tlblab_types::atomic::AtomicFile::create(path)
        .map_err(|source| SweepError::Io { path: path.display().to_string(), source })?;
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(file, schema, None).map_err(|e| parquet_err(&e))?;
    writer.write(&batch).map_err(|e| parquet_err(&e))?;
    let file = writer.into_inner().map_err(|e| parquet_err(&e))?;
    file.commit().map_err(|source| SweepError::Io { path: path.display().to_string(), source })?;
    Ok(())
}
