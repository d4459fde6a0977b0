//! Host timers owned by Rust values: [`Timeout`] and [`sleep`].
//!
//! # Why globals and RAII
//! `setTimeout` and `clearTimeout` are bound as *globals* (like gloo-timers),
//! never through `window`: Workers, Deno, Web Workers and Node have no
//! `window`, and all of them have the globals. A timer is owned by a Rust
//! value and cleared when that value drops, so a timer can only outlive the
//! code that needed it by being kept on purpose; a forgotten `clearTimeout`
//! cannot happen.
//!
//! # The workerd rule
//! In workerd a timer belongs to the request whose handler created it and is
//! cancelled when that request ends. So these timers are never shared between
//! requests: a [`Timeout`] is the timer of the code that made it, and
//! deadlines there arm one timer each (see [`Deadline`](super::Deadline)).
//!
//! # Invariants
//! 1. A [`Timeout`]'s callback runs at most once, and never before its
//!    instant: the host timer is armed rounded up, and a host that wakes early
//!    (Node's can, by 1 ms) re-arms instead of firing. Delays past the host
//!    limit (2^31 − 1 ms) are re-armed in slices, never truncated.
//! 2. Dropping a [`Timeout`] (or a [`Sleep`]) clears its host timer; nothing of
//!    it stays pending.
//! 3. A [`Timeout`] keeps a Node or Deno process alive unless
//!    [`Timeout::unref`] was called, as `setTimeout` does.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

use wasm_bindgen::prelude::*;

use super::sys;
use super::Error;
use crate::core::deadline::check_ms;

/// The delay to arm for `ms` (≥ 0): rounded up, so a timer never fires before
/// its instant, and clamped to the host limit (callers re-arm past it).
pub(crate) fn timer_ms(ms: f64) -> f64 {
    use crate::core::deadline::MAX_TIMER_MS;
    if ms < MAX_TIMER_MS {
        ms.ceil()
    } else {
        MAX_TIMER_MS
    }
}

struct Shared {
    at: f64,
    handle: RefCell<JsValue>,
    unref: Cell<bool>,
    callback: RefCell<Option<Box<dyn FnOnce()>>>,
    closure: RefCell<Option<Closure<dyn FnMut()>>>,
}

impl Shared {
    fn arm(&self) {
        let closure = self.closure.borrow();
        let Some(closure) = closure.as_ref() else { return };
        let left = self.at - sys::now();
        let id = sys::set_timeout(closure.as_ref().unchecked_ref(), timer_ms(if left > 0.0 { left } else { 0.0 }));
        if self.unref.get() {
            sys::unref(&id);
        }
        *self.handle.borrow_mut() = id;
    }

    fn fire(self: &Rc<Self>) {
        if sys::now() < self.at {
            self.arm(); // early, or a slice of a long delay
            return;
        }
        *self.handle.borrow_mut() = JsValue::UNDEFINED;
        let callback = self.callback.borrow_mut().take();
        if let Some(callback) = callback {
            callback();
        }
    }
}

/// A host timer that runs a callback once, `ms` from when it was made, unless
/// it is dropped first. Dropping it clears the timer.
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
/// # fn run() -> Result<(), edge_deadline::web::Error> {
/// use edge_deadline::web::Timeout;
/// let timer = Timeout::new(250.0, || eprintln!("fired"))?;
/// // …work…
/// drop(timer); // cleared: the callback never runs
/// # Ok(())
/// # }
/// # fn main() {}
/// ```
#[must_use = "a Timeout is cleared when dropped: keep it for as long as the callback should run"]
pub struct Timeout {
    shared: Rc<Shared>,
}

impl Timeout {
    /// Arms a timer for `callback`, `ms` milliseconds from now.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `ms` when it is NaN, ±∞, negative or
    /// past 2^53 − 1.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::Timeout;
    /// let _timer = Timeout::new(10.0, || {})?;
    /// assert!(Timeout::new(-1.0, || {}).is_err());
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn new(ms: f64, callback: impl FnOnce() + 'static) -> Result<Self, Error> {
        let at = crate::core::deadline::deadline_in(sys::now(), check_ms("ms", ms)?)?;
        Ok(Self::at(at, Box::new(callback)))
    }

