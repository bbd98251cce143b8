//! The per-root vault salt (spec 5.10): a random 256-bit key kept outside the served
//! root, created once and then reused, so placeholders and opaque ids stay stable across
//! restarts without the operator choosing a salt.
//!
//! The file layout is the reference's (`<state>/vaults/<sha256(root)>.salt`, lock file
//! `<name>.salt.lock`), so a vault the reference created is picked up unchanged. A vault
//! is never rotated silently: an unreadable or malformed file is an error, and the file
//! is left exactly as it was.

use crate::engine::config::{ConfigError, EnvOverrides};
use crate::policy_loader::{expand_user, resolve_lenient};
use sha2::{Digest, Sha256};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// Directory name of the state root under `~/.local/state`, shared with the reference.
pub const STATE_DIR_NAME: &str = "redacted-context-mcp";

/// The state root: `$REDACTED_CONTEXT_STATE_DIR` (with `~` expanded), else
/// `~/.local/state/redacted-context-mcp`. Relative values are taken from the current
/// directory, as the reference's filesystem calls would.
pub fn state_root(env: &EnvOverrides) -> Result<PathBuf, ConfigError> {
    let base = match &env.state_dir {
        Some(dir) => expand_user(dir, env.home.as_deref()),
        None => env
            .home
            .as_ref()
            .ok_or(ConfigError::VaultInit)?
            .join(".local/state")
            .join(STATE_DIR_NAME),
    };
    if base.is_absolute() {
        return Ok(base);
    }
    Ok(std::env::current_dir()
        .map_err(|_| ConfigError::VaultInit)?
        .join(base))
}

/// `<state>/vaults/<sha256 hex of the resolved root path>.salt`.
pub fn vault_salt_path(state_root: &Path, resolved_root: &Path) -> PathBuf {
    let digest = Sha256::digest(resolved_root.as_os_str().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    state_root.join("vaults").join(format!("{hex}.salt"))
}

/// Refuses a vault file that lies inside (or is) the served root, checking the file and
/// every ancestor both as written and with symlinks resolved, so the salt can never be
/// served as context.
pub fn ensure_state_outside_root(
    resolved_root: &Path,
    state_file: &Path,
) -> Result<(), ConfigError> {
    for candidate in state_file.ancestors() {
        if candidate.as_os_str().is_empty() {
            continue;
        }
        if candidate.starts_with(resolved_root)
            || resolve_lenient(candidate).starts_with(resolved_root)
        {
            return Err(ConfigError::StateDirInsideRoot);
        }
    }
    Ok(())
}

/// Returns the vault salt of `resolved_root`, creating it on first use. Concurrent first
/// uses (threads or processes) agree on one salt: creation happens under an exclusive
/// `flock` and publishes the file with an atomic rename.
pub fn load_or_create_vault_salt(
    resolved_root: &Path,
    env: &EnvOverrides,
) -> Result<String, ConfigError> {
    let state_file = vault_salt_path(&state_root(env)?, resolved_root);
    ensure_state_outside_root(resolved_root, &state_file)?;
    load_or_create_at(&state_file)
}

/// Reads and validates an existing salt file: 64 lowercase hex digits after trimming.
pub fn read_vault_salt(path: &Path) -> Result<String, ConfigError> {
    let bytes = fs::read(path).map_err(|_| ConfigError::VaultRead)?;
    let text = String::from_utf8(bytes).map_err(|_| ConfigError::VaultMalformed)?;
    let value = crate::engine::config::py_strip(&text);
    if value.len() == 64
        && value
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        Ok(value.to_owned())
    } else {
        Err(ConfigError::VaultMalformed)
    }
}

