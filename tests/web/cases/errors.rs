//! `Error::is_timeout` means what the JavaScript `isTimeout` means
//! (js/errors.js, tests/js/cases/errors.js): time ran out, at any depth of a
//! cause chain; never a shortage (`InsufficientBudget`: nothing was started),
//! an abort for another reason or words in a message.

use edge_deadline::web::{Deadline, Error, StallPhase};
use wasm_bindgen::prelude::*;

use super::{Ctx, Outcome};
use crate::ensure;

#[wasm_bindgen(inline_js = r#"
export function sdkWrapper(cause) {
  const e = new Error("Connection error.");
  e.name = "APIConnectionError";
  e.cause = cause;
  return e;
}
export function domException(message, name) { return new DOMException(message, name); }
export function cyclic() {
  const a = new Error("a");
  a.cause = new Error("b", { cause: a });
  return a;
}
export function hostile() {
  const boom = () => { throw new Error("trap"); };
  const trapping = new Proxy({}, { get: boom, getPrototypeOf: boom, has: boom });
  const { proxy: revoked, revoke } = Proxy.revocable({}, {});
  revoke();
  const getters = Object.defineProperties({}, { name: { get: boom }, cause: { get: boom } });
  const causeThrows = Object.defineProperty(new Error("outer"), "cause", { get: boom });
  return [trapping, revoked, getters, causeThrows, new Error("wrapper", { cause: revoked })];
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = sdkWrapper)]
    fn sdk_wrapper(cause: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = domException)]
    fn dom_exception(message: &str, name: &str) -> JsValue;
    fn cyclic() -> JsValue;
    fn hostile() -> js_sys::Array;
}

fn timeouts() -> Vec<(&'static str, Error)> {
    vec![
        ("DeadlineExceeded (a signal's reason)", Error::from(Deadline::at(0.0).unwrap().signal().reason())),
        ("StepTimeout", Error::StepTimeout { step: "generate".into(), cap_ms: 100.0 }),
        ("AttemptTimeout", Error::AttemptTimeout { attempt: 1, timeout_ms: 100.0 }),
        ("StreamStalled", Error::StreamStalled { phase: StallPhase::Stall, after_ms: 100.0, chunks: 1.0, bytes: 1.0 }),
        ("DOMException TimeoutError", Error::from(dom_exception("signal timed out", "TimeoutError"))),
        (
            "RetryFailed whose last attempt timed out",
            Error::RetryFailed {
                reason: "exhausted".into(),
                message: "m".into(),
                attempts: vec![],
                last: Some(Box::new(Error::AttemptTimeout { attempt: 3, timeout_ms: 10.0 })),
                retry_after_ms: None,
                remaining_ms: None,
            },
        ),
    ]
}

pub async fn is_timeout_is_true_for_every_time_based_error_directly_or_in_a_cause_chain(_: &Ctx) -> Outcome {
    for (name, e) in timeouts() {
        ensure!(e.is_timeout(), "{name}");
        let js = JsValue::from(e.clone());
        ensure!(Error::from(js.clone()).is_timeout(), "{name} back from JavaScript");
        ensure!(Error::from(sdk_wrapper(&js)).is_timeout(), "{name} wrapped once");
        let twice = js_sys::Error::new("outer");
        js_sys::Reflect::set(&twice, &"cause".into(), &sdk_wrapper(&js)).unwrap();
        ensure!(Error::from(JsValue::from(twice)).is_timeout(), "{name} wrapped twice");
    }
    Ok(())
}

pub async fn is_timeout_is_false_for_a_shortage_and_other_failures(_: &Ctx) -> Outcome {
    let insufficient = Error::InsufficientBudget { remaining_ms: 10.0, min_ms: 100.0 };
    let others = vec![
        ("InsufficientBudget: nothing was started", insufficient.clone()),
        ("InsufficientBudget back from JavaScript", Error::from(JsValue::from(insufficient.clone()))),
        ("InsufficientBudget wrapped", Error::from(sdk_wrapper(&JsValue::from(insufficient)))),
        ("InvalidHeader", Error::InvalidHeader { header: "grpc-timeout", code: "HEADER_EMPTY", message: "bad".into() }),
        ("InvalidArgument", Deadline::in_ms(f64::NAN).err().unwrap()),
        (
            "RetryFailed on a permanent error",
            Error::RetryFailed {
                reason: "permanent".into(),
                message: "m".into(),
                attempts: vec![],
                last: Some(Box::new(Error::Js(js_sys::Error::new("400").into()))),
                retry_after_ms: None,
                remaining_ms: None,
            },
        ),
        ("undefined", Error::from(JsValue::UNDEFINED)),
        ("a string", Error::from(JsValue::from_str("timeout"))),
        ("words in a message", Error::from(JsValue::from(js_sys::Error::new("timed out")))),
        ("AbortError", Error::from(dom_exception("aborted", "AbortError"))),
        ("a wrapped network error", Error::from(sdk_wrapper(&js_sys::TypeError::new("fetch failed").into()))),
        ("a cycle in the cause chain", Error::from(cyclic())),
    ];
    for (name, e) in others {
        ensure!(!e.is_timeout(), "{name}: {e}");
    }
    // Never throws: reading a hostile value answers false.
    for (i, v) in hostile().iter().enumerate() {
        ensure!(!Error::from(v).is_timeout(), "hostile value {i}");
    }
    Ok(())
}
