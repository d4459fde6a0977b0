//! What every core error tells its caller besides its message.
//!
//! # Why
//! A caller that can only match an error's message breaks when the wording
//! improves. Every core error type therefore implements [`Described`]: a
//! stable [`code`](Described::code) to branch on, the
//! [`param`](Described::param) at fault spelled as the caller wrote it
//! (`"steps[0].minMs"`, the JS API's names, which are also the serde names of
//! the core's data types), and a [`Kind`] that says whether the input could
//! never be valid (`Type`, `Range`) or time ran out (`Deadline`,
//! `Insufficient`, which are not bad input and never become a
//! `TypeError`/`RangeError`).
//!
//! The message is the type's `Display`, written once, in the core: the npm
//! package and the Rust API show the same text.

use std::fmt;

/// What kind of failure an error is; decides the JavaScript class it becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A value of the wrong type or shape (a `TypeError` in JavaScript).
    Type,
    /// A value of the right type outside its valid range (a `RangeError`).
    Range,
    /// The deadline passed: the branded `DeadlineExceeded`.
    Deadline,
    /// Less than a step's declared minimum is left: the branded `InsufficientBudget`.
    Insufficient,
}

/// A core error's code, parameter and kind (see the module docs).
pub trait Described: fmt::Display {
    /// A stable `UPPER_SNAKE` code, the same for every wording of the message.
    fn code(&self) -> &'static str;
    /// The parameter at fault as the caller wrote it, when one is.
    fn param(&self) -> Option<String>;
    /// Bad input unless the type says otherwise.
    fn kind(&self) -> Kind {
        Kind::Range
    }
    /// Numbers the caller may want besides the message (`lateByMs`,
    /// `remainingMs`…), by their JS names; set as the error's own fields.
    fn fields(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}

/// The code of a count that must be a whole number `lo ..= hi` and is not:
/// `NOT_FINITE`, `OUT_OF_RANGE`, or `NOT_WHOLE` (in range, with a fraction).
pub fn whole_code(value: f64, lo: f64, hi: f64) -> &'static str {
    if !value.is_finite() {
        "NOT_FINITE"
    } else if !(lo..=hi).contains(&value) {
        "OUT_OF_RANGE"
    } else {
        "NOT_WHOLE"
    }
}

/// A value handed over from JavaScript that does not have the shape of the
/// data type it should be (`param`, e.g. `"data"`), as its deserializer
/// words it. The JS API checks types before the call, so this is the net
/// under those checks, not the usual error.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapeError {
    pub param: &'static str,
    pub detail: String,
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}' does not have the expected shape: {}", self.param, self.detail)
    }
}

impl std::error::Error for ShapeError {}

impl Described for ShapeError {
    fn code(&self) -> &'static str {
        "INVALID_TYPE"
    }

    fn param(&self) -> Option<String> {
        Some(self.param.into())
    }

    fn kind(&self) -> Kind {
        Kind::Type
    }
}

/// A core error found inside one of the caller's arguments: the same error,
/// its [`param`](Described::param) prefixed with the argument's name. The
/// core names a field by its place in the data type it validates
/// (`"backoff.jitter"` in retry options); the binding knows which argument
/// that type arrived as (`options`), so `retry(fn, options)` reports
/// `"options.backoff.jitter"`, as the user wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct Within<E> {
    /// The argument's name (`"options"`, `"steps[2]"`).
    pub arg: String,
    pub error: E,
}

impl<E> Within<E> {
    pub fn new(arg: impl Into<String>, error: E) -> Self {
        Self { arg: arg.into(), error }
    }
}

impl<E: fmt::Display> fmt::Display for Within<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl<E: Described> Described for Within<E> {
    fn code(&self) -> &'static str {
        self.error.code()
    }
    fn param(&self) -> Option<String> {
        Some(match self.error.param() {
            Some(inner) => format!("{}.{inner}", self.arg),
            None => self.arg.clone(),
        })
    }
    fn kind(&self) -> Kind {
        self.error.kind()
    }
    fn fields(&self) -> Vec<(&'static str, f64)> {
        self.error.fields()
    }
}
