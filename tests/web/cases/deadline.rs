//! Deadline, timers and errors.

use std::cell::Cell;
use std::rc::Rc;

use edge_deadline::web::{sleep, Deadline, Error, StallPhase, Timeout};
use wasm_bindgen::prelude::*;
use web_sys::AbortController;

use super::{aborted, get, now, own_keys, Ctx, FakeTime, Outcome, ABORT_WAIT_MS};
use crate::ensure;

const BRAND: &str = "edgeDeadlineError";

fn controller() -> AbortController {
    AbortController::new().unwrap()
}

pub async fn signal_aborts_at_the_instant_with_the_branded_error(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let d = Deadline::in_ms(40.0).map_err(|e| e.to_string())?;
    let signal = d.signal();
    clock.advance(39.0).await;
    ensure!(!signal.aborted(), "aborted {} ms before the instant", d.instant_ms() - clock.now());
    clock.advance(1.0).await;
    ensure!(signal.aborted(), "not aborted at the instant");
    let reason = signal.reason();
    ensure!(reason.is_instance_of::<js_sys::Error>(), "reason is an Error");
    ensure!(get(&reason, BRAND).as_string().as_deref() == Some("DeadlineExceeded"));
    ensure!(get(&reason, "name").as_string().as_deref() == Some("DeadlineExceeded"));
    ensure!(own_keys(&reason).iter().any(|k| k == BRAND), "the brand is an own enumerable property");
    ensure!(get(&reason, "at").as_f64() == Some(d.instant_ms()));
    let late = get(&reason, "lateByMs").as_f64().unwrap_or(-1.0);
    ensure!(late == 0.0, "lateByMs {late}");
    ensure!(get(&reason, "message").as_string().unwrap_or_default().contains("deadline exceeded"));
    match Error::from(reason) {
        Error::DeadlineExceeded { at, .. } => ensure!(at == d.instant_ms()),
        other => return Err(format!("read back as {other:?}")),
    }
    ensure!(d.expired());
    ensure!(d.remaining() == 0.0);
    Ok(())
}

pub async fn checkpoint_returns_before_the_instant_and_errs_from_it_on(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let d = Deadline::in_ms(40.0).map_err(|e| e.to_string())?;
    let parent = controller();
    let linked = Deadline::in_ms(40.0).map_err(|e| e.to_string())?.with_parent(&parent.signal());
    parent.abort_with_reason(&"client left".into());
    clock.jump(39.5);
    ensure!(d.checkpoint().is_ok(), "0.5 ms left");
    ensure!(linked.checkpoint().is_ok(), "a parent's abort does not count, as for expired()");
    // A CPU-bound loop: the clock moves inside it, no timer runs.
    let mut i = 0;
    let err = loop {
        if i == 3 {
            clock.jump(d.instant_ms() - clock.now());
        }
        if let Err(e) = d.checkpoint() {
            break e;
        }
        i += 1;
    };
    ensure!(i == 3, "errs at the first check at the instant, not before (check {i})");
    ensure!(
        matches!(err, Error::DeadlineExceeded { at, late_by_ms } if at == d.instant_ms() && late_by_ms == 0.0),
        "{err:?}"
    );
    clock.jump(12.5);
    match d.checkpoint() {
        Err(Error::DeadlineExceeded { late_by_ms, .. }) => ensure!(late_by_ms == 12.5, "late by {late_by_ms}"),
        other => return Err(format!("after the instant: {other:?}")),
    }
    // As a JavaScript value: the branded DeadlineExceeded the signal aborts with.
    let js = JsValue::from(d.checkpoint().unwrap_err());
    ensure!(get(&js, BRAND).as_string().as_deref() == Some("DeadlineExceeded"));
    ensure!(get(&js, "at").as_f64() == Some(d.instant_ms()));
    Ok(())
}

pub async fn repeated_signal_is_the_same_signal(_: &Ctx) -> Outcome {
    let d = Deadline::in_ms(1_000.0).unwrap();
    let a = d.signal();
    ensure!(a == d.signal(), "a second signal() returned another signal");
    Ok(())
}

