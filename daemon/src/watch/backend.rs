//! The event source under the watcher: non-recursive directory watches whose changes
//! reach a handler as `notify` events, in the kernel's queue order.
//!
//! On Linux this is a small inotify reader of our own (on the `inotify` crate) rather
//! than `notify`'s inotify watcher, because that one always asks the kernel for
//! `IN_OPEN`: every file any process opens in a watched directory (our own indexing
//! pass and reads, a build, an editor, `git status`) then wakes its thread and builds
//! an event the worker throws away. On a cold index of 19k files that was 38k events and
//! half of the daemon's system CPU. This reader asks only for what changes content or
//! names, reads the queue in large batches, and otherwise behaves as `notify` did for
//! the worker: the same event kinds and paths, a rescan flag on queue overflow, and a
//! watched directory that is deleted or moved away loses its watches (with those below
//! it), so that a later watch of that path is a fresh one. Elsewhere, `notify`'s
//! recommended watcher is used as it is.

use notify::{Event, Result as NotifyResult};
use std::path::Path;

/// What receives the backend's events (on the backend's own thread).
pub(super) type Handler = Box<dyn FnMut(NotifyResult<Event>) + Send>;

#[cfg(target_os = "linux")]
pub(super) use linux::Backend;

#[cfg(not(target_os = "linux"))]
pub(super) use portable::Backend;

#[cfg(not(target_os = "linux"))]
mod portable {
    use super::*;
    use notify::{RecursiveMode, Watcher as _};

    /// `notify`'s recommended watcher, watching non-recursively.
    pub(in crate::watch) struct Backend(notify::RecommendedWatcher);

    impl Backend {
        pub(in crate::watch) fn new(mut handler: Handler) -> NotifyResult<Backend> {
            notify::recommended_watcher(move |res| handler(res)).map(Backend)
        }

        pub(in crate::watch) fn watch(&mut self, dir: &Path) -> NotifyResult<()> {
            self.0.watch(dir, RecursiveMode::NonRecursive)
        }

        pub(in crate::watch) fn unwatch(&mut self, dir: &Path) -> NotifyResult<()> {
            self.0.unwatch(dir)
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;
    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
    use notify::event::{
        AccessKind, AccessMode, CreateKind, DataChange, EventKind, Flag, MetadataKind, ModifyKind,
        RemoveKind, RenameMode,
    };
    use std::collections::HashMap;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex, MutexGuard};

    /// What each watch asks for: changes of content, metadata and names in the
    /// directory, and the directory's own removal or move. Not opens, reads or closes
    /// without a write. Never through a symlink, and only directories.
    fn mask() -> WatchMask {
        WatchMask::ATTRIB
            | WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::CLOSE_WRITE
            | WatchMask::MODIFY
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
            | WatchMask::DONT_FOLLOW
            | WatchMask::ONLYDIR
    }

    /// Bytes read from the queue at once (hundreds of events per wake-up).
    const READ_BUFFER: usize = 64 * 1024;

    /// Which directory each watch descriptor stands for, both ways.
    #[derive(Default)]
    struct Table {
        by_path: HashMap<PathBuf, WatchDescriptor>,
        by_wd: HashMap<WatchDescriptor, PathBuf>,
    }

    impl Table {
        /// `path` is watched by `wd`. The kernel gives a directory one descriptor, so a
        /// directory watched again under a new name is no longer watched under its old
        /// one (unwatching that name must not remove the new name's watch).
        fn insert(&mut self, path: PathBuf, wd: WatchDescriptor) {
            if let Some(old) = self.by_wd.insert(wd.clone(), path.clone())
                && old != path
                && self.by_path.get(&old) == Some(&wd)
            {
                self.by_path.remove(&old);
            }
            self.by_path.insert(path, wd);
        }

        /// Forgets `path` and every watched path below it; returns their descriptors.
        fn remove_tree(&mut self, path: &Path) -> Vec<WatchDescriptor> {
            let gone: Vec<PathBuf> = self
                .by_path
                .keys()
                .filter(|p| p.starts_with(path))
                .cloned()
                .collect();
            gone.iter()
                .filter_map(|p| {
                    let wd = self.by_path.remove(p)?;
                    self.by_wd.remove(&wd);
                    Some(wd)
                })
                .collect()
        }
    }

