//! ConcurrencyLimiter of the Rust API: the same machine, names and defaults
//! as js/limiter.js (tests/js/cases/limiter.js). Timing is the subject, so
//! the clock is fake ([`FakeTime`]): round trips are exact.

use std::cell::RefCell;
use std::rc::Rc;

use edge_deadline::web::{ConcurrencyLimiter, Deadline, Error, Limit, LimiterOptions, RunOptions};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::spawn_local;
use web_sys::AbortController;

use super::{get, settle, Ctx, FakeTime, Outcome};
use crate::ensure;

pub async fn options_default_as_in_javascript_and_bad_ones_name_the_option(_: &Ctx) -> Outcome {
    let a = ConcurrencyLimiter::new(LimiterOptions::new(Limit::Aimd)).map_err(|e| e.to_string())?;
    ensure!((a.limit(), a.algorithm(), a.rtt_ms()) == (20.0, "aimd", None));
    let g = ConcurrencyLimiter::new(LimiterOptions::new(Limit::Gradient2)).map_err(|e| e.to_string())?;
    ensure!((g.limit(), g.algorithm()) == (4.0, "gradient2"), "gradient2 probes at its own minLimit default, 4");
    let f = ConcurrencyLimiter::new(LimiterOptions::new(Limit::Fixed(3.0))).map_err(|e| e.to_string())?;
    ensure!((f.limit(), f.algorithm(), f.available()) == (3.0, "fixed", 3.0));
    let bad = [
        (LimiterOptions::new(Limit::Aimd).min_limit(0.0), "minLimit", "OUT_OF_RANGE"),
        (LimiterOptions::new(Limit::Aimd).initial_limit(5.0), "initialLimit", "OUT_OF_RANGE"),
        (LimiterOptions::new(Limit::Aimd).backoff_ratio(1.0), "backoffRatio", "OUT_OF_RANGE"),
        (LimiterOptions::new(Limit::Gradient2).smoothing(f64::NAN), "smoothing", "NOT_FINITE"),
        (LimiterOptions::new(Limit::Gradient2).probe_samples(1.5), "probeSamples", "NOT_WHOLE"),
        (LimiterOptions::new(Limit::Fixed(1.5)), "limit", "NOT_WHOLE"),
        (LimiterOptions::new(Limit::Fixed(2.0)).max_queue(-1.0), "maxQueue", "OUT_OF_RANGE"),
    ];
    for (o, param, code) in bad {
        let e = ConcurrencyLimiter::new(o).err().ok_or("accepted")?;
        ensure!((e.param(), e.code()) == (Some(param), Some(code)), "{param}: {e:?}");
        ensure!(e.name() == "RangeError");
    }
    let e = ConcurrencyLimiter::new(LimiterOptions::new(Limit::Aimd).backoff_ratio(1.0)).err().ok_or("accepted")?;
    ensure!(e.to_string() == "'backoffRatio' must be at least 0.5 and below 1: current value is 1", "{e}");
    Ok(())
}

pub async fn aimd_follows_round_trips_on_the_fake_clock(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let options = LimiterOptions::new(Limit::Aimd)
        .initial_limit(4.0)
        .min_limit(3.0)
        .max_limit(5.0)
        .timeout_ms(100.0)
        .window_size(3.0);
    let limiter = ConcurrencyLimiter::new(options).map_err(|e| e.to_string())?;
    // One window: three calls, back after `rtt` ms; windows last 1 000 ms.
    let window = |rtt: f64, how: &str| -> Result<(), String> {
        clock.jump(2_000.0 - rtt);
        let held: Vec<_> = (0..3).map(|_| limiter.try_acquire()).collect::<Option<_>>().ok_or("no slot")?;
        clock.jump(rtt);
        for p in held {
            match how {
                "drop" => p.dropped(),
                "ignore" => p.ignore(),
                _ => p.release(),
            }
        }
        Ok(())
    };
    window(10.0, "release")?;
    ensure!(limiter.limit() == 5.0, "+1: {}", limiter.limit());
    ensure!(limiter.rtt_ms() == Some(10.0));
    window(10.0, "release")?;
    ensure!(limiter.limit() == 5.0, "never above maxLimit");
    window(150.0, "release")?;
    ensure!(limiter.limit() == 4.0, "late: 5 × 0.9 rounded down");
    window(10.0, "drop")?;
    ensure!(limiter.limit() == 3.0, "a drop backs off");
    window(500.0, "release")?;
    ensure!(limiter.limit() == 3.0, "never below minLimit");
    window(10.0, "ignore")?;
    ensure!(limiter.limit() == 3.0, "ignored calls are no samples");
    // A dropped permit is ignored, and gives its slot back once.
    let p = limiter.try_acquire().ok_or("no slot")?;
    ensure!(limiter.in_flight() == 1.0);
    drop(p);
    ensure!(limiter.in_flight() == 0.0);
    // run() measures its own round trips: a timeout is a drop.
    window(10.0, "release")?;
    ensure!(limiter.limit() == 4.0);
    clock.jump(2_000.0);
    for _ in 0..3 {
        let r = limiter
            .run(|| async { Err::<(), _>(Error::DeadlineExceeded { at: 0.0, late_by_ms: 0.0 }) }, RunOptions::new())
            .await;
        ensure!(r.is_err());
    }
    ensure!(limiter.limit() == 3.0, "the timeouts' window backed off: {}", limiter.limit());
    ensure!(limiter.in_flight() == 0.0);
    Ok(())
}

