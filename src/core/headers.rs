//! Deadline propagation headers: encode the time left, parse what callers send.
//!
//! # Why a duration on the wire
//! Monotonic clocks on two machines share no epoch, and wall clocks drift, so
//! what crosses the network is the *remaining duration*, never an instant. The
//! receiver turns it back into an instant on its own clock, minus an estimate
//! of the transit time, and never later than its own cap: a caller can
//! shorten our deadline, never extend it.
//!
//! # Formats
//! | header                            | wire format                                   |
//! |-----------------------------------|-----------------------------------------------|
//! | `grpc-timeout`                    | 1–8 ASCII digits + one of `H M S m u n`       |
//! | `connect-timeout-ms`              | 1–10 ASCII digits, milliseconds (Connect)     |
//! | `x-envoy-expected-rq-timeout-ms`  | 1–15 ASCII digits, milliseconds (Envoy)       |
//! | `edge-deadline-remaining-ms`      | 1–10 ASCII digits, milliseconds (this package)|
//!
//! `edge-deadline-remaining-ms` is this package's own header: the same
//! integer-milliseconds shape as Connect's, under a name that no RPC framework
//! will act on, for plain `fetch` hops between services that use this library.
//!
//! # Encoding rounds down, and stays below 2^31 ms
//! Sending slightly less than the time left is safe (the callee gives up a
//! little early); sending more is not. Every encoding therefore rounds *down*:
//! `grpc-timeout` picks the finest unit whose value fits in 8 digits and
//! computes `floor(remaining / unit)` exactly in integers (the remaining
//! milliseconds are decomposed from the `f64` bits, so no rounding can push
//! the value up). This deliberately differs from grpc-go and grpc-js, which
//! round up. Values above [`MAX_TIMER_MS`] (2^31 − 1 ms, about 24.8 days)
//! are sent as [`MAX_TIMER_MS`]: the grpc-js server truncates the parsed
//! value with `| 0` and connect-es passes it to `setTimeout`, so a larger
//! value would make a JavaScript peer expire at once.
//!
//! # Parsing is strict, and overflow clamps
//! The raw value is length-checked ([`MAX_HEADER_LEN`]) before anything else.
//! Leading and trailing spaces and tabs are removed, as HTTP requires of any
//! field value; everything else must match the format exactly: no sign, no
//! inner whitespace, no decimal point or exponent (`1e3S`), no digits outside
//! ASCII, no digit beyond the format's maximum. A value that is well formed
//! but huge (`99999999H`, 11 415 years) is *not* an error: it parses to its
//! exact duration, and [`incoming_deadline`] clamps it to the local cap,
//! which is what a caller asking for "a lot" should get.
//!
//! # Invariants (each is a property test in this module)
//! 1. `parse(encode(r)) ≤ r` for every format and every valid `r`, and the
//!    loss is below one unit of the chosen precision.
//! 2. [`encode`] always produces a value [`parse`] accepts, within the
//!    format's digit limit and at most [`MAX_TIMER_MS`].
//! 3. [`incoming_deadline`] is never later than `now + maxMs`, nor later than
//!    `now + parsed − transit`, nor earlier than `now`.
//! 4. [`parse`] never panics and never returns NaN, an infinity or a negative
//!    number, for any byte string (over a million fuzzed inputs).

use serde::{Deserialize, Serialize, Serializer};

use crate::core::deadline::{check_ms, deadline_in, DeadlineError, MAX_TIMER_MS};
use crate::core::error::{Described, Kind, Message};

/// The longest header value examined, in bytes. Longer input is refused
/// before any other work.
pub const MAX_HEADER_LEN: usize = 64;

/// The most rejections one request's headers report: a value of a million
/// bad copies costs one pass over its bytes, not a million errors.
pub const MAX_REJECTIONS: usize = 8;

/// This package's own header.
pub const EDGE_DEADLINE_HEADER: &str = "edge-deadline-remaining-ms";

/// A deadline propagation header. Crosses to JavaScript as its lowercase
/// name ([`HeaderFormat::name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum HeaderFormat {
    /// `grpc-timeout`: gRPC over HTTP/2.
    #[serde(rename = "grpc-timeout")]
    GrpcTimeout,
    /// `connect-timeout-ms`: the Connect protocol.
    #[serde(rename = "connect-timeout-ms")]
    ConnectTimeoutMs,
    /// `x-envoy-expected-rq-timeout-ms`: set by Envoy for its upstream.
    #[serde(rename = "x-envoy-expected-rq-timeout-ms")]
    EnvoyExpectedRqTimeoutMs,
    /// `edge-deadline-remaining-ms`: this package.
    #[serde(rename = "edge-deadline-remaining-ms")]
    EdgeDeadlineRemainingMs,
}

impl HeaderFormat {
    /// Every format, in the order `fromHeaders` consults them by default.
    pub const ALL: [Self; 4] =
        [Self::GrpcTimeout, Self::ConnectTimeoutMs, Self::EnvoyExpectedRqTimeoutMs, Self::EdgeDeadlineRemainingMs];

    /// The header name, lowercase.
    pub fn name(self) -> &'static str {
        match self {
            Self::GrpcTimeout => "grpc-timeout",
            Self::ConnectTimeoutMs => "connect-timeout-ms",
            Self::EnvoyExpectedRqTimeoutMs => "x-envoy-expected-rq-timeout-ms",
            Self::EdgeDeadlineRemainingMs => EDGE_DEADLINE_HEADER,
        }
    }

    /// The format for a header name (ASCII case-insensitive).
    pub fn from_name(name: &str) -> Result<Self, HeaderError> {
        Self::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| HeaderError::UnknownFormat { value: name.chars().take(64).collect(), param: None })
    }

    /// [`HeaderFormat::from_name`] for a name the caller gave as `param`
    /// (`options.formats`, `propagate`), which an unknown name's error names.
    pub fn from_name_as(name: &str, param: &str) -> Result<Self, HeaderError> {
        Self::from_name(name).map_err(|e| match e {
            HeaderError::UnknownFormat { value, .. } => HeaderError::UnknownFormat { value, param: Some(param.into()) },
            other => other,
        })
    }

    /// The most digits a value may have.
    pub fn max_digits(self) -> usize {
        match self {
            Self::GrpcTimeout => 8,
            Self::ConnectTimeoutMs | Self::EdgeDeadlineRemainingMs => 10,
            Self::EnvoyExpectedRqTimeoutMs => 15,
        }
    }
}

