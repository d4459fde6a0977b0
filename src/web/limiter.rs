//! A concurrency limiter for Rust code, fixed or adaptive, as
//! `ConcurrencyLimiter` of `edge-deadline/derive`.
//!
//! The limit, its adaptation to measured round trips (`aimd`, `gradient2`),
//! the options' ranges and defaults, and the estimated wait of a queued
//! caller are the core's machine ([`crate::core::limiter`], see its module
//! doc for the algorithms); this file owns what js/limiter.js owns: the
//! count of calls in flight, the clock readings (the clock of
//! [`set_clock`](super::set_clock)), the waiting callers and their abort
//! listeners.
//!
//! # Invariants
//! 1. At most `limit()` calls hold a [`Permit`]; a shrinking limit admits
//!    none until enough were given back.
//! 2. Every permit is given back exactly once: by [`Permit::release`],
//!    [`Permit::dropped`], [`Permit::ignore`], or when it is dropped (no
//!    sample), which is also what happens to a [`ConcurrencyLimiter::run`]
//!    future dropped while its call runs.
//! 3. Waiting callers are served in order, each before any new caller; one
//!    whose signal aborts (or deadline passes) gets the signal's reason, one
//!    whose future is dropped leaves the queue (a slot it was just handed
//!    goes to the next), and no abort listener outlives its wait. No timer
//!    is armed.
//! 4. A call that fails with a timeout ([`Error::is_timeout`]) or
//!    [`Error::Overloaded`] is a drop; any other failure is no sample.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::AbortSignal;

use super::{timers, Deadline, Error};
use crate::core::limiter::{self as core, Limiter, LimiterError};

impl From<LimiterError> for Error {
    fn from(error: LimiterError) -> Self {
        let param = match &error {
            LimiterError::Slots(_) | LimiterError::Algorithm { .. } => "limit",
            LimiterError::Whole { param, .. }
            | LimiterError::Range { param, .. }
            | LimiterError::Order { param, .. } => param,
        };
        Error::described(param, &error)
    }
}

/// How the limit is set: a fixed number of slots, or adapted to round trips.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// A whole number of slots, `1 ..= 2^32 − 1`.
    Fixed(f64),
    /// Additive increase, multiplicative decrease (Netflix's `AIMDLimit`).
    Aimd,
    /// The gradient of round trips against a probed baseline (Netflix's `Gradient2Limit`).
    Gradient2,
}

/// The options of [`ConcurrencyLimiter::new`]: the JavaScript options, with
/// the same names in snake case and the same defaults
/// ([`crate::core::limiter::defaults`]).
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
/// # fn run() -> Result<(), edge_deadline::web::Error> {
/// use edge_deadline::web::{ConcurrencyLimiter, Limit, LimiterOptions};
/// let limiter = ConcurrencyLimiter::new(LimiterOptions::new(Limit::Aimd).min_limit(5.0).timeout_ms(250.0).max_queue(10.0))?;
/// assert_eq!((limiter.limit(), limiter.algorithm()), (20.0, "aimd"));
/// # Ok(())
/// # }
/// # fn main() {}
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct LimiterOptions(core::LimiterOptions);

