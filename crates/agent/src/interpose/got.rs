//! The loaded objects' import slots (their GOT entries) and the patching of
//! them: a call from an object to `malloc` or `pthread_mutex_lock` jumps
//! through the slot its dynamic relocation (`R_X86_64_JUMP_SLOT`, or
//! `R_X86_64_GLOB_DAT` for code built without a PLT and for functions whose
//! address is taken) names, so storing a hook's address there diverts that
//! object's calls, on a running process, with no `LD_PRELOAD`.
//!
//! Each object is read from its own loaded image (program headers, dynamic
//! section, relocation and symbol tables) while it is pinned with
//! `dlopen(RTLD_NOLOAD)`, so a concurrent `dlclose` cannot unmap it under the
//! patcher. A slot in a read-only page (RELRO) is made writable for the one
//! store and read-only again. Every store is one aligned word: a thread
//! calling through the slot meanwhile takes the old target or the new one.
//!
//! Left alone: this agent's own library (its calls are its own), the dynamic
//! loader (which allocates through its own pointers) and the vDSO.

use std::ffi::{c_void, CStr, CString};
use std::sync::atomic::{AtomicUsize, Ordering};

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_GNU_RELRO: u32 = 0x6474_e552;
const PF_X: u32 = 1;
const PF_W: u32 = 2;

const DT_NULL: i64 = 0;
const DT_PLTRELSZ: i64 = 2;
const DT_STRTAB: i64 = 5;
const DT_SYMTAB: i64 = 6;
const DT_RELA: i64 = 7;
const DT_RELASZ: i64 = 8;
const DT_RELAENT: i64 = 9;
const DT_STRSZ: i64 = 10;
const DT_PLTREL: i64 = 20;
const DT_JMPREL: i64 = 23;

const R_X86_64_GLOB_DAT: u32 = 6;
const R_X86_64_JUMP_SLOT: u32 = 7;

#[repr(C)]
struct Dyn {
    tag: i64,
    val: u64,
}

#[repr(C)]
struct Rela {
    offset: u64,
    info: u64,
    addend: i64,
}

#[repr(C)]
struct Sym {
    name: u32,
    info: u8,
    other: u8,
    shndx: u16,
    value: u64,
    size: u64,
}

/// A function to divert: its name and the hook that takes its calls.
#[derive(Debug, Clone, Copy)]
pub struct Import {
    pub name: &'static CStr,
    pub hook: usize,
}

/// A loaded object as the dynamic loader lists it.
struct Object {
    name: CString,
    base: usize,
    phdr: *const libc::Elf64_Phdr,
    phnum: usize,
}

impl Object {
    fn headers(&self) -> &[libc::Elf64_Phdr] {
        // SAFETY: the loader's program headers of an object pinned by the caller.
        unsafe { std::slice::from_raw_parts(self.phdr, self.phnum) }
    }

    /// The range `[lo, hi)` of each segment of type `kind`, with its flags.
    fn segments(&self, kind: u32) -> impl Iterator<Item = (usize, usize, u32)> + '_ {
        self.headers()
            .iter()
            .filter(move |p| p.p_type == kind)
            .map(|p| {
                let lo = self.base.wrapping_add(p.p_vaddr as usize);
                (lo, lo.wrapping_add(p.p_memsz as usize), p.p_flags)
            })
    }

    fn contains_code(&self, addr: usize) -> bool {
        self.segments(PT_LOAD)
            .any(|(lo, hi, flags)| flags & PF_X != 0 && lo <= addr && addr < hi)
    }

    /// Whether the agent leaves this object alone by its name: the dynamic
    /// loader and the vDSO.
    fn skipped_by_name(&self) -> bool {
        let name = self.name.to_bytes();
        let file = name.rsplit(|&b| b == b'/').next().unwrap_or(name);
        file.starts_with(b"ld-linux")
            || file.starts_with(b"ld64.so")
            || file.starts_with(b"linux-vdso")
            || file.starts_with(b"linux-gate")
    }
}

/// Every object loaded now (the main program has the empty name).
fn loaded_objects() -> Vec<Object> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid info; data is the caller's Vec.
        unsafe {
            let info = &*info;
            let out = &mut *data.cast::<Vec<Object>>();
            let name = match info.dlpi_name.is_null() {
                true => CString::default(),
                false => CStr::from_ptr(info.dlpi_name).to_owned(),
            };
            out.push(Object {
                name,
                base: info.dlpi_addr as usize,
                phdr: info.dlpi_phdr,
                phnum: info.dlpi_phnum as usize,
            });
        }
        0
    }
    let mut out: Vec<Object> = Vec::new();
    // SAFETY: the callback only reads the entries and pushes to `out`.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut out as *mut Vec<Object>).cast()) };
    out
}

