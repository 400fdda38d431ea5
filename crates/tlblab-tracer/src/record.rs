//! The recording loop: read the instance's buffers merged by time, decode, write.

use std::collections::BTreeSet;
use std::io::Write;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tlblab_env::{InterruptDelta, InterruptSnapshot, PerCpuDelta, Source};
use tlblab_flushtrace::{
    CpuInfo, End, Header, InterruptCounts, Loss, Origin, Record, TraceWriter, Trailer,
};
use tlblab_tracefs::{Instance, RawEvent, Reader};

use crate::decode::{Decoded, Decoders};
use crate::tasks::TaskTable;
use crate::Error;

/// Counts of one recording.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordStats {
    /// Ring-buffer events read.
    pub events: u64,
    /// Of which `tlb:tlb_flush`.
    pub flushes: u64,
    /// Records written (events plus [`tlblab_flushtrace::Task`] records).
    pub records: u64,
    /// Buffer pages read.
    pub pages: u64,
    /// Reading rounds.
    pub rounds: u64,
    /// Rounds that found more pages waiting than one round reads (the reader was behind).
    pub busy_rounds: u64,
}

/// Reads an instance into a trace file: create it while the instance has tracing off, then
/// [`Recorder::start`], [`Recorder::poll`] or [`Recorder::run`] until done, [`Recorder::stop`],
/// [`Recorder::finish`].
pub struct Recorder<'i, W: Write> {
    instance: &'i Instance,
    reader: Reader<'i>,
    decoders: Decoders,
    tasks: TaskTable,
    writer: TraceWriter<W>,
    stats: RecordStats,
    cpus_seen: BTreeSet<u32>,
    /// The first error met inside the reader's callback (which cannot return one).
    error: Option<Error>,
    started: Instant,
    /// `/proc/interrupts` when tracing was turned on, and the increments when it was turned off.
    interrupts_at_start: Option<InterruptSnapshot>,
    interrupts: Option<InterruptCounts>,
    /// How long tracing was on, once stopped.
    traced_for: Option<Duration>,
}

/// The header of a recording from `instance`: clock, CPUs, the kernel's reason labels (from
/// the format file), the enabled events and the id of every event.
pub fn header_for(instance: &Instance) -> Result<Header, Error> {
    let mut h = Header::new(Origin::Recorded);
    h.clock = instance.clock().to_string();
    h.cpus = instance.cpus()?;
    for event in instance.enabled_events() {
        let format = instance.event_format(event)?;
        if format.name == "tlb_flush" {
            let decoder = tlblab_tracefs::TlbFlushDecoder::new(&format)
                .map_err(|msg| Error::Format { event: event.to_string(), msg })?;
            h.reason_names = decoder.reason_names().clone();
        }
        let name = format!("{}:{}", event.system, event.name);
        h.event_ids.insert(format.id, name.clone());
        h.events.push(name);
    }
    let text = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    h.kernel_release = text("/proc/sys/kernel/osrelease");
    h.hostname = text("/proc/sys/kernel/hostname");
    h.cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|c| CpuInfo::parse(&c));
    h.started_unix_ns =
        SystemTime::now().duration_since(UNIX_EPOCH).ok().map(|d| d.as_nanos() as u64);
    h.notes.extend(instance.notes().iter().cloned());
    Ok(h)
}

impl<'i, W: Write> Recorder<'i, W> {
    /// A recorder of `instance` writing to `writer` (whose header is already written).
    pub fn new(instance: &'i Instance, writer: TraceWriter<W>) -> Result<Self, Error> {
        let reader = instance.reader()?;
        let decoders = Decoders::new(reader.schema()).map_err(|m| Error::Format {
            event: m.event,
            msg: format!("no field `{}`", m.field),
        })?;
        Ok(Recorder {
            instance,
            reader,
            decoders,
            tasks: TaskTable::default(),
            writer,
            stats: RecordStats::default(),
            cpus_seen: BTreeSet::new(),
            error: None,
            started: Instant::now(),
            interrupts_at_start: None,
            interrupts: None,
            traced_for: None,
        })
    }

    /// Turns tracing on (the instance should have it off until now, so that the trace and the
    /// interrupt counts cover the same interval).
    pub fn start(&mut self) -> Result<(), Error> {
        self.interrupts_at_start = InterruptSnapshot::read().ok();
        self.instance.set_tracing_on(true)?;
        self.started = Instant::now();
        Ok(())
    }

