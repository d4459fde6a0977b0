//! Deadline propagation headers, on `web_sys::Headers`.
//!
//! Encoding, strict parsing and the transit/local-cap clamp
//! ([`crate::core::headers`]) are the core's; this file reads the clock and
//! the `Headers`, and builds the [`Deadline`], as `js/headers.js` does.
//!
//! # Invariants
//! 1. What is sent is the remaining duration at the moment of the call,
//!    rounded down (never an instant on this machine's clock).
//! 2. A deadline read from headers is never later than `now + max_ms`: a
//!    caller can shorten ours, never extend it.

use web_sys::Headers;

use super::{timers, Deadline, Error};
use crate::core::error::Described;
pub use crate::core::headers::HeaderFormat;
use crate::core::headers::{self, HeaderError};

impl From<HeaderError> for Error {
    fn from(error: HeaderError) -> Self {
        let param = match &error {
            HeaderError::Time(e) => return Error::from(*e),
            HeaderError::UnknownFormat { .. } => "format",
            HeaderError::TooLong { header, .. }
            | HeaderError::Empty { header }
            | HeaderError::Signed { header }
            | HeaderError::Whitespace { header, .. }
            | HeaderError::NonAscii { header, .. }
            | HeaderError::NotDigit { header, .. }
            | HeaderError::NoDigits { header }
            | HeaderError::TooManyDigits { header, .. }
            | HeaderError::MissingUnit { header }
            | HeaderError::BadUnit { header, .. } => header,
        };
        Error::described(param, &error)
    }
}

/// The deadline a request's headers asked for, and which header set it.
#[derive(Debug)]
pub struct Incoming {
    /// The earliest of `now + max_ms` and every valid header's deadline.
    pub deadline: Deadline,
    /// The header that set it; `None` when the local cap did.
    pub source: Option<HeaderFormat>,
    /// Headers present but malformed, each as [`Error::InvalidHeader`]
    /// (ignored: they can only leave the local cap). Answer 400 when this is
    /// not empty if you want to be strict.
    pub rejected: Vec<Error>,
}

impl Deadline {
    /// Sets one header per format in `headers`, stating what is left of this
    /// deadline (rounded down), for the next hop.
    ///
    /// # Errors
    /// [`Error::InvalidType`] naming `format` when `formats` is empty; [`Error::Js`]
    /// if `headers` is immutable (a received request's).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, HeaderFormat};
    /// let d = Deadline::in_ms(900.0)?;
    /// let headers = web_sys::Headers::new().unwrap();
    /// d.to_headers(&headers, &[HeaderFormat::EdgeDeadlineRemainingMs, HeaderFormat::GrpcTimeout])?;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn to_headers(&self, headers: &Headers, formats: &[HeaderFormat]) -> Result<(), Error> {
        if formats.is_empty() {
            // As the JavaScript API: an empty list is a mistake, not "send none" (send none by not calling).
            return Err(Error::InvalidType {
                param: "format",
                code: "INVALID_TYPE",
                message: "'format' must name at least one header format (HeaderFormat::ALL has them all)".into(),
            });
        }
        let remaining = self.remaining();
        for &format in formats {
            headers.set(format.name(), &headers::encode(format, remaining)?).map_err(Error::Js)?;
        }
        Ok(())
    }

    /// The deadline the propagation headers in `headers` ask for (every
    /// format this package knows: `grpc-timeout`, `connect-timeout-ms`,
    /// `x-envoy-expected-rq-timeout-ms`, `edge-deadline-remaining-ms`), less
    /// `transit_ms`, never later than `max_ms` from now. Every copy of a
    /// repeated header counts (`Headers::get` joins them with commas): each is
    /// parsed and refused alone, and the earliest valid one wins. Malformed
    /// copies are reported in [`Incoming::rejected`] (as
    /// [`Error::InvalidHeader`], at most 8) and otherwise ignored, like the
    /// JavaScript API's default.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `maxMs` or `transitMs`.
    ///
    /// ```no_run
    /// use edge_deadline::web::Deadline;
    /// # fn handle(request: web_sys::Request) -> Result<(), edge_deadline::web::Error> {
    /// let incoming = Deadline::from_headers(&request.headers(), 10_000.0, 5.0)?;
    /// let deadline = incoming.deadline; // at most 10 s, sooner if the caller said so
    /// # let _ = deadline; Ok(()) }
    /// ```
    pub fn from_headers(headers: &Headers, max_ms: f64, transit_ms: f64) -> Result<Incoming, Error> {
        let values: Vec<(HeaderFormat, String)> = HeaderFormat::ALL
            .into_iter()
            .filter_map(|format| headers.get(format.name()).ok().flatten().map(|v| (format, v)))
            .collect();
        let raw: Vec<(HeaderFormat, &[u8])> = values.iter().map(|(f, v)| (*f, v.as_bytes())).collect();
        let incoming = headers::earliest_incoming(timers::now(), &raw, transit_ms, max_ms)?;
        Ok(Incoming {
            deadline: Deadline::at(incoming.at)?,
            source: incoming.source.and_then(|i| values.get(i)).map(|(format, _)| *format),
            rejected: incoming
                .rejected
                .into_iter()
                .filter_map(|(i, e)| values.get(i).map(|(format, _)| (format.name(), e)))
                .map(|(header, e)| Error::InvalidHeader { header, code: e.code(), message: e.to_string() })
                .collect(),
        })
    }
}
