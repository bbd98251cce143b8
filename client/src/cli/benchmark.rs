//! `redctx benchmark`: the daemon's own timing of cold full-tree work on a root, printed
//! in the reference CLI's report format (spec 15).
//!
//! The CLI only asks (`Request::Benchmark`) and formats: the daemon walks the tree into
//! a fresh index, reads, redacts and searches every text file under the budget, and
//! times each phase itself (see `redctx_daemon::bench_report`). Counts use the reference's
//! definitions; timings are the daemon's, so they differ from the reference's by design.
//!
//! Exit codes: 0 with the report on stdout, 1 when a budget or the policy stops the run
//! (the reference's message on stderr), 2 on usage errors (clap).

use super::files::{self, ByteBudget, Globals, WalkBudget};
use crate::daemon;
use clap::Args;
use redctx_proto::{BenchmarkParams, BenchmarkReport, Request, Response, RootLimits};
use std::process::ExitCode;

/// The reference's default query, chosen to match nothing.
pub const DEFAULT_QUERY: &str = "__redctx_no_match_benchmark__";

/// `benchmark` options (the reference's, with its defaults).
#[derive(Args, Debug)]
pub struct BenchmarkArgs {
    /// Text to look for in every redacted file (`matches` counts the files containing
    /// it).
    #[arg(long, value_name = "QUERY", default_value = DEFAULT_QUERY)]
    pub query: String,
    /// Compare case-folded text (the default).
    #[arg(long, overrides_with = "no_ignore_case")]
    pub ignore_case: bool,
    /// Compare text exactly.
    #[arg(long, overrides_with = "ignore_case")]
    pub no_ignore_case: bool,
    /// Report format.
    #[arg(long, value_parser = ["text", "json"], default_value = "text")]
    pub format: String,
    /// Most text files to read (default: unlimited).
    #[arg(long, value_name = "N")]
    pub max_files: Option<u64>,
    #[command(flatten)]
    pub bytes: ByteBudget,
    #[command(flatten)]
    pub walk: WalkBudget,
}

impl BenchmarkArgs {
    /// What the daemon is asked to measure.
    pub fn params(&self) -> BenchmarkParams {
        BenchmarkParams {
            query: self.query.clone(),
            ignore_case: !self.no_ignore_case,
            max_files: self.max_files,
            max_raw_bytes_per_file: self.bytes.max_raw_bytes_per_file,
            max_total_raw_bytes: self.bytes.max_total_raw_bytes,
            max_entries: self.walk.max_entries,
        }
    }
}

/// Seconds rounded to microseconds, as the reference's `round(seconds, 6)`.
fn micros(ns: u64) -> u64 {
    ns.saturating_add(500) / 1_000
}

/// `{seconds:.6f}` of the rounded value.
fn fixed6(ns: u64) -> String {
    let us = micros(ns);
    format!("{}.{:06}", us / 1_000_000, us % 1_000_000)
}

