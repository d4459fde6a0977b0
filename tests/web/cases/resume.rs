//! Streams that recover: `fetch_with_deadline` with `retry` (and `resume`)
//! against the fixture's resumable routes (tests/fixtures/resume.mjs), which
//! record every connection made under a key: its `Last-Event-ID` and status.

use std::cell::RefCell;
use std::rc::Rc;

use edge_deadline::web::{fetch_with_deadline, Deadline, Error, FetchOptions, RetryOptions, StallPhase};
use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::stall::drain;
use super::{get, Ctx, Outcome};
use crate::ensure;

fn key(name: &str) -> String {
    format!("rs-{name}-{}-{}", super::now().to_bits() % 1_000_000_007, (js_sys::Math::random() * 1e9) as u64)
}

/// The fixture's record of the connections made under `key`: `(Last-Event-ID, status)` each.
async fn seen(ctx: &Ctx, key: &str) -> Result<Vec<(Option<String>, f64)>, String> {
    let d = Deadline::in_ms(5_000.0).unwrap();
    let url = format!("{}/resume/seen?key={key}", ctx.fixture()?);
    let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d)).await.map_err(|e| e.to_string())?;
    let view = JsFuture::from(res.json().unwrap()).await.map_err(|e| format!("{e:?}"))?;
    let connections: js_sys::Array = get(&view, "connections").unchecked_into();
    Ok(connections
        .iter()
        .map(|c| (get(&c, "lastEventId").as_string(), get(&c, "status").as_f64().unwrap_or(-1.0)))
        .collect())
}

/// Whether the fixture saw connection `index` under `key` close, waiting up to 2 s for it.
async fn closed(ctx: &Ctx, key: &str, index: u32) -> Result<bool, String> {
    let d = Deadline::in_ms(5_000.0).unwrap();
    let url = format!("{}/resume/seen?key={key}", ctx.fixture()?);
    for _ in 0..20 {
        let res =
            fetch_with_deadline(&url.clone().into(), None, FetchOptions::new(&d)).await.map_err(|e| e.to_string())?;
        let view = JsFuture::from(res.json().unwrap()).await.map_err(|e| format!("{e:?}"))?;
        let connection = js_sys::Array::from(&get(&view, "connections")).get(index);
        if get(&connection, "closed").as_bool() == Some(true) {
            return Ok(true);
        }
        super::wait(100.0).await; // the close travels from the client's abort to the server: no event to wait on here
    }
    Ok(false)
}

/// What the reader got: the text of each chunk, the ids of the events in
/// order (`data: {"i":n}`), and how the body ended.
struct Got {
    chunks: Vec<String>,
    ids: Vec<u32>,
    error: Option<JsValue>,
}

