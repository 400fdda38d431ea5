//! Valgrind lackey traces (`valgrind --tool=lackey --trace-mem=yes`).
//!
//! One access per line: `I  04016f8c,3` (instruction fetch), ` L 04222cac,8` (load),
//! ` S 7ff0003a8,8` (store), ` M 04222cb0,4` (modify: a load, then a store). Valgrind's own
//! messages (`==PID== ...`, `--PID-- ...`) and blank lines are skipped.

use crate::coalesce::{push_access, Carry};
use crate::error::{escape_bytes, read_failure, Position, TraceError, TraceErrorKind};
use crate::input::Input;
use crate::source::{defer, EventSource, BATCH_SIZE};
use crate::ReadOptions;
use std::io::Read;
use tlblab_types::{Access, AccessKind, CpuId, Page, PageSize, Pcid, TraceEvent, VirtAddr};

/// Read size of the underlying stream; also the longest line accepted.
const CHUNK: usize = 256 * 1024;
/// The largest access size accepted, in bytes (valgrind's lackey reports at most 512).
pub const MAX_ACCESS_SIZE: u64 = 4096;
/// Longest excerpt of a bad line quoted in an error.
const EXCERPT: usize = 60;
/// Most events one line produces: a page-crossing modify.
const MAX_PER_LINE: usize = 4;

/// Reads a lackey trace. Every access gets the CPU, PCID and page size of the [`ReadOptions`]
/// and is non-global; an access that crosses a page boundary becomes one access per page, in
/// address order. With [`ReadOptions::coalesce`], runs of identical accesses are merged as
/// [`Coalesce`](crate::Coalesce) would (but faster, while parsing).
pub struct LackeyReader<R> {
    name: String,
    input: Input<R>,
    context: Context,
    line: u64,
    carry: Carry,
    finished: bool,
    deferred: Option<TraceError>,
}

/// What every access of the trace shares.
#[derive(Clone, Copy)]
struct Context {
    cpu: CpuId,
    pcid: Pcid,
    page_size: PageSize,
    merge: bool,
}

impl<R: Read> LackeyReader<R> {
    /// A reader of the lackey trace `reader`, called `name` in errors.
    pub fn new(name: &str, reader: R, options: &ReadOptions) -> LackeyReader<R> {
        LackeyReader {
            name: name.to_owned(),
            input: Input::new(reader, CHUNK),
            context: Context {
                cpu: options.cpu,
                pcid: options.pcid,
                page_size: options.page_size,
                merge: options.coalesce,
            },
            line: 0,
            carry: Carry::default(),
            finished: false,
            deferred: None,
        }
    }

    fn fail(&mut self, out: &[TraceEvent], error: TraceError) -> Result<bool, TraceError> {
        self.finished = true;
        defer(out, error, &mut self.deferred)
    }
}

impl<R: Read> EventSource for LackeyReader<R> {
    fn read_batch(&mut self, out: &mut Vec<TraceEvent>) -> Result<bool, TraceError> {
        out.clear();
        if self.finished {
            return self.deferred.take().map_or(Ok(false), Err);
        }
        self.carry.restore(out);
        loop {
            // Parse the complete lines in the buffer.
            let mut rest = self.input.data();
            let mut failure = None;
            while out.len() + MAX_PER_LINE <= BATCH_SIZE {
                // The common, well-formed line in one pass; anything else takes the careful path.
                if let Some((kind, addr, size, len)) = parse_fast(rest) {
                    // `emit` appends nothing when it fails; the careful path then reports why.
                    if emit(self.context, kind, addr, size, out).is_ok() {
                        self.line += 1;
                        rest = rest.get(len..).unwrap_or_default();
                        continue;
                    }
                }
                let Some(newline) = find_newline(rest) else { break };
                let (text, tail) = rest.split_at(newline);
                rest = tail.get(1..).unwrap_or_default();
                self.line += 1;
                if let Err(why) = emit_line(self.context, text, out) {
                    failure = Some(bad_line(&self.name, self.line, text, why));
                    break;
                }
            }
            let used = self.input.data().len() - rest.len();
            self.input.consume(used);
            if let Some(error) = failure {
                return self.fail(out, error);
            }
            if out.len() + MAX_PER_LINE > BATCH_SIZE {
                self.carry.hold(out, self.context.merge);
                return Ok(true);
            }
            // No complete line left: read more, or handle the end of the stream.
            if self.input.eof() {
                let text = self.input.data();
                if !text.is_empty() {
                    self.line += 1;
                    if let Err(why) = emit_line(self.context, text, out) {
                        let error = bad_line(&self.name, self.line, text, why);
                        return self.fail(out, error);
                    }
                }
                let rest = self.input.data().len();
                self.input.consume(rest);
                self.finished = true;
                return Ok(false);
            }
            if self.input.full() {
                let error = bad_line(
                    &self.name,
                    self.line + 1,
                    self.input.data(),
                    "line longer than 256 KiB",
                );
                return self.fail(out, error);
            }
            if let Err(error) = self.input.fill() {
                let error = read_failure(&self.name, self.input.received(), error);
                return self.fail(out, error);
            }
        }
    }
}

