//! The detector layer's own pass timed against the balanced baseline's, on one core.
//!
//! Run: `cargo run --release --example layer_alone -- DIR [ROUNDS]` (DIR: a tree of
//! text files, such as the engine bench's generated corpus under
//! `target/bench-corpus/`; ROUNDS: default 15).
//!
//! Each round runs the balanced engine's detector (`Detector::detect_and_see`, its
//! keyword pass also locating the allow list's words) over every text file, then the
//! balanced engine with the layer off over every file, and prints both times and their ratio;
//! the median ratio comes last. The two halves of a round run back to back, so a shared
//! machine's slow spells move both alike. This is the figure
//! `scripts/layer-cost-counted.sh`'s cycle model was checked against: what the layer
//! costs on its own, before the pipeline saves any baseline work with it.

#[path = "common/text_files.rs"]
mod text_files;

use redctx_daemon::engine::detect::DetectContext;
use redctx_daemon::engine::{Engine, Mode, Policy, RedactOptions};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(root) = args.next() else {
        eprintln!("usage: layer_alone DIR [ROUNDS]");
        std::process::exit(2);
    };
    let rounds = match args.next().map(|r| r.parse::<usize>()) {
        None => 15,
        Some(Ok(r)) if r > 0 => r,
        Some(_) => {
            eprintln!("layer_alone: ROUNDS is a positive whole number");
            std::process::exit(2);
        }
    };
    let texts = match text_files::text_files(Path::new(&root)) {
        Ok(texts) => texts,
        Err(e) => {
            eprintln!("layer_alone: cannot read {root}: {e}");
            std::process::exit(1);
        }
    };
    let bytes: usize = texts.iter().map(|(_, t)| t.len()).sum();
    println!("{} text files, {:.2} MB", texts.len(), bytes as f64 / 1e6);

    let engine = |detectors| {
        let policy = Policy {
            mode: Mode::Balanced,
            detectors,
            ..Policy::default()
        };
        Engine::new(Arc::new(policy)).expect("default policy compiles")
    };
    // The balanced engine's own detector: its keyword pass also locates the allow list.
    let layered = engine(true);
    let detector = layered.detector().expect("the layer is on");
    let baseline = engine(false);
    let mut ratios = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        for (rel, text) in &texts {
            let ctx = DetectContext {
                rel_path: rel,
                prose: false,
            };
            std::hint::black_box(detector.detect_and_see(text, &ctx, true));
        }
        let layer = start.elapsed().as_secs_f64();
        let start = Instant::now();
        for (rel, text) in &texts {
            let options = RedactOptions {
                preserve_line_count: false,
                prose: false,
                path: rel,
            };
            std::hint::black_box(baseline.redact(text, options).expect("redact"));
        }
        let base = start.elapsed().as_secs_f64();
        ratios.push(layer / base);
        println!(
            "layer {layer:.4} s  baseline {base:.4} s  ratio {:.3}",
            layer / base
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!("median layer/baseline {:.3}", ratios[ratios.len() / 2]);
}
