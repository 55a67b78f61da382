//! Flame graphs for jscope: weighted stacks in, a static SVG or a self-contained
//! interactive HTML page out.
//!
//! ```
//! use jscope_flame::{render_html, render_svg, FlameGraph, Options};
//!
//! let graph = FlameGraph::from_collapsed("main;run;compute 9\nmain;run 1\n").unwrap();
//! let options = Options { title: "CPU".into(), ..Options::default() };
//! assert!(render_svg(&graph, &options).contains("compute"));
//! assert!(render_html(&graph, &options).contains("compute"));
//! ```
//!
//! The crate owns the tree of frames ([`FlameGraph`]), the collapsed-stack text
//! format, the frame colouring rule ([`classify`]) and the two renderers. It
//! knows nothing about recordings: callers feed it stacks.

mod collapsed;
mod diff;
mod escape;
mod html;
mod kind;
mod layout;
mod options;
mod svg;
mod tree;

pub use collapsed::{ParseError, ParseErrorKind};
pub use diff::{frame_diff, render_diff_html, render_diff_svg, FrameDiff};
pub use escape::{escape_xml, json_for_script};
pub use html::render_html;
pub use kind::{classify, colour, display_name, FrameKind};
pub use options::Options;
pub use svg::render_svg;
pub use tree::{FlameGraph, FrameWeight};
