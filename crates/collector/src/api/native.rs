//! `GET /api/jvms/{id}/nativemem`: a JVM's native allocations (the agent's
//! `nativemem`) by stack, library, Java caller or C function, or with
//! `leaks=1` its sampled blocks never freed, over the request's window, as
//! `jscope nativemem` reports them.

use jscope_analysis::events::{native_mem_report, EventFilter, NativeBy};
use jscope_store::Store;

use super::params;
use crate::http::{Request, Response};
use crate::CollectorError;

/// Rows a report lists unless `top` says otherwise.
const TOP: usize = 50;

/// `GET /api/jvms/{id}/nativemem[?by=stack|library|caller|function][&leaks=1]
/// [&top=N][&from=MS&to=MS|&last=DURATION]`.
pub(crate) fn nativemem_of(
    store: &dyn Store,
    id: &str,
    req: &Request,
) -> Result<Response, CollectorError> {
    let by_text = req.param("by").unwrap_or("stack");
    let by = NativeBy::parse(by_text).ok_or_else(|| {
        CollectorError::BadQuery(format!(
            "by must be stack, library, caller or function, not {by_text:?}"
        ))
    })?;
    let leaks = matches!(req.param("leaks"), Some("1" | "true"));
    let top = params::count_param(req, "top")?.unwrap_or(TOP);
    let (rec, from_s, to_s) = params::load(store, id, req)?;
    let filter = EventFilter {
        from_s,
        to_s,
        ..EventFilter::default()
    };
    let mut report = native_mem_report(&rec, &filter, by, leaks);
    report.rows.truncate(top);
    Ok(Response::json(&report))
}
