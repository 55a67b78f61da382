//! The JVMs a reader sees and which of them a request means: one summary row per
//! JVM ([`JvmSummary`], what `GET /api/jvms` sends and `jscope jvms` prints) and one
//! selection ([`JvmSelection`]: ids, pids, `all`, service, host and labels), so the
//! CLI and the collector choose the same JVMs from the same rows.

use std::collections::{BTreeMap, HashSet};

use jscope_analysis::{sampled_modes, Mode};
use serde::{Deserialize, Serialize};

use crate::identity::{main_class_of, JvmIdentity};
use crate::store::{Store, StoredJvm};
use crate::SelectError;

/// Whether an agent streams a JVM to the collector right now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JvmStatus {
    Connected,
    /// Stored only: its agent went away (or a data directory is read).
    #[default]
    Gone,
}

impl JvmStatus {
    /// `connected` or `gone`, as the list sends it.
    pub fn name(self) -> &'static str {
        match self {
            JvmStatus::Connected => "connected",
            JvmStatus::Gone => "gone",
        }
    }
}

/// One row of the JVM list (xdProf's GUI, plus what a collector knows).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JvmSummary {
    pub id: String,
    pub pid: u32,
    pub host: String,
    pub address: String,
    pub command_line: String,
    /// What the command runs: main class, `-jar`'s jar or `-m`'s module.
    pub main_class: String,
    pub vm: String,
    pub java_version: String,
    pub os: String,
    pub agent_version: String,
    pub modes: String,
    /// When the agent's recording started (epoch ms): `--from`/`--to` of the CLI
    /// count seconds from here.
    pub started_ms: u64,
    /// The same to the nanosecond, so wall-clock windows cut exactly.
    pub started_ns: u64,
    pub labels: BTreeMap<String, String>,
    /// The service a push or the agent's `service=` named; else the main class.
    pub service: String,
    pub status: JvmStatus,
    pub connected_since_ms: Option<u64>,
    pub gone_since_ms: Option<u64>,
    pub disconnect_reason: Option<String>,
    pub samples_per_second: f64,
    pub samples: u64,
    /// Samples the agent dropped plus chunks lost on the way.
    pub drops: u64,
    pub dropped_samples: u64,
    pub lost_chunks: u64,
    pub chunks: u64,
    pub last_seq: u64,
    pub stored_bytes: u64,
    pub stored_from_ms: Option<u64>,
    pub stored_to_ms: Option<u64>,
}

fn ms(ns: u64) -> u64 {
    ns / 1_000_000
}

impl JvmSummary {
    /// A JVM's identity as a row; what only a running collector knows (the
    /// connection, live rates) is left at its default.
    pub fn of_identity(identity: JvmIdentity) -> JvmSummary {
        let main_class = main_class_of(&identity.command_line);
        let service = if identity.service.is_empty() {
            main_class.clone()
        } else {
            identity.service
        };
        JvmSummary {
            id: identity.id,
            pid: identity.pid,
            host: identity.host,
            address: identity.address,
            main_class,
            command_line: identity.command_line,
            vm: identity.vm,
            java_version: identity.java_version,
            os: identity.os,
            agent_version: identity.agent_version,
            modes: identity.modes,
            started_ms: ms(identity.start_wall_ns),
            started_ns: identity.start_wall_ns,
            labels: identity.labels.into_iter().collect(),
            service,
            ..JvmSummary::default()
        }
    }

    /// A stored JVM as a row, with what the store holds of it.
    pub fn of_stored(stored: &StoredJvm) -> JvmSummary {
        JvmSummary {
            last_seq: stored.last_seq(),
            stored_bytes: stored.bytes(),
            stored_from_ms: stored.start_ns().map(ms),
            stored_to_ms: stored.end_ns().map(ms),
            ..JvmSummary::of_identity(stored.identity.clone())
        }
    }

    /// The epoch ns the JVM's recording started at (`started_ms` from a collector
    /// that sends no `started_ns`).
    pub fn start_ns(&self) -> u64 {
        match self.started_ns {
            0 => self.started_ms * 1_000_000,
            ns => ns,
        }
    }

    /// `main (pid N)`, naming the JVM in titles.
    pub fn title(&self) -> String {
        let main = self.command_line.split_whitespace().next().unwrap_or("");
        format!("{main} (pid {})", self.pid)
            .trim_start()
            .to_string()
    }
}

/// The JVMs of a store as rows, in the list's order (connected first, then by id).
pub fn stored_jvms<S: Store + ?Sized>(store: &S) -> Vec<JvmSummary> {
    let mut rows: Vec<JvmSummary> = store.jvms().iter().map(JvmSummary::of_stored).collect();
    sort_rows(&mut rows);
    rows
}

/// The JVM list's order: connected JVMs first, then by id.
pub fn sort_rows(rows: &mut [JvmSummary]) {
    rows.sort_by(|a, b| (a.status, &a.id).cmp(&(b.status, &b.id)));
}

