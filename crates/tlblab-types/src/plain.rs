//! Parser messages in plain words. serde's messages name Rust types (`invalid type: string
//! "x", expected usize`); a user editing a preset, a policy or a result file needs the key, the
//! line and what was expected in their own terms: "line 3, `[kernel] hz`: expected a whole
//! number, found the text "x"".

/// serde's standard messages (as toml and serde_json print them) in plain words; any other
/// message is returned unchanged. A trailing ` at line N column M` (serde_json) is kept.
///
/// ```
/// use tlblab_types::plain::serde_message;
/// assert_eq!(
///     serde_message("invalid type: string \"x\", expected usize"),
///     "expected a whole number (0 or more), found the text \"x\""
/// );
/// assert_eq!(
///     serde_message("unknown field `bogus`, expected one of `name`, `level`"),
///     "unknown key \"bogus\" (valid keys: name, level)"
/// );
/// ```
pub fn serde_message(message: &str) -> String {
    let message = message.trim();
    let (body, position) = split_position(message);
    let plain = plain_body(body).unwrap_or_else(|| body.to_string());
    format!("{plain}{position}")
}

/// `(message, " at line N column M")`, the second empty when there is none.
fn split_position(message: &str) -> (&str, &str) {
    if let Some(at) = message.rfind(" at line ") {
        let tail = &message[at + " at line ".len()..];
        let mut words = tail.split(' ');
        let ok = matches!(
            (words.next(), words.next(), words.next(), words.next()),
            (Some(l), Some("column"), Some(c), None)
                if l.parse::<u64>().is_ok() && c.parse::<u64>().is_ok()
        );
        if ok {
            return (&message[..at], &message[at..]);
        }
    }
    (message, "")
}

fn plain_body(body: &str) -> Option<String> {
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = body.strip_prefix(prefix) {
            let (found, expected) = rest.rsplit_once(", expected ")?;
            return Some(format!(
                "expected {}, found {}",
                expected_words(expected),
                found_words(found)
            ));
        }
    }
    if let Some(rest) = body.strip_prefix("invalid length ") {
        let (len, expected) = rest.split_once(", expected ")?;
        return Some(format!("expected {}, found {len} items", expected_words(expected)));
    }
    if let Some(rest) = body.strip_prefix("unknown field ") {
        let (name, valid) = name_and_list(rest)?;
        return Some(match valid {
            Some(valid) => format!("unknown key \"{name}\" (valid keys: {valid})"),
            None => format!("unknown key \"{name}\" (no keys are allowed here)"),
        });
    }
    if let Some(rest) = body.strip_prefix("unknown variant ") {
        let (name, valid) = name_and_list(rest)?;
        return Some(match valid {
            Some(valid) => format!("\"{name}\" is not one of: {valid}"),
            None => format!("\"{name}\" is not allowed here"),
        });
    }
    if let Some(rest) = body.strip_prefix("missing field ") {
        return Some(format!("the key \"{}\" is missing", unquote(rest)));
    }
    if let Some(rest) = body.strip_prefix("duplicate field ") {
        return Some(format!("the key \"{}\" is given twice", unquote(rest)));
    }
    None
}

/// "`x`, expected one of `a`, `b`" → ("x", Some("a, b")); "`x`, there are no fields" →
/// ("x", None).
fn name_and_list(rest: &str) -> Option<(&str, Option<String>)> {
    let (name, tail) = rest.strip_prefix('`')?.split_once('`')?;
    let tail = tail.strip_prefix(", ")?;
    let list = tail
        .strip_prefix("expected one of ")
        .or_else(|| tail.strip_prefix("expected "))
        .map(|l| l.replace(" or ", ", ").split(", ").map(unquote).collect::<Vec<_>>().join(", "));
    Some((name, list))
}

fn unquote(text: &str) -> &str {
    text.trim().trim_matches('`')
}

/// What serde expected, in a user's words.
fn expected_words(expected: &str) -> String {
    let words = match expected {
        "u8" => "a whole number from 0 to 255",
        "u16" => "a whole number from 0 to 65535",
        "u32" => "a whole number from 0 to 4294967295",
        "u64" | "usize" | "u128" => "a whole number (0 or more)",
        "i8" | "i16" | "i32" | "i64" | "isize" | "i128" => "a whole number",
        "f32" | "f64" => "a number",
        "a string" | "a borrowed string" | "string" => "text (in quotes)",
        "a boolean" | "bool" => "true or false",
        "a character" | "char" => "one character",
        "a sequence" | "sequence" => "a list",
        "a map" | "map" => "a table",
        other if other.starts_with("struct ") => "a table",
        other if other.starts_with("enum ") => "one of the names allowed here",
        other => other,
    };
    words.to_string()
}