/// Why a header value was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum HeaderError {
    /// The value is longer than [`MAX_HEADER_LEN`] bytes.
    TooLong {
        /// The header's name (`grpc-timeout`, …).
        header: &'static str,
        /// The value's length, in bytes.
        len: usize,
    },
    /// The value is empty (or only spaces and tabs).
    Empty {
        /// The header's name.
        header: &'static str,
    },
    /// The value starts with `+` or `-`. Durations on the wire are unsigned.
    Signed {
        /// The header's name.
        header: &'static str,
    },
    /// Whitespace inside the value, at byte `at`.
    Whitespace {
        /// The header's name.
        header: &'static str,
        /// The byte offset of the first whitespace.
        at: usize,
    },
    /// A byte outside ASCII at `at` (for example a non-ASCII digit like `١`).
    NonAscii {
        /// The header's name.
        header: &'static str,
        /// The byte offset of the first non-ASCII byte.
        at: usize,
    },
    /// An ASCII character other than a digit at `at` (`.`, `e`, `,` …).
    NotDigit {
        /// The header's name.
        header: &'static str,
        /// The byte offset of the character.
        at: usize,
        /// The character found.
        found: char,
    },
    /// The value has a unit but no digits.
    NoDigits {
        /// The header's name.
        header: &'static str,
    },
    /// More digits than the format allows.
    TooManyDigits {
        /// The header's name.
        header: &'static str,
        /// How many digits the value has.
        digits: usize,
        /// The most the format allows (8 for `grpc-timeout`).
        max: usize,
    },
    /// A `grpc-timeout` value without its unit letter.
    MissingUnit {
        /// The header's name.
        header: &'static str,
    },
    /// A `grpc-timeout` unit other than `H M S m u n`.
    BadUnit {
        /// The header's name.
        header: &'static str,
        /// The last character, where the unit letter belongs.
        found: char,
    },
    /// A header name this package does not know; `param` is where the caller
    /// gave it (`format` unless said).
    UnknownFormat {
        /// The name given (its first 64 characters).
        value: String,
        /// The option that named it; `None` means `format`.
        param: Option<String>,
    },
    /// A time argument (`now`, `parsedMs`, `transitMs`, `maxMs`, `remainingMs`) is invalid.
    Time(DeadlineError),
}

/// The propagation headers' message templates.
pub mod msg {
    crate::templates! { "headers";
        /// [`HeaderError::TooLong`](super::HeaderError::TooLong).
        TOO_LONG = "'{header}' must be at most {max} bytes: current value has {len}";
        /// [`HeaderError::Empty`](super::HeaderError::Empty).
        EMPTY = "'{header}' must not be empty";
        /// [`HeaderError::Signed`](super::HeaderError::Signed).
        SIGNED = "'{header}' must be an unsigned number: current value has a sign";
        /// [`HeaderError::Whitespace`](super::HeaderError::Whitespace).
        WHITESPACE = "'{header}' must not contain whitespace: current value has some at byte {at}";
        /// [`HeaderError::NonAscii`](super::HeaderError::NonAscii).
        NON_ASCII = "'{header}' must contain only ASCII digits: current value has a non-ASCII byte at {at}";
        /// `found`: the character, escaped as Rust's `char::escape_default` does.
        NOT_DIGIT = "'{header}' must contain only ASCII digits: current value has '{found}' at byte {at}";
        /// [`HeaderError::NoDigits`](super::HeaderError::NoDigits).
        NO_DIGITS = "'{header}' must start with at least one digit";
        /// [`HeaderError::TooManyDigits`](super::HeaderError::TooManyDigits).
        TOO_MANY_DIGITS = "'{header}' must have between 1 and {max} digits: current value has {digits}";
        /// [`HeaderError::MissingUnit`](super::HeaderError::MissingUnit).
        MISSING_UNIT = "'{header}' must end with one of the units H M S m u n: current value has none";
        /// [`HeaderError::BadUnit`](super::HeaderError::BadUnit).
        BAD_UNIT = "'{header}' must end with one of the units H M S m u n: current value ends with '{found}'";
        /// Lists every [`HeaderFormat`](super::HeaderFormat) (a test checks it).
        UNKNOWN_FORMAT = "'format' must be one of grpc-timeout, connect-timeout-ms, x-envoy-expected-rq-timeout-ms, edge-deadline-remaining-ms: current value is '{value}'";
    }
}

crate::described_error!(HeaderError);

