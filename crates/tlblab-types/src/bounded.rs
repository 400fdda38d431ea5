//! Work with a time bound: a reader fed a hostile input must fail its case, not stall a fuzz
//! run or a test suite, so the fuzz targets run each case through [`within`].

use std::sync::mpsc::{channel, RecvTimeoutError};
use std::time::Duration;

/// Why [`within`] returned no value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Overrun {
    /// The work was still running when the bound passed (it is left to finish on its thread).
    #[error("took longer than {0:?}")]
    TookLonger(Duration),
    /// The work panicked.
    #[error("panicked")]
    Panicked,
}

/// Runs `f` on a thread of its own and returns its value, or why there is none: it panicked,
/// or it took longer than `bound`.
pub fn within<T: Send + 'static>(
    bound: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Overrun> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(bound).map_err(|e| match e {
        RecvTimeoutError::Timeout => Overrun::TookLonger(bound),
        RecvTimeoutError::Disconnected => Overrun::Panicked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_a_panic_and_an_overrun_are_told_apart() {
        let short = Duration::from_millis(50);
        assert_eq!(within(Duration::from_secs(5), || 7), Ok(7));
        assert_eq!(
            within(Duration::from_secs(5), || -> u8 { panic!("boom") }),
            Err(Overrun::Panicked)
        );
        let slow = || std::thread::sleep(Duration::from_secs(2));
        assert_eq!(within(short, slow), Err(Overrun::TookLonger(short)));
    }
}
