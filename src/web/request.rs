//! The deadline of an incoming request, and the wire pair, on the Rust API's
//! [`Deadline`] (as js/request.js and js/deadline.js): which limit wins (the
//! budget, the platform's caps, the caller's headers, a client already gone)
//! and the wire form are the core's ([`crate::core::request`]); this file
//! reads the clock, the request's headers and its signal.
//!
//! # Invariants
//! 1. The deadline is never later than the budget, the platform's caps or a
//!    valid header, less the reserve (the core's invariant 1), and follows
//!    the request's signal: when the client leaves, its signal aborts with
//!    the client's reason and [`Deadline::limit`] says [`LimitKind::Client`].
//! 2. A received [`Wire`] is never later than `max_ms` from now; a spent one
//!    is an expired deadline, not an error.

use web_sys::Request;

use super::{timers, Deadline, Error, HeaderFormat};
use crate::core::headers::HeaderValue;
use crate::core::request::{self, RequestError};
pub use crate::core::request::{LimitKind, RequestOptions, Wire};

impl From<RequestError> for Error {
    fn from(error: RequestError) -> Self {
        match error {
            RequestError::Caps(e) => Error::from(e),
            RequestError::Header(e) => Error::from(e),
            RequestError::Time(e) => Error::from(e),
            RequestError::NoBound => Error::described("options", &error),
        }
    }
}

/// A request's deadline, with what set it (`Deadline.forRequest` and the Hono middleware in JS).
#[derive(Debug)]
pub struct RequestDeadline {
    /// The earliest limit less the reserve, following the request's signal.
    pub deadline: Deadline,
    /// Which limit set it.
    pub limit: LimitKind,
    /// The header that set it, when a caller's did.
    pub source: Option<HeaderFormat>,
    /// Headers present but malformed, each as [`Error::InvalidHeader`] (ignored).
    pub rejected: Vec<Error>,
}

impl Deadline {
    /// The deadline of an incoming request: the earliest of `options.budget_ms`,
    /// the platform's wall-clock caps, the caller's propagation headers (clamped:
    /// a caller shortens, never extends) and the client (`request.signal()`,
    /// which becomes a parent), less `options.fallback_reserve_ms`.
    ///
    /// # Errors
    /// [`Error::InvalidType`] naming `options` when no bound is set (no budget,
    /// platform or caps); [`Error::InvalidArgument`] naming the option for an
    /// unknown platform, NaN or negatives. A malformed header is not an error
    /// (see [`RequestDeadline::rejected`]), nor is a client already gone (an
    /// expired deadline).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, LimitKind, RequestOptions};
    /// let request = web_sys::Request::new_with_str("http://127.0.0.1/").unwrap();
    /// let options = RequestOptions { budget_ms: Some(8_000.0), ..Default::default() };
    /// let incoming = Deadline::for_request(&request, &options)?;
    /// assert_eq!(incoming.limit, LimitKind::Budget);
    /// # Ok(()) }
    /// # fn main() {}
    /// ```
    pub fn for_request(request: &Request, options: &RequestOptions) -> Result<RequestDeadline, Error> {
        let headers = request.headers();
        let values: Vec<HeaderValue> = HeaderFormat::ALL
            .into_iter()
            .filter_map(|header| headers.get(header.name()).ok().flatten().map(|value| HeaderValue { header, value }))
            .collect();
        let signal = request.signal();
        let answer = request::for_request(timers::now(), options, &values, signal.aborted())?;
        let mut deadline = Deadline::at(answer.at)?.with_parent(&signal);
        deadline.limit = answer.limit;
        deadline.reserve_ms = options.fallback_reserve_ms.unwrap_or(0.0);
        Ok(RequestDeadline {
            deadline,
            limit: answer.limit,
            source: answer.source.and_then(|i| values.get(i)).map(|v| v.header),
            rejected: answer
                .rejected
                .into_iter()
                .filter_map(|(i, e)| values.get(i).map(|v| (v.header.name(), e)))
                .map(|(header, e)| {
                    use crate::core::error::Described;
                    Error::InvalidHeader { header, code: e.code(), message: e.to_string() }
                })
                .collect(),
        })
    }

    /// What set the instant; [`LimitKind::Client`] once a parent signal has
    /// aborted (for [`Deadline::for_request`], the client left).
    pub fn limit(&self) -> LimitKind {
        if self.parents_aborted() {
            LimitKind::Client
        } else {
            self.limit
        }
    }

    /// The deadline as plain data for another Worker ([`Deadline::from_wire`],
    /// or JavaScript's `Deadline.fromWire`): remaining ms rounded down, the
    /// reserve, the limit. `Wire` is serde: send it as JSON or over RPC.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, LimitKind};
    /// let wire = Deadline::in_ms(900.0)?.to_wire();
    /// assert!(wire.remaining_ms <= 900.0 && wire.limit == LimitKind::Budget);
    /// let received = Deadline::from_wire(&wire, 5_000.0, 0.0)?;
    /// assert!(received.remaining() <= 900.0);
    /// # Ok(()) }
    /// # fn main() {}
    /// ```
    pub fn to_wire(&self) -> Wire {
        request::to_wire(timers::now(), self.instant_ms(), self.reserve_ms, self.limit())
    }

    /// A deadline sent by [`Deadline::to_wire`] (or JavaScript's `toWire()`),
    /// never later than `max_ms` from now, less `transit_ms`. A spent wire, or
    /// one whose sender's client left, gives an expired deadline.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `remainingMs`, `reserveMs`, `maxMs` or
    /// `transitMs` for NaN, ±∞ or negatives.
    pub fn from_wire(wire: &Wire, max_ms: f64, transit_ms: f64) -> Result<Deadline, Error> {
        let (at, limit) = request::from_wire(timers::now(), wire, max_ms, transit_ms)?;
        let mut deadline = Deadline::at(at)?;
        deadline.limit = limit;
        deadline.reserve_ms = wire.reserve_ms;
        Ok(deadline)
    }
}
