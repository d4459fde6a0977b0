//! Timer arithmetic and the wake-up queue: the rules both hosts follow when
//! they turn an instant into a host `setTimeout`.
//!
//! # Why here
//! Every wake-up of the package (a deadline's instant, a plan step's cap, a
//! retry attempt's timeout, a backoff sleep, a stall limit) is an instant on
//! the clock's timeline, while a host timer takes a delay, fires early now and
//! then (Node's by up to 1 ms), and fires *at once* past 2^31 − 1 ms. Turning
//! the one into the other, and deciding when a wake is real, is written once,
//! here: [`arm_delay`] and [`on_wake`]. js/timers.js and src/web/timers.rs
//! own the host timers; src/web/timers.rs calls these rules, and js/timers.js
//! keeps its own copies on its hot path: `timerMs`, pinned to `timer_ms` by
//! the `timers.timerMs` rows of tests/conformance/cases.json, and its heap's
//! order, pinned to [`WakeQueue`]'s by the `timers.order` rows.
//!
//! # Why a queue behind one host timer
//! Deadlines are made per request and mostly dropped long before they fire,
//! and a host `setTimeout` + `clearTimeout` costs more than the rest of a
//! deadline in Deno and workerd (BENCHMARKS.md, "Deadlines"). [`WakeQueue`]
//! orders pending instants with removable handles, so a host keeps one timer
//! armed for the earliest and arms or disarms a wake-up without a host call.
//! It is sans-IO: time comes in as `now_ms`, and what to arm comes out of
//! [`WakeQueue::poll_arm`].
//!
//! # Invariants (each is a property test in this module)
//! 1. [`arm_delay`] is a whole number of ms in `0 ..= MAX_TIMER_MS`, and a
//!    timer armed with it at `now` fires no earlier than `at` unless the delay
//!    was clamped to [`MAX_TIMER_MS`] (then [`on_wake`] re-arms).
//! 2. [`on_wake`] says [`Wake::Fire`] only once `now >= at`.
//! 3. An entry is in the queue at most once; [`WakeQueue::pop_due`] returns
//!    it at most once, only once `now >= at`, and never after it was
//!    cancelled. Due entries come out in instant order (ties in the order
//!    they were scheduled).
//! 4. After [`WakeQueue::poll_arm`], whenever an entry with a finite instant
//!    is queued, the host timer is armed for an instant no later than the
//!    earliest one's. It may stay armed after the queue empties (lazily):
//!    it then fires once, finds nothing due, and stops.
//! 5. Nothing here panics: NaN instants wait forever (as `Infinity`), stale
//!    handles are ignored.

pub use crate::core::deadline::MAX_TIMER_MS;

/// The delay to arm a host timer with for a wait of `ms`: rounded up, so a
/// timer never fires before its instant, and clamped to the host limit
/// ([`MAX_TIMER_MS`]); a wait past it is reached in slices, re-armed by
/// [`on_wake`]. Negative and NaN waits are 0 (the instant has passed, or
/// there is nothing sane to wait for).
///
/// ```
/// use edge_deadline::core::timers::{timer_ms, MAX_TIMER_MS};
/// assert_eq!(timer_ms(0.2), 1.0);
/// assert_eq!(timer_ms(1e12), MAX_TIMER_MS);
/// assert_eq!(timer_ms(-3.0), 0.0);
/// ```
pub fn timer_ms(ms: f64) -> f64 {
    if ms >= MAX_TIMER_MS {
        MAX_TIMER_MS
    } else if ms > 0.0 {
        ms.ceil()
    } else {
        0.0 // passed, -0, or NaN
    }
}

/// The delay to arm a host timer with at `now_ms` for the instant `at_ms`:
/// [`timer_ms`] of what is left.
///
/// ```
/// use edge_deadline::core::timers::arm_delay;
/// assert_eq!(arm_delay(110.0, 100.5), 10.0); // 9.5 ms left, rounded up
/// assert_eq!(arm_delay(100.0, 130.0), 0.0); // passed: at once
/// ```
pub fn arm_delay(at_ms: f64, now_ms: f64) -> f64 {
    timer_ms(at_ms - now_ms)
}

