//! Parsers for the self-description files of tracefs: `events/<sys>/<name>/format` and
//! `events/header_page`. Field offsets, sizes and reason values come from these files at run
//! time; nothing about an event's layout is hard-coded.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use crate::error::{Error, Result};

/// An event named `system/name`, e.g. `tlb/tlb_flush`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventName {
    /// The subsystem directory under `events/` (`tlb`).
    pub system: String,
    /// The event directory (`tlb_flush`).
    pub name: String,
}

impl EventName {
    /// `tlb/tlb_flush`.
    pub fn tlb_flush() -> EventName {
        EventName { system: "tlb".into(), name: "tlb_flush".into() }
    }
}

impl FromStr for EventName {
    type Err = String;
    /// Accepts `system/name` and `system:name` (perf's spelling).
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let (system, name) = s
            .split_once(['/', ':'])
            .filter(|(a, b)| !a.is_empty() && !b.is_empty() && !b.contains(['/', ':']))
            .ok_or_else(|| format!("event {s:?} is not of the form system/name"))?;
        Ok(EventName { system: system.into(), name: name.into() })
    }
}

impl fmt::Display for EventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.system, self.name)
    }
}

/// One `field:` line of a format file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The field name (`pages`, `prev_comm`).
    pub name: String,
    /// The C type as written, without the name (`unsigned long`, `char[16]`, `__data_loc char[]`).
    pub type_name: String,
    /// Byte offset from the start of the event record (common fields included).
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// Whether the value is signed (`signed:1`).
    pub signed: bool,
}

impl Field {
    /// Reads the field as an integer from `record` (little-endian, sign- or zero-extended by
    /// `signed`); `None` if the record is too short or the size is not 1, 2, 4 or 8.
    pub fn read_i64(&self, record: &[u8]) -> Option<i64> {
        let b = record.get(self.offset..self.offset.checked_add(self.size)?)?;
        Some(match (b.len(), self.signed) {
            (1, true) => i64::from(b[0] as i8),
            (1, false) => i64::from(b[0]),
            (2, true) => i64::from(i16::from_le_bytes(b.try_into().ok()?)),
            (2, false) => i64::from(u16::from_le_bytes(b.try_into().ok()?)),
            (4, true) => i64::from(i32::from_le_bytes(b.try_into().ok()?)),
            (4, false) => i64::from(u32::from_le_bytes(b.try_into().ok()?)),
            (8, _) => i64::from_le_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }

    /// Reads the field as a value of its own size interpreted as signed, whatever `signed:`
    /// says: for `unsigned long pages`, `-1` is `TLB_FLUSH_ALL` on 32- and 64-bit kernels alike.
    pub fn read_as_signed(&self, record: &[u8]) -> Option<i64> {
        Field { signed: true, ..self.clone() }.read_i64(record)
    }
}

/// A parsed `events/<sys>/<name>/format` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    /// `name:` line.
    pub name: String,
    /// `ID:` line: the value of `common_type` in every record of this event.
    pub id: u16,
    /// All fields in file order, the `common_*` ones first.
    pub fields: Vec<Field>,
    /// The `print fmt:` line, without the prefix.
    pub print_fmt: String,
}

/// One `{ value, "label" }` pair of a `__print_symbolic` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// The value, when the kernel exported it as a number; `None` when the file shows an
    /// unresolved enum name (older kernels that lacked `TRACE_DEFINE_ENUM` for it).
    pub value: Option<i64>,
    /// The value expression as written.
    pub expr: String,
    /// The label.
    pub label: String,
}

impl EventFormat {
    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The `__print_symbolic(REC->field, ...)` table of `field` in the print format, if any.
    pub fn symbols(&self, field: &str) -> std::result::Result<Vec<Symbol>, String> {
        parse_print_symbolic(&self.print_fmt, field)
    }
}

/// The commit and data layout of a ring-buffer page, from `events/header_page`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderPage {
    /// Offset and size of the page timestamp (u64).
    pub timestamp: (usize, usize),
    /// Offset and size of the commit word (`local_t`: 8 bytes on 64-bit kernels).
    pub commit: (usize, usize),
    /// Offset and size of the data area; offset + size is the page (sub-buffer) size.
    pub data: (usize, usize),
}