async fn read_events(res: &web_sys::Response) -> Result<Got, String> {
    let drained = drain(&res.body().ok_or("no body")?).await;
    let mut chunks = Vec::new();
    for value in &drained.values {
        let bytes: Uint8Array = value.clone().dyn_into().map_err(|v| format!("a chunk was not bytes: {v:?}"))?;
        chunks.push(String::from_utf8(bytes.to_vec()).map_err(|e| e.to_string())?);
    }
    let text: String = chunks.concat();
    let ids = text
        .split("data: {\"i\":")
        .skip(1)
        .map(|rest| rest.split('}').next().unwrap_or("").parse::<u32>().map_err(|e| format!("{e}: {text}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Got { chunks, ids, error: drained.error })
}

/// Each chunk the reader got ends on an event boundary (events are never split).
fn whole_events(got: &Got) -> Outcome {
    for chunk in &got.chunks {
        ensure!(chunk.ends_with("\n\n"), "a chunk ends inside an event: {chunk:?}");
    }
    Ok(())
}

fn stream_retry() -> RetryOptions {
    RetryOptions::new(100.0).backoff(10.0, 50.0, 1.0).seed(7)
}

pub async fn resume_a_connection_that_fails_before_the_first_byte_is_made_again(ctx: &Ctx) -> Outcome {
    let k = key("close");
    let url = format!("{}/resume/sse?key={k}&fail=close&events=5", ctx.fixture()?);
    let d = Deadline::in_ms(10_000.0).unwrap();
    let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).stall_ms(2_000.0).retry(stream_retry()))
        .await
        .map_err(|e| format!("the failure reached the caller: {e}"))?;
    ensure!(res.status() == 200);
    let got = read_events(&res).await?;
    ensure!(got.error.is_none(), "the body errored: {:?}", got.error);
    ensure!(got.ids == [1, 2, 3, 4, 5], "events {:?}", got.ids);
    whole_events(&got)?;
    let connections = seen(ctx, &k).await?;
    ensure!(connections.len() == 2, "connections {connections:?}");
    ensure!(connections[0].1 == 0.0 && connections[1] == (None, 200.0), "connections {connections:?}");
    Ok(())
}

/// Without `first_chunk_ms`, a first attempt that sends its headers and a
/// keep-alive comment, then nothing, is cut at the core's default wait (half
/// of the 10 s left, 5 s) and retried inside the deadline, not left to it.
pub async fn resume_a_keep_alive_only_attempt_is_cut_at_the_default_first_chunk_wait_and_retried(ctx: &Ctx) -> Outcome {
    let k = key("pings");
    let url = format!("{}/resume/sse?key={k}&fail=silent&events=4", ctx.fixture()?);
    let d = Deadline::in_ms(10_000.0).unwrap();
    let t0 = super::now();
    let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).stall_ms(2_000.0).retry(stream_retry()))
        .await
        .map_err(|e| format!("the failure reached the caller: {e}"))?;
    let got = read_events(&res).await?;
    let took = super::now() - t0;
    ensure!(got.error.is_none(), "the body errored after {took} ms: {:?}", got.error);
    ensure!(got.ids == [1, 2, 3, 4], "events {:?}", got.ids);
    let connections = seen(ctx, &k).await?;
    ensure!(connections.len() == 2, "connections {connections:?}");
    ensure!((4_900.0..9_000.0).contains(&took), "the answer took {took} ms");
    Ok(())
}

pub async fn resume_a_stalled_event_stream_continues_after_the_last_event_id(ctx: &Ctx) -> Outcome {
    let k = key("stall");
    let url = format!("{}/resume/sse?key={k}&events=40&stallAfter=20", ctx.fixture()?);
    let d = Deadline::in_ms(10_000.0).unwrap();
    let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).stall_ms(300.0).retry(stream_retry()))
        .await
        .map_err(|e| e.to_string())?;
    let got = read_events(&res).await?;
    ensure!(got.error.is_none(), "the body errored: {:?}", got.error);
    // Event by event: 1..=40, each once, in order.
    for (i, id) in got.ids.iter().enumerate() {
        ensure!(*id as usize == i + 1, "event {} was {id} (all: {:?})", i + 1, got.ids);
    }
    ensure!(got.ids.len() == 40, "{} events: {:?}", got.ids.len(), got.ids);
    whole_events(&got)?;
    let connections = seen(ctx, &k).await?;
    ensure!(connections.len() == 2, "connections {connections:?}");
    ensure!(connections[0].0.is_none(), "the first request sent Last-Event-ID {:?}", connections[0].0);
    ensure!(connections[1].0.as_deref() == Some("20"), "the second request sent Last-Event-ID {:?}", connections[1].0);
    // The stalled attempt was aborted (its connection closed), not abandoned.
    ensure!(closed(ctx, &k, 0).await?, "the stalled connection was never closed");
    Ok(())
}

pub async fn resume_last_event_id_carries_the_ids_utf8_bytes(ctx: &Ctx) -> Outcome {
    for (suffix, hex) in [("é", "33c3a9"), ("€", "33e282ac")] {
        let k = key("utf8");
        let url = format!(
            "{}/resume/sse?key={k}&events=6&stallAfter=3&idSuffix={}",
            ctx.fixture()?,
            js_sys::encode_uri_component(suffix)
        );
        let d = Deadline::in_ms(10_000.0).unwrap();
        let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).stall_ms(300.0).retry(stream_retry()))
            .await
            .map_err(|e| e.to_string())?;
        let got = read_events(&res).await?;
        ensure!(got.error.is_none(), "{suffix}: the body errored: {:?}", got.error);
        ensure!(got.ids == [1, 2, 3, 4, 5, 6], "{suffix}: events {:?}", got.ids);
        let d = Deadline::in_ms(5_000.0).unwrap();
        let seen = format!("{}/resume/seen?key={k}", ctx.fixture()?);
        let view = fetch_with_deadline(&seen.into(), None, FetchOptions::new(&d)).await.map_err(|e| e.to_string())?;
        let view = JsFuture::from(view.json().unwrap()).await.map_err(|e| format!("{e:?}"))?;
        let second = js_sys::Array::from(&get(&view, "connections")).get(1);
        let sent = get(&second, "lastEventIdHex").as_string();
        ensure!(sent.as_deref() == Some(hex), "{suffix}: Last-Event-ID bytes {sent:?}, expected {hex}");
    }
    Ok(())
}

