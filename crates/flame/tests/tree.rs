//! Building the frame tree from stacks.

use jscope_flame::{FlameGraph, FrameWeight};

fn weight(total: u64, self_weight: u64) -> Option<FrameWeight> {
    Some(FrameWeight { total, self_weight })
}

#[test]
fn shared_prefixes_merge_and_weights_add_up() {
    let mut g = FlameGraph::new();
    g.add(["main", "a", "x"], 5);
    g.add(["main", "a", "y"], 3);
    g.add(["main", "b"], 2);
    g.add(["main", "a", "x"], 1);
    assert_eq!(g.total(), 11);
    assert_eq!(g.frame_count(), 5);
    assert_eq!(g.weight_at(["main"]), weight(11, 0));
    assert_eq!(g.weight_at(["main", "a"]), weight(9, 0));
    assert_eq!(g.weight_at(["main", "a", "x"]), weight(6, 6));
    assert_eq!(g.weight_at(["main", "b"]), weight(2, 2));
    assert_eq!(g.weight_at(Vec::<&str>::new()), weight(11, 0));
}

#[test]
fn interior_frames_keep_their_own_self_weight() {
    let mut g = FlameGraph::new();
    g.add(["main", "work"], 4);
    g.add(["main"], 2);
    assert_eq!(g.weight_at(["main"]), weight(6, 2));
    assert_eq!(g.weight_at(["main", "work"]), weight(4, 4));
}

#[test]
fn same_name_under_different_parents_is_a_different_frame() {
    let mut g = FlameGraph::new();
    g.add(["a", "shared"], 1);
    g.add(["b", "shared"], 2);
    assert_eq!(g.weight_at(["a", "shared"]), weight(1, 1));
    assert_eq!(g.weight_at(["b", "shared"]), weight(2, 2));
    assert_eq!(g.weight_at(["shared"]), None);
    assert_eq!(g.frame_count(), 4);
}

#[test]
fn zero_weight_adds_nothing_and_empty_stack_counts_at_the_root() {
    let mut g = FlameGraph::new();
    g.add(["never"], 0);
    assert_eq!(g.frame_count(), 0);
    assert_eq!(g.weight_at(["never"]), None);
    g.add(Vec::<&str>::new(), 3);
    assert_eq!(g.total(), 3);
    assert_eq!(g.weight_at(Vec::<&str>::new()), weight(3, 3));
}

#[test]
fn accepts_slices_owned_strings_and_iterators() {
    let mut g = FlameGraph::new();
    let frames: &[&str] = &["a", "b"];
    g.add(frames, 1);
    g.add(vec!["a".to_string(), "b".to_string()], 2);
    g.add("a;b".split(';'), 3);
    assert_eq!(g.weight_at(["a", "b"]), weight(6, 6));
}

#[test]
fn weights_saturate_instead_of_wrapping() {
    let mut g = FlameGraph::new();
    g.add(["a"], u64::MAX - 1);
    g.add(["a"], 5);
    assert_eq!(g.total(), u64::MAX);
}

#[test]
fn consecutive_stacks_that_share_a_prefix_then_diverge() {
    let mut g = FlameGraph::new();
    g.add(["a", "b", "c"], 1);
    g.add(["a", "b", "d"], 2);
    g.add(["a", "b"], 4);
    g.add(["a", "e", "c"], 8);
    g.add(["a", "b", "c"], 16);
    g.add(["b"], 32);
    g.add(["a", "b", "c", "d"], 64);
    assert_eq!(g.weight_at(["a"]), weight(95, 0));
    assert_eq!(g.weight_at(["a", "b"]), weight(87, 4));
    assert_eq!(g.weight_at(["a", "b", "c"]), weight(81, 17));
    assert_eq!(g.weight_at(["a", "b", "c", "d"]), weight(64, 64));
    assert_eq!(g.weight_at(["a", "b", "d"]), weight(2, 2));
    assert_eq!(g.weight_at(["a", "e", "c"]), weight(8, 8));
    assert_eq!(g.weight_at(["b"]), weight(32, 32));
    assert_eq!(g.frame_count(), 8);
}

#[test]
fn wide_nodes_find_children_among_hundreds() {
    let mut g = FlameGraph::new();
    for round in 1..=3 {
        for i in 0..300 {
            g.add(["main", &format!("f{i}")], round);
        }
    }
    assert_eq!(g.frame_count(), 301);
    for i in [0, 7, 8, 9, 299] {
        assert_eq!(
            g.weight_at(["main", &format!("f{i}")]),
            weight(6, 6),
            "f{i}"
        );
    }
}