/// The offset of the first `\n` in `bytes`.
#[inline]
fn find_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&byte| byte == b'\n')
}

fn bad_line(name: &str, line: u64, text: &[u8], why: &str) -> TraceError {
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    let mut excerpt = escape_bytes(text.get(..EXCERPT).unwrap_or(text));
    if text.len() > EXCERPT {
        excerpt.push_str("...");
    }
    TraceError::new(
        name,
        Position::Line(line),
        TraceErrorKind::BadLine { excerpt, why: why.into() },
    )
}

/// Parses one line (without its `\n`) and appends its events to `out`.
fn emit_line(context: Context, text: &[u8], out: &mut Vec<TraceEvent>) -> Result<(), &'static str> {
    let Some((kind, addr, size)) = parse_line(text)? else { return Ok(()) };
    emit(context, kind, addr, size, out)
}

/// Appends the events of an access of `size` bytes at `addr`.
#[inline(always)]
fn emit(
    context: Context,
    kind: AccessLine,
    addr: u64,
    size: u64,
    out: &mut Vec<TraceEvent>,
) -> Result<(), &'static str> {
    if size > MAX_ACCESS_SIZE {
        return Err("access size larger than 4096 bytes");
    }
    let last = addr
        .checked_add(size.max(1) - 1)
        .ok_or("the access wraps past the end of the 64-bit address space")?;
    let first_page = Page::containing(VirtAddr(addr), context.page_size);
    let last_page = Page::containing(VirtAddr(last), context.page_size);
    let mut emit = |kind| {
        let access = Access::new(context.cpu, context.pcid, first_page, kind);
        push_access(out, access, context.merge);
        if last_page != first_page {
            let access = Access::new(context.cpu, context.pcid, last_page, kind);
            push_access(out, access, context.merge);
        }
    };
    match kind {
        AccessLine::Fetch => emit(AccessKind::Fetch),
        AccessLine::Load => emit(AccessKind::Load),
        AccessLine::Store => emit(AccessKind::Store),
        AccessLine::Modify => {
            emit(AccessKind::Load);
            emit(AccessKind::Store);
        }
    }
    Ok(())
}

/// The letter at the start of an access line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AccessLine {
    Fetch,
    Load,
    Store,
    Modify,
}

#[inline]
fn is_blank(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c')
}

/// Skips blanks from `pos`.
#[inline]
fn skip_blanks(text: &[u8], mut pos: usize) -> usize {
    while text.get(pos).is_some_and(|&byte| is_blank(byte)) {
        pos += 1;
    }
    pos
}

/// Whether `text` (from a valgrind message's start) is `--digits--`, valgrind's prefix for
/// messages such as warnings.
fn is_dash_message(text: &[u8]) -> bool {
    let Some(rest) = text.strip_prefix(b"--") else { return false };
    let digits = rest.iter().take_while(|byte| byte.is_ascii_digit()).count();
    digits > 0 && rest.get(digits..).is_some_and(|tail| tail.starts_with(b"--"))
}

