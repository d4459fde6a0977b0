//! The pure core: time is an argument, errors are values.
//!
//! Every duration and instant is an `f64` of milliseconds on one monotonic
//! timeline (JavaScript's `performance.now()` in practice). `f64` is what
//! crosses the Wasm boundary without conversion, and it represents every
//! integer millisecond up to 2^53 exactly; the validators in [`deadline`]
//! reject NaN, infinities and negatives before any arithmetic happens.

pub mod book;
pub mod breaker;
pub mod caps;
pub mod deadline;
pub mod derive;
pub mod error;
pub mod fleet;
pub mod headers;
pub mod hedge;
pub mod limiter;
pub mod little;
#[cfg(all(test, not(target_arch = "wasm32")))]
mod messages;
pub mod number;
pub mod plan;
pub mod prom;
pub mod read;
pub mod redact;
pub mod request;
pub mod resume;
pub mod retry;
pub mod retry_budget;
pub mod rng;
pub mod simulate;
pub mod sketch;
pub mod sse;
pub mod stall;
pub mod tail;
pub mod timers;
