//! The report as a list of blocks (headings, paragraphs, tables, figures), built once from the
//! inputs and written out as HTML ([`crate::html`]) or Markdown ([`crate::markdown`]), so that
//! both carry the same tables and text.

use std::collections::BTreeSet;

/// A piece of running text.
#[derive(Debug, Clone, PartialEq)]
pub enum Span {
    /// Plain text.
    Text(String),
    /// Emphasised (bold) text.
    Strong(String),
    /// A name from the kernel or the tool (`flush_tlb_func()`), set in monospace.
    Code(String),
}

/// Shorthand for a plain-text span.
pub fn t(s: impl Into<String>) -> Span {
    Span::Text(s.into())
}

/// Shorthand for a bold span.
pub fn b(s: impl Into<String>) -> Span {
    Span::Strong(s.into())
}

/// Shorthand for a code span.
pub fn c(s: impl Into<String>) -> Span {
    Span::Code(s.into())
}

/// How a table cell is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tone {
    /// Nothing special.
    #[default]
    Plain,
    /// A significant difference (HTML: bold).
    Significant,
    /// A value that is missing, with the reason in the cell (HTML: grey).
    Missing,
}

/// One table cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// The text.
    pub text: String,
    /// How to show it.
    pub tone: Tone,
}

impl<S: Into<String>> From<S> for Cell {
    fn from(s: S) -> Cell {
        Cell { text: s.into(), tone: Tone::Plain }
    }
}

/// A cell with a tone.
pub fn cell(text: impl Into<String>, tone: Tone) -> Cell {
    Cell { text: text.into(), tone }
}

/// A table: a header row, rows of cells, and which columns hold numbers (right-aligned).
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Column titles.
    pub head: Vec<String>,
    /// Right-aligned columns.
    pub numeric: Vec<bool>,
    /// The rows, each as long as `head`.
    pub rows: Vec<Vec<Cell>>,
    /// A line under the table saying what the cells are.
    pub note: Option<String>,
}

impl Table {
    /// A table with these column titles; columns whose title is in `numeric` are right-aligned.
    pub fn new<S: AsRef<str>>(head: &[S]) -> Table {
        Table {
            head: head.iter().map(|h| h.as_ref().to_string()).collect(),
            numeric: vec![false; head.len()],
            rows: Vec::new(),
            note: None,
        }
    }

    /// Right-aligns every column from `from` on.
    pub fn numeric_from(mut self, from: usize) -> Table {
        for (i, n) in self.numeric.iter_mut().enumerate() {
            *n = i >= from;
        }
        self
    }

    /// Adds a row, padded or cut to the header's width.
    pub fn row(&mut self, cells: Vec<Cell>) {
        let mut cells = cells;
        cells.resize(self.head.len(), Cell::from(""));
        self.rows.push(cells);
    }

    /// Sets the note under the table.
    pub fn note(mut self, note: impl Into<String>) -> Table {
        self.note = Some(note.into());
        self
    }
}

/// A plot: the SVG (already rendered, or the reason it could not be), its caption, and a
/// one-line summary that stands for it in Markdown.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// The inline `<svg>` element, or the error that stopped the plot.
    pub svg: Result<String, String>,
    /// What the plot shows, what the bars and whiskers are.
    pub caption: String,
    /// The numbers in one line, for Markdown.
    pub summary: String,
}

/// A block of the document.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A heading; level 2 for each input's section, 3 for its parts, 4 below.
    Heading {
        /// 2, 3 or 4.
        level: u8,
        /// The text.
        text: String,
        /// The anchor (unique in the document).
        id: String,
    },
    /// A paragraph.
    Para(Vec<Span>),
    /// A paragraph that warns (quick runs, lost events, interrupted sessions).
    Warning(Vec<Span>),
    /// A bulleted list.
    List(Vec<Vec<Span>>),
    /// Name/value pairs (setup, environment).
    KeyValues(Vec<(String, Vec<Span>)>),
    /// A table.
    Table(Table),
    /// A plot.
    Figure(Figure),
    /// Long detail, folded in HTML (`<details>`), shown in full in Markdown.
    Details {
        /// The line that stays visible.
        summary: String,
        /// The folded blocks.
        blocks: Vec<Block>,
    },
}

/// The whole report: a title, an optional description given by the user, and blocks.
#[derive(Debug, Clone, Default)]
pub struct Document {
    /// The `<h1>` and `<title>`.
    pub title: String,
    /// Paragraphs under the title, as given by the user.
    pub description: Vec<String>,
    /// What the report was made from, under the description.
    pub meta: String,
    /// The machine and moment the results come from (kernel, CPU, hypervisor, date, load), as
    /// name/value pairs under the title.
    pub header: Vec<(String, String)>,
    /// The content.
    pub blocks: Vec<Block>,
    ids: BTreeSet<String>,
}

impl Document {
    /// An empty document.
    pub fn new(title: &str, description: &[String]) -> Document {
        Document {
            title: title.to_string(),
            description: description.to_vec(),
            meta: String::new(),
            header: Vec::new(),
            blocks: Vec::new(),
            ids: BTreeSet::new(),
        }
    }

    /// Adds a heading with an anchor derived from its text, made unique with `-2`, `-3`, ….
    pub fn heading(&mut self, level: u8, text: impl Into<String>) {
        let text = text.into();
        let base = slug(&text);
        let mut id = base.clone();
        let mut n = 2;
        while self.ids.contains(&id) {
            id = format!("{base}-{n}");
            n += 1;
        }
        self.ids.insert(id.clone());
        self.blocks.push(Block::Heading { level, text, id });
    }

    /// Adds a block.
    pub fn push(&mut self, block: Block) {
        self.blocks.push(block);
    }

    /// Adds a paragraph.
    pub fn para(&mut self, spans: Vec<Span>) {
        self.blocks.push(Block::Para(spans));
    }

    /// Adds a table.
    pub fn table(&mut self, table: Table) {
        self.blocks.push(Block::Table(table));
    }

    /// The level-2 and level-3 headings, in order: the table of contents.
    pub fn outline(&self) -> Vec<(u8, &str, &str)> {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Heading { level, text, id } if *level <= 3 => {
                    Some((*level, text.as_str(), id.as_str()))
                }
                _ => None,
            })
            .collect()
    }
}

/// An anchor from a heading: lower-case ASCII letters and digits, other runs as one `-`.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for ch in text.chars() {
        if ch.is_ascii_alphanumeric() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(ch.to_ascii_lowercase());
        } else {
            dash = true;
        }
        if out.len() >= 60 {
            break;
        }
    }
    if out.is_empty() {
        "section".into()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_are_unique_and_plain() {
        let mut d = Document::new("t", &[]);
        d.heading(2, "S1 (s1-pti): PTI user flushes");
        d.heading(3, "Policies");
        d.heading(3, "Policies");
        d.heading(3, "µs/op");
        let ids: Vec<&str> = d.outline().iter().map(|o| o.2).collect();
        assert_eq!(ids, ["s1-s1-pti-pti-user-flushes", "policies", "policies-2", "s-op"]);
    }

    #[test]
    fn rows_are_padded_to_the_header() {
        let mut t = Table::new(&["a", "b", "c"]).numeric_from(1);
        t.row(vec!["x".into()]);
        assert_eq!(t.rows[0].len(), 3);
        assert_eq!(t.numeric, [false, true, true]);
    }
}
