//! The deadline of one request: which limit in front of it ends first, and why.
//!
//! # Why one fold
//! A request handler is bounded by several limits at once: the product's own
//! budget (how long the user is promised an answer), the platform's
//! wall-clock caps ([`crate::core::caps`]), the caller's propagated deadline
//! (headers, [`crate::core::headers`], or a deadline passed over RPC,
//! [`Wire`]) and the client, who may leave. The deadline is the earliest of
//! them, less the fallback's reserve; when it ends, the answer should say
//! which one ended it ([`LimitKind`]), because the fix differs: a budget is
//! raised by the product, a platform cap by a plan or a setting, a caller's
//! deadline by the caller, and a client who left needs no answer at all.
//! Hosts (js/request.js, src/web/request.rs) only gather the inputs; the
//! fold and the reason are decided here, once.
//!
//! # A caller shortens, never extends
//! A caller's deadline (a header, a [`Wire`]) is clamped to the local bound:
//! what the caller sends can only make the deadline earlier.
//!
//! # A shortage is not an error
//! A request whose client has already left, a wire that arrives spent, a
//! reserve larger than the time there is: all give a deadline at `now`,
//! expired, so work under it is skipped and the fallback (or nothing, for a
//! client that left) answers. Only values that could never be valid (NaN,
//! negatives, an unknown platform) are errors.
//!
//! # Invariants (each is a test in this module)
//! 1. [`for_request`]'s deadline is never later than `now + budget − reserve`,
//!    than the platform's fold less the reserve, or than any valid header's
//!    deadline less the reserve; it equals the earliest of them (never before
//!    `now`), and [`RequestAnswer::limit`] names the one that won.
//! 2. A client already gone gives `at == now` and [`LimitKind::Client`].
//! 3. [`from_wire`] is never later than `now + max_ms`, never later than
//!    `now + remaining_ms − transit_ms`, never before `now`.
//! 4. `from_wire(to_wire(d))` at the same instant gives `d`'s instant back,
//!    up to the rounding down of the remaining milliseconds.

use serde::{Deserialize, Serialize};

use crate::core::caps::{platform_deadline, Bound, CapOverrides, CapsError, PlatformRequest};
use crate::core::deadline::{check_ms, deadline_in, DeadlineError};
use crate::core::error::{Described, Kind, Message};
use crate::core::headers::{earliest_incoming_values, HeaderError, HeaderValue, IncomingOptions};

/// What set (or ended) a deadline: `"budget"`, `"platform"`, `"caller"`,
/// `"client"` or `"background"` in JavaScript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum LimitKind {
    /// The product's own budget (`budgetMs`, or a local cap such as `maxMs`).
    Budget,
    /// A platform's wall-clock or first-byte cap.
    Platform,
    /// The caller's propagated deadline (a header).
    Caller,
    /// The client left (the request's signal aborted).
    Client,
    /// Work after the response (`waitUntil`), ended before the platform's drain cap.
    Background,
}

impl LimitKind {
    /// The limit named `value` (`"budget"`, `"platform"`, `"caller"`, `"client"`
    /// or `"background"`); any other name is [`UnknownLimit`].
    pub fn parse(value: &str) -> Result<Self, UnknownLimit> {
        match value {
            "budget" => Ok(Self::Budget),
            "platform" => Ok(Self::Platform),
            "caller" => Ok(Self::Caller),
            "client" => Ok(Self::Client),
            "background" => Ok(Self::Background),
            _ => Err(UnknownLimit { value: value.chars().take(64).collect() }),
        }
    }

    /// The limit's name as JavaScript writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Budget => "budget",
            Self::Platform => "platform",
            Self::Caller => "caller",
            Self::Client => "client",
            Self::Background => "background",
        }
    }
}

/// A limit name (a wire's `limit`) that is none of [`LimitKind`]'s.
#[derive(Debug, Clone, PartialEq)]
pub struct UnknownLimit {
    /// The name given (its first 64 characters).
    pub value: String,
}

