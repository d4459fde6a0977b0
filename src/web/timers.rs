//! Timers for every part of the web API that arms one (deadline.rs, stall.rs,
//! plan.rs, retry.rs, hedge.rs): the clock they read, the wake-up queues
//! behind one host timer, the one cancellation primitive ([`child`]), the
//! hold on the process ([`KeepAlive`]), and the stand-alone host timers
//! [`Timeout`] and [`sleep`]. The rules (rounding a
//! delay up, slicing past the host limit, firing or re-arming on a wake, the
//! queue's order) are the core's, in [`crate::core::timers`]; this file owns
//! the host timers, signals and listeners that follow them. It mirrors
//! js/timers.js: the same queues, the same primitive, the same invariants.
//!
//! # The clock
//! Every instant is read, and every host timer armed, through the clock:
//! the host's (`performance.now()` and the global `setTimeout` /
//! `clearTimeout`, bound as globals like gloo-timers, never through
//! `window`), or one a test installs with [`set_clock`] (as js/timers.js
//! `setClock`). A swap starts fresh wake-up queues: a queue and a
//! [`Timeout`] keep the clock they were made with, so nothing armed before
//! the swap leaks into the fake timeline.
//!
//! # Which queue
//! Outside workerd there is one queue for the whole thread, its host timer
//! unref'd. In workerd a timer belongs to the request whose code armed it and
//! is cancelled, silently, when that request ends, and an isolate serves many
//! requests: a queue there only ever holds wake-ups of one request.
//! `turn_queue()` hands out one queue per synchronous turn (one task and its
//! microtasks), since all code of one turn runs for one request. A deadline
//! keeps the queue it first armed on and what is derived from it
//! ([`Deadline::reserve`](super::Deadline::reserve), `min`, children) joins
//! that same queue, so a request deriving 20 000 deadlines holds one host
//! timer, not 20 000 of workerd's quota.
//!
//! # Invariants
//! 1. A queue's host timer, when the queue holds a finite instant, is armed
//!    for an instant no later than the earliest one's (lazily left armed when
//!    the queue empties); an entry fires only once `now >= at`: a host timer
//!    that wakes early, or at the end of a slice of the 2^31 − 1 ms host
//!    limit, re-arms instead (core invariants 1–4).
//! 2. The shared queue's host timer is unref'd: pending deadlines never keep
//!    a Node or Deno process alive. Work someone awaits (a plan step's cap,
//!    a retry attempt's timeout) waits in a second shared queue whose timer
//!    is ref'd and cleared as soon as that queue empties (`ref_queue`).
//! 3. workerd: a queue's host timer overdue when an entry is queued (its
//!    request ended and took it) is armed again, unless it was armed in this
//!    very turn; a turn queue is never handed to a later turn.
//! 4. A queue and a [`Timeout`] arm and clear their host timers on the clock
//!    they were made with, whatever [`set_clock`] did since.
//! 5. A [`Timeout`]'s callback runs at most once, never before its instant;
//!    dropping a [`Timeout`] or a [`Sleep`] clears its host timer. A
//!    [`Timeout`] keeps Node or Deno alive unless [`Timeout::unref`] was called.
//!
//! The primitive's own invariants are at [`child`].

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

use wasm_bindgen::prelude::*;
use web_sys::{AbortController, AbortSignal};

use super::sys::{self, Host};
use super::Error;
use crate::core::deadline::check_ms;
use crate::core::timers::{arm_delay, on_wake, Wake, WakeKey, WakeQueue};

// ─── The clock ───────────────────────────────────────────────────────────────

/// A clock the web API reads and arms its timers on: `now()` in ms on one
/// monotonic timeline, `set_timeout(callback, ms)` → a handle,
/// `clear_timeout(handle)`. The host's is `performance.now()` and the global
/// timers; tests install a fake one with [`set_clock`].
pub trait Clock {
    /// The instant, in ms.
    fn now(&self) -> f64;
    /// Arms `callback` to run once, `ms` (a whole number, at most 2^31 − 1) from now.
    fn set_timeout(&self, callback: &js_sys::Function, ms: f64) -> JsValue;
    /// Clears a timer armed by [`Clock::set_timeout`] (a no-op once it ran).
    fn clear_timeout(&self, handle: &JsValue);
}

thread_local! {
    static CLOCK: RefCell<Option<Rc<dyn Clock>>> = const { RefCell::new(None) };
    static FAKE: Cell<bool> = const { Cell::new(false) };
}

