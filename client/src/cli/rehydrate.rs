//! `redctx [--root R] rehydrate PATH [--output OUT] [--force] --allow-raw-output`
//! (spec 9.2): put the real values back into redacted text, for the operator.
//!
//! The daemon owns the map (`Request::Rehydrate`: it knows the root's redaction); this
//! side reads the input, writes the output and keeps the reference's refusals. Output is
//! written atomically (temporary file, fsync, hard link or rename), never through a
//! symlink, and a folder's output never lands inside the input folder.

use super::files::{Globals, prepare, print_error};
use crate::daemon;
use clap::Args;
use redctx_proto::{Request, Response, RootLimits};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `rehydrate` options.
#[derive(Args, Debug)]
pub struct RehydrateArgs {
    /// Redacted text file or folder to rehydrate.
    pub path: PathBuf,
    /// Write to this file (or, for a folder, into this folder) instead of stdout.
    #[arg(long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Replace output files that exist.
    #[arg(long)]
    pub force: bool,
    /// Acknowledge that the output holds private raw values.
    #[arg(long)]
    pub allow_raw_output: bool,
}

/// Bytes of the reference's text sniff.
const SNIFF_BYTES: usize = 4096;

pub fn run(globals: &Globals, args: &RehydrateArgs) -> ExitCode {
    let (root, ep, rt) = match prepare(globals, RootLimits::default()) {
        Ok(parts) => parts,
        Err(code) => return code,
    };
    if !args.allow_raw_output {
        return print_error(
            "rehydrate emits private raw text; pass --allow-raw-output to continue.",
        );
    }
    let input = super::absolute(&args.path);
    let Ok(meta) = std::fs::metadata(&input) else {
        return print_error("Rehydrate input does not exist.");
    };
    let output = args.output.as_deref().map(super::absolute);
    let jobs: Vec<(PathBuf, Option<PathBuf>)> = if meta.is_dir() {
        let Some(output) = output else {
            return print_error("--output is required when rehydrating a folder.");
        };
        if std::fs::metadata(&output).is_ok_and(|m| !m.is_dir()) {
            return print_error("--output must be a directory when rehydrating a folder.");
        }
        let real_input = std::fs::canonicalize(&input).unwrap_or(input.clone());
        if resolved(&output).starts_with(&real_input) {
            return print_error("--output must not be inside the input folder.");
        }
        let mut files = Vec::new();
        collect_text_files(&input, &mut files);
        files.sort();
        files
            .into_iter()
            .map(|f| {
                let rel = f.strip_prefix(&input).unwrap_or(&f).to_path_buf();
                (f, Some(output.join(rel)))
            })
            .collect()
    } else {
        vec![(input, output)]
    };
    let mut texts = Vec::with_capacity(jobs.len());
    for (file, _) in &jobs {
        match read_text(file) {
            Ok(t) => texts.push(t),
            Err(msg) => return print_error(msg),
        }
    }
    let folder = meta.is_dir();
    rt.block_on(async move {
        let (conn, _) = match daemon::connect_or_start(&ep, daemon::START_TIMEOUT).await {
            Ok(c) => c,
            Err(e) => return super::fail(e),
        };
        let restored = match conn.request(Request::Rehydrate { root, texts }).await {
            Ok(Response::Rehydrated(t)) if t.len() == jobs.len() => t,
            Ok(Response::Error(e)) => return print_error(&e.message),
            Ok(_) => return super::fail("unexpected answer from the daemon; see its log"),
            Err(e) => return super::fail(e),
        };
        for ((_, out), text) in jobs.iter().zip(&restored) {
            let result = match out {
                None => {
                    let mut stdout = std::io::stdout().lock();
                    let _ = stdout
                        .write_all(text.as_bytes())
                        .and_then(|()| stdout.flush());
                    Ok(())
                }
                Some(out) => write_output(out, text, args.force),
            };
            if let Err(msg) = result {
                return print_error(msg);
            }
        }
        if folder {
            println!("Rehydrated {} text file(s).", restored.len());
        }
        ExitCode::SUCCESS
    })
}