/// The executable segment `[lo, hi)` of the loaded object holding code
/// address `addr`.
pub fn code_range_of(addr: usize) -> Option<(usize, usize)> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid info, whose headers stay mapped
        // during the callback; data is the caller's pair.
        unsafe {
            let info = &*info;
            let want = &mut *data.cast::<(usize, Option<(usize, usize)>)>();
            let headers = std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize);
            for p in headers
                .iter()
                .filter(|p| p.p_type == PT_LOAD && p.p_flags & PF_X != 0)
            {
                let lo = (info.dlpi_addr as usize).wrapping_add(p.p_vaddr as usize);
                let hi = lo.wrapping_add(p.p_memsz as usize);
                if lo <= want.0 && want.0 < hi {
                    want.1 = Some((lo, hi));
                    return 1;
                }
            }
        }
        0
    }
    let mut want: (usize, Option<(usize, usize)>) = (addr, None);
    // SAFETY: the callback only reads the entries and writes `want`.
    unsafe {
        libc::dl_iterate_phdr(
            Some(each),
            (&mut want as *mut (usize, Option<(usize, usize)>)).cast(),
        )
    };
    want.1
}

/// How many objects the dynamic loader has loaded and unloaded so far: when
/// it changes, there may be new objects to patch.
pub fn loader_generation() -> (u64, u64) {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid info; data is the caller's pair.
        unsafe { *data.cast::<(u64, u64)>() = ((*info).dlpi_adds, (*info).dlpi_subs) };
        1
    }
    let mut counts = (0u64, 0u64);
    // SAFETY: the callback only writes the pair passed as data.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut counts as *mut (u64, u64)).cast()) };
    counts
}

/// An object held loaded while it is read and patched.
struct Pinned(*mut c_void);

