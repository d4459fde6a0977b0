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
//! describes itself as a [`Message`]: the template's id and the values for its
//! holes. Its `Display` (what the Rust API shows) renders that in Rust; the
//! npm package's `.wasm` sends only the id and the values across, and
//! `js/errors.js` renders them from `js/messages.js` (the main entry's
//! templates) and `js/derive-messages.js` (the derive entry's), both generated
//! from these declarations by a host test (`UPDATE_MESSAGES=1 cargo test --lib
//! message_tables`). That keeps the sentences and all float formatting out of
//! the `.wasm`: measured, formatting an `f64` alone retained 18 KB of the main
//! module (BENCHMARKS.md, "Size and start-up").
//!
//! A hole is `{name}` (the value as given: a number exactly, a string as is, a
//! nested message rendered), `{name:ms}` (milliseconds measured by a clock:
//! whole, or to 0.1 ms, see [`Ms`](crate::core::deadline::Ms)) or
//! `{name:.N}` (a number to `N` decimals, `N` one digit, as JavaScript's
//! `toFixed(N)`: exact ties away from zero); `{{` and `}}` are literal
//! braces. Numbers print as each language prints them, which differ only at
//! the extremes (Rust's `inf` is JavaScript's `Infinity`).
//!
//! Text inside data (a derived timeout's warnings) is a [`Message`] too: it
//! serializes as `{ id, args }`, and the JS API renders it before the caller
//! sees it.

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

/// Declares a module's message templates: for each, a `pub const` holding
/// its id (`"<prefix>.<NAME>"`, what crosses to JavaScript), and the module's
/// `TEMPLATES` table of `(id, text)`, which [`MAIN`] or [`DERIVE`] lists.
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
        $( $(#[$doc])* pub const $name: &str = concat!($prefix, ".", stringify!($name)); )*
        /// Every template of this module: `(id, text)`.
        pub const TEMPLATES: &[(&str, &str)] = &[ $( ($name, $text), )* ];
    };
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

/// The templates of the main entry's errors (`js/messages.js`).
pub const MAIN: &[&[(&str, &str)]] = &[
    msg::TEMPLATES,
    crate::core::deadline::msg::TEMPLATES,
    crate::core::plan::msg::TEMPLATES,
    crate::core::retry::msg::TEMPLATES,
    crate::core::retry_budget::msg::TEMPLATES,
    crate::core::headers::msg::TEMPLATES,
    crate::core::caps::msg::TEMPLATES,
    crate::core::stall::msg::TEMPLATES,
];

/// The templates only the derive entry's errors use (`js/derive-messages.js`).
pub const DERIVE: &[&[(&str, &str)]] = &[
    crate::core::sketch::msg::TEMPLATES,
    crate::core::sketch::bytes_msg::TEMPLATES,
    crate::core::derive::msg::TEMPLATES,
    crate::core::derive::warning_msg::TEMPLATES,
    crate::core::prom::msg::TEMPLATES,
    crate::core::simulate::msg::TEMPLATES,
    crate::core::little::msg::TEMPLATES,
];

/// The text of template `id`.
pub fn template(id: &str) -> Option<&'static str> {
    // The main entry's .wasm never makes a derive error, so its search leaves
    // DERIVE out: linked in through this function, those sentences added
    // 7.3 KB gzip to it (measured) while any error there still renders in Rust.
    let derive = if cfg!(any(feature = "derive", feature = "web", not(target_arch = "wasm32"))) { DERIVE } else { &[] };
    MAIN.iter().chain(derive).flat_map(|t| t.iter()).find(|(i, _)| *i == id).map(|(_, text)| *text)
}

