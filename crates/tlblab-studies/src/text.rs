//! Plain-text building blocks: grouped numbers, wrapped prose, aligned tables. Output never
//! depends on the terminal, so it is the same byte for byte on every run.

/// A measure's label as the first row of its block shows it: `CPU-s/s (higher is better)`;
/// lower-is-better measures need no remark.
pub fn measure_label(label: &str, lower_is_better: bool) -> String {
    let better = if lower_is_better { "" } else { " (higher is better)" };
    format!("{label}{better}")
}

/// `1234567` → `1,234,567`.
pub fn group(n: u64) -> String {
    group_digits(&n.to_string())
}

fn group_digits(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `x` with `decimals` decimals and its integer part grouped by thousands.
pub(crate) fn num(x: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, x.abs());
    let (int, frac) = s.split_once('.').map_or((s.as_str(), None), |(i, f)| (i, Some(f)));
    let sign = if x < 0.0 && s.chars().any(|c| c.is_ascii_digit() && c != '0') { "-" } else { "" };
    match frac {
        Some(f) => format!("{sign}{}.{f}", group_digits(int)),
        None => format!("{sign}{}", group_digits(int)),
    }
}

/// A count's mean or stddev: no decimals when it is whole, one otherwise.
pub(crate) fn count(x: f64) -> String {
    if x.fract() == 0.0 {
        num(x, 0)
    } else {
        num(x, 1)
    }
}

/// `text` wrapped at `width` columns, every line indented by `indent` spaces; the first line
/// starts with `first` (a label) and the others are aligned after it.
pub(crate) fn wrap(first: &str, text: &str, indent: usize, width: usize) -> String {
    let lead = " ".repeat(indent);
    let hang = " ".repeat(indent + first.chars().count());
    let mut out = String::new();
    let mut line = format!("{lead}{first}");
    let mut empty = true;
    for word in text.split_whitespace() {
        let extra = if empty { 0 } else { 1 };
        if !empty && line.chars().count() + extra + word.chars().count() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = hang.clone();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// A table: columns whose cells are all numbers are right-aligned (or those asked for), the
/// others left-aligned.
pub struct Table {
    rows: Vec<Vec<String>>,
    right: Vec<usize>,
}

impl Table {
    /// A table with this header row.
    pub fn new(header: &[&str]) -> Table {
        Table { rows: vec![header.iter().map(|s| s.to_string()).collect()], right: Vec::new() }
    }

    /// Right-aligns these columns whatever they hold.
    pub fn right(mut self, columns: &[usize]) -> Table {
        self.right.extend_from_slice(columns);
        self
    }

    /// Appends a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table, each line indented by `indent` spaces.
    pub fn render(&self, indent: usize) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let width = |c: usize| {
            self.rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)
        };
        let widths: Vec<usize> = (0..columns).map(width).collect();
        let numeric = |c: usize| {
            self.rows[1..]
                .iter()
                .filter_map(|r| r.get(c))
                .filter(|cell| !cell.is_empty())
                .all(|cell| cell.chars().all(|ch| ch.is_ascii_digit() || ",.%-×".contains(ch)))
        };
        let right: Vec<bool> =
            (0..columns).map(|c| self.right.contains(&c) || (c > 0 && numeric(c))).collect();
        let mut out = String::new();
        for row in &self.rows {
            let mut line = " ".repeat(indent);
            for (c, cell) in row.iter().enumerate() {
                let pad = widths[c] - cell.chars().count();
                if c > 0 {
                    line.push_str("  ");
                }
                if right[c] {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_with_their_decimals() {
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(num(1234.5678, 2), "1,234.57");
        assert_eq!(num(-1234.0, 0), "-1,234");
        assert_eq!(num(-0.0001, 2), "0.00");
        assert_eq!(count(3.0), "3");
        assert_eq!(count(2.5), "2.5");
    }

    #[test]
    fn wrap_hangs_continuation_lines_after_the_label() {
        let w = wrap("why: ", "one two three four", 2, 16);
        assert_eq!(w, "  why: one two\n       three\n       four\n");
    }

    #[test]
    fn table_aligns_numbers_right() {
        let mut t = Table::new(&["name", "n", "note"]);
        t.row(vec!["a".into(), "1,000".into(), "x".into()]);
        t.row(vec!["bb".into(), "5".into(), "yz".into()]);
        assert_eq!(t.render(1), " name      n  note\n a     1,000  x\n bb        5  yz\n");
    }
}