pub async fn a_parent_abort_propagates_its_reason(_: &Ctx) -> Outcome {
    let parent = controller();
    let d = Deadline::in_ms(60_000.0).unwrap().with_parent(&parent.signal());
    let signal = d.signal();
    let reason = js_sys::Error::new("client went away");
    parent.abort_with_reason(&reason);
    aborted(&signal).await?;
    ensure!(signal.reason() == JsValue::from(reason), "the parent's reason");
    ensure!(!d.expired(), "the instant itself has not passed");
    Ok(())
}

pub async fn an_aborted_parent_aborts_at_once(_: &Ctx) -> Outcome {
    let parent = controller();
    parent.abort_with_reason(&"gone".into());
    let d = Deadline::in_ms(60_000.0).unwrap().with_parent(&parent.signal());
    let signal = d.signal();
    ensure!(signal.aborted());
    ensure!(signal.reason().as_string().as_deref() == Some("gone"));
    Ok(())
}

pub async fn a_passed_instant_gives_an_aborted_signal(_: &Ctx) -> Outcome {
    let d = Deadline::at(0.0).unwrap();
    ensure!(d.expired() && d.remaining() == 0.0);
    let signal = d.signal();
    ensure!(signal.aborted(), "aborted at once");
    ensure!(matches!(Error::from(signal.reason()), Error::DeadlineExceeded { late_by_ms, .. } if late_by_ms >= 0.0));
    Ok(())
}

pub async fn min_takes_the_earlier_and_links_both_parents(_: &Ctx) -> Outcome {
    let (p1, p2) = (controller(), controller());
    let a = Deadline::in_ms(1_000.0).unwrap().with_parent(&p1.signal());
    let b = Deadline::in_ms(2_000.0).unwrap().with_parent(&p2.signal());
    ensure!(a.min(&b).instant_ms() == a.instant_ms());
    ensure!(b.min(&a).instant_ms() == a.instant_ms(), "min commutes");
    let c = Deadline::in_ms(3_000.0).unwrap();
    ensure!(Deadline::min_of([&c, &b, &a]).unwrap().instant_ms() == a.instant_ms(), "variadic min");
    let m = a.min(&b);
    let signal = m.signal();
    p2.abort_with_reason(&"second parent".into());
    aborted(&signal).await?;
    ensure!(signal.reason().as_string().as_deref() == Some("second parent"));
    match Deadline::min_of([]) {
        Err(Error::InvalidType { param: "deadlines", message, .. }) => {
            ensure!(message.contains("'deadlines'"), "{message}")
        }
        other => return Err(format!("min_of([]) gave {other:?}")),
    }
    Ok(())
}

pub async fn reserve_is_earlier_and_keeps_parents(_: &Ctx) -> Outcome {
    let parent = controller();
    let d = Deadline::in_ms(1_000.0).unwrap().with_parent(&parent.signal());
    let r = d.reserve(200.0).unwrap();
    ensure!(r.instant_ms() == d.instant_ms() - 200.0, "{} vs {}", r.instant_ms(), d.instant_ms());
    let over = d.reserve(5_000.0).unwrap();
    ensure!(over.expired(), "reserving more than is left gives an expired deadline, not an error");
    let signal = r.signal();
    parent.abort_with_reason(&"gone".into());
    ensure!(signal.aborted(), "the reserved deadline keeps the parent");
    Ok(())
}

pub async fn budget_is_min_of_preferred_and_remaining(_: &Ctx) -> Outcome {
    let d = Deadline::in_ms(10_000.0).unwrap();
    ensure!(d.budget(300.0) == Ok(300.0));
    let left = d.remaining();
    let all = d.budget(1e9).unwrap();
    ensure!(all <= left && all > left - 100.0, "{all} vs {left}");
    // A shortage is never an argument error.
    match Deadline::at(5.0).unwrap().budget(10.0) {
        Err(Error::DeadlineExceeded { at, late_by_ms }) => ensure!(at == 5.0 && late_by_ms > 0.0),
        other => return Err(format!("expired budget gave {other:?}")),
    }
    Ok(())
}

fn names(result: Result<impl std::fmt::Debug, Error>, param: &str) -> Outcome {
    match result {
        Err(Error::InvalidArgument { param: p, code, message }) if p == param => {
            ensure!(message.contains(&format!("'{param}'")), "message does not name '{param}': {message}");
            let js = JsValue::from(Error::InvalidArgument { param: p, code, message: message.clone() });
            ensure!(js.is_instance_of::<js_sys::RangeError>(), "a RangeError in JavaScript");
            ensure!(get(&js, "message").as_string() == Some(message));
            Ok(())
        }
        other => Err(format!("expected an error naming '{param}', got {other:?}")),
    }
}