/// A selection of JVMs, as a request or a command line names it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JvmSelection {
    /// Ids, pids (the newest JVM with it) or `all`.
    pub jvms: Vec<String>,
    pub service: Option<String>,
    pub host: Option<String>,
    pub labels: Vec<(String, String)>,
}

/// A label as `KEY=VALUE` (or `KEY:VALUE`), trimmed; `None` without a key.
pub fn parse_label(text: &str) -> Option<(String, String)> {
    let (k, v) = text.split_once(['=', ':'])?;
    let k = k.trim();
    (!k.is_empty()).then(|| (k.to_string(), v.trim().to_string()))
}

impl JvmSelection {
    /// Labels given as `KEY=VALUE` texts; `what` names where they came from in the
    /// error (`--label`, `base_label`).
    pub fn labels_of<'a>(
        texts: impl IntoIterator<Item = &'a str>,
        what: &str,
    ) -> Result<Vec<(String, String)>, SelectError> {
        texts
            .into_iter()
            .map(|l| {
                parse_label(l).ok_or_else(|| {
                    SelectError::BadLabel(format!("{what} wants KEY=VALUE, not `{l}`"))
                })
            })
            .collect()
    }

    /// Whether the selection narrows JVMs by what they are (not by id).
    pub fn narrowed(&self) -> bool {
        self.service.is_some() || self.host.is_some() || !self.labels.is_empty()
    }

    pub fn is_empty(&self) -> bool {
        self.jvms.is_empty() && !self.narrowed()
    }

    pub fn matches(&self, row: &JvmSummary) -> bool {
        self.service.as_ref().is_none_or(|s| *s == row.service)
            && self.host.as_ref().is_none_or(|h| *h == row.host)
            && self
                .labels
                .iter()
                .all(|(k, v)| row.labels.get(k).is_some_and(|have| have == v))
    }

    /// The selected rows: the named JVMs (ids, pids, `all`) among those matching
    /// the service, host and labels, in the order named; every match when no JVM
    /// is named (every row for an empty selection: the caller says what that means).
    pub fn pick<'r>(&self, rows: &'r [JvmSummary]) -> Result<Vec<&'r JvmSummary>, SelectError> {
        let matching: Vec<&JvmSummary> = rows.iter().filter(|r| self.matches(r)).collect();
        if self.narrowed() && matching.is_empty() {
            return Err(SelectError::NoMatch(self.describe()));
        }
        if self.jvms.is_empty() {
            return Ok(matching);
        }
        let mut out: Vec<&JvmSummary> = Vec::new();
        for want in &self.jvms {
            if want == "all" {
                out.extend(&matching);
                continue;
            }
            match find(&matching, want) {
                Some(r) => out.push(r),
                // Not among the matches: an id of another service, or unknown.
                None if self.narrowed() && rows.iter().any(|r| r.id == *want) => {
                    return Err(SelectError::NotOf {
                        jvm: want.clone(),
                        selection: self.describe(),
                    })
                }
                None => return Err(SelectError::NoSuchJvm(want.clone())),
            }
        }
        let mut seen = HashSet::new();
        out.retain(|r| seen.insert(&r.id));
        Ok(out)
    }

    /// The ids of the rows [`Self::pick`] selects.
    pub fn pick_ids(&self, rows: &[JvmSummary]) -> Result<Vec<String>, SelectError> {
        Ok(self.pick(rows)?.into_iter().map(|r| r.id.clone()).collect())
    }

    /// Names the selection in titles and errors, e.g. `service shop, env=prod`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = &self.service {
            parts.push(format!("service {s}"));
        }
        if let Some(h) = &self.host {
            parts.push(format!("host {h}"));
        }
        parts.extend(self.labels.iter().map(|(k, v)| format!("{k}={v}")));
        if parts.is_empty() {
            "all JVMs".into()
        } else {
            parts.join(", ")
        }
    }

    /// What to call the picked rows: one JVM's title, or the selection with how
    /// many JVMs it merges.
    pub fn title(&self, picked: &[&JvmSummary]) -> String {
        match picked {
            [one] => one.title(),
            _ => format!("{} ({} JVMs)", self.describe(), picked.len()),
        }
    }
}

/// The row with id `want`, else the newest of those with pid `want`: a connected
/// JVM before a gone one, then the latest start.
fn find<'r>(rows: &[&'r JvmSummary], want: &str) -> Option<&'r JvmSummary> {
    if let Some(r) = rows.iter().find(|r| r.id == want) {
        return Some(r);
    }
    let pid = want.parse::<u32>().ok()?;
    rows.iter()
        .filter(|r| r.pid == pid)
        .max_by_key(|r| (r.status == JvmStatus::Connected, r.start_ns(), &r.id))
        .copied()
}

/// `id (pid N), ...` of the rows, for errors that say what there is.
pub fn listing(rows: &[JvmSummary]) -> String {
    let all: Vec<String> = rows
        .iter()
        .map(|r| format!("{} (pid {})", r.id, r.pid))
        .collect();
    if all.is_empty() {
        "none".into()
    } else {
        all.join(", ")
    }
}

