//! Opening a trace: compression and format detection.

use crate::champsim::ChampSimReader;
use crate::compact::{CompactReader, MAGIC};
use crate::error::{read_failure, DecompressFailure, Position, TraceError, TraceErrorKind};
use crate::lackey::LackeyReader;
use crate::source::EventSource;
use crate::{Compression, Format, ReadOptions};
use std::fs::File;
use std::io::{self, Cursor, Read};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tlblab_types::TraceEvent;

/// The gzip magic bytes.
const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
/// The xz magic bytes.
const XZ_MAGIC: &[u8] = &[0xfd, b'7', b'z', b'X', b'Z', 0x00];
/// How many leading bytes format detection looks at.
pub const DETECT_BYTES: usize = 4096;

/// The compression of a stream that starts with `prefix` (at least 6 bytes unless the stream is
/// shorter): gzip (`1f 8b`), xz (`fd 37 7a 58 5a 00`) or none.
pub fn detect_compression(prefix: &[u8]) -> Compression {
    if prefix.starts_with(GZIP_MAGIC) {
        Compression::Gzip
    } else if prefix.starts_with(XZ_MAGIC) {
        Compression::Xz
    } else {
        Compression::None
    }
}

/// The format of a decompressed stream that starts with `prefix` (its first 4096 bytes, or all
/// of it if shorter): compact if it starts with the compact magic, lackey if every byte is
/// printable ASCII or whitespace (an empty stream counts as lackey: an empty trace), else
/// ChampSim.
pub fn detect_format(prefix: &[u8]) -> Format {
    if prefix.starts_with(&MAGIC) {
        return Format::Compact;
    }
    let text = prefix.get(..DETECT_BYTES).unwrap_or(prefix);
    if text
        .iter()
        .all(|&byte| byte.is_ascii_graphic() || byte.is_ascii_whitespace() || byte == 0x0b)
    {
        Format::Lackey
    } else {
        Format::ChampSim
    }
}

/// A trace opened by [`open`] or [`from_reader`]: its format, its compression, how far into the
/// file reading has got, and its events.
pub struct OpenTrace {
    name: String,
    format: Format,
    compression: Compression,
    total_bytes: Option<u64>,
    counter: Arc<Counter>,
    source: Box<dyn EventSource + Send>,
}

impl OpenTrace {
    /// The name used in errors: the path as given, or the name passed to [`from_reader`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The trace format (given or detected).
    pub fn format(&self) -> Format {
        self.format
    }

    /// The compression detected.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Bytes of the file (compressed, if it is) read so far, for a progress bar. Reading runs
    /// ahead of the events returned by up to a few hundred KiB.
    pub fn bytes_read(&self) -> u64 {
        self.counter.bytes.load(Ordering::Relaxed)
    }

    /// The size of the file, if known (for [`open`]ed files).
    pub fn total_bytes(&self) -> Option<u64> {
        self.total_bytes
    }
}

impl std::fmt::Debug for OpenTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenTrace")
            .field("name", &self.name)
            .field("format", &self.format)
            .field("compression", &self.compression)
            .field("bytes_read", &self.bytes_read())
            .finish_non_exhaustive()
    }
}

impl EventSource for OpenTrace {
    fn read_batch(&mut self, out: &mut Vec<TraceEvent>) -> Result<bool, TraceError> {
        self.source.read_batch(out)
    }
}

/// Opens the trace file at `path`: detects gzip or xz compression by its magic bytes and
/// decompresses while reading, then reads it as `format`, or detects the format (see
/// [`detect_format`]) if `format` is `None`.
///
/// Errors name the file as `path` was given.
pub fn open(
    path: &Path,
    format: Option<Format>,
    options: &ReadOptions,
) -> Result<OpenTrace, TraceError> {
    let name = path.display().to_string();
    let io_error = |error| TraceError::new(&name, Position::None, TraceErrorKind::Io(error));
    let file = File::open(path).map_err(io_error)?;
    let total = file.metadata().map_err(io_error)?.len();
    let mut trace = from_reader(&name, file, format, options)?;
    trace.total_bytes = Some(total);
    Ok(trace)
}