pub async fn resume_an_upstream_that_ignores_last_event_id_delivers_nothing_twice(ctx: &Ctx) -> Outcome {
    let k = key("ignore");
    let url = format!("{}/resume/sse?key={k}&events=40&stallAfter=20&ignore=1", ctx.fixture()?);
    let d = Deadline::in_ms(10_000.0).unwrap();
    let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).stall_ms(300.0).retry(stream_retry()))
        .await
        .map_err(|e| e.to_string())?;
    let got = read_events(&res).await?;
    ensure!(got.ids == (1..=20).collect::<Vec<_>>(), "events {:?}", got.ids);
    whole_events(&got)?;
    // The body ends with the failure it could not recover from: the stall.
    let error = got.error.ok_or("the body did not error")?;
    ensure!(
        matches!(Error::from(error.clone()), Error::StreamStalled { phase: StallPhase::Stall, .. }),
        "errored with {error:?}"
    );
    let connections = seen(ctx, &k).await?;
    ensure!(connections.len() == 2, "connections {connections:?}");
    ensure!(connections[1].0.as_deref() == Some("20"), "connections {connections:?}");
    Ok(())
}

pub async fn resume_the_hook_is_asked_when_last_event_id_is_ignored(ctx: &Ctx) -> Outcome {
    let k = key("hook");
    let url = format!("{}/resume/sse?key={k}&events=40&stallAfter=20&ignore=1", ctx.fixture()?);
    let d = Deadline::in_ms(10_000.0).unwrap();
    let calls = Rc::new(RefCell::new(Vec::new()));
    let record = calls.clone();
    let options = FetchOptions::new(&d).stall_ms(300.0).retry(stream_retry()).resume(move |resumed| {
        let text: String =
            resumed.chunks.iter().map(|c| String::from_utf8(c.to_vec()).unwrap_or_default()).collect::<String>();
        record.borrow_mut().push((
            resumed.last_event_id.clone(),
            resumed.attempt,
            resumed.bytes,
            text,
            resumed.signal.aborted(),
            resumed.headers.get("edge-deadline-remaining-ms").ok().flatten(),
        ));
        None
    });
    let res = fetch_with_deadline(&url.into(), None, options).await.map_err(|e| e.to_string())?;
    let got = read_events(&res).await?;
    ensure!(got.ids == (1..=20).collect::<Vec<_>>(), "events {:?}", got.ids);
    ensure!(got.error.is_some(), "the hook gave nothing: the body must error");
    let calls = calls.borrow();
    ensure!(calls.len() == 1, "the hook was called {} times", calls.len());
    let (last_event_id, attempt, bytes, text, aborted, budget) = &calls[0];
    // The continuation is given what is left of the deadline to send, as the read's own attempts send it.
    let left: f64 = budget.as_deref().and_then(|b| b.parse().ok()).ok_or(format!("budget header {budget:?}"))?;
    ensure!(left > 0.0 && left < 10_000.0, "budget header {budget:?}");
    ensure!(last_event_id.as_deref() == Some("20"), "last_event_id {last_event_id:?}");
    ensure!(*attempt == 3, "attempt {attempt}");
    ensure!(!aborted, "the attempt's signal was already aborted");
    // What the hook is told was delivered is exactly what the reader got.
    ensure!(*text == got.chunks.concat(), "the hook's chunks differ from the reader's");
    ensure!(*bytes == text.len() as f64, "bytes {bytes} for {} delivered", text.len());
    Ok(())
}