/// Python's `repr` of the rounded float, as `json.dumps` writes it: shortest digits,
/// scientific notation below 1e-4 (`1e-06`, `5.2e-05`), a `.0` on whole numbers.
fn py_float(ns: u64) -> String {
    let us = micros(ns);
    if us == 0 {
        return "0.0".to_string();
    }
    let seconds = us as f64 / 1e6;
    if us < 100 {
        let sci = format!("{seconds:e}");
        let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let plain = format!("{seconds}");
    if plain.contains('.') {
        plain
    } else {
        format!("{plain}.0")
    }
}

/// The counts of a report, in the reference's key order.
fn counts(r: &BenchmarkReport) -> [(&'static str, u64); 7] {
    [
        ("directories", r.directories),
        ("files", r.files),
        ("text_files", r.text_files),
        ("visible_bytes", r.visible_bytes),
        ("text_characters", r.text_characters),
        ("redaction_read_bytes", r.redaction_read_bytes),
        ("matches", r.matches),
    ]
}

/// The timings of a report, in the reference's key order.
fn timings(r: &BenchmarkReport) -> [(&'static str, u64); 4] {
    [
        ("walk_and_text_detection", r.walk_and_text_detection_ns),
        ("read_all_text_files", r.read_all_text_files_ns),
        (
            "redact_each_file_as_one_chunk",
            r.redact_each_file_as_one_chunk_ns,
        ),
        ("search_redacted_text", r.search_redacted_text_ns),
    ]
}

/// The reference's text report: `key: value` lines, timings as `name: 0.000123s`.
pub fn render_text(r: &BenchmarkReport) -> String {
    let mut out = String::from("root: .\n");
    for (k, v) in counts(r) {
        out.push_str(&format!("{k}: {v}\n"));
    }
    for (k, ns) in timings(r) {
        out.push_str(&format!("{k}: {}s\n", fixed6(ns)));
    }
    out
}

/// The reference's JSON report (`json.dumps(indent=2)`), timings under
/// `timings_seconds`.
pub fn render_json(r: &BenchmarkReport) -> String {
    let mut out = String::from("{\n  \"root\": \".\",\n");
    for (k, v) in counts(r) {
        out.push_str(&format!("  \"{k}\": {v},\n"));
    }
    out.push_str("  \"timings_seconds\": {\n");
    let t = timings(r);
    for (i, (k, ns)) in t.iter().enumerate() {
        let comma = if i + 1 < t.len() { "," } else { "" };
        out.push_str(&format!("    \"{k}\": {}{comma}\n", py_float(*ns)));
    }
    out.push_str("  }\n}\n");
    out
}

/// Run `redctx benchmark` against the daemon and print its figures.
pub fn run(globals: &Globals, args: &BenchmarkArgs) -> ExitCode {
    // The budget travels with the request, so the root spec stays the one the other
    // commands use (a served root is measured under its live policy, not registered anew).
    let (root, ep, rt) = match files::prepare(globals, RootLimits::default()) {
        Ok(parts) => parts,
        Err(code) => return code,
    };
    let deadline = args.walk.max_seconds.map(files::seconds);
    let request = Request::Benchmark {
        root,
        params: args.params(),
    };
    rt.block_on(async move {
        let (conn, _) = match daemon::connect_or_start(&ep, daemon::START_TIMEOUT).await {
            Ok(c) => c,
            Err(e) => return super::fail(e),
        };
        let answer = match deadline {
            // Dropping the request on timeout cancels the run in the daemon.
            Some(d) => match tokio::time::timeout(d, conn.request(request)).await {
                Ok(a) => a,
                Err(_) => return files::print_error("Operation deadline exceeded."),
            },
            None => conn.request(request).await,
        };
        match answer {
            Ok(Response::Benchmark(report)) => {
                let text = if args.format == "json" {
                    render_json(&report)
                } else {
                    render_text(&report)
                };
                print!("{text}");
                ExitCode::SUCCESS
            }
            Ok(Response::Error(e)) => files::print_error(&e.message),
            Ok(_) => super::fail("unexpected answer from the daemon; see its log"),
            Err(e) => super::fail(e),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> BenchmarkReport {
        BenchmarkReport {
            directories: 2,
            files: 3,
            text_files: 2,
            visible_bytes: 38,
            text_characters: 33,
            redaction_read_bytes: 33,
            matches: 1,
            walk_and_text_detection_ns: 1_822_400,
            read_all_text_files_ns: 7_648_000,
            redact_each_file_as_one_chunk_ns: 2_000_000_000,
            search_redacted_text_ns: 1_200,
        }
    }

    #[test]
    fn text_report_has_the_reference_lines() {
        assert_eq!(
            render_text(&report()),
            "root: .\ndirectories: 2\nfiles: 3\ntext_files: 2\nvisible_bytes: 38\n\
             text_characters: 33\nredaction_read_bytes: 33\nmatches: 1\n\
             walk_and_text_detection: 0.001822s\nread_all_text_files: 0.007648s\n\
             redact_each_file_as_one_chunk: 2.000000s\nsearch_redacted_text: 0.000001s\n"
        );
    }

    #[test]
    fn json_report_writes_floats_as_python_does() {
        // The layout and float spelling of the reference's `json.dumps(indent=2)`.
        assert_eq!(
            render_json(&report()),
            "{\n  \"root\": \".\",\n  \"directories\": 2,\n  \"files\": 3,\n  \"text_files\": 2,\n  \
             \"visible_bytes\": 38,\n  \"text_characters\": 33,\n  \"redaction_read_bytes\": 33,\n  \
             \"matches\": 1,\n  \"timings_seconds\": {\n    \"walk_and_text_detection\": 0.001822,\n    \
             \"read_all_text_files\": 0.007648,\n    \"redact_each_file_as_one_chunk\": 2.0,\n    \
             \"search_redacted_text\": 1e-06\n  }\n}\n"
        );
        for (ns, repr) in [
            (0, "0.0"),
            (400, "0.0"),
            (52_000, "5.2e-05"),
            (10_000, "1e-05"),
            (99_000, "9.9e-05"),
            (100_000, "0.0001"),
            (123_456_789, "0.123457"),
            (12_345_678_901, "12.345679"),
        ] {
            assert_eq!(py_float(ns), repr, "{ns}");
        }
    }
}
