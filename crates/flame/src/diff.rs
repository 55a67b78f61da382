//! The differential flame graph: the new side's frames in the new side's shape,
//! each coloured by how its share of all samples changed since the base side.
//!
//! Shares are normalised to each side's own total, so two recordings of
//! different lengths compare fairly. Red frames grew, blue frames shrank, and
//! the colour saturates with the size of the change relative to the largest
//! change in the graph; frames absent from the base are red.

use crate::escape::escape_xml;
use crate::svg::{render_svg_painted, Paint};
use crate::tree::{NodeId, ROOT};
use crate::{FlameGraph, Options};
use rustc_hash::FxHashMap;

/// Total shares (percent of each side's samples) of one frame of the new graph.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameDiff {
    /// `None` when the frame's path does not exist in the base graph.
    pub base_percent: Option<f64>,
    pub new_percent: f64,
}

impl FrameDiff {
    /// New share less base share, in percentage points.
    pub fn delta_points(&self) -> f64 {
        self.new_percent - self.base_percent.unwrap_or(0.0)
    }
}

/// Per-frame shares of `new` against `base`, keyed by node of `new`.
struct Diffs {
    frames: FxHashMap<NodeId, FrameDiff>,
    /// The largest absolute change, the scale of the colours.
    max_delta: f64,
}

impl Diffs {
    fn new(new: &FlameGraph, base: &FlameGraph) -> Diffs {
        let share =
            |g: &FlameGraph, id: NodeId| 100.0 * g.node(id).total as f64 / g.total().max(1) as f64;
        let mut frames = FxHashMap::default();
        let mut max_delta: f64 = 0.0;
        // (node of new, matching node of base); explicit stack for deep Java stacks.
        let mut pending: Vec<(NodeId, Option<NodeId>)> = vec![(ROOT, Some(ROOT))];
        while let Some((id, base_id)) = pending.pop() {
            let d = FrameDiff {
                base_percent: base_id.map(|b| share(base, b)),
                new_percent: share(new, id),
            };
            max_delta = max_delta.max(d.delta_points().abs());
            frames.insert(id, d);
            for child in new.children_of(id) {
                let name = new.name(new.node(child).name);
                let base_child = base_id.and_then(|b| base.child_named(b, name));
                pending.push((child, base_child));
            }
        }
        Diffs { frames, max_delta }
    }

    fn paint(&self, id: NodeId) -> Option<Paint> {
        let d = self.frames.get(&id)?;
        let delta = d.delta_points();
        let strength = if self.max_delta > 0.0 {
            (delta.abs() / self.max_delta).min(1.0)
        } else {
            0.0
        };
        // Only-new frames are red even when their share is tiny.
        let strength = if d.base_percent.is_none() {
            strength.max(0.5)
        } else {
            strength
        };
        let fill = diff_colour(delta, d.base_percent.is_none(), strength);
        let before = match d.base_percent {
            Some(p) => format!("{p:.2}%"),
            None => "absent".to_string(),
        };
        let note = format!(
            "base {before} -> new {:.2}% ({:+.2} pp)",
            d.new_percent, delta
        );
        Some(Paint { fill, note })
    }
}

/// Red for growth, blue for shrinkage, white-ish for no change.
fn diff_colour(delta: f64, only_new: bool, strength: f64) -> String {
    let fade = (235.0 - 200.0 * strength).round() as u8;
    if only_new || delta > 0.0 {
        format!("rgb(255,{fade},{fade})")
    } else if delta < 0.0 {
        format!("rgb({fade},{fade},255)")
    } else {
        "rgb(235,235,235)".to_string()
    }
}

/// Change of total share of the frame at `path` (root first, without the
/// synthetic root) in `new` against `base`; `None` when `new` has no such frame.
pub fn frame_diff<I, S>(new: &FlameGraph, base: &FlameGraph, path: I) -> Option<FrameDiff>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let path: Vec<S> = path.into_iter().collect();
    let pct = |g: &FlameGraph| {
        g.weight_at(path.iter().map(|s| s.as_ref()))
            .map(|w| 100.0 * w.total as f64 / g.total().max(1) as f64)
    };
    Some(FrameDiff {
        new_percent: pct(new)?,
        base_percent: pct(base),
    })
}