crate::described_error!(UnknownLimit);

impl Described for UnknownLimit {
    fn code(&self) -> &'static str {
        "UNKNOWN_VALUE"
    }

    fn param(&self) -> Option<String> {
        Some("limit".into())
    }

    fn kind(&self) -> Kind {
        Kind::Range
    }

    fn message(&self) -> Message {
        Message::new(msg::UNKNOWN_LIMIT).arg("value", self.value.as_str())
    }
}

/// Why a request's deadline was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestError {
    /// No bound at all: neither `budgetMs`, a `platform` nor `caps`.
    NoBound,
    /// A platform option is invalid.
    Caps(CapsError),
    /// A header option (`transitMs`) is invalid.
    Header(HeaderError),
    /// A duration (`fallbackReserveMs`, a wire's `remainingMs`, `maxMs`) is invalid.
    Time(DeadlineError),
}

/// The request deadline's message templates.
pub mod msg {
    crate::templates! { "request";
        /// [`RequestError::NoBound`](super::RequestError::NoBound).
        NO_BOUND = "'options' must set a bound: 'budgetMs', a 'platform' or 'caps' (e.g. {{ budgetMs: 8000 }})";
        /// [`UnknownLimit`](super::UnknownLimit).
        UNKNOWN_LIMIT = "'limit' must be one of budget, platform, caller, client, background: current value is '{value}'";
    }
}

crate::described_error!(RequestError);

impl Described for RequestError {
    fn code(&self) -> &'static str {
        match self {
            Self::NoBound => "MISSING_OPTION",
            Self::Caps(e) => e.code(),
            Self::Header(e) => e.code(),
            Self::Time(e) => e.code(),
        }
    }

    fn param(&self) -> Option<String> {
        match self {
            Self::NoBound => None,
            Self::Caps(e) => e.param(),
            Self::Header(e) => e.param(),
            Self::Time(e) => e.param().map(String::from),
        }
    }

    fn kind(&self) -> Kind {
        match self {
            Self::NoBound => Kind::Type,
            Self::Caps(e) => e.kind(),
            Self::Header(e) => e.kind(),
            Self::Time(e) => e.kind(),
        }
    }

    fn message(&self) -> Message {
        match self {
            Self::NoBound => Message::new(msg::NO_BOUND),
            Self::Caps(e) => e.message(),
            Self::Header(e) => e.message(),
            Self::Time(e) => e.message(),
        }
    }
}

impl From<CapsError> for RequestError {
    fn from(e: CapsError) -> Self {
        Self::Caps(e)
    }
}

impl From<HeaderError> for RequestError {
    fn from(e: HeaderError) -> Self {
        Self::Header(e)
    }
}

impl From<DeadlineError> for RequestError {
    fn from(e: DeadlineError) -> Self {
        Self::Time(e)
    }
}

/// "No product budget": loses to any cap and, added to any real `now`, stays
/// on the timeline (2^53 − 1 ms).
pub const NO_BUDGET_MS: f64 = 4_503_599_627_370_496.0; // 2^52

/// The options of a request's deadline that the core reads
/// (`Deadline.forRequest`'s, less the signal and the header names).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct RequestOptions {
    /// The product's budget, in ms (`budgetMs` in JS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub budget_ms: Option<f64>,
    /// A platform name (`"cloudflare-workers"`, …), or `"custom"` (the default) for `caps` alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional, type = "Platform | \"custom\""))]
    pub platform: Option<String>,
    /// The account plan (`"free"` or `"paid"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional, type = "Tier"))]
    pub plan: Option<String>,
    /// Figures that replace the built-in ones (all of them with `custom`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub caps: Option<CapOverrides>,
    /// Held back from whichever limit wins, for the fallback's answer (`fallbackReserveMs`, 0 unless given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub fallback_reserve_ms: Option<f64>,
    /// Taken off a caller's header (`transitMs`, 0 unless given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub transit_ms: Option<f64>,
}