/// Replaces the clock every instant and timer of the web API is read from
/// (`None`: the host's), for tests where timing is the subject, and starts
/// fresh wake-up queues on it. Returns the clock that was in use (`None`:
/// the host's), to put back afterwards. Deadlines and timers armed before the
/// swap stay on the clock they were armed on.
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run() }
/// # fn run() {
/// use std::rc::Rc;
/// use edge_deadline::web::{set_clock, now_ms, Clock};
/// struct Frozen;
/// impl Clock for Frozen {
///     fn now(&self) -> f64 { 1_000.0 }
///     fn set_timeout(&self, _: &js_sys::Function, _: f64) -> wasm_bindgen::JsValue { 0.into() }
///     fn clear_timeout(&self, _: &wasm_bindgen::JsValue) {}
/// }
/// let previous = set_clock(Some(Rc::new(Frozen)));
/// assert_eq!(now_ms(), 1_000.0);
/// set_clock(previous);
/// # }
/// # fn main() {}
/// ```
pub fn set_clock(clock: Option<Rc<dyn Clock>>) -> Option<Rc<dyn Clock>> {
    FAKE.with(|f| f.set(clock.is_some()));
    let previous = CLOCK.with(|c| c.replace(clock));
    SHARED.with(|s| s.borrow_mut().take());
    SHARED_REF.with(|s| s.borrow_mut().take());
    TURN.with(|t| t.borrow_mut().queue = None);
    previous
}

/// The clock in use now (`None`: the host's).
fn current_clock() -> Option<Rc<dyn Clock>> {
    if FAKE.with(Cell::get) {
        CLOCK.with(|c| c.borrow().clone())
    } else {
        None
    }
}

/// `now()` of the clock in use.
pub(crate) fn now() -> f64 {
    if FAKE.with(Cell::get) {
        if let Some(c) = CLOCK.with(|c| c.borrow().clone()) {
            return c.now();
        }
    }
    sys::host_now()
}

fn clock_now(clock: &Option<Rc<dyn Clock>>) -> f64 {
    match clock {
        Some(c) => c.now(),
        None => sys::host_now(),
    }
}

fn clock_set(clock: &Option<Rc<dyn Clock>>, f: &js_sys::Function, ms: f64) -> JsValue {
    match clock {
        Some(c) => c.set_timeout(f, ms),
        None => sys::host_set_timeout(f, ms),
    }
}

fn clock_clear(clock: &Option<Rc<dyn Clock>>, handle: &JsValue) {
    match clock {
        Some(c) => c.clear_timeout(handle),
        None => sys::host_clear_timeout(handle),
    }
}

// ─── Wake-up queues ──────────────────────────────────────────────────────────

/// A queue of [`Node`] wake-ups behind one host timer (see "Which queue").
pub(crate) struct Queue {
    inner: RefCell<QueueInner>,
}

struct QueueInner {
    core: WakeQueue<Weak<Node>>,
    host: JsValue,
    /// Invariant 4: the clock this queue was made on.
    clock: Option<Rc<dyn Clock>>,
    unref: bool,
    /// Clear the host timer as soon as the queue empties (a ref'd timer must
    /// not keep a process alive for nothing).
    eager: bool,
    /// workerd: the turn that armed the host timer.
    host_turn: u64,
    wake: Option<Closure<dyn Fn()>>,
}

thread_local! {
    static SHARED: RefCell<Option<Rc<Queue>>> = const { RefCell::new(None) };
    static SHARED_REF: RefCell<Option<Rc<Queue>>> = const { RefCell::new(None) };
    static TURN: RefCell<Turn> = const { RefCell::new(Turn { id: 0, open: false, queue: None, end: None }) };
}

struct Turn {
    id: u64,
    open: bool,
    queue: Option<Rc<Queue>>,
    end: Option<JsValue>,
}

/// The current turn (one task and its microtasks), opened by its first caller.
fn current_turn() -> u64 {
    TURN.with(|t| {
        let mut t = t.borrow_mut();
        if !t.open {
            t.open = true;
            t.id += 1;
            let end = t.end.get_or_insert_with(|| {
                Closure::<dyn FnMut()>::new(|| {
                    TURN.with(|t| {
                        let mut t = t.borrow_mut();
                        t.open = false;
                        t.queue = None;
                    })
                })
                .into_js_value()
            });
            sys::queue_microtask(end.unchecked_ref());
        }
        t.id
    })
}

/// The queue for wake-ups arming now: the shared one, or in workerd the
/// current turn's (invariant 3).
pub(crate) fn turn_queue() -> Rc<Queue> {
    if sys::host() != Host::Workerd {
        return SHARED.with(|s| s.borrow_mut().get_or_insert_with(|| Queue::new(true, false)).clone());
    }
    current_turn();
    TURN.with(|t| t.borrow_mut().queue.get_or_insert_with(|| Queue::new(false, false)).clone())
}

