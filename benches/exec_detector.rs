//! A deliberately slow external detector (the test detector, 10 ms per text) in front of
//! a real release `redctxd`: the first index pass's progress as `redctx status` prints
//! it, the pass's time beside its floor (files × delay), then warm `redctx_read` latency
//! of already-scanned files over the socket beside the same root without the detector.
//!
//! Run: `cargo bench --bench exec_detector`. Knobs: `REDCTX_BENCH_FILES` (default 300),
//! `REDCTX_BENCH_DELAY_MS` (default 10), `REDCTX_BENCH_READS` (default 500).
//! Target (issue 35): a warm read of a scanned file answers in under 1 ms.

use redctx_proto::{Request, Response, RootInfo, RootSpec};
use std::path::Path;

use std::time::{Duration, Instant};

mod bench_daemon;
use bench_daemon::{Daemon, build_redctxd, env_usize, repo, start};

/// A tree of `files` small source and prose files, some with the detector's finds.
fn make_tree(root: &Path, files: usize) {
    for i in 0..files {
        let dir = root.join(format!("pkg{:02}", i % 20));
        std::fs::create_dir_all(&dir).unwrap();
        let body = if i % 3 == 0 {
            format!(
                "# Notes {i}\n\nZorblax Quux{i} reviewed EMP-{:04} today.\n",
                i % 10_000
            )
        } else {
            format!("def f{i}(x):\n    return x + {i}  # plain code\n")
        };
        let ext = if i % 3 == 0 { "md" } else { "py" };
        std::fs::write(dir.join(format!("f{i}.{ext}")), body).unwrap();
    }
}

impl Daemon {
    fn call(&self, spec: &RootSpec, tool: &str, args: serde_json::Value) -> (String, bool) {
        let request = Request::CallTool {
            root: spec.clone(),
            tool: tool.to_owned(),
            arguments_json: args.to_string(),
            caller: redctx_proto::Caller::Agent,
        };
        match self.rt.block_on(self.conn.request(request)) {
            Ok(Response::ToolResult(r)) => (r.text, r.is_error),
            other => panic!("{tool}: unexpected answer {other:?}"),
        }
    }

    fn info(&self, spec: &RootSpec) -> RootInfo {
        match self.rt.block_on(self.conn.request(Request::Roots)) {
            Ok(Response::Roots(roots)) => roots
                .into_iter()
                .find(|r| {
                    let exec = r.options.as_deref().unwrap_or("").contains("detector exec");
                    r.path == spec.path && exec != spec.detectors.is_empty()
                })
                .expect("root registered"),
            other => panic!("roots: unexpected answer {other:?}"),
        }
    }

    fn stop(mut self) {
        let _ = self.rt.block_on(self.conn.request(Request::Shutdown));
        let _ = self.child.wait();
    }
}

/// Polls until the root is ready; prints `redctx status`'s block at a few points.
fn first_pass(d: &Daemon, spec: &RootSpec) -> f64 {
    let started = Instant::now();
    let (text, err) = d.call(spec, "redctx_stat", serde_json::json!({"path": "."}));
    assert!(!err, "stat: {text}");
    let mut shown = 0;
    loop {
        let info = d.info(spec);
        let elapsed = started.elapsed().as_secs_f64();
        if info.state == "ready" {
            println!("at {elapsed:.2} s, `redctx status` prints:");
            print!("{}", redctx_client::cli::status::describe(&info));
            return elapsed;
        }
        assert_ne!(info.state, "blocked", "blocked: {:?}", info.policy);
        if elapsed >= shown as f64 && shown < 3 {
            println!("at {elapsed:.2} s, `redctx status` prints:");
            print!("{}", redctx_client::cli::status::describe(&info));
            shown += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn percentiles(mut us: Vec<f64>) -> (f64, f64, f64) {
    us.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |p: f64| us[((us.len() - 1) as f64 * p).round() as usize];
    (at(0.5), at(0.99), at(1.0))
}

fn reads(d: &Daemon, spec: &RootSpec, paths: &[String], n: usize) -> Vec<f64> {
    // One untimed read of each, then the timed ones.
    for p in paths {
        let (t, err) = d.call(spec, "redctx_read", serde_json::json!({"path": p}));
        assert!(!err, "{p}: {t}");
    }
    (0..n)
        .map(|i| {
            let p = &paths[i % paths.len()];
            let t = Instant::now();
            let (text, err) = d.call(spec, "redctx_read", serde_json::json!({"path": p}));
            let us = t.elapsed().as_secs_f64() * 1e6;
            let leaked = !spec.detectors.is_empty() && text.contains("Zorblax");
            assert!(!err && !leaked, "{p}: {text}");
            us
        })
        .collect()
}

fn main() {
    let files = env_usize("REDCTX_BENCH_FILES", 300);
    let delay = env_usize("REDCTX_BENCH_DELAY_MS", 10);
    let n = env_usize("REDCTX_BENCH_READS", 500);
    let redctxd = build_redctxd();
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("tree");
    std::fs::create_dir_all(&root).unwrap();
    make_tree(&root, files);
    let root = root.canonicalize().unwrap();
    let state = work.path().join("state");
    std::fs::create_dir_all(state.join("vault")).unwrap();
    let program = work.path().join("slow-detector");
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\nexec python3 {} --name slow-ner --version 1 --delay-ms {delay}\n",
            repo().join("tests/detectors/test_detector.py").display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let with = RootSpec {
        path: root.clone(),
        gitignore: true,
        detectors: vec![format!("exec={}", program.display())],
        ..RootSpec::default()
    };
    let without = RootSpec {
        detectors: Vec::new(),
        ..with.clone()
    };
    println!(
        "exec_detector: {files} files, detector {delay} ms per text, {n} timed reads; load {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );

    let d = start(&redctxd, &state);
    let pass = first_pass(&d, &with);
    let floor = files as f64 * delay as f64 / 1000.0;
    println!(
        "first pass with the detector: {pass:.2} s; floor (files x delay, one process) {floor:.2} s; ratio {:.2}",
        pass / floor
    );
    let paths: Vec<String> = (0..files)
        .step_by(3)
        .take(50)
        .map(|i| format!("pkg{:02}/f{i}.md", i % 20))
        .collect();
    let (p50, p99, max) = percentiles(reads(&d, &with, &paths, n));
    let _ = first_pass(&d, &without);
    let (a50, a99, amax) = percentiles(reads(&d, &without, &paths, n));
    println!("warm redctx_read of a scanned file (socket round trip, µs):");
    println!("  with the slow detector: p50 {p50:.0}  p99 {p99:.0}  max {max:.0}");
    println!("  same root, no detector: p50 {a50:.0}  p99 {a99:.0}  max {amax:.0}");
    println!(
        "  ratio p50 {:.2}; target p50 < 1000 µs: {}",
        p50 / a50,
        if p50 < 1000.0 { "met" } else { "MISSED" }
    );
    d.stop();
}