macro_rules! setters {
    ($( $(#[$doc:meta])* $name:ident ),* $(,)?) => {
        $( $(#[$doc])* pub fn $name(mut self, value: f64) -> Self {
            self.0.$name = Some(value);
            self
        } )*
    };
}

impl LimiterOptions {
    /// Options with `limit` and every default.
    pub fn new(limit: Limit) -> Self {
        let limit = match limit {
            Limit::Fixed(n) => core::Limit::Slots(n),
            Limit::Aimd => core::Limit::Named("aimd".into()),
            Limit::Gradient2 => core::Limit::Named("gradient2".into()),
        };
        Self(core::LimiterOptions { limit: Some(limit), ..Default::default() })
    }

    setters! {
        /// Adaptive: the limit to start from (default: AIMD 20, gradient2 100).
        initial_limit,
        /// Adaptive: the lowest limit (default: AIMD 20, gradient2 4), also gradient2's probe concurrency.
        min_limit,
        /// Adaptive: the highest limit (default 200).
        max_limit,
        /// AIMD: the factor a late or dropped window multiplies the limit by, `0.5 ≤ r < 1` (default 0.9).
        backoff_ratio,
        /// AIMD: the average round trip (ms) above which a window is late (default 5000).
        timeout_ms,
        /// Gradient2: how many times the baseline round trip is still no queue, `1 ..= 100` (default 1.5).
        tolerance,
        /// Gradient2: the weight of each window's new limit, `0 < s ≤ 1` (default 0.2).
        smoothing,
        /// Gradient2: slots added each window (default 4).
        queue_size,
        /// Gradient2: ms between baseline probes (default 60000).
        probe_interval_ms,
        /// Gradient2: round trips a probe averages (default 50).
        probe_samples,
        /// Adaptive: the shortest window, ms (default: AIMD 1000, gradient2 100).
        window_ms,
        /// Adaptive: the fewest samples a window needs (default 10).
        window_size,
        /// Callers that may wait for a slot (default 0: shed at once).
        max_queue,
    }
}

/// What bounds a caller's wait for a slot ([`ConcurrencyLimiter::run`]).
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct RunOptions<'a> {
    deadline: Option<&'a Deadline>,
    signal: Option<&'a AbortSignal>,
    remaining_ms: Option<f64>,
}

impl<'a> RunOptions<'a> {
    /// No budget: a caller waits (when `max_queue` allows) until served.
    pub fn new() -> Self {
        Self::default()
    }
    /// Its remaining time must cover the estimated wait, and its signal ends the wait.
    pub fn deadline(mut self, deadline: &'a Deadline) -> Self {
        self.deadline = Some(deadline);
        self
    }
    /// Ends the wait with the signal's reason when it aborts.
    pub fn signal(mut self, signal: &'a AbortSignal) -> Self {
        self.signal = Some(signal);
        self
    }
    /// The budget, ms, that must cover the estimated wait; a caller whose
    /// budget ran out before its turn is shed then ([`Error::Overloaded`],
    /// its function never called). Arms no timer.
    pub fn remaining_ms(mut self, ms: f64) -> Self {
        self.remaining_ms = Some(ms);
        self
    }
}

#[derive(Default)]
struct Waiter {
    /// The instant its budget ends (∞ without one): a turn that comes later sheds it.
    ends_at: f64,
    /// Its budget was spent waiting: `Some((limit, in flight))` of its refusal.
    shed: Option<(f64, f64)>,
    /// The slot was handed over: `Some(calls in flight then)`.
    granted: Option<f64>,
    /// The reason of the signal that ended the wait.
    aborted: Option<wasm_bindgen::JsValue>,
    waker: Option<Waker>,
}

struct Inner {
    core: Limiter,
    limit: f64,
    in_flight: f64,
    shed: f64,
    queue: VecDeque<Rc<RefCell<Waiter>>>,
}

impl Inner {
    fn done(&mut self, start: f64, in_flight: f64, sample: Option<bool>) {
        self.in_flight -= 1.0;
        if let Some(dropped) = sample {
            let now = timers::now();
            self.limit = self.core.sample(now, now - start, in_flight, dropped);
        }
        while self.in_flight < self.limit {
            let Some(w) = self.queue.pop_front() else { break };
            let mut w = w.borrow_mut();
            if w.ends_at.is_finite() && !core::may_start(timers::now(), w.ends_at) {
                // Its budget was spent waiting: nobody waits for this call any more.
                self.shed += 1.0;
                w.shed = Some((self.limit, self.in_flight));
            } else {
                self.in_flight += 1.0;
                w.granted = Some(self.in_flight);
            }
            if let Some(waker) = w.waker.take() {
                waker.wake();
            }
        }
    }

    fn overloaded(&mut self) -> Error {
        self.shed += 1.0;
        Error::Overloaded { limit: self.limit, in_flight: self.in_flight }
    }
}

/// Bounds the calls in flight to a dependency; sheds with
/// [`Error::Overloaded`], or lets up to `max_queue` callers wait when their
/// budget covers the estimated wait. Clones share one limiter.
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] async fn doc() { run().await.unwrap() }
/// # async fn run() -> Result<(), edge_deadline::web::Error> {
/// use edge_deadline::web::{ConcurrencyLimiter, Error, Limit, LimiterOptions, RunOptions};
/// let limiter = ConcurrencyLimiter::new(LimiterOptions::new(Limit::Gradient2))?;
/// let answer = limiter.run(|| async { Ok::<_, Error>(42) }, RunOptions::new()).await?;
/// assert_eq!((answer, limiter.in_flight()), (42, 0.0));
/// # Ok(())
/// # }
/// # fn main() {}
/// ```
#[derive(Clone)]
pub struct ConcurrencyLimiter(Rc<RefCell<Inner>>);