/// What a host timer that woke at `now` for the instant `at` must do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Wake {
    /// The instant came: run the callback.
    Fire,
    /// The host woke early (Node's can, by 1 ms) or at the end of one slice
    /// of a wait past the host limit: arm again with this delay (ms).
    Rearm(f64),
}

/// Fire, or re-arm with a delay: the decision of a host timer armed for
/// `at_ms` that woke at `now_ms`.
///
/// ```
/// use edge_deadline::core::timers::{on_wake, Wake};
/// assert_eq!(on_wake(100.0, 100.0), Wake::Fire);
/// assert_eq!(on_wake(100.0, 99.2), Wake::Rearm(1.0));
/// ```
pub fn on_wake(at_ms: f64, now_ms: f64) -> Wake {
    if now_ms >= at_ms {
        Wake::Fire
    } else {
        Wake::Rearm(arm_delay(at_ms, now_ms))
    }
}

/// A handle to a queued wake-up, from [`WakeQueue::schedule`]. A handle of an
/// entry that fired or was cancelled is stale: every method ignores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WakeKey {
    slot: u32,
    generation: u32,
}

struct Slot<T> {
    generation: u32,
    /// Position in `heap`, `NONE` when free.
    pos: u32,
    at: f64,
    seq: u64,
    value: Option<T>,
}

const NONE: u32 = u32::MAX;

/// Pending instants, ordered, with removable handles, behind one host timer.
///
/// The host drives it: [`schedule`](Self::schedule) and
/// [`cancel`](Self::cancel) as wake-ups come and go, then
/// [`poll_arm`](Self::poll_arm) for the instant its one timer must be armed
/// for (if it must be re-armed at all); when that timer fires,
/// [`on_host_wake`](Self::on_host_wake), then [`pop_due`](Self::pop_due)
/// until it returns `None`, then `poll_arm` again.
///
/// ```
/// use edge_deadline::core::timers::WakeQueue;
/// let mut q = WakeQueue::new();
/// let late = q.schedule(30.0, "late");
/// q.schedule(10.0, "early");
/// assert_eq!(q.poll_arm(0.0, false), Some(10.0)); // arm the host timer for 10
/// assert_eq!(q.poll_arm(0.0, false), None); // already armed
/// q.cancel(late);
/// q.on_host_wake();
/// assert_eq!(q.pop_due(10.0).map(|(_, v)| v), Some("early"));
/// assert_eq!(q.pop_due(10.0), None);
/// ```
pub struct WakeQueue<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    /// Slot indices, a binary min-heap by `(at, seq)`.
    heap: Vec<u32>,
    seq: u64,
    /// The instant the host timer is armed for; `INFINITY` when none is.
    host_at: f64,
}

impl<T> Default for WakeQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> core::fmt::Debug for WakeQueue<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("WakeQueue")
            .field("len", &self.heap.len())
            .field("next_at", &self.next_at())
            .field("host_at", &self.host_at)
            .finish()
    }
}

impl<T> WakeQueue<T> {
    /// An empty queue with no host timer armed.
    pub const fn new() -> Self {
        Self { slots: Vec::new(), free: Vec::new(), heap: Vec::new(), seq: 0, host_at: f64::INFINITY }
    }

    /// How many wake-ups are queued.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The earliest queued instant (`None` when empty).
    pub fn next_at(&self) -> Option<f64> {
        self.heap.first().map(|&s| self.slots[s as usize].at)
    }

    /// The instant the host timer is armed for, as far as the queue knows
    /// (`None` when it is not armed).
    pub fn host_at(&self) -> Option<f64> {
        if self.host_at < f64::INFINITY {
            Some(self.host_at)
        } else {
            None
        }
    }

