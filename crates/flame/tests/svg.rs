//! The static SVG renderer: well-formed, escaped, laid out as a flame graph.

use jscope_flame::{render_svg, FlameGraph, Options};
use roxmltree::{Document, Node};

/// Frame names that break naive XML, HTML or JSON output.
const NASTY: [&str; 6] = [
    "<init>",
    "a&b&amp;",
    "\"quoted\" 'single'",
    "ünïcödé 😀 日本語",
    "</script><!-- x -->",
    "]]>{{data}}",
];

struct Box_ {
    tooltip: String,
    x: f64,
    y: f64,
    width: f64,
    label: Option<String>,
}

fn boxes(svg: &str) -> Vec<Box_> {
    let doc = Document::parse(svg).expect("SVG must be well-formed XML");
    doc.descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("f"))
        .map(|g| {
            let child = |tag: &str| g.children().find(|c: &Node| c.has_tag_name(tag));
            let rect = child("rect").expect("every frame has a rect");
            let number = |name: &str| rect.attribute(name).unwrap().parse::<f64>().unwrap();
            Box_ {
                tooltip: child("title").unwrap().text().unwrap().to_string(),
                x: number("x"),
                y: number("y"),
                width: number("width"),
                label: child("text").and_then(|t| t.text()).map(str::to_string),
            }
        })
        .collect()
}

fn find<'a>(boxes: &'a [Box_], name: &str) -> &'a Box_ {
    boxes
        .iter()
        .find(|b| b.tooltip.starts_with(&format!("{name} (")))
        .unwrap_or_else(|| panic!("no frame {name:?}"))
}

#[test]
fn every_frame_is_a_box_with_a_tooltip() {
    let g = FlameGraph::from_collapsed("main;a;x 6\nmain;b 2\nmain 2\n").unwrap();
    let svg = render_svg(&g, &Options::default());
    let boxes = boxes(&svg);
    assert_eq!(boxes.len(), 5);
    assert_eq!(find(&boxes, "all").tooltip, "all (10 samples, 100.00%)");
    assert_eq!(find(&boxes, "x").tooltip, "x (6 samples, 60.00%)");
    assert_eq!(find(&boxes, "b").tooltip, "b (2 samples, 20.00%)");
}

#[test]
fn widths_are_proportional_and_children_sit_on_their_parent() {
    let g = FlameGraph::from_collapsed("main;a;x 6\nmain;b 2\nmain 2\n").unwrap();
    let options = Options {
        width_px: 1020,
        ..Options::default()
    };
    let boxes = boxes(&render_svg(&g, &options));
    let (all, main, a, b) = (
        find(&boxes, "all"),
        find(&boxes, "main"),
        find(&boxes, "a"),
        find(&boxes, "b"),
    );
    assert!((all.width - 1000.0).abs() < 0.01, "{}", all.width);
    assert!((a.width - 600.0).abs() < 0.01 && (b.width - 200.0).abs() < 0.01);
    assert_eq!(a.x, main.x);
    assert!((b.x - (a.x + a.width)).abs() < 0.01, "b follows a");
    // A flame graph grows upwards: callees sit above their callers.
    assert!(a.y < main.y && main.y < all.y);
}

#[test]
fn inverted_graph_hangs_from_the_top() {
    let g = FlameGraph::from_collapsed("main;a 1\n").unwrap();
    let options = Options {
        inverted: true,
        ..Options::default()
    };
    let boxes = boxes(&render_svg(&g, &options));
    assert!(find(&boxes, "all").y < find(&boxes, "main").y);
    assert!(find(&boxes, "main").y < find(&boxes, "a").y);
}

