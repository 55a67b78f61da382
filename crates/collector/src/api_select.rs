//! Which JVMs a query of the API reads, as the CLI selects them: `jvm=ID|PID|all`
//! (repeatable or comma-separated), `service=NAME`, `host=NAME` and `label=K=V`
//! (repeatable; every one must match). A diff side takes the same with its prefix
//! (`base_service=`, `new_label=`).

use jscope_analysis::{sampled_modes, Mode};

use crate::api::JvmSummary;
use crate::http::Request;
use crate::CollectorError;

/// A selection of JVMs as a request names it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JvmSelection {
    /// Ids, pids (the newest JVM with it) or `all`.
    pub jvms: Vec<String>,
    pub service: Option<String>,
    pub host: Option<String>,
    pub labels: Vec<(String, String)>,
}

/// Every value of a parameter, not split at commas (a label's value may hold one).
fn raw_params<'r>(req: &'r Request, name: &str) -> impl Iterator<Item = &'r str> + 'r {
    let name = name.to_string();
    req.query
        .iter()
        .filter(move |(k, _)| *k == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

impl JvmSelection {
    /// The selection of `prefix` (`""` for a query's own, `base_`/`new_` for a diff side).
    pub fn parse(req: &Request, prefix: &str) -> Result<JvmSelection, CollectorError> {
        let labels = raw_params(req, &format!("{prefix}label"))
            .map(|l| match l.split_once(['=', ':']) {
                Some((k, v)) if !k.trim().is_empty() => {
                    Ok((k.trim().to_string(), v.trim().to_string()))
                }
                _ => Err(CollectorError::BadQuery(format!(
                    "{prefix}label must be KEY=VALUE, not {l:?}"
                ))),
            })
            .collect::<Result<_, _>>()?;
        Ok(JvmSelection {
            jvms: req.params(&format!("{prefix}jvm")),
            service: req.param(&format!("{prefix}service")).map(str::to_string),
            host: req.param(&format!("{prefix}host")).map(str::to_string),
            labels,
        })
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

    /// The ids of the selected rows: the named JVMs (ids, pids, `all`) among those
    /// matching the service, host and labels; every match when no JVM is named;
    /// none for an empty selection (the caller says what that means).
    pub fn pick(&self, rows: &[JvmSummary]) -> Result<Vec<String>, CollectorError> {
        let matching: Vec<&JvmSummary> = rows.iter().filter(|r| self.matches(r)).collect();
        if self.narrowed() && matching.is_empty() {
            return Err(CollectorError::BadQuery(format!(
                "no JVM matches {}",
                self.describe()
            )));
        }
        if self.jvms.is_empty() {
            return Ok(matching.iter().map(|r| r.id.clone()).collect());
        }
        let mut out: Vec<String> = Vec::new();
        for want in &self.jvms {
            if want == "all" {
                out.extend(matching.iter().map(|r| r.id.clone()));
                continue;
            }
            let by_id = matching.iter().find(|r| r.id == *want);
            let by_pid = || {
                let pid = want.parse::<u32>().ok()?;
                matching
                    .iter()
                    .filter(|r| r.pid == pid)
                    .max_by_key(|r| (r.status == "connected", r.started_ns))
            };
            match by_id.or_else(by_pid) {
                Some(r) => out.push(r.id.clone()),
                // Not among the matches: an id of another service, or unknown.
                None if self.narrowed() && rows.iter().any(|r| r.id == *want) => {
                    return Err(CollectorError::BadQuery(format!(
                        "JVM {want} is not of {}",
                        self.describe()
                    )))
                }
                None => return Err(CollectorError::UnknownJvm(want.clone())),
            }
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|id| seen.insert(id.clone()));
        Ok(out)
    }

    /// The rows [`Self::pick`] selects, in the list's order.
    pub fn pick_rows<'r>(
        &self,
        rows: &'r [JvmSummary],
    ) -> Result<Vec<&'r JvmSummary>, CollectorError> {
        let ids: std::collections::HashSet<String> = self.pick(rows)?.into_iter().collect();
        Ok(rows.iter().filter(|r| ids.contains(&r.id)).collect())
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
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..JvmSummary::default()
        }
    }

    fn req(query: &[(&str, &str)]) -> Request {
        Request {
            query: query
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Request::default()
        }
    }

    #[test]
    fn jvms_are_picked_by_service_labels_ids_pids_and_all() {
        let rows = [
            row("a", 1, "shop", &[("env", "prod"), ("v", "1,2")]),
            row("b", 2, "shop", &[("env", "dev")]),
            row("c", 3, "billing", &[("env", "prod")]),
        ];
        let pick = |q: &[(&str, &str)]| {
            JvmSelection::parse(&req(q), "")
                .and_then(|s| s.pick(&rows))
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            pick(&[("service", "shop")]),
            Ok(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            pick(&[("service", "shop"), ("label", "env=prod")]),
            Ok(vec!["a".into()])
        );
        assert_eq!(pick(&[("label", "v=1,2")]), Ok(vec!["a".into()]));
        assert_eq!(
            pick(&[("label", "env=prod")]),
            Ok(vec!["a".into(), "c".into()])
        );
        assert_eq!(pick(&[("jvm", "all")]).unwrap().len(), 3);
        assert_eq!(pick(&[("jvm", "3,a")]), Ok(vec!["c".into(), "a".into()]));
        assert_eq!(pick(&[]), Ok(vec!["a".into(), "b".into(), "c".into()]));
        assert!(pick(&[("service", "nope")])
            .unwrap_err()
            .contains("no JVM matches service nope"));
        assert!(pick(&[("service", "shop"), ("jvm", "c")])
            .unwrap_err()
            .contains("not of service shop"));
        assert!(pick(&[("jvm", "zzz")]).unwrap_err().contains("zzz"));
        assert!(pick(&[("label", "novalue")]).is_err());
        assert_eq!(
            common_mode(&rows, &["a".into(), "b".into()]),
            Some(Mode::Cpu)
        );
    }
}
