//! `redctx daemon install` (a systemd user unit) and `redctx daemon logs`.

use crate::daemon::{self, Endpoint};
use clap::Args;
use redctx_proto::paths::{SOCKET_ENV, STATE_DIR_ENV};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Name of the unit `daemon install` writes.
pub const UNIT_NAME: &str = "redctxd.service";

/// Present when systemd is the running init system (what `sd_booted` checks).
const SYSTEMD_MARKER: &str = "/run/systemd/system";

/// `daemon install` options.
#[derive(Args, Debug)]
pub struct InstallArgs {
    /// Print the unit file instead of writing it.
    #[arg(long)]
    pub print: bool,
}

/// `daemon logs` options.
#[derive(Args, Debug)]
pub struct LogsArgs {
    /// Keep printing new lines as the daemon writes them (Ctrl-C to stop).
    #[arg(short, long)]
    pub follow: bool,
    /// How many of the last lines to print.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 100)]
    pub lines: usize,
}

/// The unit text for `exe`. Environment overrides of the state dir and socket are
/// carried into the unit so the daemon and this user's clients agree on the socket.
pub fn unit_text(exe: &Path, env: &[(&str, PathBuf)]) -> String {
    let mut s = String::from(
        "[Unit]\n\
         Description=redctx daemon: redacted views of local code for AI agents\n\
         \n\
         [Service]\n\
         Type=simple\n",
    );
    for (k, v) in env {
        s.push_str(&format!("Environment=\"{k}={}\"\n", v.display()));
    }
    s.push_str(&format!(
        "ExecStart={}\n\
         Restart=on-failure\n\
         RestartSec=5\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        exe.display()
    ));
    s
}

/// `$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user`.
fn unit_dir() -> Option<PathBuf> {
    let var = |k| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let config = var("XDG_CONFIG_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| var("HOME").map(|h| h.join(".config")))?;
    Some(config.join("systemd").join("user"))
}

/// Run `redctx daemon install`.
pub fn install(args: &InstallArgs) -> ExitCode {
    let Some(exe) = daemon::daemon_exe() else {
        return super::fail(
            "redctxd was not found next to redctx or on PATH; install both binaries together",
        );
    };
    let exe = std::fs::canonicalize(&exe).unwrap_or_else(|_| super::absolute(&exe));
    let env: Vec<(&str, PathBuf)> = [STATE_DIR_ENV, SOCKET_ENV]
        .into_iter()
        .filter_map(|k| {
            let v = std::env::var_os(k).filter(|v| !v.is_empty())?;
            Some((k, super::absolute(Path::new(&v))))
        })
        .collect();
    let unit = unit_text(&exe, &env);
    if args.print {
        print!("{unit}");
        return ExitCode::SUCCESS;
    }
    if !Path::new(SYSTEMD_MARKER).is_dir() {
        return super::fail(format!(
            "systemd is not running on this system ({SYSTEMD_MARKER} is missing), so there is no user unit to install; \
             `redctx daemon install --print` shows the unit for another service manager, \
             or start the daemon with `redctx daemon start` (clients also start it on demand)"
        ));
    }
    let Some(dir) = unit_dir() else {
        return super::fail(
            "cannot find the systemd user unit directory: neither XDG_CONFIG_HOME nor HOME is set",
        );
    };
    let path = dir.join(UNIT_NAME);
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        let mut f = std::fs::File::create(&path)?;
        f.write_all(unit.as_bytes())
    });
    if let Err(e) = written {
        return super::fail(format!("cannot write {}: {e}", path.display()));
    }
    println!("wrote {}", path.display());
    println!("enable and start it with:");
    println!("  systemctl --user daemon-reload && systemctl --user enable --now redctxd");
    ExitCode::SUCCESS
}

