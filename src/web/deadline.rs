//! [`Deadline`]: one absolute instant, set once at the edge and passed down,
//! with an `AbortSignal` that cancels real I/O.
//!
//! The arithmetic and validation are the core's ([`crate::core::deadline`]),
//! the same functions the JavaScript API calls; this file owns what only the
//! host can do: reading the clock, the timer, the `AbortController` and the
//! listeners on parent signals.
//!
//! # Invariants
//! 1. The instant never changes; derived deadlines ([`Deadline::reserve`],
//!    [`Deadline::min`]) are new values.
//! 2. A deadline owns at most one `AbortController` and at most one pending
//!    wake-up, created by the first [`Deadline::signal`]; every later call
//!    returns the same signal.
//! 3. The signal never aborts for time before `performance.now() >= at`; it
//!    aborts with the branded `DeadlineExceeded` the JavaScript API uses.
//! 4. When a parent signal aborts, the deadline's signal aborts with the
//!    parent's `reason`; whichever fires first, the wake-up is cancelled and
//!    every parent listener removed in the same turn.
//! 5. Dropping the deadline leaves nothing of it pending: no wake-up, no
//!    listener. Its signal, if someone holds it, stays as it is.
//! 6. Pending deadlines never keep a Node or Deno process alive.
//!
//! # Timers
//! Outside workerd, deadlines share one host timer through a queue ordered by
//! instant, as the JavaScript API does: a deadline is usually dropped long
//! before it fires, and a host `setTimeout` + `clearTimeout` per deadline
//! costs about 1 µs in Deno, several times the rest of `signal()`. In workerd
//! a timer belongs to the request that created it and dies with it, so a
//! shared timer would let one request's end silently cancel another request's
//! deadlines: there each deadline arms a [`Timeout`] of its own.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use web_sys::{AbortController, AbortSignal};

use super::sys::{self, Host};
use super::timers::Timeout;
use super::Error;
use crate::core::deadline as core;

/// A deadline: one instant on the `performance.now()` timeline.
///
/// Create it where the request arrives, pass `&Deadline` down, and let every
/// step ask [`Deadline::budget`] or run through [`Deadline::step`]. Dropping
/// it releases its timer and listeners.
///
/// ```
/// use edge_deadline::web::Deadline;
/// # #[wasm_bindgen_test::wasm_bindgen_test] async fn doc() { demo().await.unwrap() }
/// # async fn demo() -> Result<(), edge_deadline::web::Error> {
/// let deadline = Deadline::in_ms(2_000.0)?;
/// let mut init = web_sys::RequestInit::new();
/// init.set_signal(Some(&deadline.signal()));
/// let timeout = deadline.budget(800.0)?; // min(800, remaining)
/// # let _ = timeout; Ok(()) }
/// # fn main() {}
/// ```
pub struct Deadline {
    at: f64,
    parents: Rc<[AbortSignal]>,
    armed: RefCell<Option<Rc<Armed>>>,
}

/// Parent listeners. A wasm-bindgen `Closure` per linked deadline cost
/// ≈ 1.2 µs more than the JavaScript API's listener in Deno (its creation
/// registers a finalizer); instead each linked deadline gets a plain
/// JavaScript listener object carrying its id, and every one of them calls
/// one shared Rust dispatcher, which finds the deadline in a table.
mod links {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::rc::{Rc, Weak};

    use wasm_bindgen::prelude::*;
    use web_sys::AbortSignal;

    use super::Armed;

    #[wasm_bindgen(inline_js = r#"
export function makeListener(id, dispatch) {
  return { handleEvent: (event) => dispatch(id, event.target.reason) };
}
export function addAbort(signal, listener) {
  signal.addEventListener("abort", listener);
}
export function removeAbort(signal, listener) {
  signal.removeEventListener("abort", listener);
}
"#)]
    extern "C" {
        #[wasm_bindgen(js_name = makeListener)]
        fn make_listener(id: u32, dispatch: &JsValue) -> JsValue;
        #[wasm_bindgen(js_name = addAbort)]
        fn add_abort(signal: &AbortSignal, listener: &JsValue);
        #[wasm_bindgen(js_name = removeAbort)]
        fn remove_abort(signal: &AbortSignal, listener: &JsValue);
    }

    struct Table {
        next: u32,
        linked: HashMap<u32, Weak<Armed>>,
        dispatch: Option<JsValue>,
    }

