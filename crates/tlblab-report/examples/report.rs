//! Renders result files into a report until the CLI has `tlblab report`:
//! `cargo run -p tlblab-report --example report -- OUT.html FILE...` (OUT.md for Markdown).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((out, files)) = args.split_first() else {
        eprintln!("usage: report OUT.html|OUT.md FILE...");
        return ExitCode::from(2);
    };
    let mut report = tlblab_report::Report::new("tlblab results");
    for f in files {
        if let Err(e) = report.add_file(f) {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    }
    let start = std::time::Instant::now();
    let text = if out.ends_with(".md") { report.render_markdown() } else { report.render_html() };
    eprintln!("rendered {} bytes in {:.1} ms", text.len(), start.elapsed().as_secs_f64() * 1e3);
    if let Err(e) = std::fs::write(out, text) {
        eprintln!("{out}: {e}");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