/// `path` with its existing part resolved (symlinks followed), the rest appended.
fn resolved(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut at = path.to_path_buf();
    loop {
        if let Ok(real) = std::fs::canonicalize(&at) {
            return missing.iter().rev().fold(real, |p, part| p.join(part));
        }
        match (at.file_name().map(|n| n.to_owned()), at.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name);
                at = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Every regular text file under `dir`, symlinks not followed.
fn collect_text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            collect_text_files(&path, out);
        } else if kind.is_file() && sniff_file(&path) {
            out.push(path);
        }
    }
}

fn sniff_file(path: &Path) -> bool {
    use std::io::Read;
    let mut chunk = Vec::with_capacity(SNIFF_BYTES);
    match std::fs::File::open(path) {
        Ok(f) => f.take(SNIFF_BYTES as u64).read_to_end(&mut chunk).is_ok() && is_text(&chunk),
        Err(_) => false,
    }
}

/// The reference's sniff: no NUL, and UTF-8 or mostly printable ASCII.
fn is_text(chunk: &[u8]) -> bool {
    if chunk.contains(&0) {
        return false;
    }
    if chunk.is_empty() || std::str::from_utf8(chunk).is_ok() {
        return true;
    }
    let textish = chunk
        .iter()
        .filter(|&&b| matches!(b, b'\n' | b'\r' | b'\t' | 32..=126))
        .count();
    textish as f64 / chunk.len() as f64 > 0.85
}

/// A regular file's text (UTF-8, BOM dropped, invalid bytes replaced), refusing
/// symlinks and binary files with the reference's messages.
fn read_text(path: &Path) -> Result<String, &'static str> {
    let meta = std::fs::symlink_metadata(path).map_err(|_| "Path does not exist.")?;
    if meta.file_type().is_symlink() {
        return Err("Refusing unsafe path.");
    }
    if !meta.is_file() {
        return Err("Not a file.");
    }
    let bytes = std::fs::read(path).map_err(|_| "Could not read file.")?;
    if !is_text(&bytes[..bytes.len().min(SNIFF_BYTES)]) {
        return Err("Refusing to print non-text file. Use stat/list to inspect metadata.");
    }
    let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes);
    Ok(String::from_utf8_lossy(body).into_owned())
}

/// Writes `text` at `out` atomically: a temporary file beside it, fsynced, then hard-
/// linked (refusing an existing file) or, with `force`, renamed over it.
fn write_output(out: &Path, text: &str, force: bool) -> Result<(), &'static str> {
    if std::fs::symlink_metadata(out).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err("Refusing to write through a symlink.");
    }
    let dir = out.parent().ok_or("Could not publish output atomically.")?;
    let name = out
        .file_name()
        .ok_or("Could not publish output atomically.")?
        .to_string_lossy()
        .replace(':', "_");
    std::fs::create_dir_all(dir).map_err(|_| "Could not publish output atomically.")?;
    let (tmp, mut file) = (0..100)
        .find_map(|i| {
            let tmp = dir.join(format!(".{name}.{}{i}.tmp", std::process::id()));
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&tmp)
                .ok()
                .map(|f| (tmp, f))
        })
        .ok_or("Could not publish output atomically.")?;
    let published = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|_| "Could not publish output atomically.")
        .and_then(|()| {
            let linked = if force {
                std::fs::rename(&tmp, out)
            } else {
                std::fs::hard_link(&tmp, out)
            };
            linked.map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists if !force => "Output already exists.",
                _ => "Could not publish output atomically.",
            })
        });
    let _ = std::fs::remove_file(&tmp);
    if published.is_ok()
        && let Ok(d) = std::fs::File::open(dir)
    {
        let _ = d.sync_all();
    }
    published
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniff_is_the_references() {
        assert!(is_text(b""));
        assert!(is_text("Zoë\n".as_bytes()));
        assert!(!is_text(b"a\0b"));
        assert!(!is_text(b"\xff\xfe\x01\x02"));
        assert!(is_text(
            b"plain ascii with one \xff byte in it, mostly printable"
        ));
    }

    #[test]
    fn output_is_atomic_and_never_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("sub/out.md");
        write_output(&out, "one", false).unwrap();
        assert_eq!(
            write_output(&out, "two", false),
            Err("Output already exists.")
        );
        write_output(&out, "two", true).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "two");
        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink(&out, &link).unwrap();
        assert_eq!(
            write_output(&link, "x", true),
            Err("Refusing to write through a symlink.")
        );
        let names: Vec<_> = std::fs::read_dir(dir.path().join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["out.md"]);
    }
}