    thread_local! {
        static TABLE: RefCell<Table> = RefCell::new(Table { next: 0, linked: HashMap::new(), dispatch: None });
    }

    fn dispatch(id: u32, reason: JsValue) {
        let armed = TABLE.with(|t| t.borrow().linked.get(&id).and_then(Weak::upgrade));
        if let Some(armed) = armed {
            armed.settle(&reason);
        }
    }

    /// A deadline's listeners on its parents; removed on drop.
    pub(super) struct Link {
        id: u32,
        listener: JsValue,
        parents: Rc<[AbortSignal]>,
    }

    impl Link {
        pub(super) fn new(armed: &Rc<Armed>, parents: Rc<[AbortSignal]>) -> Self {
            let (id, listener) = TABLE.with(|t| {
                let mut t = t.borrow_mut();
                let id = t.next;
                t.next = t.next.wrapping_add(1);
                t.linked.insert(id, Rc::downgrade(armed));
                let dispatch =
                    t.dispatch.get_or_insert_with(|| Closure::<dyn FnMut(u32, JsValue)>::new(dispatch).into_js_value());
                (id, make_listener(id, dispatch))
            });
            for parent in parents.iter() {
                add_abort(parent, &listener);
            }
            Self { id, listener, parents }
        }
    }

    impl Drop for Link {
        fn drop(&mut self) {
            for parent in self.parents.iter() {
                remove_abort(parent, &self.listener);
            }
            TABLE.with(|t| t.borrow_mut().linked.remove(&self.id));
        }
    }
}

/// The signal side of a deadline: created by the first `signal()`.
struct Armed {
    at: f64,
    controller: AbortController,
    /// In the shared queue (outside workerd) and not yet released.
    queued: Cell<bool>,
    timer: RefCell<Option<Timeout>>,
    link: RefCell<Option<links::Link>>,
}

impl Armed {
    fn settle(&self, reason: &JsValue) {
        self.release();
        if !self.controller.signal().aborted() {
            self.controller.abort_with_reason(reason);
        }
    }

    fn expire(&self) {
        let late = sys::now() - self.at;
        let reason = Error::DeadlineExceeded { at: self.at, late_by_ms: if late > 0.0 { late } else { 0.0 } };
        self.settle(&reason.into());
    }

    fn release(&self) {
        if self.queued.replace(false) {
            queue::cancel();
        }
        self.timer.borrow_mut().take();
        let link = self.link.borrow_mut().take();
        drop(link);
    }
}

fn empty() -> Rc<[AbortSignal]> {
    thread_local! {
        static EMPTY: Rc<[AbortSignal]> = Rc::from(Vec::new());
    }
    EMPTY.with(Rc::clone)
}

impl Deadline {
    fn new(at: f64, parents: Rc<[AbortSignal]>) -> Self {
        Self { at, parents, armed: RefCell::new(None) }
    }

    /// A deadline `ms` milliseconds from now.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `ms` when it is NaN, ±∞, negative or
    /// past 2^53 − 1.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::Deadline;
    /// let d = Deadline::in_ms(500.0)?;
    /// assert!(d.remaining() <= 500.0);
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    #[doc(alias = "in")]
    pub fn in_ms(ms: f64) -> Result<Self, Error> {
        Ok(Self::new(core::deadline_in(sys::now(), ms)?, empty()))
    }

    /// A deadline at the absolute `instant_ms` on the `performance.now()` timeline.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `instantMs` when it is NaN, ±∞,
    /// negative or past 2^53 − 1.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::Deadline;
    /// let d = Deadline::at(0.0)?; // long passed
    /// assert!(d.expired());
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn at(instant_ms: f64) -> Result<Self, Error> {
        Ok(Self::new(core::check_ms("instantMs", instant_ms)?, empty()))
    }

    /// The same instant, with `parent` linked: when `parent` aborts, this
    /// deadline's signal aborts with the parent's reason (a client that left,
    /// a caller's cancel). Call it before [`Deadline::signal`].
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::Deadline;
    /// let client = web_sys::AbortController::new().unwrap();
    /// let d = Deadline::in_ms(5_000.0)?.with_parent(&client.signal());
    /// client.abort();
    /// assert!(d.signal().aborted());
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn with_parent(self, parent: &AbortSignal) -> Self {
        let mut parents: Vec<AbortSignal> = self.parents.iter().cloned().collect();
        if !parents.iter().any(|p| p == parent) {
            parents.push(parent.clone());
        }
        Self::new(self.at, parents.into())
    }