/// The epoch ns a selection's seconds count from: the earliest picked JVM's start,
/// which is where their merged recording starts too.
pub fn origin_ns(picked: &[&JvmSummary]) -> u64 {
    picked.iter().map(|j| j.start_ns()).min().unwrap_or(0)
}

/// One sampling mode for several JVMs merged: the first (cpu, wall, snapshot) any
/// of them records, so one JVM's cpu samples are not added to another's wall samples.
pub fn common_mode(rows: &[JvmSummary], ids: &[String]) -> Option<Mode> {
    let recorded: Vec<&str> = rows
        .iter()
        .filter(|r| ids.contains(&r.id))
        .flat_map(|r| sampled_modes(&r.modes))
        .collect();
    Mode::ALL.into_iter().find(|m| recorded.contains(&m.name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, pid: u32, service: &str, labels: &[(&str, &str)]) -> JvmSummary {
        JvmSummary {
            id: id.into(),
            pid,
            service: service.into(),
            host: "h".into(),
            modes: "cpu".into(),
            command_line: "com.acme.Main arg".into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..JvmSummary::default()
        }
    }

    fn selection(jvms: &[&str], service: Option<&str>, labels: &[&str]) -> JvmSelection {
        JvmSelection {
            jvms: jvms.iter().map(|s| s.to_string()).collect(),
            service: service.map(str::to_string),
            host: None,
            labels: JvmSelection::labels_of(labels.iter().copied(), "label").unwrap(),
        }
    }

    #[test]
    fn jvms_are_picked_by_service_labels_ids_pids_and_all() {
        let rows = [
            row("a", 1, "shop", &[("env", "prod"), ("v", "1,2")]),
            row("b", 2, "shop", &[("env", "dev")]),
            row("c", 3, "billing", &[("env", "prod")]),
        ];
        let pick = |s: JvmSelection| s.pick_ids(&rows).map_err(|e| e.to_string());
        assert_eq!(
            pick(selection(&[], Some("shop"), &[])),
            Ok(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            pick(selection(&[], Some("shop"), &["env=prod"])),
            Ok(vec!["a".into()])
        );
        assert_eq!(pick(selection(&[], None, &["v=1,2"])), Ok(vec!["a".into()]));
        assert_eq!(
            pick(selection(&[], None, &["env=prod"])),
            Ok(vec!["a".into(), "c".into()])
        );
        assert_eq!(pick(selection(&["all"], None, &[])).unwrap().len(), 3);
        assert_eq!(
            pick(selection(&["3", "a"], None, &[])),
            Ok(vec!["c".into(), "a".into()])
        );
        assert_eq!(
            pick(selection(&[], None, &[])),
            Ok(vec!["a".into(), "b".into(), "c".into()])
        );
        let err = pick(selection(&[], Some("nope"), &[])).unwrap_err();
        assert!(err.contains("no JVM matches service nope"), "{err}");
        let err = pick(selection(&["c"], Some("shop"), &[])).unwrap_err();
        assert!(err.contains("not of service shop"), "{err}");
        let err = pick(selection(&["zzz"], None, &[])).unwrap_err();
        assert_eq!(err, "no JVM with id or pid zzz");
        assert!(JvmSelection::labels_of(["novalue"], "label").is_err());
        assert_eq!(
            common_mode(&rows, &["a".into(), "b".into()]),
            Some(Mode::Cpu)
        );
    }

    #[test]
    fn a_pid_names_its_newest_jvm_connected_ones_first_to_the_nanosecond() {
        let at = |id: &str, status, started_ns: u64| JvmSummary {
            status,
            started_ns,
            started_ms: started_ns / 1_000_000,
            ..row(id, 10, "", &[])
        };
        // The same millisecond: only the nanoseconds tell which started last.
        let rows = [
            at("h-10-a", JvmStatus::Gone, 5_000_000_900),
            at("h-10-b", JvmStatus::Gone, 5_000_000_100),
        ];
        let pick =
            |rows: &[JvmSummary], want: &str| selection(&[want], None, &[]).pick_ids(rows).unwrap();
        assert_eq!(pick(&rows, "10"), ["h-10-a"]);
        assert_eq!(pick(&rows, "h-10-b"), ["h-10-b"]);
        let with_live = [rows[0].clone(), at("h-10-c", JvmStatus::Connected, 1)];
        assert_eq!(pick(&with_live, "10"), ["h-10-c"], "a connected JVM first");
    }

    #[test]
    fn rows_read_back_as_sent_and_name_their_jvm() {
        let r = JvmSummary {
            status: JvmStatus::Connected,
            ..row("x", 5, "shop", &[("env", "prod")])
        };
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains(r#""status":"connected""#), "{json}");
        assert_eq!(serde_json::from_str::<JvmSummary>(&json).unwrap(), r);
        let old: JvmSummary = serde_json::from_str(r#"{"id":"x","pid":5,"started_ms":7}"#).unwrap();
        assert_eq!((old.start_ns(), old.status), (7_000_000, JvmStatus::Gone));
        assert_eq!(r.title(), "com.acme.Main (pid 5)");
    }
}
