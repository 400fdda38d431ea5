//! Per-CPU TLB state: `struct tlb_state` (`cpu_tlbstate`) and `struct tlb_state_shared`
//! (`cpu_tlbstate_shared`), and `choose_new_asid()`.

use crate::ids::{Asid, MmId, TlbGen, TLB_NR_DYN_ASIDS};
use serde::Serialize;

/// `cpu_tlbstate.loaded_mm`: the mm whose page tables are in CR3, or the marker the kernel
/// stores while CR3 is being changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum LoadedMm {
    /// An mm (possibly `init_mm`).
    Mm(MmId),
    /// `LOADED_MM_SWITCHING`: `switch_mm_irqs_off()` is between its store of the marker and
    /// its store of the new mm.
    Switching,
}

impl LoadedMm {
    /// The mm, unless switching.
    pub fn mm(self) -> Option<MmId> {
        match self {
            LoadedMm::Mm(mm) => Some(mm),
            LoadedMm::Switching => None,
        }
    }
}

/// `struct tlb_context`: which mm owns a dynamic ASID on this CPU, and the mm generation this
/// CPU's TLB is known to be up to date with for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TlbContext {
    /// `ctx_id` of the owning mm (0: none).
    pub ctx_id: u64,
    /// The TLB holds no entry older than this generation of that mm.
    pub tlb_gen: TlbGen,
}

/// `struct tlb_state` plus `cpu_tlbstate_shared.is_lazy`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TlbState {
    /// `loaded_mm`.
    pub loaded_mm: LoadedMm,
    /// `loaded_mm_asid`.
    pub loaded_mm_asid: Asid,
    /// `next_asid`: the round-robin cursor of `choose_new_asid()`.
    pub next_asid: u16,
    /// `ctxs[TLB_NR_DYN_ASIDS]`.
    pub ctxs: [TlbContext; TLB_NR_DYN_ASIDS as usize],
    /// `invalidate_other` (PTI): a kernel flush happened that other ASIDs did not see.
    pub invalidate_other: bool,
    /// `user_pcid_flush_mask` (PTI): bit kPCID set = flush that user PCID at the next return
    /// to user.
    pub user_pcid_flush_mask: u16,
    /// `cpu_tlbstate_shared.is_lazy` (its own cache line in the kernel: remote CPUs read it).
    pub is_lazy: bool,
}

/// What `choose_new_asid()` decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewAsid {
    /// The ASID to load.
    pub asid: Asid,
    /// Whether CR3 must be written without NOFLUSH (the ASID's TLB entries are stale).
    pub need_flush: bool,
}

impl TlbState {
    /// The state `initialize_tlbstate_and_flush()` leaves at CPU bring-up: `init_mm` in ASID 0
    /// at `init_mm`'s generation, the other slots free, `next_asid = 1`.
    pub fn new(init_mm_ctx_id: u64, init_mm_tlb_gen: TlbGen) -> TlbState {
        let mut ctxs = [TlbContext::default(); TLB_NR_DYN_ASIDS as usize];
        ctxs[0] = TlbContext { ctx_id: init_mm_ctx_id, tlb_gen: init_mm_tlb_gen };
        TlbState {
            loaded_mm: LoadedMm::Mm(MmId::INIT_MM),
            loaded_mm_asid: Asid(0),
            next_asid: 1,
            ctxs,
            invalidate_other: false,
            user_pcid_flush_mask: 0,
            is_lazy: false,
        }
    }