/// [`turn_queue`] for wake-ups that keep a Node or Deno process alive while
/// they are pending (a running plan step's cap, a retry attempt's timeout:
/// someone is awaiting them): outside workerd, a second shared queue whose
/// host timer is ref'd, and cleared as soon as the queue empties.
pub(crate) fn ref_queue() -> Rc<Queue> {
    if sys::host() != Host::Workerd {
        return SHARED_REF.with(|s| s.borrow_mut().get_or_insert_with(|| Queue::new(false, true)).clone());
    }
    turn_queue()
}

impl Queue {
    fn new(unref: bool, eager: bool) -> Rc<Self> {
        let clock = current_clock();
        Rc::new_cyclic(|me: &Weak<Queue>| {
            let me = me.clone();
            // `Fn`: firing one wake-up may run another queue's host timer callback re-entrantly (fake clocks do).
            let wake = Closure::<dyn Fn()>::new(move || {
                if let Some(q) = me.upgrade() {
                    q.wake();
                }
            });
            Queue {
                inner: RefCell::new(QueueInner {
                    core: WakeQueue::new(),
                    host: JsValue::UNDEFINED,
                    unref: unref && clock.is_none(),
                    eager,
                    clock,
                    host_turn: 0,
                    wake: Some(wake),
                }),
            }
        })
    }

    fn schedule(&self, at: f64, node: Weak<Node>) -> WakeKey {
        let mut q = self.inner.borrow_mut();
        let key = q.core.schedule(at, node);
        Self::arm(&mut q);
        key
    }

    fn cancel(&self, key: WakeKey) {
        let mut q = self.inner.borrow_mut();
        q.core.cancel(key);
        if q.eager && q.core.is_empty() && !q.host.is_undefined() {
            let host = std::mem::replace(&mut q.host, JsValue::UNDEFINED);
            clock_clear(&q.clock, &host);
            q.core.on_host_cleared();
        }
    }

    /// Arms the host timer if the core says so.
    fn arm(q: &mut QueueInner) {
        let workerd = sys::host() == Host::Workerd;
        let may_be_dead = workerd && q.host_turn != current_turn();
        if !may_be_dead && !q.core.earlier_than_host() {
            return; // the common case: no clock read
        }
        let now = clock_now(&q.clock);
        let Some(at) = q.core.poll_arm(now, may_be_dead) else { return };
        if !q.host.is_undefined() {
            clock_clear(&q.clock, &q.host);
        }
        let Some(wake) = q.wake.as_ref() else { return };
        q.host = clock_set(&q.clock, wake.as_ref().unchecked_ref(), arm_delay(at, now));
        if q.unref {
            sys::unref(&q.host);
        }
        if workerd {
            q.host_turn = current_turn();
        }
    }

    fn wake(&self) {
        let now = {
            let mut q = self.inner.borrow_mut();
            q.host = JsValue::UNDEFINED;
            q.core.on_host_wake();
            clock_now(&q.clock)
        };
        // One due entry at a time, with the queue unborrowed: firing aborts a
        // signal, and its listeners may arm or drop wake-ups.
        loop {
            let due = self.inner.borrow_mut().core.pop_due(now);
            let Some((_, node)) = due else { break };
            if let Some(node) = node.upgrade() {
                node.fire();
            }
        }
        Self::arm(&mut self.inner.borrow_mut());
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        let q = self.inner.get_mut();
        if !q.host.is_undefined() {
            clock_clear(&q.clock, &q.host);
        }
    }
}

// ─── The cancellation primitive ──────────────────────────────────────────────

/// One parent of a [`child`], in a [`Parents::List`].
#[derive(Clone, Copy)]
pub(crate) enum Parent<'a> {
    /// An `AbortSignal` (a client's, a caller's, another copy's deadline).
    Signal(&'a AbortSignal),
    /// Another node (a child, a deadline's): joined
    /// without a listener, and its queue becomes the child's.
    Node(&'a Child),
}

/// A [`child`]'s parents, in order (`on_abort`'s `by` is the index here).
#[derive(Clone, Copy)]
pub(crate) enum Parents<'a> {
    /// Any mix of signals and nodes.
    List(&'a [Parent<'a>]),
    /// `AbortSignal`s only (a [`Deadline`](super::Deadline)'s own): the link
    /// shares the list as it is, without copying it.
    Signals(&'a Rc<[AbortSignal]>),
}

type OnTime = Box<dyn FnMut(&Node)>;
/// `(reason, by)`: `by` is the index of the parent that aborted, in the order given.
type OnAbort = Box<dyn FnOnce(&JsValue, usize)>;

/// A node of the cancellation tree: see [`child`].
pub(crate) struct Node {
    me: Weak<Node>,
    state: RefCell<NodeState>,
    on_time: RefCell<Option<OnTime>>,
    on_abort: RefCell<Option<OnAbort>>,
}