pub async fn a_full_limiter_sheds_or_queues_by_budget_and_an_abort_leaves_the_queue(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let limiter =
        ConcurrencyLimiter::new(LimiterOptions::new(Limit::Fixed(1.0)).max_queue(2.0)).map_err(|e| e.to_string())?;
    ensure!(limiter.estimated_wait_ms() == 0.0, "nothing measured yet");
    // One 100 ms round trip measured: the next in line waits about 100 ms.
    let p = limiter.try_acquire().ok_or("no slot")?;
    clock.jump(100.0);
    p.release();
    ensure!(limiter.estimated_wait_ms() == 100.0, "{}", limiter.estimated_wait_ms());
    let held = limiter.try_acquire().ok_or("no slot")?;
    let order = Rc::new(RefCell::new(Vec::<String>::new()));
    let outcome = Rc::new(RefCell::new(Vec::<String>::new()));
    let controller = AbortController::new().map_err(|_| "controller")?;
    let signal = controller.signal();
    let spawn = |name: &'static str, opts: RunOptions<'static>| {
        let (l, order, outcome) = (limiter.clone(), order.clone(), outcome.clone());
        spawn_local(async move {
            let r = l
                .run(
                    || async move {
                        order.borrow_mut().push(name.into());
                        Ok::<_, Error>(())
                    },
                    opts,
                )
                .await;
            outcome
                .borrow_mut()
                .push(format!("{name}: {}", r.map(|_| "ok".to_string()).unwrap_or_else(|e| e.name().into())));
        });
    };
    let signal: &'static web_sys::AbortSignal = Box::leak(Box::new(signal));
    spawn("a", RunOptions::new().signal(signal));
    settle().await;
    spawn("b", RunOptions::new().remaining_ms(250.0));
    settle().await;
    // Position 3 is past maxQueue; a short budget is shed even with room.
    let shed = limiter.run(|| async { Ok::<_, Error>(()) }, RunOptions::new()).await;
    ensure!(matches!(shed, Err(Error::Overloaded { limit, in_flight }) if limit == 1.0 && in_flight == 1.0));
    ensure!(limiter.queued() == 2);
    ensure!(limiter.try_acquire().is_none(), "waiting callers go first");
    let deadline = Deadline::in_ms(50.0).map_err(|e| e.to_string())?;
    let short = limiter.run(|| async { Ok::<_, Error>(()) }, RunOptions::new().deadline(&deadline)).await;
    ensure!(matches!(short, Err(Error::Overloaded { .. })), "full queue: {short:?}");
    // The Overloaded error reaches JavaScript branded, and comes back.
    let js = JsValue::from(shed.err().ok_or("not shed")?);
    ensure!(get(&js, "edgeDeadlineError").as_string().as_deref() == Some("Overloaded"));
    ensure!(get(&js, "inFlight").as_f64() == Some(1.0));
    ensure!(matches!(Error::from(js), Error::Overloaded { .. }));
    // a gives up: it leaves the queue with the signal's reason.
    controller.abort_with_reason(&JsValue::from_str("caller gave up"));
    settle().await;
    ensure!(outcome.borrow().join(",") == "a: Error", "{:?}", outcome.borrow());
    ensure!(limiter.queued() == 1);
    held.release();
    settle().await;
    ensure!(order.borrow().join(",") == "b", "{:?}", order.borrow());
    ensure!(outcome.borrow().join(",") == "a: Error,b: ok");
    ensure!((limiter.in_flight(), limiter.queued()) == (0.0, 0));
    // A budget below the estimated wait of its place is shed at once.
    let held = limiter.try_acquire().ok_or("no slot")?;
    spawn("c", RunOptions::new());
    settle().await;
    let wait = limiter.estimated_wait_ms();
    ensure!(wait > 0.0);
    let r = limiter.run(|| async { Ok::<_, Error>(()) }, RunOptions::new().remaining_ms(wait * 0.9)).await;
    ensure!(matches!(r, Err(Error::Overloaded { .. })), "{r:?}");
    held.release();
    settle().await;
    ensure!(order.borrow().join(",") == "b,c");
    ensure!(limiter.shed() >= 4.0);
    Ok(())
}

pub async fn a_queued_caller_whose_budget_ran_out_before_its_turn_is_shed(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let limiter =
        ConcurrencyLimiter::new(LimiterOptions::new(Limit::Fixed(1.0)).max_queue(2.0)).map_err(|e| e.to_string())?;
    let p = limiter.try_acquire().ok_or("no slot")?;
    clock.jump(100.0);
    p.release();
    let held = limiter.try_acquire().ok_or("no slot")?;
    let outcome = Rc::new(RefCell::new(Vec::<String>::new()));
    let spawn = |name: &'static str, remaining: f64| {
        let (l, outcome) = (limiter.clone(), outcome.clone());
        let ran = outcome.clone();
        spawn_local(async move {
            let run = || async move {
                ran.borrow_mut().push(format!("{name} ran"));
                Ok::<_, Error>(())
            };
            let r = l.run(run, RunOptions::new().remaining_ms(remaining)).await;
            outcome
                .borrow_mut()
                .push(format!("{name}: {}", r.map(|_| "ok".to_string()).unwrap_or_else(|e| e.name().into())));
        });
    };
    spawn("late", 150.0);
    settle().await;
    spawn("patient", 1_000.0);
    settle().await;
    ensure!(limiter.queued() == 2, "both budgets covered the estimated wait");
    clock.jump(400.0);
    held.release();
    settle().await;
    settle().await;
    ensure!(outcome.borrow().join(",") == "late: Overloaded,patient ran,patient: ok", "{:?}", outcome.borrow());
    ensure!(limiter.shed() == 1.0);
    ensure!((limiter.in_flight(), limiter.queued()) == (0.0, 0));
    Ok(())
}
