//! The static SVG renderer: one `<g>` per box with a `<title>` tooltip, no script.

use crate::escape::{escape_xml, truncate_label};
use crate::html::{legend_fill, LEGEND};
use crate::kind::{classify, colour, display_name, FrameKind};
use crate::layout::{Frame, Label, Layout};
use crate::tree::{NodeId, ROOT};
use crate::{FlameGraph, Options};
use std::fmt::Write;

const PAD_X: f64 = 10.0;
const FRAME_HEIGHT: u32 = 16;
const FONT_SIZE: u32 = 12;
/// Advance of one character of a monospace font, as a fraction of its size.
const CHAR_WIDTH: f64 = 0.6 * FONT_SIZE as f64;
const FONT_FAMILY: &str = "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";

/// Renders the graph as a standalone SVG document.
///
/// Frames narrower than `o.min_width_px` are merged (see [`Options::min_width_px`]).
pub fn render_svg(g: &FlameGraph, o: &Options) -> String {
    render_svg_painted(g, o, &|_| None, true)
}

/// A frame's colour and an extra line for its tooltip, chosen by a caller
/// (the differential graph) instead of the frame-kind rule.
pub(crate) struct Paint {
    pub(crate) fill: String,
    pub(crate) note: String,
}

/// [`render_svg`] with frames of the graph coloured by `paint` where it answers,
/// and the legend of the frame-kind colours when `legend`.
pub(crate) fn render_svg_painted(
    g: &FlameGraph,
    o: &Options,
    paint: &dyn Fn(NodeId) -> Option<Paint>,
    legend: bool,
) -> String {
    let mut canvas = Canvas::new(g, o);
    canvas.legend = legend;
    let layout = Layout::new(g, canvas.min_weight(o.min_width_px));
    let mut out = String::with_capacity(256 + layout.frames.len() * 200);
    canvas.write_header(&mut out, o, layout.max_depth);
    if g.total() == 0 {
        canvas.write_note(&mut out, "No samples");
    }
    for frame in &layout.frames {
        canvas.write_frame(&mut out, g, o, frame, layout.max_depth, paint);
    }
    canvas.write_legend(&mut out, layout.max_depth);
    out.push_str("</svg>\n");
    out
}

/// Maps sample units and depths to pixels.
struct Canvas {
    width: f64,
    px_per_sample: f64,
    frames_top: u32,
    inverted: bool,
    total: u64,
    /// Whether a legend of the frame-kind colours goes under the frames.
    legend: bool,
}

impl Canvas {
    fn new(g: &FlameGraph, o: &Options) -> Canvas {
        let width = f64::from(o.width_px.max(100));
        let drawable = width - 2.0 * PAD_X;
        Canvas {
            width,
            px_per_sample: drawable / g.total().max(1) as f64,
            frames_top: if o.subtitle.is_empty() { 40 } else { 58 },
            inverted: o.inverted,
            total: g.total(),
            legend: true,
        }
    }

    fn min_weight(&self, min_width_px: f64) -> f64 {
        min_width_px.max(0.0) / self.px_per_sample
    }

    fn height(&self, max_depth: u32) -> u32 {
        let rows = self.legend_rows();
        self.legend_top(max_depth) + rows * LEGEND_ROW + 4 * rows.min(1)
    }

    /// Where the legend's first row goes: under the frames' bottom margin.
    fn legend_top(&self, max_depth: u32) -> u32 {
        self.frames_top + (max_depth + 1) * FRAME_HEIGHT + 12
    }

    fn legend_rows(&self) -> u32 {
        match self.legend {
            true => legend_items(self.width)
                .last()
                .map_or(0, |item| item.row + 1),
            false => 0,
        }
    }

    /// What each colour means, in rows under the frames.
    fn write_legend(&self, out: &mut String, max_depth: u32) {
        if !self.legend {
            return;
        }
        let top = self.legend_top(max_depth);
        for item in legend_items(self.width) {
            let y = top + item.row * LEGEND_ROW;
            let _ = writeln!(
                out,
                r##"<rect x="{x:.1}" y="{y}" width="{LEGEND_SWATCH}" height="{LEGEND_SWATCH}" fill="{fill}" rx="2"/><text x="{tx:.1}" y="{ty}" font-size="{LEGEND_FONT}" fill="#555">{text}</text>"##,
                x = item.x,
                fill = item.fill,
                tx = item.x + f64::from(LEGEND_SWATCH) + 4.0,
                ty = y + LEGEND_SWATCH,
                text = escape_xml(item.text),
            );
        }
    }

    fn y(&self, depth: u32, max_depth: u32) -> u32 {
        let row = if self.inverted {
            depth
        } else {
            max_depth - depth
        };
        self.frames_top + row * FRAME_HEIGHT
    }

