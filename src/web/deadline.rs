//! [`Deadline`]: one absolute instant, set once at the edge and passed down,
//! with an `AbortSignal` that cancels real I/O.
//!
//! The arithmetic and validation are the core's ([`crate::core::deadline`]),
//! the same functions the JavaScript API calls. The signal, its wake-up and
//! its links to parent signals are one node of the cancellation primitive
//! (timers.rs `child`, as js/deadline.js uses js/timers.js `child`).
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
//!    the deadline leaves every parent's link in the same turn (one listener
//!    per parent signal, shared: timers.rs `links`).
//! 5. Dropping the deadline leaves nothing of it pending: no wake-up, no
//!    link (and, by the end of the turn, no listener on a parent no other
//!    node links to). Its signal, if someone holds it, stays as it is.
//! 6. Pending deadlines never keep a Node or Deno process alive.
//!
//! # Timers
//! Deadlines wait in the wake-up queues of timers.rs, behind one host timer,
//! as the JavaScript API's do: a deadline is usually dropped long before it
//! fires, and a host `setTimeout` + `clearTimeout` per deadline costs several
//! times the rest of `signal()` in Deno (BENCHMARKS.md, "Deadlines"). In
//! workerd a queue belongs to one turn of one request (a timer there dies with the request
//! that armed it); a derived deadline ([`Deadline::reserve`],
//! [`Deadline::min`]) joins the queue its source armed on, so one request's
//! thousands of derived deadlines hold one host timer.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::rc::Rc;

use web_sys::AbortSignal;

use super::timers::{self, child, Child, Node, Parents, Queue};
use super::Error;
use crate::core::deadline as core;
use crate::core::request::LimitKind;

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
    /// The node, made by the first `signal()`.
    node: RefCell<Option<Child>>,
    /// The queue of the deadline this one was derived from, when it had armed.
    home: Option<Rc<Queue>>,
    /// What set the instant (src/core/request.rs), kept by derived deadlines.
    pub(crate) limit: LimitKind,
    /// What `reserve` (or a request's fallback reserve) held back, for `to_wire`.
    pub(crate) reserve_ms: f64,
}

fn empty() -> Rc<[AbortSignal]> {
    thread_local! {
        static EMPTY: Rc<[AbortSignal]> = Rc::from(Vec::new());
    }
    EMPTY.with(Rc::clone)
}

impl Deadline {
    fn new(at: f64, parents: Rc<[AbortSignal]>) -> Self {
        Self { at, parents, node: RefCell::new(None), home: None, limit: LimitKind::Budget, reserve_ms: 0.0 }
    }

    /// A deadline derived from this one: it joins this one's queue.
    fn derived(&self, at: f64, parents: Rc<[AbortSignal]>) -> Self {
        let home = self.node.borrow().as_ref().and_then(|n| n.queue()).or_else(|| self.home.clone());
        Self { at, parents, node: RefCell::new(None), home, limit: self.limit, reserve_ms: 0.0 }
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
        Ok(Self::new(core::deadline_in(timers::now(), ms)?, empty()))
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
        let parents: Rc<[AbortSignal]> = if self.parents.is_empty() {
            // The common case, one parent: one allocation, no comparison.
            Rc::new([parent.clone()])
        } else {
            let mut parents: Vec<AbortSignal> = self.parents.iter().cloned().collect();
            if !parents.iter().any(|p| p == parent) {
                parents.push(parent.clone());
            }
            parents.into()
        };
        Self {
            at: self.at,
            parents,
            node: RefCell::new(None),
            home: self.home.clone(),
            limit: self.limit,
            reserve_ms: self.reserve_ms,
        }
    }

    /// The earliest of `deadlines`; its signal links every parent of all of them.
    ///
    /// # Errors
    /// [`Error::InvalidType`] naming `deadlines` when the list is empty.
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
        let mut first: Option<&Deadline> = None;
        let mut parents: Vec<AbortSignal> = Vec::new();
        for d in deadlines {
            first.get_or_insert(d);
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
        // As the JavaScript API's `Deadline.min()`: no deadline at all is a type fault.
        let at = at.ok_or_else(|| Error::InvalidType {
            param: "deadlines",
            code: "INVALID_TYPE",
            message: "'deadlines' must hold at least one Deadline: current value is empty".into(),
        })?;
        let parents = if parents.is_empty() { empty() } else { parents.into() };
        Ok(match first {
            Some(d) => d.derived(at, parents),
            None => Self::new(at, parents),
        })
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
        let mut d = self.derived(core::reserve(self.at, ms)?, self.parents.clone());
        d.reserve_ms = ms;
        Ok(d)
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
        let left = self.at - timers::now();
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
        timers::now() >= self.at
    }

