//! One running piece of work (a plan step, a retry attempt, a backoff sleep)
//! with its own `AbortSignal`, ended by a cap timer or by a parent signal,
//! whichever comes first; and the race that settles it in that same turn even
//! when the work ignores its signal (dropping a Rust future cancels it).
//!
//! # Invariants
//! 1. The guard's signal aborts at most once, with the reason of whatever
//!    ended it first (the cap's reason, or the parent's `reason`).
//! 2. Dropping the guard clears its timer and removes its parent listeners.

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Poll, Waker};

use wasm_bindgen::prelude::*;
use web_sys::{AbortController, AbortSignal};

use super::timers::Timeout;

/// What ended a guard.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ended {
    /// The cap timer fired.
    Cap(JsValue),
    /// The parent at this index (in the order given) aborted.
    Parent(usize, JsValue),
}

impl Ended {
    pub(crate) fn reason(&self) -> &JsValue {
        match self {
            Self::Cap(r) | Self::Parent(_, r) => r,
        }
    }
}

#[derive(Default)]
struct State {
    ended: Option<Ended>,
    waker: Option<Waker>,
    controller: Option<AbortController>,
}

fn end(state: &Rc<RefCell<State>>, ended: Ended) {
    let (controller, waker) = {
        let mut s = state.borrow_mut();
        if s.ended.is_some() {
            return;
        }
        s.ended = Some(ended.clone());
        (s.controller.clone(), s.waker.take())
    };
    if let Some(c) = controller {
        c.abort_with_reason(ended.reason());
    }
    if let Some(w) = waker {
        w.wake();
    }
}

pub(crate) struct Guard {
    state: Rc<RefCell<State>>,
    signal: Option<AbortSignal>,
    timer: Option<Timeout>,
    listeners: Vec<(AbortSignal, Closure<dyn FnMut()>)>,
}

impl Guard {
    /// A guard ended at the instant `cap_at` (with `on_cap()`'s reason) or by
    /// any of `parents`. `with_signal`: create an `AbortController` for the work.
    pub(crate) fn new(
        cap_at: Option<f64>,
        on_cap: impl FnOnce() -> JsValue + 'static,
        parents: &[&AbortSignal],
        with_signal: bool,
    ) -> Self {
        let state = Rc::new(RefCell::new(State::default()));
        let mut signal = None;
        if with_signal {
            let controller = AbortController::new().expect_throw("this runtime has no AbortController");
            signal = Some(controller.signal());
            state.borrow_mut().controller = Some(controller);
        }
        let mut guard = Self { state, signal, timer: None, listeners: Vec::new() };
        for (i, parent) in parents.iter().enumerate() {
            if parent.aborted() {
                end(&guard.state, Ended::Parent(i, parent.reason()));
                return guard;
            }
        }
        for (i, parent) in parents.iter().enumerate() {
            let (s, p) = (Rc::downgrade(&guard.state), (*parent).clone());
            let listener = Closure::<dyn FnMut()>::new(move || {
                if let Some(s) = s.upgrade() {
                    end(&s, Ended::Parent(i, p.reason()));
                }
            });
            let _ = parent.add_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
            guard.listeners.push(((*parent).clone(), listener));
        }
        if let Some(at) = cap_at {
            let s = Rc::downgrade(&guard.state);
            guard.timer = Some(Timeout::at(
                at,
                Box::new(move || {
                    if let Some(s) = s.upgrade() {
                        end(&s, Ended::Cap(on_cap()));
                    }
                }),
            ));
        }
        guard
    }

    /// The work's signal (created with `with_signal`).
    pub(crate) fn signal(&self) -> AbortSignal {
        self.signal.clone().expect_throw("a guard made without a signal")
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

    /// Resolves when the guard ends.
    pub(crate) async fn until_ended(&self) -> Ended {
        std::future::poll_fn(|cx| match self.ended() {
            Some(ended) => Poll::Ready(ended),
            None => {
                self.state.borrow_mut().waker = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.timer.take();
        for (parent, listener) in self.listeners.drain(..) {
            let _ = parent.remove_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
        }
    }
}
