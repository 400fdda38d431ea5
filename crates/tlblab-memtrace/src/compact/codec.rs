//! Encoding and decoding of one compact record.

use std::fmt;
use tlblab_types::{
    Access, AccessKind, CpuId, InvlpgbRange, InvlpgbScope, InvpcidType, Page, PageSize, Pcid,
    TlbOp, TraceEvent, Vpn,
};

/// `w0` bits 0–51: the VPN (or, in END, the record count).
pub(crate) const VPN_MASK: u64 = (1 << 52) - 1;
const SIZE_SHIFT: u32 = 52;
const FLAG_A: u64 = 1 << 54;
const FLAG_B: u64 = 1 << 55;
const KIND_SHIFT: u32 = 56;
const X_SHIFT: u32 = 60;
/// `w0` bits 62–63 and `w1` bits 60–63 must be zero in every record.
const W0_RESERVED: u64 = 0b11 << 62;
const W1_RESERVED: u64 = 0xf << 60;

/// Record kinds.
pub(crate) const KIND_LOAD: u64 = 0;
pub(crate) const KIND_STORE: u64 = 1;
pub(crate) const KIND_FETCH: u64 = 2;
pub(crate) const KIND_INVLPG: u64 = 3;
pub(crate) const KIND_INVPCID: u64 = 4;
pub(crate) const KIND_MOV_CR3: u64 = 5;
pub(crate) const KIND_MOV_CR4: u64 = 6;
pub(crate) const KIND_INVLPGB: u64 = 7;
pub(crate) const KIND_TLBSYNC: u64 = 8;
pub(crate) const KIND_END: u64 = 15;

/// The kind field of `w0`.
#[inline(always)]
pub(crate) fn kind_of(w0: u64) -> u64 {
    (w0 >> KIND_SHIFT) & 0xf
}

/// The END record for `records` records with checksum `checksum`, or `None` if the count does
/// not fit in 52 bits.
pub(crate) fn end_record(records: u64, checksum: u64) -> Option<(u64, u64)> {
    (records <= VPN_MASK).then_some((KIND_END << KIND_SHIFT | records, checksum))
}

/// The record count of an END record, or what is wrong with it.
pub(crate) fn decode_end(w0: u64) -> Result<u64, RecordError> {
    let other = w0 & !VPN_MASK & !(0xf << KIND_SHIFT);
    if other != 0 {
        return Err(RecordError::Field {
            kind: KIND_END,
            field: "w0 bits 52-63 besides the kind",
            value: other >> 52,
            rule: "must be 0",
        });
    }
    Ok(w0 & VPN_MASK)
}

fn kind_name(kind: u64) -> &'static str {
    match kind {
        KIND_LOAD => "load",
        KIND_STORE => "store",
        KIND_FETCH => "fetch",
        KIND_INVLPG => "INVLPG",
        KIND_INVPCID => "INVPCID",
        KIND_MOV_CR3 => "MOV CR3",
        KIND_MOV_CR4 => "MOV CR4",
        KIND_INVLPGB => "INVLPGB",
        KIND_TLBSYNC => "TLBSYNC",
        KIND_END => "END",
        _ => "unknown",
    }
}

/// What is wrong with a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecordError {
    /// Must-be-zero bits of `w0` (62–63) or `w1` (60–63) are set.
    Reserved { word: u8, bits: u64 },
    /// The kind is not defined.
    UnknownKind(u64),
    /// A field of a record of `kind` breaks `rule`.
    Field { kind: u64, field: &'static str, value: u64, rule: &'static str },
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RecordError::Reserved { word, bits } => {
                write!(f, "reserved bits of w{word} are set ({bits:#018x}), must be 0")
            }
            RecordError::UnknownKind(kind) => write!(f, "unknown record kind {kind}"),
            RecordError::Field { kind, field, value, rule } => {
                write!(f, "{} record: {field} is {value:#x}, {rule}", kind_name(kind))
            }
        }
    }
}

/// The fields of a record, split out.
struct Fields {
    kind: u64,
    vpn: u64,
    size: u64,
    a: bool,
    b: bool,
    x: u64,
    count: u32,
    cpu: CpuId,
    pcid: u16,
}

