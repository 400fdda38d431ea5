//! The document as Markdown (GitHub tables): the same headings, text and tables as the HTML
//! page; each plot becomes one line with its numbers. Plain enough to read as text in a mail.

use crate::doc::{Block, Document, Span, Table};
use std::fmt::Write;

/// Escapes the characters that would start emphasis, code or HTML in running text.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '*' | '`' | '<' | '\\' => {
                out.push('\\');
                out.push(ch);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A table cell: as running text, and `|` escaped.
fn cell(s: &str) -> String {
    escape(s).replace('|', "\\|")
}

fn spans(list: &[Span]) -> String {
    let mut out = String::new();
    for s in list {
        match s {
            Span::Text(x) => out.push_str(&escape(x)),
            Span::Strong(x) => {
                // `**` must touch the text it closes: move surrounding spaces outside.
                let inner = x.trim();
                let (lead, trail) =
                    (&x[..x.len() - x.trim_start().len()], &x[x.trim_end().len()..]);
                if inner.is_empty() {
                    out.push_str(x);
                } else {
                    let _ = write!(out, "{lead}**{}**{trail}", escape(inner));
                }
            }
            Span::Code(x) => {
                let ticks = if x.contains('`') { "``" } else { "`" };
                let _ = write!(out, "{ticks}{}{ticks}", x.replace(['\n', '\r'], " "));
            }
        }
    }
    out
}

fn table(out: &mut String, t: &Table) {
    let head: Vec<String> = t.head.iter().map(|h| cell(h)).collect();
    let _ = writeln!(out, "| {} |", head.join(" | "));
    let align: Vec<&str> = t.numeric.iter().map(|n| if *n { "---:" } else { "---" }).collect();
    let _ = writeln!(out, "|{}|", align.join("|"));
    for row in &t.rows {
        let cells: Vec<String> = row.iter().map(|c| cell(&c.text)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
    if let Some(note) = &t.note {
        let _ = writeln!(out, "{}\n", escape(note));
    }
}

fn block(out: &mut String, b: &Block) {
    match b {
        Block::Heading { level, text, .. } => {
            let _ = writeln!(out, "{} {}\n", "#".repeat(*level as usize), escape(text));
        }
        Block::Para(s) => {
            let _ = writeln!(out, "{}\n", spans(s));
        }
        Block::Warning(s) => {
            let _ = writeln!(out, "> **Warning:** {}\n", spans(s));
        }
        Block::List(items) => {
            for item in items {
                let _ = writeln!(out, "- {}", spans(item));
            }
            out.push('\n');
        }
        Block::KeyValues(pairs) => {
            for (k, v) in pairs {
                let _ = writeln!(out, "- **{}:** {}", escape(k), spans(v));
            }
            out.push('\n');
        }
        Block::Table(t) => table(out, t),
        Block::Figure(f) => {
            let _ = writeln!(out, "_Plot in the HTML report:_ {}\n", escape(&f.summary));
        }
        Block::Details { summary, blocks } => {
            let _ = writeln!(out, "**{}**\n", escape(summary));
            for b in blocks {
                block(out, b);
            }
        }
    }
}

/// The whole document.
pub fn render(doc: &Document) -> String {
    let mut out = format!("# {}\n\n", escape(&doc.title));
    for p in &doc.description {
        let _ = writeln!(out, "{}\n", escape(p));
    }
    if !doc.meta.is_empty() {
        let _ = writeln!(out, "_{}_\n", escape(&doc.meta).replace('_', "\\_"));
    }
    for b in &doc.blocks {
        block(&mut out, b);
    }
    // One newline at the end, whatever the last block left.
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::cell as tcell;
    use crate::doc::Tone;

    #[test]
    fn bold_text_closes_before_its_trailing_space() {
        let s = spans(&[Span::Strong("How to read: ".into()), Span::Text("x".into())]);
        assert_eq!(s, "**How to read:** x");
    }

    #[test]
    fn tables_are_github_tables_with_escaped_pipes() {
        let mut t = Table::new(&["name", "value"]).numeric_from(1);
        t.row(vec!["a|b".into(), tcell("1.0 *", Tone::Significant)]);
        let mut out = String::new();
        table(&mut out, &t);
        assert_eq!(out, "| name | value |\n|---|---:|\n| a\\|b | 1.0 \\* |\n\n");
    }
}
