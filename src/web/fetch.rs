//! [`fetch_with_deadline`]: `fetch` bounded by a deadline, the API above one request
//! (src/web/attempt.rs) and the resumable read (src/web/resume.rs), neither of which uses this
//! module; as js/fetch.js in the JS host.

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use web_sys::{RequestInit, Response};

use super::attempt::{fetch_once, Once};
use super::headers::HeaderFormat;
use super::resume::{ResumeFn, Resumed};
use super::retry::RetryOptions;
use super::stall::ProgressFn;
use super::{Deadline, Error};

/// The limits of [`fetch_with_deadline`]. Limits that are not given do not
/// apply (the deadline bounds everything).
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
/// # fn run() -> Result<(), edge_deadline::web::Error> {
/// use edge_deadline::web::{Deadline, FetchOptions};
/// let deadline = Deadline::in_ms(10_000.0)?;
/// let options = FetchOptions::new(&deadline).first_byte_ms(2_000.0).stall_ms(5_000.0);
/// # let _ = options; Ok(())
/// # }
/// # fn main() {}
/// ```
#[must_use]
pub struct FetchOptions<'a> {
    deadline: &'a Deadline,
    first_byte_ms: Option<f64>,
    first_chunk_ms: Option<f64>,
    stall_ms: Option<f64>,
    is_progress: Option<ProgressFn>,
    propagate: Option<Vec<HeaderFormat>>,
    retry: Option<RetryOptions>,
    resume: Option<ResumeFn>,
    max_event_bytes: Option<f64>,
    max_line_bytes: Option<f64>,
}

impl<'a> FetchOptions<'a> {
    /// Bounds the request, its headers and its body by `deadline`.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, FetchOptions};
    /// let deadline = Deadline::in_ms(10_000.0)?;
    /// let options = FetchOptions::new(&deadline);
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn new(deadline: &'a Deadline) -> Self {
        Self {
            deadline,
            first_byte_ms: None,
            first_chunk_ms: None,
            stall_ms: None,
            is_progress: None,
            propagate: None,
            retry: None,
            resume: None,
            max_event_bytes: None,
            max_line_bytes: None,
        }
    }

    /// The longest wait for the response headers (phase `"first-byte"`).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// # let d = edge_deadline::web::Deadline::in_ms(1_000.0)?;
    /// let options = edge_deadline::web::FetchOptions::new(&d).first_byte_ms(300.0);
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn first_byte_ms(mut self, ms: f64) -> Self {
        self.first_byte_ms = Some(ms);
        self
    }

    /// The longest wait for the first progress chunk, counted from the headers.
    /// Not given: the core's default wait (`default_first_chunk_ms`), half of
    /// what is left of the deadline when the headers arrive and never below
    /// its floor (`FIRST_CHUNK_FLOOR_MS`), so an upstream that only sends
    /// keep-alive comments is cut while a retry still fits.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// # let d = edge_deadline::web::Deadline::in_ms(1_000.0)?;
    /// let options = edge_deadline::web::FetchOptions::new(&d).first_chunk_ms(500.0);
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn first_chunk_ms(mut self, ms: f64) -> Self {
        self.first_chunk_ms = Some(ms);
        self
    }

    /// The longest silence between progress chunks of the body.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// # let d = edge_deadline::web::Deadline::in_ms(1_000.0)?;
    /// let options = edge_deadline::web::FetchOptions::new(&d).stall_ms(500.0);
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn stall_ms(mut self, ms: f64) -> Self {
        self.stall_ms = Some(ms);
        self
    }

    /// Which body chunks count as progress (see [`StallOptions::is_progress`](super::StallOptions::is_progress)).
    /// Not given, on a `text/event-stream` response only events are progress
    /// ([`sse_progress`](super::sse_progress)): keep-alive comments are
    /// silence. Elsewhere every non-empty chunk is.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// # let d = edge_deadline::web::Deadline::in_ms(1_000.0)?;
    /// let options = edge_deadline::web::FetchOptions::new(&d).is_progress(|_chunk| Ok(true));
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn is_progress(mut self, f: impl FnMut(&JsValue) -> Result<bool, Error> + 'static) -> Self {
        self.is_progress = Some(Box::new(f));
        self
    }

