//! `[topology]`: sockets, last-level caches and SMT, for the kernel model's cache-line transfers
//! and wake-up placement (docs/kernel-model.md, "The cost of writing mm_cpumask", "Where a
//! woken task runs").

use super::raw::KernelFigure;
use serde::{Deserialize, Serialize};

/// How the CPUs are packaged. Absent from a preset: one socket, one last-level cache, every
/// transfer costs `[kernel] cache_line_transfer`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTopology {
    /// Sockets (packages) the CPUs are spread over.
    pub sockets: u32,
    /// Hardware threads per core (2 with SMT).
    pub threads_per_core: u32,
    /// Cores per socket. Absent: a run's CPUs are taken as every thread of every core (its CPU
    /// count over `threads_per_core` cores); given, a run with fewer CPUs than threads uses the
    /// first thread of each core first, as Linux numbers them (36 CPUs of a 36-core part with
    /// SMT: one per core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores_per_socket: Option<u32>,
    /// Cores that share one last-level cache, where a socket has several (AMD's CCX: 8 cores
    /// on Zen 3 and Zen 4). Absent: one LLC per socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores_per_llc: Option<u32>,
    /// A cache line moved between two cores of one LLC, resolved like the `[kernel]` figures;
    /// with `cores_per_llc` (whose `[kernel] cache_line_transfer` is then a move between two
    /// LLCs of a socket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_line_transfer_llc: Option<KernelFigure>,
    /// A cache line moved from a core of another socket (over UPI / Infinity Fabric), resolved
    /// like the `[kernel]` figures; needed with more than one socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_line_transfer_remote: Option<KernelFigure>,
    /// Where the counts come from.
    pub source: String,
}

impl RawTopology {
    /// The cores a run of `nr_cpus` CPUs spreads over, and cores per socket.
    fn cores(&self, nr_cpus: usize) -> (usize, usize) {
        let sockets = self.sockets.max(1) as usize;
        if let Some(per_socket) = self.cores_per_socket.map(|n| n.max(1) as usize) {
            return (sockets * per_socket, per_socket);
        }
        let cores = (nr_cpus / self.threads_per_core.max(1) as usize).max(1);
        (cores, cores.div_ceil(sockets).max(1))
    }

    /// The socket of CPU `cpu` of `nr_cpus`, numbered as Linux enumerates a multi-socket Intel
    /// or AMD server: the first thread of every core, socket by socket, then the second threads
    /// in the same order (CPU `c` and `c + nr_cpus / threads_per_core` are SMT siblings).
    pub fn socket_of(&self, cpu: usize, nr_cpus: usize) -> u32 {
        let (cores, per_socket) = self.cores(nr_cpus);
        ((cpu % cores) / per_socket) as u32
    }

    /// The last-level cache of CPU `cpu` of `nr_cpus`, numbered over the machine: cores in
    /// order, `cores_per_llc` to a cache, no cache across two sockets (the socket's own, without
    /// `cores_per_llc`).
    pub fn llc_of(&self, cpu: usize, nr_cpus: usize) -> u32 {
        let (cores, per_socket) = self.cores(nr_cpus);
        let Some(per_llc) = self.cores_per_llc.map(|n| n.max(1) as usize) else {
            return self.socket_of(cpu, nr_cpus);
        };
        let core = cpu % cores;
        let llcs_per_socket = per_socket.div_ceil(per_llc);
        ((core / per_socket) * llcs_per_socket + (core % per_socket) / per_llc) as u32
    }

    /// Every figure of the section with its key, to resolve.
    pub(crate) fn figures_mut(
        &mut self,
    ) -> impl Iterator<Item = (&'static str, &mut KernelFigure)> {
        [
            ("cache_line_transfer_llc", self.cache_line_transfer_llc.as_mut()),
            ("cache_line_transfer_remote", self.cache_line_transfer_remote.as_mut()),
        ]
        .into_iter()
        .filter_map(|(name, f)| Some((name, f?)))
    }

