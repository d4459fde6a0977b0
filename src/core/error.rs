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
//! # Messages are templates
//! Every message is written once, in the core, as a *template*: a sentence
//! with named holes (`'{param}' must be … current value is {value}`),
//! declared with [`templates!`](crate::templates!) next to the error type that uses it. An error
//! describes itself as a [`Message`]: its [`Template`] and the values for its
//! holes. A message carries its own template, so printing one needs no table
//! of every module's sentences: this module depends on no concept module.
//!
//! Its `Display` is the only renderer: the Rust API shows it, and the npm
//! package's `.wasm` sends the rendered text to JavaScript, which never fills
//! a template. Numbers print exactly as JavaScript prints them in both hosts
//! ([`super::number`]: `Infinity`, `1e+300`).
//!
//! A hole is `{name}` (the value as given: a number as `String(v)`, a string as
//! is, a nested message rendered), `{name:ms}` (milliseconds measured by a
//! clock: whole, or to 0.1 ms, see [`Ms`]) or `{name:.N}` (a number to `N`
//! decimals, `N` one digit, as `v.toFixed(N)`); `{{` and `}}` are literal
//! braces.
//!
//! Text inside data (a derived timeout's warnings, a retry's stop) is a
//! [`Message`] too, and serializes as its text.

use std::fmt;

use super::number;

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

/// Declares a module's message templates: for each, a `pub const`
/// [`Template`] (its id `"<prefix>.<NAME>"` and its text), and the module's
/// `TEMPLATES`, every one of them (the catalog's checks read these).
///
/// ```ignore
/// pub mod msg {
///     crate::templates! { "deadline";
///         /// A duration or instant that is NaN or infinite.
///         NOT_FINITE = "'{param}' must be a finite number: current value is {value}";
///     }
/// }
/// ```
#[macro_export]
macro_rules! templates {
    ($prefix:literal; $( $(#[$doc:meta])* $name:ident = $text:literal; )*) => {
        $( $(#[$doc])* pub const $name: $crate::core::error::Template = $crate::core::error::Template {
            id: $crate::core::error::template_id(concat!($prefix, ".", stringify!($name))),
            text: $text,
        }; )*
        /// Every template of this module.
        pub const TEMPLATES: &[$crate::core::error::Template] = &[ $( $name, )* ];
    };
}

/// A template's id as [`templates!`](crate::templates!) declares it: empty in
/// the npm package's `.wasm` (no `web` feature on wasm32), where nothing reads
/// ids (the catalog's checks run on the host) and their text would only make
/// the module larger; the id itself everywhere else.
#[doc(hidden)]
pub const fn template_id(id: &'static str) -> &'static str {
    if cfg!(all(target_arch = "wasm32", not(feature = "web"))) {
        ""
    } else {
        id
    }
}

/// A message's sentence with named holes, and its stable id (the catalog's
/// checks key on it; the wording may change). Declared with [`templates!`](crate::templates!), next to the
/// error type that uses it: a message carries its own template, so nothing
/// here has to know every module's sentences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Template {
    /// `"<module>.<NAME>"`: a stable name for the sentence (its wording may
    /// change); empty in the npm package's `.wasm` ([`template_id`]).
    pub id: &'static str,
    /// The sentence, with `{name}`, `{name:ms}` and `{name:.N}` holes.
    pub text: &'static str,
}

/// The block every core error type shares: `Display` is its
/// [`Described::message`], and it is a `std::error::Error`.
/// `described_error!(display T)` writes only the `Display`, for a type whose
/// `Error` impl names a `source`.
#[macro_export]
macro_rules! described_error {
    (display $ty:ty) => {
        impl ::core::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                ::core::fmt::Display::fmt(&$crate::core::error::Described::message(self), f)
            }
        }
    };
    ($ty:ty) => {
        $crate::described_error!(display $ty);
        impl ::std::error::Error for $ty {}
    };
}

