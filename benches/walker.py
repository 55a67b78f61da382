#!/usr/bin/env python3
"""The stack walker, side by side with async-profiler and JDK Flight Recorder.

  python3 benches/walker.py [--rounds N] [--java JAVA] [--async-profiler LIB] [--only A,B]
      [--programs javac,xalan,h2] [--cstacks vm,vmx,asgct] [--no-jfr]

Sections (all by default; --only picks some):
  unknown   the walker fixture's hot loops (crates/agent/tests/walker_fixtures) at
            1 ms with -XX:+DebugNonSafepoints: per loop, the share of samples with an
            unknown or broken stack and the share naming the loop's chain, for
            cstack=vm, cstack=asgct and async-profiler;
  walk      one walk of the thread's own 50-frame stack, timed over 100,000 walks
            (an agent built with the test-only fault-injection feature);
  overhead  real programs (javac compiling this repository's Java sources six
            times in one JVM, Debian's xalan XSLT processor, an in-memory H2
            database) at 100 Hz: CPU time (user + sys) of the JVM with each profiler
            over the same run without one, in interleaved rounds, the median and the
            range of the per-round ratios; with jscope also the samples that name no
            code and the coverage (cpu samples x interval over the process's CPU time).

async-profiler is built from its own sources outside this repository; pass its
libasyncProfiler.so with --async-profiler (or ASYNC_PROFILER=...). Debian packages
libxalan2-java and libh2-java provide the XSLT and database programs.
"""
import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "target", "bench-walker")
FIXTURES = os.path.join(ROOT, "crates", "agent", "tests", "walker_fixtures")
LOOPS = ["arraycopy", "strings", "crc", "math", "fmod", "itable", "vtable", "millis",
         "nanos", "deep", "jni", "clinit", "exceptions"]


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def build():
    sh(["cargo", "build", "--release", "-q", "-p", "jscope-cli", "-p", "jscope-agent"], cwd=ROOT)
    sh(["cargo", "build", "--release", "-q", "-p", "jscope-agent", "--features", "fault-injection",
        "--target-dir", os.path.join(ROOT, "target", "walkbench")], cwd=ROOT)
    os.makedirs(OUT, exist_ok=True)
    classes = os.path.join(OUT, "classes")
    shutil.rmtree(classes, ignore_errors=True)
    sources = [os.path.join(FIXTURES, f) for f in ("Hot.java", "HotInit.java", "WalkFuzz.java")]
    sources.append(os.path.join(ROOT, "benches", "realworld", "H2Load.java"))
    sources.append(os.path.join(ROOT, "benches", "realworld", "JavacLoop.java"))
    sh(["javac", "--release", "11", "-d", classes, "-cp", "/usr/share/java/h2.jar"] + sources)
    javac = os.path.realpath(shutil.which("javac"))
    include = os.path.join(os.path.dirname(os.path.dirname(javac)), "include")
    sh(["cc", "-O2", "-shared", "-fPIC", f"-I{include}", f"-I{include}/linux", "-o",
        os.path.join(OUT, "libhot.so"), os.path.join(FIXTURES, "hot.c")])
    sh([sys.executable, os.path.join(ROOT, "benches", "realworld", "gen.py"), os.path.join(OUT, "data")])
    return classes


JSCOPE = os.path.join(ROOT, "target", "release", "jscope")
AGENT = os.path.join(ROOT, "target", "release", "libjscope_agent.so")