/// The last `n` lines of `f` (whole lines; a partial last line counts as one).
fn last_lines(f: &mut std::fs::File, n: usize) -> std::io::Result<(Vec<u8>, u64)> {
    let len = f.metadata()?.len();
    if n == 0 {
        return Ok((Vec::new(), len));
    }
    const CHUNK: u64 = 64 * 1024;
    let mut start = len;
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let from = start.saturating_sub(CHUNK);
        let mut chunk = vec![0u8; (start - from) as usize];
        f.seek(SeekFrom::Start(from))?;
        f.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&buf);
        buf = chunk;
        start = from;
        // Newlines that start a line within buf (ignore a final one).
        let body = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let newlines = body.iter().filter(|&&b| b == b'\n').count();
        if newlines >= n || start == 0 {
            let mut seen = 0;
            let mut cut = 0;
            for (i, b) in body.iter().enumerate().rev() {
                if *b == b'\n' {
                    seen += 1;
                    if seen == n {
                        cut = i + 1;
                        break;
                    }
                }
            }
            return Ok((buf[cut..].to_vec(), len));
        }
    }
}

/// Run `redctx daemon logs`.
pub async fn logs(args: &LogsArgs, ep: &Endpoint) -> ExitCode {
    let path = ep.log_file();
    let mut f = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return super::fail(format!(
                "no daemon log at {} yet: the daemon has not run with this state directory",
                path.display()
            ));
        }
        Err(e) => return super::fail(format!("cannot read {}: {e}", path.display())),
    };
    let (tail, mut pos) = match last_lines(&mut f, args.lines) {
        Ok(x) => x,
        Err(e) => return super::fail(format!("cannot read {}: {e}", path.display())),
    };
    let mut out = std::io::stdout().lock();
    if out.write_all(&tail).and_then(|()| out.flush()).is_err() {
        return ExitCode::SUCCESS;
    }
    drop(out);
    if !args.follow {
        return ExitCode::SUCCESS;
    }
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        // Reopen by name each round so a rotated or recreated log is followed.
        let Ok(mut f) = std::fs::File::open(&path) else {
            continue;
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if len < pos {
            pos = 0; // truncated or replaced
        }
        if len == pos {
            continue;
        }
        let mut buf = Vec::new();
        if f.seek(SeekFrom::Start(pos)).is_err() || f.read_to_end(&mut buf).is_err() {
            continue;
        }
        pos += buf.len() as u64;
        let mut out = std::io::stdout().lock();
        if out.write_all(&buf).and_then(|()| out.flush()).is_err() {
            return ExitCode::SUCCESS;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_runs_the_daemon_binary_and_carries_overrides() {
        let text = unit_text(
            Path::new("/opt/redctx/bin/redctxd"),
            &[("REDCTX_STATE_DIR", PathBuf::from("/srv/state"))],
        );
        assert!(
            text.contains("\nExecStart=/opt/redctx/bin/redctxd\n"),
            "{text}"
        );
        assert!(
            text.contains("\nEnvironment=\"REDCTX_STATE_DIR=/srv/state\"\n"),
            "{text}"
        );
        assert!(
            text.ends_with("[Install]\nWantedBy=default.target\n"),
            "{text}"
        );
    }

    fn tail_of(content: &str, n: usize) -> String {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        std::fs::write(&p, content).unwrap();
        let mut f = std::fs::File::open(&p).unwrap();
        String::from_utf8(last_lines(&mut f, n).unwrap().0).unwrap()
    }

    #[test]
    fn last_lines_counts_whole_lines() {
        assert_eq!(tail_of("a\nb\nc\n", 2), "b\nc\n");
        assert_eq!(tail_of("a\nb\nc", 2), "b\nc");
        assert_eq!(tail_of("a\nb\n", 5), "a\nb\n");
        assert_eq!(tail_of("", 3), "");
        assert_eq!(tail_of("a\n", 0), "");
        let long: String = (0..50_000).map(|i| format!("line {i}\n")).collect();
        assert_eq!(tail_of(&long, 2), "line 49998\nline 49999\n");
    }
}
