//! `hackbench`: rt-tests' `src/hackbench/hackbench.c` (v2.x), step for step.
//!
//! `--groups G` groups (default 10), each of `--fds F` receivers (default 20) and F senders;
//! every receiver has its own pipe or socket pair (`--pipe`: pipes; default: `socketpair(AF_UNIX,
//! SOCK_STREAM)`), and each sender holds the write ends of all F of its group. A sender loops
//! `--loops L` times (default 100) over the F receivers, writing `--datasize` bytes (default
//! 100) to each; a receiver reads F·L messages. Workers are forked processes (default: one mm
//! each) or, with `--threads` (`--mode threads` here), threads of the one hackbench process
//! (one mm for all). The start handshake: each worker writes one byte to the `readyfds` pipe
//! and polls `wakefds`; the main task reads one byte per worker, takes the start time, writes
//! one byte to `wakefds` (which wakes every poller), then reaps the workers (`wait()` or
//! `pthread_join()`) and takes the stop time. The metric is that span ("Time:").
//!
//! Placement: worker k (receivers then senders, group by group, as hackbench creates them) on
//! CPU k mod N, and the main task on the next. A worker moves only when a wake-up places it
//! on another CPU (`select_task_rq_fair()`, `kernel/wake.rs`). NOTE: the model has no load
//! balancing.

use super::Params;
use crate::ids::TaskId;
use crate::kernel::Kernel;
use crate::observer::Observer;
use crate::program::{Action, Env, Program, Syscall};
use crate::{ChannelId, ChannelKind};
use tlblab_types::CpuId;

/// `PIPE_DEF_BUFFERS`: a pipe's page buffers (64 KiB with 4 KiB pages).
pub const PIPE_DEF_BUFFERS: u32 = 16;

/// `PAGE_SIZE`.
const PAGE_SIZE: u64 = 4096;

/// `net.core.wmem_default` (`SK_WMEM_MAX` on 64-bit: 212,992 bytes), an AF_UNIX socket's
/// `sk_sndbuf` unless `SO_SNDBUF` is set (hackbench sets none).
pub const SK_WMEM_DEFAULT: u64 = 212_992;

/// `SKB_DATA_ALIGN(sizeof(struct sk_buff))` on x86-64 (232 bytes rounded to 64). UNVERIFIED:
/// the struct's size depends on the configuration.
const SKB_HEAD: u64 = 256;