/// A message: a template and the values for its holes, by name.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The template's id ([`Template::id`]).
    pub id: &'static str,
    /// The template's sentence ([`Template::text`]), which `Display` fills.
    pub text: &'static str,
    /// The values for the template's holes, by name.
    pub args: Vec<(&'static str, Arg)>,
}

/// A value for a hole of a [`Message`].
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// A number, formatted by the hole's spec (`{lateByMs:ms}`, `{ratio:.1}`).
    Num(f64),
    /// A text, inserted as is.
    Str(String),
    /// Another error's whole message ("step 'x': {error}").
    Msg(Box<Message>),
}

impl From<f64> for Arg {
    fn from(v: f64) -> Self {
        Arg::Num(v)
    }
}

impl From<usize> for Arg {
    fn from(v: usize) -> Self {
        Arg::Num(v as f64)
    }
}

impl From<u32> for Arg {
    fn from(v: u32) -> Self {
        Arg::Num(v.into())
    }
}

impl From<&str> for Arg {
    fn from(v: &str) -> Self {
        Arg::Str(v.into())
    }
}

impl From<String> for Arg {
    fn from(v: String) -> Self {
        Arg::Str(v)
    }
}

impl From<Message> for Arg {
    fn from(v: Message) -> Self {
        Arg::Msg(Box::new(v))
    }
}

impl Message {
    /// `template` with no values yet.
    pub fn new(template: Template) -> Self {
        Self { id: template.id, text: template.text, args: Vec::new() }
    }

    /// The value of hole `name`.
    #[must_use]
    pub fn arg(self, name: &'static str, value: impl Into<Arg>) -> Self {
        self.push(name, value.into())
    }

    /// The message with its argument `name` set to `value` (replaced when it
    /// had one): an inner error's `param` renamed by the batch that holds it.
    pub fn with_arg(mut self, name: &'static str, value: impl Into<Arg>) -> Self {
        let value = value.into();
        match self.args.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.args.push((name, value)),
        }
        self
    }

    // One copy of the push for every `arg` call: inlined, the messages of
    // the derive module's errors took several times the code of their old
    // `Display` (measured with twiggy), and the main `.wasm` was larger.
    #[inline(never)]
    fn push(mut self, name: &'static str, value: Arg) -> Self {
        self.args.push((name, value));
        self
    }

    /// A message written before templates existed: the text as it is.
    pub fn text(text: String) -> Self {
        Self::new(msg::TEXT).arg("text", text)
    }
}

impl fmt::Display for Message {
    // No indexing or slicing that could panic: a panic path would keep
    // Rust's string-boundary message (and its `char` formatting tables) in
    // the `.wasm`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.text;
        while let Some(at) = rest.find(['{', '}']) {
            let (literal, from) = rest.split_at_checked(at).unwrap_or((rest, ""));
            f.write_str(literal)?;
            let brace = if from.starts_with('{') { "{" } else { "}" };
            let after = from.get(1..).unwrap_or("");
            // `{{` and `}}` are literal braces; a lone `}` (which the table
            // test rejects) prints as it is.
            if after.starts_with(brace) || brace == "}" {
                f.write_str(brace)?;
                rest = if after.starts_with(brace) { after.get(1..).unwrap_or("") } else { after };
                continue;
            }
            let (hole, next) = after.split_once('}').unwrap_or((after, ""));
            let (name, spec) = hole.split_once(':').unwrap_or((hole, ""));
            match self.args.iter().find(|(n, _)| *n == name).map(|(_, a)| a) {
                Some(Arg::Num(v)) if spec == "ms" => Ms(*v).fmt(f)?,
                Some(Arg::Num(v)) if decimals(spec).is_some() => number::to_fixed(f, *v, decimals(spec).unwrap_or(0))?,
                Some(Arg::Num(v)) => number::to_string(f, *v)?,
                Some(Arg::Str(s)) => f.write_str(s)?,
                Some(Arg::Msg(m)) => m.fmt(f)?,
                None => write!(f, "{{{hole}}}")?,
            }
            rest = next;
        }
        f.write_str(rest)
    }
}