/// Like [`open`], for a trace in any reader (in memory, a pipe...), called `name` in errors.
/// [`OpenTrace::bytes_read`] counts the bytes taken from `reader`.
pub fn from_reader(
    name: &str,
    reader: impl Read + Send + 'static,
    format: Option<Format>,
    options: &ReadOptions,
) -> Result<OpenTrace, TraceError> {
    let counter = Arc::new(Counter::default());
    let mut raw = Counting { inner: reader, counter: Arc::clone(&counter) };
    let magic = peek(&mut raw, XZ_MAGIC.len()).map_err(|(error, _)| {
        TraceError::new(name, Position::Offset(0), TraceErrorKind::Io(error))
    })?;
    let compression = detect_compression(&magic);
    let raw = Cursor::new(magic).chain(raw);
    let mut stream: Box<dyn Read + Send> = match compression {
        Compression::None => Box::new(raw),
        Compression::Gzip => Box::new(Decoded {
            inner: flate2::read::MultiGzDecoder::new(raw),
            counter: Arc::clone(&counter),
            compression,
        }),
        Compression::Xz => Box::new(Decoded {
            inner: liblzma::read::XzDecoder::new_multi_decoder(raw),
            counter: Arc::clone(&counter),
            compression,
        }),
    };
    let format = match format {
        Some(format) => format,
        None => {
            let prefix = peek(&mut stream, DETECT_BYTES)
                .map_err(|(error, offset)| read_failure(name, offset, error))?;
            let format = detect_format(&prefix);
            stream = Box::new(Cursor::new(prefix).chain(stream));
            format
        }
    };
    let source: Box<dyn EventSource + Send> = match format {
        Format::Lackey => Box::new(LackeyReader::new(name, stream, options)),
        Format::ChampSim => Box::new(ChampSimReader::new(name, stream, options)),
        Format::Compact => Box::new(CompactReader::new(name, stream)),
    };
    Ok(OpenTrace { name: name.to_owned(), format, compression, total_bytes: None, counter, source })
}

/// Reads up to `n` bytes (fewer only at the end of the stream). On error, also says how many
/// bytes had been read.
fn peek(reader: &mut impl Read, n: usize) -> Result<Vec<u8>, (io::Error, u64)> {
    let mut bytes = Vec::with_capacity(n);
    match reader.take(n as u64).read_to_end(&mut bytes) {
        Ok(_) => Ok(bytes),
        Err(error) => Err((error, bytes.len() as u64)),
    }
}

/// Shared between the raw-byte counter and the [`OpenTrace`].
#[derive(Default)]
struct Counter {
    /// Raw bytes read.
    bytes: AtomicU64,
    /// Whether reading the raw stream itself failed (so a decoder error is an I/O error).
    failed: AtomicBool,
}

/// Counts the raw bytes read.
struct Counting<R> {
    inner: R,
    counter: Arc<Counter>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.counter.bytes.fetch_add(n as u64, Ordering::Relaxed);
                Ok(n)
            }
            Err(error) => {
                if error.kind() != io::ErrorKind::Interrupted {
                    self.counter.failed.store(true, Ordering::Relaxed);
                }
                Err(error)
            }
        }
    }
}

/// A decompressor whose own errors are marked as such (see [`DecompressFailure`]).
struct Decoded<R> {
    inner: R,
    counter: Arc<Counter>,
    compression: Compression,
}

impl<R: Read> Read for Decoded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|error| {
            if error.kind() == io::ErrorKind::Interrupted
                || self.counter.failed.load(Ordering::Relaxed)
            {
                return error;
            }
            let truncated = error.kind() == io::ErrorKind::UnexpectedEof;
            let failure = DecompressFailure {
                truncated,
                why: format!("{} stream: {error}", self.compression),
            };
            io::Error::new(error.kind(), failure)
        })
    }
}
