//! Reading and writing the collapsed-stack text format.

use jscope_flame::{FlameGraph, ParseError, ParseErrorKind};

fn error(text: &str) -> ParseError {
    FlameGraph::from_collapsed(text).expect_err("input should be rejected")
}

#[test]
fn parses_stacks_and_adds_repeated_ones() {
    let g = FlameGraph::from_collapsed("main;a;x 5\nmain;b 2\nmain;a;x 1\n").unwrap();
    assert_eq!(g.total(), 8);
    assert_eq!(g.weight_at(["main", "a", "x"]).unwrap().self_weight, 6);
    assert_eq!(g.weight_at(["main", "b"]).unwrap().total, 2);
}

#[test]
fn frame_names_may_contain_spaces_and_markup() {
    let text = "Thread.run ();java.util.List<String> get(int) 7\r\n\n   \nmain 1";
    let g = FlameGraph::from_collapsed(text).unwrap();
    let path = ["Thread.run ()", "java.util.List<String> get(int)"];
    assert_eq!(g.weight_at(path).unwrap().total, 7);
    assert_eq!(g.total(), 8);
}

#[test]
fn missing_count_names_the_line() {
    let e = error("a;b 1\n\na;b\n");
    assert_eq!(e.line, 3);
    assert_eq!(e.kind, ParseErrorKind::MissingCount);
    assert!(e.to_string().starts_with("line 3: "), "{e}");
}

#[test]
fn invalid_counts_are_quoted_in_the_error() {
    for bad in ["-4", "1.5", "12x", "99999999999999999999999"] {
        let e = error(&format!("ok 1\nframe {bad}"));
        assert_eq!(e.line, 2);
        assert_eq!(e.kind, ParseErrorKind::InvalidCount(bad.to_string()));
        assert!(e.to_string().contains(bad), "{e}");
    }
}

#[test]
fn empty_stacks_and_frames_are_rejected() {
    assert_eq!(error("   12").kind, ParseErrorKind::EmptyStack);
    assert_eq!(
        error("a;;b 1").kind,
        ParseErrorKind::EmptyFrame { index: 2 }
    );
    assert_eq!(error(";a 1").kind, ParseErrorKind::EmptyFrame { index: 1 });
    assert_eq!(error("a; 1").kind, ParseErrorKind::EmptyFrame { index: 2 });
}

#[test]
fn written_text_parses_back_to_the_same_graph() {
    let text = "main;b 2\nmain;a;x 5\nmain 1\nother;ü<&> 3\n";
    let g = FlameGraph::from_collapsed(text).unwrap();
    let written = g.to_collapsed();
    assert_eq!(written, "main 1\nmain;a;x 5\nmain;b 2\nother;ü<&> 3\n");
    assert_eq!(
        FlameGraph::from_collapsed(&written).unwrap().to_collapsed(),
        written
    );
}

#[test]
fn deep_stacks_do_not_overflow() {
    let frames: Vec<String> = (0..50_000).map(|i| format!("f{i}")).collect();
    let text = format!("{} 1\n", frames.join(";"));
    let g = FlameGraph::from_collapsed(&text).unwrap();
    assert_eq!(g.frame_count(), 50_000);
    assert_eq!(g.to_collapsed(), text);
}