    /// Queues `value` to come out of [`pop_due`](Self::pop_due) once
    /// `now >= at_ms`. A NaN instant waits forever, as `Infinity` does.
    pub fn schedule(&mut self, at_ms: f64, value: T) -> WakeKey {
        let at = if at_ms.is_nan() { f64::INFINITY } else { at_ms };
        let seq = self.seq;
        self.seq += 1;
        let pos = self.heap.len() as u32;
        let slot = match self.free.pop() {
            Some(i) => {
                let s = &mut self.slots[i as usize];
                s.pos = pos;
                s.at = at;
                s.seq = seq;
                s.value = Some(value);
                i
            }
            None => {
                self.slots.push(Slot { generation: 0, pos, at, seq, value: Some(value) });
                (self.slots.len() - 1) as u32
            }
        };
        self.heap.push(slot);
        self.up(pos as usize);
        WakeKey { slot, generation: self.slots[slot as usize].generation }
    }

    /// True while `key`'s entry is queued.
    pub fn contains(&self, key: WakeKey) -> bool {
        self.live(key).is_some()
    }

    /// The instant `key`'s entry waits for (`None` when stale).
    pub fn at(&self, key: WakeKey) -> Option<f64> {
        self.live(key).map(|s| self.slots[s].at)
    }

    /// Takes `key`'s entry out of the queue and returns its value (`None`
    /// when it already fired or was cancelled). The host timer stays as it
    /// is (invariant 4: lazily).
    pub fn cancel(&mut self, key: WakeKey) -> Option<T> {
        let slot = self.live(key)?;
        Some(self.remove(slot))
    }

    /// Moves `key`'s entry to `at_ms` (it keeps its handle); false when stale.
    pub fn reschedule(&mut self, key: WakeKey, at_ms: f64) -> bool {
        let Some(slot) = self.live(key) else { return false };
        let at = if at_ms.is_nan() { f64::INFINITY } else { at_ms };
        let seq = self.seq;
        self.seq += 1;
        let s = &mut self.slots[slot];
        s.at = at;
        s.seq = seq;
        let pos = s.pos as usize;
        self.down(pos);
        self.up(self.slots[slot].pos as usize);
        true
    }

    /// The host timer fired: it is no longer armed. Call before
    /// [`pop_due`](Self::pop_due).
    pub fn on_host_wake(&mut self) {
        self.host_at = f64::INFINITY;
    }

    /// The host timer was cleared (or is known dead): it is no longer armed.
    pub fn on_host_cleared(&mut self) {
        self.host_at = f64::INFINITY;
    }

    /// The earliest entry if it is due at `now_ms` (`now >= at`), taken out
    /// of the queue with its handle; `None` when nothing is due.
    pub fn pop_due(&mut self, now_ms: f64) -> Option<(WakeKey, T)> {
        let &top = self.heap.first()?;
        let s = &self.slots[top as usize];
        // `at` is never NaN (see `schedule`); a NaN `now` is due for nothing.
        if now_ms.is_nan() || now_ms < s.at {
            return None;
        }
        let key = WakeKey { slot: top, generation: s.generation };
        Some((key, self.remove(top as usize)))
    }

    /// The instant the host timer must be (re-)armed for now, if it must:
    /// the earliest instant when it is earlier than what the timer is armed
    /// for. `host_may_be_dead`: the host timer, though armed, may have been
    /// cancelled by the host without firing (workerd cancels a request's
    /// timers when it ends); then a timer overdue by more than 1 ms at
    /// `now_ms` is armed again. The queue records the answer as armed: arm
    /// the host timer for it (with [`arm_delay`]), clearing the old one.
    pub fn poll_arm(&mut self, now_ms: f64, host_may_be_dead: bool) -> Option<f64> {
        let next = self.next_at()?;
        if next == f64::INFINITY {
            return None; // never NaN: see `schedule`
        }
        if next < self.host_at || (host_may_be_dead && self.host_at < now_ms - 1.0) {
            self.host_at = next;
            return Some(next);
        }
        None
    }