/// What serde found, in a user's words.
fn found_words(found: &str) -> String {
    let quoted = |prefix: &str| found.strip_prefix(prefix).map(|v| v.trim_matches('`').to_string());
    if let Some(text) = found.strip_prefix("string ") {
        return format!("the text {text}");
    }
    if let Some(v) = quoted("integer ").or_else(|| quoted("floating point ")) {
        return format!("the number {v}");
    }
    if let Some(v) = quoted("boolean ") {
        return v;
    }
    if let Some(v) = quoted("character ") {
        return format!("the character '{v}'");
    }
    match found {
        "sequence" => "a list".into(),
        "map" => "a table".into(),
        "unit value" | "unit" => "nothing (null)".into(),
        other => other.into(),
    }
}

/// Where byte `offset` of a TOML `text` is: `line N, `[section] key``, naming the table it is in
/// (none before the first header) and the key on its line (`clock.mhz` inside an inline table).
pub fn toml_location(text: &str, offset: usize) -> String {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line_no = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[line_start..].find('\n').map_or(text.len(), |i| line_start + i);
    let line = &text[line_start..line_end];
    let section = before[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.split('#').next().unwrap_or(l).trim().to_string());
    let key = toml_key_at(line, offset - line_start);
    let what = match (section, key) {
        (Some(s), Some(k)) => format!(", `{s} {k}`"),
        (Some(s), None) => format!(", `{s}`"),
        (None, Some(k)) => format!(", `{k}`"),
        (None, None) => String::new(),
    };
    format!("line {line_no}{what}")
}

/// The line of `text` that sets `key` in table `section` (`[kernel]`, or `[kernel]` with
/// `migrate` as a key, an inline table or a `[kernel.migrate]` header), for errors found after
/// parsing; the first such line when an array of tables repeats it.
pub fn toml_line_of(text: &str, section: &str, key: &str) -> Option<usize> {
    let (table, first_key) = (section.trim_matches(['[', ']']), key.split('.').next()?);
    let sub_header = format!("{table}.{first_key}");
    let mut current = String::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or(line).trim();
        if line.starts_with('[') {
            current = line.trim_matches(['[', ']']).trim().to_string();
            if current == sub_header {
                return Some(i + 1);
            }
        } else if current == table
            && line.split_once('=').is_some_and(|(k, _)| k.trim() == first_key)
        {
            return Some(i + 1);
        }
    }
    None
}

/// A message found after parsing that begins with `` `[section] key`: `` located in `text`:
/// `line N, ` put before it when the line is found, the message unchanged otherwise.
pub fn locate_key_message(text: &str, message: &str) -> String {
    let line = message
        .strip_prefix('`')
        .and_then(|m| m.split_once('`'))
        .and_then(|(what, _)| what.split_once(' '))
        .and_then(|(section, key)| toml_line_of(text, section, key.trim()));
    match line {
        Some(line) => format!("line {line}, {message}"),
        None => message.to_string(),
    }
}

/// The key a position in a TOML line belongs to: the line's own key, and the key of an inline
/// table entry before the position when there is one (`clock = { mhz = 0 }` → `clock.mhz`).
fn toml_key_at(line: &str, column: usize) -> Option<String> {
    let is_key = |k: &str| {
        !k.is_empty()
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
    };
    let (first, _) = line.split_once('=')?;
    let first = first.trim();
    if !is_key(first) {
        return None;
    }
    let head = &line[..column.min(line.len())];
    let inner = head
        .rfind(['{', ','])
        .filter(|&i| i > first.len())
        .and_then(|i| head[i + 1..].split_once('='))
        .map(|(k, _)| k.trim())
        .filter(|k| is_key(k));
    Some(match inner {
        Some(inner) => format!("{first}.{inner}"),
        None => first.to_string(),
    })
}

/// A TOML parser's error (its message without the source excerpt, and its byte span) in plain
/// words, located in `text`: `line 3, `[kernel] hz`: expected a whole number, found the text
/// "x"`.
pub fn toml_error(text: &str, message: &str, span: Option<std::ops::Range<usize>>) -> String {
    let plain = serde_message(message);
    match span {
        Some(span) => format!("{}: {plain}", toml_location(text, span.start)),
        None => plain,
    }
}