struct NodeState {
    at: f64,
    queue: Option<Rc<Queue>>,
    key: Option<WakeKey>,
    controller: Option<AbortController>,
    aborted: bool,
    reason: JsValue,
    /// Linked to its parents (until it aborts or is disposed).
    live: bool,
    /// The node parent whose list holds this one: (parent, slot there, index given).
    up: Option<(Weak<Node>, usize, usize)>,
    kids: Vec<Option<Weak<Node>>>,
    free_kids: Vec<usize>,
    link: Option<links::Link>,
}

/// The owner of a [`Node`]: dropping it disposes the node (its wake-up and
/// links go; its signal, if anyone holds it, stays as it is).
pub(crate) struct Child(Rc<Node>);

impl std::ops::Deref for Child {
    type Target = Node;
    fn deref(&self) -> &Node {
        &self.0
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.0.dispose();
    }
}

/// The cancellation primitive (js/timers.js `child`): a node hanging from
/// `parents` ([`Parents`]) that aborts with the first parent's abort
/// reason, and wakes at `at` (`f64::INFINITY`: never) with `on_time`.
///
/// `queue`: where the wake-up waits; default: the first node parent's queue,
/// else [`turn_queue`].
///
/// # Invariants
/// 1. A child aborts at most once; its signal, once asked for, is the same
///    `AbortSignal` every time, and carries the child's reason.
/// 2. `on_time` is called only once `now() >= at`, at most once per
///    [`child`] or [`Node::rearm`], never after the child aborted or was
///    disposed. The child stays linked after `on_time`: the callback aborts,
///    re-arms or disposes it.
/// 3. When a parent aborts, the child aborts with the parent's reason in the
///    same turn, then its own children, then `on_abort(reason, by)` runs
///    (`by`: the parent's index as given). A parent already aborted when the
///    child is made aborts it during [`child`] (`on_abort` included).
/// 4. Once a child aborted or was disposed it is in no queue, no parent's
///    list and no parent signal's link: nothing of it is pending (a link's
///    one listener, once its last member left, goes at the end of the turn;
///    see `links`). Its children, when it is disposed, are no longer told
///    (they keep their own wake-ups).
pub(crate) fn child(
    parents: Parents<'_>,
    at: f64,
    on_time: Option<OnTime>,
    on_abort: Option<OnAbort>,
    queue: Option<Rc<Queue>>,
) -> Child {
    let c = Child::new(at, on_time, on_abort);
    let linked = match parents {
        Parents::List(list) => list.is_empty() || c.link(list),
        Parents::Signals(signals) => c.link_signals(signals),
    };
    if linked {
        c.start(queue);
    }
    c
}

impl Child {
    fn new(at: f64, on_time: Option<OnTime>, on_abort: Option<OnAbort>) -> Self {
        Child(Rc::new_cyclic(|me| Node {
            me: me.clone(),
            state: RefCell::new(NodeState {
                at,
                queue: None,
                key: None,
                controller: None,
                aborted: false,
                reason: JsValue::UNDEFINED,
                live: true,
                up: None,
                kids: Vec::new(),
                free_kids: Vec::new(),
                link: None,
            }),
            on_time: RefCell::new(on_time),
            on_abort: RefCell::new(on_abort),
        }))
    }

    /// Picks the home queue (`queue`, else the node parent's, else
    /// [`turn_queue`]) for good, and queues the wake-up.
    fn start(&self, queue: Option<Rc<Queue>>) {
        let up = self.state.borrow().up.as_ref().and_then(|(p, ..)| p.upgrade());
        let home = queue.or_else(|| up.and_then(|p| p.queue())).unwrap_or_else(turn_queue);
        let at = {
            let mut s = self.state.borrow_mut();
            s.queue = Some(home.clone());
            s.at
        };
        if at < f64::INFINITY {
            let key = home.schedule(at, self.me.clone());
            self.state.borrow_mut().key = Some(key);
        }
    }
}

impl Node {
    /// The node's `AbortSignal`, made on first use (aborted already if the node is).
    pub(crate) fn signal(&self) -> AbortSignal {
        let mut s = self.state.borrow_mut();
        if let Some(c) = s.controller.as_ref() {
            return c.signal();
        }
        // Only fails where there is no AbortController at all: no supported runtime.
        let c = sys::abort_controller().expect_throw("this runtime has no AbortController");
        if s.aborted {
            c.abort_with_reason(&s.reason);
        }
        let signal = c.signal();
        s.controller = Some(c);
        signal
    }

    /// True once the node aborted.
    pub(crate) fn aborted(&self) -> bool {
        self.state.borrow().aborted
    }

    /// Why it aborted (`undefined` until then).
    pub(crate) fn reason(&self) -> JsValue {
        self.state.borrow().reason.clone()
    }

    /// The pending instant (`INFINITY`: none).
    pub(crate) fn at(&self) -> f64 {
        self.state.borrow().at
    }

