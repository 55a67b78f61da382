//! Settings shared by the SVG and HTML renderers.

/// How a flame graph is rendered.
///
/// Build it with struct update syntax so that new fields keep their defaults:
/// `Options { title: "CPU".into(), ..Options::default() }`.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Heading of the graph.
    pub title: String,
    /// Second heading line, e.g. the recording file, mode and sample count; may be empty.
    pub subtitle: String,
    /// What the weights count, in plural ("samples", "allocations", "ns").
    pub count_name: String,
    /// Frames narrower than this many pixels are merged with their narrow siblings
    /// into one grey box (SVG at `width_px`, HTML at the current zoom, where
    /// anything under one pixel is merged regardless).
    pub min_width_px: f64,
    /// Width of the SVG image. The HTML page fills its window instead.
    pub width_px: u32,
    /// Draw an icicle graph: root at the top, callees below.
    pub inverted: bool,
    /// The most frames the HTML page embeds; beyond it the lightest frames are
    /// merged so the page stays small and responsive. 0 means no limit.
    pub max_html_frames: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            title: "Flame Graph".to_string(),
            subtitle: String::new(),
            count_name: "samples".to_string(),
            min_width_px: 0.1,
            width_px: 1200,
            inverted: false,
            max_html_frames: 200_000,
        }
    }
}