/// A message: a template's id and the values for its holes, by name.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// A template id declared with [`templates!`](crate::templates!).
    pub id: &'static str,
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
    /// Template `id` with no values yet.
    pub fn new(id: &'static str) -> Self {
        Self { id, args: Vec::new() }
    }

    /// The value of hole `name`.
    #[must_use]
    pub fn arg(self, name: &'static str, value: impl Into<Arg>) -> Self {
        self.push(name, value.into())
    }

    // One copy of the push for every `arg` call: inlined, the messages of
    // the derive module's errors took 4 times the code of their old
    // `Display` (measured with twiggy), and the main `.wasm` was 1.4 KB
    // gzip larger.
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
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = template(self.id).unwrap_or(self.id);
        while let Some(at) = rest.find(['{', '}']) {
            f.write_str(&rest[..at])?;
            let (brace, after) = rest[at..].split_at(1);
            // `{{` and `}}` are literal braces; a lone `}` (which the table
            // test rejects) prints as it is.
            if after.starts_with(brace) || brace == "}" {
                f.write_str(brace)?;
                rest = if after.starts_with(brace) { &after[1..] } else { after };
                continue;
            }
            let end = after.find('}').unwrap_or(after.len());
            let hole = &after[..end];
            let (name, spec) = hole.split_once(':').unwrap_or((hole, ""));
            match self.args.iter().find(|(n, _)| *n == name).map(|(_, a)| a) {
                Some(Arg::Num(v)) if spec == "ms" => crate::core::deadline::Ms(*v).fmt(f)?,
                Some(Arg::Num(v)) if decimals(spec).is_some() => fixed(f, *v, decimals(spec).unwrap_or(0))?,
                Some(Arg::Num(v)) => write!(f, "{v}")?,
                Some(Arg::Str(s)) => f.write_str(s)?,
                Some(Arg::Msg(m)) => m.fmt(f)?,
                None => write!(f, "{{{hole}}}")?,
            }
            rest = after.get(end + 1..).unwrap_or("");
        }
        f.write_str(rest)
    }
}

/// `N` of a `.N` hole format.
fn decimals(spec: &str) -> Option<usize> {
    match spec.as_bytes() {
        [b'.', d @ b'0'..=b'9'] => Some(usize::from(d - b'0')),
        _ => None,
    }
}

/// `v` to `n` decimals as JavaScript's `toFixed(n)` prints it: an exact tie
/// (a binary fraction ending at the digit after the last kept one) rounds
/// away from zero, where `{:.n}` alone would round it to even.
fn fixed(f: &mut fmt::Formatter<'_>, v: f64, n: usize) -> fmt::Result {
    let scale = f64::from(1u32 << n.min(30));
    let tie = (v * scale * 2.0).fract() == 0.0 && (v * scale).fract() != 0.0;
    // One ulp further from zero (a tie is finite and not 0): past the tie, on its side.
    let v = if tie { f64::from_bits(v.to_bits() + 1) } else { v };
    write!(f, "{v:.n$}")
}

/// A message as data: `{ id, args: { name: value } }`, what `js/errors.js`
/// `render` takes (values are numbers, strings or nested messages).
impl serde::Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        struct Args<'a>(&'a [(&'static str, Arg)]);
        impl serde::Serialize for Args<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                // A struct, not a map: the names are static, and every
                // serializer (serde-wasm-bindgen too) makes a struct an object.
                let mut out = s.serialize_struct("Args", self.0.len())?;
                for (name, arg) in self.0 {
                    out.serialize_field(name, arg)?;
                }
                out.end()
            }
        }
        let mut out = s.serialize_struct("Message", 2)?;
        out.serialize_field("id", self.id)?;
        out.serialize_field("args", &Args(&self.args))?;
        out.end()
    }
}

impl serde::Serialize for Arg {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Arg::Num(v) => s.serialize_f64(*v),
            Arg::Str(v) => s.serialize_str(v),
            Arg::Msg(m) => m.serialize(s),
        }
    }
}

/// A core error's code, parameter and kind (see the module docs).
///
/// Not a `Display` subtrait, though every error implements both: the Wasm
/// boundary converts errors through `dyn Described`, and a `Display`
/// supertrait would put every error's text formatting (floats included) in
/// that vtable, so into the `.wasm` (measured: 52 KB → 72 KB gzip).
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
    /// The message, as a template and its values (see the module docs).
    /// `to_js` sends only this, never the `Display` text, so no sentence and
    /// no float formatting reaches the `.wasm`.
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