/// Hex digit values by byte; 0xff for a byte that is not a hex digit.
const HEX: [u8; 256] = {
    let mut table = [0xff; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = match byte as u8 {
            digit @ b'0'..=b'9' => digit - b'0',
            letter @ b'a'..=b'f' => letter - b'a' + 10,
            letter @ b'A'..=b'F' => letter - b'A' + 10,
            _ => 0xff,
        };
        byte += 1;
    }
    table
};

#[inline(always)]
fn hex_digit(byte: u8) -> u8 {
    HEX[usize::from(byte)]
}

/// Parses valgrind's exact layout of an access line (`I  04016f8c,3\n`, ` L 04222cac,8\n`,
/// at most 16 hex digits and 4 size digits, newline included) from the start of `rest`:
/// kind, address, size and length. `None` for anything else, which `parse_line` then handles.
#[inline(always)]
fn parse_fast(rest: &[u8]) -> Option<(AccessLine, u64, u64, usize)> {
    let mut pos = usize::from(*rest.first()? == b' ');
    let kind = match *rest.get(pos)? {
        b'I' => AccessLine::Fetch,
        b'L' => AccessLine::Load,
        b'S' => AccessLine::Store,
        b'M' => AccessLine::Modify,
        _ => return None,
    };
    if *rest.get(pos + 1)? != b' ' {
        return None;
    }
    pos += 2;
    if *rest.get(pos)? == b' ' {
        pos += 1;
    }
    let start = pos;
    let mut addr: u64 = 0;
    loop {
        let digit = hex_digit(*rest.get(pos)?);
        if digit > 15 {
            break;
        }
        if pos - start == 16 {
            return None;
        }
        addr = addr << 4 | u64::from(digit);
        pos += 1;
    }
    if pos == start || *rest.get(pos)? != b',' {
        return None;
    }
    pos += 1;
    let start = pos;
    let mut size: u64 = 0;
    loop {
        let digit = rest.get(pos)?.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        if pos - start == 4 {
            return None;
        }
        size = size * 10 + u64::from(digit);
        pos += 1;
    }
    if pos == start || *rest.get(pos)? != b'\n' {
        return None;
    }
    Some((kind, addr, size, pos + 1))
}

