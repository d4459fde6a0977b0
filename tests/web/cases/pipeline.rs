//! Plans, retries, hedging, propagation headers and platform caps.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use edge_deadline::web::{
    hedge, retry, Bound, Deadline, Error, Failure, HeaderFormat, HedgeOptions, Outcome, Plan, Platform, PlatformCaps,
    RetryOptions, StepKind, StepResult, StepSpec, StreamStepOptions, Tier, Trigger,
};
use wasm_bindgen::prelude::*;
use web_sys::{AbortController, Headers};

use super::{aborted, get, now, Ctx, FakeTime, Outcome as CaseOutcome};
use crate::ensure;

fn pending<T>() -> std::future::Pending<Result<T, Error>> {
    std::future::pending()
}

pub async fn a_plan_caps_each_step_and_traces_it(_: &Ctx) -> CaseOutcome {
    let d = Deadline::in_ms(2_000.0).unwrap();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let hook = seen.clone();
    let plan = Plan::new(
        &d,
        vec![
            StepSpec::new("retrieve", StepKind::Optional, 10.0).preferred(50.0),
            StepSpec::new("generate", StepKind::Mandatory, 20.0).reserve(300.0),
            StepSpec::new("fallback", StepKind::Fallback, 10.0).reserve(100.0),
        ],
    )
    .map_err(|e| e.to_string())?
    .on_step(move |r| hook.borrow_mut().push(r.step.clone()));
    let signal = d.signal();
    let got = plan.run("retrieve", |s, cap| async move { Ok((s, cap)) }).await.map_err(|e| e.to_string())?;
    let StepResult::Ran((step_signal, cap)) = got else { return Err("retrieve was skipped".into()) };
    ensure!(cap == 50.0, "cap {cap}");
    ensure!(step_signal != signal, "a step gets a signal of its own");
    let gen_cap = match plan.run("generate", |_, cap| async move { Ok(cap) }).await {
        Ok(StepResult::Ran(cap)) => cap,
        other => return Err(format!("generate: {other:?}")),
    };
    ensure!(gen_cap <= d.remaining() + 1.0 - 100.0, "generate's cap {gen_cap} leaves the fallback's reserve");
    ensure!(*seen.borrow() == vec!["retrieve".to_string(), "generate".to_string()], "hook saw {:?}", seen.borrow());
    let records = plan.records();
    ensure!(records.len() == 2 && records.iter().all(|r| r.outcome == Outcome::Ok));
    let json = plan.trace_json();
    ensure!(json.starts_with("[{\"step\":\"retrieve\"") && json.contains("\"outcome\":\"ok\""), "{json}");
    Ok(())
}

pub async fn a_step_cut_at_its_cap_is_a_step_timeout(_: &Ctx) -> CaseOutcome {
    let clock = FakeTime::install();
    let signal = Rc::new(RefCell::new(None));
    let keep = signal.clone();
    let t0 = now();
    let outcome = Rc::new(RefCell::new(None));
    let out = outcome.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let d = Deadline::in_ms(5_000.0).unwrap();
        let plan = Plan::new(&d, vec![StepSpec::new("search", StepKind::Optional, 10.0).preferred(40.0)]).unwrap();
        // The step ignores its signal: `run` still returns at the cap.
        let result = plan
            .run("search", move |s, _| {
                *keep.borrow_mut() = Some(s);
                pending::<()>()
            })
            .await;
        let elapsed = now() - t0;
        *out.borrow_mut() = Some((result, elapsed, plan.records()[0].outcome, d.signal().aborted()));
    });
    clock.advance(39.0).await;
    ensure!(outcome.borrow().is_none(), "returned before its cap");
    clock.advance(1.0).await;
    let Some((result, elapsed, recorded, deadline_aborted)) = outcome.borrow_mut().take() else {
        return Err("not returned at its cap".into());
    };
    match result {
        Err(Error::StepTimeout { step, cap_ms }) => ensure!(step == "search" && cap_ms == 40.0, "{step} {cap_ms}"),
        other => return Err(format!("gave {other:?}")),
    }
    ensure!(elapsed == 40.0, "returned after {elapsed} ms");
    let s = signal.borrow().clone().unwrap();
    ensure!(s.aborted(), "the step's signal was aborted");
    let reason = s.reason();
    ensure!(get(&reason, "edgeDeadlineError").as_string().as_deref() == Some("StepTimeout"), "branded StepTimeout");
    ensure!(
        get(&reason, "step").as_string().as_deref() == Some("search") && get(&reason, "capMs").as_f64() == Some(40.0)
    );
    ensure!(recorded == Outcome::Deadline);
    ensure!(!deadline_aborted, "the deadline itself still has time");
    Ok(())
}