    /// Returns while time is left; [`Error::DeadlineExceeded`] once the
    /// instant has passed (the error the signal aborts with). The check for a
    /// CPU-bound loop, where no timer can fire and the signal never aborts:
    /// call it every so many iterations, with `?`. It reads the clock (the
    /// one [`set_clock`](super::set_clock) may have swapped) and compares,
    /// nothing more; a parent's abort does not count, as for
    /// [`expired`](Self::expired).
    ///
    /// # Errors
    /// [`Error::DeadlineExceeded`] with the instant and how late the check is.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, Error};
    /// let d = Deadline::in_ms(5_000.0)?;
    /// let mut sum = 0u64;
    /// for i in 0..1_000_000u64 {
    ///     if i % 65_536 == 0 {
    ///         d.checkpoint()?;
    ///     }
    ///     sum += i;
    /// }
    /// assert_eq!(sum, 499_999_500_000);
    /// assert!(matches!(Deadline::at(0.0)?.checkpoint(), Err(Error::DeadlineExceeded { at: 0.0, .. })));
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    #[inline]
    pub fn checkpoint(&self) -> Result<(), Error> {
        let now = timers::now();
        if now >= self.at {
            return Err(Error::DeadlineExceeded { at: self.at, late_by_ms: now - self.at });
        }
        Ok(())
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
        Ok(core::budget(self.at, timers::now(), preferred_ms)?)
    }

    /// The client left: no budget, no new work, whatever the clock says.
    /// Whether a parent signal has aborted (the client left, a caller cancelled).
    pub(crate) fn parents_aborted(&self) -> bool {
        self.parents.iter().any(|p| p.aborted())
    }

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
        let budget_ms = core::admit(self.at, timers::now(), min_ms)?;
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
        if let Some(node) = self.node.borrow().as_ref() {
            return node.signal();
        }
        let node = self.make_node();
        let signal = node.signal();
        *self.node.borrow_mut() = Some(node);
        signal
    }

    /// Runs `f` with the deadline's node (made on first use, as by
    /// [`Deadline::signal`]), for nodes that hang from it (hedge.rs).
    pub(crate) fn with_node<R>(&self, f: impl FnOnce(&Child) -> R) -> R {
        if let Some(node) = self.node.borrow().as_ref() {
            return f(node);
        }
        let node = self.make_node();
        let result = f(&node);
        *self.node.borrow_mut() = Some(node);
        result
    }

    fn make_node(&self) -> Child {
        // Invariant 3, and a passed instant aborts at once (as JavaScript's `signal()`).
        let passed = timers::now() >= self.at;
        let at = if passed { f64::INFINITY } else { self.at };
        let node = child(Parents::Signals(&self.parents), at, Some(Box::new(expire)), None, self.home.clone());
        if passed && !node.aborted() {
            expire_at(&node, self.at);
        }
        node
    }
}

/// The deadline's instant came: abort with the branded `DeadlineExceeded`.
fn expire(node: &Node) {
    expire_at(node, node.at());
}

fn expire_at(node: &Node, at: f64) {
    let late = timers::now() - at;
    node.abort(&Error::DeadlineExceeded { at, late_by_ms: if late > 0.0 { late } else { 0.0 } }.into());
}

impl fmt::Debug for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deadline").field("at", &self.at).field("parents", &self.parents.len()).finish()
    }
}

/// Readable in logs: `Deadline(in 812.3 ms)` or `Deadline(passed 3.0 ms ago)`.
impl fmt::Display for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let left = self.at - timers::now();
        if left > 0.0 {
            write!(f, "Deadline(in {left:.1} ms)")
        } else {
            write!(f, "Deadline(passed {:.1} ms ago)", -left)
        }
    }
}
