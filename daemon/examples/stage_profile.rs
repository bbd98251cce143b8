//! Times each built-in baseline stage on its own over every UTF-8 file under a
//! directory (a profiling aid: which stage is worth making faster).
//!
//! `cargo run --release -p redctx-daemon --example stage_profile -- DIR`
//!
//! Each stage searches the original texts (their word-class shadow for `\b` patterns),
//! not the text earlier stages left, so figures are per stage, not a pipeline split.

#[path = "common/text_files.rs"]
mod text_files;

use redctx_daemon::engine::names::{ACRONYM, ProperNames, TITLECASE};
use redctx_daemon::engine::patterns::{EARLY_STAGES, ORG_SUFFIX, SPEAKER_LABEL};
use redctx_daemon::engine::pyre::{FindCache, Finder, shadow};
use std::path::Path;
use std::time::Instant;

fn time<F: Finder + ?Sized>(name: &str, finder: &F, texts: &[String], shadows: &[String]) {
    let hays = if finder.uses_word_boundary() {
        shadows
    } else {
        texts
    };
    let started = Instant::now();
    let mut matches = 0;
    for hay in hays {
        let mut pos = 0;
        let mut cache = FindCache::default();
        while let Some((s, e)) = finder.find_from_cached(hay, pos, &mut cache) {
            matches += 1;
            pos = if e > s {
                e
            } else {
                s + hay[s..].chars().next().map_or(1, char::len_utf8)
            };
            if pos > hay.len() {
                break;
            }
        }
    }
    let ms = started.elapsed().as_secs_f64() * 1e3;
    println!("{name:<16} {ms:>8.1} ms {matches:>8} matches");
}

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: stage_profile DIR");
        std::process::exit(2);
    };
    let texts: Vec<String> = match text_files::text_files(Path::new(&dir)) {
        Ok(files) => files.into_iter().map(|(_, text)| text).collect(),
        Err(e) => {
            eprintln!("stage_profile: cannot read the directory: {e}");
            std::process::exit(1);
        }
    };
    let total: usize = texts.iter().map(String::len).sum();
    println!("{} texts, {:.2} MB", texts.len(), total as f64 / 1e6);
    let started = Instant::now();
    let shadows: Vec<String> = texts.iter().map(|t| shadow(t)).collect();
    let ms = started.elapsed().as_secs_f64() * 1e3;
    println!("{:<16} {ms:>8.1} ms", "shadow");
    for stage in EARLY_STAGES.iter() {
        time(stage.name, &*stage.finder, &texts, &shadows);
    }
    time("org_suffix", &*ORG_SUFFIX, &texts, &shadows);
    time("proper_names", &ProperNames, &texts, &shadows);
    time("speaker_label", &*SPEAKER_LABEL, &texts, &shadows);
    time("acronym", &ACRONYM, &texts, &shadows);
    time("titlecase", &TITLECASE, &texts, &shadows);
}