/// `bytes` as text, or where it stops being UTF-8: "byte offset 7 (byte 0xff) is not UTF-8
/// text" (a cut multi-byte character at the end reads "byte offset 7 (byte 0xe2) starts a
/// character the file cuts short"). The one wording of every text input read whole.
///
/// ```
/// use tlblab_types::plain::utf8_text;
/// assert_eq!(utf8_text(b"ok"), Ok("ok"));
/// assert_eq!(utf8_text(b"a\xffb").unwrap_err(), "byte offset 1 (byte 0xff) is not UTF-8 text");
/// ```
pub fn utf8_text(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        match e.error_len() {
            Some(_) => format!("byte offset {at} (byte 0x{:02x}) is not UTF-8 text", bytes[at]),
            None => format!(
                "byte offset {at} (byte 0x{:02x}) starts a character the file cuts short",
                bytes[at]
            ),
        }
    })
}

/// An error and its causes, joined by ": " like anyhow's `{:#}`, but without a cause whose text
/// is already there (many errors print their source in their own message too): what
/// `tlblab: error:` prints, and the form of errors kept as text (notes, warnings, reports).
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = String::new();
    let mut cause = Some(error);
    while let Some(e) = cause {
        let part = e.to_string();
        if !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
        cause = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_checked_after_parsing_is_found_on_its_line() {
        let text =
            "name = \"x\"\n[kernel]\nhz = 250\nmigrate = { cycles = 9 }\n[kernel.clock]\nmhz = 0\n";
        assert_eq!(toml_line_of(text, "[kernel]", "migrate"), Some(4));
        assert_eq!(toml_line_of(text, "[kernel]", "clock"), Some(5));
        assert_eq!(toml_line_of(text, "[kernel]", "absent"), None);
        assert_eq!(
            locate_key_message(text, "`[kernel] migrate`: too big"),
            "line 4, `[kernel] migrate`: too big"
        );
        assert_eq!(locate_key_message(text, "no key here"), "no key here");
    }

    #[test]
    fn type_and_value_errors_name_what_was_expected_and_found() {
        assert_eq!(
            serde_message("invalid type: string \"x\", expected u64"),
            "expected a whole number (0 or more), found the text \"x\""
        );
        assert_eq!(
            serde_message("invalid value: integer `-3`, expected u32"),
            "expected a whole number from 0 to 4294967295, found the number -3"
        );
        assert_eq!(
            serde_message("invalid type: floating point `1.5`, expected u8"),
            "expected a whole number from 0 to 255, found the number 1.5"
        );
        assert_eq!(
            serde_message("invalid type: integer `3`, expected a string at line 1 column 12"),
            "expected text (in quotes), found the number 3 at line 1 column 12"
        );
        assert_eq!(
            serde_message("unknown variant `maybe`, expected one of `off`, `runtime`, `on`"),
            "\"maybe\" is not one of: off, runtime, on"
        );
        assert_eq!(
            serde_message("unknown variant `x`, expected `a` or `b`"),
            "\"x\" is not one of: a, b"
        );
        assert_eq!(serde_message("missing field `name`"), "the key \"name\" is missing");
        // Messages that are not serde's pass unchanged.
        assert_eq!(serde_message("EOF while parsing a list"), "EOF while parsing a list");
    }

    #[test]
    fn no_rust_type_names_survive() {
        for msg in [
            "invalid type: string \"x\", expected usize",
            "invalid type: map, expected a sequence",
            "invalid type: boolean `true`, expected f64",
            "invalid type: sequence, expected struct RawMachine",
        ] {
            let plain = serde_message(msg);
            for jargon in ["invalid type", "usize", "f64", "struct ", "sequence", "map"] {
                assert!(!plain.contains(jargon), "{plain:?} contains {jargon:?}");
            }
        }
    }

    #[test]
    fn toml_locations_name_the_table_and_key() {
        let text = "name = \"x\"\n[kernel]\nhz = \"x\"\nclock = { mhz = 0, source = \"s\" }\n";
        let at = |needle: &str| text.find(needle).unwrap();
        assert_eq!(toml_location(text, at("\"x\"\nclock")), "line 3, `[kernel] hz`");
        assert_eq!(toml_location(text, at("0, source")), "line 4, `[kernel] clock.mhz`");
        assert_eq!(toml_location(text, 7), "line 1, `name`");
        assert_eq!(
            toml_error(
                text,
                "invalid type: string \"x\", expected u64",
                Some(at("\"x\"\nclock")..at("\"x\"\nclock") + 3)
            ),
            "line 3, `[kernel] hz`: expected a whole number (0 or more), found the text \"x\""
        );
    }
}