fn load_or_create_at(state_file: &Path) -> Result<String, ConfigError> {
    let dir = state_file.parent().ok_or(ConfigError::VaultInit)?;
    let name = state_file
        .file_name()
        .ok_or(ConfigError::VaultInit)?
        .to_string_lossy()
        .into_owned();
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|_| ConfigError::VaultInit)?;
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    let lock = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .open(dir.join(format!("{name}.lock")))
        .map_err(|_| ConfigError::VaultInit)?;
    let _guard = FileLock::exclusive(&lock).map_err(|_| ConfigError::VaultInit)?;
    if fs::metadata(state_file).is_ok() {
        return read_vault_salt(state_file);
    }
    let salt = random_hex_64().map_err(|_| ConfigError::VaultInit)?;
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    write_synced(&tmp, &format!("{salt}\n")).map_err(|_| {
        let _ = fs::remove_file(&tmp);
        ConfigError::VaultInit
    })?;
    fs::rename(&tmp, state_file).map_err(|_| {
        let _ = fs::remove_file(&tmp);
        ConfigError::VaultInit
    })?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    read_vault_salt(state_file)
}

fn write_synced(path: &Path, contents: &str) -> std::io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(contents.as_bytes())?;
    file.sync_all()?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))
}

fn random_hex_64() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// An exclusive `flock` held until drop.
struct FileLock<'a>(&'a File);