    /// The propagation headers that tell the upstream what is left of the
    /// deadline (the JavaScript option `propagate`). Each format in `formats`
    /// is sent with the remaining duration at the moment of the call, rounded
    /// down; `&[]` sends none (JavaScript's `propagate: false`). A header the
    /// request already has (in `init`'s headers, or a `Request` input's) is
    /// the caller's and is not overwritten.
    ///
    /// Not called, the package's own header `edge-deadline-remaining-ms` is
    /// sent, except from a browser page or worker to another origin: there a
    /// custom header makes the request preflighted (CORS), and a server that
    /// allows any origin but does not answer `OPTIONS` would fail it. Called,
    /// the formats given are sent anyway, as with `propagate: true` (or header
    /// names) in JavaScript.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, FetchOptions, HeaderFormat};
    /// let d = Deadline::in_ms(1_000.0)?;
    /// let grpc = FetchOptions::new(&d).propagate(&[HeaderFormat::GrpcTimeout]);
    /// let none = FetchOptions::new(&d).propagate(&[]);
    /// # let _ = (grpc, none); Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn propagate(mut self, formats: &[HeaderFormat]) -> Self {
        self.propagate = Some(formats.to_vec());
        self
    }

    /// Makes the read recover (JavaScript's `retry`): failures before the
    /// first content are retried inside the deadline and the retry options'
    /// limits, invisibly to the reader; a failure after content resumes the
    /// stream (`Last-Event-ID`, or the [`resume`](Self::resume) hook) or
    /// ends it. See [`Resumed`] and the guide's "Streams that recover".
    ///
    /// For a stream, `idempotent` defaults to true (a read that delivered
    /// nothing can be made again; say `.idempotent(false)` otherwise), and
    /// `attempt_timeout_ms` does not apply: `first_byte_ms`,
    /// `first_chunk_ms`, `stall_ms` and the deadline bound a stream, so
    /// setting it makes [`fetch_with_deadline`] fail with
    /// [`Error::InvalidArgument`] naming `retry.attemptTimeoutMs`. The
    /// retry options' circuit and record do not apply to a stream.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, FetchOptions, RetryOptions};
    /// let d = Deadline::in_ms(30_000.0)?;
    /// let options = FetchOptions::new(&d).stall_ms(5_000.0).retry(RetryOptions::new(1_000.0).max_attempts(4));
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn retry(mut self, options: RetryOptions) -> Self {
        self.retry = Some(options);
        self
    }

    /// How a stream continues after content was delivered when the upstream
    /// cannot be asked by `Last-Event-ID` (not an event stream, no event id,
    /// or it ignored the header): `hook` gets what was delivered
    /// ([`Resumed`]) and returns a `Promise` of the `Response` whose body
    /// continues the stream, or `None` to end it with the failure. Without
    /// [`retry`](Self::retry), the retry options' defaults apply
    /// (`RetryOptions::new(0.0)`).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, FetchOptions, RetryOptions};
    /// let d = Deadline::in_ms(30_000.0)?;
    /// # fn fetch_rest(from_byte: f64, signal: &web_sys::AbortSignal) -> js_sys::Promise { unimplemented!() }
    /// // The upstream can continue a body from a byte offset.
    /// let options = FetchOptions::new(&d)
    ///     .retry(RetryOptions::new(500.0))
    ///     .resume(|resumed| Some(fetch_rest(resumed.bytes, &resumed.signal)));
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn resume(mut self, hook: impl FnMut(Resumed) -> Option<Promise> + 'static) -> Self {
        self.resume = Some(Box::new(hook));
        self
    }

    /// With [`retry`](Self::retry) or [`resume`](Self::resume) on an event
    /// stream (whose events are held whole until their blank line): the
    /// longest event, in bytes, counting its line ends (default
    /// [`MAX_EVENT_BYTES`](crate::core::resume::MAX_EVENT_BYTES), at most
    /// 2^30). A longer one ends the stream at once with an error named
    /// `StreamTooLarge` (`.code` `"EVENT_TOO_LARGE"`), never retried. A
    /// value that is not a whole number from 1 fails the fetch (param
    /// `maxEventBytes`).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, FetchOptions, RetryOptions};
    /// let d = Deadline::in_ms(30_000.0)?;
    /// let options = FetchOptions::new(&d).retry(RetryOptions::new(500.0)).max_event_bytes(1_048_576.0);
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn max_event_bytes(mut self, bytes: f64) -> Self {
        self.max_event_bytes = Some(bytes);
        self
    }

    /// With [`retry`](Self::retry) or [`resume`](Self::resume) on an event
    /// stream: the longest line, in bytes, its end not counted (default
    /// [`MAX_LINE_BYTES`](crate::core::resume::MAX_LINE_BYTES), at most
    /// 2^30). A longer one ends the stream at once with `StreamTooLarge`
    /// (`.code` `"LINE_TOO_LONG"`). Checked as
    /// [`max_event_bytes`](Self::max_event_bytes) is.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, FetchOptions, RetryOptions};
    /// let d = Deadline::in_ms(30_000.0)?;
    /// let options = FetchOptions::new(&d).retry(RetryOptions::new(500.0)).max_line_bytes(262_144.0);
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn max_line_bytes(mut self, bytes: f64) -> Self {
        self.max_line_bytes = Some(bytes);
        self
    }
}

