//! `CircuitBreaker` from Rust: the same core machine, names, defaults and
//! errors as the JavaScript one (tests/js/cases/breaker.js). Fake time: the
//! breaker reads the web API's clock.

use std::cell::RefCell;
use std::rc::Rc;

use edge_deadline::core::breaker::CircuitState;
use edge_deadline::web::{
    retry, BreakerOptions, CircuitBreaker, Deadline, Error, Failure, OpenReason, Plan, RetryOptions, StepKind,
    StepResult, StepSpec,
};
use wasm_bindgen::JsValue;

use super::{get, Ctx, FakeTime, Outcome};
use crate::ensure;

fn failing() -> Result<u32, Error> {
    Err(Error::Js(JsValue::from_str("upstream 503")))
}

pub async fn opens_after_failures_refuses_then_a_probe_closes_it(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let events = Rc::new(RefCell::new(Vec::new()));
    let seen = events.clone();
    let b = CircuitBreaker::new(BreakerOptions {
        consecutive_failures: Some(3.0),
        open_ms: Some(1_000.0),
        ..Default::default()
    })
    .map_err(|e| e.to_string())?
    .on_state_change(move |e| seen.borrow_mut().push((e.from, e.to, e.reason)));
    for _ in 0..3 {
        ensure!(b.run("llm", None, || async { failing() }).await.is_err());
    }
    ensure!(b.state("llm") == CircuitState::Open);
    ensure!(
        events.borrow().as_slice()
            == [(CircuitState::Closed, CircuitState::Open, Some(OpenReason::ConsecutiveFailures))]
    );
    clock.advance(400.0).await;
    let mut called = false;
    let refused = b
        .run("llm", None, || {
            called = true;
            async { Ok(1) }
        })
        .await;
    ensure!(!called, "a refused call is never made");
    let Err(e) = refused else { return Err("an open breaker let a call through".into()) };
    ensure!(e.name() == "CircuitOpen" && !e.is_timeout());
    ensure!(
        e.to_string() == "circuit 'llm' is open: calls fail at once until it lets a probe through in 600 ms",
        "{e}"
    );
    ensure!(matches!(&e, Error::CircuitOpen { state: "open", retry_in_ms, .. } if *retry_in_ms == 600.0));
    // It reaches JavaScript branded, with the same fields as the JS class.
    let js = JsValue::from(e);
    ensure!(get(&js, "edgeDeadlineError").as_string().as_deref() == Some("CircuitOpen"));
    ensure!(get(&js, "retryInMs").as_f64() == Some(600.0) && get(&js, "key").as_string().as_deref() == Some("llm"));
    ensure!(matches!(Error::from(js), Error::CircuitOpen { .. }), "and comes back");
    ensure!(b.state("other") == CircuitState::Closed, "keys are independent");
    clock.advance(600.0).await;
    let permit = b.acquire("llm", None).map_err(|e| e.to_string())?;
    ensure!(permit.probe());
    ensure!(
        matches!(b.acquire("llm", None), Err(Error::CircuitOpen { state: "half-open", .. })),
        "one probe at a time"
    );
    permit.success();
    ensure!(b.state("llm") == CircuitState::Closed);
    ensure!(events.borrow().len() == 3);
    Ok(())
}

pub async fn slow_calls_over_their_timeout_open_it_and_a_slow_probe_reopens(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let b = CircuitBreaker::new(BreakerOptions {
        consecutive_failures: Some(0.0),
        minimum_calls: Some(2.0),
        slow_call_rate: Some(1.0),
        open_ms: Some(100.0),
        ..Default::default()
    })
    .map_err(|e| e.to_string())?;
    for _ in 0..2 {
        let p = b.acquire("db", Some(200.0)).map_err(|e| e.to_string())?;
        clock.advance(300.0).await;
        p.success();
    }
    ensure!(b.state("db") == CircuitState::Open, "two slow successes of two calls");
    clock.advance(100.0).await;
    let p = b.acquire("db", Some(200.0)).map_err(|e| e.to_string())?;
    clock.advance(201.0).await;
    p.success();
    ensure!(b.state("db") == CircuitState::Open, "a slow probe reopens");
    Ok(())
}

pub async fn state_crosses_between_breakers_as_bytes_and_bad_bytes_change_nothing(_: &Ctx) -> Outcome {
    let _clock = FakeTime::install();
    let a = CircuitBreaker::new(BreakerOptions { consecutive_failures: Some(1.0), ..Default::default() })
        .map_err(|e| e.to_string())?;
    ensure!(a.run("llm", None, || async { failing() }).await.is_err());
    let bytes = a.export_state();
    let b = CircuitBreaker::new(BreakerOptions::default()).map_err(|e| e.to_string())?;
    b.import_state(&bytes).map_err(|e| e.to_string())?;
    ensure!(b.state("llm") == CircuitState::Open);
    let before = b.keys();
    let e = b.import_state(&bytes[..bytes.len() - 1]).err().ok_or("truncated bytes were taken")?;
    ensure!((e.name(), e.param(), e.code()) == ("RangeError", Some("bytes"), Some("BAD_STATE")), "{e}");
    ensure!(b.keys() == before);
    Ok(())
}