impl Described for HeaderError {
    fn code(&self) -> &'static str {
        match self {
            Self::TooLong { .. } => "HEADER_TOO_LONG",
            Self::Empty { .. } => "HEADER_EMPTY",
            Self::Signed { .. } => "HEADER_SIGNED",
            Self::Whitespace { .. } => "HEADER_WHITESPACE",
            Self::NonAscii { .. } => "HEADER_NON_ASCII",
            Self::NotDigit { .. } => "HEADER_NOT_DIGIT",
            Self::NoDigits { .. } => "HEADER_NO_DIGITS",
            Self::TooManyDigits { .. } => "HEADER_TOO_MANY_DIGITS",
            Self::MissingUnit { .. } => "HEADER_MISSING_UNIT",
            Self::BadUnit { .. } => "HEADER_BAD_UNIT",
            Self::UnknownFormat { .. } => "UNKNOWN_FORMAT",
            Self::Time(e) => e.code(),
        }
    }

    /// `value` for a refused header value (`parseHeader(format, value)`),
    /// `format` for an unknown header name, the time argument's own name
    /// (`remainingMs`, `maxMs`, `transitMs`) otherwise.
    fn param(&self) -> Option<String> {
        match self {
            Self::UnknownFormat { param, .. } => Some(param.clone().unwrap_or_else(|| "format".into())),
            Self::Time(e) => Described::param(e),
            _ => Some("value".into()),
        }
    }

    fn kind(&self) -> Kind {
        match self {
            Self::Time(e) => e.kind(),
            _ => Kind::Range,
        }
    }

    fn message(&self) -> Message {
        let of = |id, header: &'static str| Message::new(id).arg("header", header);
        // `escape_default` as an iterator: no formatting machinery.
        let escaped = |c: char| c.escape_default().collect::<String>();
        match *self {
            Self::TooLong { header, len } => of(msg::TOO_LONG, header).arg("max", MAX_HEADER_LEN).arg("len", len),
            Self::Empty { header } => of(msg::EMPTY, header),
            Self::Signed { header } => of(msg::SIGNED, header),
            Self::Whitespace { header, at } => of(msg::WHITESPACE, header).arg("at", at),
            Self::NonAscii { header, at } => of(msg::NON_ASCII, header).arg("at", at),
            Self::NotDigit { header, at, found } => {
                of(msg::NOT_DIGIT, header).arg("found", escaped(found)).arg("at", at)
            }
            Self::NoDigits { header } => of(msg::NO_DIGITS, header),
            Self::TooManyDigits { header, digits, max } => {
                of(msg::TOO_MANY_DIGITS, header).arg("max", max).arg("digits", digits)
            }
            Self::MissingUnit { header } => of(msg::MISSING_UNIT, header),
            Self::BadUnit { header, found } => of(msg::BAD_UNIT, header).arg("found", escaped(found)),
            Self::UnknownFormat { ref value, .. } => Message::new(msg::UNKNOWN_FORMAT).arg("value", value.as_str()),
            Self::Time(ref e) => e.message(),
        }
    }
}

impl From<DeadlineError> for HeaderError {
    fn from(e: DeadlineError) -> Self {
        Self::Time(e)
    }
}

/// gRPC units, finest first, as (nanoseconds per unit, letter).
const GRPC_UNITS: [(u64, u8); 6] = [
    (1, b'n'),
    (1_000, b'u'),
    (1_000_000, b'm'),
    (1_000_000_000, b'S'),
    (60_000_000_000, b'M'),
    (3_600_000_000_000, b'H'),
];

/// The largest 8-digit value.
const GRPC_MAX_VALUE: u64 = 99_999_999;

/// Encodes `remaining_ms` for `format`, rounding down and clamping at
/// [`MAX_TIMER_MS`]. `0` encodes as `0n` / `0`, which every peer treats as
/// already expired.
pub fn encode(format: HeaderFormat, remaining_ms: f64) -> Result<String, HeaderError> {
    let r = check_ms("remainingMs", remaining_ms)?;
    let r = if r > MAX_TIMER_MS { MAX_TIMER_MS } else { r };
    Ok(match format {
        HeaderFormat::GrpcTimeout => {
            // At most MAX_TIMER_MS × 10^6 < 2^52 ns, so it fits a u64, whose
            // division is inline where a u128's is a routine of its own in
            // the `.wasm`; saturating keeps this total.
            let ns = u64::try_from(floor_ns(r)).unwrap_or(u64::MAX);
            // MAX_TIMER_MS is 2 147 483 S, so the seconds unit always fits and
            // the fallback below is never used; it keeps this total.
            let (value, unit) = GRPC_UNITS
                .iter()
                .map(|&(per, unit)| (ns / per, unit))
                .find(|&(v, _)| v <= GRPC_MAX_VALUE)
                .unwrap_or((GRPC_MAX_VALUE, b'H'));
            // Integers only: no float formatting in the `.wasm`.
            format!("{}{}", value, char::from(unit))
        }
        HeaderFormat::ConnectTimeoutMs
        | HeaderFormat::EnvoyExpectedRqTimeoutMs
        | HeaderFormat::EdgeDeadlineRemainingMs => {
            // 0 ≤ r ≤ 2^31 − 1, so the floor is an exact integer that fits u64.
            format!("{}", r.floor() as u64)
        }
    })
}

/// `floor(ms × 10^6)` computed exactly from the bits of `ms` (finite, ≥ 0).
fn floor_ns(ms: f64) -> u128 {
    let bits = ms.to_bits();
    let biased = (bits >> 52) & 0x7ff;
    let fraction = bits & ((1u64 << 52) - 1);
    // ms = mantissa × 2^exp exactly.
    let (mantissa, exp) =
        if biased == 0 { (fraction, -1074i64) } else { (fraction | (1u64 << 52), biased as i64 - 1075) };
    let scaled = u128::from(mantissa) * 1_000_000; // < 2^73
    if exp > 54 {
        // ms ≥ 2^106: unreachable after the MAX_TIMER_MS clamp; saturate.
        u128::MAX
    } else if exp >= 0 {
        scaled << exp
    } else if exp <= -128 {
        0
    } else {
        scaled >> (-exp)
    }
}