pub async fn a_short_deadline_skips_or_refuses_steps_never_a_range_error(_: &Ctx) -> CaseOutcome {
    let d = Deadline::in_ms(60.0).unwrap();
    let ran = Rc::new(Cell::new(false));
    let plan = Plan::new(
        &d,
        vec![
            StepSpec::new("rerank", StepKind::Optional, 100.0),
            StepSpec::new("answer", StepKind::Mandatory, 5.0).reserve(20.0),
        ],
    )
    .unwrap();
    let flag = ran.clone();
    match plan
        .run("rerank", |_, _| async move {
            flag.set(true);
            Ok(())
        })
        .await
    {
        Ok(StepResult::Skipped(_)) => {}
        other => return Err(format!("rerank: {other:?}")),
    }
    ensure!(!ran.get(), "a skipped step ran");
    // A plan is made whatever the time left: the shortage shows when steps are decided.
    let short = Deadline::in_ms(10.0).unwrap();
    let plan = Plan::new(
        &short,
        vec![StepSpec::new("answer", StepKind::Mandatory, 50.0), StepSpec::new("sorry", StepKind::Fallback, 100.0)],
    )
    .map_err(|e| format!("a short deadline refused the plan: {e}"))?;
    match plan.run("answer", |_, _| async { Ok(()) }).await {
        Err(Error::InsufficientBudget { min_ms, .. }) => ensure!(min_ms == 50.0),
        other => return Err(format!("answer: {other:?}")),
    }
    // The fallback runs below its minimum while any time is left.
    match plan.run("sorry", |_, cap| async move { Ok(cap) }).await {
        Ok(StepResult::Ran(cap)) => ensure!(cap > 0.0 && cap <= 10.0, "fallback cap {cap}"),
        other => return Err(format!("the fallback did not run with what was left: {other:?}")),
    }
    let expired = Deadline::at(1.0).unwrap();
    let plan = Plan::new(
        &expired,
        vec![StepSpec::new("x", StepKind::Optional, 1.0), StepSpec::new("sorry", StepKind::Fallback, 100.0)],
    )
    .map_err(|e| e.to_string())?;
    ensure!(matches!(plan.run("x", |_, _| async { Ok(()) }).await, Ok(StepResult::Skipped(_))));
    // The fallback is the answer of last resort: with nothing left it still runs, its signal aborted, its cap 0.
    match plan.run("sorry", |signal, cap| async move { Ok((signal.aborted(), cap)) }).await {
        Ok(StepResult::Ran((true, cap))) => ensure!(cap == 0.0, "fallback cap {cap}"),
        other => return Err(format!("the fallback did not run with nothing left: {other:?}")),
    }
    // A step that fails with StreamStalled is traced as stalled.
    let d = Deadline::in_ms(1_000.0).unwrap();
    let plan = Plan::new(&d, vec![StepSpec::new("generate", StepKind::Optional, 1.0)]).map_err(|e| e.to_string())?;
    let stalled = Error::StreamStalled {
        phase: edge_deadline::web::StallPhase::Stall,
        after_ms: 300.0,
        chunks: 4.0,
        bytes: 120.0,
    };
    ensure!(plan.run("generate", |_, _| async move { Err::<(), _>(stalled) }).await.is_err());
    ensure!(plan.records()[0].outcome.as_str() == "stalled", "{:?}", plan.records());
    Ok(())
}

pub async fn bad_plans_name_the_field(_: &Ctx) -> CaseOutcome {
    let d = Deadline::in_ms(1_000.0).unwrap();
    let cases: Vec<(Vec<StepSpec>, &str)> = vec![
        (vec![], "steps"),
        (vec![StepSpec::new("a", StepKind::Optional, f64::NAN)], "minMs"),
        (vec![StepSpec::new("a", StepKind::Optional, 1.0), StepSpec::new("a", StepKind::Optional, 1.0)], "name"),
        (vec![StepSpec::new("a", StepKind::Optional, 10.0).preferred(5.0)], "minMs"),
        (vec![StepSpec::new("a", StepKind::Mandatory, 10.0).reserve(-1.0)], "reserveMs"),
    ];
    for (steps, param) in cases {
        match Plan::new(&d, steps) {
            Err(Error::InvalidArgument { param: p, message, .. }) => ensure!(p == param, "{p} for {param}: {message}"),
            other => return Err(format!("{param}: {:?}", other.map(|_| ()))),
        }
    }
    let plan = Plan::new(&d, vec![StepSpec::new("a", StepKind::Optional, 1.0)]).unwrap();
    match plan.run("nope", |_, _| async { Ok(()) }).await {
        Err(Error::InvalidArgument { param: "name", .. }) => Ok(()),
        other => Err(format!("an unknown step gave {other:?}")),
    }
}