    /// `choose_new_asid(next, next_tlb_gen)`.
    ///
    /// 1. Without PCID, ASID 0, always flushed.
    /// 2. A global ASID is always up to date.
    /// 3. (PTI) drop the other slots if a kernel flush poisoned them.
    /// 4. A slot that already belongs to `next` is reused, flushed only if behind.
    /// 5. Otherwise the next slot in round-robin order is taken and flushed.
    ///
    /// NOTE: the reuse of step 4 does not refresh the slot's recency: allocation is pure
    /// round-robin, not LRU, so a busy mm can lose its slot to a seventh mm.
    pub fn choose_new_asid(
        &mut self,
        next_ctx_id: u64,
        next_tlb_gen: TlbGen,
        pcid: bool,
        global_asid: Option<Asid>,
    ) -> NewAsid {
        if !pcid {
            return NewAsid { asid: Asid(0), need_flush: true };
        }
        if let Some(asid) = global_asid {
            return NewAsid { asid, need_flush: false };
        }
        if self.invalidate_other {
            self.clear_asid_other();
        }
        for asid in 0..TLB_NR_DYN_ASIDS {
            let ctx = self.ctxs[usize::from(asid)];
            if ctx.ctx_id == next_ctx_id {
                return NewAsid { asid: Asid(asid), need_flush: ctx.tlb_gen < next_tlb_gen };
            }
        }
        // `this_cpu_add_return(next_asid, 1) - 1`, wrapping to 0 after the last slot.
        let mut asid = self.next_asid;
        self.next_asid += 1;
        if asid >= TLB_NR_DYN_ASIDS {
            asid = 0;
            self.next_asid = 1;
        }
        NewAsid { asid: Asid(asid), need_flush: true }
    }

    /// `clear_asid_other()`: forget every dynamic ASID but the loaded one, so that each is
    /// flushed when next used (PTI kernel flushes do not reach other PCIDs).
    pub fn clear_asid_other(&mut self) {
        for asid in 0..TLB_NR_DYN_ASIDS {
            if asid != self.loaded_mm_asid.0 {
                self.ctxs[usize::from(asid)].ctx_id = 0;
            }
        }
        self.invalidate_other = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The round-robin reuse of the tlb.c comment: with six slots, a seventh mm takes slot 0
    /// (the first reused after the wrap), even if slot 0's mm was the one used last.
    #[test]
    fn round_robin_asid_reuse_after_six_mms() {
        let mut s = TlbState::new(1, 0);
        // init_mm holds slot 0; mms with ctx_id 10..15 arrive in turn.
        let mut got = Vec::new();
        for ctx in 10..16 {
            got.push(s.choose_new_asid(ctx, 1, true, None));
            let a = got.last().unwrap().asid;
            s.ctxs[usize::from(a.0)] = TlbContext { ctx_id: ctx, tlb_gen: 1 };
            s.loaded_mm_asid = a;
        }
        let slots: Vec<u16> = got.iter().map(|n| n.asid.0).collect();
        assert_eq!(slots, [1, 2, 3, 4, 5, 0], "slot 1 first, then wrap to 0");
        assert!(got.iter().all(|n| n.need_flush));
        // ctx 11 (slot 2) is up to date: reused without a flush, and behind: with one.
        assert_eq!(
            s.choose_new_asid(11, 1, true, None),
            NewAsid { asid: Asid(2), need_flush: false }
        );
        assert_eq!(
            s.choose_new_asid(11, 2, true, None),
            NewAsid { asid: Asid(2), need_flush: true }
        );
        // A seventh mm takes slot 1 (the cursor), even though slot 1's mm (ctx 10) was not
        // the least recently used in any sense the code tracks.
        assert_eq!(s.choose_new_asid(16, 1, true, None).asid, Asid(1));
    }

    #[test]
    fn without_pcid_every_switch_flushes_asid_0() {
        let mut s = TlbState::new(1, 0);
        assert_eq!(
            s.choose_new_asid(1, 0, false, None),
            NewAsid { asid: Asid(0), need_flush: true }
        );
    }

    #[test]
    fn invalidate_other_forgets_all_but_the_loaded_asid() {
        let mut s = TlbState::new(1, 0);
        for a in 1..6 {
            s.ctxs[a] = TlbContext { ctx_id: 10 + a as u64, tlb_gen: 1 };
        }
        s.loaded_mm_asid = Asid(3);
        s.invalidate_other = true;
        let n = s.choose_new_asid(11, 1, true, None);
        assert!(n.need_flush, "ctx 11's slot was forgotten, so it is flushed");
        assert_eq!(s.ctxs[3].ctx_id, 13, "the loaded slot is kept");
        assert!([1, 2, 4, 5].iter().all(|&a| s.ctxs[a].ctx_id == 0));
        assert!(!s.invalidate_other);
    }
}
