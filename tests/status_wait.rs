//! `redctx status --wait` in a script returns the moment the daemon's pass ends (issue
//! 33: it used to poll once a second and return up to a second late).
//!
//! The pass is held with the daemon's test-only `REDCTX_TEST_PAUSE_INDEX_AFTER` while the
//! client waits, then let go with SIGUSR1, so the wait is real however fast the machine.
//! The daemon logs `indexing pass finished` just before it marks the root ready: that
//! line's timestamp, against the moment the client exited, bounds the latency from above.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::{Env, poll};

const FILES: usize = 200;
const HOLD_AFTER: u64 = 20;
/// Far under the old one-second poll, with room for a loaded CI machine.
const BOUND: Duration = Duration::from_millis(300);

/// Seconds since the Unix epoch of a `redctxd.log` line's timestamp (tracing's
/// `2025-01-31T12:34:56.123456Z`, UTC), read without a date library.
fn log_time(line: &str) -> Option<f64> {
    let stamp = line.split_whitespace().next()?.strip_suffix('Z')?;
    let (date, time) = stamp.split_once('T')?;
    let mut d = date.split('-').map(str::parse::<i64>);
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let mut t = time.split(':');
    let (h, min) = (
        t.next()?.parse::<i64>().ok()?,
        t.next()?.parse::<i64>().ok()?,
    );
    let sec: f64 = t.next()?.parse().ok()?;
    // Days from 1970-01-01 (proleptic Gregorian; Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3_600 + min * 60) as f64 + sec)
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Files indexed so far, while `status` says the root is indexing.
fn indexing(env: &Env, root: &Path) -> Option<u64> {
    let (code, out, _) = env.run(&["status", "--root", root.to_str().unwrap()]);
    if code != 0 || !out.contains("\n  state: indexing\n") {
        return None;
    }
    out.lines()
        .find_map(|l| l.trim().strip_prefix("files: "))?
        .split(", ")
        .nth(1)?
        .strip_suffix(" indexed")?
        .parse()
        .ok()
}

#[test]
fn log_times_read_as_unix_seconds() {
    let t = log_time("2025-01-31T12:34:56.250000Z  INFO redctx_daemon::root: x").unwrap();
    assert_eq!(t, 1_738_326_896.25);
    assert_eq!(log_time("1970-01-01T00:00:00.000000Z"), Some(0.0));
    assert_eq!(log_time("2024-02-29T00:00:00Z"), Some(1_709_164_800.0));
}

#[test]
fn status_wait_in_a_script_returns_the_moment_the_root_is_ready() {
    let env = Env::new();
    let root = env.root_dir("wait", "svc");
    for i in 0..FILES {
        let dir = root.join(format!("src/d{}", i % 5));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("m{i:03}.py")),
            format!("owner = \"dev{i}@example.com\"\nvalue_{i} = {i}\n"),
        )
        .unwrap();
    }
    let mut start = env.redctx(&["daemon", "start"]);
    start.env("REDCTX_TEST_PAUSE_INDEX_AFTER", HOLD_AFTER.to_string());
    assert!(start.status().unwrap().success());

    // The script: registers the root and waits; stdout is a pipe, so plain lines.
    let mut waiter = env
        .redctx(&["status", "--root", root.to_str().unwrap(), "--wait"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(waiter.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.starts_with("indexing: "), "{first:?}");
    poll("the pass to hold", Duration::from_secs(60), || {
        indexing(&env, &root).filter(|n| *n >= HOLD_AFTER)
    });
    // Held: the client keeps waiting (its periodic answers carry the progress).
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(waiter.try_wait().unwrap(), None, "returned while held");

    let released = unix_now();
    let pid = env.daemon_pid().expect("daemon running");
    // SAFETY: kill(2) of the daemon this test started (its own state dir).
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGUSR1) }, 0);
    let status = waiter.wait().unwrap();
    let exited = unix_now();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(status.success(), "{first}{rest}");
    assert_eq!(rest.lines().last(), Some("ready: 200 files"), "{rest}");

    let log = std::fs::read_to_string(env.state().join("logs/redctxd.log")).unwrap();
    let finished: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("indexing pass finished"))
        .collect();
    assert_eq!(finished.len(), 1, "{log}");
    let ready = log_time(finished[0]).expect("a timestamped log line");
    let latency = exited - ready;
    println!(
        "status --wait: pass ended {:.1} ms after the release; client exited {:.1} ms after \
         the pass ended (bound {} ms)",
        (ready - released) * 1e3,
        latency * 1e3,
        BOUND.as_millis()
    );
    assert!(
        ready >= released - 0.001,
        "the pass ended before it was let go: {}",
        finished[0]
    );
    assert!(
        latency >= 0.0 && latency < BOUND.as_secs_f64(),
        "client exited {:.1} ms after the pass ended ({})",
        latency * 1e3,
        finished[0]
    );

    // Once its watches are in place, the watcher's figures are the daemon's own: one
    // watch per directory of the root (it, src and src's five subdirectories).
    // The text after `label` on `status`'s line for it, once `ready` holds for it.
    let status_line = |label: &str, timeout: u64, ready: &dyn Fn(&str) -> bool| {
        poll(label, Duration::from_secs(timeout), || {
            let (code, out, _) = env.run(&["status", "--root", root.to_str().unwrap()]);
            let line = out.lines().find_map(|l| l.trim().strip_prefix(label))?;
            (code == 0 && ready(line)).then(|| line.to_owned())
        })
    };
    let watcher = status_line("watcher: ", 30, &|line| line.starts_with("7/"));
    let (limit, rescans) = watcher["7/".len()..]
        .split_once(" watches, ")
        .expect("7/<limit> watches, <n> rescans");
    assert!(limit.parse::<u64>().is_ok_and(|l| l >= 7), "{watcher}");
    assert!(rescans.ends_with(" rescans"), "{watcher}");

    // The search index holds every file, and retrieve's passage index follows it in the
    // background.
    let search = status_line("search index: ", 60, &|line| {
        line.ends_with(" files; retrieve ranks from it")
    });
    // Files whose records were written within the racy window of their change are left
    // out of the first index (trusted only once read again): at most every file.
    let held: usize = search
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .expect("a file count");
    assert!(held <= FILES, "{search}");
}
