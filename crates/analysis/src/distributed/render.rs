//! Text rendering of a merged tree: the session's JVMs and clock offsets, then each
//! JVM's tree with remote calls expanded into the servers' calls.

use std::collections::HashSet;
use std::io::{self, Write};

use super::{Child, DistributedTree, MRef};
use crate::trace::{fmt_ns, CLOSED_BY_MISMATCH, THREW, UNFINISHED};

/// What [`DistributedTree::write_text`] shows.
#[derive(Debug, Clone, Default)]
pub struct DistributedView {
    /// Only this JVM's tree (index in `members`); every JVM's otherwise, the
    /// reference first.
    pub jvm: Option<usize>,
    /// Levels below a virtual root to show (remote call lines count as a level).
    pub max_depth: Option<usize>,
    /// Leave out calls shorter than this, with what they called.
    pub min_duration_ns: u64,
}

impl DistributedTree {
    /// One line per JVM (host, pid, command, clock offset), a summary of matches,
    /// then each JVM's virtual root and its calls indented two spaces per level:
    /// `method [jvm N thread] call=T return=T duration=D self=S`, times in seconds
    /// on the reference JVM's timeline (approximate, `~T±U`, for other JVMs: shown
    /// only to the precision the clock offset allows). A remote call is a line
    /// `=> rmi to jvm N host:port object=O method=M client=D server=D network=D`
    /// with the server's calls below it.
    pub fn write_text(&self, view: &DistributedView, out: &mut dyn Write) -> io::Result<()> {
        self.write_summary(out)?;
        let mut seen = HashSet::new();
        for j in self.jvm_order(view) {
            let m = &self.members[j];
            writeln!(
                out,
                "[virtual root] jvm {j} {} pid {} ({})",
                m.host, m.pid, m.command_line
            )?;
            let mut stack: Vec<(Child, usize)> =
                self.roots(j).into_iter().rev().map(|c| (c, 1)).collect();
            while let Some((c, level)) = stack.pop() {
                if !self.shows(c, view, &mut seen) {
                    continue;
                }
                self.write_child(c, level, out)?;
                if view.max_depth.is_some_and(|d| level >= d) {
                    continue;
                }
                let kids = self.kids(c);
                stack.extend(kids.into_iter().rev().map(|k| (k, level + 1)));
            }
        }
        Ok(())
    }

    /// The JVMs whose trees are shown: the chosen one, or the reference first.
    pub(super) fn jvm_order(&self, view: &DistributedView) -> Vec<usize> {
        match view.jvm {
            Some(j) => vec![j],
            None => std::iter::once(self.reference)
                .chain((0..self.members.len()).filter(|&j| j != self.reference))
                .collect(),
        }
    }

    pub(super) fn kids(&self, c: Child) -> Vec<Child> {
        match c {
            Child::Call(r) => self.children(r),
            Child::Remote(i) => self.remote_children(i),
        }
    }

    /// Whether a child is printed; each call once (a guard against cycles that
    /// inconsistent matches could form).
    pub(super) fn shows(&self, c: Child, view: &DistributedView, seen: &mut HashSet<MRef>) -> bool {
        match c {
            Child::Call(r) => self.node(r).duration_ns() >= view.min_duration_ns && seen.insert(r),
            Child::Remote(i) => {
                self.remote(self.links[i].client).duration_ns() >= view.min_duration_ns
            }
        }
    }

