//! Pipes and AF_UNIX stream sockets carrying fixed-size messages, with the blocking and
//! wake-up rules of `fs/pipe.c` and `net/unix/af_unix.c` (hackbench's transport,
//! docs/workloads.md).
//!
//! A message is one `write()` of `datasize` bytes, read by one `read()` of as many (hackbench
//! loops on short transfers, which these never are: a pipe write up to `PIPE_BUF` is atomic,
//! and a stream-socket write this small is one skb).
//!
//! - **Pipe** (`pipe_write()`, `pipe_read()`, 5.5+): 16 page buffers (`PIPE_DEF_BUFFERS`, 64
//!   KiB). A write merges into the last buffer when the pipe is not empty and the data fits in
//!   its page; else it takes a new buffer, and blocks (exclusive wait) while all 16 are used. A
//!   write wakes the reader only if the pipe was empty. A read that empties a buffer of a full
//!   pipe wakes one waiting writer (6.14+, aaec5a95d596); 5.5–6.13
//!   (`Policy::pipe_wakes_writer_while_full`) any read that began with the pipe full does, and
//!   the writer finds room only if the read emptied a buffer (else it sleeps again). A writer
//!   that had slept wakes the next one after its write if the pipe is still not full.
//! - **Socket** (`unix_stream_sendmsg()`, `sock_alloc_send_pskb()`, `unix_write_space()`): each
//!   write is an skb charged to the sending socket (`sk_wmem_alloc` += its truesize); a write
//!   blocks while `sk_wmem_alloc >= sk_sndbuf`; every write wakes a sleeping reader
//!   (`sk_data_ready`); each skb the reader frees wakes every sleeping writer once
//!   `sk_wmem_alloc * 4 <= sk_sndbuf` (`unix_writable()`).
//! - Poll: a task may wait until the channel holds data without taking it (`poll(POLLIN)`, not
//!   exclusive: one write wakes every poller), as hackbench's workers wait on `wakefds`.
//!
//! - Wake-ups are sync wake-ups placed as `select_task_rq_fair()` places them
//!   ([`Kernel::select_task_rq_fair`], `kernel/wake.rs`), so the woken task may move to another
//!   CPU, as hackbench's tasks do; the rest of the model keeps tasks where they are.
//!
//! The pipe's or socket's state (its mutex or queue lock, head and tail) is one cache line:
//! an operation from another CPU than the last one's moves it (`cache_line_transfer`). A message
//! read on another CPU than the one that wrote it costs its reader `pipe_remote` or
//! `socket_remote` more (the data, the skb, the writer's accounting: measured as a whole on the
//! host, 0 in a preset that does not give it).
//!
//! Queued messages go cold (mechanism `queued-messages`): a message costs `pipe_queued` or
//! `socket_queued` more, charged at its read, scaled by the messages written on its writer's
//! CPU between its write and its read, up to `QUEUED_SINCE_MEAN` (the mean of the loop that
//! measures the figure: 20 channels 200 deep), beyond which it is charged whole. Each written
//! message passes through the writer's caches and pushes older ones out (the skb, its data, a
//! pipe's buffer page); hackbench's senders fill 20 sockets 277 deep before they sleep. NOTE: a
//! cache loses lines in steps (at its size), not in proportion; the scale is a straight line
//! from the one depth measured to none queued, which over-charges shallow queues that still fit
//! and under-charges the deep end's first messages.

use super::run::Step;
use super::{Frame, Kernel, Phase, TaskState};
use crate::ids::TaskId;
use crate::observer::Observer;
use crate::program::Syscall;
use std::collections::VecDeque;
use tlblab_types::CpuId;

/// A pipe or a socket pair (by index), made by [`Kernel::channel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChannelId(pub u32);