impl std::fmt::Debug for ConcurrencyLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = self.0.borrow();
        write!(
            f,
            "ConcurrencyLimiter({}/{} in flight, {} queued, {} shed)",
            i.in_flight,
            i.limit,
            i.queue.len(),
            i.shed
        )
    }
}

impl ConcurrencyLimiter {
    /// A limiter starting now.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the option (`limit`, `minLimit`,
    /// `backoffRatio`…) out of its range.
    pub fn new(options: LimiterOptions) -> Result<Self, Error> {
        let core = Limiter::new(&options.0, timers::now())?;
        let limit = core.limit();
        Ok(Self(Rc::new(RefCell::new(Inner { core, limit, in_flight: 0.0, shed: 0.0, queue: VecDeque::new() }))))
    }

    /// The limit now.
    pub fn limit(&self) -> f64 {
        self.0.borrow().limit
    }

    /// `"fixed"`, `"aimd"` or `"gradient2"`.
    pub fn algorithm(&self) -> &'static str {
        self.0.borrow().core.config().algorithm.name()
    }

    /// Calls holding a slot now.
    pub fn in_flight(&self) -> f64 {
        self.0.borrow().in_flight
    }

    /// Free slots now (0 when the limit shrank below the calls in flight).
    pub fn available(&self) -> f64 {
        let i = self.0.borrow();
        (i.limit - i.in_flight).max(0.0)
    }

    /// Calls shed so far (and [`try_acquire`](Self::try_acquire) refusals).
    pub fn shed(&self) -> f64 {
        self.0.borrow().shed
    }

    /// Callers waiting now.
    pub fn queued(&self) -> usize {
        self.0.borrow().queue.len()
    }

    /// The last window's average round trip, ms.
    pub fn rtt_ms(&self) -> Option<f64> {
        Some(self.0.borrow().core.rtt_ms()).filter(|r| !r.is_nan())
    }

    /// The estimated wait of the next caller to queue, ms.
    pub fn estimated_wait_ms(&self) -> f64 {
        let i = self.0.borrow();
        i.core.wait_ms(i.queue.len() as f64 + 1.0)
    }

    /// A slot now if one is free and nobody waits (else counted as shed).
    pub fn try_acquire(&self) -> Option<Permit> {
        let mut i = self.0.borrow_mut();
        if i.in_flight >= i.limit || !i.queue.is_empty() {
            i.shed += 1.0;
            return None;
        }
        i.in_flight += 1.0;
        Some(Permit { limiter: Some(self.0.clone()), start: timers::now(), in_flight: i.in_flight })
    }

    /// Runs `f()` holding a slot until its future completes; when full,
    /// waits if `max_queue` allows and `opts` covers the estimated wait,
    /// else fails with [`Error::Overloaded`] without calling `f`. A wait ends
    /// with the reason of `opts`' signal or deadline when it aborts.
    ///
    /// # Errors
    /// [`Error::Overloaded`], an abort reason, or `f`'s own error.
    pub async fn run<T, Fut>(&self, f: impl FnOnce() -> Fut, opts: RunOptions<'_>) -> Result<T, Error>
    where
        Fut: Future<Output = Result<T, Error>>,
    {
        let mut signals: Vec<AbortSignal> = opts.signal.into_iter().cloned().collect();
        let mut remaining = opts.remaining_ms.unwrap_or(f64::INFINITY);
        if let Some(d) = opts.deadline {
            signals.push(d.signal());
            remaining = remaining.min(d.remaining());
        }
        if let Some(s) = signals.iter().find(|s| s.aborted()) {
            return Err(Error::from(s.reason()));
        }
        let permit = match self.try_take() {
            Some(p) => p,
            None => self.wait(signals, remaining)?.await?,
        };
        let result = f().await;
        match &result {
            Ok(_) => permit.release(),
            Err(e) if e.is_timeout() || matches!(e, Error::Overloaded { .. }) => permit.dropped(),
            Err(_) => permit.ignore(),
        }
        result
    }

    /// `try_acquire` without counting a refusal.
    fn try_take(&self) -> Option<Permit> {
        let mut i = self.0.borrow_mut();
        if i.in_flight >= i.limit || !i.queue.is_empty() {
            return None;
        }
        i.in_flight += 1.0;
        Some(Permit { limiter: Some(self.0.clone()), start: timers::now(), in_flight: i.in_flight })
    }

    fn wait(&self, signals: Vec<AbortSignal>, remaining: f64) -> Result<Wait, Error> {
        let mut i = self.0.borrow_mut();
        let position = i.queue.len() as f64 + 1.0;
        let max_queue = i.core.config().max_queue;
        // A NaN budget covers nothing.
        if position > max_queue || remaining.is_nan() || i.core.wait_ms(position) > remaining {
            return Err(i.overloaded());
        }
        let waiter = Rc::new(RefCell::new(Waiter { ends_at: timers::now() + remaining, ..Waiter::default() }));
        i.queue.push_back(waiter.clone());
        drop(i);
        let on_abort = (!signals.is_empty()).then(|| {
            let (limiter, w) = (Rc::downgrade(&self.0), Rc::downgrade(&waiter));
            Closure::<dyn FnMut(web_sys::Event)>::new(move |event: web_sys::Event| {
                let (Some(limiter), Some(w)) = (limiter.upgrade(), w.upgrade()) else { return };
                let mut l = limiter.borrow_mut();
                let Some(at) = l.queue.iter().position(|x| Rc::ptr_eq(x, &w)) else { return };
                l.queue.remove(at);
                drop(l);
                let reason = event.target().and_then(|t| t.dyn_into::<AbortSignal>().ok()).map(|s| s.reason());
                let mut w = w.borrow_mut();
                w.aborted = Some(reason.unwrap_or(wasm_bindgen::JsValue::UNDEFINED));
                if let Some(waker) = w.waker.take() {
                    waker.wake();
                }
            })
        });
        if let Some(cb) = &on_abort {
            for s in &signals {
                let _ = s.add_event_listener_with_callback("abort", cb.as_ref().unchecked_ref());
            }
        }
        Ok(Wait { limiter: self.0.clone(), waiter, signals, on_abort, done: false })
    }
}