    /// The queue the node's wake-ups wait in.
    pub(crate) fn queue(&self) -> Option<Rc<Queue>> {
        self.state.borrow().queue.clone()
    }

    /// Moves the wake-up to `at` (`INFINITY`: none); a no-op once the node
    /// aborted or was disposed.
    pub(crate) fn rearm(&self, at: f64) {
        let (queue, key) = {
            let mut s = self.state.borrow_mut();
            if !s.live {
                return;
            }
            s.at = at;
            (s.queue.clone(), s.key.take())
        };
        let Some(queue) = queue else { return };
        if let Some(key) = key {
            queue.cancel(key);
        }
        if at < f64::INFINITY {
            let key = queue.schedule(at, self.me.clone());
            self.state.borrow_mut().key = Some(key);
        }
    }

    /// Aborts the node with `reason` (once): releases its wake-up and links,
    /// aborts its signal, then tells its children. `on_abort` is not called
    /// (it is for the parents' aborts).
    pub(crate) fn abort(&self, reason: &JsValue) {
        if self.state.borrow().aborted {
            return;
        }
        self.release();
        let (controller, kids) = {
            let mut s = self.state.borrow_mut();
            s.aborted = true;
            s.reason = reason.clone();
            s.free_kids.clear();
            (s.controller.clone(), std::mem::take(&mut s.kids))
        };
        if let Some(c) = controller {
            c.abort_with_reason(reason);
        }
        for kid in kids.into_iter().flatten() {
            if let Some(kid) = kid.upgrade() {
                let by = {
                    let mut k = kid.state.borrow_mut();
                    k.up.take().map_or(0, |(_, _, by)| by)
                };
                kid.parent_aborted(reason, by);
            }
        }
    }

    /// Releases the wake-up and every link; the signal, if any, stays as it
    /// is. No callback runs. Children are no longer told.
    pub(crate) fn dispose(&self) {
        self.release();
        let kids = {
            let mut s = self.state.borrow_mut();
            if s.kids.is_empty() {
                return;
            }
            s.free_kids.clear();
            std::mem::take(&mut s.kids)
        };
        for kid in kids.into_iter().flatten() {
            if let Some(kid) = kid.upgrade() {
                kid.state.borrow_mut().up = None;
            }
        }
    }

    fn parent_aborted(&self, reason: &JsValue, by: usize) {
        if self.state.borrow().aborted {
            return;
        }
        self.abort(reason);
        let on_abort = self.on_abort.borrow_mut().take();
        self.on_time.borrow_mut().take();
        if let Some(f) = on_abort {
            f(reason, by);
        }
    }

    /// The queue popped this node's wake-up.
    fn fire(&self) {
        {
            let mut s = self.state.borrow_mut();
            s.key = None;
            if !s.live {
                return;
            }
        }
        // Invariant 2: the wake-up came on its instant (the queue only pops due entries).
        let callback = self.on_time.borrow_mut().take();
        if let Some(mut f) = callback {
            f(self);
            let mut slot = self.on_time.borrow_mut();
            if slot.is_none() && self.state.borrow().live {
                *slot = Some(f);
            }
        }
    }

    /// Out of the queue, the parent's list and the parent listeners.
    fn release(&self) {
        let (up, link) = {
            let mut s = self.state.borrow_mut();
            if !s.live {
                return;
            }
            s.live = false;
            if let (Some(q), Some(k)) = (s.queue.as_ref(), s.key) {
                q.cancel(k); // borrows the queue only, never a node
            }
            s.key = None;
            (s.up.take(), s.link.take())
        };
        if let Some((parent, slot, _)) = up {
            if let Some(parent) = parent.upgrade() {
                let mut p = parent.state.borrow_mut();
                if let Some(entry) = p.kids.get_mut(slot) {
                    if entry.take().is_some() {
                        p.free_kids.push(slot);
                    }
                }
            }
        }
        drop(link);
    }