/// A request's deadline and what set it. Crosses to JavaScript with the
/// header rejections as `{ index, code, message }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify), tsify(missing_as_null))]
pub struct RequestAnswer {
    /// The deadline (the earliest limit less the reserve), never before `now`.
    pub at: f64,
    /// The earliest limit before the reserve was taken off.
    pub limit_at: f64,
    /// Which limit won.
    pub limit: LimitKind,
    /// The index (in the headers given) of the header that set it, when one did.
    pub source: Option<usize>,
    /// Headers present but malformed, ignored (see [`crate::core::headers::Incoming`]).
    #[serde(serialize_with = "crate::core::headers::rejections")]
    #[cfg_attr(feature = "typescript", tsify(type = "{ index: number, code: string, message: string }[]"))]
    pub rejected: Vec<(usize, HeaderError)>,
}

/// The deadline of a request at `now_ms`: the earliest of the budget, the
/// platform's caps (`platform`, `plan`, `caps`), the valid headers among
/// `headers` (clamped to that local bound) and, when `client_gone`, `now`;
/// less the reserve (never before `now`). On a tie the more local limit is
/// named: budget, then platform, then caller.
pub fn for_request(
    now_ms: f64,
    options: &RequestOptions,
    headers: &[HeaderValue],
    client_gone: bool,
) -> Result<RequestAnswer, RequestError> {
    let platform = options.platform.clone().unwrap_or_else(|| "custom".into());
    if options.budget_ms.is_none() && platform == "custom" && options.caps.is_none() {
        return Err(RequestError::NoBound);
    }
    let reserve = check_ms("fallbackReserveMs", options.fallback_reserve_ms.unwrap_or(0.0))?;
    let budget = match options.budget_ms {
        Some(ms) => check_ms("budgetMs", ms)?,
        None => NO_BUDGET_MS,
    };
    let local = platform_deadline(
        now_ms,
        &PlatformRequest {
            platform,
            plan: options.plan.clone(),
            trigger: None,
            product_ms: budget,
            fallback_reserve_ms: 0.0,
            caps: options.caps,
        },
    )
    .map_err(|e| match e {
        // The product limit is the budget here.
        CapsError::Time(DeadlineError::TooFar { value, max, .. }) => {
            CapsError::Time(DeadlineError::TooFar { param: "budgetMs", value, max })
        }
        other => other,
    })?;
    let incoming = earliest_incoming_values(
        now_ms,
        headers,
        &IncomingOptions { max_ms: local.at - now_ms, transit_ms: options.transit_ms },
    )?;
    let caller = incoming.source.map(|_| incoming.at - now_ms);
    let local_limit = if local.bound == Bound::Product && options.budget_ms.is_some() {
        LimitKind::Budget
    } else {
        LimitKind::Platform
    };
    let (at, limit_at, limit) =
        fold(now_ms, local.at, local_limit, caller, 0.0, LimitKind::Caller, client_gone, reserve)?;
    Ok(RequestAnswer { at, limit_at, limit, source: incoming.source, rejected: incoming.rejected })
}

