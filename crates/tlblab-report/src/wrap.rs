//! Fitting text to a width, for the Markdown and plain-text reports: paragraphs wrapped with a
//! hanging indent, and tables laid out aligned when every column fits, else as one block of
//! `column: value` lines per row (a mail client shows no horizontal scroll bar).

use crate::doc::Table;

/// Columns `s` takes on a terminal (wide characters count two).
pub fn width(s: &str) -> usize {
    textwrap::core::display_width(s)
}

/// `text` wrapped to `width` columns, the first line after `first`, the others after `rest`;
/// a word longer than a line is broken.
pub fn fill(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    let options = textwrap::Options::new(width.max(first.len() + 8).max(rest.len() + 8))
        .initial_indent(first)
        .subsequent_indent(rest)
        .break_words(true)
        // Names such as linux-4.14 stay whole.
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    let lines = textwrap::wrap(text, options);
    if lines.is_empty() {
        return vec![first.trim_end().to_string()];
    }
    lines.into_iter().map(|l| l.trim_end().to_string()).collect()
}

/// `s` padded with spaces to `w` columns, on the right or (numbers) on the left.
pub fn pad(s: &str, w: usize, right_align: bool) -> String {
    let fill = " ".repeat(w.saturating_sub(width(s)));
    if right_align {
        format!("{fill}{s}")
    } else {
        format!("{s}{fill}")
    }
}

/// The widest cell of each column, header included, after `cell` has escaped it.
pub fn column_widths(t: &Table, cell: impl Fn(&str) -> String) -> Vec<usize> {
    let mut w: Vec<usize> = t.head.iter().map(|h| width(&cell(h))).collect();
    for row in &t.rows {
        for (i, c) in row.iter().enumerate() {
            w[i] = w[i].max(width(&cell(&c.text)));
        }
    }
    w
}

/// A text column is not narrowed below this many columns to make a table fit.
const MIN_COLUMN: usize = 12;

/// `t` as an aligned plain-text table at most `max` columns wide: two spaces between columns,
/// a rule under the header, the widest text columns narrowed (their cells wrapped) as far as
/// needed; `None` when it cannot fit even so. Rows that take several lines are set apart by
/// an empty line.
pub fn text_table(t: &Table, max: usize) -> Option<Vec<String>> {
    let mut w = column_widths(t, str::to_string);
    let mut total = w.iter().sum::<usize>() + 2 * w.len().saturating_sub(1);
    while total > max {
        let widest = (0..w.len())
            .filter(|&i| !t.numeric[i] && w[i] > MIN_COLUMN)
            .max_by_key(|&i| (w[i], usize::MAX - i))?;
        let narrower = w[widest].saturating_sub(total - max).max(MIN_COLUMN);
        total -= w[widest] - narrower;
        w[widest] = narrower;
    }
    let layout = |cells: Vec<&str>| -> Vec<String> {
        let wrapped: Vec<Vec<String>> = cells
            .iter()
            .enumerate()
            .map(
                |(i, c)| if width(c) <= w[i] { vec![c.to_string()] } else { fill(c, w[i], "", "") },
            )
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        (0..height)
            .map(|k| {
                let line: Vec<String> = wrapped
                    .iter()
                    .enumerate()
                    .map(|(i, lines)| {
                        pad(lines.get(k).map_or("", String::as_str), w[i], t.numeric[i])
                    })
                    .collect();
                line.join("  ").trim_end().to_string()
            })
            .collect()
    };
    let mut out = layout(t.head.iter().map(String::as_str).collect());
    out.push(w.iter().map(|&n| "-".repeat(n)).collect::<Vec<_>>().join("  "));
    let rows: Vec<Vec<String>> =
        t.rows.iter().map(|r| layout(r.iter().map(|c| c.text.as_str()).collect())).collect();
    let spaced = rows.iter().any(|r| r.len() > 1);
    for (i, r) in rows.into_iter().enumerate() {
        if spaced && i > 0 {
            out.push(String::new());
        }
        out.extend(r);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_fit_and_long_words_break() {
        let text = "a tlblab sim check --json --policy linux-6.18 --scenario lazy-readers \
                    /a/very/long/path/that/does/not/fit/on/one/line/at/all/in/twenty/columns";
        for line in fill(text, 20, "- ", "  ") {
            assert!(width(&line) <= 20, "{line:?}");
        }
        assert_eq!(fill("x y", 20, "- ", "  "), ["- x y"]);
    }

    #[test]
    fn a_wide_text_column_wraps_inside_the_table() {
        let mut t = Table::new(&["step", "s"]).numeric_from(1);
        t.row(vec!["safety check: linux-6.18 on lazy-readers --cpus 3".into(), "0.1".into()]);
        t.row(vec!["short".into(), "12.5".into()]);
        let lines = text_table(&t, 30).unwrap();
        assert!(lines.iter().all(|l| width(l) <= 30), "{lines:#?}");
        assert_eq!(lines[0], format!("step{}s", " ".repeat(25)));
        assert_eq!(lines[2], "safety check: linux-6.18   0.1");
        assert_eq!(lines[3], "on lazy-readers --cpus 3");
        // Numbers are never narrowed: a table of them that does not fit is refused.
        let mut n = Table::new(&["a", "b"]).numeric_from(0);
        n.row(vec!["123456789".into(), "123456789".into()]);
        assert!(text_table(&n, 15).is_none());
    }

    #[test]
    fn padding_counts_display_columns() {
        assert_eq!(pad("µs", 4, false), "µs  ");
        assert_eq!(pad("12", 4, true), "  12");
    }
}
