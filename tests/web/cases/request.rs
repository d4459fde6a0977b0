//! A request's deadline (`Deadline::for_request`) and the wire pair, as
//! tests/js/cases/request.js checks them for the JavaScript API.

use edge_deadline::web::{Deadline, Error, HeaderFormat, LimitKind, RequestOptions, Wire};
use web_sys::{AbortController, Request, RequestInit};

use super::{Ctx, FakeTime, Outcome};
use crate::ensure;

fn request(header: Option<&str>, signal: Option<&web_sys::AbortSignal>) -> Request {
    let init = RequestInit::new();
    let headers = web_sys::Headers::new().unwrap();
    if let Some(v) = header {
        headers.set("edge-deadline-remaining-ms", v).unwrap();
    }
    init.set_headers(&headers);
    if let Some(s) = signal {
        init.set_signal(Some(s));
    }
    Request::new_with_str_and_init("http://127.0.0.1/x", &init).unwrap()
}

fn budget(ms: f64) -> RequestOptions {
    RequestOptions { budget_ms: Some(ms), ..Default::default() }
}

pub async fn for_request_takes_the_earliest_limit_and_names_it(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let d = Deadline::for_request(&request(None, None), &budget(8_000.0)).map_err(|e| e.to_string())?;
    ensure!(d.limit == LimitKind::Budget && d.deadline.remaining() == 8_000.0, "budget: {:?}", d.limit);
    let d = Deadline::for_request(&request(Some("500"), None), &budget(8_000.0)).map_err(|e| e.to_string())?;
    ensure!(d.limit == LimitKind::Caller && d.source == Some(HeaderFormat::EdgeDeadlineRemainingMs));
    ensure!(d.deadline.remaining() == 500.0, "the caller's 500 ms: {}", d.deadline.remaining());
    let d = Deadline::for_request(&request(Some("60000"), None), &budget(2_000.0)).map_err(|e| e.to_string())?;
    ensure!(d.limit == LimitKind::Budget && d.deadline.remaining() == 2_000.0, "a caller never extends it");
    let vercel =
        RequestOptions { platform: Some("vercel-edge".into()), fallback_reserve_ms: Some(1_000.0), ..budget(60_000.0) };
    let d = Deadline::for_request(&request(None, None), &vercel).map_err(|e| e.to_string())?;
    ensure!(d.limit == LimitKind::Platform && d.deadline.remaining() == 24_000.0);
    let d = Deadline::for_request(&request(Some("soon"), None), &budget(900.0)).map_err(|e| e.to_string())?;
    ensure!(d.limit == LimitKind::Budget && d.rejected.len() == 1, "a malformed header is ignored and reported");
    drop(clock);
    Ok(())
}

pub async fn for_request_follows_the_client_and_a_client_gone_is_a_shortage(_: &Ctx) -> Outcome {
    let client = AbortController::new().unwrap();
    let d =
        Deadline::for_request(&request(None, Some(&client.signal())), &budget(5_000.0)).map_err(|e| e.to_string())?;
    let signal = d.deadline.signal();
    ensure!(!signal.aborted() && d.deadline.limit() == LimitKind::Budget);
    client.abort_with_reason(&js_sys::Error::new("the client left"));
    ensure!(signal.aborted(), "aborted when the client left");
    ensure!(d.deadline.limit() == LimitKind::Client);
    let gone = AbortController::new().unwrap();
    gone.abort();
    let d = Deadline::for_request(&request(None, Some(&gone.signal())), &budget(5_000.0)).map_err(|e| e.to_string())?;
    ensure!(d.deadline.expired() && d.limit == LimitKind::Client, "a client already gone: expired, not an error");
    match Deadline::for_request(&request(None, None), &RequestOptions::default()) {
        Err(Error::InvalidType { param: "options", code: "MISSING_OPTION", .. }) => {}
        other => return Err(format!("no bound: {other:?}")),
    }
    match Deadline::for_request(&request(None, None), &budget(f64::NAN)) {
        Err(Error::InvalidArgument { param: "budgetMs", .. }) => {}
        other => return Err(format!("NaN budget: {other:?}")),
    }
    Ok(())
}

pub async fn the_wire_pair_carries_remaining_reserve_and_limit_capped(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let sender = Deadline::in_ms(1_000.7).map_err(|e| e.to_string())?.reserve(200.0).map_err(|e| e.to_string())?;
    let wire = sender.to_wire();
    ensure!(wire == Wire { remaining_ms: 800.0, reserve_ms: 200.0, limit: LimitKind::Budget }, "{wire:?}");
    // serde-friendly: the same JSON the JavaScript API sends.
    let json = serde_json::to_string(&wire).map_err(|e| e.to_string())?;
    ensure!(json == r#"{"remainingMs":800.0,"reserveMs":200.0,"limit":"budget"}"#, "{json}");
    let back: Wire =
        serde_json::from_str(r#"{"remainingMs":800,"reserveMs":200,"limit":"caller"}"#).map_err(|e| e.to_string())?;
    let d = Deadline::from_wire(&back, 5_000.0, 0.0).map_err(|e| e.to_string())?;
    ensure!(d.remaining() == 800.0 && d.limit() == LimitKind::Caller);
    ensure!(
        Deadline::from_wire(&back, 300.0, 0.0).map_err(|e| e.to_string())?.remaining() == 300.0,
        "capped by max_ms"
    );
    ensure!(Deadline::from_wire(&back, 5_000.0, 30.0).map_err(|e| e.to_string())?.remaining() == 770.0);
    let gone = Wire { limit: LimitKind::Client, ..back };
    ensure!(
        Deadline::from_wire(&gone, 5_000.0, 0.0).map_err(|e| e.to_string())?.expired(),
        "a departed client's wire is spent"
    );
    match Deadline::from_wire(&Wire { remaining_ms: f64::NAN, ..back }, 1.0, 0.0) {
        Err(Error::InvalidArgument { param: "remainingMs", .. }) => {}
        other => return Err(format!("NaN: {other:?}")),
    }
    ensure!(
        serde_json::from_str::<Wire>(r#"{"remainingMs":1,"reserveMs":0,"limit":"soon"}"#).is_err(),
        "an unknown limit"
    );
    clock.advance(1.0).await;
    Ok(())
}