/// What a channel is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelKind {
    /// A pipe of `buffers` page buffers, each holding up to `per_page` messages.
    Pipe {
        /// `pipe->max_usage` (16 by default).
        buffers: u32,
        /// Messages that fit in a page (`PAGE_SIZE / datasize`).
        per_page: u32,
    },
    /// An AF_UNIX stream socket pair; messages queue at the receiver, charged to the sender.
    Socket {
        /// `sk_sndbuf` of the sending socket, bytes.
        sndbuf: u64,
        /// `skb->truesize` of one message, bytes.
        truesize: u64,
    },
}

/// What a channel did over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelStats {
    /// Messages written.
    pub written: u64,
    /// Messages read.
    pub read: u64,
    /// Writes that found no room and slept.
    pub writer_sleeps: u64,
    /// Reads that found nothing and slept.
    pub reader_sleeps: u64,
}

/// A channel's state.
#[derive(Clone, Debug)]
pub(crate) struct Channel {
    kind: ChannelKind,
    /// Pipe: messages in each used buffer, oldest first. Socket: one entry per skb.
    bufs: VecDeque<u32>,
    /// The CPU that wrote each message queued and its count of messages written then
    /// (`Kernel::messages_written`), oldest first.
    origins: VecDeque<(u16, u64)>,
    readers: VecDeque<TaskId>,
    writers: VecDeque<TaskId>,
    pollers: Vec<TaskId>,
    /// Writers that slept since their write began (a pipe's `wake_next_writer`).
    slept: Vec<TaskId>,
    /// The CPU that touched the channel last.
    line: Option<u16>,
    stats: ChannelStats,
}

impl Channel {
    fn empty(&self) -> bool {
        self.bufs.is_empty()
    }

    /// Whether a write would have to sleep.
    fn full(&self) -> bool {
        match self.kind {
            ChannelKind::Pipe { buffers, per_page } => {
                self.bufs.len() as u32 >= buffers && self.bufs.back().is_none_or(|&n| n >= per_page)
            }
            ChannelKind::Socket { sndbuf, truesize } => self.bufs.len() as u64 * truesize >= sndbuf,
        }
    }

    fn push(&mut self, cpu: u16, written: u64) {
        self.origins.push_back((cpu, written));
        match self.kind {
            // Merge into the last page when the pipe is not empty and the data fits.
            ChannelKind::Pipe { per_page, .. } => match self.bufs.back_mut() {
                Some(n) if *n < per_page => *n += 1,
                _ => self.bufs.push_back(1),
            },
            ChannelKind::Socket { .. } => self.bufs.push_back(1),
        }
        self.stats.written += 1;
    }

    /// Takes the oldest message; returns the CPU that wrote it and that CPU's count of messages
    /// written at the time.
    fn pop(&mut self) -> (u16, u64) {
        let front = self.bufs.front_mut().expect("read from a non-empty channel");
        *front -= 1;
        if *front == 0 {
            self.bufs.pop_front();
        }
        self.stats.read += 1;
        self.origins.pop_front().expect("a writer for each message")
    }
}

/// A channel kind's costs from the preset ([`Kernel::channel_costs`]), cycles.
struct ChannelCosts {
    /// One read, write or poll's own work.
    op: u64,
    /// A read of a message another CPU wrote, more.
    remote: u64,
    /// A message that waited behind `QUEUED_SINCE_MEAN` others, more.
    queued: u64,
}

impl<O: Observer> Kernel<O> {
    /// A new pipe or socket pair.
    pub fn channel(&mut self, kind: ChannelKind) -> ChannelId {
        self.channels.push(Channel {
            kind,
            bufs: VecDeque::new(),
            origins: VecDeque::new(),
            readers: VecDeque::new(),
            writers: VecDeque::new(),
            pollers: Vec::new(),
            slept: Vec::new(),
            line: None,
            stats: ChannelStats::default(),
        });
        ChannelId(self.channels.len() as u32 - 1)
    }

    /// What channel `ch` carried so far.
    pub fn channel_stats(&self, ch: ChannelId) -> ChannelStats {
        self.channels[ch.0 as usize].stats
    }

