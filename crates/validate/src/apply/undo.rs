//! The undo of `zmem validate apply`'s set-up: each change pushed as it is made, undone in the
//! opposite order ([`UndoStack::undo`]) so the agent stops before its swap area goes, and a
//! swap area goes before zswap's parameters are written back. Dropped with steps left (a panic,
//! an early return) it undoes them the same way, so nothing of the set-up outlives the run but
//! what the kernel refused to give back (a swapoff without the memory for it), which each step
//! reports.

/// One change, undone once.
pub trait Undo: Send {
    /// What it undoes (`/dev/zram1`, `zswap's parameters`).
    fn what(&self) -> String;
    /// Undoes it: a line saying what was done, or why it could not be.
    fn undo(self: Box<Self>) -> Result<String, String>;
}

/// The changes made so far, last on top.
#[derive(Default)]
pub struct UndoStack {
    steps: Vec<Box<dyn Undo>>,
}

impl std::fmt::Debug for UndoStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.steps.iter().map(|s| s.what()).collect();
        f.debug_struct("UndoStack").field("steps", &names).finish()
    }
}

/// What one undo said: done (`Ok`) or not.
pub type Outcome = Result<String, String>;

impl UndoStack {
    pub fn push(&mut self, step: Box<dyn Undo>) {
        self.steps.push(step);
    }

    /// How many changes are held.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Undoes every change, last first; every step runs whatever an earlier one said.
    pub fn undo(&mut self) -> Vec<Outcome> {
        let mut out = Vec::new();
        while let Some(step) = self.steps.pop() {
            out.push(step.undo());
        }
        out
    }
}

impl Drop for UndoStack {
    fn drop(&mut self) {
        for e in self.undo().into_iter().filter_map(Result::err) {
            eprintln!("zmem: {}", crate::apply::one_line(&e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    struct Fake {
        name: &'static str,
        log: Arc<Mutex<Vec<&'static str>>>,
        fails: bool,
    }

    impl Undo for Fake {
        fn what(&self) -> String {
            self.name.into()
        }
        fn undo(self: Box<Self>) -> Result<String, String> {
            self.log.lock().unwrap().push(self.name);
            if self.fails { Err(format!("{} failed", self.name)) } else { Ok(self.name.into()) }
        }
    }

    /// The set-up's order: zswap's parameters, the swap area behind them, the agent.
    fn stack(log: &Arc<Mutex<Vec<&'static str>>>, failing: &str) -> UndoStack {
        let mut s = UndoStack::default();
        for name in ["zswap parameters", "swap area", "agent"] {
            let fails = name == failing;
            s.push(Box::new(Fake { name, log: log.clone(), fails }));
        }
        s
    }

    #[test]
    fn changes_are_undone_last_first_and_a_failure_stops_nothing() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut s = stack(&log, "swap area");
        assert_eq!(s.len(), 3);
        let out = s.undo();
        assert_eq!(*log.lock().unwrap(), ["agent", "swap area", "zswap parameters"]);
        assert_eq!(out[0], Ok("agent".to_string()));
        assert_eq!(out[1], Err("swap area failed".to_string()));
        assert_eq!(out[2], Ok("zswap parameters".to_string()));
        assert!(s.is_empty());
        drop(s);
        assert_eq!(log.lock().unwrap().len(), 3, "nothing is undone twice");
    }

    #[test]
    fn a_panic_undoes_in_the_same_order() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        let r = std::panic::catch_unwind(move || {
            let _s = stack(&l, "");
            panic!("the watch panicked");
        });
        assert!(r.is_err());
        assert_eq!(*log.lock().unwrap(), ["agent", "swap area", "zswap parameters"]);
    }
}