/// Parses one `field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;` line (the part after `field:`).
fn parse_field(rest: &str) -> std::result::Result<Field, String> {
    let mut parts = rest.split(';').map(str::trim);
    let decl = parts.next().unwrap_or_default();
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in parts.filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once(':').ok_or_else(|| format!("bad attribute {part:?}"))?;
        let number = || value.trim().parse::<usize>().map_err(|_| format!("bad {key} {value:?}"));
        match key.trim() {
            "offset" => offset = Some(number()?),
            "size" => size = Some(number()?),
            "signed" => signed = number()? != 0,
            _ => {} // tolerate attributes added by future kernels
        }
    }
    let (type_part, name) =
        decl.rsplit_once(char::is_whitespace).ok_or_else(|| format!("bad declaration {decl:?}"))?;
    // `char prev_comm[16]` names `prev_comm`; the array suffix belongs to the type.
    let (name, type_name) = match name.split_once('[') {
        Some((n, dims)) => (n, format!("{}[{dims}", type_part.trim())),
        None => (name, type_part.trim().to_string()),
    };
    if name.is_empty() || type_name.is_empty() {
        return Err(format!("bad declaration {decl:?}"));
    }
    Ok(Field {
        name: name.to_string(),
        type_name,
        offset: offset.ok_or("missing offset")?,
        size: size.ok_or("missing size")?,
        signed,
    })
}

/// Parses the text of an event `format` file; `path` is used in error messages.
pub fn parse_event_format(text: &str, path: &Path) -> Result<EventFormat> {
    let (mut name, mut id, mut print_fmt) = (None, None, None);
    let mut fields = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        let err = |msg: String| Error::format(path, i + 1, msg);
        if let Some(v) = t.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = t.strip_prefix("ID:") {
            id = Some(v.trim().parse::<u16>().map_err(|_| err(format!("bad ID {:?}", v.trim())))?);
        } else if let Some(v) = t.strip_prefix("field:") {
            fields.push(parse_field(v).map_err(err)?);
        } else if let Some(v) = t.strip_prefix("print fmt:") {
            print_fmt = Some(v.trim().to_string());
        } else if !(t.is_empty() || t == "format:") {
            return Err(err(format!("unexpected line {t:?}")));
        }
    }
    let missing = |what: &str| Error::format(path, 0, format!("no `{what}` line"));
    Ok(EventFormat {
        name: name.ok_or_else(|| missing("name:"))?,
        id: id.ok_or_else(|| missing("ID:"))?,
        print_fmt: print_fmt.ok_or_else(|| missing("print fmt:"))?,
        fields,
    })
}

/// Parses the text of `events/header_page`.
pub fn parse_header_page(text: &str, path: &Path) -> Result<HeaderPage> {
    let (mut timestamp, mut commit, mut data) = (None, None, None);
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.trim().strip_prefix("field:") else { continue };
        let f = parse_field(rest).map_err(|m| Error::format(path, i + 1, m))?;
        let slot = match f.name.as_str() {
            "timestamp" => &mut timestamp,
            "commit" => &mut commit,
            "data" => &mut data,
            _ => continue, // `overwrite` shares the commit word; not needed to decode
        };
        *slot = Some((f.offset, f.size));
    }
    let missing = |what: &str| Error::format(path, 0, format!("no `{what}` field"));
    let h = HeaderPage {
        timestamp: timestamp.ok_or_else(|| missing("timestamp"))?,
        commit: commit.ok_or_else(|| missing("commit"))?,
        data: data.ok_or_else(|| missing("data"))?,
    };
    if h.timestamp.1 != 8 || !matches!(h.commit.1, 4 | 8) || h.data.0 < h.commit.0 + h.commit.1 {
        return Err(Error::format(path, 0, format!("unsupported page layout {h:?}")));
    }
    Ok(h)
}