/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))` on x86-64. UNVERIFIED, as [`SKB_HEAD`].
const SKB_SHINFO: u64 = 320;

/// `skb->truesize` of an skb holding `datasize` bytes in its linear area (`__alloc_skb()`: the
/// data and the shared info rounded up to a kmalloc size, plus the `sk_buff`): 768 bytes for
/// hackbench's 100.
pub fn skb_truesize(datasize: u64) -> u64 {
    let data = datasize.div_ceil(64) * 64 + SKB_SHINFO;
    // kmalloc caches: 96, 192 and the powers of two.
    let slab = match data {
        0..=96 => 96,
        97..=128 => 128,
        129..=192 => 192,
        n => n.next_power_of_two(),
    };
    slab - SKB_SHINFO + SKB_HEAD + SKB_SHINFO
}

/// hackbench's largest `--datasize` here: one page, so that a pipe write is atomic
/// (`PIPE_BUF`) and a socket write one linear skb.
pub const MAX_DATASIZE: u64 = tlblab_types::bounds::DATASIZE.max;

/// The kind of the channels hackbench creates with `fdpair()`, carrying `datasize`-byte
/// messages.
fn fdpair_kind(p: &Params, datasize: u64) -> ChannelKind {
    if p.pipe {
        ChannelKind::Pipe { buffers: PIPE_DEF_BUFFERS, per_page: (PAGE_SIZE / datasize) as u32 }
    } else {
        ChannelKind::Socket { sndbuf: SK_WMEM_DEFAULT, truesize: skb_truesize(datasize) }
    }
}

/// What [`install`] made: the data channels of each group (receiver i reads `data[g][i]`).
pub struct Installed {
    /// Per group, the receivers' channels.
    pub data: Vec<Vec<ChannelId>>,
    /// Every worker, in creation order.
    pub workers: Vec<TaskId>,
    /// The main task.
    pub main: TaskId,
}

/// Installs hackbench: the workers, then the main task.
pub fn install<O: Observer>(k: &mut Kernel<O>, p: &Params) -> Installed {
    // readyfds and wakefds carry one byte at a time.
    let ready = k.channel(fdpair_kind(p, 1));
    let wake = k.channel(fdpair_kind(p, 1));
    let kind = fdpair_kind(p, p.datasize);
    let n = k.nr_cpus();
    let mut workers = Vec::new();
    let mut data = Vec::new();
    let spawn = |k: &mut Kernel<O>, program: Box<dyn Program>, workers: &mut Vec<TaskId>| {
        let cpu = CpuId((workers.len() % n) as u16);
        let t = match (p.threads, workers.first()) {
            (true, Some(&first)) => k.spawn_thread(first, program, cpu, true),
            _ => k.spawn_process(program, cpu, true),
        };
        workers.push(t);
    };
    for _ in 0..p.groups {
        let chans: Vec<ChannelId> = (0..p.fds).map(|_| k.channel(kind)).collect();
        for &ch in &chans {
            let r = Receiver { ready, wake, ch, left: p.fds as u64 * p.loops, step: 0 };
            spawn(k, Box::new(r), &mut workers);
        }
        for _ in 0..p.fds {
            let s = Sender { ready, wake, out: chans.clone(), loops: p.loops, i: 0, j: 0, step: 0 };
            spawn(k, Box::new(s), &mut workers);
        }
        data.push(chans);
    }
    let main_prog =
        Box::new(Main { ready, wake, children: workers.clone(), read: 0, reaped: 0, step: 0 });
    let cpu = CpuId((workers.len() % n) as u16);
    let main = match (p.threads, workers.first()) {
        (true, Some(&first)) => k.spawn_thread(first, main_prog, cpu, true),
        _ => k.spawn_process(main_prog, cpu, true),
    };
    Installed { data, workers, main }
}

/// `ready()`: one byte to `readyfds`, then `poll()` on `wakefds`.
fn ready(step: u8, ready: ChannelId, wake: ChannelId) -> Option<Action> {
    match step {
        0 => Some(Action::Syscall(Syscall::ChannelWrite { ch: ready })),
        1 => Some(Action::Syscall(Syscall::ChannelPoll { ch: wake })),
        _ => None,
    }
}

/// `receiver()`: ready, then F·L reads.
struct Receiver {
    ready: ChannelId,
    wake: ChannelId,
    ch: ChannelId,
    left: u64,
    step: u8,
}

impl Program for Receiver {
    fn next(&mut self, _env: &mut Env<'_>) -> Action {
        if let Some(a) = ready(self.step, self.ready, self.wake) {
            self.step += 1;
            return a;
        }
        if self.left == 0 {
            return Action::Exit;
        }
        self.left -= 1;
        Action::Syscall(Syscall::ChannelRead { ch: self.ch })
    }
}

/// `sender()`: ready, then L rounds of one write to each of the group's F receivers.
struct Sender {
    ready: ChannelId,
    wake: ChannelId,
    out: Vec<ChannelId>,
    loops: u64,
    i: u64,
    j: usize,
    step: u8,
}

impl Program for Sender {
    fn next(&mut self, _env: &mut Env<'_>) -> Action {
        if let Some(a) = ready(self.step, self.ready, self.wake) {
            self.step += 1;
            return a;
        }
        if self.i == self.loops {
            return Action::Exit;
        }
        let ch = self.out[self.j];
        self.j += 1;
        if self.j == self.out.len() {
            self.j = 0;
            self.i += 1;
        }
        Action::Syscall(Syscall::ChannelWrite { ch })
    }
}

/// `main()`: read a byte per worker, start the clock, kick them off, reap them, stop.
struct Main {
    ready: ChannelId,
    wake: ChannelId,
    children: Vec<TaskId>,
    read: usize,
    reaped: usize,
    step: u8,
}

impl Program for Main {
    fn next(&mut self, _env: &mut Env<'_>) -> Action {
        if self.read < self.children.len() {
            self.read += 1;
            return Action::Syscall(Syscall::ChannelRead { ch: self.ready });
        }
        match self.step {
            // gettimeofday(&start): the metric's first mark.
            0 => {
                self.step = 1;
                Action::Op
            }
            1 => {
                self.step = 2;
                Action::Syscall(Syscall::ChannelWrite { ch: self.wake })
            }
            2 if self.reaped < self.children.len() => {
                let child = self.children[self.reaped];
                self.reaped += 1;
                Action::Syscall(Syscall::Wait { child })
            }
            // gettimeofday(&stop).
            2 => {
                self.step = 3;
                Action::Op
            }
            _ => Action::Exit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KernelConfig, Mechanism, Policy, TraceLog};
    use std::collections::BTreeSet;
    use tlblab_sim::machine::MachineSpec;

    fn kernel(cpus: usize) -> Kernel<TraceLog> {
        kernel_under("linux-6.18", cpus)
    }

    fn kernel_under(policy: &str, cpus: usize) -> Kernel<TraceLog> {
        kernel_on(&tlblab_sim::machine::builtin("zen3").unwrap(), policy, cpus)
    }

    fn kernel_on(spec: &MachineSpec, policy: &str, cpus: usize) -> Kernel<TraceLog> {
        let policy = Policy::named(policy).unwrap();
        Kernel::new(spec, &policy, KernelConfig::new(cpus, 3), TraceLog::default()).unwrap()
    }

    /// Writes one message to its channel, again and again.
    struct Writer(ChannelId);
    impl Program for Writer {
        fn next(&mut self, _: &mut Env<'_>) -> Action {
            Action::Syscall(Syscall::ChannelWrite { ch: self.0 })
        }
    }

    fn small(pipe: bool, threads: bool) -> Params {
        Params { groups: 2, fds: 3, loops: 300, pipe, threads, ..Params::default() }
    }

    /// hackbench.c: each receiver reads `num_fds * loops` messages, F·L, one from each sender
    /// per loop; every message written is read.
    #[test]
    fn every_receiver_gets_f_times_l_messages_over_pipes_and_sockets() {
        for pipe in [true, false] {
            let p = small(pipe, false);
            let mut k = kernel(4);
            let inst = install(&mut k, &p);
            assert!(k.run(), "every task finished");
            for ch in inst.data.iter().flatten() {
                let s = k.channel_stats(*ch);
                assert_eq!((s.written, s.read), (900, 900), "pipe {pipe}: {s:?}");
            }
            assert_eq!(inst.workers.len(), 2 * 2 * 3);
        }
    }

    /// With 2,700 messages per receiver (3 senders × 900) and a pipe that holds 640 (16 pages
    /// of 40), senders must sleep on the full pipe; on one CPU a receiver also sleeps on an
    /// empty one.
    #[test]
    fn senders_block_on_a_full_pipe() {
        let p = Params { groups: 1, fds: 3, loops: 900, pipe: true, ..Params::default() };
        let mut k = kernel(2);
        let inst = install(&mut k, &p);
        assert!(k.run());
        let s = k.channel_stats(inst.data[0][0]);
        assert_eq!(s.read, 2700);
        assert!(s.writer_sleeps > 0, "{s:?}");
    }

    /// `--threads`: one mm for every task (pthread_create in the one process); processes: one
    /// per worker and one for main.
    #[test]
    fn thread_mode_has_one_mm_process_mode_one_per_task() {
        for (threads, mms) in [(true, 1), (false, 2 * 2 * 3 + 1)] {
            let mut k = kernel(4);
            let inst = install(&mut k, &small(true, threads));
            let all: BTreeSet<_> =
                inst.workers.iter().chain([&inst.main]).map(|&t| k.task_mm(t).unwrap()).collect();
            assert_eq!(all.len(), mms, "threads {threads}");
        }
    }

    /// 100 bytes: 128 of data + 320 of skb_shared_info = 448, a kmalloc-512 object; truesize
    /// = 512 − 320 + 256 (sk_buff) + 320 = 768. A socket then takes writes while
    /// 768·n < 212,992, 278 of them, and wakes its writers again at 69 (69 · 768 · 4 ≤
    /// 212,992 < 70 · 768 · 4).
    #[test]
    fn socket_capacity_and_write_space_follow_from_truesize() {
        assert_eq!(skb_truesize(100), 768);
        assert_eq!(skb_truesize(1), 768);
        let t = skb_truesize(100);
        let capacity = SK_WMEM_DEFAULT.div_ceil(t);
        assert_eq!(capacity, 278);
        assert!(69 * t * 4 <= SK_WMEM_DEFAULT && 70 * t * 4 > SK_WMEM_DEFAULT);
        // The model: one receiver that never reads; one sender fills the socket and sleeps.
        let mut k = kernel(1);
        let ch = k.channel(ChannelKind::Socket { sndbuf: SK_WMEM_DEFAULT, truesize: t });
        k.spawn_process(Box::new(Writer(ch)), CpuId(0), true);
        k.run_until(tlblab_types::Cycles(50_000_000));
        let s = k.channel_stats(ch);
        assert_eq!((s.written, s.writer_sleeps), (capacity, 1));
    }

    /// A pipe of 16 pages holds 16 · ⌊4096 / 100⌋ = 640 messages of 100 bytes (writes merge
    /// into the last page while they fit).
    #[test]
    fn a_pipe_holds_sixteen_pages_of_merged_messages() {
        let mut k = kernel(1);
        let ch = k.channel(ChannelKind::Pipe { buffers: PIPE_DEF_BUFFERS, per_page: 40 });
        k.spawn_process(Box::new(Writer(ch)), CpuId(0), true);
        k.run_until(tlblab_types::Cycles(50_000_000));
        assert_eq!(k.channel_stats(ch).written, 640);
    }

    /// pipe_read() and a full pipe's sleeping writer: 6.14+ (aaec5a95d596) wakes it only when a
    /// read empties one of the 16 pages (every 40th read of 100-byte messages here), so a
    /// writer filling the pipe again sleeps once per page read; 5.5–6.13 every read that began
    /// with the pipe full woke it, and it found no room and slept again until a page was free.
    #[test]
    fn a_full_pipes_writer_is_woken_when_a_page_is_freed_and_before_6_14_at_every_read() {
        /// Reads `left` messages, each after a pause long enough for the writer to fill the
        /// pipe again (the first one for it to fill the pipe), and exits.
        struct R(ChannelId, u64, bool);
        impl Program for R {
            fn next(&mut self, _: &mut Env<'_>) -> Action {
                self.2 = !self.2;
                if self.2 {
                    return Action::Compute { cycles: 20_000_000 };
                }
                if self.1 == 0 {
                    return Action::Exit;
                }
                self.1 -= 1;
                Action::Syscall(Syscall::ChannelRead { ch: self.0 })
            }
        }
        // 3 pages' worth of reads (120), each page's 40 reads in turn.
        for (policy, sleeps) in
            [("linux-6.18", 1 + 3), ("linux-6.18+pipe-wake-while-full", 1 + 120)]
        {
            let mut k = kernel_under(policy, 2);
            let ch = k.channel(ChannelKind::Pipe { buffers: PIPE_DEF_BUFFERS, per_page: 40 });
            k.spawn_process(Box::new(Writer(ch)), CpuId(0), false);
            k.spawn_process(Box::new(R(ch, 120, false)), CpuId(1), true);
            assert!(k.run(), "{policy}");
            let s = k.channel_stats(ch);
            assert_eq!((s.read, s.written), (120, 640 + 120), "{policy}");
            assert_eq!(s.writer_sleeps, sleeps, "{policy}: {s:?}");
        }
    }

    /// A message read on another CPU than the one that wrote it costs its reader the preset's
    /// `pipe_remote` or `socket_remote` more: 10 messages written on CPU 0, then read on CPU 1
    /// (where the channel's line also comes once, zen3's 200 cycles) or on CPU 0.
    #[test]
    fn a_message_written_on_another_cpu_costs_its_reader_the_remote_read() {
        /// Writes `left` messages and exits.
        struct W(ChannelId, u32);
        impl Program for W {
            fn next(&mut self, _: &mut Env<'_>) -> Action {
                if self.1 == 0 {
                    return Action::Exit;
                }
                self.1 -= 1;
                Action::Syscall(Syscall::ChannelWrite { ch: self.0 })
            }
        }
        /// Waits until the writer is done, reads `left` messages and exits.
        struct R(ChannelId, u32, bool);
        impl Program for R {
            fn next(&mut self, _: &mut Env<'_>) -> Action {
                if !self.2 {
                    self.2 = true;
                    return Action::Compute { cycles: 10_000_000 };
                }
                if self.1 == 0 {
                    return Action::Exit;
                }
                self.1 -= 1;
                Action::Syscall(Syscall::ChannelRead { ch: self.0 })
            }
        }
        let text = include_str!("../../../../presets/zen3.toml").replacen(
            "[kernel]\n",
            "[kernel]\npipe_remote = { cycles = 3000, source = \"test\" }\n\
             socket_remote = { cycles = 5000, source = \"test\" }\n",
            1,
        );
        let spec = MachineSpec::from_toml(&text, "test").unwrap();
        let reader_sys = |kind: ChannelKind, on: u16| {
            let mut k = kernel_on(&spec, "linux-6.18", 2);
            let ch = k.channel(kind);
            k.spawn_process(Box::new(W(ch, 10)), CpuId(0), false);
            k.spawn_process(Box::new(R(ch, 10, false)), CpuId(on), true);
            assert!(k.run());
            assert_eq!(k.channel_stats(ch).read, 10);
            k.report().tasks.last().unwrap().sys_cycles
        };
        let pipe = ChannelKind::Pipe { buffers: PIPE_DEF_BUFFERS, per_page: 40 };
        let socket = ChannelKind::Socket { sndbuf: SK_WMEM_DEFAULT, truesize: skb_truesize(100) };
        assert_eq!(reader_sys(pipe, 1) - reader_sys(pipe, 0), 10 * 3000 + 200);
        assert_eq!(reader_sys(socket, 1) - reader_sys(socket, 0), 10 * 5000 + 200);
    }

    /// A queued message costs its read `socket_queued` more in proportion to the messages its
    /// writer's CPU wrote after it, whole from `QUEUED_SINCE_MEAN` (2,000) on, whatever channel
    /// they went to: with the figure at 2,000 cycles a message pays one cycle per message
    /// written in between, up to 2,000. A message read before the next is written pays nothing,
    /// and with the mechanism off nothing is charged.
    #[test]
    fn a_queued_message_costs_its_read_in_proportion_to_what_was_written_since() {
        /// Runs its list of channel calls, then exits.
        struct Script(Vec<Syscall>);
        impl Program for Script {
            fn next(&mut self, _: &mut Env<'_>) -> Action {
                match self.0.pop() {
                    Some(call) => Action::Syscall(call),
                    None => Action::Exit,
                }
            }
        }
        let text = include_str!("../../../../presets/zen3.toml").replacen(
            "[kernel]\n",
            "[kernel]\nsocket_queued = { cycles = 2000, source = \"test\" }\n",
            1,
        );
        let spec = MachineSpec::from_toml(&text, "test").unwrap();
        // A socket that never fills.
        let deep = ChannelKind::Socket { sndbuf: u64::MAX, truesize: 1 };
        // The task's system time running `calls` (in order) on one CPU, mechanism on or off.
        let sys = |calls: &dyn Fn(ChannelId, ChannelId) -> Vec<Syscall>, on: bool| {
            let mut config = KernelConfig::new(1, 3);
            if !on {
                config.mechanisms = config.mechanisms.without(Mechanism::QueuedMessages);
            }
            let policy = Policy::named("linux-6.18").unwrap();
            let mut k = Kernel::new(&spec, &policy, config, TraceLog::default()).unwrap();
            let (a, b) = (k.channel(deep), k.channel(deep));
            let mut script = calls(a, b);
            script.reverse();
            k.spawn_process(Box::new(Script(script)), CpuId(0), true);
            assert!(k.run());
            k.report().tasks.last().unwrap().sys_cycles
        };
        let charged = |calls: &dyn Fn(ChannelId, ChannelId) -> Vec<Syscall>| {
            sys(calls, true) - sys(calls, false)
        };
        let write = |ch| Syscall::ChannelWrite { ch };
        let read = |ch| Syscall::ChannelRead { ch };
        // 3,000 written, then read: message i (of 0..3000) waited behind 2,999 − i.
        let fill = |a, _| (0..3_000).map(|_| write(a)).chain((0..3_000).map(|_| read(a))).collect();
        let expected: u64 = (0..3_000u64).map(|i| (2_999 - i).min(2_000)).sum();
        assert_eq!(charged(&fill), expected);
        // Each read right after its write: nothing.
        let hot = |a, _| (0..100).flat_map(|_| [write(a), read(a)]).collect();
        assert_eq!(charged(&hot), 0);
        // One message, then 500 to another channel on the same CPU: 500 cycles when read.
        let other = |a, b| {
            let writes = (0..500).map(|_| write(b));
            std::iter::once(write(a)).chain(writes).chain([read(a)]).collect()
        };
        assert_eq!(charged(&other), 500);
    }

    /// The metric: main's two marks (start signal, last worker reaped) bound the timed span,
    /// which is shorter than the whole run (the ready handshake precedes it).
    #[test]
    fn time_is_the_span_from_the_start_signal_to_the_last_reap() {
        let p = small(false, false);
        let info = super::super::scenario("hackbench").unwrap();
        let mut k = kernel(4);
        info.install(&mut k, &p).unwrap();
        assert!(info.run(&mut k, &p));
        let r = k.report();
        let timed = info.metric.value(&r);
        let whole = r.micros(r.elapsed_cycles as f64) / 1e6;
        assert!(timed > 0.0 && timed < whole, "{timed} vs {whole}");
        let main = r.tasks.last().unwrap();
        assert_eq!(main.ops, 2);
    }
}
