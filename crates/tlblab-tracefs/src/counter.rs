//! [`FlushCounter`]: counts `tlb:tlb_flush` by CPU and reason, and a histogram of `pages`,
//! on a reading thread while a workload runs. Memory is bounded (CPUs × reasons counters and
//! a 64-bucket histogram); events are never stored.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::event::{CpuLoss, TlbFlushDecoder};
use crate::instance::Instance;
use crate::reader::Reader;

/// Flush sizes: full flushes, zero-page ones, and powers of two.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PagesHistogram {
    /// `pages == -1` (`TLB_FLUSH_ALL`).
    pub full: u64,
    /// `pages == 0` (a switch that needed no flush, or a no-op catch-up).
    pub zero: u64,
    /// `log2[k]` counts `pages` in `2^k ..= 2^(k+1) - 1`.
    pub log2: Vec<u64>,
    /// Other negative values (not produced by known kernels).
    pub other_negative: u64,
}

impl PagesHistogram {
    /// Counts one flush of `pages`.
    pub fn add(&mut self, pages: i64) {
        match pages {
            -1 => self.full += 1,
            0 => self.zero += 1,
            p if p < 0 => self.other_negative += 1,
            p => {
                let k = 63 - p.leading_zeros() as usize;
                if self.log2.len() <= k {
                    self.log2.resize(k + 1, 0);
                }
                self.log2[k] += 1;
            }
        }
    }

    /// All flushes counted.
    pub fn total(&self) -> u64 {
        self.full + self.zero + self.other_negative + self.log2.iter().sum::<u64>()
    }
}

/// What a [`FlushCounter`] saw.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlushCounts {
    /// `by_cpu[cpu][reason]` = number of `tlb_flush` events.
    pub by_cpu: BTreeMap<u32, BTreeMap<i32, u64>>,
    /// Histogram of `pages` over all flushes.
    pub pages: PagesHistogram,
    /// Events of other types read from the instance.
    pub other_events: u64,
    /// Lost events per CPU; check [`FlushCounts::lost_any`] before trusting the counts.
    pub loss: Vec<CpuLoss>,
    /// This kernel's reason labels (from the format file).
    pub reason_names: BTreeMap<i32, String>,
}

impl FlushCounts {
    /// Flushes with `reason`, summed over CPUs.
    pub fn reason_total(&self, reason: i32) -> u64 {
        self.by_cpu.values().filter_map(|m| m.get(&reason)).sum()
    }

    /// All `tlb_flush` events counted.
    pub fn total(&self) -> u64 {
        self.by_cpu.values().flat_map(|m| m.values()).sum()
    }

    /// Events known to be lost, summed over CPUs (see [`CpuLoss::lost_events`]).
    pub fn lost_events(&self) -> u64 {
        self.loss.iter().map(CpuLoss::lost_events).sum()
    }

    /// Whether any CPU reported lost events.
    pub fn lost_any(&self) -> bool {
        self.loss.iter().any(CpuLoss::any)
    }
}

/// Counts `tlb_flush` events of an instance on a background thread until [`FlushCounter::stop`].
///
/// Typical use in a benchmark: create the instance, start the counter, run the workload, stop
/// the counter (which drains what is left), drop the instance.
pub struct FlushCounter<'i> {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<FlushCounts>>>,
    _instance: PhantomData<&'i Instance>,
}

impl<'i> FlushCounter<'i> {
    /// Starts counting; the instance must have `tlb/tlb_flush` enabled. `poll` is the pause
    /// between reads when the buffers are drained (10 ms is plenty for MiB-sized buffers).
    pub fn start(instance: &'i Instance, poll: Duration) -> Result<FlushCounter<'i>> {
        let reader = instance.reader()?;
        let decoder = flush_decoder(instance, &reader)?;
        let mut core = reader.core;
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("tlblab-flushcount".into())
            .spawn(move || {
                let mut tally = FlushTally::new(decoder);
                loop {
                    // Read the flag first: a round that starts after it was set drains all
                    // events of the finished workload.
                    let stopping = stop_flag.load(Ordering::Acquire);
                    let p = core.read_available(&mut |ev| tally.add(ev))?;
                    if stopping && p.drained {
                        break;
                    }
                    if p.drained {
                        std::thread::sleep(poll);
                    }
                }
                tally.finish(core.losses())
            })
            .map_err(|e| Error::io("spawn reader thread for", instance.path(), e))?;
        Ok(FlushCounter { stop, thread: Some(thread), _instance: PhantomData })
    }

    /// Stops the thread after a final drain and returns the counts.
    pub fn stop(mut self) -> Result<FlushCounts> {
        self.finish().unwrap_or(Err(Error::ReaderPanicked))
    }

    fn finish(&mut self) -> Option<Result<FlushCounts>> {
        self.stop.store(true, Ordering::Release);
        let thread = self.thread.take()?;
        Some(thread.join().unwrap_or(Err(Error::ReaderPanicked)))
    }
}

impl Drop for FlushCounter<'_> {
    fn drop(&mut self) {
        // Join so the trace_pipe_raw files are closed before the instance can be removed.
        let _ = self.finish();
    }
}