    /// The earliest of `deadlines`; its signal links every parent of all of them.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `deadlines` when the list is empty.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::Deadline;
    /// let a = Deadline::in_ms(100.0)?;
    /// let b = Deadline::in_ms(900.0)?;
    /// assert_eq!(Deadline::min_of([&a, &b])?.instant_ms(), a.instant_ms());
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn min_of<'a>(deadlines: impl IntoIterator<Item = &'a Deadline>) -> Result<Self, Error> {
        let mut at: Option<f64> = None;
        let mut parents: Vec<AbortSignal> = Vec::new();
        for d in deadlines {
            at = Some(match at {
                Some(a) => core::min(a, d.at)?,
                None => d.at,
            });
            for p in d.parents.iter() {
                if !parents.iter().any(|q| q == p) {
                    parents.push(p.clone());
                }
            }
        }
        let at = at.ok_or_else(|| {
            Error::invalid("deadlines", "'deadlines' must hold at least one Deadline: current value is empty")
        })?;
        Ok(Self::new(at, if parents.is_empty() { empty() } else { parents.into() }))
    }

    /// The earlier of this deadline and `other` (linking both one's parents).
    ///
    /// ```no_run
    /// use edge_deadline::web::Deadline;
    /// let request = Deadline::in_ms(10_000.0)?;
    /// let upstream = request.min(&Deadline::in_ms(3_000.0)?);
    /// assert!(upstream.remaining() <= 3_000.0);
    /// # Ok::<(), edge_deadline::web::Error>(())
    /// ```
    pub fn min(&self, other: &Deadline) -> Deadline {
        // Two validated instants: `min_of` of two cannot fail.
        Self::min_of([self, other]).unwrap_or_else(|_| Self::new(self.at, self.parents.clone()))
    }

    /// A new deadline `ms` earlier, keeping this one's parents: time held back
    /// for work that must run after this step (a fallback, a response).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `ms` when it is NaN, ±∞, negative or
    /// past 2^53 − 1. Reserving more than is left gives an expired deadline,
    /// not an error.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::Deadline;
    /// let d = Deadline::in_ms(1_000.0)?;
    /// let work = d.reserve(200.0)?; // 200 ms kept for the fallback
    /// assert!(work.instant_ms() < d.instant_ms());
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn reserve(&self, ms: f64) -> Result<Deadline, Error> {
        Ok(Self::new(core::reserve(self.at, ms)?, self.parents.clone()))
    }

    /// The instant, in ms on the `performance.now()` timeline (JavaScript's `deadline.at`).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::Deadline;
    /// assert_eq!(Deadline::at(1_234.0)?.instant_ms(), 1_234.0);
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn instant_ms(&self) -> f64 {
        self.at
    }

    /// Milliseconds left, never negative.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::Deadline;
    /// assert_eq!(Deadline::at(0.0)?.remaining(), 0.0);
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn remaining(&self) -> f64 {
        let left = self.at - sys::now();
        if left > 0.0 {
            left
        } else {
            0.0
        }
    }

    /// True once the instant has passed (a parent's abort does not count: see
    /// `signal().aborted()`).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::Deadline;
    /// assert!(!Deadline::in_ms(1_000.0)?.expired());
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn expired(&self) -> bool {
        sys::now() >= self.at
    }

    /// `min(preferred_ms, remaining())`.
    ///
    /// # Errors
    /// [`Error::DeadlineExceeded`] when nothing is left; a parent's abort
    /// reason once a parent has aborted (the client left);
    /// [`Error::InvalidArgument`] naming `preferredMs` for NaN, ±∞ or negatives.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::Deadline;
    /// let d = Deadline::in_ms(5_000.0)?;
    /// assert_eq!(d.budget(300.0)?, 300.0);
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn budget(&self, preferred_ms: f64) -> Result<f64, Error> {
        core::check_ms("preferredMs", preferred_ms)?;
        self.check_parents()?;
        Ok(core::budget(self.at, sys::now(), preferred_ms)?)
    }

    /// The client left: no budget, no new work, whatever the clock says.
    fn check_parents(&self) -> Result<(), Error> {
        match self.parents.iter().find(|p| p.aborted()) {
            Some(parent) => Err(Error::from(parent.reason())),
            None => Ok(()),
        }
    }

    /// Runs `run(signal, budget_ms)` if at least `min_ms` is left, and returns
    /// its output; otherwise returns [`Error::InsufficientBudget`] and never
    /// calls `run`. `budget_ms` is the time left; `signal` is this deadline's.
    ///
    /// # Errors
    /// [`Error::InsufficientBudget`] (not started); a parent's abort reason
    /// once a parent has aborted (not started either); or
    /// [`Error::InvalidArgument`] naming `minMs`.
    ///
    /// ```
    /// use edge_deadline::web::Deadline;
    /// # #[wasm_bindgen_test::wasm_bindgen_test] async fn doc() { demo().await.unwrap() }
    /// # async fn demo() -> Result<(), edge_deadline::web::Error> {
    /// let d = Deadline::in_ms(1_000.0)?;
    /// let answer = d
    ///     .step(50.0, |signal, budget_ms| async move {
    ///         // pass `signal` to fetch; plan the work for `budget_ms`
    ///         let _ = (signal, budget_ms);
    ///         42
    ///     })
    ///     .await?;
    /// assert_eq!(answer, 42);
    /// # Ok(()) }
    /// # fn main() {}
    /// ```
    pub async fn step<F, Fut, T>(&self, min_ms: f64, run: F) -> Result<T, Error>
    where
        F: FnOnce(AbortSignal, f64) -> Fut,
        Fut: Future<Output = T>,
    {
        core::check_ms("minMs", min_ms)?;
        self.check_parents()?;
        let budget_ms = core::admit(self.at, sys::now(), min_ms)?;
        Ok(run(self.signal(), budget_ms).await)
    }

    /// The deadline's `AbortSignal`: one per deadline, aborted at the instant
    /// with the branded `DeadlineExceeded` (or with a parent's reason when a
    /// parent aborts first). Pass it to `fetch` and to anything that takes a
    /// signal.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::Deadline;
    /// let d = Deadline::in_ms(1_000.0)?;
    /// assert_eq!(d.signal(), d.signal());
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn signal(&self) -> AbortSignal {
        if let Some(armed) = self.armed.borrow().as_ref() {
            return armed.controller.signal();
        }
        // `AbortController::new()` only fails where there is no AbortController
        // at all, which no supported runtime is.
        let controller = AbortController::new().expect_throw("this runtime has no AbortController");
        let signal = controller.signal();
        let armed = Rc::new(Armed {
            at: self.at,
            controller,
            queued: Cell::new(false),
            timer: RefCell::new(None),
            link: RefCell::new(None),
        });
        *self.armed.borrow_mut() = Some(armed.clone());
        if let Some(parent) = self.parents.iter().find(|p| p.aborted()) {
            armed.controller.abort_with_reason(&parent.reason());
            return signal;
        }
        if !self.parents.is_empty() {
            *armed.link.borrow_mut() = Some(links::Link::new(&armed, self.parents.clone()));
        }
        arm(&armed);
        signal
    }
}

