//! One running piece of work (a plan step, a retry attempt, a backoff sleep)
//! with its own `AbortSignal`, ended by a cap or by a parent signal,
//! whichever comes first; and the race that settles it in that same turn even
//! when the work ignores its signal (dropping a Rust future cancels it).
//!
//! The cap, the signal and the parent links are one node of the cancellation
//! primitive (timers.rs `child`); what this file adds is the Rust side of
//! waiting for it: [`Ended`], and the race of the work against the node.
//!
//! # Invariants
//! 1. The guard's signal aborts at most once, with the reason of whatever
//!    ended it first (the cap's reason, or the parent's `reason`).
//! 2. Dropping the guard releases its wake-up and its parent listeners.

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Poll, Waker};

use wasm_bindgen::prelude::*;
use web_sys::AbortSignal;

use super::timers::{child, ref_queue, Child, Parent, Parents};

/// What ended a guard.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ended {
    /// The cap timer fired.
    Cap(JsValue),
    /// The parent at this index (in the order given) aborted.
    Parent(usize, JsValue),
}

#[derive(Default)]
struct State {
    ended: Option<Ended>,
    waker: Option<Waker>,
}

fn end(state: &Rc<RefCell<State>>, ended: Ended) {
    let waker = {
        let mut s = state.borrow_mut();
        if s.ended.is_some() {
            return;
        }
        s.ended = Some(ended);
        s.waker.take()
    };
    if let Some(w) = waker {
        w.wake();
    }
}

pub(crate) struct Guard {
    state: Rc<RefCell<State>>,
    node: Child,
    with_signal: bool,
}

impl Guard {
    /// A guard ended at the instant `cap_at` (with `on_cap()`'s reason) or by
    /// any of `parents`. `with_signal`: the work gets an `AbortSignal`.
    pub(crate) fn new(
        cap_at: Option<f64>,
        on_cap: impl FnOnce() -> JsValue + 'static,
        parents: &[&AbortSignal],
        with_signal: bool,
    ) -> Self {
        let state = Rc::new(RefCell::new(State::default()));
        let (on_time_state, on_abort_state) = (Rc::downgrade(&state), Rc::downgrade(&state));
        let mut on_cap = Some(on_cap);
        let parents: Vec<Parent<'_>> = parents.iter().map(|p| Parent::Signal(p)).collect();
        let node = child(
            Parents::List(&parents),
            cap_at.unwrap_or(f64::INFINITY),
            Some(Box::new(move |node| {
                let reason = on_cap.take().map_or(JsValue::UNDEFINED, |f| f());
                node.abort(&reason);
                if let Some(s) = on_time_state.upgrade() {
                    end(&s, Ended::Cap(reason));
                }
            })),
            Some(Box::new(move |reason, by| {
                if let Some(s) = on_abort_state.upgrade() {
                    end(&s, Ended::Parent(by, reason.clone()));
                }
            })),
            // Someone awaits the work: its cap keeps Node and Deno alive.
            Some(ref_queue()),
        );
        if with_signal {
            node.signal();
        }
        Self { state, node, with_signal }
    }

    /// The work's signal (created with `with_signal`).
    pub(crate) fn signal(&self) -> AbortSignal {
        if !self.with_signal {
            wasm_bindgen::throw_str("a guard made without a signal");
        }
        self.node.signal()
    }

    pub(crate) fn ended(&self) -> Option<Ended> {
        self.state.borrow().ended.clone()
    }

    /// Runs `work` until it completes or the guard ends.
    pub(crate) async fn race<T>(&self, work: impl Future<Output = T>) -> Result<T, Ended> {
        let mut work = pin!(work);
        std::future::poll_fn(|cx| {
            if let Some(ended) = self.ended() {
                return Poll::Ready(Err(ended));
            }
            if let Poll::Ready(value) = work.as_mut().poll(cx) {
                return Poll::Ready(Ok(value));
            }
            self.state.borrow_mut().waker = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}
