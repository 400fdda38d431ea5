//! One module per kind of input, each adding its section (an `h2` and its parts) to the
//! document.

pub mod bench;
pub mod check;
pub mod compare;
pub mod gaps;
pub mod lab;
pub mod replay;
pub mod study;
pub mod summary;
pub mod sweep_dir;
pub mod trace;

use crate::doc::{Block, Figure};
use crate::plot::PlotError;

/// What every section builder needs to know about the output.
#[derive(Debug, Clone, Copy)]
pub struct Ctx {
    /// Draw the plots (HTML); Markdown keeps only their one-line summaries.
    pub plots: bool,
    /// Bench comparisons: changes within ± this fraction are never significant.
    pub noise_threshold: f64,
}

/// A figure block; the plot is drawn only when the output shows plots.
pub fn figure(
    ctx: &Ctx,
    draw: impl FnOnce() -> Result<String, PlotError>,
    caption: String,
    summary: String,
) -> Block {
    let svg = if ctx.plots { draw().map_err(|e| e.to_string()) } else { Ok(String::new()) };
    Block::Figure(Figure { svg, caption, summary })
}
