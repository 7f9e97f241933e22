//! When a long-lived process (the daemon, the MCP server) writes its cache
//! files: one schedule for both. A save is due [`QUIET`] after the last
//! answer that may have changed them (a burst of calls is saved once, after
//! it), and never sooner than [`GAP`] after the previous save (a large
//! index that grows a little on every call is not rewritten on every pause).

use std::time::{Duration, Instant};

/// How long after its last change the cache files are saved.
pub(crate) const QUIET: Duration = Duration::from_secs(2);

/// The shortest time between two saves.
pub(crate) const GAP: Duration = Duration::from_secs(30);

/// The saves of one process's cache files.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Schedule {
    /// The last change not saved yet.
    changed: Option<Instant>,
    /// When the last save ended.
    saved: Option<Instant>,
}

impl Schedule {
    /// An answer at `now` may have changed the cache files.
    pub(crate) fn changed(&mut self, now: Instant) {
        self.changed = Some(now);
    }

    /// How long from `now` until the next save is due (zero: now); `None`
    /// when nothing is to be saved.
    pub(crate) fn due_in(&self, now: Instant) -> Option<Duration> {
        let changed = self.changed?;
        let quiet = (changed + QUIET).saturating_duration_since(now);
        let gap = self.saved.map_or(Duration::ZERO, |at| (at + GAP).saturating_duration_since(now));
        Some(quiet.max(gap))
    }

    /// The cache files were saved at `now`, with every change before
    /// `since` (when the save began).
    pub(crate) fn saved(&mut self, since: Instant, now: Instant) {
        if self.changed.is_some_and(|at| at <= since) {
            self.changed = None;
        }
        self.saved = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_saved_once_after_it_and_saves_are_spaced() {
        let t0 = Instant::now();
        let s = |secs: u64| t0 + Duration::from_secs(secs);
        let mut schedule = Schedule::default();
        assert_eq!(schedule.due_in(t0), None, "nothing changed");
        schedule.changed(t0);
        schedule.changed(s(1));
        assert_eq!(schedule.due_in(s(1)), Some(QUIET), "after the last change");
        assert_eq!(schedule.due_in(s(3)), Some(Duration::ZERO));
        schedule.saved(s(3), s(3));
        assert_eq!(schedule.due_in(s(3)), None);
        schedule.changed(s(4));
        assert_eq!(schedule.due_in(s(6)), Some(s(33) - s(6)), "not sooner than GAP after the last save");
        // A change while a save runs stays due.
        schedule.saved(s(3), s(40));
        assert!(schedule.due_in(s(40)).is_some());
        schedule.saved(s(40), s(41));
        assert_eq!(schedule.due_in(s(41)), None);
    }
}