pub async fn a_parent_abort_ends_the_running_step(_: &Ctx) -> CaseOutcome {
    let client = AbortController::new().unwrap();
    let d = Deadline::in_ms(5_000.0).unwrap().with_parent(&client.signal());
    let plan = Plan::new(&d, vec![StepSpec::new("slow", StepKind::Mandatory, 10.0)]).unwrap();
    let c = client.clone();
    let _t = edge_deadline::web::Timeout::new(20.0, move || c.abort_with_reason(&"client left".into())).unwrap();
    match plan.run("slow", |_, _| pending::<()>()).await {
        Err(Error::Js(v)) => ensure!(v.as_string().as_deref() == Some("client left")),
        other => return Err(format!("gave {other:?}")),
    }
    ensure!(plan.records()[0].outcome == Outcome::Aborted);
    // After the client left, a step that would be refused for time reports the departure instead.
    let tight = Deadline::in_ms(5_000.0).unwrap().with_parent(&client.signal());
    let plan = Plan::new(&tight, vec![StepSpec::new("huge", StepKind::Mandatory, 60_000.0)]).unwrap();
    match plan.run("huge", |_, _| async { Ok(()) }).await {
        Err(Error::Js(v)) => ensure!(v.as_string().as_deref() == Some("client left")),
        other => return Err(format!("a refused step after the client left gave {other:?}")),
    }
    ensure!(plan.records()[0].outcome == Outcome::Aborted);
    Ok(())
}

pub async fn retry_tries_again_until_an_attempt_succeeds(_: &Ctx) -> CaseOutcome {
    let d = Deadline::in_ms(5_000.0).unwrap();
    let calls = Rc::new(RefCell::new(Vec::new()));
    let log = calls.clone();
    let options =
        RetryOptions::new(10.0).backoff(1.0, 4.0, 0.0).max_attempts(5).seed(1).classify(|_| Failure::NotApplied);
    let value = retry(&d, options, move |signal, attempt| {
        log.borrow_mut().push((attempt.number, attempt.timeout_ms, signal.aborted()));
        async move {
            if attempt.number < 3 {
                Err(Error::Js("busy".into()))
            } else {
                Ok(attempt.number * 10)
            }
        }
    })
    .await
    .map_err(|e| e.to_string())?;
    ensure!(value == 30, "value {value}");
    let calls = calls.borrow();
    ensure!(calls.iter().map(|c| c.0).collect::<Vec<_>>() == vec![1, 2, 3], "{calls:?}");
    ensure!(calls.iter().all(|c| c.1 <= 5_000.0 && !c.2), "{calls:?}");
    Ok(())
}

pub async fn retry_timeouts_then_exhausted_with_every_attempt_reported(_: &Ctx) -> CaseOutcome {
    let clock = FakeTime::install();
    let t0 = now();
    let outcome = Rc::new(RefCell::new(None));
    let out = outcome.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let d = Deadline::in_ms(5_000.0).unwrap();
        let options =
            RetryOptions::new(5.0).attempt_timeout_ms(30.0).backoff(1.0, 2.0, 0.0).max_attempts(2).idempotent(true);
        let result = retry(&d, options, |_, _| pending::<()>()).await;
        *out.borrow_mut() = Some((result, now() - t0));
    });
    // Two attempts of 30 ms each and a backoff of 1 ms between them.
    clock.advance(59.0).await;
    ensure!(outcome.borrow().is_none(), "gave up before two attempt timeouts");
    clock.advance(10.0).await;
    let Some((result, elapsed)) = outcome.borrow_mut().take() else { return Err("still retrying".into()) };
    let e = result.err().ok_or("a hanging operation succeeded")?;
    match &e {
        Error::RetryFailed { reason, attempts, last, .. } => {
            ensure!(reason == "exhausted", "reason {reason}");
            ensure!(attempts.len() == 2 && attempts.iter().all(|a| a.outcome == "timeout"), "{attempts:?}");
            ensure!(
                matches!(last.as_deref(), Some(Error::AttemptTimeout { attempt: 2, timeout_ms }) if *timeout_ms == 30.0),
                "{last:?}"
            );
        }
        other => return Err(format!("gave {other:?}")),
    }
    ensure!((60.0..=62.0).contains(&elapsed), "took {elapsed} ms");
    let js = JsValue::from(e);
    ensure!(get(&js, "edgeDeadlineError").as_string().as_deref() == Some("RetryFailed"));
    ensure!(get(&js, "reason").as_string().as_deref() == Some("exhausted"));
    ensure!(js_sys::Array::from(&get(&js, "attempts")).length() == 2, "attempts is an array of records");
    ensure!(get(&get(&js, "cause"), "edgeDeadlineError").as_string().as_deref() == Some("AttemptTimeout"));
    Ok(())
}

pub async fn retry_never_repeats_an_ambiguous_non_idempotent_failure(_: &Ctx) -> CaseOutcome {
    let d = Deadline::in_ms(5_000.0).unwrap();
    let n = Rc::new(Cell::new(0));
    let count = n.clone();
    let e = retry(&d, RetryOptions::new(5.0), move |_, _| {
        count.set(count.get() + 1);
        async { Err::<(), _>(Error::Js("lost".into())) }
    })
    .await;
    ensure!(matches!(&e, Err(Error::RetryFailed { reason, .. }) if reason == "not-idempotent"), "{e:?}");
    ensure!(n.get() == 1, "{} attempts", n.get());
    Ok(())
}

