//! Hedging inside one deadline, as async Rust: another attempt after a
//! delay while the first may still answer.
//!
//! Every decision is the core's machine ([`crate::core::hedge`] `HedgeRun`:
//! when to launch the next attempt, on the hedge timer or at once after a
//! failure; the winner; the stop and its sentence; the records), as in
//! `js/hedge.js`; this file drives it and owns the race. The hedge timer, the
//! parent links and the attempts' signals are nodes of the cancellation
//! primitive (timers.rs `child`), as in `js/hedge.js`: one node per hedge, a
//! child of the deadline's node and the caller's signal, woken at each hedge
//! instant; one node per attempt, a child of the hedge's.
//!
//! # Invariants
//! 1. The first attempt to succeed wins and every other attempt in flight is
//!    aborted at once; none starts after the deadline's signal has aborted.
//!    When the deadline or the caller's signal aborts, every attempt's signal
//!    aborts with it, in the same turn.
//! 2. When `hedge` returns, its nodes are disposed: every wake-up it queued
//!    is cleared and every listener it added removed.
//! 3. The hedge's wake-ups wait in the ref'd queue (timers.rs `ref_queue`):
//!    someone awaits the hedge, so its timer keeps Node and Deno alive.
//! 4. A failure carries every attempt's outcome ([`Error::RetryFailed`]);
//!    its `reason` is `"deadline"` only when the deadline ended it.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Poll, Waker};

use wasm_bindgen::JsValue;
use web_sys::AbortSignal;

use super::errors::AttemptReport;
use super::retry::{failed, own_deadline};
use super::timers::{self, child, ref_queue, Child, Parent, Parents};
use super::{Deadline, Error};
use crate::core::hedge::{self as core, HedgeRecord, HedgeRun, HedgeStep};

/// The options of [`hedge`].
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
/// # fn run() -> Result<(), edge_deadline::web::Error> {
/// let options = edge_deadline::web::HedgeOptions::new(50.0).max_attempts(3);
/// # let _ = options;
/// # Ok(())
/// # }
/// # fn main() {}
/// ```
#[must_use]
#[derive(Debug, Clone)]
pub struct HedgeOptions {
    delay_ms: f64,
    max_attempts: u32,
    signal: Option<AbortSignal>,
}

impl HedgeOptions {
    /// Start another attempt every `delay_ms` while none has answered
    /// (default at most 2 attempts).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// let options = edge_deadline::web::HedgeOptions::new(80.0);
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn new(delay_ms: f64) -> Self {
        Self { delay_ms, max_attempts: 2, signal: None }
    }

    /// At most this many attempts in all (1–100).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// let options = edge_deadline::web::HedgeOptions::new(80.0).max_attempts(3);
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n;
        self
    }

    /// A caller's signal: when it aborts, every attempt is aborted.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// let caller = web_sys::AbortController::new().unwrap();
    /// let options = edge_deadline::web::HedgeOptions::new(80.0).signal(&caller.signal());
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn signal(mut self, signal: &AbortSignal) -> Self {
        self.signal = Some(signal.clone());
        self
    }
}

struct InFlight<Fut> {
    number: u32,
    /// A child of the hedge's node: aborted with it, disposed when the attempt settles.
    node: Child,
    future: Pin<Box<Fut>>,
}

/// What the hedge's node reported, for the next poll.
#[derive(Default)]
struct Events {
    /// The hedge instant came (the node's `on_time`).
    woke: bool,
    /// A parent aborted: its reason.
    ended: Option<JsValue>,
    waker: Option<Waker>,
}

fn notify(events: &std::rc::Weak<RefCell<Events>>, f: impl FnOnce(&mut Events)) {
    let Some(events) = events.upgrade() else { return };
    let waker = {
        let mut e = events.borrow_mut();
        f(&mut e);
        e.waker.take()
    };
    if let Some(w) = waker {
        w.wake();
    }
}

