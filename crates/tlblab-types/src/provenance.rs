//! Where a model input comes from: what a study's statement of its inputs says of each
//! (docs/studies.md, "Inputs: measured, copied, assumed").

use serde::{Deserialize, Serialize};

/// How a model input was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputOrigin {
    /// Measured on the project's own machine (a 2-vCPU KVM guest): path costs recorded in
    /// docs/calibration.md, the live loops' working sets, the build's process mix, the traces.
    MeasuredHere,
    /// Copied from a cited document: a vendor manual, a paper, a mailing-list measurement, a
    /// peer benchmark's source, studies.md's description of the study.
    Copied,
    /// An assumption: no source gives the figure (the presets mark these `unverified` and say
    /// "assumed" or "assumption").
    Assumed,
    /// The study's own choice, not a figure about the world: a scenario written for the model
    /// (the safety checker's readers), a parameter setting.
    Defined,
}

impl InputOrigin {
    /// Every origin, in the order a statement lists them.
    pub const ALL: [InputOrigin; 4] = [
        InputOrigin::MeasuredHere,
        InputOrigin::Copied,
        InputOrigin::Assumed,
        InputOrigin::Defined,
    ];

    /// `measured here`, `copied`, `assumed`, `defined`.
    pub fn label(self) -> &'static str {
        match self {
            InputOrigin::MeasuredHere => "measured here",
            InputOrigin::Copied => "copied",
            InputOrigin::Assumed => "assumed",
            InputOrigin::Defined => "defined",
        }
    }
}
