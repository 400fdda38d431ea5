//! Calibrated or predicted: which share of a configuration's simulated value comes from one loop
//! the host preset measured (tlblab_pathcost::MEASURED_LOOPS), found by building the preset
//! again with that one measurement scaled by [`CALIBRATION_STEP`] and simulating again
//! (docs/host-preset.md, "Calibrated and predicted").
//!
//! The share is an elasticity: `ln(scaled / base) / ln(1 + step)`, in absolute value. A loop
//! that the model charges once per operation, and that is the operation's whole time, has
//! share 1 (madvise-busy --busy 0 against `dontneed_1`); a loop the model never uses has 0.
//! A configuration whose largest share exceeds [`CALIBRATED_SHARE`] is *calibrated*: its
//! prediction is mostly a measured loop timed alone, and agreeing with the measurement tests
//! the measurement, not the model.

use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tlblab_host::tlblab_pathcost::loops::{CALIBRATED_SHARE, CALIBRATION_STEP};
use tlblab_host::tlblab_pathcost::MEASURED_LOOPS;
use tlblab_types::atomic::write_file;

/// A host preset with one measured loop scaled: the loop's name and the preset file.
pub(super) struct ScaledPreset {
    pub name: &'static str,
    pub path: PathBuf,
}

/// Writes `DIR/calibration/host-NAME.toml` for every measured loop that `base` (the host
/// preset built from `facts`) uses: a loop that was not measured has nothing to scale, and one
/// whose scaling leaves the preset as it was (recorded, not used: e.g. membarrier once the
/// perf-event IPI was measured) has share 0 by construction. The list, in [`MEASURED_LOOPS`]
/// order.
pub(super) fn scaled_presets(
    facts: &tlblab_host::HostFacts,
    base: &tlblab_host::HostPreset,
    dir: &Path,
) -> Result<Vec<ScaledPreset>> {
    let folder = dir.join("calibration");
    std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    let mut out = Vec::new();
    for l in MEASURED_LOOPS {
        let Some(host) = tlblab_host::build_scaled(facts, l.name, 1.0 + CALIBRATION_STEP) else {
            continue;
        };
        let host = host.with_context(|| format!("the host preset with {} scaled", l.name))?;
        if host.spec.raw() == base.spec.raw() {
            continue;
        }
        let path = folder.join(format!("host-{}.toml", l.name));
        write_file(&path, host.toml.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        out.push(ScaledPreset { name: l.name, path });
    }
    Ok(out)
}

/// Each measured loop's median in `facts`, ns per operation, in [`MEASURED_LOOPS`] order (a loop
/// that failed is left out): what `results.json` keeps of each calibration, so that two
/// calibrations of one run can be set side by side.
pub(super) fn loop_medians(facts: &tlblab_host::HostFacts) -> BTreeMap<String, f64> {
    let Some(cached) = facts.path_costs.available() else { return BTreeMap::new() };
    MEASURED_LOOPS
        .iter()
        .filter_map(|l| Some((l.name.to_string(), cached.costs.get(l.name).ok()?.median_ns)))
        .collect()
}

/// The share of `base`'s value that moves with each scaled loop (`scaled`: the loop and the
/// first seed's value on its preset), the largest, and the class. `None` without a base value.
pub(super) fn classify(base: Option<f64>, scaled: &[(&str, Option<f64>)]) -> Value {
    let Some(base) = base.filter(|b| b.is_finite() && *b > 0.0) else {
        return json!({ "class": "unclassified", "why": "no simulated value to scale" });
    };
    let step = (1.0 + CALIBRATION_STEP).ln();
    let mut shares = serde_json::Map::new();
    let mut largest: Option<(&str, f64)> = None;
    for (name, value) in scaled {
        let Some(v) = value.filter(|v| v.is_finite() && *v > 0.0) else { continue };
        // Rounded so that the file reads well; the class uses the same rounded figure.
        let share = ((v / base).ln().abs() / step * 1000.0).round() / 1000.0;
        shares.insert((*name).to_string(), json!(share));
        if largest.is_none_or(|(_, s)| share > s) {
            largest = Some((name, share));
        }
    }
    let class = match largest {
        Some((_, s)) if s > CALIBRATED_SHARE => "calibrated",
        Some(_) => "predicted",
        None => "unclassified",
    };
    json!({
        "class": class,
        "step": CALIBRATION_STEP,
        "threshold": CALIBRATED_SHARE,
        "largest": largest.map(|(name, share)| json!({ "loop": name, "share": share })),
        "shares": shares,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prediction_that_moves_with_one_loop_is_calibrated() {
        // Everything is dontneed_1: +10% on it is +10% on the prediction.
        let c = classify(Some(2.0), &[("dontneed_1", Some(2.2)), ("null_syscall", Some(2.0))]);
        assert_eq!(c["class"], "calibrated");
        assert_eq!(c["largest"]["loop"], "dontneed_1");
        assert_eq!(c["largest"]["share"], 1.0);
        assert_eq!(c["shares"]["null_syscall"], 0.0);
    }

    #[test]
    fn a_throughput_falls_as_a_cost_rises_and_counts_the_same() {
        // ops/s: a loop that is 30% of the time, scaled by 1.1, divides the rate by 1.03.
        let c = classify(Some(1000.0), &[("thread_switch", Some(1000.0 / 1.03))]);
        assert_eq!(c["class"], "predicted");
        let share = c["largest"]["share"].as_f64().unwrap();
        assert!((share - 0.31).abs() < 0.01, "{share}");
    }

    #[test]
    fn no_base_value_is_unclassified() {
        assert_eq!(classify(None, &[("dontneed_1", Some(1.0))])["class"], "unclassified");
        assert_eq!(classify(Some(1.0), &[("dontneed_1", None)])["class"], "unclassified");
    }
}