/// Starts `f(signal, attempt_number)`, and another attempt every `delay_ms`
/// while none has answered (up to `max_attempts`); a failed attempt starts the
/// next one at once. The first to succeed wins; the others are aborted.
///
/// # Errors
/// [`Error::RetryFailed`]: `"exhausted"` when every attempt failed,
/// `"deadline"` / `"aborted"` when a signal ended it. [`Error::InvalidArgument`]
/// naming `delayMs` or `maxAttempts`.
///
/// ```
/// use edge_deadline::web::{hedge, Deadline, HedgeOptions};
/// # #[wasm_bindgen_test::wasm_bindgen_test] async fn doc() { demo().await.unwrap() }
/// # async fn demo() -> Result<(), edge_deadline::web::Error> {
/// let deadline = Deadline::in_ms(1_000.0)?;
/// let fastest = hedge(&deadline, HedgeOptions::new(100.0), |signal, attempt| async move {
///     let _ = signal;
///     Ok::<_, edge_deadline::web::Error>(attempt)
/// })
/// .await?;
/// # let _ = fastest; Ok(()) }
/// # fn main() {}
/// ```
pub async fn hedge<F, Fut, T>(deadline: &Deadline, options: HedgeOptions, mut f: F) -> Result<T, Error>
where
    F: FnMut(AbortSignal, u32) -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let policy =
        core::HedgeOptions { delay_ms: options.delay_ms, max_attempts: Some(options.max_attempts) }.policy()?;
    let mut run = HedgeRun::new(policy);
    let at = deadline.instant_ms();
    let events = Rc::new(RefCell::new(Events::default()));
    let (on_time, on_abort) = (Rc::downgrade(&events), Rc::downgrade(&events));
    // The hedge's own node: aborted by the deadline or the caller's signal
    // (and with it every attempt's node), woken at each hedge instant.
    let hedge_node = deadline.with_node(|deadline_node| {
        let parents: Vec<Parent<'_>> =
            std::iter::once(Parent::Node(deadline_node)).chain(options.signal.as_ref().map(Parent::Signal)).collect();
        child(
            Parents::List(&parents),
            f64::INFINITY,
            Some(Box::new(move |_| notify(&on_time, |e| e.woke = true))),
            Some(Box::new(move |reason, _| notify(&on_abort, |e| e.ended = Some(reason.clone())))),
            // Invariant 3.
            Some(ref_queue()),
        )
    });
    let mut in_flight: Vec<InFlight<Fut>> = Vec::new();
    // Each attempt's error, by number − 1; the cause of a stop is one of them.
    let mut errors: Vec<Option<Error>> = Vec::new();
    // The core's answer to the last event, not yet acted on.
    let mut step = if hedge_node.aborted() { None } else { Some(run.start(timers::now())) };
    // A signal's reason, once one ended the hedge.
    let mut ended_by: Option<JsValue> = None;
    // Moves the hedge timer; a wake-up of the instant it replaces is void.
    let rearm = |at: f64| {
        events.borrow_mut().woke = false;
        hedge_node.rearm(at);
    };

    std::future::poll_fn(|cx| loop {
        match step.take().transpose() {
            Err(e) => return Poll::Ready(Err(e.into())),
            Ok(None | Some(HedgeStep::Wait | HedgeStep::Won { .. })) => {}
            Ok(Some(HedgeStep::Launch { number, wake_at })) => {
                let node = child(Parents::List(&[Parent::Node(&hedge_node)]), f64::INFINITY, None, None, None);
                let future = Box::pin(f(node.signal(), number));
                in_flight.push(InFlight { number, node, future });
                rearm(wake_at.unwrap_or(f64::INFINITY));
            }
            Ok(Some(HedgeStep::Sleep { at })) => rearm(at),
            Ok(Some(HedgeStep::Stop(stop))) => {
                let cause = match &ended_by {
                    Some(reason) => {
                        for a in in_flight.drain(..) {
                            a.node.abort(reason);
                        }
                        Some(Error::from(reason.clone()))
                    }
                    None => run.last_failed().and_then(|n| errors.get_mut(n as usize - 1)?.take()),
                };
                return Poll::Ready(Err(failed(stop, reports(run.records()), cause)));
            }
        }
        let ended = events.borrow_mut().ended.take();
        if let Some(reason) = ended {
            step = Some(run.aborted(timers::now(), own_deadline(&Error::from(reason.clone()), at)));
            ended_by = Some(reason);
            continue;
        }
        let mut i = 0;
        while step.is_none() && i < in_flight.len() {
            let Poll::Ready(result) = in_flight[i].future.as_mut().poll(cx) else {
                i += 1;
                continue;
            };
            let done = in_flight.remove(i);
            match result {
                Ok(value) => match run.succeeded(done.number, timers::now()) {
                    Ok(HedgeStep::Won { number }) => {
                        let reason = abort_error(&core::answered_first(number).to_string());
                        for a in in_flight.drain(..) {
                            a.node.abort(&reason);
                        }
                        return Poll::Ready(Ok(value));
                    }
                    other => step = Some(other),
                },
                Err(error) => {
                    let slot = done.number as usize - 1;
                    errors.resize_with(errors.len().max(slot + 1), || None);
                    errors[slot] = Some(error);
                    step = Some(run.failed(done.number, timers::now()));
                }
            }
        }
        if step.is_some() {
            continue;
        }
        let woke = std::mem::take(&mut events.borrow_mut().woke);
        if woke {
            step = Some(run.wake(timers::now()));
            continue;
        }
        // The hedge's node wakes this future (the hedge instant, a parent's abort).
        events.borrow_mut().waker = Some(cx.waker().clone());
        return Poll::Pending;
    })
    .await
}

/// The core's records as the web API reports them.
fn reports(records: &[HedgeRecord]) -> Vec<AttemptReport> {
    AttemptReport::all(records, |r| (r.number, r.started_ms, r.elapsed_ms, r.ended.as_str()))
}

/// A `DOMException`-like `AbortError`, the reason losers of a hedge are aborted with.
fn abort_error(message: &str) -> JsValue {
    let e = js_sys::Error::new(message);
    e.set_name("AbortError");
    e.into()
}
