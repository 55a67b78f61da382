//! Native code addresses to names: the process's mappings from `/proc/self/maps`, and
//! the ELF64 symbol tables (`.symtab` and `.dynsym`) of the mapped libraries, read from
//! their files (and from `/usr/lib/debug` when a separate debug file is installed).
//!
//! Runs on the writer thread, never in a signal handler: it allocates and reads files.
//! Every read of an ELF file is bounds-checked; a damaged or unexpected file gives no
//! symbols (the frame is then named by its offset), never a panic.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What an address resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// The file name of the library (or executable) holding the address, e.g.
    /// `libc.so.6`; `[vdso]` for the kernel's vDSO.
    pub lib: Arc<str>,
    /// The function holding the address, demangled (C++ without its parameter list,
    /// Rust without its hash); `None` when no symbol covers the address.
    pub name: Option<String>,
    /// The address relative to the library's load base: its ELF virtual address, as
    /// `addr2line -e LIB` takes it (a file offset when the file is not a readable ELF).
    pub offset: u64,
}

/// Resolves addresses of this process's native code. Not for a signal handler.
pub struct Symbolizer {
    maps: Vec<Mapping>,
    libs: Vec<Lib>,
    /// Library index by (path, device, inode), so a refresh keeps tables already read.
    by_file: HashMap<(String, String, u64), usize>,
    last_refresh: Instant,
    /// The dynamic loader's (loads, unloads) counts when the maps were read:
    /// a library loaded since is read at once, not after REFRESH_AFTER.
    loader_counts: (u64, u64),
    maps_path: PathBuf,
}

/// How long after reading the maps an address in no known mapping reads them again:
/// addresses of JIT-compiled code (anonymous mappings) would otherwise re-read them
/// for every frame.
const REFRESH_AFTER: Duration = Duration::from_millis(200);

#[derive(Debug, Clone)]
struct Mapping {
    start: u64,
    end: u64,
    file_offset: u64,
    lib: usize,
}

struct Lib {
    path: String,
    name: Arc<str>,
    /// Read on first use: `None` until then, `Some(None)` when the file has no symbols.
    elf: Option<Option<ElfSymbols>>,
    /// For `[vdso]`: where its image is mapped in this process.
    in_memory: Option<(u64, u64)>,
}

impl Symbolizer {
    /// Reads `/proc/self/maps`. Libraries' symbol tables are read on first lookup.
    pub fn new() -> Symbolizer {
        Symbolizer::with_maps("/proc/self/maps")
    }

    fn with_maps(path: impl Into<PathBuf>) -> Symbolizer {
        let mut s = Symbolizer {
            maps: Vec::new(),
            libs: Vec::new(),
            by_file: HashMap::new(),
            last_refresh: Instant::now(),
            loader_counts: (0, 0),
            maps_path: path.into(),
        };
        s.refresh();
        s
    }

    /// Reads the mappings again (a library loaded or unloaded since).
    pub fn refresh(&mut self) {
        self.last_refresh = Instant::now();
        self.loader_counts = loader_counts();
        let Ok(text) = std::fs::read_to_string(&self.maps_path) else {
            return;
        };
        let mut maps = Vec::new();
        for line in text.lines() {
            let Some(m) = parse_maps_line(line) else {
                continue;
            };
            let key = (m.path.clone(), m.dev.clone(), m.inode);
            let lib = match self.by_file.get(&key) {
                Some(&i) => i,
                None => {
                    let i = self.libs.len();
                    let in_memory = (m.path == "[vdso]").then_some((m.start, m.end));
                    self.libs.push(Lib {
                        name: lib_name(&m.path),
                        path: m.path,
                        elf: None,
                        in_memory,
                    });
                    self.by_file.insert(key, i);
                    i
                }
            };
            maps.push(Mapping {
                start: m.start,
                end: m.end,
                file_offset: m.offset,
                lib,
            });
        }
        maps.sort_by_key(|m| m.start);
        self.maps = maps;
    }

