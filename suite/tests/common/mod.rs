//! What the end-to-end tests share.

use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::time::Duration;

/// Aborts the test process, naming `what`, if it is not dropped within
/// `limit`: a GPU launch that hangs (a barrier that never opens) fails the
/// run with the launch's name instead of blocking CI until its time limit.
pub struct Watchdog {
    done: Option<Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    pub fn new(what: impl Into<String>, limit: Duration) -> Watchdog {
        let what = what.into();
        let (done, wait) = channel::<()>();
        let thread = std::thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = wait.recv_timeout(limit) {
                eprintln!("HUNG: {what} did not finish within {limit:?}");
                // Not `exit`: its handlers would wait for the hung kernel.
                std::process::abort();
            }
        });
        Watchdog {
            done: Some(done),
            thread: Some(thread),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