/// Which limit ends a request (or a call received over a [`Wire`]): the
/// local bound at `local_at` (named `local`: the budget or the platform's
/// caps), the caller's deadline when a header or a wire carried one
/// (`caller_ms` from now less `transit_ms`, never below 0, named `caller`:
/// [`LimitKind::Caller`] for a header, the wire's own limit for a wire) and the
/// client. Answers the deadline (the winner less `reserve_ms`, never before
/// `now`), the winner's instant and its [`LimitKind`]. The caller wins only when
/// strictly earlier (a caller shortens, never extends). A client gone, or a
/// caller whose own client left ([`LimitKind::Client`]), gives `now`.
#[allow(clippy::too_many_arguments)] // the fold's inputs are the limits themselves, each a plain number or flag
pub fn fold(
    now_ms: f64,
    local_at: f64,
    local: LimitKind,
    caller_ms: Option<f64>,
    transit_ms: f64,
    caller: LimitKind,
    client_gone: bool,
    reserve_ms: f64,
) -> Result<(f64, f64, LimitKind), DeadlineError> {
    let now = check_ms("now", now_ms)?;
    let reserve = check_ms("fallbackReserveMs", reserve_ms)?;
    let transit = check_ms("transitMs", transit_ms)?;
    let mut limit_at = check_ms("at", local_at)?;
    let mut limit = local;
    if let Some(ms) = caller_ms {
        let ms = check_ms("remainingMs", ms)?;
        let at = deadline_in(now, if ms > transit { ms - transit } else { 0.0 })?;
        if at < limit_at || caller == LimitKind::Client {
            limit_at = if caller == LimitKind::Client { now } else { at };
            limit = caller;
        }
    }
    if client_gone {
        limit_at = now;
        limit = LimitKind::Client;
    }
    let at = if limit_at - reserve > now { limit_at - reserve } else { now };
    Ok((at, limit_at, limit))
}

/// A deadline as it crosses between Workers over RPC (`d.toWire()`), or any
/// other structured channel: durations, never an instant of the sender's
/// clock. Plain data: it survives structured clone and JSON.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct Wire {
    /// What the receiver may use, in whole ms, rounded down (`remainingMs`).
    pub remaining_ms: f64,
    /// What the sender holds back after it for its own fallback, in ms (`reserveMs`).
    pub reserve_ms: f64,
    /// What set the sender's deadline.
    pub limit: LimitKind,
}

/// The wire form of a deadline at `at`, seen at `now_ms`: the remaining
/// time rounded down (never extended by rounding), the reserve and the limit.
/// The receiver ([`from_wire`]) treats a [`LimitKind::Client`] wire as spent.
pub fn to_wire(now_ms: f64, at: f64, reserve_ms: f64, limit: LimitKind) -> Wire {
    let left = if at > now_ms { (at - now_ms).floor() } else { 0.0 };
    Wire { remaining_ms: left, reserve_ms, limit }
}