/// Extracts the `{ value, "label" }` table of `__print_symbolic(REC->field, ...)`.
pub fn parse_print_symbolic(
    print_fmt: &str,
    field: &str,
) -> std::result::Result<Vec<Symbol>, String> {
    let head = format!("__print_symbolic(REC->{field},");
    let start = print_fmt.find(&head).ok_or_else(|| format!("no {head}...) in print fmt"))?;
    let mut rest = &print_fmt[start + head.len()..];
    let mut symbols = Vec::new();
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        if rest.starts_with(')') {
            return Ok(symbols);
        }
        let body = rest.strip_prefix('{').ok_or_else(|| format!("expected '{{' at {rest:.20?}"))?;
        let (expr, after) = body.split_once(',').ok_or("unterminated { value, label }")?;
        let after = after.trim_start().strip_prefix('"').ok_or("label is not a string")?;
        let (label, after) = split_c_string(after)?;
        rest = after.trim_start().strip_prefix('}').ok_or("expected '}' after label")?;
        let expr = expr.trim().to_string();
        symbols.push(Symbol { value: parse_c_integer(&expr), expr, label });
    }
}

/// Splits a C string literal body (after the opening quote) at its closing quote.
fn split_c_string(s: &str) -> std::result::Result<(String, &str), String> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, &s[i + 1..])),
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                Some((_, e)) => out.push(e),
                None => break,
            },
            c => out.push(c),
        }
    }
    Err("unterminated string".into())
}

/// Parses `12`, `-1`, `0x1f`, `(3)`; anything else (an enum name) gives `None`.
fn parse_c_integer(expr: &str) -> Option<i64> {
    let e = expr.trim();
    let e = e.strip_prefix('(').and_then(|x| x.strip_suffix(')')).unwrap_or(e).trim();
    let (neg, digits) = match e.strip_prefix('-') {
        Some(d) => (true, d.trim()),
        None => (false, e),
    };
    let v = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex, 16).ok()?,
        None => digits.parse::<i64>().ok()?,
    };
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_page_of_this_machine() {
        let text = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
                    \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
                    \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
                    \tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        let h = parse_header_page(text, Path::new("header_page")).unwrap();
        assert_eq!(h, HeaderPage { timestamp: (0, 8), commit: (8, 8), data: (16, 4080) });
    }

    #[test]
    fn event_names() {
        let e: EventName = "tlb/tlb_flush".parse().unwrap();
        assert_eq!(e, EventName::tlb_flush());
        assert_eq!("tlb:tlb_flush".parse::<EventName>().unwrap().to_string(), "tlb/tlb_flush");
        assert!("tlb_flush".parse::<EventName>().is_err());
        assert!("a/b/c".parse::<EventName>().is_err());
    }

    #[test]
    fn array_and_data_loc_fields() {
        let f = parse_field("char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;").unwrap();
        assert_eq!(
            (f.name.as_str(), f.type_name.as_str(), f.offset, f.size),
            ("prev_comm", "char[16]", 8, 16)
        );
        let f = parse_field("__data_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;").unwrap();
        assert_eq!((f.name.as_str(), f.type_name.as_str()), ("name", "__data_loc char[]"));
        assert!(parse_field("int x;\toffset:8;").is_err(), "size is required");
    }

    #[test]
    fn integer_reads_follow_size_and_sign() {
        let f = |size, signed| Field {
            name: "x".into(),
            type_name: "t".into(),
            offset: 1,
            size,
            signed,
        };
        let rec = [0u8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(f(4, true).read_i64(&rec), Some(-1));
        assert_eq!(f(4, false).read_i64(&rec), Some(0xffff_ffff));
        assert_eq!(f(4, false).read_as_signed(&rec), Some(-1));
        assert_eq!(f(8, false).read_i64(&rec), Some(-1));
        assert_eq!(f(8, false).read_i64(&rec[..8]), None, "record too short");
        assert_eq!(f(3, false).read_i64(&rec), None, "odd size");
    }

    #[test]
    fn symbolic_values_hex_negative_and_unresolved() {
        let pf = r#""%s", __print_symbolic(REC->r, { 0x10, "a \"q\"" }, { -1, "all" }, { MY_ENUM, "e" }), REC->r"#;
        let s = parse_print_symbolic(pf, "r").unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!((s[0].value, s[0].label.as_str()), (Some(16), "a \"q\""));
        assert_eq!(s[1].value, Some(-1));
        assert_eq!((s[2].value, s[2].expr.as_str()), (None, "MY_ENUM"));
        assert!(parse_print_symbolic(pf, "other").is_err());
        assert!(parse_print_symbolic(r#"__print_symbolic(REC->r, { 1, "x" "#, "r").is_err());
    }
}
