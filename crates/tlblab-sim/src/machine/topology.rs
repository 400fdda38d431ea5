//! `[topology]`: sockets and SMT, for the kernel model's cache-line transfers between sockets
//! (docs/kernel-model.md, "The cost of writing mm_cpumask").

use super::raw::KernelFigure;
use serde::{Deserialize, Serialize};

/// How the CPUs are packaged. Absent from a preset: one socket, every transfer costs
/// `[kernel] cache_line_transfer`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTopology {
    /// Sockets (packages) the CPUs are spread over.
    pub sockets: u32,
    /// Hardware threads per core (2 with SMT).
    pub threads_per_core: u32,
    /// A cache line moved from a core of another socket (over UPI / Infinity Fabric), resolved
    /// like the `[kernel]` figures.
    pub cache_line_transfer_remote: KernelFigure,
    /// Where the socket and thread counts come from.
    pub source: String,
}

impl RawTopology {
    /// The socket of CPU `cpu` of `nr_cpus`, numbered as Linux enumerates a multi-socket Intel
    /// or AMD server: the first thread of every core, socket by socket, then the second threads
    /// in the same order (CPU `c` and `c + nr_cpus / threads_per_core` are SMT siblings).
    pub fn socket_of(&self, cpu: usize, nr_cpus: usize) -> u32 {
        let cores = (nr_cpus / self.threads_per_core.max(1) as usize).max(1);
        let per_socket = cores.div_ceil(self.sockets.max(1) as usize).max(1);
        ((cpu % cores) / per_socket) as u32
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
            cache_line_transfer_remote: KernelFigure::in_cycles(400, "test", true),
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
}