/// A deadline received as a [`Wire`]: `now + min(remaining − transit,
/// max)`. The wire's limit is kept when the wire wins (a budget set two
/// services up is still a budget); the local cap `max_ms` is
/// [`LimitKind::Budget`]. A wire from a sender whose client left is spent.
/// Returns the instant and the limit.
pub fn from_wire(now_ms: f64, wire: &Wire, max_ms: f64, transit_ms: f64) -> Result<(f64, LimitKind), DeadlineError> {
    check_ms("reserveMs", wire.reserve_ms)?;
    let max = check_ms("maxMs", max_ms)?;
    let local_at = deadline_in(now_ms, max).map_err(|e| match e {
        DeadlineError::TooFar { value, max, .. } => DeadlineError::TooFar { param: "maxMs", value, max },
        other => other,
    })?;
    let (at, _, limit) =
        fold(now_ms, local_at, LimitKind::Budget, Some(wire.remaining_ms), transit_ms, wire.limit, false, 0.0)?;
    Ok((at, limit))
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::core::headers::HeaderFormat;
    use proptest::prelude::*;

    fn header(v: &str) -> HeaderValue {
        HeaderValue { header: HeaderFormat::EdgeDeadlineRemainingMs, value: v.into() }
    }

    fn budget(ms: f64) -> RequestOptions {
        RequestOptions { budget_ms: Some(ms), ..Default::default() }
    }

    #[test]
    fn the_earliest_limit_wins_and_is_named() {
        let a = for_request(1_000.0, &budget(8_000.0), &[], false).unwrap();
        assert_eq!((a.at, a.limit, a.source), (9_000.0, LimitKind::Budget, None));
        // A caller's header shortens it.
        let a = for_request(1_000.0, &budget(8_000.0), &[header("500")], false).unwrap();
        assert_eq!((a.at, a.limit, a.source), (1_500.0, LimitKind::Caller, Some(0)));
        // ...and never extends it.
        let a = for_request(1_000.0, &budget(8_000.0), &[header("60000")], false).unwrap();
        assert_eq!((a.at, a.limit), (9_000.0, LimitKind::Budget));
        // The platform's cap (Vercel's 25 s to first byte) beats a longer budget.
        let o = RequestOptions { platform: Some("vercel-edge".into()), ..budget(60_000.0) };
        let a = for_request(0.0, &o, &[], false).unwrap();
        assert_eq!((a.at, a.limit), (25_000.0, LimitKind::Platform));
        // A platform with no wall cap and no budget: nothing but the caller and the client.
        let o = RequestOptions { platform: Some("cloudflare-workers".into()), ..Default::default() };
        let a = for_request(0.0, &o, &[], false).unwrap();
        assert_eq!((a.at, a.limit), (NO_BUDGET_MS, LimitKind::Platform));
        let a = for_request(0.0, &o, &[header("300")], false).unwrap();
        assert_eq!((a.at, a.limit), (300.0, LimitKind::Caller));
    }

    #[test]
    fn a_client_gone_and_a_large_reserve_are_shortages() {
        let a = for_request(10.0, &budget(8_000.0), &[header("500")], true).unwrap();
        assert_eq!((a.at, a.limit), (10.0, LimitKind::Client));
        let o = RequestOptions { fallback_reserve_ms: Some(700.0), ..budget(8_000.0) };
        let a = for_request(10.0, &o, &[header("500")], false).unwrap();
        assert_eq!((a.at, a.limit_at, a.limit), (10.0, 510.0, LimitKind::Caller));
        let a = for_request(10.0, &o, &[], false).unwrap();
        assert_eq!((a.at, a.limit_at), (7_310.0, 8_010.0));
    }

    #[test]
    fn bad_options_are_errors_naming_them() {
        let e = for_request(0.0, &RequestOptions::default(), &[], false).unwrap_err();
        assert_eq!((e.code(), e.kind()), ("MISSING_OPTION", Kind::Type));
        let e = for_request(0.0, &budget(f64::NAN), &[], false).unwrap_err();
        assert_eq!(e.param().as_deref(), Some("budgetMs"));
        let o = RequestOptions { fallback_reserve_ms: Some(-1.0), ..budget(1.0) };
        assert_eq!(for_request(0.0, &o, &[], false).unwrap_err().param().as_deref(), Some("fallbackReserveMs"));
        let o = RequestOptions { transit_ms: Some(f64::INFINITY), ..budget(1.0) };
        assert_eq!(for_request(0.0, &o, &[], false).unwrap_err().param().as_deref(), Some("transitMs"));
        let o = RequestOptions { platform: Some("lambda".into()), ..budget(1.0) };
        assert_eq!(for_request(0.0, &o, &[], false).unwrap_err().code(), "UNKNOWN_PLATFORM");
        // A malformed header is the caller's, not an error: ignored and reported.
        let a = for_request(0.0, &budget(100.0), &[header("soon")], false).unwrap();
        assert_eq!((a.at, a.rejected.len()), (100.0, 1));
    }

    #[test]
    fn wires_carry_durations_capped_like_headers() {
        let w = to_wire(100.0, 1_100.7, 50.0, LimitKind::Budget);
        assert_eq!(w, Wire { remaining_ms: 1_000.0, reserve_ms: 50.0, limit: LimitKind::Budget });
        assert_eq!(from_wire(5_000.0, &w, 10_000.0, 0.0).unwrap(), (6_000.0, LimitKind::Budget));
        assert_eq!(from_wire(5_000.0, &w, 10_000.0, 30.0).unwrap(), (5_970.0, LimitKind::Budget));
        let w = Wire { limit: LimitKind::Platform, ..w };
        assert_eq!(from_wire(0.0, &w, 10_000.0, 0.0).unwrap(), (1_000.0, LimitKind::Platform));
        // The local cap wins: it is the receiver's own budget.
        assert_eq!(from_wire(0.0, &w, 200.0, 0.0).unwrap(), (200.0, LimitKind::Budget));
        // Spent: a shortage, not an error.
        let spent = to_wire(100.0, 50.0, 0.0, LimitKind::Caller);
        assert_eq!(spent.remaining_ms, 0.0);
        assert_eq!(from_wire(7.0, &spent, 1_000.0, 0.0).unwrap(), (7.0, LimitKind::Caller));
        let gone = to_wire(0.0, 1_000.0, 0.0, LimitKind::Client);
        assert_eq!(from_wire(7.0, &gone, 1_000.0, 0.0).unwrap(), (7.0, LimitKind::Client));
        for (w, param) in [
            (Wire { remaining_ms: f64::NAN, ..w }, "remainingMs"),
            (Wire { remaining_ms: -1.0, ..w }, "remainingMs"),
            (Wire { reserve_ms: f64::INFINITY, ..w }, "reserveMs"),
        ] {
            assert_eq!(from_wire(0.0, &w, 1.0, 0.0).unwrap_err().param(), Some(param));
        }
        assert_eq!(from_wire(0.0, &w, -1.0, 0.0).unwrap_err().param(), Some("maxMs"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Invariants 1 and 2.
        #[test]
        fn the_deadline_is_the_earliest_limit_less_the_reserve(
            now in 0.0..1e12f64,
            budget_ms in proptest::option::of(0.0..1e7f64),
            wall in proptest::option::of(1.0..1e7f64),
            header_ms in proptest::option::of(0u32..10_000_000),
            reserve in prop_oneof![Just(0.0), 0.0..1e5f64],
            gone in any::<bool>(),
        ) {
            let o = RequestOptions {
                budget_ms,
                caps: wall.map(|w| CapOverrides { wall_ms: Some(w), ..Default::default() }),
                fallback_reserve_ms: Some(reserve),
                ..Default::default()
            };
            let headers: Vec<HeaderValue> = header_ms.iter().map(|ms| header(&ms.to_string())).collect();
            match for_request(now, &o, &headers, gone) {
                Err(RequestError::NoBound) => prop_assert!(budget_ms.is_none() && wall.is_none()),
                Err(e) => prop_assert!(false, "unexpected {e}"),
                Ok(a) => {
                    prop_assert!(a.at >= now);
                    let limits = [budget_ms, wall, header_ms.map(f64::from)];
                    let front = limits.into_iter().flatten().fold(f64::INFINITY, f64::min);
                    for ms in limits.into_iter().flatten() {
                        prop_assert!(a.at <= (now + ms - reserve).max(now) + 1e-3);
                    }
                    if gone {
                        prop_assert_eq!((a.at, a.limit), (now, LimitKind::Client));
                    } else {
                        prop_assert!((a.limit_at - (now + front)).abs() <= 1e-3);
                        let named = match a.limit {
                            LimitKind::Budget => budget_ms,
                            LimitKind::Platform => wall,
                            LimitKind::Caller => header_ms.map(f64::from),
                            _ => None,
                        };
                        prop_assert_eq!(named, Some(front));
                    }
                }
            }
        }

        /// Invariants 3 and 4.
        #[test]
        fn a_wire_never_extends_and_round_trips(
            now in 0.0..1e12f64,
            left in 0.0..1e7f64,
            max in 0.0..1e7f64,
            transit in prop_oneof![Just(0.0), 0.0..1e4f64],
        ) {
            let w = to_wire(now, now + left, 0.0, LimitKind::Budget);
            let (at, _) = from_wire(now, &w, max, transit).unwrap();
            prop_assert!(at >= now);
            prop_assert!(at <= now + max);
            prop_assert!(at <= now + left);
            if transit == 0.0 && left < max {
                prop_assert!(now + left - at < 1.0 + 1e-3);
            }
        }
    }
}