/// The `tlb_flush` decoder of an instance's reader.
fn flush_decoder(instance: &Instance, reader: &Reader<'_>) -> Result<TlbFlushDecoder> {
    let format = reader.schema().format_named("tlb_flush").ok_or_else(|| Error::MissingEvent {
        event: "tlb/tlb_flush".into(),
        path: instance.path().join("events/tlb/tlb_flush"),
    })?;
    TlbFlushDecoder::new(format)
        .map_err(|msg| Error::format(&instance.path().join("events/tlb/tlb_flush/format"), 0, msg))
}

/// Adds decoded events up into [`FlushCounts`] (shared by [`FlushCounter`] and
/// [`count_buffered_flushes`]).
struct FlushTally {
    decoder: TlbFlushDecoder,
    counts: FlushCounts,
    bad: Option<String>,
}

impl FlushTally {
    fn new(decoder: TlbFlushDecoder) -> FlushTally {
        let counts =
            FlushCounts { reason_names: decoder.reason_names().clone(), ..FlushCounts::default() };
        FlushTally { decoder, counts, bad: None }
    }

    fn add(&mut self, ev: &crate::RawEvent<'_>) {
        match self.decoder.decode(ev) {
            Ok(Some(f)) => {
                *self.counts.by_cpu.entry(f.cpu).or_default().entry(f.reason).or_default() += 1;
                self.counts.pages.add(f.pages);
            }
            Ok(None) => self.counts.other_events += 1,
            // Keep the first bad record's message; later ones add nothing a reader needs.
            Err(msg) => self.bad = self.bad.take().or(Some(format!("CPU {}: {msg}", ev.cpu))),
        }
    }

    fn finish(mut self, loss: Vec<CpuLoss>) -> Result<FlushCounts> {
        if let Some(msg) = self.bad {
            return Err(Error::format(std::path::Path::new("tlb_flush record"), 0, msg));
        }
        self.counts.loss = loss;
        Ok(self.counts)
    }
}

/// Counts the `tlb_flush` events the instance's buffers hold now, reading them to the end, with
/// the losses since the buffers were last cleared ([`Instance::clear`]).
///
/// The no-thread way for a benchmark that must not share its CPUs with a reader during a run:
/// clear the buffers, turn tracing on, run, turn tracing off, count. Whatever the buffers could
/// not hold shows up in [`FlushCounts::loss`] (size them with `InstanceOptions::buffer_size_kb`).
pub fn count_buffered_flushes(instance: &Instance) -> Result<FlushCounts> {
    let mut reader = instance.reader()?;
    let mut tally = FlushTally::new(flush_decoder(instance, &reader)?);
    while !reader.read_available(&mut |ev| tally.add(ev))?.drained {}
    tally.finish(reader.losses())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overwritten_events_counted_twice_are_lost_once() {
        let loss = |missed, overrun, dropped| CpuLoss {
            missed_events: missed,
            overrun: Some(overrun),
            dropped_events: Some(dropped),
            ..CpuLoss::default()
        };
        let counts =
            FlushCounts { loss: vec![loss(10, 12, 3), loss(7, 0, 0)], ..Default::default() };
        // CPU 0: max(10, 12) overwritten + 3 refused; CPU 1: 7 from the page headers alone.
        assert_eq!(counts.lost_events(), 15 + 7);
    }

    #[test]
    fn histogram_buckets() {
        let mut h = PagesHistogram::default();
        for p in [-1, 0, 1, 2, 3, 4, 7, 8, 33, -5] {
            h.add(p);
        }
        assert_eq!((h.full, h.zero, h.other_negative), (1, 1, 1));
        // [1], [2,3], [4,7], [8,15], [16,31], [32,63]
        assert_eq!(h.log2, vec![1, 2, 2, 1, 0, 1]);
        assert_eq!(h.total(), 10);
    }
}
