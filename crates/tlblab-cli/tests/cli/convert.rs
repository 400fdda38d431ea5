//! `sim convert` writes a compact trace that simulates exactly like its source, and compressed
//! copies of a trace simulate exactly like the original.

use crate::common::{counters_of, golden_machine, golden_trace, json_of, tlblab};
use serde_json::Value;
use std::io::Write;
use std::path::Path;

/// The single run of `sim trace --json --machine golden FILE`.
fn golden_run(file: &Path) -> Value {
    let report = json_of([
        "sim".as_ref(),
        "trace".as_ref(),
        "--json".as_ref(),
        "--machine".as_ref(),
        golden_machine().as_os_str(),
        file.as_os_str(),
    ]);
    assert_eq!(report["errors"], serde_json::json!([]));
    report["runs"][0].clone()
}

#[test]
fn compact_conversion_simulates_identically() {
    let dir = tempfile::tempdir().unwrap();
    let compact = dir.path().join("golden.tlbt");
    tlblab()
        .args(["sim", "convert"])
        .arg(golden_trace())
        .arg("-o")
        .arg(&compact)
        .assert()
        .success()
        .stdout("")
        .stderr(predicates::str::contains("(lackey)"))
        .stderr(predicates::str::contains("25 records for 30 accesses"));
    // Header, one record per coalesced event, END.
    assert_eq!(std::fs::metadata(&compact).unwrap().len(), 16 + 25 * 16 + 16);

    let lackey = golden_run(&golden_trace());
    let converted = golden_run(&compact);
    assert_eq!(lackey["format"], "lackey");
    assert_eq!(converted["format"], "compact");
    assert_eq!(converted["compression"], "none");
    assert_eq!(counters_of(&lackey), counters_of(&converted));

    // Converting the compact file again gives the same bytes.
    let again = dir.path().join("again.tlbt");
    tlblab().args(["sim", "convert"]).arg(&compact).arg("-o").arg(&again).assert().success();
    assert_eq!(std::fs::read(&compact).unwrap(), std::fs::read(&again).unwrap());
}

#[test]
fn gzip_and_xz_copies_simulate_identically() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read(golden_trace()).unwrap();

    let gz = dir.path().join("golden.lackey.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(&text).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();

    let xz = dir.path().join("golden.lackey.xz");
    let mut enc = liblzma::write::XzEncoder::new(Vec::new(), 6);
    enc.write_all(&text).unwrap();
    std::fs::write(&xz, enc.finish().unwrap()).unwrap();

    // Compression is detected from the content, not the name.
    let hidden = dir.path().join("golden-xz-without-extension");
    std::fs::copy(&xz, &hidden).unwrap();

    let plain = golden_run(&golden_trace());
    for (file, compression) in [(&gz, "gzip"), (&xz, "xz"), (&hidden, "xz")] {
        let run = golden_run(file);
        assert_eq!(run["format"], "lackey", "{}", file.display());
        assert_eq!(run["compression"], compression, "{}", file.display());
        assert_eq!(counters_of(&run), counters_of(&plain), "{}", file.display());
    }

    // A compressed compact trace, converted from the compressed lackey one.
    let compact = dir.path().join("golden.tlbt");
    tlblab().args(["sim", "convert"]).arg(&gz).arg("-o").arg(&compact).assert().success();
    let compact_gz = dir.path().join("golden.tlbt.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&std::fs::read(&compact).unwrap()).unwrap();
    std::fs::write(&compact_gz, enc.finish().unwrap()).unwrap();
    let run = golden_run(&compact_gz);
    assert_eq!(
        (run["format"].as_str(), run["compression"].as_str()),
        (Some("compact"), Some("gzip"))
    );
    assert_eq!(counters_of(&run), counters_of(&plain));
}
