//! A stop flag that sleeping threads can wait on, so stopping never waits for a
//! full sampling interval.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
pub struct Stopper {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl Stopper {
    pub fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake.notify_all();
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
}
