//! The interactive HTML page: self-contained, escaped, and carrying the frames.

use jscope_flame::{render_html, FlameGraph, Options};
use serde_json::Value;

const DATA_START: &str = r#"<script type="application/json" id="flame-data">"#;

/// The JSON the page embeds; fails if anything in it could end the script element early.
fn page_data(html: &str) -> Value {
    let start = html.find(DATA_START).expect("page embeds its data") + DATA_START.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).expect("embedded data is valid JSON up to </script>")
}

/// (name, depth, width) per frame, with merged boxes named "[n merged]".
fn frames(data: &Value) -> Vec<(String, u64, u64)> {
    let names = data["names"].as_array().unwrap();
    let flat = data["frames"].as_array().unwrap();
    flat.chunks(3)
        .map(|f| {
            let name = match f[0].as_i64().unwrap() {
                n if n < 0 => format!("[{} merged]", -n),
                n => names[n as usize].as_str().unwrap().to_string(),
            };
            (name, f[1].as_u64().unwrap(), f[2].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn page_embeds_every_frame_in_pre_order() {
    let g = FlameGraph::from_collapsed("main;a;x 6\nmain;b 2\nmain 2\n").unwrap();
    let data = page_data(&render_html(&g, &Options::default()));
    assert_eq!(data["total"], 10);
    assert_eq!(data["countName"], "samples");
    let expected = [
        ("all", 0, 10),
        ("main", 1, 10),
        ("a", 2, 6),
        ("x", 3, 6),
        ("b", 2, 2),
    ];
    let expected: Vec<_> = expected
        .iter()
        .map(|&(n, d, w)| (n.to_string(), d, w))
        .collect();
    assert_eq!(frames(&data), expected);
}

#[test]
fn every_name_has_a_colour() {
    let g = FlameGraph::from_collapsed("com.a.B.c;java.lang.Thread.run;memcpy_[n] 1\n").unwrap();
    let data = page_data(&render_html(&g, &Options::default()));
    let colours = data["colors"].as_array().unwrap();
    let name_colour = data["nameColor"].as_array().unwrap();
    assert_eq!(name_colour.len(), data["names"].as_array().unwrap().len());
    for index in name_colour {
        let colour = colours[index.as_u64().unwrap() as usize].as_str().unwrap();
        assert!(colour.len() == 7 && colour.starts_with('#'), "{colour}");
    }
    assert_eq!(colours.len(), 4, "root, Java, JDK and native frames differ");
}

#[test]
fn names_and_headings_are_escaped() {
    let nasty = [
        "</script><script>alert(1)</script>",
        "<!--",
        "a&b",
        "\"q\" 'q'",
        "ü😀\u{2028}",
        "{{data}}",
    ];
    let mut g = FlameGraph::new();
    for name in nasty {
        g.add(["main", name], 1);
    }
    let options = Options {
        title: "<b>T&T</b>".into(),
        subtitle: "\"sub\" {{script}}".into(),
        count_name: "</script>".into(),
        ..Options::default()
    };
    let html = render_html(&g, &options);
    assert!(html.contains("<title>&lt;b&gt;T&amp;T&lt;/b&gt;</title>"));
    assert!(html.contains("&quot;sub&quot; {{script}}"));
    assert!(!html.contains("<b>T&T</b>") && !html.contains("alert(1)</script>"));
    let data = page_data(&html);
    assert_eq!(data["countName"], "</script>");
    let names: Vec<String> = frames(&data).into_iter().map(|f| f.0).collect();
    for name in nasty {
        assert!(names.contains(&name.to_string()), "{name:?} lost");
    }
}

#[test]
fn page_needs_no_network() {
    let g = FlameGraph::from_collapsed("main 1\n").unwrap();
    let html = render_html(&g, &Options::default()).to_lowercase();
    for external in [
        "src=",
        "href=",
        "http:",
        "https:",
        "@import",
        "url(",
        "@font-face",
    ] {
        assert!(!html.contains(external), "page refers to {external}");
    }
    assert!(html.contains("<canvas") && html.contains("<style>") && html.contains("<script>"));
}

#[test]
fn frame_budget_merges_the_lightest_frames() {
    let mut g = FlameGraph::new();
    for i in 0..5000u64 {
        g.add(
            ["main", &format!("f{}", i % 100), &format!("leaf{i}")],
            1 + i % 7,
        );
    }
    let options = Options {
        max_html_frames: 300,
        ..Options::default()
    };
    let frames = frames(&page_data(&render_html(&g, &options)));
    let kept = frames.iter().filter(|f| !f.0.starts_with('[')).count();
    assert!(kept <= 300 && kept > 100, "kept {kept}");
    // Widths still add up: children (merged ones included) never exceed the parent.
    assert_eq!(frames[0].2, g.total());
    assert_eq!(frames[1].2, g.total());
}

#[test]
fn empty_graph_still_renders() {
    let data = page_data(&render_html(&FlameGraph::new(), &Options::default()));
    assert_eq!(data["total"], 0);
    assert_eq!(frames(&data), [("all".to_string(), 0, 0)]);
}

#[test]
fn huge_weights_stay_unsigned() {
    let mut g = FlameGraph::new();
    g.add(["a"], u64::MAX);
    let data = page_data(&render_html(&g, &Options::default()));
    assert_eq!(data["total"].as_u64(), Some(u64::MAX));
    assert_eq!(frames(&data)[1], ("a".to_string(), 1, u64::MAX));
}

#[test]
fn a_method_at_two_tiers_is_two_boxes_of_one_name_and_two_colours_with_a_legend() {
    let g = FlameGraph::from_collapsed(
        "a.Main.main_[0];a.Main.work_[j];write [libc.so.6];do_syscall_64_[k] 3\n\
         a.Main.main_[0];a.Main.work_[0] 1\n\
         [C2 CompilerThread0];JavaThread::run [libjvm.so] 2\n",
    )
    .unwrap();
    let html = render_html(&g, &Options::default());
    let data = page_data(&html);
    let names = data["names"].as_array().unwrap();
    let colours = data["colors"].as_array().unwrap();
    let name_colour = data["nameColor"].as_array().unwrap();
    let work: Vec<&str> = names
        .iter()
        .zip(name_colour)
        .filter(|(n, _)| n.as_str() == Some("a.Main.work"))
        .map(|(_, c)| colours[c.as_u64().unwrap() as usize].as_str().unwrap())
        .collect();
    assert_eq!(work.len(), 2, "{names:?}");
    assert_ne!(work[0], work[1]);
    assert!(names.iter().all(|n| !n.as_str().unwrap().ends_with("_[j]")));
    assert!(names.iter().any(|n| n == "do_syscall_64_[k]"));
    // The legend names every kind, each swatch in the colour such a frame gets.
    let legend = &html[html.find(r#"<span class="legend">"#).unwrap()..];
    let legend = &legend[..legend.find("</span>").unwrap()];
    for what in [
        "interpreted",
        "C1",
        "inlined",
        "stub",
        "class",
        "JDK",
        "native",
        "JVM (libjvm)",
        "kernel",
    ] {
        assert!(legend.contains(&format!("></i>{what}")), "{legend}");
    }
    let kernel = jscope_flame::colour("do_syscall_64_[k]", jscope_flame::FrameKind::Kernel);
    assert!(
        legend.contains(&format!("background:{kernel}\"></i>kernel")),
        "{legend}"
    );
}