/// Parses a header value into the remaining duration it states, in ms.
pub fn parse(format: HeaderFormat, raw: &[u8]) -> Result<f64, HeaderError> {
    let header = format.name();
    if raw.len() > MAX_HEADER_LEN {
        return Err(HeaderError::TooLong { header, len: raw.len() });
    }
    let (value, offset) = trim_ows(raw);
    if value.is_empty() {
        return Err(HeaderError::Empty { header });
    }
    // Bytes that are wrong anywhere: report the first one.
    for (i, &b) in value.iter().enumerate() {
        let at = offset + i;
        match b {
            b'+' | b'-' if i == 0 => return Err(HeaderError::Signed { header }),
            0x80..=0xff => return Err(HeaderError::NonAscii { header, at }),
            b if b.is_ascii_whitespace() || b == 0x0b => return Err(HeaderError::Whitespace { header, at }),
            _ => {}
        }
    }
    match format {
        HeaderFormat::GrpcTimeout => {
            let (&unit, digits) = value.split_last().ok_or(HeaderError::Empty { header })?;
            let per_unit_ms = match unit {
                b'H' => 3_600_000.0,
                b'M' => 60_000.0,
                b'S' => 1_000.0,
                b'm' => 1.0,
                b'u' => 1e-3,
                b'n' => 1e-6,
                b'0'..=b'9' => {
                    // Report a bad character first ("1e3"), then the missing unit.
                    check_digits(header, value, offset)?;
                    return Err(HeaderError::MissingUnit { header });
                }
                _ => {
                    check_digits(header, digits, offset)?;
                    return Err(HeaderError::BadUnit { header, found: char::from(unit) });
                }
            };
            let v = parse_digits(header, digits, offset, format.max_digits())?;
            // v < 10^8: exact in f64. H, M, S and m products are exact integers
            // (≤ 3.6 × 10^14); u and n divide once, correctly rounded, so a
            // value encoded by `encode` never parses above what was encoded.
            let v = v as f64;
            Ok(if per_unit_ms >= 1.0 {
                v * per_unit_ms
            } else if unit == b'u' {
                v / 1e3
            } else {
                v / 1e6
            })
        }
        HeaderFormat::ConnectTimeoutMs
        | HeaderFormat::EnvoyExpectedRqTimeoutMs
        | HeaderFormat::EdgeDeadlineRemainingMs => {
            // At most 15 digits: below 2^53, exact in f64.
            Ok(parse_digits(header, value, offset, format.max_digits())? as f64)
        }
    }
}

/// [`parse`] for a string.
pub fn parse_str(format: HeaderFormat, value: &str) -> Result<f64, HeaderError> {
    parse(format, value.as_bytes())
}

/// Strips leading and trailing SP and HTAB (HTTP's optional whitespace);
/// returns the rest and its offset in the input.
fn trim_ows(raw: &[u8]) -> (&[u8], usize) {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = raw.iter().position(|b| !is_ows(b)).unwrap_or(raw.len());
    let end = raw.iter().rposition(|b| !is_ows(b)).map_or(start, |i| i + 1);
    (&raw[start..end], start)
}

/// Refuses an empty digit run or a non-digit in it (signs, whitespace and
/// non-ASCII bytes were already refused), reporting the first offender.
fn check_digits(header: &'static str, digits: &[u8], offset: usize) -> Result<(), HeaderError> {
    if digits.is_empty() {
        return Err(HeaderError::NoDigits { header });
    }
    match digits.iter().position(|b| !b.is_ascii_digit()) {
        Some(i) => Err(HeaderError::NotDigit { header, at: offset + i, found: char::from(digits[i]) }),
        None => Ok(()),
    }
}

/// Parses 1..=`max` ASCII digits; `max` is a format limit (at most 15).
fn parse_digits(header: &'static str, digits: &[u8], offset: usize, max: usize) -> Result<u64, HeaderError> {
    check_digits(header, digits, offset)?;
    if digits.len() > max {
        return Err(HeaderError::TooManyDigits { header, digits: digits.len(), max });
    }
    // At most 15 digits, so the value is below 10^15: `checked` is belt and braces.
    digits
        .iter()
        .try_fold(0u64, |acc, &d| acc.checked_mul(10)?.checked_add(u64::from(d - b'0')))
        .ok_or(HeaderError::TooManyDigits { header, digits: digits.len(), max })
}

/// The local deadline for an incoming remaining duration:
/// `now + clamp(parsed − transit, 0, max)`. A caller can shorten the local
/// cap `max_ms`, never extend it.
pub fn incoming_deadline(now_ms: f64, parsed_ms: f64, transit_ms: f64, max_ms: f64) -> Result<f64, HeaderError> {
    let now = check_ms("now", now_ms)?;
    let parsed = check_ms("parsedMs", parsed_ms)?;
    let transit = check_ms("transitMs", transit_ms)?;
    let max = check_ms("maxMs", max_ms)?;
    let left = if parsed > transit { parsed - transit } else { 0.0 };
    let granted = if left < max { left } else { max };
    Ok(deadline_in(now, granted)?)
}

/// One header value present on a request, as a binding hands it over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct HeaderValue {
    /// Which header the value came from (`header` in JS).
    pub header: HeaderFormat,
    /// The raw value as the request carried it, unparsed.
    pub value: String,
}

/// The options of reading a deadline from headers: the local cap (`maxMs`)
/// and the estimated transit time (`transitMs`, 0 unless given).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct IncomingOptions {
    /// The local cap, in ms (`maxMs` in JS): a parsed header never extends the
    /// deadline past it.
    pub max_ms: f64,
    /// The estimated time the request spent in transit, in ms (`transitMs` in
    /// JS), taken off the parsed budget; 0 unless given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub transit_ms: Option<f64>,
}

/// [`earliest_incoming`] over [`HeaderValue`]s.
pub fn earliest_incoming_values(
    now_ms: f64,
    values: &[HeaderValue],
    options: &IncomingOptions,
) -> Result<Incoming, HeaderError> {
    let raw: Vec<(HeaderFormat, &[u8])> = values.iter().map(|v| (v.header, v.value.as_bytes())).collect();
    earliest_incoming(now_ms, &raw, options.transit_ms.unwrap_or(0.0), options.max_ms)
}