impl Pinned {
    /// Pins the loaded object `name` if it is still loaded at `base`.
    fn new(name: &CStr, base: usize) -> Option<Pinned> {
        let path = match name.is_empty() {
            true => std::ptr::null(),
            false => name.as_ptr(),
        };
        // SAFETY: RTLD_NOLOAD never loads anything; it takes a reference to an
        // object already loaded, or fails.
        let handle = unsafe { libc::dlopen(path, libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        if handle.is_null() {
            return None;
        }
        let pinned = Pinned(handle);
        let mut map: *mut c_void = std::ptr::null_mut();
        // SAFETY: a valid handle; the link map's first field is its load bias.
        let loaded_at = unsafe {
            match libc::dlinfo(
                handle,
                libc::RTLD_DI_LINKMAP,
                (&mut map as *mut *mut c_void).cast(),
            ) {
                0 if !map.is_null() => *map.cast::<usize>(),
                _ => return None,
            }
        };
        (loaded_at == base).then_some(pinned)
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: the handle dlopen gave.
        unsafe { libc::dlclose(self.0) };
    }
}

/// The slots of `obj`'s relocations (jump slots and GOT entries) that name
/// one of `names`, with the index of the name: `(slot, index)`.
///
/// # Safety
/// `obj` is pinned (its image stays mapped while this reads it).
unsafe fn import_slots(obj: &Object, names: &[&CStr]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let Some((dynamic, _, _)) = obj.segments(PT_DYNAMIC).next() else {
        return out;
    };
    // The loader relocates the dynamic section's addresses (not the vDSO's).
    let at = |v: u64| match (v as usize) < obj.base {
        true => obj.base.wrapping_add(v as usize),
        false => v as usize,
    };
    let (mut strtab, mut strsz, mut symtab) = (0, 0, 0);
    let (mut rela, mut relasz, mut relaent) = (0, 0, std::mem::size_of::<Rela>());
    let (mut jmprel, mut pltrelsz, mut pltrel) = (0, 0, DT_RELA as u64);
    let mut d = dynamic as *const Dyn;
    // SAFETY: the dynamic section of a pinned object ends with DT_NULL.
    unsafe {
        while (*d).tag != DT_NULL {
            let v = (*d).val;
            match (*d).tag {
                DT_STRTAB => strtab = at(v),
                DT_STRSZ => strsz = v as usize,
                DT_SYMTAB => symtab = at(v),
                DT_RELA => rela = at(v),
                DT_RELASZ => relasz = v as usize,
                DT_RELAENT => relaent = v as usize,
                DT_JMPREL => jmprel = at(v),
                DT_PLTRELSZ => pltrelsz = v as usize,
                DT_PLTREL => pltrel = v,
                _ => {}
            }
            d = d.add(1);
        }
    }
    if strtab == 0 || symtab == 0 || relaent < std::mem::size_of::<Rela>() {
        return out;
    }
    let mut tables = vec![(rela, relasz)];
    if pltrel == DT_RELA as u64 {
        tables.push((jmprel, pltrelsz));
    }
    for (table, size) in tables.into_iter().filter(|(t, _)| *t != 0) {
        for i in 0..size / relaent {
            // SAFETY: an entry of the object's relocation table.
            let r = unsafe { &*((table + i * relaent) as *const Rela) };
            let kind = r.info as u32;
            if kind != R_X86_64_JUMP_SLOT && kind != R_X86_64_GLOB_DAT {
                continue;
            }
            let sym_index = (r.info >> 32) as usize;
            // SAFETY: the symbol the relocation names, in the object's table.
            let sym =
                unsafe { &*((symtab + sym_index * std::mem::size_of::<Sym>()) as *const Sym) };
            // The object's calls to a function it defines itself go through a
            // slot too when the definition is interposable (libc's own calls
            // to malloc, from strdup or fopen): those are diverted alike.
            if sym.name as usize >= strsz {
                continue;
            }
            // SAFETY: a NUL-terminated name inside the string table.
            let name =
                unsafe { CStr::from_ptr((strtab + sym.name as usize) as *const libc::c_char) };
            if let Some(index) = names.iter().position(|n| *n == name) {
                out.push((obj.base.wrapping_add(r.offset as usize), index));
            }
        }
    }
    out
}

/// One diverted slot.
#[derive(Debug, Clone, Copy)]
struct Patched {
    slot: usize,
    /// What the slot held before (a resolved function, or the object's own
    /// lazy-binding stub).
    original: usize,
    hook: usize,
}

/// The slots diverted in one object.
#[derive(Debug)]
struct PatchedObject {
    name: CString,
    base: usize,
    slots: Vec<Patched>,
}

/// What a round of patching did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PatchStats {
    /// Objects with at least one slot diverted by this round.
    pub objects: usize,
    /// Slots diverted by this round.
    pub slots: usize,
}

/// The slots this process has diverted, so that they can be given back.
#[derive(Debug, Default)]
pub struct Got {
    objects: Vec<PatchedObject>,
}

impl Got {
    /// Diverts every slot of every loaded object (but the agent's own, the
    /// loader and the vDSO) that names one of `imports` and does not lead to
    /// its hook already. `own` is an address in the agent's code. Off the
    /// hooks' fast paths: it allocates and calls the dynamic loader.
    pub fn patch(&mut self, imports: &[Import], own: usize) -> PatchStats {
        let names: Vec<&CStr> = imports.iter().map(|i| i.name).collect();
        let mut stats = PatchStats::default();
        for obj in loaded_objects() {
            if obj.skipped_by_name() {
                continue;
            }
            let Some(_pin) = Pinned::new(&obj.name, obj.base) else {
                continue;
            };
            if obj.contains_code(own) {
                continue;
            }
            // SAFETY: pinned above.
            let slots = unsafe { import_slots(&obj, &names) };
            let mut diverted = Vec::new();
            for (slot, index) in slots {
                let import = imports[index];
                // SAFETY: a GOT slot of a pinned object: an aligned word.
                let current = unsafe { word(slot) }.load(Ordering::Acquire);
                if current == import.hook {
                    continue;
                }
                // SAFETY: as above; the object's segments say how to write it.
                if unsafe { store(&obj, slot, import.hook) } {
                    diverted.push(Patched {
                        slot,
                        original: current,
                        hook: import.hook,
                    });
                }
            }
            if diverted.is_empty() {
                continue;
            }
            stats.objects += 1;
            stats.slots += diverted.len();
            self.remember(&obj, diverted);
        }
        stats
    }

    fn remember(&mut self, obj: &Object, slots: Vec<Patched>) {
        match self
            .objects
            .iter_mut()
            .find(|o| o.base == obj.base && o.name == obj.name)
        {
            Some(known) => {
                known
                    .slots
                    .retain(|k| !slots.iter().any(|s| s.slot == k.slot));
                known.slots.extend(slots);
            }
            None => self.objects.push(PatchedObject {
                name: obj.name.clone(),
                base: obj.base,
                slots,
            }),
        }
    }