    /// An inotify instance read by one thread, which calls the handler.
    pub(in crate::watch) struct Backend {
        watches: Watches,
        table: Arc<Mutex<Table>>,
        /// Written to stop the reader.
        stop: OwnedFd,
        reader: Option<std::thread::JoinHandle<()>>,
        /// Kernel events read that meant nothing to the worker (what the mask is for);
        /// read by the tests.
        #[cfg_attr(not(test), allow(dead_code))]
        discarded: Arc<AtomicU64>,
    }

    fn lock(table: &Mutex<Table>) -> MutexGuard<'_, Table> {
        table.lock().unwrap_or_else(|e| e.into_inner())
    }

    impl Backend {
        pub(in crate::watch) fn new(handler: Handler) -> NotifyResult<Backend> {
            let inotify = Inotify::init().map_err(notify::Error::io)?;
            // SAFETY: eventfd(2) with valid flags; the descriptor is owned below.
            let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
            if fd < 0 {
                return Err(notify::Error::io(std::io::Error::last_os_error()));
            }
            // SAFETY: `fd` was just opened and nobody else owns it.
            let stop = unsafe { OwnedFd::from_raw_fd(fd) };
            let watches = inotify.watches();
            let table = Arc::new(Mutex::new(Table::default()));
            let discarded = Arc::new(AtomicU64::new(0));
            let reader = Reader {
                inotify,
                stop: stop.as_raw_fd(),
                table: table.clone(),
                watches: watches.clone(),
                handler,
                discarded: discarded.clone(),
            };
            let reader = std::thread::Builder::new()
                .name("redctx-inotify".into())
                .spawn(move || reader.run())
                .map_err(notify::Error::io)?;
            Ok(Backend {
                watches,
                table,
                stop,
                reader: Some(reader),
                discarded,
            })
        }

        /// Kernel events read so far that produced no event.
        #[cfg(test)]
        pub(in crate::watch) fn discarded(&self) -> u64 {
            self.discarded.load(Ordering::Relaxed)
        }

        /// Watches `dir` (again: a path watched before gets the descriptor the kernel
        /// gives now, which differs if another directory took that name).
        pub(in crate::watch) fn watch(&mut self, dir: &Path) -> NotifyResult<()> {
            match self.watches.add(dir, mask()) {
                Ok(wd) => {
                    lock(&self.table).insert(dir.to_path_buf(), wd);
                    Ok(())
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                    Err(notify::Error::new(notify::ErrorKind::MaxFilesWatch))
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    Err(notify::Error::path_not_found())
                }
                Err(e) => Err(notify::Error::io(e)),
            }
        }

        /// Stops watching `dir` (not the directories below it).
        pub(in crate::watch) fn unwatch(&mut self, dir: &Path) -> NotifyResult<()> {
            let wd = {
                let mut table = lock(&self.table);
                let wd = table
                    .by_path
                    .remove(dir)
                    .ok_or_else(notify::Error::watch_not_found)?;
                table.by_wd.remove(&wd);
                wd
            };
            // Already gone when the directory was deleted: nothing to undo.
            let _ = self.watches.remove(wd);
            Ok(())
        }
    }

    impl Drop for Backend {
        fn drop(&mut self) {
            let one: u64 = 1;
            // SAFETY: an 8-byte write to our eventfd from a valid buffer.
            unsafe {
                libc::write(
                    self.stop.as_raw_fd(),
                    (&one as *const u64).cast(),
                    std::mem::size_of::<u64>(),
                )
            };
            if let Some(reader) = self.reader.take() {
                let _ = reader.join();
            }
        }
    }

    /// The reader thread's state. Closing the instance (when the reader and the
    /// backend's `Watches` are gone) removes every watch.
    struct Reader {
        inotify: Inotify,
        stop: i32,
        table: Arc<Mutex<Table>>,
        watches: Watches,
        handler: Handler,
        discarded: Arc<AtomicU64>,
    }

    impl Reader {
        fn run(mut self) {
            let mut buffer = vec![0u8; READ_BUFFER];
            loop {
                let mut fds = [
                    libc::pollfd {
                        fd: self.inotify.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    },
                    libc::pollfd {
                        fd: self.stop,
                        events: libc::POLLIN,
                        revents: 0,
                    },
                ];
                // SAFETY: two valid pollfd entries, as counted.
                let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
                if n < 0 {
                    if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                        continue;
                    }
                    (self.handler)(Err(notify::Error::io(std::io::Error::last_os_error())));
                    return;
                }
                if fds[1].revents != 0 {
                    return;
                }
                if !self.drain(&mut buffer) {
                    return;
                }
            }
        }