pub async fn resume_a_hooks_response_continues_the_stream(ctx: &Ctx) -> Outcome {
    // A text body: no event ids, so the hook continues it from the bytes delivered.
    let k = key("text");
    let fixture = ctx.fixture()?.to_string();
    let url = format!("{fixture}/resume/text?key={k}&chunks=10&stallAfter=4");
    let k2 = k.clone();
    let d = Deadline::in_ms(10_000.0).unwrap();
    let options = FetchOptions::new(&d).stall_ms(300.0).retry(stream_retry()).resume(move |resumed| {
        // A Range request for the bytes the reader does not have yet.
        let init = web_sys::RequestInit::new();
        init.set_signal(Some(&resumed.signal));
        let headers = web_sys::Headers::new().ok()?;
        headers.set("range", &format!("bytes={}-", resumed.bytes)).ok()?;
        init.set_headers(&headers);
        let fetch = js_sys::Reflect::get(&js_sys::global(), &"fetch".into()).ok()?;
        let fetch: js_sys::Function = fetch.dyn_into().ok()?;
        let url = format!("{fixture}/resume/text?key={k2}&chunks=10");
        fetch.call2(&JsValue::NULL, &url.into(), &init).ok()?.dyn_into().ok()
    });
    let res = fetch_with_deadline(&url.into(), None, options).await.map_err(|e| e.to_string())?;
    let drained = drain(&res.body().ok_or("no body")?).await;
    ensure!(drained.error.is_none(), "the body errored: {:?}", drained.error);
    let text: String = drained
        .values
        .iter()
        .map(|v| String::from_utf8(v.clone().unchecked_into::<Uint8Array>().to_vec()).unwrap_or_default())
        .collect();
    // The first body up to its stall (half of piece 5), then the hook's Range answer: the text whole, once.
    ensure!(text == "1;2;3;4;5;6;7;8;9;10;", "the reader got {text:?}");
    let connections = seen(ctx, &k).await?;
    ensure!(connections.len() == 2, "connections {connections:?}");
    Ok(())
}

pub async fn resume_a_hooks_200_to_a_byte_stream_is_a_failed_attempt_never_appended(ctx: &Ctx) -> Outcome {
    // The first continuation forgets Range (the server answers 200 with the whole text): refused, then a range.
    let k = key("no-range");
    let fixture = ctx.fixture()?.to_string();
    let url = format!("{fixture}/resume/text?key={k}&chunks=10&stallAfter=4");
    let k2 = k.clone();
    let asked = Rc::new(RefCell::new(0u32));
    let counted = asked.clone();
    let d = Deadline::in_ms(10_000.0).unwrap();
    let options = FetchOptions::new(&d).stall_ms(300.0).retry(stream_retry()).resume(move |resumed| {
        *counted.borrow_mut() += 1;
        let init = web_sys::RequestInit::new();
        init.set_signal(Some(&resumed.signal));
        if *counted.borrow() > 1 {
            let headers = web_sys::Headers::new().ok()?;
            headers.set("range", &format!("bytes={}-", resumed.bytes)).ok()?;
            init.set_headers(&headers);
        }
        let fetch = js_sys::Reflect::get(&js_sys::global(), &"fetch".into()).ok()?;
        let fetch: js_sys::Function = fetch.dyn_into().ok()?;
        let url = format!("{fixture}/resume/text?key={k2}&chunks=10");
        fetch.call2(&JsValue::NULL, &url.into(), &init).ok()?.dyn_into().ok()
    });
    let res = fetch_with_deadline(&url.into(), None, options).await.map_err(|e| e.to_string())?;
    let drained = drain(&res.body().ok_or("no body")?).await;
    ensure!(drained.error.is_none(), "the body errored: {:?}", drained.error);
    let text: String = drained
        .values
        .iter()
        .map(|v| String::from_utf8(v.clone().unchecked_into::<Uint8Array>().to_vec()).unwrap_or_default())
        .collect();
    ensure!(text == "1;2;3;4;5;6;7;8;9;10;", "the reader got {text:?}");
    ensure!(*asked.borrow() == 2, "the hook was asked {} times", asked.borrow());
    Ok(())
}