    /// True when the earliest instant is finite and earlier than the one the
    /// host timer is armed for: [`poll_arm`](Self::poll_arm) would answer it
    /// whatever `now` is. A host whose timer cannot die skips reading its
    /// clock when this is false.
    pub fn earlier_than_host(&self) -> bool {
        self.next_at().is_some_and(|next| next < self.host_at)
    }

    fn live(&self, key: WakeKey) -> Option<usize> {
        let s = self.slots.get(key.slot as usize)?;
        (s.generation == key.generation && s.pos != NONE).then_some(key.slot as usize)
    }

    fn remove(&mut self, slot: usize) -> T {
        let pos = self.slots[slot].pos as usize;
        let last = self.heap.pop().expect("a live slot is in the heap");
        if pos < self.heap.len() {
            self.heap[pos] = last;
            self.slots[last as usize].pos = pos as u32;
            self.down(pos);
            self.up(self.slots[last as usize].pos as usize);
        }
        let s = &mut self.slots[slot];
        s.pos = NONE;
        s.generation = s.generation.wrapping_add(1);
        self.free.push(slot as u32);
        s.value.take().expect("a live slot holds its value")
    }

    fn before(&self, a: u32, b: u32) -> bool {
        let (a, b) = (&self.slots[a as usize], &self.slots[b as usize]);
        a.at < b.at || (a.at == b.at && a.seq < b.seq)
    }

    fn up(&mut self, mut i: usize) {
        let e = self.heap[i];
        while i > 0 {
            let p = (i - 1) / 2;
            if !self.before(e, self.heap[p]) {
                break;
            }
            self.heap[i] = self.heap[p];
            self.slots[self.heap[i] as usize].pos = i as u32;
            i = p;
        }
        self.heap[i] = e;
        self.slots[e as usize].pos = i as u32;
    }

