//! `/api/jfr`: any JVM or selection of JVMs as one JDK Flight Recorder file, a
//! chunk per JVM, for JDK Mission Control, an IDE or the JDK's `jfr` tool.

use std::str::FromStr;

use jscope_export::{Kind, Request as ExportRequest};
use jscope_jfr::JfrWriter;
use jscope_store::{JvmSummary, Store};

use super::params;
use crate::http::{Request, Response};
use crate::CollectorError;

/// The JVMs and window a request selects (as `/api/flame` does: `jvm`, `service`,
/// `host`, `label`, `from`/`to`/`last`, `thread`, `state`), everything each holds
/// or the one kind `mode` names (cpu, wall, snapshot, alloc, lock, trace).
pub(crate) fn jfr_of(
    store: &dyn Store,
    rows: &[JvmSummary],
    req: &Request,
) -> Result<Response, CollectorError> {
    let (q, _) = params::query_of(req, rows)?;
    let kind = req
        .param("mode")
        .map(Kind::from_str)
        .transpose()
        .map_err(|e| CollectorError::BadQuery(e.to_string()))?;
    let mut writer = JfrWriter::new();
    let mut file = Vec::new();
    for (i, jvm) in q.jvms.iter().enumerate() {
        let rec = store.read(jvm, q.from_ns, q.to_ns)?;
        let wanted = ExportRequest {
            kind,
            selection: q.selection(&rec),
            name: jvm.clone(),
            ..ExportRequest::default()
        };
        let last = i + 1 == q.jvms.len();
        file.extend(jscope_export::jfr::chunk(&mut writer, &rec, &wanted, last).bytes);
    }
    Ok(Response::bytes("application/octet-stream", file))
}