pub async fn resume_a_hook_that_gives_no_response_errors_the_stream_with_a_type_error(ctx: &Ctx) -> Outcome {
    let k = key("not-a-response");
    let url = format!("{}/resume/text?key={k}&chunks=10&stallAfter=4", ctx.fixture()?);
    let d = Deadline::in_ms(10_000.0).unwrap();
    let options = FetchOptions::new(&d)
        .stall_ms(300.0)
        .retry(stream_retry())
        .resume(|_| Some(js_sys::Promise::resolve(&JsValue::from_str("not a response"))));
    let res = fetch_with_deadline(&url.into(), None, options).await.map_err(|e| e.to_string())?;
    let drained = drain(&res.body().ok_or("no body")?).await;
    let error = drained.error.ok_or("the body did not error")?;
    ensure!(error.is_instance_of::<js_sys::TypeError>(), "errored with {error:?}");
    ensure!(get(&error, "param").as_string().as_deref() == Some("resume"), "errored with {error:?}");
    // What was delivered before the stall reached the reader once.
    ensure!(drained.bytes == 9.0, "{} bytes delivered", drained.bytes);
    Ok(())
}

pub async fn resume_a_503_with_too_little_time_left_is_the_answer_as_it_is(ctx: &Ctx) -> Outcome {
    let k = key("503");
    let url = format!("{}/resume/sse?key={k}&fail=503&events=3", ctx.fixture()?);
    // After the failure and the fixed 500 ms backoff, less than attempt_min_ms is left.
    let d = Deadline::in_ms(3_000.0).unwrap();
    let retry = RetryOptions::new(2_700.0).backoff(500.0, 500.0, 0.0);
    let res =
        fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).retry(retry)).await.map_err(|e| e.to_string())?;
    ensure!(res.status() == 503, "status {}", res.status());
    let body = JsFuture::from(res.text().unwrap()).await.map_err(|e| format!("{e:?}"))?;
    ensure!(body.as_string().is_some_and(|b| b.contains("busy")), "body {body:?}");
    let connections = seen(ctx, &k).await?;
    ensure!(connections.len() == 1, "connections {connections:?}");
    Ok(())
}

/// A browser page: there the browser itself makes a request again, unseen,
/// when the connection it reused closes before any answer.
fn in_browser() -> bool {
    let global: JsValue = js_sys::global().into();
    get(&global, "Deno").is_undefined()
        && get(&get(&get(&global, "process"), "versions"), "node").is_undefined()
        && !get(&global, "location").is_undefined()
}

pub async fn resume_a_failed_connection_with_too_little_time_left_is_the_error(ctx: &Ctx) -> Outcome {
    let k = key("close-short");
    let url = format!("{}/resume/sse?key={k}&fail=close&events=3", ctx.fixture()?);
    let d = Deadline::in_ms(3_000.0).unwrap();
    let retry = RetryOptions::new(2_700.0).backoff(500.0, 500.0, 0.0);
    let result = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).retry(retry)).await;
    let connections = seen(ctx, &k).await?;
    match result {
        Err(Error::Js(e)) => ensure!(e.is_instance_of::<js_sys::TypeError>(), "failed with {e:?}"),
        // Chromium retried on its own (a reused connection closed): the fixture saw its two.
        Ok(res) if in_browser() && connections.len() == 2 => {
            ensure!(res.status() == 200);
            return Ok(());
        }
        other => return Err(format!("gave {:?}", other.map(|r| r.status()))),
    }
    ensure!(connections.len() == 1, "connections {connections:?}");
    Ok(())
}

pub async fn resume_an_attempt_timeout_is_refused_before_any_io(ctx: &Ctx) -> Outcome {
    let k = key("refused");
    let url = format!("{}/resume/sse?key={k}&events=3", ctx.fixture()?);
    let d = Deadline::in_ms(3_000.0).unwrap();
    let retry = RetryOptions::new(100.0).attempt_timeout_ms(500.0);
    match fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).retry(retry)).await {
        Err(e @ Error::InvalidArgument { .. }) => {
            ensure!(e.param() == Some("retry.attemptTimeoutMs"), "named {:?}", e.param())
        }
        other => return Err(format!("gave {:?}", other.map(|r| r.status()))),
    }
    let connections = seen(ctx, &k).await?;
    ensure!(connections.is_empty(), "connections {connections:?}");
    Ok(())
}