pub async fn bad_input_is_an_error_naming_the_parameter(_: &Ctx) -> Outcome {
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, 1e300] {
        names(Deadline::in_ms(bad), "ms")?;
        names(Deadline::at(bad), "instantMs")?;
        names(Timeout::new(bad, || {}), "ms")?;
        names(sleep(bad), "ms")?;
        let d = Deadline::in_ms(1_000.0).unwrap();
        names(d.reserve(bad), "ms")?;
        if bad != 1e300 {
            names(d.budget(bad), "preferredMs")?;
        }
        names(d.step(bad, |_, _| async {}).await, "minMs")?;
    }
    Ok(())
}

pub async fn step_is_not_started_below_its_minimum(_: &Ctx) -> Outcome {
    let d = Deadline::in_ms(100.0).unwrap();
    let ran = Rc::new(Cell::new(false));
    let flag = ran.clone();
    match d.step(1_000.0, |_, _| async move { flag.set(true) }).await {
        Err(Error::InsufficientBudget { remaining_ms, min_ms }) => {
            ensure!(min_ms == 1_000.0 && remaining_ms <= 100.0, "{remaining_ms} / {min_ms}");
        }
        other => return Err(format!("step below its minimum gave {other:?}")),
    }
    ensure!(!ran.get(), "the step ran");
    let signal = d.signal();
    let before = d.remaining();
    let (same, budget) = d.step(5.0, |s, budget| async move { (s == signal, budget) }).await.unwrap();
    ensure!(same, "the step gets the deadline's signal");
    ensure!(budget > 0.0 && budget <= before, "budget {budget} vs {before}");
    let expired = Deadline::at(1.0).unwrap();
    ensure!(
        matches!(expired.step(0.0, |_, _| async {}).await, Err(Error::InsufficientBudget { .. })),
        "zero minimum on an expired deadline"
    );
    // The client left: no budget and no new step, whatever the clock says (as the JS API).
    let client = controller();
    let d = Deadline::in_ms(10_000.0).unwrap().with_parent(&client.signal());
    client.abort_with_reason(&"client left".into());
    let flag = ran.clone();
    match d.step(1.0, |_, _| async move { flag.set(true) }).await {
        Err(Error::Js(v)) => ensure!(v.as_string().as_deref() == Some("client left")),
        other => return Err(format!("a step after the client left gave {other:?}")),
    }
    ensure!(!ran.get(), "a step started after the client left");
    ensure!(matches!(d.budget(10.0), Err(Error::Js(_))), "budget after the client left");
    Ok(())
}

pub async fn dropping_a_deadline_leaves_nothing_pending(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let parent = controller();
    let d = Deadline::in_ms(20.0).unwrap().with_parent(&parent.signal());
    let signal = d.signal();
    drop(d);
    clock.advance(60.0).await;
    ensure!(!signal.aborted(), "the wake-up of a dropped deadline fired");
    ensure!(clock.pending() == 0, "{} host timers left pending", clock.pending());
    parent.abort();
    ensure!(!signal.aborted(), "the listener on the parent was left behind");
    Ok(())
}

/// Wraps `signal`'s `addEventListener` and `removeEventListener` with
/// counters of the "abort" listeners added and removed: `{ add, remove }`.
fn count_abort_listeners(signal: &web_sys::AbortSignal) -> JsValue {
    let wrap = js_sys::Function::new_with_args(
        "signal",
        "const n = { add: 0, remove: 0 };
         const add = signal.addEventListener.bind(signal), remove = signal.removeEventListener.bind(signal);
         signal.addEventListener = (type, ...rest) => { if (type === 'abort') n.add++; return add(type, ...rest); };
         signal.removeEventListener = (type, ...rest) => { if (type === 'abort') n.remove++; return remove(type, ...rest); };
         return n;",
    );
    wrap.call1(&JsValue::NULL, signal).unwrap()
}

