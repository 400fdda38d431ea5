//! The document as plain text for a terminal or a mail, at most `width` columns: headings
//! underlined, paragraphs and lists wrapped, tables aligned when they fit and otherwise one
//! block of `column: value` lines per row, each plot as one line of its numbers.

use crate::doc::{Block, Document, Span, Table};
use crate::wrap::{fill, text_table, width};

fn spans(list: &[Span]) -> String {
    list.iter()
        .map(|s| match s {
            Span::Text(x) | Span::Strong(x) | Span::Code(x) => x.replace(['\n', '\r'], " "),
        })
        .collect()
}

fn para(out: &mut Vec<String>, text: &str, width: usize, first: &str, rest: &str) {
    out.extend(fill(text, width, first, rest));
}

fn table(out: &mut Vec<String>, t: &Table, max: usize) {
    match text_table(t, max) {
        Some(lines) => out.extend(lines),
        None => stacked(out, t, max),
    }
    if let Some(note) = &t.note {
        out.push(String::new());
        para(out, note, max, "", "");
    }
}

/// Each row as its first cell, then `column: value` lines under it.
fn stacked(out: &mut Vec<String>, t: &Table, max: usize) {
    for (r, row) in t.rows.iter().enumerate() {
        if r > 0 {
            out.push(String::new());
        }
        para(out, &row[0].text, max, "* ", "  ");
        for (h, c) in t.head.iter().zip(row).skip(1) {
            if !c.text.is_empty() {
                para(out, &format!("{h}: {}", c.text), max, "    ", "      ");
            }
        }
    }
}

fn block(out: &mut Vec<String>, b: &Block, max: usize) {
    match b {
        Block::Heading { level, text, .. } => {
            let lines = fill(text, max, "", "");
            let long = lines.iter().map(|l| width(l)).max().unwrap_or(0);
            out.extend(lines);
            match level {
                2 => out.push("=".repeat(long)),
                3 => out.push("-".repeat(long)),
                _ => {}
            }
        }
        Block::Para(s) => para(out, &spans(s), max, "", ""),
        Block::Warning(s) => para(out, &format!("Warning: {}", spans(s)), max, "", "  "),
        Block::List(items) => {
            for item in items {
                para(out, &spans(item), max, "- ", "  ");
            }
        }
        Block::KeyValues(pairs) => {
            for (k, v) in pairs {
                para(out, &format!("{k}: {}", spans(v)), max, "", "    ");
            }
        }
        Block::Table(t) => table(out, t, max),
        Block::Figure(f) => para(out, &format!("[plot] {}", f.summary), max, "", "  "),
        Block::Details { summary, blocks } => {
            para(out, &format!("{summary}:"), max, "", "");
            for (i, b) in blocks.iter().enumerate() {
                if i > 0 {
                    out.push(String::new());
                }
                block(out, b, max);
            }
        }
    }
}

/// The whole document, lines at most `width` columns (20 at the least).
pub fn render(doc: &Document, width: usize) -> String {
    let max = width.max(20);
    let mut out: Vec<String> = Vec::new();
    out.extend(fill(&doc.title, max, "", ""));
    out.push("#".repeat(out.iter().map(|l| crate::wrap::width(l)).max().unwrap_or(0)));
    out.push(String::new());
    for (k, v) in &doc.header {
        para(&mut out, &format!("{k}: {v}"), max, "", "    ");
    }
    if !doc.header.is_empty() {
        out.push(String::new());
    }
    for p in &doc.description {
        para(&mut out, p, max, "", "");
        out.push(String::new());
    }
    if !doc.meta.is_empty() {
        para(&mut out, &doc.meta, max, "", "");
        out.push(String::new());
    }
    for b in &doc.blocks {
        if matches!(b, Block::Heading { level: 2, .. }) && out.last().is_some_and(|l| !l.is_empty())
        {
            out.push(String::new());
        }
        block(&mut out, b, max);
        out.push(String::new());
    }
    while out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Table;

    #[test]
    fn tables_are_aligned_or_stacked() {
        let mut t = Table::new(&["name", "value"]).numeric_from(1);
        t.row(vec!["a".into(), "1.5".into()]);
        t.row(vec!["bb".into(), "10".into()]);
        let mut out = Vec::new();
        table(&mut out, &t, 40);
        assert_eq!(out, ["name  value", "----  -----", "a       1.5", "bb       10"]);
        let mut out = Vec::new();
        stacked(&mut out, &t, 10);
        assert_eq!(out, ["* a", "    value: 1.5", "", "* bb", "    value: 10"]);
    }
}