pub async fn retry_ends_at_the_deadline(_: &Ctx) -> CaseOutcome {
    let d = Deadline::in_ms(60.0).unwrap();
    let e = retry(&d, RetryOptions::new(5.0).idempotent(true), |_, _| pending::<()>()).await;
    match e {
        Err(Error::RetryFailed { reason, last, .. }) => {
            ensure!(reason == "deadline", "reason {reason}");
            ensure!(matches!(last.as_deref(), Some(Error::DeadlineExceeded { .. })), "{last:?}");
        }
        other => return Err(format!("gave {other:?}")),
    }
    ensure!(now() >= d.instant_ms());
    Ok(())
}

/// Fetches the fixture's 429 with header `h: v` and fails as an HTTP client
/// would: a JavaScript error carrying the response.
async fn busy(ctx: &Ctx, h: &str, v: &str, signal: &web_sys::AbortSignal) -> Result<(), Error> {
    let response = busy_response(ctx, h, v, signal).await?;
    let error = js_sys::Error::new("HTTP 429");
    js_sys::Reflect::set(&error, &"response".into(), &response)?;
    Err(Error::Js(error.into()))
}

/// The fixture's 429 with header `h: v`, as a Response.
async fn busy_response(ctx: &Ctx, h: &str, v: &str, signal: &web_sys::AbortSignal) -> Result<JsValue, Error> {
    let url = format!("{}/pipeline/busy?h={h}&v={v}", ctx.fixture().map_err(|e| Error::Js(e.into()))?);
    let fetch: js_sys::Function = js_sys::Reflect::get(&js_sys::global(), &"fetch".into())?.into();
    let init = js_sys::Object::new();
    js_sys::Reflect::set(&init, &"signal".into(), signal)?;
    let response =
        wasm_bindgen_futures::JsFuture::from(js_sys::Promise::from(fetch.call2(&JsValue::NULL, &url.into(), &init)?))
            .await?;
    Ok(response)
}

pub async fn retry_refuses_a_server_wait_past_the_deadline_at_once(ctx: &Ctx) -> CaseOutcome {
    ctx.fixture()?;
    let clock = FakeTime::install();
    let d = Deadline::in_ms(2_000.0).unwrap();
    let calls = Rc::new(Cell::new(0));
    for (h, v) in [("retry-after", "30"), ("ratelimit-reset", "30"), ("x-ratelimit-reset", "30")] {
        calls.set(0);
        let n = calls.clone();
        let options = RetryOptions::new(100.0).classify(|_| Failure::NotApplied);
        let result = retry(&d, options, move |signal, _| {
            n.set(n.get() + 1);
            async move { busy(ctx, h, v, &signal).await }
        })
        .await;
        match result {
            Err(Error::RetryFailed { reason, message, attempts, retry_after_ms, remaining_ms, .. }) => {
                ensure!(reason == "retry-after", "{h}: {reason}: {message}");
                ensure!(
                    retry_after_ms == Some(30_000.0) && remaining_ms == Some(2_000.0),
                    "{h}: the wait asked for and the time left: {retry_after_ms:?}, {remaining_ms:?}"
                );
                ensure!(
                    message == "retry stopped after 1 attempt: the server asked for a 30000 ms wait, which would leave less than the 100 ms an attempt needs out of the 2000 ms remaining",
                    "{message}"
                );
                ensure!(attempts.len() == 1 && calls.get() == 1, "{h}: one attempt, no second");
            }
            other => return Err(format!("{h}: {other:?}")),
        }
        ensure!(clock.now() == d.instant_ms() - 2_000.0, "{h}: nothing was slept");
    }
    // A cap: refused with time to spare.
    let capped = RetryOptions::new(0.0).classify(|_| Failure::NotApplied).max_retry_after_ms(1_000.0);
    let long = Deadline::in_ms(60_000.0).unwrap();
    match retry(&long, capped, move |signal, _| async move { busy(ctx, "retry-after", "5", &signal).await }).await {
        Err(Error::RetryFailed { reason, message, .. }) => ensure!(
            reason == "retry-after"
                && message.ends_with("the server asked for a 5000 ms wait, over maxRetryAfterMs (1000 ms)"),
            "{reason}: {message}"
        ),
        other => return Err(format!("capped: {other:?}")),
    }
    // An attempt that fails with the Response itself is read the same way.
    let thrown = RetryOptions::new(100.0).classify(|_| Failure::NotApplied);
    let short = Deadline::in_ms(2_000.0).unwrap();
    let result = retry(&short, thrown, move |signal, _| async move {
        Err::<(), _>(Error::Js(busy_response(ctx, "retry-after", "30", &signal).await?))
    })
    .await;
    match result {
        Err(Error::RetryFailed { reason, message, .. }) => ensure!(
            reason == "retry-after" && message.contains("the server asked for a 30000 ms wait"),
            "thrown Response: {reason}: {message}"
        ),
        other => return Err(format!("thrown Response: {other:?}")),
    }
    Ok(())
}

