//! Unwind tables for `cstack=dwarf`: each loaded object's `.eh_frame` call
//! frame information, evaluated off the signal handler (with gimli) into a
//! compact sorted table of [`Row`]s that the handler binary-searches.
//!
//! glibc, libjvm and most distribution libraries are built without frame
//! pointers: a frame-pointer chain through them breaks, or skips callers. The
//! CFI the compiler emits for exceptions says, for every instruction, where
//! the caller's frame is (the CFA, from the stack or frame pointer), so a walk
//! with it needs no frame pointers. Rules the handler cannot follow (DWARF
//! expressions: PLT entries, signal trampolines) are kept as a marker telling
//! it to take a frame-pointer step there instead.
//!
//! Objects are found with `dl_iterate_phdr` (so the vDSO is included), and their
//! `.eh_frame_hdr` and `.eh_frame` copied out of memory while the loader's lock
//! is held (the object cannot be unloaded meanwhile), then evaluated after it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use gimli::{
    BaseAddresses, CfaRule, EhFrame, EhFrameHdr, LittleEndian, RegisterRule, UnwindContext,
    UnwindSection, X86_64,
};

/// How to find the caller's frame at one range of code, starting at `pc` (an
/// address relative to the object's load bias) up to the next row's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Row {
    pub pc: u32,
    /// CFA = SP + cfa (kind [`CFA_SP`]) or FP + cfa (kind [`CFA_FP`]).
    pub cfa: u16,
    pub kind: u8,
    /// Where the caller's frame pointer was saved: at CFA - 8 × fp; 0 when the
    /// frame pointer is unchanged (not saved yet, or never touched).
    pub fp: u8,
}

/// The CFA is the stack pointer plus `cfa`.
pub const CFA_SP: u8 = 0;
/// The CFA is the frame pointer plus `cfa`.
pub const CFA_FP: u8 = 1;
/// A rule the handler cannot follow: take a frame-pointer step here.
pub const FP_WALK: u8 = 2;
/// The outermost frame (the return address is undefined: `_start`, `clone`).
pub const STOP: u8 = 3;
/// No CFI covers this code (between FDEs).
pub const NONE: u8 = 4;

/// The unwind table of one loaded object.
#[derive(Debug)]
pub struct ObjectCfi {
    /// The object's load bias: a row's pc plus bias is a run-time address.
    pub bias: usize,
    /// Run-time range of its executable segments.
    pub start: usize,
    pub end: usize,
    pub rows: &'static [Row],
}

impl ObjectCfi {
    /// The row covering run-time address `pc`. Async-signal-safe.
    pub fn row(&self, pc: usize) -> Option<Row> {
        let rel = u32::try_from(pc.checked_sub(self.bias)?).ok()?;
        let i = self.rows.partition_point(|r| r.pc <= rel);
        let row = *self.rows.get(i.checked_sub(1)?)?;
        (row.kind != NONE).then_some(row)
    }
}

/// What building the tables cost: for `jscope info`-style reporting and the
/// benchmarks.
#[derive(Debug, Clone, Default)]
pub struct BuildStats {
    /// (object name, rows, bytes) of each object built this time.
    pub objects: Vec<(String, usize, usize)>,
    pub elapsed: Duration,
}

impl BuildStats {
    /// "N objects, X KiB (libjvm.so Y KiB), built in Z ms".
    pub fn summary(&self) -> String {
        let kib = |b: usize| (b + 512) / 1024;
        let total: usize = self.objects.iter().map(|o| o.2).sum();
        let jvm = self
            .objects
            .iter()
            .find(|o| o.0.ends_with("/libjvm.so"))
            .map(|o| format!(" (libjvm.so {} KiB)", kib(o.2)))
            .unwrap_or_default();
        format!(
            "{} objects, {} KiB{jvm}, built in {} ms",
            self.objects.len(),
            kib(total),
            self.elapsed.as_millis()
        )
    }
}