    fn write_header(&self, out: &mut String, o: &Options, max_depth: u32) {
        let (w, h) = (self.width, self.height(max_depth));
        let _ = writeln!(
            out,
            r##"<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{FONT_FAMILY}" font-size="{FONT_SIZE}">
<style>text {{ fill: #000; pointer-events: none; }} g.f:hover rect {{ stroke: #000; stroke-width: 0.6; }}</style>
<rect width="100%" height="100%" fill="#f6f6f4"/>
<text x="{cx}" y="24" text-anchor="middle" font-size="17" font-weight="bold">{title}</text>"##,
            cx = w / 2.0,
            title = escape_xml(&o.title),
        );
        if !o.subtitle.is_empty() {
            let _ = writeln!(
                out,
                r##"<text x="{cx}" y="43" text-anchor="middle" fill="#555">{subtitle}</text>"##,
                cx = w / 2.0,
                subtitle = escape_xml(&o.subtitle),
            );
        }
    }

    fn write_note(&self, out: &mut String, note: &str) {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            self.width / 2.0,
            self.frames_top + 40,
            escape_xml(note)
        );
    }

    fn write_frame(
        &self,
        out: &mut String,
        g: &FlameGraph,
        o: &Options,
        f: &Frame,
        max_depth: u32,
        paint: &dyn Fn(NodeId) -> Option<Paint>,
    ) {
        let (name, mut fill) = describe(g, f.label, o.min_width_px);
        let mut note = String::new();
        if let Label::Node(id) = f.label {
            if let Some(p) = paint(id) {
                fill = p.fill;
                note = p.note;
            }
        }
        let x = PAD_X + f.x as f64 * self.px_per_sample;
        let width = f.width as f64 * self.px_per_sample;
        let y = self.y(f.depth, max_depth);
        let mut tooltip = format!(
            "{name} ({} {}, {})",
            group_digits(f.width),
            o.count_name,
            percent(f.width, self.total)
        );
        if !note.is_empty() {
            tooltip.push_str("; ");
            tooltip.push_str(&note);
        }
        let _ = write!(
            out,
            r#"<g class="f"><title>{}</title><rect x="{x:.2}" y="{y}" width="{width:.2}" height="{}" fill="{fill}" rx="2"/>"#,
            escape_xml(&tooltip),
            FRAME_HEIGHT - 1,
        );
        let max_chars = ((width - 6.0) / CHAR_WIDTH).max(0.0) as usize;
        if let Some(label) = truncate_label(&name, max_chars) {
            let _ = write!(
                out,
                r#"<text x="{:.2}" y="{}">{}</text>"#,
                x + 3.0,
                y + FRAME_HEIGHT - 4,
                escape_xml(&label)
            );
        }
        out.push_str("</g>\n");
    }
}

const LEGEND_ROW: u32 = 16;
const LEGEND_SWATCH: u32 = 10;
const LEGEND_FONT: u32 = 11;

/// One legend entry placed: its row and x, swatch colour and text.
struct LegendItem {
    row: u32,
    x: f64,
    fill: String,
    text: &'static str,
}

/// The HTML page's legend less the search colour (a static SVG has no
/// search), flowed into rows that fit `width`.
fn legend_items(width: f64) -> Vec<LegendItem> {
    let char_width = 0.6 * f64::from(LEGEND_FONT);
    let (mut row, mut x) = (0, PAD_X);
    let mut items = Vec::new();
    for (name, text) in LEGEND.iter().filter(|(name, _)| !name.starts_with('#')) {
        let item_width = f64::from(LEGEND_SWATCH) + 4.0 + text.len() as f64 * char_width;
        if x > PAD_X && x + item_width > width - PAD_X {
            (row, x) = (row + 1, PAD_X);
        }
        items.push(LegendItem {
            row,
            x,
            fill: legend_fill(name),
            text,
        });
        x += item_width + 14.0;
    }
    items
}

/// The text and fill colour for a box.
fn describe(g: &FlameGraph, label: Label, min_width_px: f64) -> (String, String) {
    match label {
        Label::Node(id) => {
            let name = g.name(g.node(id).name);
            let kind = if id == ROOT {
                FrameKind::Synthetic
            } else {
                classify(name)
            };
            (display_name(name).to_string(), colour(name, kind))
        }
        Label::Merged { count } => (
            format!("[{count} frames narrower than {min_width_px} px]"),
            colour("", FrameKind::Synthetic),
        ),
    }
}

fn percent(part: u64, total: u64) -> String {
    format!("{:.2}%", 100.0 * part as f64 / total.max(1) as f64)
}

/// `1234567` as `1,234,567`, so large counts read at a glance.
fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_group_in_threes() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1000), "1,000");
        assert_eq!(group_digits(1234567), "1,234,567");
    }
}