fn arm(armed: &Rc<Armed>) {
    if sys::now() >= armed.at {
        armed.expire();
        return;
    }
    if sys::host() == Host::Workerd {
        let weak = Rc::downgrade(armed);
        let timer = Timeout::at(
            armed.at,
            Box::new(move || {
                if let Some(armed) = weak.upgrade() {
                    armed.timer.borrow_mut().take();
                    armed.expire();
                }
            }),
        );
        *armed.timer.borrow_mut() = Some(timer);
    } else {
        armed.queued.set(true);
        queue::schedule(armed);
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        if let Some(armed) = self.armed.get_mut().take() {
            armed.release();
        }
    }
}

impl fmt::Debug for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deadline").field("at", &self.at).field("parents", &self.parents.len()).finish()
    }
}

/// Readable in logs: `Deadline(in 812.3 ms)` or `Deadline(passed 3.0 ms ago)`.
impl fmt::Display for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let left = self.at - sys::now();
        if left > 0.0 {
            write!(f, "Deadline(in {left:.1} ms)")
        } else {
            write!(f, "Deadline(passed {:.1} ms ago)", -left)
        }
    }
}

/// The shared wake-up queue (everywhere but workerd).
///
/// # Invariants
/// 1. Entries are `(instant, Weak<Armed>)` in a min-heap. A released deadline
///    is removed lazily: its entry stays until it reaches the top or the
///    queue is compacted, and is skipped (`Armed::queued` is false, or the
///    `Weak` is dead). `live` counts queued deadlines exactly.
/// 2. Dead entries never outnumber live ones by more than `COMPACT_SLACK`
///    plus the live count: past that the heap is rebuilt from the live ones,
///    so memory stays O(live) and each operation amortised O(log n).
/// 3. When a live entry is queued, the host timer is armed for an instant no
///    later than the earliest one's; when it fires early (Node can, by 1 ms)
///    it re-arms instead of firing anything.
/// 4. The host timer is unref'd: queued deadlines never keep a process alive.
mod queue {
    use std::cell::RefCell;
    use std::cmp::Ordering;
    use std::collections::BinaryHeap;
    use std::rc::{Rc, Weak};