pub async fn retry_bad_options_name_the_option(_: &Ctx) -> CaseOutcome {
    let d = Deadline::in_ms(1_000.0).unwrap();
    for (options, param) in [
        (RetryOptions::new(f64::NAN), "attemptMinMs"),
        (RetryOptions::new(5.0).backoff(1.0, 2.0, 2.0), "backoff.jitter"),
        (RetryOptions::new(5.0).max_attempts(0), "maxAttempts"),
        (RetryOptions::new(5.0).attempt_timeout_ms(f64::NAN), "attemptTimeoutMs"),
        (RetryOptions::new(5.0).jitter("half"), "backoff.jitter"),
        (RetryOptions::new(5.0).max_retry_after_ms(-1.0), "maxRetryAfterMs"),
    ] {
        match retry(&d, options, |_, _| async { Ok(()) }).await {
            Err(Error::InvalidArgument { param: p, .. }) => ensure!(p == param, "{p} for {param}"),
            other => return Err(format!("{param}: {other:?}")),
        }
    }
    // A timeout below the attempt minimum is a shortage: the loop stops, nothing throws.
    let ran = Rc::new(Cell::new(false));
    let flag = ran.clone();
    match retry(&d, RetryOptions::new(50.0).attempt_timeout_ms(10.0), move |_, _| {
        flag.set(true);
        async { Ok(()) }
    })
    .await
    {
        Err(Error::RetryFailed { reason, attempts, .. }) => {
            ensure!(reason == "insufficient" && attempts.is_empty(), "{reason}")
        }
        other => return Err(format!("a timeout below the minimum gave {other:?}")),
    }
    ensure!(!ran.get(), "no attempt starts below its minimum");
    Ok(())
}

pub async fn hedge_the_first_answer_wins_and_the_others_are_aborted(_: &Ctx) -> CaseOutcome {
    let d = Deadline::in_ms(5_000.0).unwrap();
    let signals = Rc::new(RefCell::new(Vec::new()));
    let keep = signals.clone();
    let winner = hedge(&d, HedgeOptions::new(20.0), move |signal, attempt| {
        keep.borrow_mut().push(signal.clone());
        async move {
            if attempt == 1 {
                let _ = aborted(&signal).await;
                Err(Error::Js("aborted".into()))
            } else {
                Ok(attempt)
            }
        }
    })
    .await
    .map_err(|e| e.to_string())?;
    ensure!(winner == 2, "winner {winner}");
    let signals = signals.borrow().clone();
    ensure!(signals.len() == 2 && signals[0].aborted() && !signals[1].aborted(), "the loser was aborted");
    ensure!(get(&signals[0].reason(), "name").as_string().as_deref() == Some("AbortError"));
    // Once a hedge has answered, its timer for the next attempt is gone: no attempt starts later.
    let started = Rc::new(Cell::new(0));
    let count = started.clone();
    let first = hedge(&d, HedgeOptions::new(20.0).max_attempts(3), move |_, attempt| {
        count.set(count.get() + 1);
        async move { Ok(attempt) }
    })
    .await
    .map_err(|e| e.to_string())?;
    super::wait(80.0).await;
    ensure!(first == 1 && started.get() == 1, "{} attempts started after the first answered", started.get());
    let all_fail =
        hedge(&d, HedgeOptions::new(5.0).max_attempts(3), |_, _| async { Err::<(), _>(Error::Js("no".into())) }).await;
    ensure!(
        matches!(&all_fail, Err(Error::RetryFailed { reason, attempts, .. }) if reason == "exhausted" && attempts.len() == 3),
        "{all_fail:?}"
    );
    match hedge(&d, HedgeOptions::new(-1.0), |_, _| async { Ok(()) }).await {
        Err(Error::InvalidArgument { param: "delayMs", .. }) => Ok(()),
        other => Err(format!("a negative delay gave {other:?}")),
    }
}

pub async fn hedge_failures_read_as_in_js_and_name_the_last_attempt_to_fail(_: &Ctx) -> CaseOutcome {
    let d = Deadline::in_ms(5_000.0).unwrap();
    // Attempt 1 fails at 80 ms; attempt 2 (the hedge at 5 ms) fails first, at 25 ms.
    let all_fail = hedge(&d, HedgeOptions::new(5.0), |_, attempt| async move {
        super::wait(if attempt == 1 { 80.0 } else { 20.0 }).await;
        Err::<(), _>(Error::Js(format!("fail {attempt}").into()))
    })
    .await;
    match &all_fail {
        Err(Error::RetryFailed { reason, message, attempts, last, .. }) => {
            ensure!(
                reason == "exhausted" && message == "hedge stopped after 2 attempts: all 2 attempts failed",
                "{message}"
            );
            let outcomes: Vec<_> = attempts.iter().map(|a| (a.attempt, a.outcome)).collect();
            ensure!(outcomes == [(1, "error"), (2, "error")], "{outcomes:?}");
            let cause = last.as_deref().map(|e| e.to_string());
            ensure!(cause.as_deref().is_some_and(|c| c.contains("fail 1")), "the cause is {cause:?}");
        }
        other => return Err(format!("{other:?}")),
    }
    let caller = web_sys::AbortController::new().unwrap();
    caller.abort();
    match hedge(&d, HedgeOptions::new(5.0).signal(&caller.signal()), |_, _| async { Ok(()) }).await {
        Err(Error::RetryFailed { reason, message, .. }) if reason == "aborted" => {
            ensure!(message == "hedge stopped after 0 attempts: the operation was aborted", "{message}");
            Ok(())
        }
        other => Err(format!("an aborted caller gave {other:?}")),
    }
}