pub async fn bad_options_name_the_option(_: &Ctx) -> Outcome {
    let e = CircuitBreaker::new(BreakerOptions { failure_rate: Some(2.0), ..Default::default() })
        .err()
        .ok_or("accepted")?;
    ensure!((e.param(), e.code()) == (Some("failureRate"), Some("OUT_OF_RANGE")), "{e}");
    let e = CircuitBreaker::new(BreakerOptions { open_ms: Some(f64::NAN), ..Default::default() })
        .err()
        .ok_or("accepted")?;
    ensure!((e.param(), e.code()) == (Some("openMs"), Some("NOT_FINITE")), "{e}");
    let e = CircuitBreaker::new(BreakerOptions { window_size: Some(5.0), window_ms: Some(5.0), ..Default::default() })
        .err()
        .ok_or("accepted")?;
    ensure!((e.param(), e.code()) == (Some("windowMs"), Some("CONFLICT")), "{e}");
    Ok(())
}

pub async fn retry_waits_for_a_probe_when_the_deadline_allows_else_stops_circuit_open(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let b = Rc::new(
        CircuitBreaker::new(BreakerOptions {
            consecutive_failures: Some(2.0),
            open_ms: Some(1_000.0),
            ..Default::default()
        })
        .map_err(|e| e.to_string())?,
    );
    let calls = Rc::new(std::cell::Cell::new(0));
    let counted = calls.clone();
    let down = move |_, _| {
        counted.set(counted.get() + 1);
        async { Err::<u32, _>(Error::Js(JsValue::from_str("503"))) }
    };
    let first = Rc::new(RefCell::new(None));
    let put = first.clone();
    let circuit = b.circuit("llm");
    wasm_bindgen_futures::spawn_local(async move {
        let d = Deadline::in_ms(500.0).unwrap();
        let options = RetryOptions::new(50.0).backoff(1.0, 1.0, 0.0).max_attempts(5).classify(|_| Failure::NotApplied);
        *put.borrow_mut() = Some(retry(&d, options.circuit(circuit), down).await);
    });
    clock.advance(10.0).await;
    let e = first.borrow_mut().take().ok_or("still retrying")?.err().ok_or("a failing call succeeded")?;
    ensure!(calls.get() == 2, "no attempt went into the open breaker: {} calls", calls.get());
    match &e {
        Error::RetryFailed { reason, last, attempts, .. } => {
            ensure!(reason == "circuit-open", "{reason}");
            ensure!(attempts.len() == 2);
            ensure!(matches!(last.as_deref(), Some(Error::CircuitOpen { .. })), "{last:?}");
        }
        other => return Err(format!("gave {other:?}")),
    }
    ensure!(!e.is_timeout());
    // A deadline past the half-open instant waits for the probe, which answers.
    let out = Rc::new(RefCell::new(None));
    let put = out.clone();
    let circuit = b.circuit("llm");
    wasm_bindgen_futures::spawn_local(async move {
        let d = Deadline::in_ms(5_000.0).unwrap();
        let r = retry(&d, RetryOptions::new(50.0).circuit(circuit), |_, _| async { Ok::<_, Error>(7) }).await;
        *put.borrow_mut() = Some(r.map_err(|e| e.to_string()));
    });
    // Opened at 1 ms (the second failure, after a 1 ms backoff): a probe may go at 1 001.
    clock.advance(990.0).await;
    ensure!(out.borrow().is_none(), "it went before the breaker let a probe through");
    clock.advance(2.0).await;
    ensure!(out.borrow_mut().take() == Some(Ok(7)), "the probe answered");
    ensure!(b.state("llm") == CircuitState::Closed);
    Ok(())
}