def run_java(java, flags, args, cwd=OUT):
    """Runs a JVM; its CPU time (user + sys, s) and wall time (s)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run([java] + flags + args, cwd=cwd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(flags)} {' '.join(args)} failed:\n{p.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def jscope_stacks(path):
    """(thread, frames root first, count) of a jscope recording's cpu samples."""
    out = subprocess.run([JSCOPE, "collapsed", path, "--threads", "--mode", "cpu"],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        stack, n = line.rsplit(" ", 1)
        frames = stack.split(";")
        yield frames[0].strip("[]"), frames[1:], int(n)


def ap_stacks(path):
    """The same of async-profiler's collapsed output with threads."""
    for line in open(path):
        stack, n = line.rstrip("\n").rsplit(" ", 1)
        frames = stack.split(";")
        thread = re.sub(r" tid=\d+$", "", frames[0].strip("[]"))
        yield thread, frames[1:], int(n)


MARKER = re.compile(r"^\[(unknown|break|no_|not_|bad|deopt|skipped|error|thread_exit|gc_active|safepoint|unknown_).*\]")


def unknown(frames):
    return not frames or any(MARKER.match(f) for f in frames)


def loop_table(stacks):
    per = defaultdict(Counter)
    total = Counter()
    for thread, frames, n in stacks:
        total["all"] += n
        if unknown(frames):
            total["unknown"] += n
        if not thread.startswith("loop-"):
            continue
        name = thread[5:]
        method = "Hot.loop" + name[0].upper() + name[1:]
        per[name]["samples"] += n
        if any(f.split("_[")[0] == method for f in frames):
            per[name]["chain"] += n
        if unknown(frames):
            per[name]["unknown"] += n
    return per, total


def section_unknown(java, classes, ap):
    flags = ["-XX:+UnlockDiagnosticVMOptions", "-XX:+DebugNonSafepoints",
             f"-Dhot.jni={os.path.join(OUT, 'libhot.so')}", "-cp", classes]
    args = ["Hot", "1000", "all"]
    results = {}
    for cstack in ("vm", "asgct"):
        rec = os.path.join(OUT, f"hot-{cstack}.jsc")
        run_java(java, flags + [f"-agentpath:{AGENT}=mode=cpu,interval=1ms,depth=2048,cstack={cstack},quiet,file={rec}"], args)
        results[f"jscope cstack={cstack}"] = loop_table(jscope_stacks(rec))
    if ap:
        out = os.path.join(OUT, "hot-ap.collapsed")
        run_java(java, flags + [f"-agentpath:{ap}=start,event=cpu,interval=1ms,jstackdepth=2048,threads,collapsed,file={out}"], args)
        results["async-profiler"] = loop_table(ap_stacks(out))
    print(f"\n### Unknown or broken stacks on the walker fixture (1 ms, DebugNonSafepoints), {java_version(java)}\n")
    names = list(results)
    print("| loop | " + " | ".join(f"{n}: unknown / chain" for n in names) + " |")
    print("|---|" + "---|" * len(names))
    for loop in LOOPS:
        cells = []
        for n in names:
            c = results[n][0][loop]
            s = max(c["samples"], 1)
            cells.append(f"{100 * c['unknown'] / s:.1f}% / {100 * c['chain'] / s:.1f}% of {c['samples']}")
        print(f"| {loop} | " + " | ".join(cells) + " |")
    cells = []
    for n in names:
        t = results[n][1]
        cells.append(f"{100 * t['unknown'] / max(t['all'], 1):.2f}% of {t['all']}")
    print("| all threads | " + " | ".join(cells) + " |")


def section_walk(java, classes):
    agent = os.path.join(ROOT, "target", "walkbench", "release", "libjscope_agent.so")
    times = []
    line = ""
    for _ in range(5):
        p = subprocess.run([java, f"-agentpath:{agent}=mode=cpu,interval=100ms,quiet,file={OUT}/walk.jsc",
                            "-cp", classes, "WalkFuzz", agent, "time", "100000", "48"],
                           capture_output=True, text=True, check=True)
        line = next(l for l in p.stderr.splitlines() if l.startswith("walkbench:"))
        times.append(int(line.split()[1]))
    print(f"\n### One walk of a 50-frame stack, {java_version(java)}\n")
    print(f"median {statistics.median(times)} ns per walk (range {min(times)}-{max(times)} over 5 JVMs of "
          f"100,000 walks each); last: {line}")


def workloads(classes):
    data = os.path.join(OUT, "data")
    sources = os.path.join(OUT, "sources.txt")
    with open(sources, "w") as f:
        for d in ("examples/src", "examples/beacon/src", "benches/java", "crates/agent/tests/http_fixtures",
                  "crates/cli/tests/events_fixtures", "crates/cli/tests/trace_fixtures"):
            for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
                for fn in files:
                    if fn.endswith(".java"):
                        f.write(os.path.join(dirpath, fn) + "\n")
    javac_out = os.path.join(OUT, "javac-out")
    return {
        "javac": ["-cp", classes, "JavacLoop", "6", sources, javac_out],
        "xalan": ["-cp", "/usr/share/java/xalan2.jar:/usr/share/java/serializer.jar", "org.apache.xalan.xslt.Process",
                  "-IN", f"{data}/catalog.xml", "-XSL", f"{data}/catalog.xsl", "-OUT", f"{OUT}/catalog.html"],
        "h2": ["-cp", f"{classes}:/usr/share/java/h2.jar", "H2Load", "150000", "30"],
    }


def section_overhead(java, classes, ap, rounds, programs, cstacks=("vm", "vmx", "asgct"), jfr=True):
    progs = {p: args for p, args in workloads(classes).items() if p in programs}
    configs = {"none": lambda p: []}
    for cstack in cstacks:
        configs[f"jscope {cstack}"] = (lambda c: lambda p: [
            f"-agentpath:{AGENT}=mode=cpu,interval=10ms,cstack={c},quiet,file={OUT}/{p}-{c}.jsc"])(cstack)
    if ap:
        configs["async-profiler"] = lambda p: [
            f"-agentpath:{ap}=start,event=cpu,interval=10ms,threads,collapsed,file={OUT}/{p}-ap.collapsed"]
    if jfr:
        configs["JFR"] = lambda p: [f"-XX:StartFlightRecording=settings={ROOT}/benches/jfr/jfr-cpu.jfc,filename={OUT}/{p}.jfr"]
    print(f"\n### Overhead on real programs at 100 Hz, {java_version(java)}, {rounds} interleaved rounds\n")
    print("| program | profiler | CPU time ratio, median (range) | samples naming no code | coverage |")
    print("|---|---|---|---|---|")
    for prog, args in progs.items():
        cpu = defaultdict(list)
        for _ in range(rounds):
            for name, flags in configs.items():
                shutil.rmtree(os.path.join(OUT, "javac-out"), ignore_errors=True)
                os.makedirs(os.path.join(OUT, "javac-out"), exist_ok=True)
                c, _ = run_java(java, flags(prog), args)
                cpu[name].append(c)
                if name.startswith("jscope"):
                    cpu[name + ":rec"].append(jscope_quality(os.path.join(OUT, f"{prog}-{name.split()[1]}.jsc"), c))
                if name == "async-profiler":
                    cpu[name + ":rec"].append(stacks_quality(ap_stacks(os.path.join(OUT, f"{prog}-ap.collapsed")), c))
        for name in configs:
            if name == "none":
                continue
            ratios = [a / b for a, b in zip(cpu[name], cpu["none"])]
            cell = f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})"
            quality = ""
            if name.startswith("jscope") or name == "async-profiler":
                q = cpu[name + ":rec"]
                bad = statistics.median(x[0] for x in q)
                cov = statistics.median(x[1] for x in q)
                quality = f"{100 * bad:.2f}% | {cov:.2f}"
            else:
                quality = " | "
            print(f"| {prog} | {name} | {cell} | {quality} |")
        paired(prog, cpu)
        sys.stdout.flush()


