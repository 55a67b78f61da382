//! The collector's web UI in headless Chromium, served by `jscope serve`, over
//! simulated agents (real protocol and chunks) whose new snapshots the test controls:
//! JVM list, live threads refreshing and frozen by Pause, flame graph, call graph.
//! Skipped with a notice when Chromium is absent.

#[path = "../../collector/tests/common/mod.rs"]
mod common;
mod serving;
mod support;

use std::time::Duration;

use common::SimJvm;
use jscope_testkit::{temp_dir, wait_until};
use serving::cdp::Browser;
use serving::ui::{self, Shown};
use support::jscope_bin;

#[test]
fn ui_over_simulated_agents_in_chromium() {
    let Some(mut browser) = Browser::launch("sim") else {
        return;
    };
    let served = serving::serve(&jscope_bin(), &temp_dir("cli-collector-browser"), &[]);
    let agents = served.agents.unwrap();
    let mut shop = SimJvm::new(6101, "com.acme.Shop --port 8080");
    let mut billing = SimJvm::new(6102, "com.acme.Billing");
    let mut shop_client = shop.connect(agents, 1);
    let mut billing_client = billing.connect(agents, 1);
    let mut seq = 0;
    for _ in 0..3 {
        seq += 1;
        shop_client.send(seq, &shop.chunk()).unwrap();
        billing_client.send(seq, &billing.chunk()).unwrap();
    }
    shop_client
        .wait_for_ack(seq, Duration::from_secs(10))
        .unwrap();
    billing_client
        .wait_for_ack(seq, Duration::from_secs(10))
        .unwrap();

    let shown = [
        Shown {
            id: &shop.stream,
            pid: 6101,
            command: "com.acme.Shop --port 8080",
            method: "com.acme.App6101.work",
        },
        Shown {
            id: &billing.stream,
            pid: 6102,
            command: "com.acme.Billing",
            method: "com.acme.App6102.work",
        },
    ];
    ui::check_jvm_list(&mut browser, &served, &shown, "cli-sim-jvms.png");

    // New snapshots of the shop arrive when the check asks for them.
    let shop_id = shop.stream.clone();
    let mut more = || {
        seq += 1;
        shop_client.send(seq, &shop.chunk()).unwrap();
        shop_client
            .wait_for_ack(seq, Duration::from_secs(10))
            .unwrap();
        let want = seq;
        assert!(wait_until(Duration::from_secs(10), || {
            served
                .json("/api/jvms")
                .as_array()
                .unwrap()
                .iter()
                .any(|j| j["id"] == shop_id.as_str() && j["last_seq"] == want)
        }));
    };
    let shown_shop = Shown {
        id: &shop_id,
        pid: 6101,
        command: "com.acme.Shop",
        method: "com.acme.App6101.work",
    };
    ui::check_threads_pause(
        &mut browser,
        &served,
        &shown_shop,
        "worker-2",
        "com.acme.App6101.main",
        &mut more,
        "cli-sim-threads-paused.png",
    );
    ui::check_flame(&mut browser, &served, &shown_shop, "cli-sim-flame.png");
    ui::check_call_graph(&mut browser, &served, &shown_shop, "cli-sim-callgraph.png");
    assert!(served.interrupt());
}