    /// The header of [`write_text`](Self::write_text): one line per JVM with its
    /// clock offset, then the numbers of matched and unmatched calls.
    pub fn write_summary(&self, out: &mut dyn Write) -> io::Result<()> {
        for (j, m) in self.members.iter().enumerate() {
            write!(out, "jvm {j}: {} host {} pid {}", m.name, m.host, m.pid)?;
            match self.offsets[j] {
                Some(_) if j == self.reference => writeln!(out, ", reference clock")?,
                Some(o) => writeln!(
                    out,
                    ", clock offset {}±{} (via jvm {}, {} pairs{})",
                    signed_ns(o.offset_ns),
                    fmt_ns(o.uncertainty_ns as f64),
                    o.via,
                    o.pairs,
                    if o.consistent {
                        ""
                    } else {
                        ", bounds disagree"
                    }
                )?,
                None => writeln!(out, ", not linked to the reference (own clock)")?,
            }
        }
        writeln!(
            out,
            "{} remote calls matched, {} client calls unmatched, {} server calls unmatched",
            self.links.len(),
            self.unmatched_clients.len(),
            self.unmatched_servers.len()
        )
    }

    fn write_child(&self, c: Child, level: usize, out: &mut dyn Write) -> io::Result<()> {
        write!(out, "{:indent$}", "", indent = 2 * level)?;
        match c {
            Child::Call(r) => self.write_call(r, out),
            Child::Remote(i) => self.write_remote(i, out),
        }
    }

    fn write_call(&self, r: MRef, out: &mut dyn Write) -> io::Result<()> {
        let n = self.node(r);
        writeln!(
            out,
            "{} [jvm {} {}] call={} return={} duration={} self={}{}",
            self.label(r),
            r.jvm,
            self.thread_name(r),
            self.time(r.jvm, n.enter_ns),
            self.time(r.jvm, n.exit_ns),
            fmt_ns(n.duration_ns() as f64),
            fmt_ns(self.self_ns(r) as f64),
            flag_words(n.flags)
        )
    }

    fn write_remote(&self, i: usize, out: &mut dyn Write) -> io::Result<()> {
        let l = &self.links[i];
        let (c, s) = (self.remote(l.client), self.remote(l.server));
        write!(
            out,
            "=> {} to jvm {} {} object={} method={} conn={}#{} client={} server={} network={}",
            c.protocol,
            l.server.jvm,
            c.remote,
            c.object,
            c.method,
            c.local,
            c.conn_seq,
            fmt_ns(c.duration_ns() as f64),
            fmt_ns(s.duration_ns() as f64),
            fmt_ns(l.network_ns as f64)
        )?;
        if let Some(id) = &c.request_id {
            write!(out, " request={id}")?;
        }
        writeln!(out, "{}", if c.failed || s.failed { " failed" } else { "" })
    }

    /// A time on the reference timeline, to the precision the JVM's offset allows.
    fn time(&self, jvm: usize, rel_ns: u64) -> String {
        match self.on_reference(jvm, rel_ns) {
            Some((t, 0)) if jvm == self.reference => seconds(t, 9),
            Some((t, u)) => format!("~{}±{}", seconds(t, decimals_for(u)), fmt_ns(u as f64)),
            None => format!("{}(own clock)", seconds(rel_ns as i128, 9)),
        }
    }
}

/// Decimals of a second worth showing for an uncertainty: its order of magnitude.
fn decimals_for(uncertainty_ns: u64) -> usize {
    let digits = uncertainty_ns.max(1).ilog10() as usize;
    9usize.saturating_sub(digits)
}

fn seconds(ns: i128, decimals: usize) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    let frac = format!("{:09}", a % 1_000_000_000);
    if decimals == 0 {
        return format!("{sign}{}s", a / 1_000_000_000);
    }
    format!("{sign}{}.{}s", a / 1_000_000_000, &frac[..decimals.min(9)])
}

fn signed_ns(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", fmt_ns(-(ns as f64)))
    } else {
        format!("+{}", fmt_ns(ns as f64))
    }
}

fn flag_words(flags: u8) -> String {
    let mut s = String::new();
    for (bit, word) in [
        (THREW, " threw"),
        (UNFINISHED, " unfinished"),
        (CLOSED_BY_MISMATCH, " exit-lost"),
    ] {
        if flags & bit != 0 {
            s.push_str(word);
        }
    }
    s
}