/// The differential graph as a standalone SVG: `new`'s shape, coloured by the
/// change of each frame's share since `base`, with both shares in each tooltip.
pub fn render_diff_svg(new: &FlameGraph, base: &FlameGraph, o: &Options) -> String {
    let diffs = Diffs::new(new, base);
    render_svg_painted(new, o, &|id| diffs.paint(id), false)
}

/// The differential graph in a self-contained HTML page: the SVG of
/// [`render_diff_svg`] (hover a frame for its before and after shares) and a legend.
pub fn render_diff_html(new: &FlameGraph, base: &FlameGraph, o: &Options) -> String {
    let svg = render_diff_svg(new, base, o);
    let svg = svg
        .split_once("?>\n")
        .map_or(svg.as_str(), |(_, rest)| rest);
    format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ margin: 0; background: #f6f6f4; font-family: system-ui, sans-serif; }}
.legend {{ padding: 6px 10px; font-size: 13px; color: #333; }}
.legend span {{ display: inline-block; width: 14px; height: 12px; vertical-align: middle; margin: 0 4px 0 12px; }}
svg {{ display: block; width: 100%; height: auto; }}
</style>
</head>
<body>
<div class="legend">Differential flame graph, new side's shape; colour is the change of each frame's share of its side's samples:
<span style="background: rgb(255,35,35)"></span>grew
<span style="background: rgb(35,35,255)"></span>shrank
<span style="background: rgb(235,235,235)"></span>unchanged. Hover a frame for base and new shares.</div>
{svg}</body>
</html>
"#,
        title = escape_xml(&o.title),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(stacks: &[(&str, u64)]) -> FlameGraph {
        let mut g = FlameGraph::new();
        for (s, n) in stacks {
            g.add(s.split(';'), *n);
        }
        g
    }

    #[test]
    fn shares_are_normalised_to_each_side() {
        let base = graph(&[("main;a", 30), ("main;b", 10)]);
        let new = graph(&[("main;a", 10), ("main;b", 10), ("main;c", 20)]);
        let a = frame_diff(&new, &base, ["main", "a"]).unwrap();
        assert_eq!(a.base_percent, Some(75.0));
        assert_eq!(a.new_percent, 25.0);
        assert_eq!(a.delta_points(), -50.0);
        let c = frame_diff(&new, &base, ["main", "c"]).unwrap();
        assert_eq!(c.base_percent, None);
        assert_eq!(c.new_percent, 50.0);
        assert!(frame_diff(&new, &base, ["main", "zzz"]).is_none());
    }

    #[test]
    fn colours_follow_the_sign_of_the_change() {
        let base = graph(&[("main;a", 30), ("main;b", 10)]);
        let new = graph(&[("main;a", 10), ("main;b", 10), ("main;c", 20)]);
        let svg = render_diff_svg(&new, &base, &Options::default());
        let frame = |name: &str| {
            svg.lines()
                .find(|l| l.contains(&format!("<title>{name} (")))
                .unwrap_or_else(|| panic!("no frame {name} in {svg}"))
                .to_string()
        };
        let a = frame("a");
        assert!(a.contains("fill=\"rgb(35,35,255)\""), "{a}");
        assert!(
            a.contains("base 75.00% -&gt; new 25.00% (-50.00 pp)"),
            "{a}"
        );
        let c = frame("c");
        assert!(c.contains("fill=\"rgb(255,"), "{c}");
        assert!(c.contains("base absent -&gt; new 50.00%"), "{c}");
        let b = frame("b");
        assert!(b.contains("fill=\"rgb(235,235,235)\""), "{b}");
        let html = render_diff_html(&new, &base, &Options::default());
        assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg"));
    }
}
