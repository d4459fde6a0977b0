//! The Rust API for Rust code on the edge (feature `web`, wasm32 only).
//!
//! Cloudflare Workers written with workers-rs or plain wasm-bindgen, Rust
//! apps in the browser (Leptos, Dioxus, Yew) and Rust in Deno get the same
//! deadlines as the JavaScript API, on the same runtime objects: web-sys
//! `AbortSignal`s, `ReadableStream`s, `Headers` and the global `fetch`.
//!
//! # Why a second API over the same core
//! The decisions (deadline arithmetic, stall verdicts, plan caps, retry
//! admission, header parsing, platform caps) are the pure core's, in
//! [`crate::core`]: this module calls exactly the functions the npm package's
//! boundary calls, so the two APIs cannot drift. What lives here is what
//! only the host can do and what the JavaScript API does in `js/`: read the
//! clock (`performance.now()`), arm timers (the global `setTimeout`, owned by
//! Rust values that clear them on drop), create and link `AbortController`s,
//! and move stream chunks.
//!
//! Errors are one enum, [`Error`], that converts into the package's branded
//! JavaScript errors (the JavaScript guards such as `isDeadlineExceeded`
//! recognise them) and back.
//!
//! # Example
//! A proxy step with a fallback inside the deadline (the README's example):
//! ```no_run
//! use edge_deadline::web::{fetch_with_deadline, Deadline, Error, FetchOptions};
//!
//! async fn handle(url: &str) -> Result<String, Error> {
//!     // Inside the handler: in workerd a timer belongs to the request that made it.
//!     let deadline = Deadline::in_ms(1_500.0)?;
//!     let work = deadline.reserve(300.0)?; // held back for the fallback
//!     let answer = async {
//!         let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&work).stall_ms(200.0)).await?;
//!         let text = wasm_bindgen_futures::JsFuture::from(res.text()?).await?;
//!         Ok::<_, Error>(text.as_string().unwrap_or_default())
//!     };
//!     match answer.await {
//!         Err(e) if e.is_timeout() => Ok(format!("fallback: {e}")), // inside the deadline
//!         other => other,
//!     }
//! }
//! ```

#![warn(missing_docs)]

mod attempt;
mod book;
mod breaker;
mod caps;
mod deadline;
mod errors;
mod fetch;
mod guard;
mod headers;
mod hedge;
mod limiter;
mod plan;
mod request;
mod resume;
mod retry;
mod sse;
mod stall;
mod sys;
mod timers;

pub use book::{Aggregator, BookOptions, BookWarning, CallOutcome, FlushReport, Refresh, TimeoutBook, TimeoutOptions};
pub use breaker::{BreakerOptions, Circuit, CircuitBreaker, CircuitPermit, CircuitStateChange, OpenReason};
pub use caps::{Bound, CapOverrides, Platform, PlatformCaps, Tier, Trigger};
pub use deadline::Deadline;
pub use errors::{AttemptReport, Error, StallPhase};
pub use fetch::{fetch_with_deadline, FetchOptions};
pub use headers::{HeaderFormat, Incoming};
pub use hedge::{hedge, HedgeOptions};
pub use limiter::{ConcurrencyLimiter, Limit, LimiterOptions, Permit, RunOptions};
pub use plan::{Outcome, Plan, SkipReason, StepKind, StepResult, StepSpec, StreamStepOptions, TraceRecord};
pub use request::{LimitKind, RequestDeadline, RequestOptions, Wire};
pub use resume::Resumed;
pub use retry::{retry, Attempt, Failure, RetryBudget, RetryOptions};
pub use sse::sse_progress;
pub use stall::{with_stall_timeout, ProgressFn, StallOptions};
pub use timers::{set_clock, sleep, Clock, Sleep, Timeout};

/// The clock every instant of this API is on: `performance.now()`, in ms
/// (or the clock a test installed with [`set_clock`]). Use it to relate
/// [`Deadline::instant_ms`] to your own readings.
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
/// # fn run() -> Result<(), edge_deadline::web::Error> {
/// use edge_deadline::web::{now_ms, Deadline};
/// let d = Deadline::in_ms(100.0)?;
/// assert!(d.instant_ms() - now_ms() <= 100.0);
/// # Ok(())
/// # }
/// # fn main() {}
/// ```
pub fn now_ms() -> f64 {
    timers::now()
}