    /// Links the parents; false when one had aborted (then this node has too).
    fn link(&self, parents: &[Parent<'_>]) -> bool {
        let mut signals: Vec<AbortSignal> = Vec::new();
        let mut indices: Vec<usize> = Vec::new();
        for (i, p) in parents.iter().enumerate() {
            let signal = match p {
                Parent::Node(node) => {
                    if node.aborted() {
                        return self.born_aborted(&node.reason(), i);
                    }
                    if self.state.borrow().up.is_none() && node.state.borrow().live {
                        self.join_kids(node, i);
                        continue;
                    }
                    node.signal()
                }
                Parent::Signal(s) => (*s).clone(),
            };
            if signal.aborted() {
                return self.born_aborted(&signal.reason(), i);
            }
            signals.push(signal);
            indices.push(i);
        }
        if !signals.is_empty() {
            match links::Link::new(&self.me, &signals, Some(&indices)) {
                Ok(link) => self.state.borrow_mut().link = Some(link),
                // Checked above: only a signal that aborted since (no supported runtime does that).
                Err(i) => return self.born_aborted(&signals[i].reason(), indices[i]),
            }
        }
        true
    }

    /// [`link`](Self::link) for [`Parents::Signals`]: the link keeps the
    /// list itself (one reference count, no copy).
    fn link_signals(&self, signals: &Rc<[AbortSignal]>) -> bool {
        if signals.is_empty() {
            return true;
        }
        // Joining checks each signal's `aborted` on the way (one crossing per signal, not two).
        match links::Link::new(&self.me, signals, None) {
            Ok(link) => {
                self.state.borrow_mut().link = Some(link);
                true
            }
            Err(i) => self.born_aborted(&signals[i].reason(), i),
        }
    }

    fn join_kids(&self, parent: &Node, by: usize) {
        let mut p = parent.state.borrow_mut();
        let slot = match p.free_kids.pop() {
            Some(slot) => {
                p.kids[slot] = Some(self.me.clone());
                slot
            }
            None => {
                p.kids.push(Some(self.me.clone()));
                p.kids.len() - 1
            }
        };
        drop(p);
        self.state.borrow_mut().up = Some((parent.me.clone(), slot, by));
    }

    fn born_aborted(&self, reason: &JsValue, by: usize) -> bool {
        self.parent_aborted(reason, by); // undoes the links made so far
        false
    }
}

/// Parent listeners, as js/timers.js `ParentLink`: one "abort" listener per
/// parent signal, shared by every node linked to it, its removal deferred to
/// the end of the turn, so a deadline linked to a parent and made and dropped
/// per call in a loop adds one listener per turn, not one per deadline. A
/// wasm-bindgen `Closure` per linked node costs far more than the JavaScript
/// API's listener in Deno (its creation registers a finalizer), and so do an
/// `addEventListener` and a `removeEventListener` per node (BENCHMARKS.md,
/// "Rust API (`web` feature)").
///
/// JavaScript keeps only the signal → link map (a `WeakMap`, the one thing
/// Rust cannot key on) and the listener; the members live here, in a table
/// of links. A node joins a signal's link with one call (which also reads
/// `aborted`) and leaves it without any: the last member to leave asks for a
/// sweep at the end of the turn, which removes the listener if nobody joined
/// since. An abort calls the one shared Rust dispatcher with the link's slot,
/// which aborts the members in the order they joined.
mod links {
    use std::cell::RefCell;
    use std::rc::Weak;

    use wasm_bindgen::prelude::*;
    use web_sys::AbortSignal;

    use super::Node;

    #[wasm_bindgen(inline_js = r#"
let dispatch = null;
let sweep = null;
const links = new WeakMap();
export function setHandlers(onAbort, onSweep) {
  dispatch = onAbort;
  sweep = onSweep;
}
export function join(signal, free) {
  if (signal.aborted) return -1;
  const link = links.get(signal);
  if (link !== undefined) return link.slot;
  const onAbort = () => {
    unlisten(signal);
    dispatch(free, signal);
  };
  links.set(signal, { slot: free, onAbort });
  signal.addEventListener("abort", onAbort);
  return free;
}
export function unlisten(signal) {
  const link = links.get(signal);
  if (link === undefined) return;
  links.delete(signal);
  signal.removeEventListener("abort", link.onAbort);
}
export function sweepLater(slot) {
  queueMicrotask(() => sweep(slot));
}
"#)]
    extern "C" {
        #[wasm_bindgen(js_name = setHandlers)]
        fn set_handlers(dispatch: &JsValue, sweep: &JsValue);
        /// The slot of the signal's link, made with slot `free` if it had
        /// none (its listener added); −1 when the signal had aborted.
        fn join(signal: &AbortSignal, free: u32) -> i32;
        /// Removes the signal's listener and forgets its link.
        fn unlisten(signal: &AbortSignal);
        /// Calls the sweep for `slot` at the end of this turn.
        #[wasm_bindgen(js_name = sweepLater)]
        fn sweep_later(slot: u32);
    }

    /// One node linked to one signal: the link's slot and generation, the
    /// node's place among its members.
    #[derive(Clone, Copy)]
    struct Member {
        slot: u32,
        gen: u32,
        index: usize,
    }

    /// The members of one signal's link.
    struct LinkState {
        signal: AbortSignal,
        /// Each member: the node, the index its parent was given at, and
        /// when it joined (members abort in that order, as with listeners).
        members: Vec<Option<(Weak<Node>, usize, u64)>>,
        free: Vec<usize>,
        count: usize,
        /// A sweep is asked for at the end of this turn.
        sweeping: bool,
    }

