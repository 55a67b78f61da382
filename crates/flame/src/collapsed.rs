//! The "collapsed stacks" text format: one `frame;frame;frame COUNT` line per stack.
//!
//! Frames are listed root first and separated by `;`; the count follows the last
//! space, so frame names may contain spaces but not `;` or line breaks.

use crate::tree::{FlameGraph, NodeId, ROOT};
use thiserror::Error;

/// A line of collapsed-stack text that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}: {kind}")]
pub struct ParseError {
    /// 1-based line number in the input.
    pub line: usize,
    /// What was wrong with the line.
    pub kind: ParseErrorKind,
}

/// The ways a collapsed-stack line can be malformed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseErrorKind {
    /// The line has no space separating the stack from its count.
    #[error("expected `frame;frame;... COUNT`, found no count after the stack")]
    MissingCount,
    /// The text after the last space is not a non-negative integer.
    #[error("sample count {0:?} is not a non-negative integer")]
    InvalidCount(String),
    /// Nothing precedes the count.
    #[error("the stack before the count is empty")]
    EmptyStack,
    /// Two `;` in a row, or a leading or trailing `;`.
    #[error("frame {index} of the stack has an empty name")]
    EmptyFrame {
        /// 1-based position of the empty frame, counted from the root.
        index: usize,
    },
}

impl FlameGraph {
    /// Builds a graph from collapsed-stack text (`a;b;c 12` per line).
    ///
    /// Blank lines are skipped and `\r\n` line ends accepted; repeated stacks add up.
    /// The first malformed line stops parsing with its line number.
    pub fn from_collapsed(text: &str) -> Result<Self, ParseError> {
        let mut graph = FlameGraph::new();
        // One buffer for all lines so each line is split exactly once.
        let mut frames = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let count = parse_line(line, &mut frames).map_err(|kind| ParseError {
                line: index + 1,
                kind,
            })?;
            if let Some(count) = count {
                graph.add(&frames, count);
            }
        }
        Ok(graph)
    }

    /// Writes the graph back as collapsed stacks, one line per node with self
    /// weight, stacks in name order. Parsing the result yields an equal graph.
    pub fn to_collapsed(&self) -> String {
        let mut out = String::new();
        let mut path: Vec<&str> = Vec::new();
        // Explicit stack of (node, depth) because Java stacks can be thousands deep.
        let mut pending = vec![(ROOT, 0usize)];
        while let Some((id, depth)) = pending.pop() {
            path.truncate(depth);
            if id != ROOT {
                path.push(self.name(self.node(id).name));
            }
            self.write_line(&path, self.self_weight(id), &mut out);
            let start = pending.len();
            pending.extend(self.children_of(id).map(|c| (c, path.len())));
            // Reverse name order on the stack pops children in name order.
            pending[start..]
                .sort_unstable_by(|a, b| self.child_name(b.0).cmp(self.child_name(a.0)));
        }
        out
    }

    fn child_name(&self, id: NodeId) -> &str {
        self.name(self.node(id).name)
    }

    fn write_line(&self, path: &[&str], weight: u64, out: &mut String) {
        if weight == 0 || path.is_empty() {
            return;
        }
        out.push_str(&path.join(";"));
        out.push(' ');
        out.push_str(&weight.to_string());
        out.push('\n');
    }
}

/// Splits one line into `frames` and returns its count; `Ok(None)` for a blank line.
fn parse_line<'a>(line: &'a str, frames: &mut Vec<&'a str>) -> Result<Option<u64>, ParseErrorKind> {
    let line = line.trim_end();
    if line.trim_start().is_empty() {
        return Ok(None);
    }
    let (stack, count) = line.rsplit_once(' ').ok_or(ParseErrorKind::MissingCount)?;
    let count = count
        .parse::<u64>()
        .map_err(|_| ParseErrorKind::InvalidCount(count.to_string()))?;
    let stack = stack.trim_end();
    if stack.is_empty() {
        return Err(ParseErrorKind::EmptyStack);
    }
    frames.clear();
    frames.extend(stack.split(';'));
    match frames.iter().position(|f| f.is_empty()) {
        Some(position) => Err(ParseErrorKind::EmptyFrame {
            index: position + 1,
        }),
        None => Ok(Some(count)),
    }
}