pub async fn deadlines_linked_to_one_parent_share_its_listener_until_the_turn_ends(_: &Ctx) -> Outcome {
    let parent = controller();
    let signal = parent.signal();
    let n = count_abort_listeners(&signal);
    for _ in 0..1_000 {
        let d = Deadline::in_ms(60_000.0).unwrap().with_parent(&signal);
        d.signal();
    }
    let kept = Deadline::in_ms(60_000.0).unwrap().with_parent(&signal);
    let kept_signal = kept.signal();
    let dropped = Deadline::in_ms(60_000.0).unwrap().with_parent(&signal);
    let dropped_signal = dropped.signal();
    drop(dropped);
    let count = |key| get(&n, key).as_f64().unwrap_or(-1.0);
    ensure!(count("add") == 1.0, "{} listeners added for 1 002 linked deadlines in one turn", count("add"));
    ensure!(count("remove") == 0.0, "the listener was removed while a deadline was linked");
    super::settle().await;
    ensure!(count("remove") == 0.0, "the listener was removed while a deadline is still linked");
    drop(kept);
    super::settle().await;
    ensure!(count("remove") == 1.0, "the listener was left behind: {} removed", count("remove"));
    let again = Deadline::in_ms(60_000.0).unwrap().with_parent(&signal);
    let again_signal = again.signal();
    ensure!(count("add") == 2.0, "a deadline linked in a later turn listens again");
    parent.abort_with_reason(&"client left".into());
    ensure!(
        again_signal.reason().as_string().as_deref() == Some("client left"),
        "the linked deadline aborted with the parent's reason"
    );
    ensure!(!kept_signal.aborted() && !dropped_signal.aborted(), "a dropped deadline's signal aborted");
    Ok(())
}

pub async fn deadlines_linked_to_one_parent_abort_in_the_order_they_were_linked(_: &Ctx) -> Outcome {
    use std::cell::RefCell;
    let parent = controller();
    let order = Rc::new(RefCell::new(Vec::<&str>::new()));
    let make = || Deadline::in_ms(60_000.0).unwrap().with_parent(&parent.signal());
    let (a, b, c) = (make(), make(), make());
    let c = Rc::new(RefCell::new(Some(c)));
    drop(b);
    let d = make();
    let mut listeners = Vec::new();
    for (name, signal) in [("a", a.signal()), ("c", c.borrow().as_ref().unwrap().signal()), ("d", d.signal())] {
        let (order, c) = (order.clone(), c.clone());
        let listener = Closure::<dyn FnMut()>::new(move || {
            order.borrow_mut().push(name);
            if name == "a" {
                c.borrow_mut().take(); // a's abort drops c before c's turn
            }
        });
        signal.add_event_listener_with_callback("abort", listener.as_ref().unchecked_ref()).unwrap();
        listeners.push(listener);
    }
    parent.abort();
    ensure!(*order.borrow() == ["a", "d"], "aborted in the order {:?}", order.borrow());
    Ok(())
}

pub async fn shared_wakeups_fire_in_order_and_skip_dropped_ones(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let order = Rc::new(std::cell::RefCell::new(Vec::new()));
    let ds: Vec<Deadline> = [30.0, 10.0, 20.0, 40.0].iter().map(|ms| Deadline::in_ms(*ms).unwrap()).collect();
    let signals: Vec<_> = ds.iter().map(Deadline::signal).collect();
    let mut closures = Vec::new();
    for (i, s) in signals.iter().enumerate() {
        let order = order.clone();
        let at = ds[i].instant_ms();
        let c = Closure::<dyn FnMut()>::new(move || order.borrow_mut().push((i, now() - at)));
        s.add_event_listener_with_callback("abort", c.as_ref().unchecked_ref()).unwrap();
        closures.push(c);
    }
    ensure!(clock.pending() == 1, "{} host timers for 4 deadlines", clock.pending());
    let mut ds = ds;
    let dropped = ds.remove(2); // the 20 ms one
    drop(dropped);
    clock.advance(40.0).await;
    ensure!(*order.borrow() == vec![(1, 0.0), (0, 0.0), (3, 0.0)], "order and lateness {:?}", order.borrow());
    ensure!(!signals[2].aborted());
    for (d, s) in ds.iter().zip([&signals[0], &signals[1], &signals[3]]) {
        let reason = s.reason();
        ensure!(get(&reason, "at").as_f64() == Some(d.instant_ms()), "each aborts with its own instant");
    }
    Ok(())
}