    /// The preset's costs of a `kind` channel: an operation's own work besides the system
    /// call, the line transfer and any wake-up (`pipe_op`, `socket_op`), what reading a message
    /// another CPU wrote adds (`pipe_remote`, `socket_remote`), and what a message that waited
    /// behind `QUEUED_SINCE_MEAN` others adds (`pipe_queued`, `socket_queued`); the same under
    /// every policy.
    fn channel_costs(&self, kind: ChannelKind) -> ChannelCosts {
        let c = &self.costs;
        let (op, remote, queued) = match kind {
            ChannelKind::Pipe { .. } => (&c.pipe_op, &c.pipe_remote, &c.pipe_queued),
            ChannelKind::Socket { .. } => (&c.socket_op, &c.socket_remote, &c.socket_queued),
        };
        ChannelCosts { op: op.cycles, remote: remote.cycles, queued: queued.cycles }
    }

    /// What a message read now adds for the `since` messages its writer's CPU wrote after it
    /// (mechanism `queued-messages`): `queued` scaled by `since`, whole from
    /// `QUEUED_SINCE_MEAN` on.
    fn queued_cycles(&self, queued: u64, since: u64) -> u64 {
        if !self.config.mechanisms.is_on(crate::mechanisms::Mechanism::QueuedMessages) {
            return 0;
        }
        let mean = tlblab_sim::machine::raw::QUEUED_SINCE_MEAN;
        // u128: a large figure times a count near the mean must not overflow.
        (u128::from(queued) * u128::from(since.min(mean)) / u128::from(mean)) as u64
    }

    /// The channel's line comes to `cpu` (a transfer if another CPU touched it last), and the
    /// operation's own work.
    fn channel_op(&mut self, cpu: CpuId, ch: ChannelId) -> u64 {
        let c = &mut self.channels[ch.0 as usize];
        let from = c.line.replace(cpu.0);
        let kind = c.kind;
        self.channel_costs(kind).op + self.line_move_cycles(from, cpu.0)
    }

    /// `try_to_wake_up()` of `w` by `t` on `cpu` (a sync wake-up, placed by
    /// [`Kernel::select_task_rq_fair`]): its cycles on the waker.
    fn channel_wake(&mut self, cpu: CpuId, t: TaskId, w: TaskId) -> u64 {
        let prev = usize::from(self.tasks[w.0 as usize].cpu.0);
        // ttwu_runnable(): a delayed sleeper (DELAY_DEQUEUE) is still queued, and woken there.
        let queued = self.fair_class() && self.delayed(w);
        let target = if queued { prev } else { self.select_task_rq_fair(t, w, usize::from(cpu.0)) };
        if target != prev {
            self.tasks[w.0 as usize].cpu = CpuId(target as u16);
            self.tasks[w.0 as usize].report.migrations += 1;
        }
        self.try_to_wake_up(cpu, w)
    }

    /// Sleeps `t` in the system call `call`, retried from its body when woken. NOTE: the
    /// check that found no data or no room is not charged (only the retry is).
    fn channel_sleep(&mut self, cpu: CpuId, t: TaskId, call: Syscall) -> Step {
        self.push_frame(t, Frame::Syscall { call: Some(call), phase: Phase::Body });
        self.tasks[t.0 as usize].state = TaskState::Blocked;
        self.schedule(cpu)
    }