/// Milliseconds measured by a clock, for messages: whole, or to 0.1 ms
/// ("43.1 ms", not "43.08580599999999 ms"). Error *fields* keep the exact
/// value; a rejected input is always printed exactly ("current value is …").
#[derive(Debug, Clone, Copy)]
pub struct Ms(pub f64);

impl fmt::Display for Ms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.fract() == 0.0 {
            number::to_string(f, self.0)
        } else {
            number::to_fixed(f, self.0, 1)
        }
    }
}

/// `N` of a `.N` hole format.
pub(crate) fn decimals(spec: &str) -> Option<u32> {
    match spec.as_bytes() {
        [b'.', d @ b'0'..=b'9'] => Some(u32::from(d - b'0')),
        _ => None,
    }
}

/// A message as data is its text.
impl serde::Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A core error's code, parameter and kind (see the module docs).
///
/// Not a `Display` subtrait, though every error implements both: the Wasm
/// boundary converts errors through `dyn Described`, and a `Display`
/// supertrait would put every error's text formatting (floats included) in
/// that vtable, so into the `.wasm` (measured: far larger, gzip).
pub trait Described {
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
    /// The message, as a template and its values (see the module docs);
    /// its `Display` is the text every host shows.
    fn message(&self) -> Message;
}

/// A borrowed error is described as itself: `Within<&dyn Described>` is how
/// the Wasm boundary wraps every error type with one copy of [`Within`]'s
/// methods, instead of one per wrapped type with that type's methods
/// inlined into it.
impl<E: Described + ?Sized> Described for &E {
    fn code(&self) -> &'static str {
        (**self).code()
    }
    fn param(&self) -> Option<String> {
        (**self).param()
    }
    fn kind(&self) -> Kind {
        (**self).kind()
    }
    fn fields(&self) -> Vec<(&'static str, f64)> {
        (**self).fields()
    }
    fn message(&self) -> Message {
        (**self).message()
    }
}

/// This module's templates.
pub mod msg {
    crate::templates! { "error";
        /// A message carried as it is (see [`Message::text`](super::Message::text)).
        TEXT = "{text}";
        /// A value of the wrong shape ([`ShapeError`](super::ShapeError)).
        SHAPE = "'{param}' does not have the expected shape: {detail}";
    }
}

/// How many errors of a `.cause` chain the hosts look at (the error itself
/// and its causes) when they ask whether time ran out (`isTimeout`) or a
/// circuit refused (`isCircuitOpen`): a chain is untrusted input, and one a
/// million causes long must not cost a million reads. js/errors.js holds the
/// same number, pinned by the conformance rows "isTimeout: a timeout 31/32
/// causes deep".
pub const MAX_CAUSES: usize = 32;

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
    /// The argument's name (`"data"`, `"options"`).
    pub param: &'static str,
    /// What the deserializer said of the value.
    pub detail: String,
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.message().fmt(f)
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

    fn message(&self) -> Message {
        Message::new(msg::SHAPE).arg("param", self.param).arg("detail", self.detail.as_str())
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
    /// The error inside the argument.
    pub error: E,
}

impl<E> Within<E> {
    /// `error`, found inside the argument `arg`.
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
    fn message(&self) -> Message {
        self.error.message()
    }
}

