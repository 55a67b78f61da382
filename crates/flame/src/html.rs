//! The interactive HTML renderer: one self-contained page (inline CSS, script and
//! data) that draws the graph on a canvas and offers zoom, search and tooltips.
//!
//! The frames travel as compact JSON in a `<script type="application/json">`
//! element; `page.js` documents the encoding it decodes.

use crate::escape::{escape_xml, json_for_script};
use crate::kind::{classify, colour, display_name, FrameKind};
use crate::layout::{weight_for_budget, Label, Layout};
use crate::tree::{NameId, ROOT};
use crate::{FlameGraph, Options};
use rustc_hash::FxHashMap;
use std::fmt::Write;

const TEMPLATE: &str = include_str!("html/page.html");
const STYLE: &str = include_str!("html/page.css");
const SCRIPT: &str = include_str!("html/page.js");

/// Renders the graph as a self-contained interactive HTML page.
///
/// The page needs no network: styles, script and data are all inline.
pub fn render_html(g: &FlameGraph, o: &Options) -> String {
    let layout = Layout::new(g, weight_for_budget(g, o.max_html_frames) as f64);
    let data = json_for_script(&PageData::new(g, &layout).to_json(g, o));
    fill_template(TEMPLATE, |key| match key {
        "title" => escape_xml(&o.title).into_owned(),
        "subtitle" => escape_xml(&o.subtitle).into_owned(),
        "style" => STYLE.to_string(),
        "script" => SCRIPT.to_string(),
        "data" => data.clone(),
        "legend" => legend(),
        other => panic!("page.html uses unknown placeholder {{{{{other}}}}}"),
    })
}

/// What each colour means, with swatches drawn by the colouring rule itself from a
/// typical name of each kind.
pub(crate) const LEGEND: [(&str, &str); 13] = [
    ("com.example.App.run_[j]", "Java compiled (hue by package)"),
    ("com.example.App.run_[1]", "C1"),
    ("com.example.App.run_[0]", "interpreted"),
    ("com.example.App.run_[i]", "inlined"),
    ("java.util.HashMap.get", "JDK"),
    ("itable stub_[s]", "stub"),
    ("com.example.Circle_[t]", "class"),
    ("write [libc.so.6]", "native"),
    ("JavaThread::run [libjvm.so]", "JVM (libjvm)"),
    ("do_syscall_64_[k]", "kernel"),
    ("[unknown]", "internal, walk stopped"),
    ("", "root, merged"),
    ("#e040fb", "search match"),
];

/// A legend entry's swatch colour.
pub(crate) fn legend_fill(name: &str) -> String {
    match name {
        "" => colour("", FrameKind::Synthetic),
        n if n.starts_with('#') => n.to_string(),
        n => colour(n, classify(n)),
    }
}

fn legend() -> String {
    let mut out = String::new();
    for (name, what) in LEGEND {
        let fill = legend_fill(name);
        let _ = write!(
            out,
            "\n    <i style=\"background:{fill}\"></i>{}",
            escape_xml(what)
        );
    }
    out.push_str("\n  ");
    out
}

/// Replaces each `{{key}}` in one pass, so substituted text is never scanned again.
fn fill_template(template: &str, value: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let end = start
            + rest[start..]
                .find("}}")
                .expect("unclosed placeholder in page.html");
        out.push_str(&rest[..start]);
        out.push_str(&value(&rest[start + 2..end]));
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// The graph in the page's encoding: names and colours deduplicated into tables,
/// frames as a flat `[name, depth, width, ...]` array in pre-order.
struct PageData {
    /// Graph name ids in page-table order; `None` is the root.
    names: Vec<Option<NameId>>,
    colours: Vec<String>,
    name_colour: Vec<u32>,
    /// (name index, depth, width); a negative name is minus a merged box's frame count.
    frames: Vec<(i64, u32, u64)>,
}

impl PageData {
    fn new(g: &FlameGraph, layout: &Layout) -> PageData {
        let mut data = PageData {
            names: Vec::new(),
            colours: Vec::new(),
            name_colour: Vec::new(),
            frames: Vec::with_capacity(layout.frames.len()),
        };
        let mut name_index = FxHashMap::default();
        let mut colour_index = FxHashMap::default();
        for frame in &layout.frames {
            let name = match frame.label {
                // The root gets its own entry so a real frame called "all" keeps its colour.
                Label::Node(ROOT) => data.add_name(g, None, &mut colour_index),
                Label::Node(id) => {
                    let name_id = g.node(id).name;
                    match name_index.get(&name_id) {
                        Some(&index) => index,
                        None => {
                            let index = data.add_name(g, Some(name_id), &mut colour_index);
                            name_index.insert(name_id, index);
                            index
                        }
                    }
                }
                // Merged boxes need no name: a negative index carries their count.
                Label::Merged { count } => -(count as i64),
            };
            data.frames.push((name, frame.depth, frame.width));
        }
        data
    }

    /// Appends a name (`None` for the root) to the tables and returns its index.
    fn add_name(
        &mut self,
        g: &FlameGraph,
        name: Option<NameId>,
        colour_index: &mut FxHashMap<String, u32>,
    ) -> i64 {
        let fill = match name {
            None => colour("", FrameKind::Synthetic),
            Some(id) => colour(g.name(id), classify(g.name(id))),
        };
        let next = self.colours.len() as u32;
        let index = *colour_index.entry(fill.clone()).or_insert(next);
        if index == next {
            self.colours.push(fill);
        }
        self.name_colour.push(index);
        self.names.push(name);
        self.names.len() as i64 - 1
    }

    fn to_json(&self, g: &FlameGraph, o: &Options) -> String {
        let mut out = String::with_capacity(self.frames.len() * 14 + 1024);
        let _ = write!(
            out,
            r#"{{"total":{},"countName":{},"inverted":{},"minWidthPx":{},"names":["#,
            g.total(),
            json_string(&o.count_name),
            o.inverted,
            if o.min_width_px.is_finite() {
                o.min_width_px.max(0.0)
            } else {
                0.0
            },
        );
        let names = self
            .names
            .iter()
            .map(|id| id.map_or(FlameGraph::ROOT_NAME, |id| display_name(g.name(id))));
        join(&mut out, names, |out, name| {
            out.push_str(&json_string(name))
        });
        out.push_str(r#"],"colors":["#);
        join(&mut out, &self.colours, |out, c| {
            out.push_str(&json_string(c))
        });
        out.push_str(r#"],"nameColor":["#);
        join(&mut out, &self.name_colour, |out, i| {
            let _ = write!(out, "{i}");
        });
        out.push_str(r#"],"frames":["#);
        join(&mut out, &self.frames, |out, (name, depth, width)| {
            let _ = write!(out, "{name},{depth},{width}");
        });
        out.push_str("]}");
        out
    }
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).expect("a str always serialises")
}

/// Writes `items` comma-separated; numbers are written in place rather than
/// through temporary strings because a page can hold hundreds of thousands.
fn join<T>(
    out: &mut String,
    items: impl IntoIterator<Item = T>,
    write_item: impl Fn(&mut String, T),
) {
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_item(out, item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_values_are_not_rescanned() {
        let filled = fill_template("<{{a}}|{{b}}>", |k| match k {
            "a" => "{{b}}".to_string(),
            _ => "B".to_string(),
        });
        assert_eq!(filled, "<{{b}}|B>");
    }
}