    struct Table {
        links: Vec<Option<LinkState>>,
        /// Each slot's generation, bumped when its link goes: a member of a
        /// link that went leaves nothing of a later link in the same slot.
        gens: Vec<u32>,
        free: Vec<u32>,
        joins: u64,
        handlers: bool,
    }

    thread_local! {
        static TABLE: RefCell<Table> =
            const { RefCell::new(Table { links: Vec::new(), gens: Vec::new(), free: Vec::new(), joins: 0, handlers: false }) };
    }

    impl Table {
        /// Forgets the link in `slot`: its slot is free, its members stale.
        fn remove(&mut self, slot: u32) -> Option<LinkState> {
            let link = self.links.get_mut(slot as usize)?.take()?;
            self.gens[slot as usize] = self.gens[slot as usize].wrapping_add(1);
            self.free.push(slot);
            Some(link)
        }
    }

    /// The signal of the link in `slot` aborted (its listener is gone): its
    /// live members abort with its reason, in the order they joined.
    fn dispatch(slot: u32, signal: AbortSignal) {
        let Some(link) = TABLE.with(|t| t.borrow_mut().remove(slot)) else { return };
        let mut members: Vec<_> = link.members.into_iter().flatten().collect();
        members.sort_unstable_by_key(|m| m.2);
        let reason = signal.reason();
        for (node, by, _) in members {
            // A member an earlier one's abort disposed or aborted is left alone.
            if let Some(node) = node.upgrade() {
                if node.state.borrow().live {
                    node.parent_aborted(&reason, by);
                }
            }
        }
    }

    /// The end of the turn in which the link in `slot` lost its last member:
    /// its listener goes unless a member joined since.
    fn sweep(slot: u32) {
        let gone = TABLE.with(|t| {
            let mut t = t.borrow_mut();
            let link = t.links.get_mut(slot as usize)?.as_mut()?;
            link.sweeping = false;
            if link.count > 0 {
                return None;
            }
            t.remove(slot)
        });
        if let Some(link) = gone {
            unlisten(&link.signal);
        }
    }

    /// Joins `node` to `signal`'s link as its parent `by`; `None` when the
    /// signal had aborted.
    fn join_one(node: &Weak<Node>, signal: &AbortSignal, by: usize) -> Option<Member> {
        let free = TABLE.with(|t| {
            let mut t = t.borrow_mut();
            if !t.handlers {
                t.handlers = true;
                // `Fn`: a node's abort runs its own signal's listeners, which may dispatch again.
                let dispatch = Closure::<dyn Fn(u32, AbortSignal)>::new(dispatch).into_js_value();
                let sweep = Closure::<dyn Fn(u32)>::new(sweep).into_js_value();
                set_handlers(&dispatch, &sweep);
            }
            t.free.last().copied().unwrap_or(t.links.len() as u32)
        });
        let slot = u32::try_from(join(signal, free)).ok()?;
        TABLE.with(|t| {
            let mut t = t.borrow_mut();
            let t = &mut *t;
            let i = slot as usize;
            if slot == free && !matches!(t.links.get(i), Some(Some(_))) {
                // A new link, in the free slot.
                if t.free.last() == Some(&slot) {
                    t.free.pop();
                } else {
                    t.links.push(None);
                    t.gens.push(0);
                }
                t.links[i] = Some(LinkState {
                    signal: signal.clone(),
                    members: Vec::new(),
                    free: Vec::new(),
                    count: 0,
                    sweeping: false,
                });
            }
            t.joins += 1;
            let entry = Some((node.clone(), by, t.joins));
            let link = t.links[i].as_mut()?;
            let index = match link.free.pop() {
                Some(index) => {
                    link.members[index] = entry;
                    index
                }
                None => {
                    link.members.push(entry);
                    link.members.len() - 1
                }
            };
            link.count += 1;
            Some(Member { slot, gen: t.gens[i], index })
        })
    }

    fn leave(m: Member) {
        let sweep = TABLE.with(|t| {
            let mut t = t.borrow_mut();
            if t.gens.get(m.slot as usize) != Some(&m.gen) {
                return None; // the link went (its signal aborted)
            }
            let link = t.links.get_mut(m.slot as usize)?.as_mut()?;
            link.members.get_mut(m.index)?.take()?;
            link.count -= 1;
            if link.count > 0 {
                link.free.push(m.index);
                return None;
            }
            link.members.clear();
            link.free.clear();
            if link.sweeping {
                return None;
            }
            link.sweeping = true;
            Some(m.slot)
        });
        if let Some(slot) = sweep {
            sweep_later(slot);
        }
    }

    /// A node's memberships in its signal parents' links; it leaves them on drop.
    pub(super) struct Link {
        first: Member,
        rest: Vec<Member>,
    }