/// Parses a line: `None` for a line to skip, else the access kind, address and size.
#[inline]
fn parse_line(text: &[u8]) -> Result<Option<(AccessLine, u64, u64)>, &'static str> {
    let mut pos = skip_blanks(text, 0);
    let Some(&letter) = text.get(pos) else { return Ok(None) };
    let kind = match letter {
        b'I' => AccessLine::Fetch,
        b'L' => AccessLine::Load,
        b'S' => AccessLine::Store,
        b'M' => AccessLine::Modify,
        b'=' if text.get(pos + 1) == Some(&b'=') => return Ok(None),
        b'-' if is_dash_message(text.get(pos..).unwrap_or_default()) => return Ok(None),
        _ => return Err("not a lackey access line (expected I, L, S or M)"),
    };
    pos += 1;
    let after_letter = pos;
    pos = skip_blanks(text, pos);
    if pos == after_letter {
        return Err("expected blanks after the access letter");
    }
    if text.get(pos) == Some(&b'0') && matches!(text.get(pos + 1), Some(b'x' | b'X')) {
        pos += 2;
    }
    let mut addr: u64 = 0;
    let digits_start = pos;
    while let Some(&byte) = text.get(pos) {
        let digit = hex_digit(byte);
        if digit > 15 {
            break;
        }
        if addr >> 60 != 0 {
            return Err("address does not fit in 64 bits");
        }
        addr = addr << 4 | u64::from(digit);
        pos += 1;
    }
    if pos == digits_start {
        return Err("bad hex address");
    }
    pos = skip_blanks(text, pos);
    match text.get(pos) {
        Some(b',') => pos += 1,
        None => return Err("missing comma and size after the address"),
        Some(_) => return Err("bad hex address (expected a comma after it)"),
    }
    pos = skip_blanks(text, pos);
    let mut size: u64 = 0;
    let digits_start = pos;
    while let Some(&byte) = text.get(pos) {
        if !byte.is_ascii_digit() {
            break;
        }
        // Saturate: anything this large is rejected as too large anyway.
        size = size.saturating_mul(10).saturating_add(u64::from(byte - b'0'));
        pos += 1;
    }
    if pos == digits_start {
        return Err("bad decimal size");
    }
    if skip_blanks(text, pos) != text.len() {
        return Err("unexpected text after the size");
    }
    Ok(Some((kind, addr, size)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EventSource;
    use tlblab_types::Vpn;

    /// Options without coalescing.
    fn plain() -> ReadOptions {
        ReadOptions { coalesce: false, ..ReadOptions::default() }
    }

    fn read(text: &str, options: &ReadOptions) -> Result<Vec<TraceEvent>, TraceError> {
        LackeyReader::new("t.lackey", text.as_bytes(), options).events().collect()
    }

    fn access(kind: AccessKind, vpn: u64) -> TraceEvent {
        let page = Page { vpn: Vpn(vpn), size: PageSize::Size4K };
        TraceEvent::Access { access: Access::new(CpuId(0), Pcid::default(), page, kind), repeat: 1 }
    }

    fn error_text(text: &str) -> String {
        match read(text, &plain()) {
            Ok(events) => panic!("expected an error, got {events:?}"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn every_line_kind() {
        let text = "==123== Lackey, an example Valgrind tool\n\
                    ==123== \n\
                    --123-- WARNING: something\n\
                    I  04016f8c,3\n\
                    \x20L 04222cac,8\n\
                    \x20S 7ff0003a8,8\n\
                    \n\
                    \x20M 04222cb0,4\n\
                    \t L\t0x1000 , 2 \r\n\
                    I  ffffffffffff0000,4";
        let events = read(text, &plain()).unwrap_or_default();
        assert_eq!(
            events,
            vec![
                access(AccessKind::Fetch, 0x4016),
                access(AccessKind::Load, 0x4222),
                access(AccessKind::Store, 0x7ff000),
                access(AccessKind::Load, 0x4222),
                access(AccessKind::Store, 0x4222),
                access(AccessKind::Load, 0x1),
                access(AccessKind::Fetch, 0xf_ffff_ffff_fff0),
            ]
        );
    }

    #[test]
    fn options_apply() {
        let options = ReadOptions {
            cpu: CpuId(3),
            pcid: Pcid::new(7).unwrap_or_default(),
            page_size: PageSize::Size2M,
            coalesce: false,
        };
        let events = read(" L 00403123,8\n", &options).unwrap_or_default();
        let page = Page::containing(VirtAddr(0x40_3123), PageSize::Size2M);
        let access =
            Access::new(CpuId(3), Pcid::new(7).unwrap_or_default(), page, AccessKind::Load);
        assert_eq!(events, vec![TraceEvent::Access { access, repeat: 1 }]);
        assert_eq!(page.vpn.0, 0x400);
    }

    #[test]
    fn page_crossing_accesses_split() {
        // Bytes 0x1ffc..=0x2003 cross from page 1 to page 2; 0x1ff8..=0x1fff does not.
        let text = " L 1ffc,8\n L 1ff8,8\n M 2fff,2\nI  3fff,0\n";
        let events = read(text, &plain()).unwrap_or_default();
        assert_eq!(
            events,
            vec![
                access(AccessKind::Load, 1),
                access(AccessKind::Load, 2),
                access(AccessKind::Load, 1),
                access(AccessKind::Load, 2),
                access(AccessKind::Load, 3),
                access(AccessKind::Store, 2),
                access(AccessKind::Store, 3),
                access(AccessKind::Fetch, 3),
            ]
        );
        // The same crossing within one 2 MiB page is one access.
        let options = ReadOptions { page_size: PageSize::Size2M, ..plain() };
        assert_eq!(read(" L 1ffc,8\n", &options).map(|events| events.len()).ok(), Some(1));
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(
            error_text("==1== hi\nI  04016f8c,3\nI  zz,3\n"),
            r#"t.lackey: line 3: cannot parse "I  zz,3": bad hex address"#
        );
        assert_eq!(
            error_text(" L 1234 8\n"),
            r#"t.lackey: line 1: cannot parse " L 1234 8": bad hex address (expected a comma after it)"#
        );
        assert_eq!(
            error_text("\n L 1234\n"),
            r#"t.lackey: line 2: cannot parse " L 1234": missing comma and size after the address"#
        );
        assert!(error_text(" L 1234,x\n").contains("bad decimal size"));
        assert!(error_text(" L 1234,8 9\n").contains("unexpected text after the size"));
        assert!(error_text(" X 1234,8\n").contains("expected I, L, S or M"));
        assert!(error_text(" L1234,8\n").contains("expected blanks"));
        assert!(error_text(" L 11112222333344445,8\n").contains("64 bits"));
        assert!(error_text(" L ffffffffffffffff,2\n").contains("wraps"));
        assert!(error_text(" L 1000,5000\n").contains("larger than 4096"));
        assert!(error_text(" L 1000,99999999999999999999999\n").contains("larger than 4096"));
        assert!(error_text(" L 10\u{e9}0,8\n").contains(r"10\xc3\xa9"));
        let long = format!(" L {}\n", "0".repeat(100));
        assert!(error_text(&long).contains("..."));
    }

    #[test]
    fn events_before_an_error_come_first() {
        let mut reader = LackeyReader::new("t", &b"I  1000,1\nbad\nI  2000,1\n"[..], &plain());
        let mut batch = Vec::new();
        assert!(matches!(reader.read_batch(&mut batch), Ok(true)));
        assert_eq!(batch, vec![access(AccessKind::Fetch, 1)]);
        assert!(reader.read_batch(&mut batch).is_err());
        assert!(matches!(reader.read_batch(&mut batch), Ok(false)));
        assert!(batch.is_empty());
    }

    #[test]
    fn long_input_spans_many_batches_and_chunks() {
        let line = " S 7ff0003a8,8\n";
        let text = line.repeat(100_000);
        let events = read(&text, &plain()).unwrap_or_default();
        assert_eq!(events.len(), 100_000);
        let too_long = format!("I  1000,1\n{}", " ".repeat(300_000));
        assert!(read(&too_long, &plain()).is_err_and(|error| error.to_string().contains("line 2:")));
    }

    #[test]
    fn coalescing_while_parsing_matches_the_adapter() {
        let text = " S 7ff0003a8,8\n".repeat(10_000);
        let merged = read(&text, &ReadOptions::default()).unwrap_or_default();
        assert_eq!(merged.len(), 1);
        assert_eq!(merged.first().map(TraceEvent::accesses), Some(10_000));
        // Runs of every length, some across batch boundaries.
        let mut text = String::new();
        for i in 0..20_000u64 {
            let page = (i / 13 + u64::from(i % 100 == 0)) % 5;
            let offset = if i % 17 == 0 { 0xffc } else { 0x100 };
            text.push_str(&format!(" L {:x},8\n", page << 12 | offset));
        }
        let merged = read(&text, &ReadOptions::default()).unwrap_or_default();
        let adapter: Vec<TraceEvent> =
            crate::Coalesce::new(LackeyReader::new("t", text.as_bytes(), &plain()))
                .events()
                .collect::<Result<_, _>>()
                .unwrap_or_default();
        assert_eq!(merged, adapter);
        assert!(merged.len() < 20_000);
    }

    proptest::proptest! {
        /// The one-pass parser agrees with the careful one wherever it accepts a line.
        #[test]
        fn fast_parser_agrees(line in "[ ]{0,2}[ILSMX][ ]{0,3}(0x)?[0-9a-fA-Fz]{0,18}[ ]?,[ ]?[0-9]{0,6}[ \r]?\n") {
            if let Some((kind, addr, size, len)) = parse_fast(line.as_bytes()) {
                proptest::prop_assert_eq!(len, line.len());
                let careful = parse_line(line.as_bytes().get(..len - 1).unwrap_or_default());
                proptest::prop_assert_eq!(careful, Ok(Some((kind, addr, size))));
            }
        }
    }
}