    pub(crate) fn check(&self) -> Result<(), String> {
        if self.sockets == 0 || self.sockets > 64 {
            return Err(format!("`[topology] sockets = {}`: 1 to 64", self.sockets));
        }
        if !(1..=8).contains(&self.threads_per_core) {
            return Err(format!(
                "`[topology] threads_per_core = {}`: 1 to 8",
                self.threads_per_core
            ));
        }
        if let Some(n) = self.cores_per_socket {
            if !(1..=4096).contains(&n) {
                return Err(format!("`[topology] cores_per_socket = {n}`: 1 to 4096"));
            }
        }
        if let Some(n) = self.cores_per_llc {
            if !(1..=1024).contains(&n) {
                return Err(format!("`[topology] cores_per_llc = {n}`: 1 to 1024"));
            }
        }
        if self.cores_per_llc.is_some() != self.cache_line_transfer_llc.is_some() {
            return Err("`[topology] cores_per_llc` and `cache_line_transfer_llc` go together: \
                        a move within an LLC costs less than `[kernel] cache_line_transfer`, \
                        which is then a move between LLCs"
                .into());
        }
        if self.sockets > 1 && self.cache_line_transfer_remote.is_none() {
            return Err(format!(
                "`[topology] sockets = {}` needs `cache_line_transfer_remote` (a line moved \
                 between sockets)",
                self.sockets
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_sockets_smt() -> RawTopology {
        RawTopology {
            sockets: 2,
            threads_per_core: 2,
            cores_per_socket: None,
            cores_per_llc: None,
            cache_line_transfer_llc: None,
            cache_line_transfer_remote: Some(KernelFigure::in_cycles(400, "test", true)),
            source: "test".into(),
        }
    }

    #[test]
    fn linux_numbers_first_threads_socket_by_socket_then_siblings() {
        // 2 × 26 cores × 2 threads: CPUs 0–25 and 52–77 on socket 0, 26–51 and 78–103 on 1.
        let t = two_sockets_smt();
        let sockets: Vec<u32> =
            [0, 25, 26, 51, 52, 77, 78, 103].iter().map(|&c| t.socket_of(c, 104)).collect();
        assert_eq!(sockets, [0, 0, 1, 1, 0, 0, 1, 1]);
    }

    /// A 36-core EPYC Milan with SMT: CCXs of 8 cores, the last one of 4; a CPU and its SMT
    /// sibling share theirs.
    #[test]
    fn ccxs_group_cores_in_order_and_siblings_share_theirs() {
        let t = RawTopology {
            sockets: 1,
            cores_per_llc: Some(8),
            cache_line_transfer_llc: Some(KernelFigure::in_cycles(50, "test", true)),
            cache_line_transfer_remote: None,
            ..two_sockets_smt()
        };
        let llcs: Vec<u32> =
            [0, 7, 8, 31, 32, 35, 36, 44, 71].iter().map(|&c| t.llc_of(c, 72)).collect();
        assert_eq!(llcs, [0, 0, 1, 3, 4, 4, 0, 1, 4]);
        assert!(t.check().is_ok());
        // Told the part has 36 cores, a run of 36 CPUs is one per core: the same CCXs; not
        // told, it is taken as 18 cores of two threads (CPU 20 is core 2's sibling).
        let cores = RawTopology { cores_per_socket: Some(36), ..t.clone() };
        assert_eq!([0, 8, 20, 35].map(|c| cores.llc_of(c, 36)), [0, 1, 2, 4]);
        assert_eq!([0, 8, 20, 35].map(|c| cores.llc_of(c, 72)), [0, 1, 2, 4]);
        assert_eq!([0, 8, 20, 35].map(|c| t.llc_of(c, 36)), [0, 1, 0, 2]);
        // Without cores_per_llc the LLC is the socket; two sockets keep their LLCs apart.
        let two = RawTopology { cores_per_llc: Some(16), ..t.clone() };
        assert_eq!(two.llc_of(20, 72), 1);
        let sockets = RawTopology { sockets: 2, ..two_sockets_smt() };
        assert_eq!([0, 26, 52].map(|c| sockets.llc_of(c, 104)), [0, 1, 0]);
        let split = RawTopology {
            sockets: 2,
            cores_per_llc: Some(8),
            cache_line_transfer_llc: t.cache_line_transfer_llc.clone(),
            ..two_sockets_smt()
        };
        // 26 cores a socket: 4 LLCs of 8, 8, 8, 2; socket 1 starts at LLC 4.
        assert_eq!([0, 24, 25, 26, 51].map(|c| split.llc_of(c, 104)), [0, 3, 3, 4, 7]);
    }

    #[test]
    fn an_llc_without_its_transfer_or_two_sockets_without_theirs_are_refused() {
        let t = RawTopology { cores_per_llc: Some(8), ..two_sockets_smt() };
        assert!(t.check().unwrap_err().contains("cache_line_transfer_llc"));
        let t = RawTopology { cache_line_transfer_remote: None, ..two_sockets_smt() };
        assert!(t.check().unwrap_err().contains("cache_line_transfer_remote"));
        let t = RawTopology { cores_per_llc: Some(0), ..two_sockets_smt() };
        assert!(t.check().unwrap_err().contains("1 to 1024"));
    }
}
