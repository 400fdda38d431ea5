//! Text from inputs made safe for a terminal: every control character, and every character that
//! reorders or hides text, is shown as an escape instead of acting on the terminal.
//!
//! A task name, an event name or a line quoted from a trace can hold any bytes: `ESC ] 0 ;`
//! retitles a terminal window, `ESC [ 2 J` clears it, U+202E reverses the text after it.
//! [`escape`] renders them as `\x1b`, `\u{202e}`, `\n`, …; other text, non-ASCII letters and
//! symbols included, is kept as it is. Backslashes are kept too, so escaping twice changes
//! nothing.
//!
//! ```
//! use tlblab_types::escape::escape;
//!
//! assert_eq!(escape("madv\x1b[2J"), "madv\\x1b[2J");
//! assert_eq!(escape("a\tb\nc\u{202e}d"), "a\\tb\\nc\\u{202e}d");
//! assert_eq!(escape("kworker/0:1 µs"), "kworker/0:1 µs");
//! assert_eq!(escape(&escape("\x07")), "\\x07");
//! ```

use std::borrow::Cow;
use std::fmt::{self, Write};

/// Whether `c` must not reach a terminal as it is: a control character (C0, DEL, C1), or a
/// Unicode format character that changes the direction or visibility of text around it
/// (bidirectional marks, embeddings, overrides and isolates; zero-width characters; the byte
/// order mark).
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// `s` with every character [`needs_escape`] names written as an escape: `\t`, `\n`, `\r`,
/// `\xHH` for the other ASCII and C1 controls below U+0100, `\u{HHHH}` above. Borrowed when
/// nothing needed escaping.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(Escaped(s).to_string())
}

/// Shows its text as [`escape`] does, without building a string first (width and alignment
/// are not applied: pad [`escape`]'s string instead).
#[derive(Clone, Copy, Debug)]
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(needs_escape) {
            f.write_str(&rest[..at])?;
            let c = rest[at..].chars().next().expect("find returned a character's start");
            match c {
                '\t' => f.write_str("\\t")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                c if u32::from(c) < 0x100 => write!(f, "\\x{:02x}", u32::from(c))?,
                c => write!(f, "\\u{{{:x}}}", u32::from(c))?,
            }
            rest = &rest[at + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

/// Each line of `s` escaped, the line breaks kept: for a message that has several lines of its
/// own (a parser's error with a caret under the column) and may quote input.
pub fn escape_lines(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && needs_escape(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.write_fmt(format_args!("{}", Escaped(line))).expect("writing to a String");
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_sequences_from_the_reproductions_are_shown_not_sent() {
        let title = "ipi:ipi_\x1b]0;pwned\x07\x1b[2Jsend_cpu";
        assert_eq!(escape(title), "ipi:ipi_\\x1b]0;pwned\\x07\\x1b[2Jsend_cpu");
        assert_eq!(escape("\u{9b}31m\u{7f}"), "\\x9b31m\\x7f");
        assert!(escape(title).chars().all(|c| !needs_escape(c)));
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        for s in ["", "opt cgu.0", "<...>", "kworker/u8:2", "durée ≈ 3 µs", "C:\\path"] {
            assert!(matches!(escape(s), Cow::Borrowed(t) if t == s), "{s}");
        }
    }

    #[test]
    fn lines_keep_their_breaks_and_lose_their_controls() {
        let msg = "TOML parse error at line 4\n  |\n4 | name = \"\x1b[2J\"\r";
        assert_eq!(
            escape_lines(msg),
            "TOML parse error at line 4\n  |\n4 | name = \"\\x1b[2J\"\\r"
        );
        assert!(matches!(escape_lines("a\nb"), Cow::Borrowed(_)));
    }

    #[test]
    fn escaped_shows_what_escape_returns() {
        assert_eq!(format!("[{}]", Escaped("a\x1b\u{202e}")), "[a\\x1b\\u{202e}]");
        assert_eq!(format!("{:<7}|", escape("a\x07")), "a\\x07  |");
    }
}
