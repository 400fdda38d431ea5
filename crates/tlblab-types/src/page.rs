//! Addresses, page sizes and page numbers.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A virtual (linear) address.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct VirtAddr(pub u64);

impl fmt::Display for VirtAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// A virtual page number in **4 KiB units** (`va >> 12`), whatever the size of the page that maps
/// it. Keeping one unit lets a 2 MiB or 1 GiB page say which 2 MiB region was touched, which the
/// model needs where hardware splinters 1 GiB pages into 2 MiB TLB entries.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Vpn(pub u64);

impl Vpn {
    /// The largest VPN: a 64-bit address shifted right by 12.
    pub const MAX: u64 = (1 << 52) - 1;

    /// The first byte of this 4 KiB page.
    pub const fn addr(self) -> VirtAddr {
        VirtAddr(self.0 << 12)
    }
}

/// The size of the page that maps an address (a 4-level or 5-level x86-64 leaf).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum PageSize {
    /// 4 KiB: mapped by a PTE.
    #[serde(rename = "4k")]
    Size4K,
    /// 2 MiB: mapped by a PDE with PS=1.
    #[serde(rename = "2m")]
    Size2M,
    /// 1 GiB: mapped by a PDPTE with PS=1.
    #[serde(rename = "1g")]
    Size1G,
}

impl PageSize {
    /// All sizes, smallest first.
    pub const ALL: [PageSize; 3] = [PageSize::Size4K, PageSize::Size2M, PageSize::Size1G];

    /// log2 of the size in bytes.
    pub const fn shift(self) -> u32 {
        match self {
            PageSize::Size4K => 12,
            PageSize::Size2M => 21,
            PageSize::Size1G => 30,
        }
    }

    /// Size in bytes.
    pub const fn bytes(self) -> u64 {
        1 << self.shift()
    }

    /// A dense index (0, 1, 2) for tables indexed by page size.
    pub const fn index(self) -> usize {
        match self {
            PageSize::Size4K => 0,
            PageSize::Size2M => 1,
            PageSize::Size1G => 2,
        }
    }

    /// The page size with this dense index.
    pub const fn from_index(index: usize) -> Option<PageSize> {
        match index {
            0 => Some(PageSize::Size4K),
            1 => Some(PageSize::Size2M),
            2 => Some(PageSize::Size1G),
            _ => None,
        }
    }

    /// The short name used in files and on the command line: `4k`, `2m`, `1g`.
    pub const fn name(self) -> &'static str {
        match self {
            PageSize::Size4K => "4k",
            PageSize::Size2M => "2m",
            PageSize::Size1G => "1g",
        }
    }

    /// Parses `4k`, `2m` or `1g` (case-insensitive; `4K`, `4KiB`, `2MiB`, `1GiB` also accepted).
    pub fn parse(text: &str) -> Option<PageSize> {
        match text.to_ascii_lowercase().as_str() {
            "4k" | "4kib" | "4kb" => Some(PageSize::Size4K),
            "2m" | "2mib" | "2mb" => Some(PageSize::Size2M),
            "1g" | "1gib" | "1gb" => Some(PageSize::Size1G),
            _ => None,
        }
    }

    /// The mask of VPN bits (in 4 KiB units) that lie inside one page of this size but that the
    /// trace keeps (see [`Page`]): none for 4 KiB and 2 MiB pages; the 2 MiB region for 1 GiB pages.
    const fn vpn_alignment_mask(self) -> u64 {
        match self {
            PageSize::Size4K => 0,
            // Finest detail the model ever needs is 2 MiB, so both huge sizes keep VPNs 2 MiB-aligned.
            PageSize::Size2M | PageSize::Size1G => 0x1ff,
        }
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PageSize::Size4K => "4K",
            PageSize::Size2M => "2M",
            PageSize::Size1G => "1G",
        })
    }
}

/// A touched page: its VPN (4 KiB units) and the size of the page that maps it.
///
/// Canonical form: for 2 MiB and 1 GiB pages the VPN is 2 MiB-aligned (its low 9 bits are zero).
/// A 1 GiB page thus still says which 2 MiB region inside it was touched, the finest detail any
/// modelled structure uses; nothing finer is kept, so consecutive accesses to one huge page
/// collapse into one trace record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Page {
    /// Virtual page number in 4 KiB units, canonicalised as described above.
    pub vpn: Vpn,
    /// Size of the mapping.
    pub size: PageSize,
}

impl Page {
    /// The page of size `size` that holds `va`, in canonical form.
    pub const fn containing(va: VirtAddr, size: PageSize) -> Page {
        Page { vpn: Vpn((va.0 >> 12) & !size.vpn_alignment_mask()), size }
    }

    /// A page from a VPN in 4 KiB units, or `None` if the VPN is out of range or not canonical
    /// for `size` (see the type's documentation).
    pub const fn new(vpn: Vpn, size: PageSize) -> Option<Page> {
        if vpn.0 > Vpn::MAX || vpn.0 & size.vpn_alignment_mask() != 0 {
            None
        } else {
            Some(Page { vpn, size })
        }
    }

    /// The page number at the page's own size (`va >> shift`): what a TLB entry for it holds.
    pub const fn number(self) -> u64 {
        self.vpn.0 >> (self.size.shift() - 12)
    }

    /// First byte of the page.
    pub const fn base(self) -> VirtAddr {
        VirtAddr(self.number() << self.size.shift())
    }

    /// Whether `va` lies in this page.
    pub const fn contains(self, va: VirtAddr) -> bool {
        va.0 >> self.size.shift() == self.number()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_form_keeps_2m_region_of_1g_page() {
        let va = VirtAddr(0x4000_0000 + 3 * 0x20_0000 + 0x1234);
        let page = Page::containing(va, PageSize::Size1G);
        assert_eq!(page.number(), 1);
        assert_eq!(page.vpn.0, (0x4000_0000 + 3 * 0x20_0000) >> 12);
        assert_eq!(page.base(), VirtAddr(0x4000_0000));
        assert!(Page::new(Vpn(page.vpn.0 + 1), PageSize::Size1G).is_none());
        assert!(Page::new(Vpn(page.vpn.0 + 1), PageSize::Size4K).is_some());
    }

    #[test]
    fn page_size_names_round_trip() {
        for size in PageSize::ALL {
            assert_eq!(PageSize::parse(size.name()), Some(size));
            assert_eq!(PageSize::from_index(size.index()), Some(size));
        }
        assert_eq!(PageSize::parse("3m"), None);
    }
}