    /// `write()` of one message to `ch`.
    pub(super) fn sys_channel_write(&mut self, cpu: CpuId, t: TaskId, ch: ChannelId) -> Step {
        let mut cycles = self.channel_op(cpu, ch);
        let c = &mut self.channels[ch.0 as usize];
        if c.full() {
            c.stats.writer_sleeps += 1;
            c.writers.push_back(t);
            if !c.slept.contains(&t) {
                c.slept.push(t);
            }
            return self.channel_sleep(cpu, t, Syscall::ChannelWrite { ch });
        }
        let was_empty = c.empty();
        let written = &mut self.messages_written[usize::from(cpu.0)];
        *written += 1;
        c.push(cpu.0, *written);
        let had_slept = match c.slept.iter().position(|&w| w == t) {
            Some(i) => {
                c.slept.swap_remove(i);
                true
            }
            None => false,
        };
        let mut woken = Vec::new();
        match c.kind {
            // pipe_write(): the reader only when the pipe was empty; the next writer when
            // this one had slept (wake_next_writer) and the pipe is not full.
            ChannelKind::Pipe { .. } => {
                if was_empty {
                    woken.extend(c.readers.pop_front());
                }
                if had_slept && !c.full() {
                    woken.extend(c.writers.pop_front());
                }
            }
            // sk_data_ready(): every write wakes a sleeping reader.
            ChannelKind::Socket { .. } => woken.extend(c.readers.pop_front()),
        }
        woken.append(&mut c.pollers);
        for w in woken {
            cycles += self.channel_wake(cpu, t, w);
        }
        self.push_frame(t, Frame::Syscall { call: None, phase: Phase::Exit });
        Step::Spend(cycles, super::Mode::Sys)
    }

    /// `read()` of one message from `ch`.
    pub(super) fn sys_channel_read(&mut self, cpu: CpuId, t: TaskId, ch: ChannelId) -> Step {
        let mut cycles = self.channel_op(cpu, ch);
        let c = &mut self.channels[ch.0 as usize];
        if c.empty() {
            c.stats.reader_sleeps += 1;
            c.readers.push_back(t);
            return self.channel_sleep(cpu, t, Syscall::ChannelRead { ch });
        }
        let was_full = c.full();
        let used = c.bufs.len();
        let kind = c.kind;
        let (writer, written) = c.pop();
        // What the writer's CPU left in its cache, the reader misses on; and what it wrote
        // since pushed this message out of that cache.
        let remote = writer != cpu.0;
        let since = self.messages_written[usize::from(writer)] - written;
        let freed = c.bufs.len() < used;
        let while_full = self.policy.pipe_wakes_writer_while_full;
        let woken: Vec<TaskId> = match c.kind {
            // pipe_read(): one (exclusive) writer if the pipe was full when the read began and
            // (6.14+) the read freed a buffer of it; 5.5–6.13 even if it freed none.
            ChannelKind::Pipe { .. } if was_full && (freed || while_full) => {
                c.writers.pop_front().into_iter().collect()
            }
            ChannelKind::Pipe { .. } => Vec::new(),
            // unix_write_space() on the freed skb: every writer, once at a quarter of sndbuf.
            ChannelKind::Socket { sndbuf, truesize } => {
                if c.bufs.len() as u64 * truesize * 4 <= sndbuf {
                    c.writers.drain(..).collect()
                } else {
                    Vec::new()
                }
            }
        };
        let costs = self.channel_costs(kind);
        if remote {
            cycles += costs.remote;
        }
        cycles += self.queued_cycles(costs.queued, since);
        for w in woken {
            cycles += self.channel_wake(cpu, t, w);
        }
        self.push_frame(t, Frame::Syscall { call: None, phase: Phase::Exit });
        Step::Spend(cycles, super::Mode::Sys)
    }

    /// `poll(POLLIN)` on `ch`: returns once it holds data, which stays there.
    pub(super) fn sys_channel_poll(&mut self, cpu: CpuId, t: TaskId, ch: ChannelId) -> Step {
        let cycles = self.channel_op(cpu, ch);
        let c = &mut self.channels[ch.0 as usize];
        if c.empty() {
            c.pollers.push(t);
            return self.channel_sleep(cpu, t, Syscall::ChannelPoll { ch });
        }
        self.push_frame(t, Frame::Syscall { call: None, phase: Phase::Exit });
        Step::Spend(cycles, super::Mode::Sys)
    }
}