/// Copies of one object's unwind sections, taken under the loader's lock.
struct Pending {
    name: String,
    bias: usize,
    start: usize,
    end: usize,
    hdr_addr: u64,
    hdr: Vec<u8>,
    eh_addr: u64,
    eh: Vec<u8>,
}

/// Objects whose tables are built, by (name, bias): kept across refreshes so
/// a newly loaded library costs only its own table.
#[derive(Default)]
pub struct Cache {
    built: HashMap<(String, usize), Option<&'static ObjectCfi>>,
}

impl Cache {
    /// The unwind tables of every object loaded now, building those not seen
    /// before; sorted by start. Not for a signal handler.
    pub fn refresh(&mut self, stats: &mut BuildStats) -> Vec<&'static ObjectCfi> {
        let started = Instant::now();
        let mut seen = Vec::new();
        let pending = collect(&self.built, &mut seen);
        for p in pending {
            let key = (p.name.clone(), p.bias);
            let table = build(&p).map(|rows| {
                let rows: &'static [Row] = Box::leak(rows.into_boxed_slice());
                stats
                    .objects
                    .push((p.name.clone(), rows.len(), std::mem::size_of_val(rows)));
                &*Box::leak(Box::new(ObjectCfi {
                    bias: p.bias,
                    start: p.start,
                    end: p.end,
                    rows,
                }))
            });
            self.built.insert(key, table);
        }
        stats.elapsed += started.elapsed();
        let mut out: Vec<&'static ObjectCfi> = seen
            .iter()
            .filter_map(|k| self.built.get(k).copied().flatten())
            .collect();
        out.sort_by_key(|o| o.start);
        out
    }
}

const PT_LOAD: u32 = 1;
const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
const PF_X: u32 = 1;
/// Largest unwind section copied (libjvm's `.eh_frame` is a few MB).
const MAX_SECTION: usize = 256 << 20;

/// Walks the loaded objects: the keys of all into `seen`, copies of the unwind
/// sections of those not yet `built`.
fn collect(
    built: &HashMap<(String, usize), Option<&'static ObjectCfi>>,
    seen: &mut Vec<(String, usize)>,
) -> Vec<Pending> {
    struct State<'a> {
        built: &'a HashMap<(String, usize), Option<&'static ObjectCfi>>,
        seen: &'a mut Vec<(String, usize)>,
        pending: Vec<Pending>,
    }
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut std::ffi::c_void,
    ) -> libc::c_int {
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: the loader passes a valid info; data is our State.
            let (info, state) = unsafe { (&*info, &mut *data.cast::<State>()) };
            // SAFETY: as above: the loader's own entry, valid during the call.
            unsafe { visit(info, state.built, state.seen, &mut state.pending) };
        }));
        let _ = run;
        0
    }
    let mut state = State {
        built,
        seen,
        pending: Vec::new(),
    };
    // SAFETY: the callback only reads the loader's entries and writes State.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut state as *mut State).cast()) };
    state.pending
}

