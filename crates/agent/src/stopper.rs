//! A stop flag that sleeping threads can wait on, so stopping never waits for a
//! full sampling interval.

use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

#[derive(Default)]
pub struct Stopper {
    stopped: Mutex<bool>,
    wake: Condvar,
    /// A thread that waits by parking (see [`Stopper::park`]).
    parked: Mutex<Option<Thread>>,
}

impl Stopper {
    pub fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake.notify_all();
        if let Some(t) = &*self.parked.lock().unwrap_or_else(|e| e.into_inner()) {
            t.unpark();
        }
    }

    /// Parks the calling thread for at most `timeout`, or until stopped, or until
    /// someone unparks it (another way to wake it, lock-free for the waker).
    /// Returns true when stopped.
    pub fn park(&self, timeout: Duration) -> bool {
        {
            let mut parked = self.parked.lock().unwrap_or_else(|e| e.into_inner());
            if parked.is_none() {
                *parked = Some(std::thread::current());
            }
        }
        if self.is_stopped() {
            return true;
        }
        std::thread::park_timeout(timeout);
        self.is_stopped()
    }

    pub fn is_stopped(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps until `deadline` or until stopped; returns true when stopped.
    pub fn wait_until(&self, deadline: Instant) -> bool {
        let mut stopped = self.stopped.lock().unwrap_or_else(|e| e.into_inner());
        while !*stopped {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            stopped = self
                .wake
                .wait_timeout(stopped, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }

    pub fn wait(&self, timeout: Duration) -> bool {
        self.wait_until(Instant::now() + timeout)
    }
}

/// An engine's own sampler thread: the flag that stops it, and the flag the
/// thread sets when it has left the VM (None until it started).
#[derive(Default)]
pub struct SamplerThread {
    stopper: Arc<Stopper>,
    done: OnceLock<Arc<Stopper>>,
}

impl SamplerThread {
    /// Starts the thread `spawn` makes from the stop flag and the done flag it
    /// must set when it leaves.
    pub fn start<T>(
        &self,
        spawn: impl FnOnce(Arc<Stopper>, Arc<Stopper>) -> std::io::Result<T>,
    ) -> std::io::Result<()> {
        let done = Arc::new(Stopper::default());
        spawn(self.stopper.clone(), done.clone())?;
        let _ = self.done.set(done);
        Ok(())
    }

    pub fn stop(&self) {
        self.stopper.stop();
    }

    /// Waits until the thread has left, at most until `deadline`.
    pub fn wait(&self, deadline: Instant) {
        if let Some(done) = self.done.get() {
            done.wait_until(deadline);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn waiting_ends_early_on_stop() {
        let s = Arc::new(Stopper::default());
        assert!(!s.wait(Duration::from_millis(1)));
        let s2 = s.clone();
        let t = std::thread::spawn(move || s2.wait(Duration::from_secs(30)));
        std::thread::sleep(Duration::from_millis(20));
        let start = Instant::now();
        s.stop();
        assert!(t.join().unwrap());
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(s.is_stopped());
    }

    #[test]
    fn parking_ends_early_on_stop_and_on_unpark() {
        let s = Arc::new(Stopper::default());
        let s2 = s.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            tx.send(std::thread::current()).unwrap();
            let first = s2.park(Duration::from_secs(30));
            (first, s2.park(Duration::from_secs(30)))
        });
        let waiter = rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let start = Instant::now();
        waiter.unpark();
        std::thread::sleep(Duration::from_millis(20));
        s.stop();
        assert_eq!(t.join().unwrap(), (false, true));
        assert!(start.elapsed() < Duration::from_secs(5));
    }
}