impl Fields {
    #[inline(always)]
    fn split(w0: u64, w1: u64) -> Fields {
        Fields {
            kind: kind_of(w0),
            vpn: w0 & VPN_MASK,
            size: (w0 >> SIZE_SHIFT) & 3,
            a: w0 & FLAG_A != 0,
            b: w0 & FLAG_B != 0,
            x: (w0 >> X_SHIFT) & 3,
            count: w1 as u32,
            cpu: CpuId((w1 >> 32) as u16),
            pcid: ((w1 >> 48) & 0xfff) as u16,
        }
    }

    /// The fields of an instruction record of `kind` on `cpu`: count 1, everything else 0.
    fn op(kind: u64, cpu: CpuId) -> Fields {
        Fields { kind, vpn: 0, size: 0, a: false, b: false, x: 0, count: 1, cpu, pcid: 0 }
    }

    /// The record: the inverse of [`Fields::split`].
    fn join(&self) -> (u64, u64) {
        let w0 = self.vpn
            | self.size << SIZE_SHIFT
            | if self.a { FLAG_A } else { 0 }
            | if self.b { FLAG_B } else { 0 }
            | self.kind << KIND_SHIFT
            | self.x << X_SHIFT;
        let w1 = u64::from(self.count) | u64::from(self.cpu.0) << 32 | u64::from(self.pcid) << 48;
        (w0, w1)
    }

    fn fail(&self, field: &'static str, value: u64, rule: &'static str) -> RecordError {
        RecordError::Field { kind: self.kind, field, value, rule }
    }

    /// Checks that `field` is zero.
    #[inline]
    fn zero(&self, field: &'static str, value: u64) -> Result<(), RecordError> {
        if value == 0 {
            Ok(())
        } else {
            Err(self.fail(field, value, "must be 0"))
        }
    }

    #[inline]
    fn count_one(&self) -> Result<(), RecordError> {
        if self.count == 1 {
            Ok(())
        } else {
            Err(self.fail("count", u64::from(self.count), "must be 1"))
        }
    }

    #[inline]
    fn pcid(&self) -> Pcid {
        Pcid::new(self.pcid).unwrap_or_default()
    }
}

/// Decodes a valid access record (kind 0–2), or returns `None` for anything else (which
/// [`decode`] then handles, with the reason). The hot path of the reader.
#[inline(always)]
pub(crate) fn decode_access(w0: u64, w1: u64) -> Option<TraceEvent> {
    // The top byte of w0 holds the kind, X and the reserved bits: kind < 3, the rest 0.
    let kind = match (w0 >> KIND_SHIFT) as u8 {
        0x00 => AccessKind::Load,
        0x01 => AccessKind::Store,
        0x02 => AccessKind::Fetch,
        _ => return None,
    };
    let (size, align) = match (w0 >> SIZE_SHIFT) & 3 {
        0 => (PageSize::Size4K, 0),
        1 => (PageSize::Size2M, 0x1ff),
        2 => (PageSize::Size1G, 0x1ff),
        _ => return None,
    };
    if w0 & (FLAG_B | align) != 0 || w1 & W1_RESERVED != 0 || w1 as u32 == 0 {
        return None;
    }
    let access = Access {
        cpu: CpuId((w1 >> 32) as u16),
        pcid: Pcid::new(((w1 >> 48) & 0xfff) as u16)?,
        page: Page { vpn: Vpn(w0 & VPN_MASK), size },
        global: w0 & FLAG_A != 0,
        kind,
    };
    Some(TraceEvent::Access { access, repeat: w1 as u32 })
}

/// Decodes a record other than END.
#[inline(always)]
pub(crate) fn decode(w0: u64, w1: u64) -> Result<TraceEvent, RecordError> {
    if w0 & W0_RESERVED != 0 {
        return Err(RecordError::Reserved { word: 0, bits: w0 & W0_RESERVED });
    }
    if w1 & W1_RESERVED != 0 {
        return Err(RecordError::Reserved { word: 1, bits: w1 & W1_RESERVED });
    }
    let f = Fields::split(w0, w1);
    let kind = match f.kind {
        KIND_LOAD => AccessKind::Load,
        KIND_STORE => AccessKind::Store,
        KIND_FETCH => AccessKind::Fetch,
        _ => return decode_op(&f),
    };
    f.zero("flag B", u64::from(f.b))?;
    f.zero("X", f.x)?;
    let size = PageSize::from_index(f.size as usize)
        .ok_or_else(|| f.fail("size", f.size, "3 is not a page size"))?;
    let page = Page::new(Vpn(f.vpn), size).ok_or_else(|| {
        f.fail(
            "vpn",
            f.vpn,
            "not canonical for the page size (low 9 bits must be 0 for 2M and 1G pages)",
        )
    })?;
    if f.count == 0 {
        return Err(f.fail("count", 0, "must be at least 1"));
    }
    let access = Access { cpu: f.cpu, pcid: f.pcid(), page, global: f.a, kind };
    Ok(TraceEvent::Access { access, repeat: f.count })
}