/// The deadline from every propagation header present. Crosses to
/// JavaScript with each rejection as `{ index, code, message }`, the message
/// as data (its template and values, see [`crate::core::error`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct Incoming {
    /// The earliest deadline among the valid headers and the local cap.
    pub at: f64,
    /// The index (in the headers given) of the header that set `at`; absent (`None`)
    /// when the local cap did.
    pub source: Option<usize>,
    /// The index and error of each header that was present but malformed.
    /// They are ignored, which can only leave the deadline at the local cap,
    /// never extend it; strict callers may turn any entry here into a 400.
    #[serde(serialize_with = "rejections")]
    #[cfg_attr(feature = "typescript", tsify(type = "{ index: number, code: string, message: string }[]"))]
    pub rejected: Vec<(usize, HeaderError)>,
}

pub(crate) fn rejections<S: Serializer>(rejected: &[(usize, HeaderError)], s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Rejection<'a> {
        index: usize,
        code: &'a str,
        message: Message,
    }
    s.collect_seq(rejected.iter().map(|(index, e)| Rejection { index: *index, code: e.code(), message: e.message() }))
}

/// Folds the headers present into one deadline: the earliest of
/// `now + maxMs` and each valid copy's [`incoming_deadline`].
///
/// Every copy counts. A format may appear more than once: two spellings of
/// one name in a plain object, or a repeated field, which `Headers.get`
/// hands over joined with `", "`. No format has a comma, so each
/// comma-separated element of a value is a copy of its own, parsed and
/// refused alone: a bad or overlong copy never hides a valid one, and the
/// earliest valid copy wins, so a second copy can never extend what the
/// first one asked for. Empty elements are no copies (an HTTP list may have
/// them); an empty value alone is refused. At most [`MAX_REJECTIONS`] are
/// reported. On a tie the first given wins.
pub fn earliest_incoming(
    now_ms: f64,
    headers: &[(HeaderFormat, &[u8])],
    transit_ms: f64,
    max_ms: f64,
) -> Result<Incoming, HeaderError> {
    // Checked first, so a bad `maxMs` is reported under its own name (the
    // local cap goes through `incoming_deadline` as the parsed value).
    check_ms("maxMs", max_ms)?;
    check_ms("transitMs", transit_ms)?;
    let mut out = Incoming { at: incoming_deadline(now_ms, max_ms, 0.0, max_ms)?, source: None, rejected: Vec::new() };
    for (i, &(format, raw)) in headers.iter().enumerate() {
        let listed = raw.contains(&b',');
        for copy in raw.split(|&b| b == b',') {
            if listed && trim_ows(copy).0.is_empty() {
                continue;
            }
            match parse(format, copy) {
                Ok(ms) => {
                    let at = incoming_deadline(now_ms, ms, transit_ms, max_ms)?;
                    if at < out.at {
                        out.at = at;
                        out.source = Some(i);
                    }
                }
                Err(e) if out.rejected.len() < MAX_REJECTIONS => out.rejected.push((i, e)),
                Err(_) => {}
            }
        }
    }
    Ok(out)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::core::rng::SplitMix64;
    use proptest::prelude::*;
    use HeaderFormat::*;

    fn grpc(s: &str) -> Result<f64, HeaderError> {
        parse_str(GrpcTimeout, s)
    }

    #[test]
    fn grpc_encoding_picks_the_finest_unit_and_rounds_down() {
        let e = |r| encode(GrpcTimeout, r).unwrap();
        assert_eq!(e(0.0), "0n");
        assert_eq!(e(-0.0), "0n");
        assert_eq!(e(1.5), "1500000n");
        assert_eq!(e(99.999_999), "99999999n");
        assert_eq!(e(100.0), "100000u");
        assert_eq!(e(30_000.0), "30000000u");
        assert_eq!(e(29_999.99), "29999990u");
        assert_eq!(e(1_000_000.0), "1000000m");
        assert_eq!(e(99_999_999.9), "99999999m");
        assert_eq!(e(100_000_000.0), "100000S");
        assert_eq!(e(MAX_TIMER_MS), "2147483S");
        assert_eq!(e(crate::core::deadline::MAX_MS), "2147483S");
        assert_eq!(e(f64::from_bits(1)), "0n"); // the smallest subnormal
        assert!(encode(GrpcTimeout, f64::NAN).is_err());
        assert!(encode(GrpcTimeout, -1.0).is_err());
    }

    #[test]
    fn millisecond_encodings_round_down_and_clamp() {
        for f in [ConnectTimeoutMs, EnvoyExpectedRqTimeoutMs, EdgeDeadlineRemainingMs] {
            assert_eq!(encode(f, 1_234.9).unwrap(), "1234");
            assert_eq!(encode(f, 0.5).unwrap(), "0");
            assert_eq!(encode(f, 1e12).unwrap(), "2147483647");
        }
        assert!(matches!(encode(ConnectTimeoutMs, f64::INFINITY), Err(HeaderError::Time(_))));
    }

    #[test]
    fn grpc_parses_every_unit() {
        assert_eq!(grpc("1S"), Ok(1_000.0));
        assert_eq!(grpc("100m"), Ok(100.0));
        assert_eq!(grpc("5000000u"), Ok(5_000.0));
        assert_eq!(
            grpc("250000000n").unwrap_err(),
            HeaderError::TooManyDigits { header: "grpc-timeout", digits: 9, max: 8 }
        );
        assert_eq!(grpc("25000000n"), Ok(25.0));
        assert_eq!(grpc("2M"), Ok(120_000.0));
        assert_eq!(grpc("2H"), Ok(7_200_000.0));
        assert_eq!(grpc("0n"), Ok(0.0));
        assert_eq!(grpc("00000001S"), Ok(1_000.0)); // leading zeros, 8 digits
        assert_eq!(grpc(" 7S\t"), Ok(7_000.0)); // HTTP optional whitespace
                                                // Valid syntax, 11 415 years: parsed exactly, clamped later.
        assert_eq!(grpc("99999999H"), Ok(359_999_996_400_000.0));
        let at = incoming_deadline(1_000.0, grpc("99999999H").unwrap(), 0.0, 30_000.0).unwrap();
        assert_eq!(at, 31_000.0);
    }

    #[test]
    fn grpc_rejects_malformed_values() {
        let h = "grpc-timeout";
        assert_eq!(grpc(""), Err(HeaderError::Empty { header: h }));
        assert_eq!(grpc(" \t "), Err(HeaderError::Empty { header: h }));
        assert_eq!(grpc("1e3S"), Err(HeaderError::NotDigit { header: h, at: 1, found: 'e' }));
        assert_eq!(grpc("-5m"), Err(HeaderError::Signed { header: h }));
        assert_eq!(grpc("+5m"), Err(HeaderError::Signed { header: h }));
        assert_eq!(grpc("123456789S"), Err(HeaderError::TooManyDigits { header: h, digits: 9, max: 8 }));
        assert_eq!(grpc("5"), Err(HeaderError::MissingUnit { header: h }));
        assert_eq!(grpc("5x"), Err(HeaderError::BadUnit { header: h, found: 'x' }));
        assert_eq!(grpc("5s"), Err(HeaderError::BadUnit { header: h, found: 's' }));
        assert_eq!(grpc("S"), Err(HeaderError::NoDigits { header: h }));
        assert_eq!(grpc("5 S"), Err(HeaderError::Whitespace { header: h, at: 1 }));
        assert_eq!(grpc("5S\r\n"), Err(HeaderError::Whitespace { header: h, at: 2 }));
        assert_eq!(grpc("1.5S"), Err(HeaderError::NotDigit { header: h, at: 1, found: '.' }));
        assert_eq!(grpc("١٢S"), Err(HeaderError::NonAscii { header: h, at: 0 }));
        assert_eq!(grpc("１S"), Err(HeaderError::NonAscii { header: h, at: 0 }));
        assert_eq!(grpc("5µ"), Err(HeaderError::NonAscii { header: h, at: 1 }));
        assert_eq!(grpc("1ex"), Err(HeaderError::NotDigit { header: h, at: 1, found: 'e' }));
        assert_eq!(grpc("5-S"), Err(HeaderError::NotDigit { header: h, at: 1, found: '-' }));
        assert_eq!(grpc("1e3"), Err(HeaderError::NotDigit { header: h, at: 1, found: 'e' }));
        // Regression (found by the fuzzer): long digit runs on the error paths
        // used to be folded into a u64 and overflow.
        assert_eq!(grpc(&"9".repeat(MAX_HEADER_LEN)), Err(HeaderError::MissingUnit { header: h }));
        assert_eq!(grpc(&format!("{}x", "9".repeat(60))), Err(HeaderError::BadUnit { header: h, found: 'x' }));
        assert_eq!(
            grpc(&format!("{}S", "9".repeat(60))),
            Err(HeaderError::TooManyDigits { header: h, digits: 60, max: 8 })
        );
        let long = "1".repeat(MAX_HEADER_LEN + 1);
        assert_eq!(grpc(&long), Err(HeaderError::TooLong { header: h, len: 65 }));
        let e = parse(GrpcTimeout, b"5\x00S").unwrap_err().to_string();
        assert_eq!(e, "'grpc-timeout' must contain only ASCII digits: current value has '\\u{0}' at byte 1");
        let e = grpc("123456789S").unwrap_err().to_string();
        assert_eq!(e, "'grpc-timeout' must have between 1 and 8 digits: current value has 9");
    }

    #[test]
    fn millisecond_headers_parse_strictly() {
        assert_eq!(parse_str(ConnectTimeoutMs, "1500"), Ok(1_500.0));
        assert_eq!(parse_str(ConnectTimeoutMs, "9999999999"), Ok(9_999_999_999.0));
        assert!(matches!(parse_str(ConnectTimeoutMs, "99999999999"), Err(HeaderError::TooManyDigits { max: 10, .. })));
        assert_eq!(parse_str(EnvoyExpectedRqTimeoutMs, "999999999999999"), Ok(999_999_999_999_999.0));
        assert!(matches!(
            parse_str(EnvoyExpectedRqTimeoutMs, "9999999999999999"),
            Err(HeaderError::TooManyDigits { .. })
        ));
        assert_eq!(parse_str(EdgeDeadlineRemainingMs, "250"), Ok(250.0));
        assert!(matches!(parse_str(EdgeDeadlineRemainingMs, "250ms"), Err(HeaderError::NotDigit { at: 3, .. })));
        assert!(matches!(parse_str(ConnectTimeoutMs, "-5"), Err(HeaderError::Signed { .. })));
        assert!(matches!(parse_str(ConnectTimeoutMs, "1e3"), Err(HeaderError::NotDigit { .. })));
        assert!(matches!(parse_str(ConnectTimeoutMs, "1 000"), Err(HeaderError::Whitespace { at: 1, .. })));
        assert!(matches!(parse_str(ConnectTimeoutMs, ""), Err(HeaderError::Empty { .. })));
        assert_eq!(HeaderFormat::from_name("Grpc-Timeout"), Ok(GrpcTimeout));
        assert_eq!(HeaderFormat::from_name(EDGE_DEADLINE_HEADER), Ok(EdgeDeadlineRemainingMs));
        assert!(matches!(HeaderFormat::from_name("x-deadline"), Err(HeaderError::UnknownFormat { .. })));
    }

    #[test]
    fn errors_carry_codes_and_name_the_value() {
        use crate::core::error::Described;
        let e = grpc("1e3S").unwrap_err();
        assert_eq!((e.param().as_deref(), e.code()), (Some("value"), "HEADER_NOT_DIGIT"));
        let e = HeaderFormat::from_name("x-deadline").unwrap_err();
        assert_eq!((e.param().as_deref(), e.code()), (Some("format"), "UNKNOWN_FORMAT"));
        let e = HeaderFormat::from_name_as("x-deadline", "options.formats").unwrap_err();
        assert_eq!((e.param().as_deref(), e.code()), (Some("options.formats"), "UNKNOWN_FORMAT"));
        assert!(e.to_string().starts_with("'format' must be one of grpc-timeout"), "{e}");
        // The template lists every format by name (it is text, not built from `ALL`).
        let text = e.to_string();
        let listed = text.split_once(": current").unwrap().0;
        for f in HeaderFormat::ALL {
            assert!(listed.contains(f.name()), "{} missing from {text}", f.name());
        }
        assert_eq!(listed.matches(", ").count() + 1, HeaderFormat::ALL.len(), "{text}");
        let e = encode(GrpcTimeout, -1.0).unwrap_err();
        assert_eq!((e.param().as_deref(), e.code()), (Some("remainingMs"), "NEGATIVE"));
        let values = vec![
            HeaderValue { header: GrpcTimeout, value: "100m".into() },
            HeaderValue { header: ConnectTimeoutMs, value: "-5".into() },
        ];
        let inc =
            earliest_incoming_values(0.0, &values, &IncomingOptions { max_ms: 5_000.0, transit_ms: None }).unwrap();
        assert_eq!((inc.at, inc.source), (100.0, Some(0)));
        assert_eq!(inc.rejected[0].1.code(), "HEADER_SIGNED");
        let e = earliest_incoming_values(0.0, &values, &IncomingOptions { max_ms: f64::NAN, transit_ms: None })
            .unwrap_err();
        assert_eq!(e.param().as_deref(), Some("maxMs"));
    }

    #[test]
    fn what_real_peers_send_parses() {
        // grpc-js (ceil, then m/S/M/H) and grpc-go (n/u/m/S/M/H) shapes.
        assert_eq!(grpc("29999m"), Ok(29_999.0));
        assert_eq!(grpc("4999870u"), Ok(4_999.87));
        assert_eq!(grpc("999999n"), Ok(0.999_999));
        // connect-es sends `${timeoutMs}`.
        assert_eq!(parse_str(ConnectTimeoutMs, "30000"), Ok(30_000.0));
    }

    #[test]
    fn incoming_shortens_never_extends() {
        // Caller says 5 s, 40 ms in transit, local cap 30 s.
        assert_eq!(incoming_deadline(100.0, 5_000.0, 40.0, 30_000.0), Ok(5_060.0));
        // Caller asks for more than the cap: the cap wins.
        assert_eq!(incoming_deadline(100.0, 60_000.0, 40.0, 30_000.0), Ok(30_100.0));
        // Transit larger than what was sent: already expired.
        assert_eq!(incoming_deadline(100.0, 30.0, 40.0, 30_000.0), Ok(100.0));
        assert!(matches!(incoming_deadline(0.0, f64::NAN, 0.0, 1.0), Err(HeaderError::Time(_))));
        assert!(matches!(incoming_deadline(0.0, 1.0, -1.0, 1.0), Err(HeaderError::Time(_))));
    }

    #[test]
    fn earliest_incoming_takes_the_minimum_and_reports_garbage() {
        let headers: [(HeaderFormat, &[u8]); 3] =
            [(GrpcTimeout, b"2S"), (ConnectTimeoutMs, b"1500"), (EdgeDeadlineRemainingMs, b"-1")];
        let inc = earliest_incoming(0.0, &headers, 10.0, 30_000.0).unwrap();
        assert_eq!(inc.at, 1_490.0);
        assert_eq!(inc.source, Some(1));
        assert_eq!(inc.rejected, vec![(2, HeaderError::Signed { header: EDGE_DEADLINE_HEADER })]);
        // One format twice (two spellings, a repeated field): the earliest wins, in either order.
        for pair in [[(GrpcTimeout, &b"50m"[..]), (GrpcTimeout, b"2S")], [(GrpcTimeout, b"2S"), (GrpcTimeout, b"50m")]]
        {
            let inc = earliest_incoming(0.0, &pair, 0.0, 30_000.0).unwrap();
            assert_eq!(inc.at, 50.0);
            assert_eq!(pair[inc.source.unwrap()].1, b"50m");
        }
        let none = earliest_incoming(50.0, &[], 10.0, 30_000.0).unwrap();
        assert_eq!((none.at, none.source), (30_050.0, None));
        let bad = earliest_incoming(50.0, &[(GrpcTimeout, b"1S")], f64::NAN, 30_000.0);
        assert!(bad.is_err());
        // Each bad argument is reported under its own name.
        let name = |r: Result<Incoming, HeaderError>| match r {
            Err(HeaderError::Time(e)) => e.param(),
            _ => None,
        };
        assert_eq!(name(earliest_incoming(0.0, &[], 0.0, f64::NAN)), Some("maxMs"));
        assert_eq!(name(earliest_incoming(0.0, &[], -1.0, 1.0)), Some("transitMs"));
        assert_eq!(name(earliest_incoming(f64::NAN, &[], 0.0, 1.0)), Some("now"));
    }

    #[test]
    fn every_copy_of_a_repeated_header_counts_and_a_bad_copy_is_refused_alone() {
        // `Headers.get` joins a repeated field with ", ": each element is a copy of its own.
        let inc = earliest_incoming(0.0, &[(GrpcTimeout, b"50m, 2S")], 0.0, 10_000.0).unwrap();
        assert_eq!((inc.at, inc.source), (50.0, Some(0)));
        let inc = earliest_incoming(0.0, &[(GrpcTimeout, b"2S,50m")], 0.0, 10_000.0).unwrap();
        assert_eq!((inc.at, inc.source), (50.0, Some(0)));
        // A copy far longer than any valid one is refused alone; the valid copy still counts.
        let long = format!("{},50m", "9".repeat(300));
        let inc = earliest_incoming(0.0, &[(GrpcTimeout, long.as_bytes())], 0.0, 10_000.0).unwrap();
        assert_eq!((inc.at, inc.source), (50.0, Some(0)));
        assert_eq!(inc.rejected, vec![(0, HeaderError::TooLong { header: "grpc-timeout", len: 300 })]);
        // Empty elements of a list are no copies (RFC 9110 5.6.1); an empty value alone is refused.
        let commas = format!("{}40", ",".repeat(100_000));
        let inc = earliest_incoming(0.0, &[(ConnectTimeoutMs, commas.as_bytes())], 0.0, 10_000.0).unwrap();
        assert_eq!((inc.at, inc.rejected.len()), (40.0, 0));
        let inc = earliest_incoming(0.0, &[(ConnectTimeoutMs, b"")], 0.0, 10_000.0).unwrap();
        assert_eq!(inc.rejected, vec![(0, HeaderError::Empty { header: "connect-timeout-ms" })]);
        // However many bad copies, at most MAX_REJECTIONS are reported, and the valid one wins.
        let junk = format!("{}30", "x,".repeat(10_000));
        let inc = earliest_incoming(0.0, &[(ConnectTimeoutMs, junk.as_bytes())], 0.0, 10_000.0).unwrap();
        assert_eq!((inc.at, inc.rejected.len()), (30.0, MAX_REJECTIONS));
    }

    /// A generator biased towards almost-valid header values.
    fn fuzz_input(rng: &mut SplitMix64, buf: &mut Vec<u8>) {
        const PIECES: [&[u8]; 24] = [
            b"0",
            b"1",
            b"5",
            b"9",
            b"99999999",
            b"H",
            b"M",
            b"S",
            b"m",
            b"u",
            b"n",
            b"+",
            b"-",
            b".",
            b"e",
            b" ",
            b"\t",
            b"\r\n",
            b"\0",
            "١".as_bytes(),
            "１".as_bytes(),
            "µ".as_bytes(),
            b"s",
            b"x",
        ];
        buf.clear();
        let len = (rng.next_u64() % 12) as usize;
        for _ in 0..len {
            let r = rng.next_u64();
            match r % 8 {
                0..=3 => buf.push(b'0' + (r >> 8) as u8 % 10),
                4..=6 => buf.extend_from_slice(PIECES[(r >> 8) as usize % PIECES.len()]),
                _ => buf.push((r >> 8) as u8),
            }
        }
        if rng.next_u64() % 64 == 0 {
            // Oversized inputs.
            buf.resize(MAX_HEADER_LEN + (rng.next_u64() % 64) as usize, b'7');
        }
    }

    /// Invariant 4: 1 048 576 generated inputs × 4 formats, no panic, every
    /// accepted value finite, non-negative, and clamped by incoming_deadline.
    #[test]
    fn fuzz_one_million_inputs() {
        let mut rng = SplitMix64::new(0x5EED_0004);
        let mut buf = Vec::with_capacity(2 * MAX_HEADER_LEN);
        let mut accepted = 0u64;
        let mut rejected = 0u64;
        for _ in 0..(1u32 << 20) {
            fuzz_input(&mut rng, &mut buf);
            for f in HeaderFormat::ALL {
                match parse(f, &buf) {
                    Ok(ms) => {
                        accepted += 1;
                        assert!(ms.is_finite() && ms >= 0.0, "{f:?} {buf:?} -> {ms}");
                        let at = incoming_deadline(1_000.0, ms, 5.0, 30_000.0).unwrap();
                        assert!((1_000.0..=31_000.0).contains(&at));
                    }
                    Err(e) => {
                        rejected += 1;
                        assert!(!e.to_string().is_empty());
                    }
                }
            }
        }
        // The generator reaches both sides of the parser.
        assert!(accepted > 100_000 && rejected > 1_000_000, "accepted {accepted}, rejected {rejected}");
    }

    fn remaining_ms() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(0.0),
            Just(MAX_TIMER_MS),
            0.0..1.0f64,
            0.0..200.0f64,
            0.0..1e6f64,
            0.0..1e10f64,
            0.0..crate::core::deadline::MAX_MS,
            (0u64..u64::from(u32::MAX)).prop_map(|n| n as f64),
            any::<u64>().prop_map(|b| f64::from_bits(b >> 12)), // subnormals and tiny values
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(8192))]

        /// Invariants 1 and 2.
        #[test]
        fn round_trip_never_extends(r in remaining_ms()) {
            for f in HeaderFormat::ALL {
                let s = encode(f, r).unwrap();
                let digits = s.bytes().take_while(u8::is_ascii_digit).count();
                prop_assert!(digits >= 1 && digits <= f.max_digits(), "{}", s);
                let p = parse_str(f, &s).unwrap();
                prop_assert!(p <= r, "{:?}: {} -> {} -> {}", f, r, s, p);
                prop_assert!(p <= MAX_TIMER_MS);
                let sent = r.min(MAX_TIMER_MS);
                let loss = sent - p;
                match f {
                    GrpcTimeout => prop_assert!(loss <= (sent * 1e-5).max(1e-6), "{}: lost {}", s, loss),
                    _ => prop_assert!(loss < 1.0),
                }
            }
        }

        /// Invariant 3.
        #[test]
        fn incoming_never_later_than_the_cap(
            now in 0.0..1e12f64,
            parsed in prop_oneof![0.0..1e6f64, 0.0..4e14f64],
            transit in 0.0..1e4f64,
            max in 0.0..1e8f64,
        ) {
            let at = incoming_deadline(now, parsed, transit, max).unwrap();
            prop_assert!(at >= now && at <= now + max);
            prop_assert!(at <= now + (parsed - transit).max(0.0) + 1e-3);
        }

        /// Invariant 4 on arbitrary bytes and strings.
        #[test]
        fn arbitrary_input_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..80),
            text in ".{0,20}",
        ) {
            for f in HeaderFormat::ALL {
                for input in [&bytes[..], text.as_bytes()] {
                    if let Ok(ms) = parse(f, input) {
                        prop_assert!(ms.is_finite() && ms >= 0.0);
                    }
                }
            }
        }
    }
}