/// Asserts that `message`'s template exists and that every hole of it, and
/// of each nested message, has a value: a test helper for the modules that
/// build messages.
#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) fn assert_filled(message: &Message) {
    let text = template(message.id).unwrap_or_else(|| panic!("no template {}", message.id));
    let mut rest = text;
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

    /// A JavaScript string literal (JSON's escaping).
    fn js_string(s: &str) -> String {
        let mut out = String::from('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    fn js_table(what: &str, tables: &[&[(&str, &str)]]) -> String {
        let mut out = format!(
            "// The core's message templates for {what}, generated from the `templates!`\n\
             // declarations in src/core/ by `UPDATE_MESSAGES=1 cargo test --lib message_tables`:\n\
             // do not edit. js/errors.js renders them (`{{name}}`, `{{name:ms}}`, see src/core/error.rs).\n\n\
             /** @type {{Record<string, string>}} */\n\
             export const MESSAGES = {{\n"
        );
        for (id, text) in tables.iter().flat_map(|t| t.iter()) {
            out.push_str(&format!("  {}: {},\n", js_string(id), js_string(text)));
        }
        out.push_str("};\n");
        out
    }

    /// The Wasm boundary wraps errors as `Within<&dyn Described>` (one copy
    /// of the wrapper for every error type): it must describe an error
    /// exactly as `Within<E>` does.
    #[test]
    fn within_a_borrowed_error_describes_it_as_within_the_error() {
        use crate::core::deadline::DeadlineError;
        use crate::core::retry_budget::RetryBudgetError;
        fn same<E: Described + Clone>(error: E) {
            let owned = Within::new("options", error.clone());
            let borrowed = Within::new("options", &error as &dyn Described);
            assert_eq!(borrowed.code(), owned.code());
            assert_eq!(borrowed.param(), owned.param());
            assert_eq!(borrowed.kind(), owned.kind());
            assert_eq!(borrowed.fields(), owned.fields());
            assert_eq!(borrowed.message(), owned.message());
        }
        same(RetryBudgetError::BadRatio { value: 2.0 });
        same(DeadlineError::Exhausted { at: 1.0, late_by_ms: 2.5 });
        same(ShapeError { param: "x", detail: "y".into() });
        let borrowed = Within::new("options", &RetryBudgetError::BadRatio { value: 2.0 } as &dyn Described);
        assert_eq!(borrowed.param().as_deref(), Some("options.ratio"));
        assert_eq!(
            Within::new("options", &DeadlineError::Exhausted { at: 1.0, late_by_ms: 2.5 } as &dyn Described)
                .param()
                .as_deref(),
            Some("options")
        );
    }

    /// js/messages.js and js/derive-messages.js are these templates, as
    /// generated; `UPDATE_MESSAGES=1` rewrites them.
    #[test]
    fn message_tables_are_current() {
        let root = env!("CARGO_MANIFEST_DIR");
        let mut stale = Vec::new();
        for (file, what, tables) in
            [("js/messages.js", "the main entry", MAIN), ("js/derive-messages.js", "edge-deadline/derive", DERIVE)]
        {
            let path = format!("{root}/{file}");
            let want = js_table(what, tables);
            if std::env::var_os("UPDATE_MESSAGES").is_some() {
                std::fs::write(&path, &want).unwrap();
            } else if std::fs::read_to_string(&path).ok().as_deref() != Some(want.as_str()) {
                stale.push(file);
            }
        }
        assert!(stale.is_empty(), "{stale:?} out of date: run `UPDATE_MESSAGES=1 cargo test --lib message_tables`");
    }

    #[test]
    fn templates_are_well_formed_and_ids_unique() {
        let all: Vec<_> = MAIN.iter().chain(DERIVE).flat_map(|t| t.iter()).collect();
        for (i, (id, text)) in all.iter().enumerate() {
            assert!(all[..i].iter().all(|(other, _)| other != id), "duplicate id {id}");
            let mut rest = *text;
            while let Some(at) = rest.find(['{', '}']) {
                let tail = &rest[at..];
                if tail.starts_with("{{") || tail.starts_with("}}") {
                    rest = &tail[2..];
                    continue;
                }
                assert!(tail.starts_with('{'), "{id}: a lone '}}' in {text:?}");
                let end = tail.find('}').unwrap_or_else(|| panic!("{id}: an unclosed hole in {text:?}"));
                let hole = &tail[1..end];
                let (name, spec) = hole.split_once(':').unwrap_or((hole, ""));
                assert!(
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                    "{id}: {hole}"
                );
                assert!(
                    spec.is_empty() || spec == "ms" || decimals(spec).is_some(),
                    "{id}: unknown format {spec:?} (`ms`, `.N` or none)"
                );
                rest = &tail[end + 1..];
            }
        }
    }

    /// Every hole of a message's template has a value ([`assert_filled`]),
    /// and no value lacks its hole: the names are strings, so a misspelt
    /// one would print its hole.
    fn assert_fills(m: &Message) {
        assert_filled(m);
        let text = template(m.id).unwrap_or_default().replace("{{", "");
        for (name, arg) in &m.args {
            let has = text.contains(&format!("{{{name}}}")) || text.contains(&format!("{{{name}:"));
            assert!(has, "{}: a value for '{name}', which {text:?} has no hole for", m.id);
            if let Arg::Msg(inner) = arg {
                assert_fills(inner);
            }
        }
    }

    /// Each message of the main entry's errors and data, one of every variant.
    #[test]
    fn main_messages_fill_every_hole() {
        use crate::core::caps::{CapsError, Platform, Trigger};
        use crate::core::deadline::DeadlineError;
        use crate::core::headers::HeaderError;
        use crate::core::plan::{PlanError, SkipReason};
        use crate::core::retry::{During, Loop, RetryError, StopReason, Stopped};
        use crate::core::retry_budget::RetryBudgetError;
        use crate::core::stall::StallError;
        let time = DeadlineError::NotFinite { param: "ms", value: f64::INFINITY };
        let h = "grpc-timeout";
        let step = || "a".to_string();
        let mut all: Vec<Message> = vec![
            time.message(),
            DeadlineError::Negative { param: "ms", value: -1.0 }.message(),
            DeadlineError::TooLarge { param: "ms", value: 1e300 }.message(),
            DeadlineError::TooFar { param: "ms", value: 9e15, max: 7e15 }.message(),
            DeadlineError::Exhausted { at: 1.0, late_by_ms: 2.5 }.message(),
            DeadlineError::Exhausted { at: 1.0, late_by_ms: 0.0 }.message(),
            DeadlineError::Insufficient { remaining_ms: 1.0, min_ms: 2.0 }.message(),
            Message::new(crate::core::deadline::msg::BELOW_RESERVE).arg("budgetMs", 50.0).arg("reserveMs", 300.0),
            ShapeError { param: "x", detail: "y".into() }.message(),
            Within::new("options", RetryBudgetError::BadRatio { value: 2.0 }).message(),
            SkipReason::Expired.message(),
            SkipReason::BelowMinimum { available_ms: 1.5, min_ms: 2.0 }.message(),
        ];
        all.extend(
            [
                PlanError::NoSteps,
                PlanError::TooManySteps { count: 300 },
                PlanError::EmptyName { index: 1 },
                PlanError::NameTooLong { index: 1, len: 200 },
                PlanError::DuplicateName { name: step(), first: 0, second: 1 },
                PlanError::UnknownStep { name: step() },
                PlanError::IndexOutOfRange { index: 3, len: 2 },
                PlanError::UnknownKind { value: "x".into() },
                PlanError::BadStep { index: 1, detail: "not an object".into() },
                PlanError::BadStepValue { index: 0, step: step(), error: time },
                PlanError::MinAbovePreferred { index: 0, step: step(), min_ms: 2.0, preferred_ms: 1.0 },
                PlanError::ReserveBelowMin { index: 0, step: step(), reserve_ms: 1.0, min_ms: 2.0 },
                PlanError::ZeroPreferred { index: 0, step: step() },
                PlanError::PreferredOnFallback { index: 0, step: step() },
                PlanError::BadMargin { value: 1e9 },
                PlanError::Time(time),
            ]
            .iter()
            .map(Described::message),
        );
        all.extend(
            [
                RetryError::Time(time),
                RetryError::BadJitter { value: 2.0 },
                RetryError::MaxBelowBase { base_ms: 2.0, max_ms: 1.0 },
                RetryError::BadMaxAttempts { value: 0 },
                RetryError::TooManyRetries { value: 101 },
                RetryError::BadAttempt { value: 0 },
                RetryError::UnknownFailure { value: "x".into() },
                RetryError::Budget(RetryBudgetError::BadWindow { value: 0.0 }),
                RetryError::OutOfOrder { call: "failed", state: "idle" },
            ]
            .iter()
            .map(Described::message),
        );
        all.extend(
            [
                StopReason::Permanent,
                StopReason::NotIdempotent,
                StopReason::Exhausted { attempts: 3 },
                StopReason::Insufficient { remaining_ms: 1.0, attempt_min_ms: 2.0 },
                StopReason::TimeoutBelowMin { attempt_timeout_ms: 1.0, attempt_min_ms: 2.0 },
                StopReason::BackoffPastDeadline { delay_ms: 1.0, remaining_ms: 2.0, attempt_min_ms: 3.0 },
                StopReason::BudgetExhausted,
                StopReason::Deadline { during: None },
                StopReason::Deadline { during: Some(During::BeforeAttempt) },
                StopReason::Aborted { during: None },
                StopReason::Aborted { during: Some(During::Attempt) },
                StopReason::Aborted { during: Some(During::Backoff) },
            ]
            .iter()
            .map(StopReason::message),
        );
        for attempts in [1, 2] {
            all.push(Stopped { kind: Loop::Hedge, attempts, reason: StopReason::Exhausted { attempts } }.message());
        }
        all.push(crate::core::hedge::answered_first(2));
        all.extend(
            [
                RetryBudgetError::BadRatio { value: 2.0 },
                RetryBudgetError::BadMinPerSecond { value: -1.0 },
                RetryBudgetError::BadWindow { value: 0.0 },
                RetryBudgetError::Time(time),
            ]
            .iter()
            .map(Described::message),
        );
        all.extend(
            [
                HeaderError::TooLong { header: h, len: 300 },
                HeaderError::Empty { header: h },
                HeaderError::Signed { header: h },
                HeaderError::Whitespace { header: h, at: 1 },
                HeaderError::NonAscii { header: h, at: 1 },
                HeaderError::NotDigit { header: h, at: 1, found: '.' },
                HeaderError::NoDigits { header: h },
                HeaderError::TooManyDigits { header: h, digits: 9, max: 8 },
                HeaderError::MissingUnit { header: h },
                HeaderError::BadUnit { header: h, found: 'x' },
                HeaderError::UnknownFormat { value: "x".into(), param: None },
                HeaderError::Time(time),
            ]
            .iter()
            .map(Described::message),
        );
        all.extend(
            [
                CapsError::UnknownPlatform { value: "x".into() },
                CapsError::UnknownTier { value: "x".into() },
                CapsError::UnknownTrigger { value: "x".into() },
                CapsError::UnsupportedTrigger { platform: Platform::VercelEdge, trigger: Trigger::Fetch },
                CapsError::ZeroCap { param: "wallMs" },
                CapsError::CustomWith { param: "plan" },
                CapsError::Time(time),
            ]
            .iter()
            .map(Described::message),
        );
        all.extend(
            [
                StallError::Limit { param: "stallMs", value: 0.0 },
                StallError::Wait { param: "firstChunkMs", value: -1.0 },
                StallError::Instant(time),
                StallError::Count { param: "chunks", value: 0.5 },
            ]
            .iter()
            .map(Described::message),
        );
        for m in &all {
            assert_fills(m);
            assert!(MAIN.iter().flat_map(|t| t.iter()).any(|(id, _)| *id == m.id), "{} is not in MAIN", m.id);
        }
        // And every template of the main entry is used by one of them.
        let used = |id: &str| {
            all.iter().any(|m| m.id == id || m.args.iter().any(|(_, a)| matches!(a, Arg::Msg(i) if i.id == id)))
        };
        for (id, _) in MAIN.iter().flat_map(|t| t.iter()) {
            assert!(used(id) || *id == msg::TEXT, "{id} is declared but no variant above uses it");
        }
    }

    #[test]
    fn display_fills_each_kind_of_hole() {
        let inner = Message::new(msg::SHAPE).arg("param", "x").arg("detail", "a number");
        let text = |m: &Message| m.to_string();
        assert_eq!(text(&Message::text("plain".into())), "plain");
        assert_eq!(text(&inner), "'x' does not have the expected shape: a number");
        let m = Message::new(crate::core::deadline::msg::INSUFFICIENT).arg("remainingMs", 2.25).arg("minMs", 5.0);
        assert_eq!(text(&m), "insufficient budget: 2.3 ms left, the step needs at least 5 ms, so it was not started");
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
    fn fixed_decimals_round_ties_away_from_zero_as_to_fixed_does() {
        // JavaScript: (2.25).toFixed(1) "2.3", (0.125).toFixed(2) "0.13",
        // (-2.5).toFixed(0) "-3", (0.1).toFixed(1) "0.1", (2.35).toFixed(1)
        // "2.4" (2.35 is 2.35000000000000008882 in binary: no tie).
        let with = |v: f64, n: usize| {
            struct F(f64, usize);
            impl fmt::Display for F {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    fixed(f, self.0, self.1)
                }
            }
            F(v, n).to_string()
        };
        assert_eq!(with(2.25, 1), "2.3");
        assert_eq!(with(0.125, 2), "0.13");
        assert_eq!(with(-2.5, 0), "-3");
        assert_eq!(with(0.1, 1), "0.1");
        assert_eq!(with(2.35, 1), "2.4");
        assert_eq!(with(3.0, 1), "3.0");
        assert_eq!(decimals(".2"), Some(2));
        assert_eq!(decimals("ms"), None);
    }
}