    /// Turns tracing off (what the buffers hold is read by [`Recorder::finish`]) and takes the
    /// interrupt counts of the interval.
    pub fn stop(&mut self) -> Result<(), Error> {
        if self.traced_for.is_none() {
            self.traced_for = Some(self.started.elapsed());
            self.instance.set_tracing_on(false)?;
            self.interrupts = self.interrupts_at_start.take().and_then(|before| {
                let delta =
                    InterruptDelta::between(&before, &InterruptSnapshot::read().ok()?).ok()?;
                let per_cpu = |s: &Source<PerCpuDelta>| match s {
                    Source::Available(d) => Some(d.per_cpu.clone()),
                    _ => None,
                };
                Some(InterruptCounts {
                    cpus: delta.cpus.clone(),
                    tlb: per_cpu(&delta.tlb),
                    cal: per_cpu(&delta.cal),
                })
            });
        }
        Ok(())
    }

    /// Counts so far.
    pub fn stats(&self) -> &RecordStats {
        &self.stats
    }

    /// Events lost so far, per CPU.
    pub fn losses(&self) -> Vec<Loss> {
        self.reader
            .losses()
            .into_iter()
            .map(|l| Loss {
                cpu: l.cpu,
                events: l.lost_events(),
                pages_with_unknown_loss: l.pages_with_unknown_loss,
            })
            .collect()
    }

    /// One round: reads what the buffers hold and writes every event that no CPU can still
    /// precede, then makes the file readable up to there. Returns whether the buffers were
    /// drained (if not, call again at once: the reader is behind).
    pub fn poll(&mut self) -> Result<bool, Error> {
        let drained = self.read(false)?;
        self.writer.flush()?;
        Ok(drained)
    }

    /// One merged reading round (`finish`: everything left, once tracing is off) through
    /// [`write_event`]; whether the buffers were drained.
    fn read(&mut self, finish: bool) -> Result<bool, Error> {
        let Recorder { reader, decoders, tasks, writer, stats, cpus_seen, error, .. } = self;
        let mut sink = |ev: &RawEvent<'_>| {
            if error.is_none() {
                if let Err(e) = write_event(ev, decoders, tasks, writer, stats, cpus_seen) {
                    *error = Some(e);
                }
            }
        };
        let progress = if finish {
            reader.finish_merged(&mut sink)?
        } else {
            reader.read_merged(&mut sink)?
        };
        self.stats.rounds += 1;
        self.stats.pages += progress.pages;
        self.stats.busy_rounds += u64::from(!progress.drained);
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(progress.drained),
        }
    }

    /// Polls until `stop()` says so, sleeping `interval` between rounds that drained the
    /// buffers (in steps of at most 10 ms, so a stop is seen quickly).
    pub fn run(&mut self, interval: Duration, stop: &dyn Fn() -> bool) -> Result<(), Error> {
        while !stop() {
            if self.poll()? {
                let until = Instant::now() + interval;
                while !stop() {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    std::thread::sleep(left.min(Duration::from_millis(10)));
                }
            }
        }
        Ok(())
    }

    /// Stops tracing if [`Recorder::stop`] has not, reads everything left, and writes the
    /// trailer.
    pub fn finish(
        mut self,
        end: End,
        command_status: Option<i32>,
    ) -> Result<(W, RecordStats, Trailer), Error> {
        self.stop()?;
        self.read(true)?;
        let trailer = Trailer {
            end,
            records: 0,
            losses: self.losses(),
            duration_ns: self.traced_for.map(|d| d.as_nanos() as u64),
            command_status,
            reason_names: Default::default(),
            cpus_seen: self.cpus_seen.iter().copied().collect(),
            interrupts: self.interrupts.take(),
        };
        self.stats.records = self.writer.records();
        let out = self.writer.finish(trailer.clone())?;
        let trailer = Trailer { records: self.stats.records, ..trailer };
        Ok((out, self.stats, trailer))
    }
}

fn write_event<W: Write>(
    ev: &RawEvent<'_>,
    decoders: &Decoders,
    tasks: &mut TaskTable,
    writer: &mut TraceWriter<W>,
    stats: &mut RecordStats,
    cpus_seen: &mut BTreeSet<u32>,
) -> Result<(), Error> {
    stats.events += 1;
    cpus_seen.insert(ev.cpu);
    if let Some(task) = tasks.first_sight(ev.ts_ns, ev.pid) {
        writer.write(&Record::Task(task))?;
    }
    let decoded =
        decoders.decode(ev).map_err(|msg| Error::Decode { cpu: ev.cpu, ts_ns: ev.ts_ns, msg })?;
    let record = match decoded {
        Decoded::Record(r) => r,
        Decoded::NewTask { ts_ns, parent, pid, comm, thread } => {
            Record::Task(tasks.created(ts_ns, parent, pid, comm, thread))
        }
        Decoded::Exec(task) => Record::Task(tasks.exec(task)),
    };
    stats.flushes += u64::from(matches!(record, Record::Flush(_)));
    writer.write(&record)?;
    Ok(())
}
