//! `jscope nativemem`: native allocations (the agent's `nativemem`) by stack,
//! library, Java caller or C function, and with `--leaks` the sampled blocks
//! never freed. See docs/CLI.md.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use jscope_analysis::events::{native_mem_report, EventType, NativeBy};
use jscope_format::EventKind;

use crate::events::{filter, load, note, EventSelectArgs};
use crate::output::Format;
use crate::source::SourceArgs;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum NativeByArg {
    /// Each distinct stack (its frames listed).
    #[default]
    Stack,
    /// The library of the code that called the allocator.
    Library,
    /// The nearest Java method (a native method, or Java code calling into the JVM).
    Caller,
    /// The C function that called the allocator.
    Function,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  jscope nativemem app.jsc --by caller\n  jscope nativemem app.jsc --leaks --by stack\n  jscope nativemem app.jsc --leaks --from 10 --to 60 --format json"
)]
pub struct NativememArgs {
    /// The recording (.jsc) to read; or use --data / --collector.
    #[arg(required_unless_present_any = ["data", "collector"])]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub select: EventSelectArgs,
    /// Only the sampled blocks not freed by the end of the recording (or of
    /// --to), with their estimated bytes: what leaked.
    #[arg(long)]
    pub leaks: bool,
    /// Group by stack, library, Java caller or C function.
    #[arg(long, value_enum, default_value_t)]
    pub by: NativeByArg,
    /// Number of rows to list.
    #[arg(short = 'n', long, default_value_t = 30)]
    pub top: usize,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

pub fn run(args: &NativememArgs) -> Result<()> {
    let rec = load(
        args.file.as_deref(),
        &args.source,
        args.select.from,
        args.select.to,
    )?;
    let sampled = rec
        .events
        .iter()
        .any(|e| matches!(e.kind, EventKind::NativeAlloc { .. }));
    if !sampled {
        if rec.header.extra("nativemem.interval").is_none() {
            bail!("the recording has no native allocation samples; record with --nativemem (the agent's nativemem)");
        }
        note("no native allocation was sampled in this recording");
    }
    let by = match args.by {
        NativeByArg::Stack => NativeBy::Stack,
        NativeByArg::Library => NativeBy::Library,
        NativeByArg::Caller => NativeBy::Caller,
        NativeByArg::Function => NativeBy::Function,
    };
    let f = filter(&args.select, vec![EventType::NativeAlloc])?;
    let mut report = native_mem_report(&rec, &f, by, args.leaks);
    report.rows.truncate(args.top);
    args.format.print(&report)
}
