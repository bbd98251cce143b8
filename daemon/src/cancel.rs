//! When a request's work must stop: its requester cancelled or went away, the daemon is
//! shutting down, or the request ran past its deadline.
//!
//! [`Cancel`] is the flag the socket layer sets; [`Stop`] is what long loops check: the
//! flag plus an optional deadline, with the fixed error each one ends the work with.
//! Both are plain atomics and clocks so that any layer (server, service, renderers,
//! benchmark) can use them without knowing the others.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Cancellation flag of one request, shared between the server and the backend call.
///
/// A request's flag can have a parent (the server's "shutting down" flag), so one store
/// stops every request in flight without the server having to find them.
#[derive(Clone, Debug, Default)]
pub struct Cancel {
    own: Arc<AtomicBool>,
    parent: Option<Arc<AtomicBool>>,
}

impl Cancel {
    /// A flag that is not set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new flag that also reads as set once `self` is set (not the other way round).
    pub fn child(&self) -> Cancel {
        Cancel {
            own: Arc::new(AtomicBool::new(false)),
            parent: Some(self.own.clone()),
        }
    }

    /// Whether the requester no longer wants the answer.
    pub fn is_cancelled(&self) -> bool {
        self.own.load(Ordering::Relaxed)
            || self
                .parent
                .as_ref()
                .is_some_and(|p| p.load(Ordering::Relaxed))
    }

    /// Ask the work to stop.
    pub fn cancel(&self) {
        self.own.store(true, Ordering::Relaxed);
    }
}

/// Why work stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// The requester cancelled, disconnected, or the daemon is stopping: nobody reads
    /// the answer.
    Cancelled,
    /// The request's own time budget ran out.
    Deadline,
}

thread_local! {
    /// The stop of the call this thread works for ([`Stop::around`]).
    static AMBIENT: std::cell::RefCell<Option<Stop>> = const { std::cell::RefCell::new(None) };
}

/// What a long loop checks between units of work (files, lines, passages).
///
/// A check costs an atomic load and, with a deadline, a clock read (tens of
/// nanoseconds): check per file and every few thousand lines, not per byte.
#[derive(Clone, Debug, Default)]
pub struct Stop {
    cancel: Cancel,
    deadline: Option<Instant>,
}

impl Stop {
    /// Never stops (tests, CLI-internal helpers).
    pub fn never() -> Stop {
        Stop::default()
    }

    /// Stops when `cancel` is set.
    pub fn on(cancel: &Cancel) -> Stop {
        Stop {
            cancel: cancel.clone(),
            deadline: None,
        }
    }

    /// The same, and also once `budget` has passed from now.
    pub fn within(self, budget: Duration) -> Stop {
        let deadline = Instant::now().checked_add(budget);
        Stop {
            deadline: match (self.deadline, deadline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            ..self
        }
    }

    /// Runs `f` with `self` as the calling thread's ambient stop: work far below the
    /// renderer that takes no `Stop` (a document's extraction worker, behind a view's
    /// `content`) asks [`Stop::ambient_stopped`] and ends with its call.
    pub fn around<T>(&self, f: impl FnOnce() -> T) -> T {
        struct Restore(Option<Stop>);
        impl Drop for Restore {
            fn drop(&mut self) {
                AMBIENT.with(|a| *a.borrow_mut() = self.0.take());
            }
        }
        let _restore = Restore(AMBIENT.with(|a| a.borrow_mut().replace(self.clone())));
        f()
    }

    /// Whether the calling thread's ambient stop ([`Stop::around`]) says to end; false
    /// on a thread without one (background work).
    pub fn ambient_stopped() -> bool {
        AMBIENT.with(|a| a.borrow().as_ref().is_some_and(|s| s.check().is_err()))
    }

    /// `Err` once the work should end.
    pub fn check(&self) -> Result<(), Stopped> {
        if self.cancel.is_cancelled() {
            return Err(Stopped::Cancelled);
        }
        match self.deadline {
            Some(deadline) if Instant::now() >= deadline => Err(Stopped::Deadline),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_sees_its_parent_but_not_the_reverse() {
        let server = Cancel::new();
        let request = server.child();
        let other = server.child();
        request.cancel();
        assert!(request.is_cancelled());
        assert!(!other.is_cancelled() && !server.is_cancelled());
        server.cancel();
        assert!(other.is_cancelled());
    }

    #[test]
    fn the_ambient_stop_holds_inside_around_and_is_restored_after() {
        let cancel = Cancel::new();
        cancel.cancel();
        assert!(!Stop::ambient_stopped());
        let inner = Stop::on(&cancel).around(|| {
            let nested = Stop::never().around(Stop::ambient_stopped);
            (Stop::ambient_stopped(), nested)
        });
        assert_eq!(inner, (true, false));
        assert!(!Stop::ambient_stopped());
    }

    #[test]
    fn stop_reports_cancel_before_deadline() {
        let cancel = Cancel::new();
        let stop = Stop::on(&cancel).within(Duration::ZERO);
        assert_eq!(stop.check(), Err(Stopped::Deadline));
        cancel.cancel();
        assert_eq!(stop.check(), Err(Stopped::Cancelled));
        assert_eq!(Stop::never().check(), Ok(()));
        let later = Stop::never().within(Duration::from_secs(3600));
        assert_eq!(later.check(), Ok(()));
    }
}