/// Asserts that every hole of `message`'s template, and
/// of each nested message, has a value: a test helper for the modules that
/// build messages.
#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) fn assert_filled(message: &Message) {
    let mut rest = message.text;
    while let Some(at) = rest.find('{') {
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("{{") {
            rest = after;
            continue;
        }
        let end = tail.find('}').unwrap_or(tail.len());
        let name = tail[1..end].split(':').next().unwrap_or("");
        let arg = message.args.iter().find(|(n, _)| *n == name);
        assert!(arg.is_some(), "{}: no value for {{{name}}} in {message:?}", message.id);
        if let Some((_, Arg::Msg(inner))) = arg {
            assert_filled(inner);
        }
        rest = tail.get(end + 1..).unwrap_or("");
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    /// The Wasm boundary wraps errors as `Within<&dyn Described>` (one copy
    /// of the wrapper for every error type): it must describe an error
    /// exactly as `Within<E>` does.
    #[test]
    fn within_a_borrowed_error_describes_it_as_within_the_error() {
        /// An error with a parameter (bad input) or without one (time ran out).
        #[derive(Clone)]
        struct Probe(Option<&'static str>);
        impl Described for Probe {
            fn code(&self) -> &'static str {
                "PROBE"
            }
            fn param(&self) -> Option<String> {
                self.0.map(String::from)
            }
            fn kind(&self) -> Kind {
                if self.0.is_some() {
                    Kind::Range
                } else {
                    Kind::Deadline
                }
            }
            fn fields(&self) -> Vec<(&'static str, f64)> {
                vec![("lateByMs", 2.5)]
            }
            fn message(&self) -> Message {
                Message::new(msg::SHAPE).arg("param", self.0.unwrap_or("-")).arg("detail", "probe")
            }
        }
        fn same<E: Described + Clone>(error: E) {
            let owned = Within::new("options", error.clone());
            let borrowed = Within::new("options", &error as &dyn Described);
            assert_eq!(borrowed.code(), owned.code());
            assert_eq!(borrowed.param(), owned.param());
            assert_eq!(borrowed.kind(), owned.kind());
            assert_eq!(borrowed.fields(), owned.fields());
            assert_eq!(borrowed.message(), owned.message());
        }
        same(Probe(Some("ratio")));
        same(Probe(None));
        same(ShapeError { param: "x", detail: "y".into() });
        let borrowed = Within::new("options", &Probe(Some("ratio")) as &dyn Described);
        assert_eq!(borrowed.param().as_deref(), Some("options.ratio"));
        assert_eq!(Within::new("options", &Probe(None) as &dyn Described).param().as_deref(), Some("options"));
    }

    #[test]
    fn display_fills_each_kind_of_hole() {
        let inner = Message::new(msg::SHAPE).arg("param", "x").arg("detail", "a number");
        let text = |m: &Message| m.to_string();
        assert_eq!(text(&Message::text("plain".into())), "plain");
        assert_eq!(text(&inner), "'x' does not have the expected shape: a number");
        mod probe {
            crate::templates! { "probe";
                /// Both number holes.
                NUMBERS = "{left:ms} ms left of {total:ms}, ratio {ratio:.2}, exactly {value}";
            }
        }
        let m = Message::new(probe::NUMBERS).arg("left", 2.25).arg("total", 5.0).arg("ratio", 0.125).arg("value", 0.1);
        assert_eq!(text(&m), "2.3 ms left of 5, ratio 0.13, exactly 0.1");
        assert_eq!(probe::TEMPLATES, [probe::NUMBERS]);
        // A nested message renders in place; a missing value shows its hole.
        assert_eq!(text(&Message::new(msg::TEXT).arg("text", inner)), "'x' does not have the expected shape: a number");
        assert_eq!(text(&Message::new(msg::SHAPE).arg("param", "y")), "'y' does not have the expected shape: {detail}");
    }

    #[test]
    #[should_panic(expected = "no value for {detail}")]
    fn assert_filled_finds_a_hole_without_a_value_in_a_nested_message() {
        let inner = Message::new(msg::SHAPE).arg("param", "x");
        assert_filled(&Message::new(msg::TEXT).arg("text", inner));
    }

    #[test]
    fn decimals_reads_a_dot_and_one_digit() {
        assert_eq!(decimals(".2"), Some(2));
        assert_eq!(decimals("ms"), None);
    }
}
