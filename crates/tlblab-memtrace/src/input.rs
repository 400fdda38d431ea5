//! A chunked input buffer shared by the readers: large reads, parsing straight from the buffer.

use std::io::{self, Read};

/// Bytes read from a stream in large chunks. The readers parse `data()` in place, `consume` what
/// they used, and `fill` when the unconsumed tail is too short for a whole record or line.
pub(crate) struct Input<R> {
    inner: R,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    eof: bool,
}

impl<R: Read> Input<R> {
    /// A buffer of `capacity` bytes over `inner`.
    pub(crate) fn new(inner: R, capacity: usize) -> Input<R> {
        Input {
            inner,
            buf: vec![0; capacity.max(64)].into_boxed_slice(),
            start: 0,
            end: 0,
            base: 0,
            eof: false,
        }
    }

    /// The bytes read but not yet consumed.
    #[inline]
    pub(crate) fn data(&self) -> &[u8] {
        self.buf.get(self.start..self.end).unwrap_or_default()
    }

    /// Marks the first `n` bytes of `data()` as used.
    #[inline]
    pub(crate) fn consume(&mut self, n: usize) {
        self.start = self.start.saturating_add(n).min(self.end);
    }

    /// Stream offset of the first byte of `data()`.
    #[inline]
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.start as u64
    }

    /// Stream offset just past the last byte read so far.
    pub(crate) fn received(&self) -> u64 {
        self.base + self.end as u64
    }

    /// Whether the stream has ended (no more bytes will come).
    #[inline]
    pub(crate) fn eof(&self) -> bool {
        self.eof
    }

    /// Whether `data()` fills the whole buffer, so `fill` can add nothing.
    pub(crate) fn full(&self) -> bool {
        self.start == 0 && self.end == self.buf.len()
    }

    /// Moves the unconsumed bytes to the front and reads once more. Returns the number of
    /// bytes added; 0 means the stream has ended (or the buffer is full, see `full`).
    pub(crate) fn fill(&mut self) -> io::Result<usize> {
        if self.eof {
            return Ok(0);
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            self.end -= self.start;
            self.start = 0;
        }
        let Some(space) = self.buf.get_mut(self.end..) else { return Ok(0) };
        if space.is_empty() {
            return Ok(0);
        }
        loop {
            match self.inner.read(space) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(0);
                }
                Ok(n) => {
                    self.end += n.min(space.len());
                    return Ok(n);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
    }

    /// Reads until at least `n` bytes are available or the stream ends.
    pub(crate) fn fill_to(&mut self, n: usize) -> io::Result<()> {
        while self.data().len() < n && !self.eof && !self.full() {
            self.fill()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_consume_and_offsets() {
        let bytes: Vec<u8> = (0..=255).collect();
        let mut input = Input::new(&bytes[..], 100);
        input.fill_to(10).unwrap_or_default();
        assert_eq!(input.data().first(), Some(&0));
        input.consume(90);
        assert_eq!(input.offset(), 90);
        input.fill_to(20).unwrap_or_default();
        assert_eq!(input.data().first(), Some(&90));
        assert_eq!(input.offset(), 90);
        input.consume(input.data().len());
        while !input.eof() {
            input.consume(input.data().len());
            input.fill().unwrap_or_default();
        }
        input.consume(input.data().len());
        assert_eq!(input.offset(), 256);
        assert_eq!(input.received(), 256);
    }
}