    impl Link {
        /// Joins `node` to the link of each of `signals` (parent
        /// `indices[i]`, or `i`); `Err(i)` when `signals[i]` had aborted
        /// (then it joined none). `signals` is not empty.
        pub(super) fn new(
            node: &Weak<Node>,
            signals: &[AbortSignal],
            indices: Option<&[usize]>,
        ) -> Result<Self, usize> {
            let mut first = None;
            let mut rest = Vec::new();
            for (i, s) in signals.iter().enumerate() {
                let by = indices.and_then(|x| x.get(i).copied()).unwrap_or(i);
                match join_one(node, s, by) {
                    Some(m) if first.is_none() => first = Some(m),
                    Some(m) => rest.push(m),
                    None => {
                        first.into_iter().chain(rest).for_each(leave);
                        return Err(i);
                    }
                }
            }
            first.map(|first| Self { first, rest }).ok_or(0)
        }
    }

    impl Drop for Link {
        fn drop(&mut self) {
            leave(self.first);
            for m in self.rest.drain(..) {
                leave(m);
            }
        }
    }
}

// ─── Keeping Node or Deno alive ──────────────────────────────────────────────

/// A hold on the process (js/keepalive.js `hold` / `releaseHold`): while any
/// is alive, one ref'd host interval keeps Node or Deno from exiting, for
/// work someone awaits whose wake-ups wait in an unref'd queue (a stream
/// wrapper waiting on its source). The interval is made at the first hold
/// and only ref'd or unref'd after: a hold costs a counter and, at 0 ↔ 1, a
/// ref toggle. Dropping the hold releases it.
pub(crate) struct KeepAlive(());

thread_local! {
    static KEEP: RefCell<(u32, Option<JsValue>)> = const { RefCell::new((0, None)) };
}

impl KeepAlive {
    /// Takes a hold; `None` where there is no process to keep alive (workerd)
    /// and under a test's clock (its timeline is not the process's).
    pub(crate) fn take() -> Option<Self> {
        if FAKE.with(Cell::get) || sys::host() == Host::Workerd {
            return None;
        }
        KEEP.with(|k| {
            let mut k = k.borrow_mut();
            k.0 += 1;
            if k.0 == 1 {
                match &k.1 {
                    Some(interval) => sys::reref(interval),
                    None => {
                        let noop = Closure::<dyn Fn()>::new(|| {}).into_js_value();
                        k.1 = Some(sys::host_set_interval(noop.unchecked_ref(), crate::core::timers::MAX_TIMER_MS));
                    }
                }
            }
        });
        Some(Self(()))
    }
}

impl Drop for KeepAlive {
    fn drop(&mut self) {
        KEEP.with(|k| {
            let mut k = k.borrow_mut();
            k.0 -= 1;
            if k.0 == 0 {
                if let Some(interval) = &k.1 {
                    sys::unref(interval);
                }
            }
        });
    }
}

// ─── Stand-alone host timers ─────────────────────────────────────────────────

struct Shared {
    at: f64,
    /// Invariant 4: the clock this timer was made on.
    clock: Option<Rc<dyn Clock>>,
    handle: RefCell<JsValue>,
    unref: Cell<bool>,
    callback: RefCell<Option<Box<dyn FnOnce()>>>,
    closure: RefCell<Option<Closure<dyn FnMut()>>>,
}

impl Shared {
    fn arm(&self, delay: f64) {
        let closure = self.closure.borrow();
        let Some(closure) = closure.as_ref() else { return };
        let id = clock_set(&self.clock, closure.as_ref().unchecked_ref(), delay);
        if self.unref.get() {
            sys::unref(&id);
        }
        *self.handle.borrow_mut() = id;
    }

    fn fire(self: &Rc<Self>) {
        if let Wake::Rearm(delay) = on_wake(self.at, clock_now(&self.clock)) {
            self.arm(delay); // early, or a slice of a long delay
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
        let at = crate::core::deadline::deadline_in(now(), check_ms("ms", ms)?)?;
        Ok(Self::at(at, Box::new(callback)))
    }

    /// A timer for the (validated) instant `at`.
    pub(crate) fn at(at: f64, callback: Box<dyn FnOnce()>) -> Self {
        let clock = current_clock();
        let now = clock_now(&clock);
        let shared = Rc::new(Shared {
            at,
            clock,
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
        shared.arm(arm_delay(at, now));
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
        if self.shared.clock.is_none() {
            self.shared.unref.set(true);
            let handle = self.shared.handle.borrow();
            if !handle.is_undefined() {
                sys::unref(&handle);
            }
        }
        self
    }

    /// The instant the callback is due, in ms on the clock's timeline
    /// ([`now_ms`](super::now_ms)).
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
            clock_clear(&self.shared.clock, &handle);
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
    let at = crate::core::deadline::deadline_in(now(), check_ms("ms", ms)?)?;
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