pub async fn headers_carry_what_is_left_and_never_extend_the_local_cap(_: &Ctx) -> CaseOutcome {
    let d = Deadline::in_ms(5_000.0).unwrap();
    let headers = Headers::new().unwrap();
    d.to_headers(&headers, &[HeaderFormat::EdgeDeadlineRemainingMs, HeaderFormat::GrpcTimeout])
        .map_err(|e| e.to_string())?;
    let sent: f64 = headers.get("edge-deadline-remaining-ms").unwrap().unwrap().parse().unwrap();
    ensure!(sent <= 5_000.0 && sent > 4_900.0 && sent.fract() == 0.0, "sent {sent}");
    ensure!(headers.get("grpc-timeout").unwrap().is_some());
    let incoming = Deadline::from_headers(&headers, 10_000.0, 0.0).map_err(|e| e.to_string())?;
    ensure!(incoming.source.is_some() && incoming.rejected.is_empty());
    ensure!(
        (incoming.deadline.instant_ms() - d.instant_ms()).abs() < 50.0,
        "{} vs {}",
        incoming.deadline.instant_ms(),
        d.instant_ms()
    );
    let capped = Deadline::from_headers(&headers, 1_000.0, 0.0).unwrap();
    ensure!(capped.source.is_none() && capped.deadline.remaining() <= 1_000.0, "the local cap wins");
    let bad = Headers::new().unwrap();
    bad.set("grpc-timeout", "-5S").unwrap();
    bad.set("connect-timeout-ms", "250").unwrap();
    let r = Deadline::from_headers(&bad, 10_000.0, 0.0).unwrap();
    ensure!(r.source == Some(HeaderFormat::ConnectTimeoutMs) && r.deadline.remaining() <= 250.0);
    ensure!(matches!(r.rejected.as_slice(), [Error::InvalidHeader { header: "grpc-timeout", .. }]), "{:?}", r.rejected);
    let js = JsValue::from(r.rejected[0].clone());
    ensure!(get(&js, "edgeDeadlineError").as_string().as_deref() == Some("InvalidHeader"), "branded InvalidHeader");
    ensure!(get(&js, "header").as_string().as_deref() == Some("grpc-timeout"));
    ensure!(matches!(Deadline::from_headers(&bad, f64::NAN, 0.0), Err(Error::InvalidArgument { param: "maxMs", .. })));
    Ok(())
}

pub async fn headers_every_copy_of_a_repeated_header_counts(_: &Ctx) -> CaseOutcome {
    // A repeated field is read joined ("50m, 2S"): each copy counts, the earliest wins.
    let headers = Headers::new().unwrap();
    headers.append("grpc-timeout", "50m").unwrap();
    headers.append("grpc-timeout", "2S").unwrap();
    let r = Deadline::from_headers(&headers, 10_000.0, 0.0).map_err(|e| e.to_string())?;
    ensure!(r.source == Some(HeaderFormat::GrpcTimeout), "source {:?}", r.source);
    ensure!(r.deadline.remaining() <= 50.0, "the 50m copy lost: {} ms left", r.deadline.remaining());
    ensure!(r.rejected.is_empty(), "{:?}", r.rejected);
    // A bad copy is refused alone; the valid one still wins.
    let headers = Headers::new().unwrap();
    headers.append("grpc-timeout", &"9".repeat(300)).unwrap();
    headers.append("grpc-timeout", "50m").unwrap();
    let r = Deadline::from_headers(&headers, 10_000.0, 0.0).map_err(|e| e.to_string())?;
    ensure!(r.deadline.remaining() <= 50.0, "{} ms left", r.deadline.remaining());
    ensure!(matches!(r.rejected.as_slice(), [Error::InvalidHeader { header: "grpc-timeout", .. }]), "{:?}", r.rejected);
    Ok(())
}

pub async fn platform_caps_bound_the_deadline(_: &Ctx) -> CaseOutcome {
    let caps = PlatformCaps::builtin(Platform::CloudflareWorkers, Some(Tier::Paid), Trigger::Fetch)
        .map_err(|e| e.to_string())?;
    let (d, bound) = Deadline::for_platform(&caps, 8_000.0, 500.0).map_err(|e| e.to_string())?;
    ensure!(
        bound == Bound::Product && d.remaining() <= 7_500.0 && d.remaining() > 7_400.0,
        "{bound:?} {}",
        d.remaining()
    );
    let wait = PlatformCaps::builtin(Platform::CloudflareWorkers, Some(Tier::Paid), Trigger::AfterResponse).unwrap();
    let (d, bound) = Deadline::for_platform(&wait, 60_000.0, 1_000.0).unwrap();
    ensure!(bound == Bound::Wall && d.remaining() <= 29_000.0, "{bound:?}");
    // A reserve above the cap is a shortage: an expired deadline, not an error.
    let (d, _) = Deadline::for_platform(&caps, 300.0, 500.0).map_err(|e| e.to_string())?;
    ensure!(d.expired(), "a reserve above the cap leaves an expired deadline");
    match Deadline::for_platform(&caps, 300.0, -1.0) {
        Err(Error::InvalidArgument { param: "fallbackReserveMs", .. }) => Ok(()),
        other => Err(format!("a negative reserve gave {other:?}")),
    }
}