pub async fn resume_an_event_past_max_event_bytes_ends_the_stream_at_once(ctx: &Ctx) -> Outcome {
    let k = key("too-large");
    let total = 32 * 1024 * 1024;
    let url = format!("{}/resume/sse?key={k}&events=3&endless={total}", ctx.fixture()?);
    let d = Deadline::in_ms(20_000.0).unwrap();
    let options = FetchOptions::new(&d).stall_ms(5_000.0).retry(stream_retry()).max_event_bytes(1_048_576.0);
    let res = fetch_with_deadline(&url.into(), None, options).await.map_err(|e| e.to_string())?;
    let got = read_events(&res).await?;
    // The events before the endless one, then the refusal: no byte of it reached the reader.
    ensure!(got.ids == [1, 2, 3], "events {:?}", got.ids);
    ensure!(!got.chunks.concat().contains("xxxx"), "a byte of the refused event reached the reader");
    let error = got.error.ok_or("the body did not error")?;
    ensure!(get(&error, "name").as_string().as_deref() == Some("StreamTooLarge"), "errored with {error:?}");
    ensure!(get(&error, "code").as_string().as_deref() == Some("EVENT_TOO_LARGE"), "errored with {error:?}");
    ensure!(get(&error, "maxBytes").as_f64() == Some(1_048_576.0), "errored with {error:?}");
    // Never retried, and the upstream request was released.
    ensure!(closed(ctx, &k, 0).await?, "the refused connection was never closed");
    let connections = seen(ctx, &k).await?;
    ensure!(connections.len() == 1, "connections {connections:?}");
    // Bad caps fail before any I/O, named as in JavaScript.
    for (options, param, code) in [
        (FetchOptions::new(&d).retry(stream_retry()).max_event_bytes(0.0), "maxEventBytes", "OUT_OF_RANGE"),
        (FetchOptions::new(&d).retry(stream_retry()).max_line_bytes(2.5), "maxLineBytes", "NOT_WHOLE"),
    ] {
        let url = format!("{}/resume/sse?key={k}-bad&events=3", ctx.fixture()?);
        match fetch_with_deadline(&url.into(), None, options).await {
            Err(Error::InvalidArgument { param: p, code: c, .. }) => {
                ensure!(p == param && c == code, "named {p} {c}, expected {param} {code}")
            }
            other => return Err(format!("gave {:?}", other.map(|r| r.status()))),
        }
    }
    ensure!(seen(ctx, &format!("{k}-bad")).await?.is_empty(), "a request was made with a bad cap");
    Ok(())
}

pub async fn resume_an_event_held_past_raised_caps_reaches_the_reader_whole(ctx: &Ctx) -> Outcome {
    // Longer than the default event cap: the host keeps the bytes where it read them and, at the body's end,
    // hands the unfinished event on as it came.
    let k = key("held-whole");
    let total = 272 * 64 * 1024;
    let url = format!("{}/resume/sse?key={k}&events=3&endless={total}", ctx.fixture()?);
    let d = Deadline::in_ms(20_000.0).unwrap();
    let cap = 32.0 * 1024.0 * 1024.0;
    let options =
        FetchOptions::new(&d).stall_ms(5_000.0).retry(stream_retry()).max_event_bytes(cap).max_line_bytes(cap);
    let res = fetch_with_deadline(&url.into(), None, options).await.map_err(|e| e.to_string())?;
    let got = read_events(&res).await?;
    ensure!(got.error.is_none(), "errored with {:?}", got.error);
    ensure!(got.ids == [1, 2, 3], "events {:?}", got.ids);
    let text = got.chunks.concat();
    let (events, held) = text.split_at(text.rfind("\n\n").ok_or("no event")? + 2);
    ensure!(events.ends_with("data: {\"i\":3}\n\n"), "the events before it");
    ensure!(held.len() == 6 + total, "{} bytes of the held event reached the reader, not {}", held.len(), 6 + total);
    ensure!(held.starts_with("data: ") && held[6..].bytes().all(|b| b == b'x'), "the held event is not intact");
    Ok(())
}

pub async fn resume_past_the_remembered_ids_a_replay_from_an_older_id_delivers_no_duplicate(ctx: &Ctx) -> Outcome {
    // 2 500 events delivered, then a stall; asked with Last-Event-ID: 2500, the upstream would replay from 1 000.
    let k = key("unchecked");
    let url = format!("{}/resume/sse?key={k}&events=2600&stallAfter=2500&ignore=1&replayFrom=1000", ctx.fixture()?);
    let d = Deadline::in_ms(20_000.0).unwrap();
    let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).stall_ms(300.0).retry(stream_retry()))
        .await
        .map_err(|e| e.to_string())?;
    let got = read_events(&res).await?;
    ensure!(
        got.ids == (1..=2500).collect::<Vec<_>>(),
        "{} events delivered, expected 1..=2500 once each",
        got.ids.len()
    );
    let error = got.error.ok_or("the body did not error")?;
    ensure!(
        matches!(Error::from(error.clone()), Error::StreamStalled { phase: StallPhase::Stall, .. }),
        "errored with {error:?}"
    );
    let connections = seen(ctx, &k).await?;
    ensure!(connections.len() == 1, "a resume by id it could not check was made: {connections:?}");
    Ok(())
}