/// One loaded object: its key, and a copy of its unwind sections when new.
///
/// # Safety
/// `info` is an entry dl_iterate_phdr passed, during its callback.
unsafe fn visit(
    info: &libc::dl_phdr_info,
    built: &HashMap<(String, usize), Option<&'static ObjectCfi>>,
    seen: &mut Vec<(String, usize)>,
    pending: &mut Vec<Pending>,
) {
    let name = if info.dlpi_name.is_null() {
        String::new()
    } else {
        // SAFETY: the loader's NUL-terminated name.
        unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }
            .to_string_lossy()
            .into_owned()
    };
    let bias = info.dlpi_addr as usize;
    let key = (name, bias);
    seen.push(key.clone());
    if built.contains_key(&key) || info.dlpi_phdr.is_null() {
        return;
    }
    // SAFETY: the loader's program headers for this object.
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let (mut start, mut end) = (usize::MAX, 0usize);
    for p in phdrs
        .iter()
        .filter(|p| p.p_type == PT_LOAD && p.p_flags & PF_X != 0)
    {
        start = start.min(bias + p.p_vaddr as usize);
        end = end.max(bias + (p.p_vaddr + p.p_memsz) as usize);
    }
    let Some(eh_hdr) = phdrs.iter().find(|p| p.p_type == PT_GNU_EH_FRAME) else {
        return;
    };
    if start >= end || eh_hdr.p_memsz as usize > MAX_SECTION {
        return;
    }
    let hdr_addr = bias + eh_hdr.p_vaddr as usize;
    // SAFETY: PT_GNU_EH_FRAME lies in a loaded, readable segment.
    let hdr = unsafe { std::slice::from_raw_parts(hdr_addr as *const u8, eh_hdr.p_memsz as usize) };
    let bases = BaseAddresses::default().set_eh_frame_hdr(hdr_addr as u64);
    let Ok(parsed) = EhFrameHdr::new(hdr, LittleEndian).parse(&bases, 8) else {
        return;
    };
    let Ok(eh_addr) = parsed.eh_frame_ptr().direct() else {
        return;
    };
    let eh_addr = eh_addr as usize;
    // .eh_frame runs to its terminator, at most to the end of its segment.
    let Some(seg) = phdrs.iter().find(|p| {
        let s = bias + p.p_vaddr as usize;
        p.p_type == PT_LOAD && eh_addr >= s && eh_addr < s + p.p_filesz as usize
    }) else {
        return;
    };
    let seg_end = bias + (seg.p_vaddr + seg.p_filesz) as usize;
    let len = (seg_end - eh_addr).min(MAX_SECTION);
    // SAFETY: within a loaded segment's file-backed part.
    let eh = unsafe { std::slice::from_raw_parts(eh_addr as *const u8, len) };
    pending.push(Pending {
        name: key.0,
        bias,
        start,
        end,
        hdr_addr: hdr_addr as u64,
        hdr: hdr.to_vec(),
        eh_addr: eh_addr as u64,
        eh: eh.to_vec(),
    });
}

/// Evaluates every FDE the object's `.eh_frame_hdr` lists into rows.
fn build(p: &Pending) -> Option<Vec<Row>> {
    let bases = BaseAddresses::default()
        .set_eh_frame_hdr(p.hdr_addr)
        .set_eh_frame(p.eh_addr);
    let hdr = EhFrameHdr::new(&p.hdr, LittleEndian)
        .parse(&bases, 8)
        .ok()?;
    let table = hdr.table()?;
    let eh = EhFrame::new(&p.eh, LittleEndian);
    let mut ctx = Box::new(UnwindContext::new());
    let mut rows: Vec<Row> = Vec::new();
    let mut iter = table.iter(&bases);
    let bias = p.bias as u64;
    let rel = |addr: u64| -> Option<u32> { u32::try_from(addr.checked_sub(bias)?).ok() };
    while let Ok(Some((_, fde_ptr))) = iter.next() {
        let Ok(offset) = table.pointer_to_offset(fde_ptr) else {
            continue;
        };
        let Ok(fde) = eh.fde_from_offset(&bases, offset, EhFrame::cie_from_offset) else {
            continue;
        };
        let Ok(mut unwind) = fde.rows(&eh, &bases, &mut ctx) else {
            continue;
        };
        while let Ok(Some(row)) = unwind.next_row() {
            let Some(pc) = rel(row.start_address()) else {
                break;
            };
            rows.push(convert(pc, row));
        }
        if let Some(end) = rel(fde.end_address()) {
            rows.push(Row {
                pc: end,
                cfa: 0,
                kind: NONE,
                fp: 0,
            });
        }
    }
    // An FDE's start wins over the previous one's end at the same address.
    rows.sort_by_key(|r| (r.pc, r.kind == NONE));
    rows.dedup_by_key(|r| r.pc);
    // Rows that say what the row before says add nothing.
    rows.dedup_by(|b, a| (a.cfa, a.kind, a.fp) == (b.cfa, b.kind, b.fp));
    rows.shrink_to_fit();
    Some(rows)
}

