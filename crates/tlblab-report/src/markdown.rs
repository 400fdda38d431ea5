//! The document as Markdown (GitHub tables): the same headings, text and tables as the HTML
//! page; each plot becomes one line with its numbers. Plain enough to read as text in a mail.

use crate::doc::{Block, Document, Span, Table};
use crate::wrap::{column_widths, fill, pad, text_table};
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

/// A table: an aligned pipe table when it fits in `max` columns (it reads as plain text too),
/// else one list item per row with a `column: value` line per cell.
fn table(out: &mut String, t: &Table, max: usize) {
    let w = column_widths(t, cell);
    // `| a | b |`: the cells, three columns around each, one more at the end.
    let total = w.iter().map(|n| n.max(&3) + 3).sum::<usize>() + 1;
    if total <= max {
        let w: Vec<usize> = w.iter().map(|n| *n.max(&3)).collect();
        let line = |cells: Vec<String>| format!("| {} |", cells.join(" | "));
        let head = t.head.iter().enumerate().map(|(i, h)| pad(&cell(h), w[i], t.numeric[i]));
        let _ = writeln!(out, "{}", line(head.collect()));
        // As wide as the cells and their spaces; a colon against the pipe right-aligns.
        let rule: Vec<String> = w
            .iter()
            .zip(&t.numeric)
            .map(
                |(n, num)| if *num { format!("{}:", "-".repeat(n + 1)) } else { "-".repeat(n + 2) },
            )
            .collect();
        let _ = writeln!(out, "|{}|", rule.join("|"));
        for row in &t.rows {
            let cells =
                row.iter().enumerate().map(|(i, c)| pad(&cell(&c.text), w[i], t.numeric[i]));
            let _ = writeln!(out, "{}", line(cells.collect()));
        }
    } else if let Some(text) = text_table(t, max.saturating_sub(4)) {
        // Too wide for a pipe table: the aligned text table as a code block, which reads the
        // same in a mail and in any Markdown viewer.
        for l in text {
            let indent = if l.is_empty() { "" } else { "    " };
            let _ = writeln!(out, "{indent}{l}");
        }
    } else {
        for row in &t.rows {
            lines(out, &escape(&row[0].text), max, "- ", "  ");
            for (h, c) in t.head.iter().zip(row).skip(1) {
                if !c.text.is_empty() {
                    let text = format!("{}: {}", escape(h), escape(&c.text));
                    lines(out, &text, max, "  - ", "    ");
                }
            }
        }
    }
    out.push('\n');
    if let Some(note) = &t.note {
        lines(out, &escape(note), max, "", "");
        out.push('\n');
    }
}

/// `text` wrapped to `max` columns after the indents, one line each.
fn lines(out: &mut String, text: &str, max: usize, first: &str, rest: &str) {
    for l in fill(text, max, first, rest) {
        out.push_str(&l);
        out.push('\n');
    }
}

fn block(out: &mut String, b: &Block, max: usize) {
    match b {
        Block::Heading { level, text, .. } => {
            let marks = "#".repeat(*level as usize);
            let text = escape(text);
            if crate::wrap::width(&text) + marks.len() < max {
                let _ = writeln!(out, "{marks} {text}\n");
            } else if *level <= 2 {
                // A setext heading may take several lines.
                lines(out, &text, max, "", "");
                let _ = writeln!(out, "{}\n", if *level == 1 { "=" } else { "-" }.repeat(8));
            } else {
                lines(out, &format!("**{text}**"), max, "", "");
                out.push('\n');
            }
        }
        Block::Para(s) => {
            lines(out, &spans(s), max, "", "");
            out.push('\n');
        }
        Block::Warning(s) => {
            lines(out, &format!("**Warning:** {}", spans(s)), max, "> ", "> ");
            out.push('\n');
        }
        Block::List(items) => {
            for item in items {
                lines(out, &spans(item), max, "- ", "  ");
            }
            out.push('\n');
        }
        Block::KeyValues(pairs) => {
            for (k, v) in pairs {
                lines(out, &format!("**{}:** {}", escape(k), spans(v)), max, "- ", "  ");
            }
            out.push('\n');
        }
        Block::Table(t) => table(out, t, max),
        Block::Figure(f) => {
            lines(out, &format!("_Plot in the HTML report:_ {}", escape(&f.summary)), max, "", "");
            out.push('\n');
        }
        Block::Details { summary, blocks } => {
            lines(out, &format!("**{}**", escape(summary)), max, "", "");
            out.push('\n');
            for b in blocks {
                block(out, b, max);
            }
        }
    }
}

/// The whole document, its lines at most `width` columns where a line can break (a heading is
/// one line, however long; 20 columns at the least).
pub fn render(doc: &Document, width: usize) -> String {
    let max = width.max(20);
    let mut out = String::new();
    block(&mut out, &Block::Heading { level: 1, text: doc.title.clone(), id: String::new() }, max);
    for (k, v) in &doc.header {
        lines(&mut out, &format!("{}: {}", escape(k), escape(v)), max, "- ", "  ");
    }
    if !doc.header.is_empty() {
        out.push('\n');
    }
    for p in &doc.description {
        lines(&mut out, &escape(p), max, "", "");
        out.push('\n');
    }
    if !doc.meta.is_empty() {
        lines(&mut out, &escape(&doc.meta), max, "", "");
        out.push('\n');
    }
    for b in &doc.blocks {
        block(&mut out, b, max);
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
        table(&mut out, &t, 80);
        assert_eq!(out, "| name |  value |\n|------|-------:|\n| a\\|b | 1.0 \\* |\n\n");
        let mut out = String::new();
        table(&mut out, &t, 15);
        assert_eq!(out, "    name  value\n    ----  -----\n    a|b   1.0 *\n\n");
    }
}