// ---- Plan::stream: a step that streams to the client ------------------------------------

fn stream_plan(d: &Deadline) -> Result<Plan<'_>, String> {
    Plan::new(
        d,
        vec![StepSpec::new("generate", StepKind::Mandatory, 50.0), StepSpec::new("respond", StepKind::Fallback, 100.0)],
    )
    .map_err(|e| e.to_string())
}

fn sse_response(body: &str) -> Result<web_sys::Response, Error> {
    let init = web_sys::ResponseInit::new();
    let headers = Headers::new().map_err(Error::from)?;
    let _ = headers.set("content-type", "text/event-stream");
    init.set_headers(&headers);
    web_sys::Response::new_with_opt_str_and_init(Some(body), &init).map_err(Error::from)
}

/// A response whose body sends `first` (if any), then nothing, never closing.
fn silent_after(first: &str) -> Result<web_sys::Response, Error> {
    let start =
        js_sys::Function::new_with_args("c", &format!("if ({first:?}) c.enqueue(new TextEncoder().encode({first:?}))"));
    let source = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&source, &"start".into(), &start);
    let stream = web_sys::ReadableStream::new_with_underlying_source(&source.unchecked_into()).map_err(Error::from)?;
    let init = web_sys::ResponseInit::new();
    let headers = Headers::new().map_err(Error::from)?;
    let _ = headers.set("content-type", "text/event-stream");
    init.set_headers(&headers);
    web_sys::Response::new_with_opt_readable_stream_and_init(Some(&stream), &init).map_err(Error::from)
}

async fn text_of(res: &web_sys::Response) -> Result<String, String> {
    let text = wasm_bindgen_futures::JsFuture::from(res.text().map_err(|e| format!("{e:?}"))?)
        .await
        .map_err(|e| format!("{e:?}"))?;
    text.as_string().ok_or_else(|| "no text".into())
}

pub async fn plan_stream_streams_the_body_and_ends_with_the_trace(_: &Ctx) -> CaseOutcome {
    let d = Deadline::in_ms(2_000.0).unwrap();
    let plan = stream_plan(&d)?;
    let budget = Rc::new(Cell::new(0.0));
    let seen = budget.clone();
    let res = plan
        .stream(
            "generate",
            move |_signal, cap| async move {
                seen.set(cap);
                sse_response(": hello\n\ndata: one\n\ndata: two\n\n")
            },
            StreamStepOptions::new().first_chunk_ms(1_000.0).stall_ms(1_000.0).trace(true),
        )
        .await
        .map_err(|e| e.to_string())?;
    ensure!(res.status() == 200, "status {}", res.status());
    ensure!(res.headers().get("content-type").ok().flatten().as_deref() == Some("text/event-stream"));
    let text = text_of(&res).await?;
    ensure!(
        text.starts_with(": hello\n\ndata: one\n\ndata: two\n\nevent: trace\ndata: [{\"step\":\"generate\""),
        "{text}"
    );
    ensure!(text.contains("\"outcome\":\"ok\",\"firstChunkMs\":"), "{text}");
    let records = plan.records();
    ensure!(records.len() == 1 && records[0].outcome == Outcome::Ok, "{records:?}");
    ensure!(records[0].first_chunk_ms.is_some(), "{records:?}");
    ensure!(budget.get() > 1_800.0 && budget.get() <= 2_000.0 - 105.0, "cap {}", budget.get());
    Ok(())
}

pub async fn plan_stream_no_first_event_gets_the_fallback_step(_: &Ctx) -> CaseOutcome {
    let d = Deadline::in_ms(2_000.0).unwrap();
    let plan = stream_plan(&d)?;
    let t0 = now();
    let res = plan
        .stream(
            "generate",
            |_signal, _cap| async move { silent_after("") },
            StreamStepOptions::new().first_chunk_ms(100.0).trace(true).fallback(|reason, _signal, budget| {
                let init = web_sys::ResponseInit::new();
                init.set_status(503);
                let body = format!("{}|{}", matches!(reason, Error::StreamStalled { .. }), budget > 1_500.0);
                web_sys::Response::new_with_opt_str_and_init(Some(&body), &init).map_err(Error::from)
            }),
        )
        .await
        .map_err(|e| e.to_string())?;
    let took = now() - t0;
    ensure!((100.0..100.0 + super::TIMER_SLACK_MS).contains(&took), "answered after {took} ms");
    ensure!(res.status() == 503, "status {}", res.status());
    ensure!(text_of(&res).await? == "true|true", "the fallback got the stall and what was left");
    let outcomes: Vec<_> = plan.records().iter().map(|r| r.outcome).collect();
    ensure!(outcomes == [Outcome::Stalled, Outcome::Ok], "{outcomes:?}");
    let timing = res.headers().get("server-timing").ok().flatten().unwrap_or_default();
    ensure!(timing.starts_with("generate;dur=") && timing.contains("desc=\"stalled, cap"), "{timing}");
    Ok(())
}