    fn down(&mut self, mut i: usize) {
        let e = self.heap[i];
        let n = self.heap.len();
        loop {
            let mut c = 2 * i + 1;
            if c >= n {
                break;
            }
            if c + 1 < n && self.before(self.heap[c + 1], self.heap[c]) {
                c += 1;
            }
            if !self.before(self.heap[c], e) {
                break;
            }
            self.heap[i] = self.heap[c];
            self.slots[self.heap[i] as usize].pos = i as u32;
            i = c;
        }
        self.heap[i] = e;
        self.slots[e as usize].pos = i as u32;
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A number of the conformance table: JSON's, or `{ "$": "NaN" }` and friends.
    fn table_number(v: &serde_json::Value) -> f64 {
        match v.pointer("/$").and_then(serde_json::Value::as_str) {
            Some("NaN") => f64::NAN,
            Some("Infinity") => f64::INFINITY,
            Some("-Infinity") => f64::NEG_INFINITY,
            Some("-0") => -0.0,
            Some(other) => panic!("unknown special number {other}"),
            None => v.as_f64().expect("a number"),
        }
    }

    /// The rule's table is the `timers.timerMs` rows of tests/conformance/cases.json,
    /// which js/timers.js `timerMs` (tests/js/cases/conformance.js) and the Rust
    /// host (tests/web/cases/conformance.rs) run too.
    #[test]
    fn the_rule_table() {
        let table: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/conformance/cases.json")).unwrap();
        let rows: Vec<_> = table["cases"].as_array().unwrap().iter().filter(|r| r["op"] == "timers.timerMs").collect();
        assert!(rows.len() >= 9, "the table's timers.timerMs rows");
        for row in rows {
            let ms = table_number(&row["args"]["ms"]);
            let delay = table_number(&row["expect"]["value"]);
            assert_eq!(timer_ms(ms).to_bits(), delay.to_bits(), "{}", row["name"]);
        }
    }

    /// The `timers.order` rows of tests/conformance/cases.json on this queue:
    /// the order js/timers.js's heap and the Rust host fire equal instants in.
    #[test]
    fn the_order_table() {
        let table: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/conformance/cases.json")).unwrap();
        let rows: Vec<_> = table["cases"].as_array().unwrap().iter().filter(|r| r["op"] == "timers.order").collect();
        assert!(!rows.is_empty(), "the table's timers.order rows");
        for row in rows {
            let mut q = WakeQueue::new();
            let offsets = row["args"]["offsets"].as_array().unwrap();
            let keys: Vec<_> = offsets.iter().enumerate().map(|(i, ms)| q.schedule(ms.as_f64().unwrap(), i)).collect();
            for i in row["args"]["cancel"].as_array().into_iter().flatten() {
                q.cancel(keys[i.as_u64().unwrap() as usize]);
            }
            let mut fired = Vec::new();
            while let Some((_, i)) = q.pop_due(f64::MAX) {
                fired.push(i.to_string());
            }
            assert_eq!(fired.join(","), row["expect"]["value"].as_str().unwrap(), "{}", row["name"]);
        }
    }

    #[test]
    fn a_wait_past_the_host_limit_is_reached_in_slices_never_early() {
        let at = 3.0 * MAX_TIMER_MS + 5.0;
        let (mut now, mut slices) = (0.0, 0);
        loop {
            match on_wake(at, now) {
                Wake::Fire => break,
                Wake::Rearm(d) => {
                    assert!(d <= MAX_TIMER_MS && d > 0.0);
                    now += d;
                    slices += 1;
                }
            }
        }
        assert_eq!(slices, 4);
        assert!(now >= at);
    }

    #[test]
    fn an_early_wake_fires_nothing_and_re_arms() {
        let mut q = WakeQueue::new();
        q.schedule(10.0, 1);
        assert_eq!(q.poll_arm(0.0, false), Some(10.0));
        q.on_host_wake();
        assert_eq!(q.pop_due(9.0), None, "woken 1 ms early");
        assert_eq!(q.poll_arm(9.0, false), Some(10.0), "re-armed");
        q.on_host_wake();
        assert_eq!(q.pop_due(10.0).map(|(_, v)| v), Some(1));
        assert_eq!(q.poll_arm(10.0, false), None, "nothing left to arm for");
    }

    #[test]
    fn a_host_timer_that_may_be_dead_is_re_armed_once_overdue() {
        let mut q = WakeQueue::new();
        q.schedule(10.0, 1);
        assert_eq!(q.poll_arm(0.0, true), Some(10.0));
        q.schedule(20.0, 2);
        assert_eq!(q.poll_arm(10.5, true), None, "not overdue by more than 1 ms");
        assert_eq!(q.poll_arm(50.0, false), None, "a host timer that cannot die is trusted");
        assert_eq!(q.poll_arm(50.0, true), Some(10.0), "overdue: its request took it");
    }

    #[test]
    fn stale_handles_and_nan_instants_are_harmless() {
        let mut q = WakeQueue::new();
        let k = q.schedule(f64::NAN, ());
        assert_eq!(q.at(k), Some(f64::INFINITY));
        assert_eq!(q.poll_arm(0.0, true), None, "an infinite wait arms nothing");
        assert_eq!(q.pop_due(f64::MAX), None);
        assert!(q.cancel(k).is_some());
        assert!(q.cancel(k).is_none());
        assert!(!q.reschedule(k, 1.0));
        let k2 = q.schedule(1.0, ()); // the slot is reused, with a new generation
        assert!(!q.contains(k) && q.contains(k2));
        assert_eq!(q.pop_due(f64::NAN), None);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Schedule(f64),
        Cancel(usize),
        Reschedule(usize, f64),
        /// The clock moves on and the host timer fires (at or after the instant it was armed for, or early by `early`).
        Advance(f64, bool),
    }

    fn op() -> impl Strategy<Value = Op> {
        let at = prop_oneof![0.0..1_000.0f64, (0u32..50).prop_map(f64::from), Just(f64::INFINITY), Just(f64::NAN)];
        prop_oneof![
            4 => at.clone().prop_map(Op::Schedule),
            2 => any::<usize>().prop_map(Op::Cancel),
            1 => (any::<usize>(), at).prop_map(|(i, a)| Op::Reschedule(i, a)),
            2 => (0.0..200.0f64, any::<bool>()).prop_map(|(d, e)| Op::Advance(d, e)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn arm_delay_is_whole_bounded_and_never_early(at in -1e3..1e16f64, now in 0.0..1e15f64) {
            let d = arm_delay(at, now);
            prop_assert!(d.fract() == 0.0 && (0.0..=MAX_TIMER_MS).contains(&d));
            if d < MAX_TIMER_MS {
                prop_assert!(now + d >= at, "armed at {now} with {d}: fires before {at}");
            }
            match on_wake(at, now) {
                Wake::Fire => prop_assert!(now >= at),
                Wake::Rearm(r) => prop_assert!(now < at && r == d),
            }
        }

        #[test]
        fn the_queue_against_a_model(ops in proptest::collection::vec(op(), 1..200)) {
            let mut q = WakeQueue::new();
            // The model: every entry ever scheduled, (key, at, id, queued).
            let mut model: Vec<(WakeKey, f64, usize, bool)> = Vec::new();
            let mut now = 0.0f64;
            let mut fired = std::collections::HashSet::new();
            for op in ops {
                match op {
                    Op::Schedule(at) => {
                        let id = model.len();
                        let k = q.schedule(at, id);
                        model.push((k, if at.is_nan() { f64::INFINITY } else { at }, id, true));
                    }
                    Op::Cancel(i) if !model.is_empty() => {
                        let n = model.len();
                        let e = &mut model[i % n];
                        let got = q.cancel(e.0);
                        prop_assert_eq!(got.is_some(), e.3, "cancel of a queued entry returns it, of a stale one nothing");
                        if let Some(id) = got { prop_assert_eq!(id, e.2); }
                        e.3 = false;
                    }
                    Op::Reschedule(i, at) if !model.is_empty() => {
                        let n = model.len();
                        let e = &mut model[i % n];
                        prop_assert_eq!(q.reschedule(e.0, at), e.3);
                        if e.3 { e.1 = if at.is_nan() { f64::INFINITY } else { at }; }
                    }
                    Op::Advance(d, early) => {
                        let armed = q.host_at();
                        now += d;
                        // The host timer fires only when armed and its instant came (or one ms before it, early).
                        if let Some(h) = armed {
                            if now >= h - if early { 1.0 } else { 0.0 } {
                                q.on_host_wake();
                                let mut last = f64::NEG_INFINITY;
                                while let Some((k, id)) = q.pop_due(now) {
                                    let e = model[id];
                                    prop_assert!(e.3 && e.0 == k, "a cancelled or fired entry came out");
                                    prop_assert!(now >= e.1, "fired before its instant");
                                    prop_assert!(e.1 >= last, "out of order");
                                    prop_assert!(fired.insert(id), "fired twice");
                                    last = e.1;
                                    model[id].3 = false;
                                }
                            }
                        }
                    }
                    _ => {}
                }
                let wants = q.earlier_than_host();
                prop_assert_eq!(q.poll_arm(now, false).is_some(), wants, "earlier_than_host says what poll_arm does");
                // Invariant 4: armed no later than the earliest finite instant queued.
                let earliest = model.iter().filter(|e| e.3).map(|e| e.1).fold(f64::INFINITY, f64::min);
                prop_assert_eq!(q.len(), model.iter().filter(|e| e.3).count());
                prop_assert_eq!(q.next_at().unwrap_or(f64::INFINITY), earliest);
                if earliest < f64::INFINITY {
                    prop_assert!(q.host_at().is_some_and(|h| h <= earliest), "host at {:?}, earliest {}", q.host_at(), earliest);
                }
                // Due entries are never left behind once the host has woken for them.
                for e in model.iter().filter(|e| e.3) {
                    prop_assert!(q.contains(e.0));
                }
            }
        }
    }
}