impl<'a> FileLock<'a> {
    fn exclusive(file: &'a File) -> std::io::Result<FileLock<'a>> {
        loop {
            // SAFETY: flock on a descriptor owned by `file`, which outlives the guard.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(FileLock(file));
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }
}

impl Drop for FileLock<'_> {
    fn drop(&mut self) {
        // SAFETY: unlocks the descriptor locked in `exclusive`; it is still open.
        unsafe {
            libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    fn env_with_state(dir: &Path) -> EnvOverrides {
        EnvOverrides {
            state_dir: Some(dir.to_path_buf()),
            ..EnvOverrides::default()
        }
    }

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("root");
        fs::create_dir(&root).unwrap();
        (tmp, root, base.join("state"))
    }

    #[test]
    fn first_use_creates_a_private_salt_and_later_uses_reuse_it() {
        let (_tmp, root, state) = dirs();
        let env = env_with_state(&state);
        let salt = load_or_create_vault_salt(&root, &env).unwrap();
        assert_eq!(salt.len(), 64);
        assert!(
            salt.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        let file = vault_salt_path(&state, &root);
        assert_eq!(fs::read_to_string(&file).unwrap(), format!("{salt}\n"));
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            fs::metadata(file.parent().unwrap())
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
        assert!(
            file.with_file_name(format!(
                "{}.lock",
                file.file_name().unwrap().to_str().unwrap()
            ))
            .exists()
        );
        assert_eq!(load_or_create_vault_salt(&root, &env).unwrap(), salt);
        // No temporary file is left behind.
        let names: Vec<String> = fs::read_dir(file.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }

    #[test]
    fn vault_file_name_is_sha256_of_the_root_path() {
        // sha256("/srv/kb") from Python's hashlib.
        assert_eq!(
            vault_salt_path(Path::new("/state"), Path::new("/srv/kb")),
            Path::new(
                "/state/vaults/04c44c77a1e00541c6dda6b61e162ffc4254eed97121f74311c0897c24989fb1.salt"
            )
        );
    }

    #[test]
    fn racing_first_uses_agree_on_one_salt() {
        let (_tmp, root, state) = dirs();
        let env = Arc::new(env_with_state(&state));
        let barrier = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (env, root, barrier) = (env.clone(), root.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    load_or_create_vault_salt(&root, &env).unwrap()
                })
            })
            .collect();
        let salts: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(salts.windows(2).all(|w| w[0] == w[1]), "{salts:?}");
    }

    /// Child half of `racing_processes_agree_on_one_salt`; a no-op in a normal run.
    #[test]
    fn vault_child_process() {
        let (Some(root), Some(state)) = (
            std::env::var_os("REDCTX_VAULT_CHILD_ROOT"),
            std::env::var_os("REDCTX_VAULT_CHILD_STATE"),
        ) else {
            return;
        };
        let salt = load_or_create_vault_salt(Path::new(&root), &env_with_state(Path::new(&state)))
            .unwrap();
        println!("SALT={salt}");
    }

    #[test]
    fn racing_processes_agree_on_one_salt() {
        let (_tmp, root, state) = dirs();
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = (0..8)
            .map(|_| {
                std::process::Command::new(&exe)
                    .args([
                        "--exact",
                        "vault::tests::vault_child_process",
                        "--nocapture",
                        "--test-threads=1",
                    ])
                    .env("REDCTX_VAULT_CHILD_ROOT", &root)
                    .env("REDCTX_VAULT_CHILD_STATE", &state)
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let salts: Vec<String> = children
            .into_iter()
            .map(|child| {
                let out = child.wait_with_output().unwrap();
                assert!(out.status.success());
                let text = String::from_utf8(out.stdout).unwrap();
                // libtest may print the test name on the same line before the output.
                let at = text.find("SALT=").expect("child printed a salt") + 5;
                text[at..].chars().take(64).collect::<String>()
            })
            .collect();
        assert!(salts.windows(2).all(|w| w[0] == w[1]), "{salts:?}");
        assert_eq!(
            salts[0],
            read_vault_salt(&vault_salt_path(&state, &root)).unwrap()
        );
    }

    #[test]
    fn malformed_or_empty_salt_is_refused_and_left_untouched() {
        let (_tmp, root, state) = dirs();
        let env = env_with_state(&state);
        let file = vault_salt_path(&state, &root);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        for contents in ["", "\n", "not-hex", &"A".repeat(64), &"a".repeat(63)] {
            fs::write(&file, contents).unwrap();
            let err = load_or_create_vault_salt(&root, &env).unwrap_err();
            assert_eq!(
                err.to_string(),
                "The redacted-context vault salt is malformed. Restore a backup or delete it intentionally to rotate aliases."
            );
            assert_eq!(fs::read_to_string(&file).unwrap(), contents);
        }
        // Surrounding whitespace is accepted, as the reference strips it.
        let good = "0123456789abcdef".repeat(4);
        fs::write(&file, format!("  {good}\r\n")).unwrap();
        assert_eq!(load_or_create_vault_salt(&root, &env).unwrap(), good);
    }

    #[test]
    fn unreadable_salt_gives_the_read_message() {
        let (_tmp, root, state) = dirs();
        let file = vault_salt_path(&state, &root);
        fs::create_dir_all(&file).unwrap();
        let err = load_or_create_vault_salt(&root, &env_with_state(&state)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Could not read redacted-context vault salt."
        );
    }

    #[test]
    fn state_dir_inside_the_root_is_refused_also_through_a_symlink() {
        let (_tmp, root, state) = dirs();
        let message =
            "The redacted-context state directory must be outside the served context root.";
        for inside in [root.clone(), root.join("state"), root.join("a/b")] {
            let err = load_or_create_vault_salt(&root, &env_with_state(&inside)).unwrap_err();
            assert_eq!(err.to_string(), message);
            assert!(!err.to_string().contains(root.to_str().unwrap()));
        }
        let link = state.with_file_name("link-into-root");
        std::os::unix::fs::symlink(&root, &link).unwrap();
        let err =
            load_or_create_vault_salt(&root, &env_with_state(&link.join("state"))).unwrap_err();
        assert_eq!(err.to_string(), message);
        assert!(
            !root.join("state").exists(),
            "nothing is created inside the root"
        );
    }

    #[test]
    fn home_default_location_is_the_reference_one() {
        let env = EnvOverrides {
            home: Some(PathBuf::from("/home/u")),
            ..EnvOverrides::default()
        };
        assert_eq!(
            state_root(&env).unwrap(),
            Path::new("/home/u/.local/state/redacted-context-mcp")
        );
        let env = EnvOverrides {
            home: Some(PathBuf::from("/home/u")),
            state_dir: Some(PathBuf::from("~/st")),
            ..EnvOverrides::default()
        };
        assert_eq!(state_root(&env).unwrap(), Path::new("/home/u/st"));
    }
}