#[test]
fn names_and_headings_survive_escaping() {
    let mut g = FlameGraph::new();
    for name in NASTY {
        g.add(["main", name], 1);
    }
    let options = Options {
        title: "<Title> & \"co\"".into(),
        subtitle: "file 'x.jsc' → cpu".into(),
        ..Options::default()
    };
    let svg = render_svg(&g, &options);
    let doc = Document::parse(&svg).unwrap();
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    assert!(texts.contains(&"<Title> & \"co\""));
    assert!(texts.contains(&"file 'x.jsc' → cpu"));
    let boxes = boxes(&svg);
    for name in NASTY {
        let frame = find(&boxes, name);
        assert_eq!(frame.label.as_deref(), Some(name), "label of {name:?}");
    }
}

#[test]
fn control_characters_are_replaced_to_stay_well_formed() {
    let mut g = FlameGraph::new();
    g.add(["bell\u{7}frame"], 1);
    let boxes = boxes(&render_svg(&g, &Options::default()));
    find(&boxes, "bell\u{FFFD}frame");
}

#[test]
fn long_labels_are_cut_to_fit_their_box() {
    let long = "com.example.VeryLongClassName.veryLongMethodName".repeat(3);
    let g = FlameGraph::from_collapsed(&format!("{long} 1\nshort 3\n")).unwrap();
    let options = Options {
        width_px: 420,
        ..Options::default()
    };
    let boxes = boxes(&render_svg(&g, &options));
    let label = find(&boxes, &long)
        .label
        .clone()
        .expect("100 px is room for a dozen characters");
    assert!(
        label.ends_with("..") && long.starts_with(label.trim_end_matches("..")),
        "{label}"
    );
    assert!(label.chars().count() as f64 * 7.2 <= find(&boxes, &long).width);
}

#[test]
fn frames_narrower_than_the_minimum_merge_into_one_box() {
    let mut g = FlameGraph::new();
    g.add(["main", "hot"], 1_000_000);
    for i in 0..1000 {
        g.add(["main", &format!("cold{i}")], 1);
    }
    let boxes = boxes(&render_svg(&g, &Options::default()));
    assert_eq!(boxes.len(), 4, "all, main, hot and one merged box");
    let merged = find(&boxes, "[1000 frames narrower than 0.1 px]");
    assert!(
        merged.tooltip.contains("1,000 samples"),
        "{}",
        merged.tooltip
    );
    let hot = find(&boxes, "hot");
    assert!((merged.x - (hot.x + hot.width)).abs() < 0.01);
}

#[test]
fn empty_graph_renders_a_note() {
    let svg = render_svg(&FlameGraph::new(), &Options::default());
    let doc = Document::parse(&svg).unwrap();
    assert!(doc.descendants().any(|n| n.text() == Some("No samples")));
}

#[test]
fn a_legend_under_the_frames_names_each_colour() {
    let g = FlameGraph::from_collapsed("a.Main.main_[j];itable stub_[s];a.Circle_[t] 3\n").unwrap();
    let svg = render_svg(&g, &Options::default());
    let doc = Document::parse(&svg).unwrap();
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text") && n.attribute("font-size") == Some("11"))
        .filter_map(|n| n.text())
        .collect();
    for what in ["C1", "interpreted", "inlined", "stub", "class", "kernel"] {
        assert!(texts.contains(&what), "{what} not in {texts:?}");
    }
    assert!(
        !texts.contains(&"search match"),
        "a static SVG has no search"
    );
    // Under the lowest frame, inside the picture.
    let height: f64 = doc
        .root_element()
        .attribute("height")
        .unwrap()
        .parse()
        .unwrap();
    let lowest = boxes(&svg).iter().map(|b| b.y).fold(0.0, f64::max);
    let legend_y = doc
        .descendants()
        .filter(|n| n.has_tag_name("text") && n.attribute("font-size") == Some("11"))
        .map(|n| n.attribute("y").unwrap().parse::<f64>().unwrap())
        .fold(f64::MAX, f64::min);
    assert!(
        legend_y > lowest && legend_y < height,
        "{legend_y} {lowest} {height}"
    );
    // The box names go without their kind suffixes.
    assert_eq!(
        find(&boxes(&svg), "itable stub").label.as_deref(),
        Some("itable stub")
    );
}