    /// The library and function holding `pc`; `None` when `pc` is in no file-backed
    /// mapping (JIT-compiled code, an unmapped address). An address in no known mapping
    /// reads the maps again first: at once when the dynamic loader loaded or
    /// unloaded an object since they were read, else at most every 200 ms.
    pub fn lookup(&mut self, pc: u64) -> Option<Symbol> {
        let m = match self.mapping(pc) {
            Some(m) => m,
            None => {
                let loaded = loader_counts() != self.loader_counts;
                if !loaded && self.last_refresh.elapsed() < REFRESH_AFTER {
                    return None;
                }
                self.refresh();
                self.mapping(pc)?
            }
        };
        let lib = &mut self.libs[m.lib];
        let file_offset = pc - m.start + m.file_offset;
        lib.load();
        let Some(Some(elf)) = &lib.elf else {
            return Some(Symbol {
                lib: lib.name.clone(),
                name: None,
                offset: file_offset,
            });
        };
        let vaddr = if lib.in_memory.is_some() {
            // The vDSO's mapping starts at its image's first byte, file offset 0.
            elf.file_offset_to_vaddr(pc - m.start)
        } else {
            elf.file_offset_to_vaddr(file_offset)
        };
        Some(Symbol {
            lib: lib.name.clone(),
            name: elf.name_at(vaddr),
            offset: vaddr,
        })
    }

    /// Reads the symbol tables of every library mapped now, so that lookups find
    /// them ready (the writer must not stall on a large library's tables while
    /// other engines' bounded queues fill).
    pub fn preload(&mut self) {
        for lib in &mut self.libs {
            lib.load();
        }
        // Reading them took a while: libraries loaded meanwhile are found at once.
        self.refresh();
    }

    fn mapping(&self, pc: u64) -> Option<Mapping> {
        let i = self.maps.partition_point(|m| m.start <= pc);
        let m = self.maps.get(i.checked_sub(1)?)?;
        (pc < m.end).then(|| m.clone())
    }
}

impl Default for Symbolizer {
    fn default() -> Self {
        Symbolizer::new()
    }
}

impl Lib {
    /// Reads the library's symbol table, once.
    fn load(&mut self) {
        if self.elf.is_none() {
            self.elf = Some(match self.in_memory {
                // SAFETY: the vDSO is mapped readable for the life of the process, at
                // the range /proc/self/maps gave for it.
                Some((start, end)) => unsafe {
                    let image =
                        std::slice::from_raw_parts(start as *const u8, (end - start) as usize);
                    ElfSymbols::from_source(&Source::Memory(image))
                },
                None => ElfSymbols::load(Path::new(&self.path)),
            });
        }
    }
}

/// A mapping of a file or the vDSO, from one line of /proc/PID/maps.
pub(super) struct MapsLine {
    pub start: u64,
    pub end: u64,
    /// `r-xp` and the like.
    pub perms: String,
    pub offset: u64,
    pub dev: String,
    pub inode: u64,
    pub path: String,
}

