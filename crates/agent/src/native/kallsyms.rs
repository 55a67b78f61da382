//! Kernel addresses to names, from `/proc/kallsyms`.
//!
//! The kernel shows real addresses there only to readers it trusts (root, or
//! `kptr_restrict` 0); others read every address as zero, and then there is nothing to
//! resolve with. Runs on the writer thread, never in a signal handler.

/// The kernel's text symbols, sorted by address.
pub struct KernelSymbols {
    addrs: Vec<u64>,
    /// Names, one after another; `ends[i]` is where the i-th ends.
    names: String,
    ends: Vec<u32>,
}

/// How far past the last symbol an address still counts as its: kallsyms gives no
/// sizes, and the last text symbol is followed by data.
const LAST_SYMBOL_SPAN: u64 = 1 << 20;

impl KernelSymbols {
    /// Reads `/proc/kallsyms`; `None` when it cannot be read or its addresses read as
    /// zero (the kernel hides them from this process).
    pub fn load() -> Option<KernelSymbols> {
        let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
        KernelSymbols::parse(&text)
    }

    /// Parses kallsyms text: `address type name [module]` a line. Only text symbols
    /// (types `t` and `T`, and weak `w`/`W`) are kept. `None` when no address is
    /// non-zero.
    pub fn parse(text: &str) -> Option<KernelSymbols> {
        let mut entries: Vec<(u64, &str)> = Vec::new();
        for line in text.lines() {
            let mut it = line.split_ascii_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if !matches!(kind, "t" | "T" | "w" | "W") {
                continue;
            }
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            if addr != 0 {
                entries.push((addr, name));
            }
        }
        if entries.is_empty() {
            return None;
        }
        // Stable: of several names at one address the first listed is kept.
        entries.sort_by_key(|&(a, _)| a);
        entries.dedup_by_key(|&mut (a, _)| a);
        let mut names = String::new();
        let mut ends = Vec::with_capacity(entries.len());
        let mut addrs = Vec::with_capacity(entries.len());
        for (addr, name) in entries {
            if names.len() + name.len() > u32::MAX as usize {
                break;
            }
            names.push_str(name);
            ends.push(names.len() as u32);
            addrs.push(addr);
        }
        Some(KernelSymbols { addrs, names, ends })
    }

    /// How many symbols were read.
    pub fn len(&self) -> usize {
        self.addrs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.addrs.is_empty()
    }

    /// The kernel function holding `addr`: the nearest symbol at or below it. `None`
    /// below the first symbol or far past the last.
    pub fn lookup(&self, addr: u64) -> Option<&str> {
        let i = self.addrs.partition_point(|&a| a <= addr).checked_sub(1)?;
        if i + 1 == self.addrs.len() && addr - self.addrs[i] >= LAST_SYMBOL_SPAN {
            return None;
        }
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        self.names.get(start..self.ends[i] as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
ffffffff81000000 T _stext
ffffffff81000000 T startup_64
ffffffff81001000 t secondary_startup_64
ffffffff81002000 D some_data
ffffffff81003000 T do_syscall_64
ffffffff81003800 W arch_weak_thing
ffffffffc0000000 t ext4_file_read_iter\t[ext4]
";

    #[test]
    fn addresses_resolve_to_the_nearest_text_symbol_below() {
        let k = KernelSymbols::parse(SAMPLE).unwrap();
        assert_eq!(k.len(), 5);
        assert_eq!(k.lookup(0xffffffff81000000), Some("_stext"));
        assert_eq!(k.lookup(0xffffffff81000fff), Some("_stext"));
        assert_eq!(k.lookup(0xffffffff81001004), Some("secondary_startup_64"));
        // Data symbols are not functions: the text before them holds the address.
        assert_eq!(k.lookup(0xffffffff81002010), Some("secondary_startup_64"));
        assert_eq!(k.lookup(0xffffffff81003010), Some("do_syscall_64"));
        assert_eq!(k.lookup(0xffffffff81003801), Some("arch_weak_thing"));
        assert_eq!(k.lookup(0xffffffffc0000040), Some("ext4_file_read_iter"));
        assert_eq!(k.lookup(0xffffffff80000000), None);
        assert_eq!(k.lookup(0xffffffffc0000000 + LAST_SYMBOL_SPAN), None);
    }

    #[test]
    fn hidden_addresses_and_garbage_give_none() {
        let hidden = "0000000000000000 T _stext\n0000000000000000 T do_syscall_64\n";
        assert!(KernelSymbols::parse(hidden).is_none());
        assert!(KernelSymbols::parse("").is_none());
        assert!(KernelSymbols::parse("zz T x\n\n ffff\nffff T\n").is_none());
    }

    /// The machine's own kallsyms: when it shows addresses, a symbol's own address
    /// resolves to a name listed at that address.
    #[test]
    fn this_kernel_resolves_its_own_symbols_when_shown() {
        let Ok(text) = std::fs::read_to_string("/proc/kallsyms") else {
            return;
        };
        let Some(k) = KernelSymbols::load() else {
            // Hidden: every text address reads as zero.
            assert!(text
                .lines()
                .filter(|l| l.contains(" T "))
                .all(|l| l.starts_with("0000000000000000")));
            return;
        };
        let line = text
            .lines()
            .find(|l| l.split_whitespace().nth(2) == Some("do_syscall_64"))
            .or_else(|| text.lines().find(|l| l.contains(" T ")))
            .unwrap();
        let addr = u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap();
        let name = k.lookup(addr + 1).unwrap();
        assert!(
            text.lines()
                .any(|l| l.starts_with(&line[..16]) && l.split_whitespace().nth(2) == Some(name)),
            "{name} at {addr:x}"
        );
    }
}