pub async fn resume_when_the_attempts_run_out_the_readers_error_is_ours_with_what_was_delivered(ctx: &Ctx) -> Outcome {
    // The connection breaks after 5 events; every resume by id then fails before any byte.
    let k = key("run-out");
    let url = format!("{}/resume/sse?key={k}&events=40&breakAfter=5&failResumes=1", ctx.fixture()?);
    let d = Deadline::in_ms(10_000.0).unwrap();
    let options = FetchOptions::new(&d).stall_ms(2_000.0).retry(stream_retry().max_attempts(3));
    let res = fetch_with_deadline(&url.into(), None, options).await.map_err(|e| e.to_string())?;
    let got = read_events(&res).await?;
    ensure!(got.ids == [1, 2, 3, 4, 5], "events {:?}", got.ids);
    let error = got.error.ok_or("the body did not error")?;
    ensure!(get(&error, "name").as_string().as_deref() == Some("RetryFailed"), "errored with {error:?}");
    ensure!(get(&error, "reason").as_string().as_deref() == Some("exhausted"), "errored with {error:?}");
    ensure!(js_sys::Array::from(&get(&error, "attempts")).length() == 3, "attempts of {error:?}");
    let cause = get(&error, "cause");
    ensure!(cause.is_instance_of::<js_sys::Error>(), "its cause is the upstream's error: {cause:?}");
    let delivered = got.chunks.concat().len() as f64;
    ensure!(get(&error, "deliveredBytes").as_f64() == Some(delivered), "deliveredBytes of {error:?}, {delivered} read");
    // A body that cannot be resumed (not an event stream, the hook gives nothing): "not-resumable".
    let url = format!("{}/resume/text?key={}&chunks=9&stallAfter=2&breakAfter=1", ctx.fixture()?, key("not-resumable"));
    let options = FetchOptions::new(&d).stall_ms(2_000.0).retry(stream_retry()).resume(|_| None);
    let res = fetch_with_deadline(&url.into(), None, options).await.map_err(|e| e.to_string())?;
    let drained = drain(&res.body().ok_or("no body")?).await;
    ensure!(drained.bytes == 5.0, "{} bytes delivered", drained.bytes);
    let error = drained.error.ok_or("the body did not error")?;
    ensure!(get(&error, "reason").as_string().as_deref() == Some("not-resumable"), "errored with {error:?}");
    ensure!(get(&error, "deliveredBytes").as_f64() == Some(5.0), "errored with {error:?}");
    Ok(())
}

/// The reader's pauses are not the upstream's silence: a reader that waits
/// longer than `stall_ms` before each read gets every event from the one
/// connection. Nothing is read upstream while nobody reads, and the machine
/// is told so (a hold), so the wait is not counted.
pub async fn resume_a_reader_slower_than_the_stall_limit_is_not_a_stall(ctx: &Ctx) -> Outcome {
    let k = key("slow-reader");
    let url = format!("{}/resume/sse?key={k}&events=5&gap=100", ctx.fixture()?);
    let d = Deadline::in_ms(20_000.0).unwrap();
    let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).stall_ms(200.0).retry(stream_retry()))
        .await
        .map_err(|e| e.to_string())?;
    let reader: web_sys::ReadableStreamDefaultReader = res.body().ok_or("no body")?.get_reader().unchecked_into();
    let mut text = String::new();
    loop {
        super::wait(500.0).await; // the reader is busy elsewhere, longer than stall_ms
        match super::stall::read(&reader).await.map_err(|e| format!("the body errored: {e:?} after {text:?}"))? {
            Some(value) => {
                let bytes: Uint8Array = value.dyn_into().map_err(|v| format!("a chunk was not bytes: {v:?}"))?;
                text.push_str(&String::from_utf8(bytes.to_vec()).map_err(|e| e.to_string())?);
            }
            None => break,
        }
    }
    let ids: Vec<&str> = text.split("data: {\"i\":").skip(1).filter_map(|rest| rest.split('}').next()).collect();
    ensure!(ids == ["1", "2", "3", "4", "5"], "events {ids:?} in {text:?}");
    let connections = seen(ctx, &k).await?;
    ensure!(connections.len() == 1, "a paused reader made the read resume: {connections:?}");
    Ok(())
}