pub async fn the_queue_survives_many_dropped_deadlines(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    for _ in 0..5_000 {
        let d = Deadline::in_ms(5.0).unwrap();
        d.signal();
    }
    let kept: Vec<Deadline> = (0..100).map(|i| Deadline::in_ms(10.0 + f64::from(i % 7)).unwrap()).collect();
    let signals: Vec<_> = kept.iter().map(Deadline::signal).collect();
    clock.advance(9.0).await;
    ensure!(signals.iter().all(|s| !s.aborted()), "a kept deadline aborted before its instant");
    clock.advance(7.0).await;
    for (d, s) in kept.iter().zip(&signals) {
        ensure!(
            matches!(Error::from(s.reason()), Error::DeadlineExceeded { at, late_by_ms } if at == d.instant_ms() && late_by_ms == 0.0)
        );
    }
    ensure!(clock.armed().len() <= 10, "{} host timers armed for 5 100 deadlines", clock.armed().len());
    Ok(())
}

pub async fn a_host_timer_that_wakes_early_fires_nothing_and_is_re_armed(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let d = Deadline::in_ms(10.0).unwrap();
    let signal = d.signal();
    let fired = Rc::new(Cell::new(f64::NAN));
    let f = fired.clone();
    let t = Timeout::new(10.0, move || f.set(now())).unwrap();
    clock.jump(9.0);
    ensure!(clock.fire_early().await && clock.fire_early().await, "two host timers pending");
    ensure!(!signal.aborted(), "the deadline fired 1 ms early");
    ensure!(fired.get().is_nan() && t.is_pending(), "the Timeout fired 1 ms early");
    ensure!(clock.pending() == 2, "both re-armed: {} pending", clock.pending());
    clock.advance(1.0).await;
    ensure!(signal.aborted() && fired.get() == d.instant_ms(), "each fires on its instant");
    Ok(())
}

pub async fn an_instant_past_the_host_limit_is_reached_in_slices_never_early(_: &Ctx) -> Outcome {
    const MAX_TIMER_MS: f64 = 2_147_483_647.0;
    let clock = FakeTime::install();
    let d = Deadline::in_ms(3.0 * MAX_TIMER_MS + 5.0).unwrap();
    let signal = d.signal();
    let t = Timeout::new(3.0 * MAX_TIMER_MS + 5.0, || {}).unwrap();
    ensure!(clock.armed().iter().all(|(_, ms)| *ms == MAX_TIMER_MS), "armed {:?}", clock.armed());
    clock.advance(3.0 * MAX_TIMER_MS).await;
    ensure!(!signal.aborted() && t.is_pending(), "fired at the end of a slice, before the instant");
    clock.advance(5.0).await;
    ensure!(signal.aborted() && !t.is_pending(), "reached at the instant");
    ensure!(clock.armed().iter().all(|(_, ms)| *ms <= MAX_TIMER_MS), "a host timer past the limit");
    Ok(())
}

pub async fn timeout_fires_not_before_its_instant_and_drop_clears_it(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let fired = Rc::new(Cell::new(f64::NAN));
    let f = fired.clone();
    let t = Timeout::new(25.0, move || f.set(now())).unwrap();
    ensure!(t.is_pending());
    let dropped = Rc::new(Cell::new(false));
    let g = dropped.clone();
    let early = Timeout::new(10.0, move || g.set(true)).unwrap();
    drop(early);
    clock.advance(24.0).await;
    ensure!(fired.get().is_nan(), "fired before its instant");
    clock.advance(36.0).await;
    ensure!(!dropped.get(), "a dropped Timeout fired");
    ensure!(fired.get() == t.instant_ms(), "fired at {}, its instant is {}", fired.get(), t.instant_ms());
    ensure!(!t.is_pending());
    ensure!(clock.pending() == 0, "a host timer left pending");
    Ok(())
}

