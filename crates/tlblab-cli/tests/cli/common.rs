//! Helpers shared by the tests: the binary, the fixtures, running a command and checking how it
//! failed.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A command running the `tlblab` binary built for these tests.
pub fn tlblab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tlblab"))
}

/// The built-in machine presets, in the order `sim machines` lists them.
pub const PRESETS: [&str; 12] = [
    "skylake",
    "skylake-kvm",
    "skylake-server",
    "skylake-sp-2s",
    "ivybridge",
    "icelake-server",
    "icelake-server-kvm",
    "sapphire-rapids",
    "zen2",
    "zen3",
    "zen4",
    "milan",
];

/// A file of `tests/data/`.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// The golden lackey trace.
pub fn golden_trace() -> PathBuf {
    data("golden.lackey")
}

/// The golden machine preset.
pub fn golden_machine() -> PathBuf {
    data("golden-machine.toml")
}

/// Runs `args`, which must succeed, and returns its standard output.
pub fn stdout_of<I, S>(args: I) -> Vec<u8>
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let output = tlblab().args(args).output().expect("running tlblab");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "tlblab failed ({}): {stderr}", output.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    output.stdout
}

/// Runs `args`, which must succeed and print JSON, and returns it.
pub fn json_of<I, S>(args: I) -> Value
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let stdout = stdout_of(args);
    serde_json::from_slice(&stdout).expect("tlblab printed valid JSON")
}

/// Runs `cmd`, which must exit with `code` without panicking and print exactly one error line
/// (`tlblab: error: …`) on standard error; returns standard error.
pub fn one_error(cmd: &mut Command, code: i32) -> String {
    let output = cmd.output().expect("running tlblab");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(code), "exit status; stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "tlblab panicked: {stderr}");
    assert_eq!(
        stderr.matches("tlblab: error:").count(),
        1,
        "expected exactly one error message, got: {stderr}"
    );
    assert!(stderr.starts_with("tlblab: error: "), "{stderr}");
    stderr
}

/// The JSON of one run without the fields that name the file (`input`, `format`, `compression`),
/// to compare runs of the same accesses read from different files.
pub fn counters_of(run: &Value) -> Value {
    let mut run = run.clone();
    let object = run.as_object_mut().expect("a run is a JSON object");
    for key in ["input", "format", "compression"] {
        assert!(object.remove(key).is_some(), "run has no {key:?}");
    }
    run
}

/// Every object key in `value`, at any depth, into `out`; the values under a key in `opaque`
/// (tables whose keys are data, or nested documents described elsewhere) are not entered.
pub fn json_keys(value: &Value, opaque: &[&str], out: &mut std::collections::BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                out.insert(k.clone());
                if !opaque.contains(&k.as_str()) {
                    json_keys(v, opaque, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| json_keys(v, opaque, out)),
        _ => {}
    }
}

/// docs/sim-output.md's text.
pub fn sim_output_doc() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/sim-output.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The keys that `doc` does not name in code style, alone (`origin`) or as the last part of a
/// path (`machine.origin`).
pub fn undocumented<'a>(
    keys: &'a std::collections::BTreeSet<String>,
    doc: &str,
) -> Vec<&'a String> {
    let named = |k: &str| {
        let tail = format!("{k}`");
        doc.match_indices(&tail).any(|(i, _)| matches!(doc[..i].chars().last(), Some('`' | '.')))
    };
    keys.iter().filter(|k| !named(k)).collect()
}

/// Every mechanism, in `tlblab sim mechanisms` order.
pub const MECHANISMS: [&str; 37] = [
    "guest",
    "idle-states",
    "csd-queue",
    "tlbstate-lines",
    "zap-batch",
    "mmap-lock",
    "working-set",
    "mlp",
    "pointer-chase",
    "stlb-pipelined",
    "zero-page-line",
    "compiler-reuse",
    "vma-merge",
    "nested-paging",
    "vcpu-preemption",
    "pv-tlb-flush",
    "xpfo-events",
    "xpfo-direct-map-4k",
    "mitigations",
    "mitigation-retpoline",
    "mitigation-safe-ret",
    "mitigation-untrain-ret",
    "mitigation-verw",
    "mitigation-rsb-fill",
    "mitigation-ibpb",
    "page-locks",
    "lock-irqs-off",
    "lru-list-lines",
    "vfork-wait",
    "poll-wake",
    "rwsem-steal",
    "wakeup-preemption",
    "haltpoll",
    "queued-messages",
    "hot-frames",
    "llc-domains",
    "invlpg-scope",
];