/// The retry budget given in the retry options is the read's: one that
/// allows no retry leaves a 503 before the body as it is, after one request
/// (the same read without the budget makes it again and gets the stream).
pub async fn resume_a_shared_retry_budget_bounds_the_reads_attempts(ctx: &Ctx) -> Outcome {
    let empty = Rc::new(edge_deadline::web::RetryBudget::new(0.0, 0.0, 10_000.0).map_err(|e| e.to_string())?);
    for (budget, status, count) in [(Some(empty), 503, 1), (None, 200, 2)] {
        let k = key("budget");
        let url = format!("{}/resume/sse?key={k}&fail=503&events=3", ctx.fixture()?);
        let d = Deadline::in_ms(10_000.0).unwrap();
        let retry = match budget {
            Some(budget) => stream_retry().budget(budget),
            None => stream_retry(),
        };
        let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).stall_ms(2_000.0).retry(retry))
            .await
            .map_err(|e| e.to_string())?;
        ensure!(res.status() == status, "status {} (expected {status})", res.status());
        let _ = drain(&res.body().ok_or("no body")?).await;
        let connections = seen(ctx, &k).await?;
        ensure!(connections.len() == count, "connections {connections:?} (expected {count})");
    }
    Ok(())
}

/// The reader's cancel ends the read where it is: the upstream request is
/// aborted (its connection closed) and no other attempt is made.
pub async fn resume_a_readers_cancel_releases_the_upstream_and_makes_no_other_attempt(ctx: &Ctx) -> Outcome {
    let k = key("cancel");
    let url = format!("{}/resume/sse?key={k}&events=40&gap=50", ctx.fixture()?);
    let d = Deadline::in_ms(10_000.0).unwrap();
    let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).stall_ms(2_000.0).retry(stream_retry()))
        .await
        .map_err(|e| e.to_string())?;
    let reader: web_sys::ReadableStreamDefaultReader = res.body().ok_or("no body")?.get_reader().unchecked_into();
    for _ in 0..2 {
        super::stall::read(&reader).await.map_err(|e| format!("the body errored: {e:?}"))?.ok_or("the body ended")?;
    }
    let _ = JsFuture::from(reader.cancel_with_reason(&"enough".into())).await;
    ensure!(closed(ctx, &k, 0).await?, "the cancelled read's connection was never closed");
    super::wait(300.0).await; // a backoff of stream_retry() is at most 50 ms: an attempt would be made by now
    let connections = seen(ctx, &k).await?;
    ensure!(connections.len() == 1, "connections {connections:?}");
    Ok(())
}

/// The deadline ends the read where it is: the reader's error is the
/// deadline's own `DeadlineExceeded`, without `deliveredBytes`, and the
/// upstream request is aborted, not retried.
pub async fn resume_the_deadline_mid_stream_is_the_readers_error_as_it_is(ctx: &Ctx) -> Outcome {
    let k = key("deadline");
    let url = format!("{}/resume/sse?key={k}&events=40&gap=100", ctx.fixture()?);
    let d = Deadline::in_ms(1_000.0).unwrap();
    let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).stall_ms(2_000.0).retry(stream_retry()))
        .await
        .map_err(|e| e.to_string())?;
    let got = read_events(&res).await?;
    ensure!(!got.ids.is_empty() && got.ids.len() < 40, "events {:?}", got.ids);
    let error = got.error.ok_or("the body did not error")?;
    ensure!(
        matches!(Error::from(error.clone()), Error::DeadlineExceeded { at, .. } if at == d.instant_ms()),
        "errored with {error:?}"
    );
    ensure!(get(&error, "deliveredBytes").is_undefined(), "the deadline's error was given deliveredBytes: {error:?}");
    ensure!(closed(ctx, &k, 0).await?, "the connection was never closed");
    let connections = seen(ctx, &k).await?;
    ensure!(connections.len() == 1, "connections {connections:?}");
    Ok(())
}