impl std::fmt::Debug for FetchOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchOptions")
            .field("deadline", self.deadline)
            .field("first_byte_ms", &self.first_byte_ms)
            .field("first_chunk_ms", &self.first_chunk_ms)
            .field("stall_ms", &self.stall_ms)
            .field("is_progress", &self.is_progress.is_some())
            .field("propagate", &self.propagate)
            .field("retry", &self.retry)
            .field("resume", &self.resume.is_some())
            .field("max_event_bytes", &self.max_event_bytes)
            .field("max_line_bytes", &self.max_line_bytes)
            .finish()
    }
}

/// `fetch` (the global one) bounded by a deadline, with a limit on the wait
/// for headers and stall detection on the body. The request's signal is
/// linked to the deadline's signal (and so to its parents), to `init`'s
/// signal and to the signal of a `Request` input; a stall, the deadline or a
/// consumer's cancel aborts the request.
///
/// `input` is a `Request` or a URL string, as for `fetch`. On a
/// `text/event-stream` response only events are progress unless
/// [`FetchOptions::is_progress`] says otherwise: an upstream that only sends
/// keep-alive comments stalls at `stall_ms`.
///
/// The upstream is told what is left of the deadline at the moment of the
/// call: by default in the package's own header `edge-deadline-remaining-ms`
/// (not from a browser to another origin, where it would force a CORS
/// preflight), in other formats or none with [`FetchOptions::propagate`]. A
/// header the caller set is not overwritten.
///
/// With [`FetchOptions::retry`] the read recovers (see [`Resumed`] and
/// src/web/resume.rs): failures before the first content are retried
/// invisibly, an event stream that breaks after content is continued with
/// `Last-Event-ID` and whole events only reach the reader, and otherwise the
/// [`FetchOptions::resume`] hook continues it.
///
/// ```no_run
/// use edge_deadline::web::{fetch_with_deadline, Deadline, FetchOptions, RetryOptions};
/// # async fn demo() -> Result<(), edge_deadline::web::Error> {
/// let deadline = Deadline::in_ms(60_000.0)?;
/// let options = FetchOptions::new(&deadline).stall_ms(5_000.0).retry(RetryOptions::new(1_000.0));
/// // Its body gets each event once, across reconnections.
/// let events = fetch_with_deadline(&"https://example.com/events".into(), None, options).await?;
/// # let _ = events; Ok(()) }
/// ```
///
/// # Errors
/// [`Error::DeadlineExceeded`]; [`Error::StreamStalled`] with phase
/// `FirstByte`; the reason `init`'s signal aborted with, or the network error,
/// as [`Error::Js`]; [`Error::InvalidArgument`] naming `firstByteMs`,
/// `firstChunkMs`, `stallMs` or `retry.attemptTimeoutMs` (or a retry
/// option) before any I/O. Stalls of the body surface when it is read. With
/// `retry`, these are the last attempt's, once no retry is allowed, and
/// [`Error::RetryFailed`] when not even the first attempt could start (less
/// than `attempt_min_ms` left).
///
/// ```no_run
/// use edge_deadline::web::{fetch_with_deadline, Deadline, FetchOptions};
/// # async fn demo() -> Result<(), edge_deadline::web::Error> {
/// let deadline = Deadline::in_ms(5_000.0)?;
/// let response =
///     fetch_with_deadline(&"https://example.com/".into(), None, FetchOptions::new(&deadline).stall_ms(2_000.0)).await?;
/// # let _ = response; Ok(()) }
/// ```
pub async fn fetch_with_deadline(
    input: &JsValue,
    init: Option<&RequestInit>,
    options: FetchOptions<'_>,
) -> Result<Response, Error> {
    let FetchOptions {
        deadline,
        first_byte_ms,
        first_chunk_ms,
        stall_ms,
        is_progress,
        propagate,
        retry,
        resume,
        max_event_bytes,
        max_line_bytes,
    } = options;
    let cap = |param: &'static str, value: Option<f64>, default: usize| match value {
        None => Ok(default),
        Some(v) => crate::core::resume::check_cap(param, v).map_err(|e| Error::described(param, &e)),
    };
    let caps = (
        cap("maxEventBytes", max_event_bytes, crate::core::resume::MAX_EVENT_BYTES)?,
        cap("maxLineBytes", max_line_bytes, crate::core::resume::MAX_LINE_BYTES)?,
    );
    let once = Once {
        at: deadline.instant_ms(),
        deadline_signal: deadline.signal(),
        first_byte_ms,
        first_chunk_ms,
        stall_ms,
        is_progress,
        propagate,
    };
    if retry.is_none() && resume.is_none() {
        return fetch_once(input, init, once).await;
    }
    super::resume::fetch_resumable(input, init, once, retry, resume, caps).await
}