def paired(prog, cpu):
    """jscope against async-profiler round by round (their runs are interleaved):
    the median (range) of jscope's CPU time over async-profiler's, and in how
    many rounds jscope's was the lower."""
    if "async-profiler" not in cpu:
        return
    for name in [n for n in cpu if n.startswith("jscope") and not n.endswith(":rec")]:
        r = [a / b for a, b in zip(cpu[name], cpu["async-profiler"])]
        lower = sum(1 for x in r if x < 1)
        print(f"| {prog} | {name} / async-profiler, per round | {statistics.median(r):.3f} "
              f"({min(r):.3f}-{max(r):.3f}) | lower in {lower} of {len(r)} rounds | |")


def jscope_quality(path, cpu_s):
    """(share of samples naming no code, cpu samples x interval / process CPU time)."""
    return stacks_quality(jscope_stacks(path), cpu_s)


def stacks_quality(stacks, cpu_s):
    total = bad = 0
    for _, frames, n in stacks:
        total += n
        if unknown(frames):
            bad += n
    return (bad / max(total, 1), total * 0.010 / max(cpu_s, 1e-9))


def java_version(java):
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    return out.splitlines()[0] if out else java


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--java", default="java")
    ap.add_argument("--async-profiler", default=os.environ.get("ASYNC_PROFILER"))
    ap.add_argument("--only", default="unknown,walk,overhead")
    ap.add_argument("--programs", default="javac,xalan,h2", help="of the overhead section")
    ap.add_argument("--cstacks", default="vm,vmx,asgct", help="jscope's walkers in the overhead section")
    ap.add_argument("--no-jfr", action="store_true", help="leave JFR out of the overhead section")
    a = ap.parse_args()
    classes = build()
    only = a.only.split(",")
    if "unknown" in only:
        section_unknown(a.java, classes, a.async_profiler)
    if "walk" in only:
        section_walk(a.java, classes)
    if "overhead" in only:
        section_overhead(a.java, classes, a.async_profiler, a.rounds, a.programs.split(","),
                         a.cstacks.split(","), not a.no_jfr)


if __name__ == "__main__":
    main()