    /// Gives every diverted slot back what it held, in the objects still
    /// loaded where they were; a slot that no longer leads to its hook (the
    /// object was reloaded, or someone else changed it) is left as it is.
    /// Returns the slots restored.
    pub fn restore(&mut self) -> usize {
        let mut restored = 0;
        let loaded = loaded_objects();
        for patched in std::mem::take(&mut self.objects) {
            let Some(obj) = loaded
                .iter()
                .find(|o| o.base == patched.base && o.name == patched.name)
            else {
                continue;
            };
            let Some(_pin) = Pinned::new(&obj.name, obj.base) else {
                continue;
            };
            for p in patched.slots {
                // SAFETY: a slot of the pinned object, written by `patch`.
                let current = unsafe { word(p.slot) }.load(Ordering::Acquire);
                // SAFETY: as above.
                if current == p.hook && unsafe { store(obj, p.slot, p.original) } {
                    restored += 1;
                }
            }
        }
        restored
    }
}

/// The word at `slot` as an atomic.
///
/// # Safety
/// `slot` is an aligned, mapped word that stays mapped while used.
unsafe fn word<'a>(slot: usize) -> &'a AtomicUsize {
    // SAFETY: the caller's promise.
    unsafe { AtomicUsize::from_ptr(slot as *mut usize) }
}

/// Stores `value` in `slot` of `obj`, opening the page for the store when
/// the slot's segment is read-only (RELRO, or a segment without PF_W) and
/// closing it again. False when the page could not be opened.
///
/// # Safety
/// `slot` is a GOT slot of `obj`, which is pinned.
unsafe fn store(obj: &Object, slot: usize, value: usize) -> bool {
    let page = page_size();
    // The loader makes read-only the whole pages of the RELRO segment only: a
    // last partial page stays writable (it holds data the program writes).
    let relro = obj
        .segments(PT_GNU_RELRO)
        .any(|(lo, hi, _)| lo <= slot && slot < hi & !(page - 1));
    let segment = obj
        .segments(PT_LOAD)
        .find(|&(lo, hi, _)| lo <= slot && slot < hi);
    let Some((_, _, flags)) = segment else {
        return false;
    };
    if !slot.is_multiple_of(std::mem::size_of::<usize>()) {
        return false;
    }
    let writable = flags & PF_W != 0 && !relro;
    if writable {
        // SAFETY: the caller's promise; the segment is writable.
        unsafe { word(slot) }.store(value, Ordering::Release);
        return true;
    }
    let start = (slot & !(page - 1)) as *mut c_void;
    let closed = match (relro, flags & PF_X != 0) {
        (true, _) | (false, false) => libc::PROT_READ,
        (false, true) => libc::PROT_READ | libc::PROT_EXEC,
    };
    // SAFETY: the page of a mapped slot; its protection is set back below.
    if unsafe { libc::mprotect(start, page, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
        return false;
    }
    // SAFETY: the caller's promise; the page is writable now.
    unsafe { word(slot) }.store(value, Ordering::Release);
    // SAFETY: as above.
    unsafe { libc::mprotect(start, page, closed) };
    true
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 => n as usize,
        _ => 4096,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_and_the_loader_are_left_alone() {
        let own = Got::patch as *const () as usize;
        let objects = loaded_objects();
        let mine = objects.iter().filter(|o| o.contains_code(own)).count();
        assert_eq!(mine, 1, "this test binary holds its own code");
        let (lo, hi) = code_range_of(own).expect("own code");
        assert!(lo <= own && own < hi);
        let loader = objects
            .iter()
            .find(|o| o.name.to_bytes().windows(8).any(|w| w == b"ld-linux"));
        assert!(loader.is_some_and(|l| l.skipped_by_name()));
        let libc = objects
            .iter()
            .find(|o| o.name.to_bytes().ends_with(b"libc.so.6"))
            .expect("libc is loaded");
        assert!(!libc.skipped_by_name() && !libc.contains_code(own));
    }

    #[test]
    fn libc_imports_its_allocator_through_slots_that_lead_to_it() {
        let objects = loaded_objects();
        let libc = objects
            .iter()
            .find(|o| o.name.to_bytes().ends_with(b"libc.so.6"))
            .expect("libc is loaded");
        let _pin = Pinned::new(&libc.name, libc.base).expect("libc pins");
        let names = [c"malloc", c"no_such_function"];
        // SAFETY: pinned above.
        let slots = unsafe { import_slots(libc, &names) };
        assert!(slots.iter().any(|&(_, i)| i == 0), "{slots:?}");
        assert!(slots.iter().all(|&(_, i)| i == 0));
    }

    #[test]
    fn an_object_loaded_elsewhere_is_not_pinned() {
        let objects = loaded_objects();
        let libc = objects
            .iter()
            .find(|o| o.name.to_bytes().ends_with(b"libc.so.6"))
            .unwrap();
        assert!(Pinned::new(&libc.name, libc.base + 4096).is_none());
        assert!(Pinned::new(c"/no/such/libx.so", 0).is_none());
    }
}
