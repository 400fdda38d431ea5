//! The document as one self-contained HTML page: inline CSS, inline SVG, no script, nothing
//! fetched. The markup is also well-formed XML (void elements closed with `/>`, every
//! attribute quoted, only XML's five entities), so that an XML parser can check it.

use crate::doc::{Block, Cell, Document, Figure, Span, Table, Tone};
use std::fmt::Write;

/// The page's style sheet: readable tables, figures that shrink with the window, and a print
/// layout without the table of contents. No fonts or images are fetched.
const CSS: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif;\
max-width:1120px;margin:1.5em auto;padding:0 1em;color:#1b1f23;background:#fff;line-height:1.45}
h1{font-size:1.7em;margin:.2em 0 .4em}
h2{font-size:1.35em;margin:2em 0 .5em;padding-top:.4em;border-top:2px solid #d0d7de}
h3{font-size:1.12em;margin:1.6em 0 .4em}
h4{font-size:1em;margin:1.2em 0 .3em}
p{margin:.45em 0;max-width:78em}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em;\
background:#f3f5f7;padding:0 .2em;border-radius:3px}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.5em 0 .3em;font-size:.9em}
td:first-child{white-space:nowrap}
th,td{border:1px solid #d0d7de;padding:.2em .5em;vertical-align:top}
thead th{background:#f3f5f7;text-align:left}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.sig{font-weight:600}
td.missing{color:#6a737d}
table.kv th{background:#f8f9fa;text-align:left;font-weight:600;white-space:nowrap}
.table-note{font-size:.85em;color:#57606a;margin:.1em 0 1em}
figure{margin:.8em 0 1.4em}
figure svg{display:block;max-width:100%;height:auto;border:1px solid #e1e4e8}
figcaption{font-size:.88em;color:#3d444d;max-width:720px;margin-top:.3em}
.warning{background:#fff8e1;border-left:4px solid #e0a800;padding:.35em .7em}
nav.toc{background:#f8f9fa;border:1px solid #e1e4e8;padding:.5em 1em;margin:1em 0;font-size:.92em}
nav.toc ol{margin:.2em 0;padding-left:1.4em}
.toc-title{font-weight:600;margin:0}
details{margin:.5em 0 1em}
summary{cursor:pointer;color:#0550ae}
.meta{color:#57606a;font-size:.9em}
table.header{font-size:.92em;margin:.3em 0 1em}
section.summary{background:#f6f8fa;border:1px solid #d0d7de;padding:0 1em .6em;margin:1em 0}
section.summary h2{border-top:none;margin-top:.6em}
@media print{@page{margin:12mm}
body{max-width:none;margin:0;padding:0;font-size:9pt;line-height:1.3}
nav.toc{display:none}h2{margin:1.2em 0 .3em}h3{margin:.9em 0 .3em}
.scroll{overflow:visible}table{font-size:7pt;width:100%;break-inside:auto}
th,td{padding:.1em .25em;white-space:normal!important;overflow-wrap:anywhere}
tr{break-inside:avoid}thead{display:table-header-group}
figure{break-inside:avoid;display:inline-block;width:48.5%;vertical-align:top;margin:.3em .5%}
figure svg{width:100%}figcaption{font-size:7pt}p,li{font-size:8.5pt}}
";

/// Escapes text for element content and quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0 (tab, newline and CR are).
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn spans(out: &mut String, list: &[Span]) {
    for s in list {
        match s {
            Span::Text(x) => out.push_str(&escape(x)),
            Span::Strong(x) => {
                let _ = write!(out, "<strong>{}</strong>", escape(x));
            }
            Span::Code(x) => {
                let _ = write!(out, "<code>{}</code>", escape(x));
            }
        }
    }
}

fn cell_class(c: &Cell, numeric: bool) -> String {
    let mut classes = Vec::new();
    if numeric {
        classes.push("num");
    }
    match c.tone {
        Tone::Plain => {}
        Tone::Significant => classes.push("sig"),
        Tone::Missing => classes.push("missing"),
    }
    if classes.is_empty() {
        String::new()
    } else {
        format!(" class=\"{}\"", classes.join(" "))
    }
}

fn table(out: &mut String, t: &Table) {
    out.push_str("<div class=\"scroll\">\n<table>\n<thead><tr>");
    for (h, numeric) in t.head.iter().zip(&t.numeric) {
        let class = if *numeric { " class=\"num\"" } else { "" };
        let _ = write!(out, "<th scope=\"col\"{class}>{}</th>", escape(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for (c, numeric) in row.iter().zip(&t.numeric) {
            let _ = write!(out, "<td{}>{}</td>", cell_class(c, *numeric), escape(&c.text));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</div>\n");
    if let Some(note) = &t.note {
        let _ = writeln!(out, "<p class=\"table-note\">{}</p>", escape(note));
    }
}

fn figure(out: &mut String, f: &Figure) {
    match &f.svg {
        Ok(svg) => {
            out.push_str("<figure>\n");
            out.push_str(svg);
            let _ = writeln!(out, "<figcaption>{}</figcaption>\n</figure>", escape(&f.caption));
        }
        Err(e) => {
            let _ = writeln!(
                out,
                "<p class=\"warning\">Plot not drawn ({}): {}</p>",
                escape(e),
                escape(&f.summary)
            );
        }
    }
}

fn block(out: &mut String, b: &Block) {
    match b {
        Block::Heading { level, text, id } => {
            let _ = writeln!(out, "<h{level} id=\"{}\">{}</h{level}>", escape(id), escape(text));
        }
        Block::Para(s) => {
            out.push_str("<p>");
            spans(out, s);
            out.push_str("</p>\n");
        }
        Block::Warning(s) => {
            out.push_str("<p class=\"warning\">");
            spans(out, s);
            out.push_str("</p>\n");
        }
        Block::List(items) => {
            out.push_str("<ul>\n");
            for item in items {
                out.push_str("<li>");
                spans(out, item);
                out.push_str("</li>\n");
            }
            out.push_str("</ul>\n");
        }
        Block::KeyValues(pairs) => {
            out.push_str("<table class=\"kv\">\n<tbody>\n");
            for (k, v) in pairs {
                let _ = write!(out, "<tr><th scope=\"row\">{}</th><td>", escape(k));
                spans(out, v);
                out.push_str("</td></tr>\n");
            }
            out.push_str("</tbody>\n</table>\n");
        }
        Block::Table(t) => table(out, t),
        Block::Figure(f) => figure(out, f),
        Block::Details { summary, blocks } => {
            let _ = writeln!(out, "<details>\n<summary>{}</summary>", escape(summary));
            for b in blocks {
                block(out, b);
            }
            out.push_str("</details>\n");
        }
    }
}

fn toc(out: &mut String, doc: &Document) {
    let outline = doc.outline();
    if outline.is_empty() {
        return;
    }
    out.push_str(
        "<nav class=\"toc\" aria-label=\"Contents\">\n<p class=\"toc-title\">Contents</p>\n<ol>\n",
    );
    let mut open_sub = false;
    let mut open_item = false;
    for (level, text, id) in outline {
        let link = format!("<a href=\"#{}\">{}</a>", escape(id), escape(text));
        if level <= 2 {
            if open_sub {
                out.push_str("</ol>");
                open_sub = false;
            }
            if open_item {
                out.push_str("</li>\n");
            }
            let _ = write!(out, "<li>{link}");
            open_item = true;
        } else {
            if !open_item {
                // A part before any input's heading: give it an item of its own.
                out.push_str("<li>");
                open_item = true;
            }
            if !open_sub {
                out.push_str("\n<ol>\n");
                open_sub = true;
            }
            let _ = writeln!(out, "<li>{link}</li>");
        }
    }
    if open_sub {
        out.push_str("</ol>");
    }
    if open_item {
        out.push_str("</li>\n");
    }
    out.push_str("</ol>\n</nav>\n");
}

/// The whole page.
pub fn render(doc: &Document) -> String {
    let mut out = String::with_capacity(1 << 16);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n");
    let _ = writeln!(
        out,
        "<meta name=\"generator\" content=\"tlblab-report {}\"/>",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(out, "<title>{}</title>", escape(&doc.title));
    let _ = writeln!(out, "<style>\n{CSS}</style>\n</head>\n<body>\n<header>");
    let _ = writeln!(out, "<h1>{}</h1>", escape(&doc.title));
    for p in &doc.description {
        let _ = writeln!(out, "<p>{}</p>", escape(p));
    }
    if !doc.meta.is_empty() {
        let _ = writeln!(out, "<p class=\"meta\">{}</p>", escape(&doc.meta));
    }
    if !doc.header.is_empty() {
        out.push_str("<table class=\"kv header\">\n<tbody>\n");
        for (k, v) in &doc.header {
            let _ = writeln!(
                out,
                "<tr><th scope=\"row\">{}</th><td>{}</td></tr>",
                escape(k),
                escape(v)
            );
        }
        out.push_str("</tbody>\n</table>\n");
    }
    out.push_str("</header>\n");
    // The summary, when there is one, comes before the table of contents: conclusions first.
    let summary_end = match doc.blocks.first() {
        Some(Block::Heading { level: 2, text, .. }) if text == "Summary" => doc.blocks[1..]
            .iter()
            .position(|b| matches!(b, Block::Heading { level: 2, .. }))
            .map_or(doc.blocks.len(), |i| i + 1),
        _ => 0,
    };
    out.push_str("<main>\n");
    let mut in_section = false;
    for (i, b) in doc.blocks.iter().enumerate() {
        if i == summary_end {
            if in_section {
                out.push_str("</section>\n");
                in_section = false;
            }
            toc(&mut out, doc);
        }
        if let Block::Heading { level: 2, text, .. } = b {
            if in_section {
                out.push_str("</section>\n");
            }
            // The summary stands out; appendices are left out of print.
            out.push_str(match text.as_str() {
                "Summary" => "<section class=\"summary\">\n",
                t if t.starts_with("Appendix") => "<section class=\"appendix\">\n",
                _ => "<section>\n",
            });
            in_section = true;
        }
        block(&mut out, b);
    }
    if in_section {
        out.push_str("</section>\n");
    }
    if summary_end == doc.blocks.len() {
        toc(&mut out, doc);
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(escape("<script>&\"'"), "&lt;script&gt;&amp;&quot;&#39;");
        assert_eq!(escape("a\u{1}b"), "a b");
    }

    #[test]
    fn print_keeps_every_column_and_no_page_per_section() {
        let print = &CSS[CSS.find("@media print").unwrap()..];
        // Wide tables scroll on screen, and in print the wrapper lets every column show.
        assert!(CSS.contains(".scroll{overflow-x:auto"));
        assert!(print.contains(".scroll{overflow:visible}"));
        assert!(!print.contains("break-before:page"));
        let mut d = Document::new("T", &[]);
        d.table(Table::new(&["a", "b"]));
        assert!(render(&d).contains("<div class=\"scroll\">\n<table>"));
    }

    #[test]
    fn the_summary_comes_before_the_contents() {
        let mut d = Document::new("T", &[]);
        d.heading(2, "Summary");
        d.heading(2, "A");
        let html = render(&d);
        let (summary, nav, a) =
            (html.find("id=\"summary\""), html.find("<nav"), html.find("id=\"a\""));
        assert!(summary < nav && nav < a, "{html}");
    }

    #[test]
    fn toc_nests_parts_under_their_input() {
        let mut d = Document::new("T", &[]);
        d.heading(2, "A");
        d.heading(3, "a1");
        d.heading(3, "a2");
        d.heading(2, "B");
        let html = render(&d);
        let nav = &html[html.find("<nav").unwrap()..html.find("</nav>").unwrap()];
        assert_eq!(
            nav.replace('\n', ""),
            "<nav class=\"toc\" aria-label=\"Contents\"><p class=\"toc-title\">Contents</p><ol>\
             <li><a href=\"#a\">A</a><ol><li><a href=\"#a1\">a1</a></li><li><a href=\"#a2\">a2</a></li></ol></li>\
             <li><a href=\"#b\">B</a></li></ol>"
        );
    }
}