/// One CFI row as the handler follows it.
fn convert(pc: u32, row: &gimli::UnwindTableRow<usize>) -> Row {
    let fallback = Row {
        pc,
        cfa: 0,
        kind: FP_WALK,
        fp: 0,
    };
    match row.register(X86_64::RA) {
        RegisterRule::Offset(-8) => {}
        RegisterRule::Undefined => {
            return Row {
                kind: STOP,
                ..fallback
            }
        }
        _ => return fallback,
    }
    let (kind, cfa) = match row.cfa() {
        CfaRule::RegisterAndOffset { register, offset } => {
            let Ok(cfa) = u16::try_from(*offset) else {
                return fallback;
            };
            match *register {
                X86_64::RSP => (CFA_SP, cfa),
                X86_64::RBP => (CFA_FP, cfa),
                _ => return fallback,
            }
        }
        CfaRule::Expression(_) => return fallback,
    };
    let fp = match row.register(X86_64::RBP) {
        RegisterRule::Undefined | RegisterRule::SameValue => 0,
        RegisterRule::Offset(o) if o < 0 && o % 8 == 0 && -o / 8 <= 255 => (-o / 8) as u8,
        _ => return fallback,
    };
    Row { pc, cfa, kind, fp }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn here() -> usize {
        here as *const () as usize
    }

    #[test]
    fn this_processs_objects_have_rows_and_libc_ends_in_a_stop() {
        let mut stats = BuildStats::default();
        let objects = Cache::default().refresh(&mut stats);
        assert!(objects.len() >= 2, "{}", objects.len());
        let pc = here();
        let obj = objects
            .iter()
            .find(|o| o.start <= pc && pc < o.end)
            .expect("the test binary has CFI");
        let row = obj.row(pc).expect("a row at a Rust function's entry");
        // At a function's first instruction the CFA is SP+8 and RBP is untouched.
        assert_eq!((row.kind, row.cfa, row.fp), (CFA_SP, 8, 0));
        // Rows are sorted and say something new each.
        for w in obj.rows.windows(2) {
            assert!(w[0].pc < w[1].pc);
        }
        assert!(stats.objects.iter().any(|(n, _, _)| n.contains("libc.so")));
        // The thread entry's caller chain ends: clone's or start_thread's CFI
        // marks the outermost frame.
        let libc = objects
            .iter()
            .find(|o| {
                stats
                    .objects
                    .iter()
                    .any(|(n, rows, _)| n.contains("libc.so") && *rows == o.rows.len())
            })
            .unwrap();
        assert!(libc.rows.iter().any(|r| r.kind == STOP));
    }

    #[test]
    fn a_second_refresh_builds_only_objects_loaded_since() {
        let mut cache = Cache::default();
        let mut first = BuildStats::default();
        let a = cache.refresh(&mut first);
        let mut second = BuildStats::default();
        let b = cache.refresh(&mut second);
        assert!(!a.is_empty() && !b.is_empty());
        assert!(!first.objects.is_empty());
        // Another test may load a library meanwhile: only such are built again.
        for (name, _, _) in &second.objects {
            assert!(
                !first.objects.iter().any(|o| &o.0 == name),
                "{name} rebuilt"
            );
        }
    }

    #[test]
    fn rows_between_functions_are_none() {
        let obj = ObjectCfi {
            bias: 0x1000,
            start: 0x1000,
            end: 0x9000,
            rows: Box::leak(Box::new([
                Row {
                    pc: 0x100,
                    cfa: 8,
                    kind: CFA_SP,
                    fp: 0,
                },
                Row {
                    pc: 0x104,
                    cfa: 16,
                    kind: CFA_SP,
                    fp: 2,
                },
                Row {
                    pc: 0x200,
                    cfa: 0,
                    kind: NONE,
                    fp: 0,
                },
            ])),
        };
        assert_eq!(obj.row(0x1000 + 0x50), None);
        assert_eq!(obj.row(0x1000 + 0x100).unwrap().cfa, 8);
        assert_eq!(obj.row(0x1000 + 0x1ff).unwrap().fp, 2);
        assert_eq!(obj.row(0x1000 + 0x200), None);
        assert_eq!(obj.row(0x10), None);
    }
}