    use wasm_bindgen::prelude::*;

    use super::Armed;
    use crate::web::sys;
    use crate::web::timers::timer_ms;

    const COMPACT_SLACK: usize = 64;

    struct Entry {
        at: f64,
        armed: Weak<Armed>,
    }

    impl Entry {
        fn live(&self) -> Option<Rc<Armed>> {
            self.armed.upgrade().filter(|a| a.queued.get())
        }
    }

    impl PartialEq for Entry {
        fn eq(&self, other: &Self) -> bool {
            self.at == other.at
        }
    }
    impl Eq for Entry {}
    impl PartialOrd for Entry {
        fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Entry {
        // Reversed: BinaryHeap is a max-heap, the earliest instant must be on top.
        fn cmp(&self, other: &Self) -> Ordering {
            other.at.total_cmp(&self.at)
        }
    }

    struct Queue {
        heap: BinaryHeap<Entry>,
        live: usize,
        host: JsValue,
        host_at: f64,
        wake: Option<Closure<dyn FnMut()>>,
    }

    thread_local! {
        static QUEUE: RefCell<Queue> = RefCell::new(Queue {
            heap: BinaryHeap::new(),
            live: 0,
            host: JsValue::UNDEFINED,
            host_at: f64::INFINITY,
            wake: None,
        });
    }

    pub(super) fn schedule(armed: &Rc<Armed>) {
        QUEUE.with(|q| {
            let mut q = q.borrow_mut();
            q.live += 1;
            q.heap.push(Entry { at: armed.at, armed: Rc::downgrade(armed) });
            if armed.at < q.host_at {
                arm_host(&mut q, armed.at);
            }
        });
    }

    /// One queued deadline was released (its `queued` flag already cleared).
    pub(super) fn cancel() {
        QUEUE.with(|q| {
            let mut q = q.borrow_mut();
            q.live -= 1;
            if q.heap.len() > 2 * q.live + COMPACT_SLACK {
                let entries = std::mem::take(&mut q.heap).into_vec();
                q.heap = entries.into_iter().filter(|e| e.live().is_some()).collect();
            }
        });
    }

    fn arm_host(q: &mut Queue, at: f64) {
        if !q.host.is_undefined() {
            sys::clear_timeout(&q.host);
        }
        let wake = q.wake.get_or_insert_with(|| Closure::<dyn FnMut()>::new(wake));
        let left = at - sys::now();
        q.host = sys::set_timeout(wake.as_ref().unchecked_ref(), timer_ms(if left > 0.0 { left } else { 0.0 }));
        sys::unref(&q.host);
        q.host_at = at;
    }

    fn wake() {
        let now = sys::now();
        QUEUE.with(|q| {
            let mut q = q.borrow_mut();
            q.host = JsValue::UNDEFINED;
            q.host_at = f64::INFINITY;
        });
        // One due entry at a time, fired with the queue unborrowed: firing
        // aborts a signal, and its listeners may create or drop deadlines.
        while let Some(armed) = QUEUE.with(|q| pop_due(&mut q.borrow_mut(), now)) {
            armed.expire();
        }
        QUEUE.with(|q| {
            let mut q = q.borrow_mut();
            if let Some(next) = q.heap.peek().map(|e| e.at) {
                if next < q.host_at {
                    arm_host(&mut q, next);
                }
            }
        });
    }

    /// Drops dead entries from the top; returns the earliest live one if it is due.
    fn pop_due(q: &mut Queue, now: f64) -> Option<Rc<Armed>> {
        while let Some(top) = q.heap.peek() {
            if top.live().is_none() {
                q.heap.pop();
            } else if top.at <= now {
                return q.heap.pop().and_then(|e| e.live());
            } else {
                return None;
            }
        }
        None
    }
}
