//! Fault injection for tests: lets a unit test make a named point in the
//! core panic, to prove that the FFI boundary turns the panic into
//! `PF_ERR_INTERNAL`. Compiled to nothing outside `cfg(test)`.

#[cfg(test)]
use std::cell::RefCell;

#[cfg(test)]
thread_local! {
    static ARMED: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

#[cfg(test)]
static ARMED_ANY_THREAD: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());

/// Arms `name` once for the current thread.
#[cfg(test)]
pub(crate) fn arm(name: &'static str) {
    ARMED.with(|a| a.borrow_mut().push(name));
}

/// Arms `name` once for whichever thread reaches it first (for points that
/// run on pool workers). Use names that only one test reaches.
#[cfg(test)]
pub(crate) fn arm_any_thread(name: &'static str) {
    ARMED_ANY_THREAD.lock().unwrap().push(name);
}

/// A point where a test may inject a panic.
#[inline(always)]
pub(crate) fn point(_name: &'static str) {
    #[cfg(test)]
    {
        let here = ARMED.with(|a| {
            let mut a = a.borrow_mut();
            a.iter()
                .position(|n| *n == _name)
                .map(|i| a.remove(i))
                .is_some()
        });
        let anywhere = || {
            let mut a = ARMED_ANY_THREAD.lock().unwrap();
            a.iter()
                .position(|n| *n == _name)
                .map(|i| a.remove(i))
                .is_some()
        };
        if here || anywhere() {
            panic!("fault injected at {_name}");
        }
    }
}