#[cold]
fn decode_op(f: &Fields) -> Result<TraceEvent, RecordError> {
    let op = match f.kind {
        KIND_INVLPG => {
            f.zero("size", f.size)?;
            f.zero("flag A", u64::from(f.a))?;
            f.zero("flag B", u64::from(f.b))?;
            f.zero("X", f.x)?;
            f.count_one()?;
            TlbOp::Invlpg { pcid: f.pcid(), vpn: Vpn(f.vpn) }
        }
        KIND_INVPCID => {
            f.zero("size", f.size)?;
            f.zero("flag A", u64::from(f.a))?;
            f.zero("flag B", u64::from(f.b))?;
            f.count_one()?;
            let kind = InvpcidType::from_number(f.x as u8)
                .ok_or_else(|| f.fail("X (INVPCID type)", f.x, "must be 0-3"))?;
            if kind != InvpcidType::IndivAddr {
                f.zero("vpn (unused by this INVPCID type)", f.vpn)?;
            }
            if !matches!(kind, InvpcidType::IndivAddr | InvpcidType::SingleCtxt) {
                f.zero("pcid (unused by this INVPCID type)", u64::from(f.pcid))?;
            }
            TlbOp::Invpcid { kind, pcid: f.pcid(), vpn: Vpn(f.vpn) }
        }
        KIND_MOV_CR3 => {
            f.zero("vpn", f.vpn)?;
            f.zero("size", f.size)?;
            f.zero("flag B", u64::from(f.b))?;
            f.zero("X", f.x)?;
            f.count_one()?;
            TlbOp::MovCr3 { pcid: f.pcid(), noflush: f.a }
        }
        KIND_MOV_CR4 => {
            f.zero("vpn", f.vpn)?;
            f.zero("size", f.size)?;
            f.zero("X", f.x)?;
            f.zero("pcid", u64::from(f.pcid))?;
            f.count_one()?;
            TlbOp::MovCr4 { pge: f.a, pcide: f.b }
        }
        KIND_INVLPGB => {
            let range = if f.x & 1 != 0 {
                let stride = match f.size {
                    0 => PageSize::Size4K,
                    1 => PageSize::Size2M,
                    _ => return Err(f.fail("size (stride)", f.size, "must be 0 (4K) or 1 (2M)")),
                };
                if stride == PageSize::Size2M && f.vpn & 0x1ff != 0 {
                    return Err(f.fail("vpn (start)", f.vpn, "not aligned to the 2M stride"));
                }
                if f.count == 0 {
                    return Err(f.fail("count (strides)", 0, "must be at least 1"));
                }
                Some(InvlpgbRange { start: Vpn(f.vpn), pages: f.count, stride })
            } else {
                f.zero("vpn (no VA-valid bit)", f.vpn)?;
                f.zero("size (no VA-valid bit)", f.size)?;
                f.count_one()?;
                None
            };
            let pcid = if f.x & 2 != 0 {
                Some(f.pcid())
            } else {
                f.zero("pcid (no PCID-valid bit)", u64::from(f.pcid))?;
                None
            };
            TlbOp::Invlpgb(InvlpgbScope { range, pcid, include_global: f.a, final_only: f.b })
        }
        KIND_TLBSYNC => {
            f.zero("vpn", f.vpn)?;
            f.zero("size", f.size)?;
            f.zero("flag A", u64::from(f.a))?;
            f.zero("flag B", u64::from(f.b))?;
            f.zero("X", f.x)?;
            f.zero("pcid", u64::from(f.pcid))?;
            f.count_one()?;
            TlbOp::Tlbsync
        }
        kind => return Err(RecordError::UnknownKind(kind)),
    };
    Ok(TraceEvent::Op { cpu: f.cpu, op })
}