pub async fn a_plan_step_guarded_by_a_circuit_is_skipped_or_refused_and_the_fallback_runs(_: &Ctx) -> Outcome {
    let _clock = FakeTime::install();
    let b = Rc::new(
        CircuitBreaker::new(BreakerOptions {
            consecutive_failures: Some(1.0),
            open_ms: Some(10_000.0),
            ..Default::default()
        })
        .map_err(|e| e.to_string())?,
    );
    let d = Deadline::in_ms(2_000.0).map_err(|e| e.to_string())?;
    let plan = Plan::new(
        &d,
        vec![
            StepSpec::new("search", StepKind::Optional, 10.0),
            StepSpec::new("generate", StepKind::Mandatory, 10.0),
            StepSpec::new("fallback", StepKind::Fallback, 10.0),
        ],
    )
    .map_err(|e| e.to_string())?;
    let (search, generate) = (b.circuit("search"), b.circuit("generate"));
    let failed = plan.run_guarded("search", &search, |_, _| async { Err::<(), _>(Error::Js("500".into())) }).await;
    ensure!(failed.is_err() && search.state() == CircuitState::Open);
    match plan.run_guarded("search", &search, |_, _| async { Ok(()) }).await {
        Ok(StepResult::Skipped(reason)) => ensure!(
            reason.to_string()
                == "its circuit breaker is open (its dependency is failing) and lets a probe through in 10000 ms",
            "{reason}"
        ),
        other => return Err(format!("a refused optional step gave {other:?}")),
    }
    let _ = plan.run_guarded("generate", &generate, |_, _| async { Err::<(), _>(Error::Js("500".into())) }).await;
    let refused = plan.run_guarded("generate", &generate, |_, _| async { Ok(()) }).await;
    ensure!(matches!(refused, Err(Error::CircuitOpen { .. })), "{refused:?}");
    let fallback = plan.run("fallback", |_, _| async { Ok("sorry") }).await;
    ensure!(matches!(fallback, Ok(StepResult::Ran("sorry"))), "{fallback:?}");
    let bad = plan.run_guarded("fallback", &search, |_, _| async { Ok(()) }).await;
    ensure!(matches!(bad, Err(Error::InvalidType { param: "circuit", .. })), "{bad:?}");
    let outcomes: Vec<String> = plan.records().iter().map(|r| format!("{:?}", r.outcome)).collect();
    ensure!(outcomes == ["Error", "Skipped", "Error", "Error", "Ok"], "{outcomes:?}");
    Ok(())
}

/// The reproduction: `breaker.run(|| limiter.run(call))` with a full limiter,
/// an inner breaker's refusal and five callers that left keep a healthy key
/// closed; a timeout still counts, and a shed probe frees its permit.
pub async fn shed_calls_inner_refusals_and_callers_that_left_count_nothing(_: &Ctx) -> Outcome {
    use edge_deadline::web::{ConcurrencyLimiter, Limit, LimiterOptions, RunOptions};
    let clock = FakeTime::install();
    let b = CircuitBreaker::new(BreakerOptions {
        consecutive_failures: Some(5.0),
        open_ms: Some(1_000.0),
        ..Default::default()
    })
    .map_err(|e| e.to_string())?;
    let limiter = ConcurrencyLimiter::new(LimiterOptions::new(Limit::Fixed(1.0))).map_err(|e| e.to_string())?;
    let held = limiter.try_acquire().ok_or("the limiter's one slot")?;
    for _ in 0..10 {
        let r = b.run("dep", None, || limiter.run(|| async { Ok(1) }, RunOptions::new())).await;
        ensure!(matches!(r, Err(Error::Overloaded { .. })), "{r:?}");
    }
    ensure!(b.state("dep") == CircuitState::Closed, "shed calls never reached the dependency");
    ensure!(b.stats("dep").calls == 0 && b.stats("dep").consecutive_failures == 0);
    let inner = CircuitBreaker::new(BreakerOptions { consecutive_failures: Some(1.0), ..Default::default() })
        .map_err(|e| e.to_string())?;
    let _ = inner.run("x", None, || async { failing() }).await;
    for _ in 0..5 {
        let r = b.run("dep", None, || inner.run("x", None, || async { Ok(1) })).await;
        ensure!(matches!(r, Err(Error::CircuitOpen { .. })), "{r:?}");
    }
    ensure!(b.state("dep") == CircuitState::Closed, "an inner CircuitOpen is not a failure");
    let left = || {
        let e = js_sys::Error::new("The operation was aborted.");
        e.set_name("AbortError");
        Error::Js(e.into())
    };
    for _ in 0..5 {
        ensure!(b.run("dep", None, || async { Err::<u32, _>(left()) }).await.is_err());
    }
    ensure!(b.state("dep") == CircuitState::Closed, "five departures keep a healthy key closed");
    ensure!(b.stats("dep").calls == 0, "nothing was counted");
    let late = b.run("dep", None, || async { Err::<u32, _>(Error::DeadlineExceeded { at: 0.0, late_by_ms: 1.0 }) });
    ensure!(late.await.is_err());
    ensure!(b.stats("dep").failures == 1 && b.stats("dep").slow_calls == 1, "a timeout is a slow failure");
    for _ in 0..4 {
        let _ = b.run("dep", None, || async { failing() }).await;
    }
    ensure!(b.state("dep") == CircuitState::Open, "real failures still open it");
    clock.advance(1_000.0).await;
    let r = b.run("dep", None, || limiter.run(|| async { Ok(1) }, RunOptions::new())).await;
    ensure!(matches!(r, Err(Error::Overloaded { .. })));
    ensure!(b.state("dep") == CircuitState::HalfOpen, "a shed probe is no success");
    let probe = b.acquire("dep", None).map_err(|e| e.to_string())?;
    ensure!(probe.probe(), "the shed probe's permit is free again");
    probe.failed_with(&left());
    ensure!(b.acquire("dep", None).map_err(|e| e.to_string())?.probe(), "a probe whose caller left frees it too");
    held.release();
    Ok(())
}