        /// Reads and hands on everything queued; `false` when the queue failed.
        fn drain(&mut self, buffer: &mut [u8]) -> bool {
            loop {
                let mut out = Vec::new();
                let mut dropped = Vec::new();
                match self.inotify.read_events(buffer) {
                    Ok(events) => {
                        let mut table = lock(&self.table);
                        for event in events {
                            let before = out.len();
                            translate(&event, &mut table, &mut out, &mut dropped);
                            if out.len() == before {
                                self.discarded.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        (self.handler)(Err(notify::Error::io(e)));
                        return false;
                    }
                }
                for wd in dropped {
                    let _ = self.watches.remove(wd);
                }
                for event in out {
                    (self.handler)(Ok(event));
                }
            }
        }
    }

    /// The events one kernel event means to the worker, in `notify`'s terms. A
    /// directory deleted or moved away drops its watches and those below it into
    /// `dropped`.
    fn translate(
        event: &inotify::Event<&std::ffi::OsStr>,
        table: &mut Table,
        out: &mut Vec<Event>,
        dropped: &mut Vec<WatchDescriptor>,
    ) {
        let mask = event.mask;
        if mask.contains(EventMask::Q_OVERFLOW) {
            out.push(Event::new(EventKind::Other).set_flag(Flag::Rescan));
            return;
        }
        let Some(dir) = table.by_wd.get(&event.wd) else {
            return; // a watch removed while its events were queued
        };
        if mask.contains(EventMask::IGNORED) {
            // The kernel dropped this watch (its directory is gone).
            let dir = dir.clone();
            if table.by_path.get(&dir) == Some(&event.wd) {
                table.by_path.remove(&dir);
            }
            table.by_wd.remove(&event.wd);
            return;
        }
        let path = match event.name {
            Some(name) => dir.join(name),
            None => dir.clone(),
        };
        let is_dir = mask.contains(EventMask::ISDIR);
        let mut push = |kind: EventKind| out.push(Event::new(kind).add_path(path.clone()));
        if mask.contains(EventMask::MOVED_FROM) {
            push(EventKind::Modify(ModifyKind::Name(RenameMode::From)));
        } else if mask.contains(EventMask::MOVED_TO) {
            push(EventKind::Modify(ModifyKind::Name(RenameMode::To)));
        }
        if mask.contains(EventMask::MOVE_SELF) {
            push(EventKind::Modify(ModifyKind::Name(RenameMode::From)));
        }
        if mask.contains(EventMask::CREATE) {
            push(EventKind::Create(if is_dir {
                CreateKind::Folder
            } else {
                CreateKind::File
            }));
        }
        if mask.contains(EventMask::DELETE) {
            push(EventKind::Remove(if is_dir {
                RemoveKind::Folder
            } else {
                RemoveKind::File
            }));
        }
        if mask.contains(EventMask::DELETE_SELF) {
            push(EventKind::Remove(RemoveKind::Folder));
        }
        if mask.contains(EventMask::MODIFY) {
            push(EventKind::Modify(ModifyKind::Data(DataChange::Any)));
        }
        if mask.contains(EventMask::CLOSE_WRITE) {
            push(EventKind::Access(AccessKind::Close(AccessMode::Write)));
        }
        if mask.contains(EventMask::ATTRIB) {
            push(EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any)));
        }
        if mask.intersects(EventMask::MOVED_FROM | EventMask::DELETE | EventMask::DELETE_SELF)
            && table.by_path.contains_key(&path)
        {
            dropped.extend(table.remove_tree(&path));
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use notify::EventKind;
    use notify::event::{CreateKind, ModifyKind, RenameMode};
    use std::path::PathBuf;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A backend whose events arrive on the returned channel.
    fn backend() -> (Backend, mpsc::Receiver<Event>) {
        let (tx, rx) = mpsc::channel();
        let backend = Backend::new(Box::new(move |res: NotifyResult<Event>| {
            if let Ok(event) = res {
                let _ = tx.send(event);
            }
        }))
        .expect("inotify");
        (backend, rx)
    }

    /// Every event up to and including the creation of `marker` (created now), which
    /// the kernel queues after everything done before it.
    fn events_until_marker(rx: &mpsc::Receiver<Event>, marker: &Path) -> Vec<Event> {
        std::fs::write(marker, b"").unwrap();
        let mut seen = Vec::new();
        loop {
            let event = rx
                .recv_timeout(Duration::from_secs(10))
                .expect("the marker's event");
            let done = matches!(event.kind, EventKind::Create(_))
                && event.paths.first().map(PathBuf::as_path) == Some(marker);
            if done {
                return seen;
            }
            let of_marker = event.paths.iter().any(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("marker"))
            });
            if !of_marker {
                seen.push(event);
            }
        }
    }

    #[test]
    fn opening_and_reading_files_raises_no_event() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, b"hello").unwrap();
        let (mut backend, rx) = backend();
        backend.watch(dir.path()).unwrap();
        for _ in 0..50 {
            assert_eq!(std::fs::read(&file).unwrap(), b"hello");
        }
        let _ = std::fs::metadata(&file).unwrap();
        let seen = events_until_marker(&rx, &dir.path().join("marker"));
        assert!(seen.is_empty(), "reads raised events: {seen:?}");
        // Nor did the kernel queue any (an open would be read, then thrown away).
        assert_eq!(backend.discarded(), 0);
    }

    #[test]
    fn writes_creations_and_renames_are_reported_with_their_paths() {
        let dir = tempfile::tempdir().unwrap();
        let (mut backend, rx) = backend();
        backend.watch(dir.path()).unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, b"one").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::rename(&file, dir.path().join("b.txt")).unwrap();
        let seen = events_until_marker(&rx, &dir.path().join("marker"));
        let has = |kind: EventKind, name: &str| {
            seen.iter()
                .any(|e| e.kind == kind && e.paths == vec![dir.path().join(name)])
        };
        assert!(
            has(EventKind::Create(CreateKind::File), "a.txt"),
            "{seen:?}"
        );
        assert!(
            has(
                EventKind::Access(notify::event::AccessKind::Close(
                    notify::event::AccessMode::Write
                )),
                "a.txt"
            ),
            "{seen:?}"
        );
        assert!(
            has(EventKind::Create(CreateKind::Folder), "sub"),
            "{seen:?}"
        );
        assert!(
            has(
                EventKind::Modify(ModifyKind::Name(RenameMode::From)),
                "a.txt"
            ),
            "{seen:?}"
        );
        assert!(
            has(EventKind::Modify(ModifyKind::Name(RenameMode::To)), "b.txt"),
            "{seen:?}"
        );
    }

    #[test]
    fn a_watched_directory_moved_away_loses_its_watch_until_watched_again() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let (mut backend, rx) = backend();
        backend.watch(dir.path()).unwrap();
        backend.watch(&sub).unwrap();
        let moved = dir.path().join("moved");
        std::fs::rename(&sub, &moved).unwrap();
        events_until_marker(&rx, &dir.path().join("marker1"));
        // Its old watch would report this under the old path; it was dropped.
        std::fs::write(moved.join("x"), b"").unwrap();
        let seen = events_until_marker(&rx, &dir.path().join("marker2"));
        assert!(
            seen.iter()
                .all(|e| e.paths.iter().all(|p| !p.starts_with(&sub))),
            "{seen:?}"
        );
        assert!(
            backend.unwatch(&sub).is_err(),
            "the old path is no longer watched"
        );
        backend.watch(&moved).unwrap();
        std::fs::write(moved.join("y"), b"").unwrap();
        let seen = events_until_marker(&rx, &dir.path().join("marker3"));
        assert!(
            seen.iter()
                .any(|e| e.kind == EventKind::Create(CreateKind::File)
                    && e.paths == vec![moved.join("y")]),
            "{seen:?}"
        );
    }

    #[test]
    fn a_directory_watched_under_a_second_name_keeps_its_watch_when_the_first_is_unwatched() {
        let dir = tempfile::tempdir().unwrap();
        let (mut backend, rx) = backend();
        let a = dir.path().join("a");
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(dir.path().join("x")).unwrap();
        backend.watch(&a).unwrap();
        // The same directory (one kernel descriptor) under another name.
        let second = dir.path().join("x").join("..").join("a");
        backend.watch(&second).unwrap();
        assert!(backend.unwatch(&a).is_err(), "the first name was dropped");
        std::fs::write(a.join("f"), b"").unwrap();
        let event = rx.recv_timeout(Duration::from_secs(10)).expect("an event");
        assert_eq!(event.paths, vec![second.join("f")]);
    }

    #[test]
    fn dropping_the_backend_stops_its_reader() {
        let dir = tempfile::tempdir().unwrap();
        let (mut backend, rx) = backend();
        backend.watch(dir.path()).unwrap();
        drop(backend);
        // The handler (and its sender) went with the reader thread.
        std::fs::write(dir.path().join("after"), b"").unwrap();
        assert!(matches!(
            rx.recv_timeout(Duration::from_secs(10)),
            Err(mpsc::RecvTimeoutError::Disconnected)
        ));
    }
}