/// Encodes an event, or says why the format cannot represent it.
pub(crate) fn encode(event: &TraceEvent) -> Result<(u64, u64), String> {
    match *event {
        TraceEvent::Access { access, repeat } => {
            let kind = match access.kind {
                AccessKind::Load => KIND_LOAD,
                AccessKind::Store => KIND_STORE,
                AccessKind::Fetch => KIND_FETCH,
            };
            if Page::new(access.page.vpn, access.page.size).is_none() {
                return Err(format!(
                    "page vpn {:#x} is out of range or not canonical for a {} page",
                    access.page.vpn.0, access.page.size
                ));
            }
            if repeat == 0 {
                return Err("access with repeat 0".into());
            }
            Ok(Fields {
                vpn: access.page.vpn.0,
                size: access.page.size.index() as u64,
                a: access.global,
                count: repeat,
                pcid: access.pcid.get(),
                ..Fields::op(kind, access.cpu)
            }
            .join())
        }
        TraceEvent::Op { cpu, op } => encode_op(cpu, op),
    }
}

fn check_vpn(vpn: Vpn) -> Result<u64, String> {
    if vpn.0 > VPN_MASK {
        Err(format!("vpn {:#x} does not fit in 52 bits", vpn.0))
    } else {
        Ok(vpn.0)
    }
}

fn encode_op(cpu: CpuId, op: TlbOp) -> Result<(u64, u64), String> {
    let zero = Pcid::default();
    let fields = match op {
        TlbOp::Invlpg { pcid, vpn } => {
            Fields { vpn: check_vpn(vpn)?, pcid: pcid.get(), ..Fields::op(KIND_INVLPG, cpu) }
        }
        TlbOp::Invpcid { kind, pcid, vpn } => {
            if kind != InvpcidType::IndivAddr && vpn.0 != 0 {
                return Err(format!(
                    "INVPCID type {} with a vpn (only type 0 has one)",
                    kind.number()
                ));
            }
            if !matches!(kind, InvpcidType::IndivAddr | InvpcidType::SingleCtxt) && pcid != zero {
                return Err(format!(
                    "INVPCID type {} with a PCID (only types 0 and 1 have one)",
                    kind.number()
                ));
            }
            Fields {
                vpn: check_vpn(vpn)?,
                x: u64::from(kind.number()),
                pcid: pcid.get(),
                ..Fields::op(KIND_INVPCID, cpu)
            }
        }
        TlbOp::MovCr3 { pcid, noflush } => {
            Fields { a: noflush, pcid: pcid.get(), ..Fields::op(KIND_MOV_CR3, cpu) }
        }
        TlbOp::MovCr4 { pge, pcide } => {
            Fields { a: pge, b: pcide, ..Fields::op(KIND_MOV_CR4, cpu) }
        }
        TlbOp::Invlpgb(scope) => {
            let (vpn, size, count) = match scope.range {
                Some(range) => {
                    let size = match range.stride {
                        PageSize::Size4K => 0,
                        PageSize::Size2M => 1,
                        PageSize::Size1G => {
                            return Err("INVLPGB with a 1G stride (only 4K and 2M exist)".into())
                        }
                    };
                    let start = check_vpn(range.start)?;
                    if size == 1 && start & 0x1ff != 0 {
                        return Err(format!(
                            "INVLPGB start vpn {start:#x} not aligned to its 2M stride"
                        ));
                    }
                    if range.pages == 0 {
                        return Err("INVLPGB range of 0 strides".into());
                    }
                    (start, size, range.pages)
                }
                None => (0, 0, 1),
            };
            Fields {
                vpn,
                size,
                a: scope.include_global,
                b: scope.final_only,
                x: u64::from(scope.range.is_some()) | u64::from(scope.pcid.is_some()) << 1,
                count,
                pcid: scope.pcid.unwrap_or(zero).get(),
                ..Fields::op(KIND_INVLPGB, cpu)
            }
        }
        TlbOp::Tlbsync => Fields::op(KIND_TLBSYNC, cpu),
    };
    Ok(fields.join())
}
