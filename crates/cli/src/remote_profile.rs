//! `report`, `flame` and `collapsed` over collector data (`--collector URL`,
//! `--data DIR`): the source aggregates the selected JVMs' samples where the data
//! lives (a collector's `/api/hot` and `/api/flame`, a data directory's stack
//! summaries) and hands over the merged table or stacks, so a service's hour is
//! not read recording by recording. Reads it cannot answer (`--threads` roots,
//! alloc and lock weights, virtual threads grouped by carrier, or no samples: the
//! errors and notes come from the recordings) go through `source::load`.

use std::path::Path;

use anyhow::Result;
use jscope_analysis::events::EventWeight;
use jscope_analysis::{parse_state, Annotation, HotMethods, Mode};
use jscope_flame::FlameGraph;
use jscope_store::jvms::{common_mode, origin_ns};
use jscope_store::query::Query;

use crate::select::SelectArgs;
use crate::source::{self, Collected, SourceArgs};

/// A read the source's aggregation answers: the query naming the selected JVMs,
/// window and filters, and the title the merged recording would have.
pub struct Remote<'a> {
    collected: Collected<'a>,
    query: Query,
    pub title: String,
}

/// The source's merged stacks of a selection.
pub struct RemoteStacks {
    pub graph: FlameGraph,
    pub mode: Option<Mode>,
    pub title: String,
}

impl<'a> Remote<'a> {
    /// `Some` when `file` is absent and `src` names collector data, for sample
    /// modes (and after `selection` accepted `sel`); the JVMs are chosen as
    /// `source::load` chooses them, and the window's seconds count from the same
    /// origin.
    pub fn of(
        file: Option<&Path>,
        src: &'a SourceArgs,
        sel: &SelectArgs,
    ) -> Result<Option<Remote<'a>>> {
        if file.is_some() || sel.group_by.is_some() {
            return Ok(None);
        }
        if sel.mode.as_deref().and_then(EventWeight::parse).is_some() {
            return Ok(None);
        }
        crate::select::selection(sel)?;
        let Some(collected) = Collected::open(src)? else {
            return Ok(None);
        };
        let selection = source::selection_of(src)?;
        let picked = collected.pick(&selection)?;
        let origin = origin_ns(&picked);
        let jvms: Vec<String> = picked.iter().map(|j| j.id.clone()).collect();
        let mode = sel.mode.as_deref().map(str::parse::<Mode>).transpose()?;
        let query = Query {
            mode: mode.or_else(|| (jvms.len() > 1).then(|| common_mode(collected.rows, &jvms))?),
            jvms,
            from_ns: source::epoch_ns(origin, sel.from),
            to_ns: source::epoch_ns(origin, sel.to),
            thread: sel.thread.clone(),
            states: sel
                .state
                .iter()
                .map(|s| parse_state(s))
                .collect::<Result<_, _>>()?,
            lines: false,
            annotate: Annotation::None,
            // Requests are read from the samples themselves, JVM by JVM, where
            // the data lives.
            requests: crate::select::selection(sel)?.requests,
        };
        let title = selection.title(&picked);
        Ok(Some(Remote {
            collected,
            query,
            title,
        }))
    }

    /// The merged hot-methods table (`None` when it holds no samples: the caller
    /// reads the recordings to say why).
    pub fn hot(&self, top: usize) -> Result<Option<HotMethods>> {
        let hot = self.collected.source.hot(&self.query, top)?;
        if hot.view.samples == 0 {
            return Ok(None);
        }
        crate::output::warn_stacks(&self.title, hot.warnings);
        Ok(Some(hot.view))
    }

    /// The merged stacks (`None` when there are none, as for [`Self::hot`]),
    /// frames named with `annotate`'s suffixes.
    pub fn stacks(mut self, lines: bool, annotate: Annotation) -> Result<Option<RemoteStacks>> {
        self.query.lines = lines;
        self.query.annotate = annotate;
        let flame = self.collected.source.flame(&self.query)?;
        let (graph, mode) = flame.view;
        if graph.total() == 0 {
            return Ok(None);
        }
        crate::output::warn_stacks(&self.title, flame.warnings);
        Ok(Some(RemoteStacks {
            graph,
            mode,
            title: self.title,
        }))
    }
}