    /// A timer for the (validated) instant `at`.
    pub(crate) fn at(at: f64, callback: Box<dyn FnOnce()>) -> Self {
        let shared = Rc::new(Shared {
            at,
            handle: RefCell::new(JsValue::UNDEFINED),
            unref: Cell::new(false),
            callback: RefCell::new(Some(callback)),
            closure: RefCell::new(None),
        });
        let weak: Weak<Shared> = Rc::downgrade(&shared);
        let closure = Closure::<dyn FnMut()>::new(move || {
            if let Some(shared) = weak.upgrade() {
                shared.fire();
            }
        });
        *shared.closure.borrow_mut() = Some(closure);
        shared.arm();
        Self { shared }
    }

    /// Lets a Node or Deno process exit while this timer is pending
    /// (browsers and workerd have nothing to unref). Returns `self`.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::Timeout;
    /// let _timer = Timeout::new(60_000.0, || {})?.unref();
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn unref(self) -> Self {
        self.shared.unref.set(true);
        let handle = self.shared.handle.borrow();
        if !handle.is_undefined() {
            sys::unref(&handle);
        }
        drop(handle);
        self
    }

    /// Undoes [`Timeout::unref`]: the timer keeps Node or Deno alive again.
    pub(crate) fn reref(&self) {
        self.shared.unref.set(false);
        let handle = self.shared.handle.borrow();
        if !handle.is_undefined() {
            sys::reref(&handle);
        }
    }

    /// The instant the callback is due, in ms on the `performance.now()` timeline.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::Timeout;
    /// let t = Timeout::new(100.0, || {})?;
    /// assert!(t.instant_ms() > 0.0);
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn instant_ms(&self) -> f64 {
        self.shared.at
    }

    /// True while the callback has not run (and will, unless dropped).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::Timeout;
    /// let t = Timeout::new(100.0, || {})?;
    /// assert!(t.is_pending());
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn is_pending(&self) -> bool {
        self.shared.callback.borrow().is_some()
    }
}

impl Drop for Timeout {
    fn drop(&mut self) {
        let handle = self.shared.handle.replace(JsValue::UNDEFINED);
        if !handle.is_undefined() {
            sys::clear_timeout(&handle);
        }
        self.shared.callback.borrow_mut().take();
        // Dropping the closure here is safe: the host timer is cleared, and a
        // callback running now holds only a Weak (upgraded, so `shared` lives on).
        self.shared.closure.borrow_mut().take();
    }
}

impl core::fmt::Debug for Timeout {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Timeout").field("instant_ms", &self.shared.at).field("pending", &self.is_pending()).finish()
    }
}

#[derive(Default)]
struct SleepState {
    done: bool,
    waker: Option<Waker>,
}

/// The future [`sleep`] returns. Dropping it clears its timer.
#[must_use = "a Sleep does nothing unless awaited, and its timer is cleared when dropped"]
#[derive(Debug)]
pub struct Sleep {
    state: Rc<RefCell<SleepState>>,
    timer: Option<Timeout>,
}

impl core::fmt::Debug for SleepState {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SleepState").field("done", &self.done).finish()
    }
}

/// Resolves `ms` milliseconds from now (never earlier). The timer is ref'd:
/// someone is awaiting it.
///
/// # Errors
/// [`Error::InvalidArgument`] naming `ms` when it is NaN, ±∞, negative or past 2^53 − 1.
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] async fn doc() { demo().await.unwrap() }
/// # async fn demo() -> Result<(), edge_deadline::web::Error> {
/// edge_deadline::web::sleep(20.0)?.await;
/// # Ok(()) }
/// # fn main() {}
/// ```
pub fn sleep(ms: f64) -> Result<Sleep, Error> {
    let at = crate::core::deadline::deadline_in(sys::now(), check_ms("ms", ms)?)?;
    Ok(sleep_until(at))
}

/// A [`Sleep`] until the validated instant `at`.
pub(crate) fn sleep_until(at: f64) -> Sleep {
    let state = Rc::new(RefCell::new(SleepState::default()));
    let weak = Rc::downgrade(&state);
    let timer = Timeout::at(
        at,
        Box::new(move || {
            if let Some(state) = weak.upgrade() {
                let mut s = state.borrow_mut();
                s.done = true;
                if let Some(w) = s.waker.take() {
                    w.wake();
                }
            }
        }),
    );
    Sleep { state, timer: Some(timer) }
}

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut s = self.state.borrow_mut();
        if s.done {
            drop(s);
            self.timer = None;
            return Poll::Ready(());
        }
        s.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}