/// One line of /proc/PID/maps: `start-end perms offset dev inode path`. Only mappings
/// of files (absolute paths) and the vDSO are kept.
pub(super) fn parse_maps_line(line: &str) -> Option<MapsLine> {
    let mut it = line.splitn(6, ' ');
    let (range, perms, offset, dev, inode) =
        (it.next()?, it.next()?, it.next()?, it.next()?, it.next()?);
    let path = it.next().unwrap_or("").trim_start();
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    if !(path.starts_with('/') || path == "[vdso]") {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    Some(MapsLine {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        perms: perms.to_string(),
        offset: u64::from_str_radix(offset, 16).ok()?,
        dev: dev.to_string(),
        inode: inode.parse().ok()?,
        path: path.to_string(),
    })
}

fn lib_name(path: &str) -> Arc<str> {
    Arc::from(path.rsplit('/').next().unwrap_or(path))
}

/// The function symbols of one ELF file, sorted by address, and how its file offsets
/// map to virtual addresses.
pub struct ElfSymbols {
    loads: Vec<Load>,
    syms: Vec<Sym>,
    names: Vec<u8>,
}

#[derive(Debug, Clone, Copy)]
struct Load {
    offset: u64,
    vaddr: u64,
    filesz: u64,
}

#[derive(Debug, Clone, Copy)]
struct Sym {
    addr: u64,
    size: u64,
    name: u32,
    name_len: u32,
    bind: u8,
}

/// How far past a symbol without a size an address is still taken to be in it.
const SIZELESS_SPAN: u64 = 4096;

/// Where ELF bytes come from: a file read piecewise, or an image in memory.
enum Source<'a> {
    File(File),
    Memory(&'a [u8]),
}

/// Largest single read of an ELF structure (a symbol or string table).
const MAX_READ: u64 = 1 << 30;

impl Source<'_> {
    fn read(&self, offset: u64, len: u64) -> Option<Vec<u8>> {
        if len > MAX_READ {
            return None;
        }
        match self {
            Source::File(f) => {
                let mut buf = vec![0u8; len as usize];
                f.read_exact_at(&mut buf, offset).ok()?;
                Some(buf)
            }
            Source::Memory(m) => {
                let start = usize::try_from(offset).ok()?;
                let end = start.checked_add(len as usize)?;
                m.get(start..end).map(<[u8]>::to_vec)
            }
        }
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
const SHT_SYMTAB: u32 = 2;
const SHT_DYNSYM: u32 = 11;
const SHT_NOBITS: u32 = 8;
const SHF_COMPRESSED: u64 = 0x800;
const STT_FUNC: u8 = 2;
const STT_GNU_IFUNC: u8 = 10;
const NT_GNU_BUILD_ID: u32 = 3;

struct Section {
    kind: u32,
    flags: u64,
    offset: u64,
    size: u64,
    link: u32,
    entsize: u64,
}

/// What one ELF file holds that symbolising needs.
struct Parsed {
    loads: Vec<Load>,
    build_id: Option<Vec<u8>>,
    syms: Vec<Sym>,
    names: Vec<u8>,
}

impl ElfSymbols {
    /// Reads the symbol tables of the ELF file at `path`, and of its separate debug
    /// file under `/usr/lib/debug` when one is installed. `None` when the file is not a
    /// readable little-endian ELF64 file.
    pub fn load(path: &Path) -> Option<ElfSymbols> {
        ElfSymbols::load_with_debug_root(path, Path::new("/usr/lib/debug"))
    }

    /// For each prefix, the first symbol of the file's own tables whose name
    /// starts with it, of any kind (a function, a variable, a label): its
    /// address in the file and size. One read of the tables for them all.
    pub fn find_all(path: &Path, prefixes: &[&str]) -> Vec<Option<(u64, u64)>> {
        let mut out = vec![None; prefixes.len()];
        let Ok(file) = File::open(path) else {
            return out;
        };
        let src = Source::File(file);
        let Some(sections) = src.read(0, 64).and_then(|eh| read_sections(&src, &eh)) else {
            return out;
        };
        // Names are compared where they lie in the string table: libjvm's
        // tables hold tens of thousands of symbols, and copying them all to
        // find four cost more than the rest of the walker's start.
        for kind in [SHT_SYMTAB, SHT_DYNSYM] {
            for table in sections.iter().filter(|s| s.kind == kind) {
                each_symbol(&src, table, &sections, |name, addr, size, kind, _| {
                    if kind > STT_FUNC && kind != STT_GNU_IFUNC {
                        return;
                    }
                    for (slot, prefix) in out.iter_mut().zip(prefixes) {
                        if slot.is_none() && name.starts_with(prefix.as_bytes()) {
                            *slot = Some((addr, size));
                        }
                    }
                });
            }
        }
        out
    }

    fn load_with_debug_root(path: &Path, debug_root: &Path) -> Option<ElfSymbols> {
        let file = File::open(path).ok()?;
        let mut main = parse(&Source::File(file), true)?;
        for debug in debug_files(path, main.build_id.as_deref(), debug_root) {
            let Ok(f) = File::open(&debug) else {
                continue;
            };
            let Some(d) = parse(&Source::File(f), true) else {
                continue;
            };
            if main.build_id.is_some() && d.build_id != main.build_id {
                continue;
            }
            let base = main.names.len() as u64;
            if base + d.names.len() as u64 > u32::MAX as u64 {
                break;
            }
            main.names.extend_from_slice(&d.names);
            main.syms.extend(d.syms.into_iter().map(|mut s| {
                s.name += base as u32;
                s
            }));
            break;
        }
        Some(ElfSymbols::from_parsed(main))
    }

    fn from_source(src: &Source) -> Option<ElfSymbols> {
        parse(src, true).map(ElfSymbols::from_parsed)
    }

    fn from_parsed(p: Parsed) -> ElfSymbols {
        let mut syms = p.syms;
        let names = p.names;
        syms.sort_by(|a, b| {
            a.addr
                .cmp(&b.addr)
                .then_with(|| rank(a, &names).cmp(&rank(b, &names)))
        });
        // One symbol per address: aliases (`getpid` and `__getpid`) keep the best name.
        syms.dedup_by_key(|s| s.addr);
        ElfSymbols {
            loads: p.loads,
            syms,
            names,
        }
    }

    /// The address and size of the first function (by address) whose raw
    /// (mangled) name starts with `prefix`.
    pub fn find_prefix(&self, prefix: &str) -> Option<(u64, u64)> {
        self.syms
            .iter()
            .find(|s| self.raw_name(s).is_some_and(|n| n.starts_with(prefix)))
            .map(|s| (s.addr, s.size))
    }

    /// How many function symbols the file has.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The virtual address a file offset is loaded at.
    fn file_offset_to_vaddr(&self, fo: u64) -> u64 {
        self.loads
            .iter()
            .find(|l| fo >= l.offset && fo - l.offset < l.filesz)
            .map_or(fo, |l| fo - l.offset + l.vaddr)
    }

    /// The demangled name of the function holding virtual address `vaddr`.
    pub fn name_at(&self, vaddr: u64) -> Option<String> {
        let i = self.syms.partition_point(|s| s.addr <= vaddr);
        // The nearest preceding symbol, unless its size says the address is past its
        // end; then a few before it, which may enclose it (a function and a smaller
        // one at an address inside it).
        for s in self.syms[..i].iter().rev().take(8) {
            if s.size == 0 && s.addr == self.syms[i - 1].addr && vaddr - s.addr < SIZELESS_SPAN {
                // No size (hand-written assembly): the nearest symbol is the best
                // guess, near it (far past it is other code: PLT stubs after `_init`).
                return Some(demangle(self.raw_name(s)?));
            }
            if vaddr - s.addr < s.size {
                return Some(demangle(self.raw_name(s)?));
            }
        }
        None
    }

    fn raw_name(&self, s: &Sym) -> Option<&str> {
        let start = s.name as usize;
        let bytes = self.names.get(start..start + s.name_len as usize)?;
        std::str::from_utf8(bytes).ok()
    }
}

/// Which of several symbols at one address names it: fewest leading underscores, then
/// global before weak before local, then shortest.
fn rank(s: &Sym, names: &[u8]) -> (usize, u8, u32) {
    let start = s.name as usize;
    let name = names.get(start..start + s.name_len as usize).unwrap_or(&[]);
    let underscores = name.iter().take_while(|&&c| c == b'_').count();
    let bind = match s.bind {
        1 => 0,
        2 => 1,
        _ => 2,
    };
    (underscores, bind, s.name_len)
}

/// Candidate separate debug files for `path`: by build id, then by path.
fn debug_files(path: &Path, build_id: Option<&[u8]>, root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(id) = build_id.filter(|id| id.len() >= 2) {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        out.push(
            root.join(".build-id")
                .join(&hex[..2])
                .join(format!("{}.debug", &hex[2..])),
        );
    }
    if let Ok(rel) = path.strip_prefix("/") {
        out.push(root.join(rel));
        let mut with_ext = root.join(rel).into_os_string();
        with_ext.push(".debug");
        out.push(PathBuf::from(with_ext));
    }
    out
}

/// Parses the headers, the build id and (`want_symbols`) the function
/// symbols of an ELF64 LE file.
fn parse(src: &Source, want_symbols: bool) -> Option<Parsed> {
    let eh = src.read(0, 64)?;
    let sections = read_sections(src, &eh)?;
    let phoff = u64_at(&eh, 0x20)?;
    let phentsize = u16_at(&eh, 0x36)? as u64;
    let mut phnum = u16_at(&eh, 0x38)? as u64;
    if phnum == 0xffff {
        // Extended numbering: the real count lives in section 0.
        let shoff = u64_at(&eh, 0x28)?;
        phnum = u32_at(&src.read(shoff, 64)?, 44)? as u64;
    }

    let mut loads = Vec::new();
    let mut build_id = None;
    if phoff != 0 && phentsize >= 56 && phnum <= 1 << 16 {
        let table = src.read(phoff, phnum.checked_mul(phentsize)?)?;
        for i in 0..phnum as usize {
            let at = i * phentsize as usize;
            let kind = u32_at(&table, at)?;
            let offset = u64_at(&table, at + 8)?;
            let vaddr = u64_at(&table, at + 16)?;
            let filesz = u64_at(&table, at + 32)?;
            match kind {
                PT_LOAD => loads.push(Load {
                    offset,
                    vaddr,
                    filesz,
                }),
                PT_NOTE if build_id.is_none() && filesz <= 1 << 16 => {
                    if let Some(notes) = src.read(offset, filesz) {
                        build_id = find_build_id(&notes);
                    }
                }
                _ => {}
            }
        }
    }

    let mut syms = Vec::new();
    let mut names = Vec::new();
    if want_symbols {
        for kind in [SHT_SYMTAB, SHT_DYNSYM] {
            for s in sections.iter().filter(|s| s.kind == kind) {
                read_symbols(src, s, &sections, &mut syms, &mut names);
            }
        }
    }
    Some(Parsed {
        loads,
        build_id,
        syms,
        names,
    })
}

/// The section headers of an ELF64 LE file whose first 64 bytes are `eh`
/// (none when it has no section table).
fn read_sections(src: &Source, eh: &[u8]) -> Option<Vec<Section>> {
    if eh.get(0..4)? != b"\x7fELF" || eh[4] != 2 || eh[5] != 1 {
        return None;
    }
    let shoff = u64_at(eh, 0x28)?;
    let shentsize = u16_at(eh, 0x3a)? as u64;
    let mut shnum = u16_at(eh, 0x3c)? as u64;
    let mut sections = Vec::new();
    if shoff == 0 || shentsize < 64 {
        return Some(sections);
    }
    if shnum == 0 {
        // Extended numbering: the real count lives in section 0.
        shnum = u64_at(&src.read(shoff, 64)?, 32)?;
    }
    if shnum > 1 << 20 {
        return None;
    }
    let table = src.read(shoff, shnum.checked_mul(shentsize)?)?;
    for i in 0..shnum as usize {
        let at = i * shentsize as usize;
        sections.push(Section {
            kind: u32_at(&table, at + 4)?,
            flags: u64_at(&table, at + 8)?,
            offset: u64_at(&table, at + 24)?,
            size: u64_at(&table, at + 32)?,
            link: u32_at(&table, at + 40)?,
            entsize: u64_at(&table, at + 56)?,
        });
    }
    Some(sections)
}

/// The GNU build id among ELF notes.
fn find_build_id(notes: &[u8]) -> Option<Vec<u8>> {
    let mut at = 0usize;
    while at + 12 <= notes.len() {
        let namesz = u32_at(notes, at)? as usize;
        let descsz = u32_at(notes, at + 4)? as usize;
        let kind = u32_at(notes, at + 8)?;
        let name_at = at + 12;
        let desc_at = name_at.checked_add(namesz.checked_add(3)? & !3)?;
        let next = desc_at.checked_add(descsz.checked_add(3)? & !3)?;
        if kind == NT_GNU_BUILD_ID && notes.get(name_at..name_at + namesz)? == b"GNU\0" {
            return notes.get(desc_at..desc_at + descsz).map(<[u8]>::to_vec);
        }
        at = next;
    }
    None
}

/// Appends the function symbols of one symbol table section, their names copied into
/// `names`. A table that cannot be read is skipped.
fn read_symbols(
    src: &Source,
    table: &Section,
    sections: &[Section],
    syms: &mut Vec<Sym>,
    names: &mut Vec<u8>,
) {
    each_symbol(src, table, sections, |name, addr, size, kind, bind| {
        if kind != STT_FUNC && kind != STT_GNU_IFUNC {
            return;
        }
        if names.len() + name.len() > u32::MAX as usize {
            return;
        }
        syms.push(Sym {
            addr,
            size,
            name: names.len() as u32,
            name_len: name.len() as u32,
            bind,
        });
        names.extend_from_slice(name);
    });
}

/// Calls `f(name, address, size, type, binding)` for each defined, named
/// symbol of one symbol table section, its name where it lies in the string
/// table. A table that cannot be read is skipped.
fn each_symbol(
    src: &Source,
    table: &Section,
    sections: &[Section],
    mut f: impl FnMut(&[u8], u64, u64, u8, u8),
) {
    let Some(strtab) = sections.get(table.link as usize) else {
        return;
    };
    if table.flags & SHF_COMPRESSED != 0
        || strtab.flags & SHF_COMPRESSED != 0
        || table.kind == SHT_NOBITS
        || strtab.kind == SHT_NOBITS
        || table.entsize < 24
    {
        return;
    }
    let (Some(data), Some(strings)) = (
        src.read(table.offset, table.size),
        src.read(strtab.offset, strtab.size),
    ) else {
        return;
    };
    for e in data.chunks_exact(table.entsize as usize) {
        let (Some(name_off), Some(value), Some(size)) = (u32_at(e, 0), u64_at(e, 8), u64_at(e, 16))
        else {
            continue;
        };
        let info = e[4];
        let shndx = u16_at(e, 6).unwrap_or(0);
        if value == 0 || shndx == 0 {
            continue;
        }
        let Some(rest) = strings.get(name_off as usize..) else {
            continue;
        };
        let len = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
        if len > 0 {
            f(&rest[..len], value, size, info & 0xf, info >> 4);
        }
    }
}

/// A symbol as people read it: C++ names demangled without their parameter lists, Rust
/// names without their hash; others (C) as they are.
pub fn demangle(name: &str) -> String {
    if !(name.starts_with("_Z") || name.starts_with("_R")) {
        return name.to_string();
    }
    // The demanglers are fuzzed, but a panic here must not take down the writer thread.
    std::panic::catch_unwind(|| demangle_inner(name))
        .ok()
        .flatten()
        .unwrap_or_else(|| name.to_string())
}

fn demangle_inner(name: &str) -> Option<String> {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        let text = format!("{d:#}");
        // Legacy Rust names are C++-mangled paths with a hash; a C++ name that happens
        // to parse as one keeps its C++ reading below.
        if name.starts_with("_R") || is_rust_legacy(name) {
            return Some(text);
        }
    }
    let sym = cpp_demangle::Symbol::new(name).ok()?;
    let options = cpp_demangle::DemangleOptions::new()
        .no_params()
        .no_return_type();
    sym.demangle(&options).ok()
}

/// `_ZN...17h<16 hex>E`: the hash rustc's legacy mangling ends a path with,
/// then the end or a `.suffix` (`.llvm.123`); a segment may hold a dot of its
/// own (`vtable.shim`).
fn is_rust_legacy(name: &str) -> bool {
    let b = name.as_bytes();
    name.match_indices("17h").any(|(i, _)| {
        let (hash, rest) = (i + 3, i + 19);
        b.get(hash..rest)
            .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
            && b.get(rest) == Some(&b'E')
            && matches!(b.get(rest + 1), None | Some(b'.'))
    })
}

/// How many objects the dynamic loader has loaded and unloaded so far.
pub(crate) fn loader_counts() -> (u64, u64) {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut std::ffi::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid info; data is the caller's pair.
        unsafe {
            let info = &*info;
            *data.cast::<(u64, u64)>() = (info.dlpi_adds, info.dlpi_subs);
        }
        1 // the counters are the same in every entry: stop at the first
    }
    let mut counts = (0u64, 0u64);
    // SAFETY: the callback only writes the pair passed as data.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut counts as *mut (u64, u64)).cast()) };
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::process::Command;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "jscope-elf-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_libc_function_resolves_to_its_name_in_libc() {
        let mut s = Symbolizer::new();
        let pc = libc::getpid as *const () as usize as u64;
        let sym = s.lookup(pc + 2).expect("getpid is in a mapped file");
        assert!(sym.lib.starts_with("libc.so"), "{sym:?}");
        assert_eq!(sym.name.as_deref(), Some("getpid"), "{sym:?}");
        assert!(sym.offset > 0 && sym.offset < pc, "{sym:?}");
    }

    #[test]
    fn an_anonymous_or_unmapped_address_is_none() {
        let mut s = Symbolizer::new();
        assert_eq!(s.lookup(8), None);
        let heap = Box::new(7u64);
        assert_eq!(s.lookup(&*heap as *const u64 as u64), None);
    }

    /// Builds a shared library with an exported C function, a static (`.symtab`-only)
    /// one and a C++ method, loads it after the symbolizer read the maps, and resolves
    /// each to its name.
    #[test]
    fn a_library_loaded_later_resolves_exported_static_and_cpp_functions() {
        let dir = temp_dir("lib");
        let src = dir.join("spin.cc");
        std::fs::write(
            &src,
            r#"
            namespace jscope_test { struct Spinner { static long spin(long n); }; }
            long jscope_test::Spinner::spin(long n) { volatile long s = 0; for (long i = 0; i < n; i++) s += i; return s; }
            static long __attribute__((noinline)) hidden_helper(long n) { volatile long s = n; return s * 3; }
            extern "C" long jscope_spin_native(long n) { return hidden_helper(n) + jscope_test::Spinner::spin(n); }
            extern "C" void *jscope_helper_address(void) { return (void *)&hidden_helper; }
            extern "C" void *jscope_method_address(void) { return (void *)&jscope_test::Spinner::spin; }
            "#,
        )
        .unwrap();
        let so = dir.join("libjscopespin.so");
        let out = Command::new("g++")
            .args(["-shared", "-fPIC", "-O1", "-g0", "-o"])
            .arg(&so)
            .arg(&src)
            .output()
            .expect("g++ runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );

        let mut s = Symbolizer::new();
        let path = CString::new(so.to_str().unwrap()).unwrap();
        // SAFETY: a library built above, with no constructors.
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW) };
        assert!(!handle.is_null());
        let f = |name: &str| {
            let c = CString::new(name).unwrap();
            // SAFETY: handle is open; the symbol is a function of the library.
            unsafe { libc::dlsym(handle, c.as_ptr()) as u64 }
        };
        let exported = f("jscope_spin_native");
        assert_ne!(exported, 0);
        // Past the maps' refresh interval, the new library's address reads them again.
        s.last_refresh -= REFRESH_AFTER;
        let sym = s
            .lookup(exported + 1)
            .expect("refresh finds the new library");
        assert_eq!(&*sym.lib, "libjscopespin.so");
        assert_eq!(sym.name.as_deref(), Some("jscope_spin_native"));

        // SAFETY: functions of the library that return addresses.
        let (helper, method) = unsafe {
            let h: extern "C" fn() -> u64 = std::mem::transmute(f("jscope_helper_address"));
            let m: extern "C" fn() -> u64 = std::mem::transmute(f("jscope_method_address"));
            (h(), m())
        };
        assert_eq!(
            s.lookup(helper).unwrap().name.as_deref(),
            Some("hidden_helper")
        );
        assert_eq!(
            s.lookup(method + 3).unwrap().name.as_deref(),
            Some("jscope_test::Spinner::spin")
        );

        // The same file read directly agrees, and knows the static function only from
        // its .symtab: stripped of it, the address gets no name.
        let elf = ElfSymbols::load(&so).unwrap();
        assert!(elf.len() >= 5);
        let stripped = dir.join("libstripped.so");
        let st = Command::new("strip")
            .arg("-o")
            .arg(&stripped)
            .arg(&so)
            .status()
            .unwrap();
        assert!(st.success());
        let full_vaddr = s.lookup(helper).unwrap().offset;
        let bare = ElfSymbols::load_with_debug_root(&stripped, &dir.join("none")).unwrap();
        assert_eq!(bare.name_at(full_vaddr), None);
        // ... and a debug file found by build id brings the name back.
        let id = parse(&Source::File(File::open(&so).unwrap()), false)
            .unwrap()
            .build_id
            .expect("gcc writes a build id");
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let debug_dir = dir.join("debug/.build-id").join(&hex[..2]);
        std::fs::create_dir_all(&debug_dir).unwrap();
        let debug_file = debug_dir.join(format!("{}.debug", &hex[2..]));
        let st = Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(&so)
            .arg(&debug_file)
            .status()
            .unwrap();
        assert!(st.success());
        let with_debug = ElfSymbols::load_with_debug_root(&stripped, &dir.join("debug")).unwrap();
        assert_eq!(
            with_debug.name_at(full_vaddr).as_deref(),
            Some("hidden_helper")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_size_that_ends_before_the_address_gives_no_name() {
        let names = b"small\0big\0".to_vec();
        let elf = ElfSymbols::from_parsed(Parsed {
            loads: vec![],
            build_id: None,
            syms: vec![
                Sym {
                    addr: 0x1000,
                    size: 0x10,
                    name: 0,
                    name_len: 5,
                    bind: 1,
                },
                Sym {
                    addr: 0x2000,
                    size: 0x100,
                    name: 6,
                    name_len: 3,
                    bind: 1,
                },
                Sym {
                    addr: 0x2010,
                    size: 0x8,
                    name: 0,
                    name_len: 5,
                    bind: 0,
                },
            ],
            names,
        });
        assert_eq!(elf.name_at(0x1008).as_deref(), Some("small"));
        assert_eq!(elf.name_at(0x1010), None);
        assert_eq!(elf.name_at(0xfff), None);
        // Past the small symbol inside the big one: the big one encloses it.
        assert_eq!(elf.name_at(0x2080).as_deref(), Some("big"));
        assert_eq!(elf.name_at(0x2012).as_deref(), Some("small"));
        assert_eq!(elf.name_at(0x2100), None);
    }

    #[test]
    fn a_symbol_without_a_size_covers_only_what_is_near_it() {
        let elf = ElfSymbols::from_parsed(Parsed {
            loads: vec![],
            build_id: None,
            syms: vec![Sym {
                addr: 0x1000,
                size: 0,
                name: 0,
                name_len: 5,
                bind: 1,
            }],
            names: b"_init".to_vec(),
        });
        assert_eq!(elf.name_at(0x1010).as_deref(), Some("_init"));
        assert_eq!(elf.name_at(0x1000 + SIZELESS_SPAN), None);
    }

    #[test]
    fn damaged_elf_files_give_none_or_fewer_symbols_never_a_panic() {
        let dir = temp_dir("bad");
        let garbage = dir.join("garbage.so");
        std::fs::write(&garbage, b"not an elf at all").unwrap();
        assert!(ElfSymbols::load(&garbage).is_none());
        assert!(ElfSymbols::load(&dir.join("missing.so")).is_none());
        // A real library cut short and with bytes overwritten, at many places.
        let libc_path = std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter_map(parse_maps_line)
            .find(|m| lib_name(&m.path).starts_with("libc.so"))
            .unwrap()
            .path;
        let image = std::fs::read(libc_path).unwrap();
        let mut seed = 0x2545f4914f6cdd1du64;
        for round in 0..200 {
            let mut bytes = image.clone();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            if round % 2 == 0 {
                bytes.truncate(seed as usize % image.len());
            } else {
                // Headers and tables are where the damage matters: hit the first 4 KiB
                // and the section header table at the end.
                for k in 0..16 {
                    let span = if k % 2 == 0 { 4096 } else { 8192 };
                    let at = if k % 2 == 0 {
                        (seed >> k) as usize % span
                    } else {
                        bytes.len() - 1 - (seed >> k) as usize % span
                    };
                    bytes[at] = (seed >> (k * 3)) as u8;
                }
            }
            let elf = ElfSymbols::from_source(&Source::Memory(&bytes));
            if let Some(elf) = elf {
                for probe in 0..64u64 {
                    let _ = elf.name_at(probe.wrapping_mul(seed) % 0x20_0000);
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_vdso_resolves_from_memory() {
        let mut s = Symbolizer::new();
        let Some(vdso) = s
            .maps
            .iter()
            .find(|m| s.libs[m.lib].path == "[vdso]")
            .cloned()
        else {
            return; // no vDSO on this kernel
        };
        // clock_gettime in the vDSO: the first function symbol's address.
        let elf = {
            let lib = &s.libs[vdso.lib];
            let (start, end) = lib.in_memory.unwrap();
            // SAFETY: the vDSO's mapping, as above.
            let image =
                unsafe { std::slice::from_raw_parts(start as *const u8, (end - start) as usize) };
            ElfSymbols::from_source(&Source::Memory(image)).unwrap()
        };
        let first = elf.syms[0];
        let pc = vdso.start + first.addr - elf.loads[0].vaddr + elf.loads[0].offset;
        let sym = s.lookup(pc + 1).unwrap();
        assert_eq!(&*sym.lib, "[vdso]");
        assert_eq!(sym.name, Some(demangle(elf.raw_name(&first).unwrap())));
    }

    #[test]
    fn cpp_and_rust_names_are_demangled() {
        assert_eq!(
            demangle("_ZN10JavaThread17thread_main_innerEv"),
            "JavaThread::thread_main_inner"
        );
        assert_eq!(
            demangle("_ZN3std2rt10lang_start17h0123456789abcdefE"),
            "std::rt::lang_start"
        );
        assert_eq!(demangle("_RNvCs1234_7mycrate4spin"), "mycrate::spin");
        assert_eq!(demangle("getpid"), "getpid");
        assert_eq!(demangle("_Z"), "_Z");
        assert_eq!(demangle("_ZN3foo3barEv.cold"), "foo::bar");
        // A dot inside a segment, and a suffix after the hash.
        assert_eq!(
            demangle("_ZN4core3ops8function6FnOnce40call_once$u7b$$u7b$vtable.shim$u7d$$u7d$17h4563ed109a5d8d41E"),
            "core::ops::function::FnOnce::call_once{{vtable.shim}}"
        );
        assert_eq!(
            demangle("_ZN3std2rt10lang_start17h0123456789abcdefE.llvm.42"),
            "std::rt::lang_start"
        );
    }

    #[test]
    fn maps_lines_parse_files_and_the_vdso_only() {
        let m = parse_maps_line(
            "7f0000000000-7f0000001000 r-xp 00002000 08:01 1234    /usr/lib/libz.so.1 (deleted)",
        )
        .unwrap();
        assert_eq!(
            (m.start, m.end, m.offset, m.inode),
            (0x7f00_0000_0000, 0x7f00_0000_1000, 0x2000, 1234)
        );
        assert_eq!(m.path, "/usr/lib/libz.so.1");
        assert_eq!(&*lib_name(&m.path), "libz.so.1");
        assert!(parse_maps_line("7f00-7f01 rw-p 00000000 00:00 0 ").is_none());
        assert!(
            parse_maps_line("7f00-7f01 rw-p 00000000 00:00 0                  [heap]").is_none()
        );
        assert!(parse_maps_line("garbage").is_none());
    }
}
