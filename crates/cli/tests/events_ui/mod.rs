//! Checks of the timeline, lock and allocation views in headless Chromium, shared by
//! the synthetic and the real-JVM tests.
#![allow(dead_code)] // each test binary uses a different part

use std::time::Duration;

use serde_json::json;

use crate::serving::cdp::Browser;
use crate::serving::Served;

const WAIT: Duration = Duration::from_secs(30);

/// What the timeline must show.
pub struct Expect<'a> {
    /// Thread names that must have a lane.
    pub lanes: &'a [&'a str],
    pub min_gc: usize,
    /// A state class (`tl-blocked`, ...) that some span or interval must have.
    pub state: &'a str,
}

/// The timeline draws a lane per thread, GC bars across them and event markers;
/// wheel and buttons zoom down to microseconds, drag pans, a click shows details.
pub fn check_timeline(b: &mut Browser, served: &Served, jvm: &str, want: &Expect, shot: &str) {
    b.goto(&format!("{}/#tab=timeline&jvm={jvm}", served.url()));
    b.wait_for(
        "document.querySelectorAll('#tl-svg .tl-lane').length > 0",
        WAIT,
    );
    let names: Vec<String> = serde_json::from_value(
        b.eval("[...document.querySelectorAll('#tl-svg .tl-lane title')].map(t => t.textContent)"),
    )
    .unwrap();
    for lane in want.lanes {
        assert!(
            names.iter().any(|n| n.starts_with(&format!("{lane} (#"))),
            "lane {lane} in {names:?}"
        );
    }
    let gc = b
        .eval("document.querySelectorAll('#tl-svg .tl-gc').length")
        .as_u64()
        .unwrap();
    assert!(
        gc as usize >= want.min_gc,
        "{gc} GC bars, want {}",
        want.min_gc
    );
    // A GC bar spans every lane.
    let spans_all = b.eval(
        "(() => { const g = document.querySelector('#tl-svg .tl-gc').getBBox(); \
         const lanes = [...document.querySelectorAll('#tl-svg .tl-lane-bg')].map(l => l.getBBox()); \
         return lanes.every(l => g.y <= l.y && g.y + g.height >= l.y + l.height); })()",
    );
    assert_eq!(spans_all, json!(true));
    let state = b.eval(&format!(
        "document.querySelectorAll('#tl-svg .{}').length",
        want.state
    ));
    assert!(state.as_u64().unwrap() > 0, "no {} spans", want.state);
    assert!(
        b.eval("document.querySelectorAll('#tl-svg .tl-marker').length")
            .as_u64()
            .unwrap()
            > 0
    );
    b.screenshot(shot);

    // Click details: a GC bar, then a marker.
    b.eval("document.querySelector('#tl-svg .tl-gc').dispatchEvent(new MouseEvent('click', {bubbles: true}))");
    assert!(b.text("#tl-details tbody").contains("GC pause"));
    b.eval("document.querySelector('#tl-svg .tl-marker').dispatchEvent(new MouseEvent('click', {bubbles: true}))");
    assert!(
        b.text("#tl-details tbody").starts_with("event"),
        "{}",
        b.text("#tl-details tbody")
    );

    // The wheel zooms in around the pointer; dragging pans.
    let range = "jscopeEvents.state.to - jscopeEvents.state.from";
    let before = b.eval(range).as_f64().unwrap();
    b.eval(
        "(() => { const g = document.querySelector('#tl-graph'); const r = g.getBoundingClientRect(); \
         g.dispatchEvent(new WheelEvent('wheel', {deltaY: -400, clientX: r.left + 500, clientY: r.top + 40, bubbles: true, cancelable: true})); })()",
    );
    b.wait_for(&format!("{range} < {}", before * 0.9), WAIT);
    let from = b.eval("jscopeEvents.state.from").as_f64().unwrap();
    b.eval(
        "(() => { const g = document.querySelector('#tl-graph'); const r = g.getBoundingClientRect(); \
         g.dispatchEvent(new MouseEvent('mousedown', {clientX: r.left + 600, clientY: r.top + 40, bubbles: true})); \
         window.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + 400, clientY: r.top + 40})); \
         window.dispatchEvent(new MouseEvent('mouseup', {clientX: r.left + 400, clientY: r.top + 40})); })()",
    );
    assert!(
        b.eval("jscopeEvents.state.from").as_f64().unwrap() > from,
        "dragging left moves later"
    );
    // Down to microseconds: the axis then counts in us.
    for _ in 0..30 {
        b.click("#tl-in");
    }
    let range_ns = b.eval(range).as_f64().unwrap();
    assert!(
        (1_000.0..=2_000.0).contains(&range_ns),
        "zoomed to {range_ns} ns"
    );
    let ticks: Vec<String> = serde_json::from_value(
        b.eval("[...document.querySelectorAll('#tl-svg .tl-tick-label')].map(t => t.textContent)"),
    )
    .unwrap();
    assert!(
        ticks.len() >= 2 && ticks.iter().all(|t| t.ends_with("us") || t.ends_with("ns")),
        "{ticks:?}"
    );
    b.click("#tl-fit");
    b.screenshot(&shot.replace(".png", "-fit.png"));
}

/// The lock view names `class` with its top site; the allocation view names `site`.
pub fn check_locks_and_alloc(
    b: &mut Browser,
    served: &Served,
    jvm: &str,
    class: &str,
    site: &str,
    shot: &str,
) {
    // A hash-only navigation does not reload the page: switch tabs by clicking.
    b.goto(&format!("{}/#tab=jvms&jvm={jvm}", served.url()));
    b.click("button[data-tab=locks]");
    let has = |sel: &str, text: &str| {
        format!(
            "document.querySelector({}).textContent.includes({})",
            json!(sel),
            json!(text)
        )
    };
    b.wait_for(&has("#locks tbody", class), WAIT);
    b.eval("document.querySelector('#locks tbody tr').click()");
    assert!(
        b.text("#lock-sites tbody").contains(" \u{2190} ")
            || !b.text("#lock-sites tbody").is_empty()
    );
    b.screenshot(&format!("locks-{shot}"));
    b.click("button[data-tab=alloc]");
    b.wait_for(&has("#alloc tbody", site), WAIT);
    b.screenshot(&format!("alloc-{shot}"));
}