pub async fn sleep_resolves_not_before_its_instant(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let t0 = now();
    let woke = Rc::new(Cell::new(f64::NAN));
    let w = woke.clone();
    let nap = sleep(15.0).unwrap();
    wasm_bindgen_futures::spawn_local(async move {
        nap.await;
        w.set(now());
    });
    clock.advance(14.0).await;
    ensure!(woke.get().is_nan(), "woke after {} ms", woke.get() - t0);
    clock.advance(1.0).await;
    ensure!(woke.get() - t0 == 15.0, "slept {} ms", woke.get() - t0);
    Ok(())
}

pub async fn the_host_clock_fires_deadlines_timeouts_and_sleeps_not_before_their_instants(_: &Ctx) -> Outcome {
    let d = Deadline::in_ms(20.0).unwrap();
    let signal = d.signal();
    let fired = Rc::new(Cell::new(f64::NAN));
    let f = fired.clone();
    let t = Timeout::new(10.0, move || f.set(now())).unwrap();
    let t0 = now();
    sleep(15.0).unwrap().await;
    ensure!(now() - t0 >= 15.0, "slept {} ms", now() - t0);
    let at = aborted(&signal).await?;
    ensure!(at >= d.instant_ms() && at - d.instant_ms() < ABORT_WAIT_MS, "aborted at {at}, instant {}", d.instant_ms());
    ensure!(fired.get() >= t.instant_ms(), "the Timeout fired {} ms early", t.instant_ms() - fired.get());
    Ok(())
}

pub async fn errors_reach_javascript_branded_and_come_back(_: &Ctx) -> Outcome {
    let errors = [
        (Error::DeadlineExceeded { at: 5.0, late_by_ms: 1.5 }, vec![("at", 5.0), ("lateByMs", 1.5)]),
        (Error::InsufficientBudget { remaining_ms: 3.0, min_ms: 10.0 }, vec![("remainingMs", 3.0), ("minMs", 10.0)]),
        (
            Error::StreamStalled { phase: StallPhase::Stall, after_ms: 30.0, chunks: 2.0, bytes: 32.0 },
            vec![("afterMs", 30.0), ("chunks", 2.0), ("bytes", 32.0)],
        ),
        (Error::StepTimeout { step: "search".into(), cap_ms: 250.0 }, vec![("capMs", 250.0)]),
        (Error::AttemptTimeout { attempt: 2, timeout_ms: 30.0 }, vec![("attempt", 2.0), ("timeoutMs", 30.0)]),
    ];
    for (error, fields) in errors {
        let name = error.name();
        let message = error.to_string();
        let js = JsValue::from(error.clone());
        ensure!(js.is_instance_of::<js_sys::Error>(), "{name} is an Error");
        ensure!(get(&js, "name").as_string().as_deref() == Some(name));
        ensure!(get(&js, BRAND).as_string().as_deref() == Some(name), "{name} carries the brand");
        ensure!(own_keys(&js).iter().any(|k| k == BRAND), "{name}: the brand is own and enumerable");
        ensure!(!own_keys(&js).iter().any(|k| k == "name"), "{name}: name is not enumerable (as js/errors.js)");
        ensure!(get(&js, "message").as_string() == Some(message));
        for (key, value) in fields {
            ensure!(get(&js, key).as_f64() == Some(value), "{name}.{key}");
        }
        // A structured clone (what workerd does to abort reasons) keeps the brand.
        let copy = js_sys::Object::assign(&js_sys::Object::new(), js.unchecked_ref());
        ensure!(Error::from(JsValue::from(copy)) == error, "{name} read back from a copy");
        ensure!(Error::from(js) == error, "{name} read back");
    }
    let stalled =
        JsValue::from(Error::StreamStalled { phase: StallPhase::FirstChunk, after_ms: 1.0, chunks: 0.0, bytes: 0.0 });
    ensure!(get(&stalled, "phase").as_string().as_deref() == Some("first-chunk"));
    let step = JsValue::from(Error::StepTimeout { step: "search".into(), cap_ms: 250.0 });
    ensure!(get(&step, "step").as_string().as_deref() == Some("search"));
    // The JavaScript API's sentence (js/errors.js).
    ensure!(
        get(&step, "message").as_string().as_deref()
            == Some("step 'search' timed out at its 250 ms cap; the deadline still has time")
    );
    let plain = JsValue::from(js_sys::TypeError::new("nope"));
    ensure!(matches!(Error::from(plain.clone()), Error::Js(v) if v == plain), "unbranded errors pass through");
    Ok(())
}