pub async fn plan_stream_a_stall_after_content_ends_with_an_error_event(_: &Ctx) -> CaseOutcome {
    let d = Deadline::in_ms(2_000.0).unwrap();
    let plan = stream_plan(&d)?;
    let res = plan
        .stream(
            "generate",
            |_signal, _cap| async move { silent_after("data: one\n\n") },
            StreamStepOptions::new().stall_ms(100.0).trace(true),
        )
        .await
        .map_err(|e| e.to_string())?;
    let text = text_of(&res).await?;
    ensure!(text.starts_with("data: one\n\nevent: error\ndata: {\"step\":\"generate\",\"outcome\":\"stalled\",\"code\":\"STREAM_STALLED\",\"reason\":\"the step stalled (stall): "), "{text}");
    ensure!(text.contains("\n\nevent: trace\ndata: [{\"step\":\"generate\""), "{text}");
    ensure!(plan.records()[0].outcome == Outcome::Stalled);
    ensure!(plan.records().len() == 1, "no fallback once content was sent");
    Ok(())
}

/// `on_error` gets the step's error as it is (before content: with the fallback; after it: with
/// `event: error`) while the client gets our words and a code, as the JavaScript `onError`.
pub async fn plan_stream_on_error_gets_the_steps_error_while_the_client_gets_our_words(_: &Ctx) -> CaseOutcome {
    let seen: Rc<RefCell<Vec<Error>>> = Rc::new(RefCell::new(Vec::new()));
    let d = Deadline::in_ms(2_000.0).unwrap();
    let plan = stream_plan(&d)?;
    let log = seen.clone();
    let res = plan
        .stream(
            "generate",
            |_signal, _cap| async move {
                Err::<web_sys::Response, _>(Error::Js(
                    js_sys::Error::new("refused by http://user:sk-9@10.0.3.7/v1").into(),
                ))
            },
            StreamStepOptions::new().on_error(move |e| log.borrow_mut().push(e.clone())),
        )
        .await
        .map_err(|e| e.to_string())?;
    ensure!(res.status() == 502, "status {}", res.status());
    let text = text_of(&res).await?;
    ensure!(text.contains("\"code\":\"STEP_FAILED\"") && !text.contains("10.0.3.7"), "{text}");
    {
        let seen = seen.borrow();
        ensure!(seen.len() == 1, "on_error called {} times", seen.len());
        let message = js_sys::Error::from(JsValue::from(seen[0].clone())).message();
        ensure!(String::from(message).contains("10.0.3.7"), "on_error got {:?}", seen[0]);
    }

    let d = Deadline::in_ms(2_000.0).unwrap();
    let plan = stream_plan(&d)?;
    let log = seen.clone();
    let res = plan
        .stream(
            "generate",
            |_signal, _cap| async move { silent_after("data: one\n\n") },
            StreamStepOptions::new().stall_ms(100.0).on_error(move |e| log.borrow_mut().push(e.clone())),
        )
        .await
        .map_err(|e| e.to_string())?;
    let text = text_of(&res).await?;
    ensure!(text.contains("event: error\ndata: {\"step\":\"generate\",\"outcome\":\"stalled\""), "{text}");
    let seen = seen.borrow();
    ensure!(seen.len() == 2 && matches!(seen[1], Error::StreamStalled { .. }), "on_error got {seen:?}");
    Ok(())
}

pub async fn plan_stream_too_little_time_runs_no_step_and_the_default_fallback_says_why(_: &Ctx) -> CaseOutcome {
    let d = Deadline::in_ms(120.0).unwrap();
    let plan = stream_plan(&d)?;
    let called = Rc::new(Cell::new(false));
    let flag = called.clone();
    let res = plan
        .stream(
            "generate",
            move |_signal, _cap| async move {
                flag.set(true);
                sse_response("data: x\n\n")
            },
            StreamStepOptions::new(),
        )
        .await
        .map_err(|e| e.to_string())?;
    ensure!(!called.get(), "the step was run");
    ensure!(res.status() == 504, "status {}", res.status());
    let text = text_of(&res).await?;
    ensure!(text.contains("\"reason\":\"the step did not start: "), "{text}");
    let outcomes: Vec<_> = plan.records().iter().map(|r| r.outcome).collect();
    ensure!(outcomes == [Outcome::Insufficient, Outcome::Ok], "{outcomes:?}");
    let bad = plan
        .stream("generate", |_s, _c| async move { sse_response("") }, StreamStepOptions::new().stall_ms(-1.0))
        .await;
    ensure!(matches!(&bad, Err(e) if e.param().is_some()), "a bad limit names its parameter: {bad:?}");
    Ok(())
}