/// A queued caller's wait for a slot.
struct Wait {
    limiter: Rc<RefCell<Inner>>,
    waiter: Rc<RefCell<Waiter>>,
    signals: Vec<AbortSignal>,
    on_abort: Option<Closure<dyn FnMut(web_sys::Event)>>,
    done: bool,
}

impl Wait {
    fn unlisten(&mut self) {
        if let Some(cb) = self.on_abort.take() {
            for s in &self.signals {
                let _ = s.remove_event_listener_with_callback("abort", cb.as_ref().unchecked_ref());
            }
        }
    }
}

impl Future for Wait {
    type Output = Result<Permit, Error>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut w = self.waiter.borrow_mut();
        if let Some(in_flight) = w.granted {
            drop(w);
            self.done = true;
            self.unlisten();
            return Poll::Ready(Ok(Permit { limiter: Some(self.limiter.clone()), start: timers::now(), in_flight }));
        }
        if let Some(reason) = w.aborted.take() {
            drop(w);
            self.done = true;
            self.unlisten();
            return Poll::Ready(Err(Error::from(reason)));
        }
        if let Some((limit, in_flight)) = w.shed {
            drop(w);
            self.done = true;
            self.unlisten();
            return Poll::Ready(Err(Error::Overloaded { limit, in_flight }));
        }
        w.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Wait {
    fn drop(&mut self) {
        self.unlisten();
        if self.done {
            return;
        }
        // Dropped while waiting: leave the queue, or pass on a slot just handed over.
        let granted = self.waiter.borrow().granted;
        let mut l = self.limiter.borrow_mut();
        match granted {
            Some(_) => l.done(0.0, 0.0, None),
            None => l.queue.retain(|x| !Rc::ptr_eq(x, &self.waiter)),
        }
    }
}

/// A slot held; give it back with one of its methods (dropping it is
/// [`ignore`](Self::ignore)).
pub struct Permit {
    limiter: Option<Rc<RefCell<Inner>>>,
    start: f64,
    in_flight: f64,
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Permit(started at {} ms)", self.start)
    }
}

impl Permit {
    /// The call succeeded: its round trip is a sample.
    pub fn release(mut self) {
        self.end(Some(false));
    }
    /// The call failed from overload (timed out, shed downstream): a drop.
    pub fn dropped(mut self) {
        self.end(Some(true));
    }
    /// The call failed for another reason: no sample.
    pub fn ignore(mut self) {
        self.end(None);
    }
    fn end(&mut self, sample: Option<bool>) {
        if let Some(l) = self.limiter.take() {
            l.borrow_mut().done(self.start, self.in_flight, sample);
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.end(None);
    }
}
