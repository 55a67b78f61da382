//! The agent's own share of a traced call, without a JVM: the bodies of the
//! `Trace.enter`/`Trace.exit` natives (thread-local lookup, shadow stack, TSC
//! stamp, ring store) called in a tight loop. For instruction counts run it under
//! `valgrind --tool=callgrind`; see benches/probes_micro.sh.
//! Usage: cargo run --release -p jscope-agent --example probe_bench -- [CALLS] [ROUNDS]
fn main() {
    let mut args = std::env::args().skip(1);
    let calls = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let rounds = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let ns = jscope_agent::bench_native_calls(calls, rounds);
    println!("ns/call {ns:.2} (entry + exit, best of {rounds} rounds of {calls} calls)");
}
