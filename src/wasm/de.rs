//! Reading the core's data types from JavaScript values: a
//! [`serde::Deserializer`] over a [`JsValue`], the input side of
//! [`super::from_js`].
//!
//! # Why our own
//! serde-wasm-bindgen's deserializer made each once-per-request call the
//! largest code of the main `.wasm` (`platformDeadline`, `earliestIncoming`
//! and `planNew` were its three largest functions, raw), and it kept float
//! formatting in the module even when no message is shown: its errors are
//! built from serde's `Unexpected::Float`, whose `Display` formats the
//! number. This one reads only what the core's types need, each monomorphized
//! method small, and its errors never format a float (a number is described
//! as "a number").
//!
//! # What it accepts (what serde-wasm-bindgen accepted)
//! - A struct: any object (`typeof` "object", arrays too, not `null`); each
//!   declared field is read by name (`value[name]`, so getters and proxy
//!   traps run), an `undefined` one counting as absent (serde then applies
//!   the field's `default`, or says "missing field"). Other properties are
//!   never read. Fields are handed over in order ([`Fields`]), so an
//!   `Option` field is optional only with `#[serde(default)]`, which every
//!   input type's optional fields have.
//! - `Option`: `undefined` and `null` are `None`.
//! - Numbers: `f64` takes any JS number (NaN and ±Infinity included: the core
//!   rejects them by name); integer types take a whole number within their
//!   range (`-0` is 0). A BigInt is not a number.
//! - Strings, booleans; an enum of unit variants: its name as a string.
//! - A sequence or tuple: an array, or any iterable (`Array.from`); at most
//!   [`MAX_ELEMENTS`] elements (a tuple reads its first elements, the
//!   rest are ignored).
//! - A map: a plain object's own enumerable string keys (`Object.entries`),
//!   or an iterable of `[key, value]` pairs (a `Map`).
//!
//! Where it differs from serde-wasm-bindgen, on purpose: a field given as
//! `undefined` is absent (serde-wasm-bindgen refused `labels: undefined`
//! where leaving `labels` out was fine); an enum is only its name (not also
//! serde-json's `{ "name": null }` object); a sequence over [`MAX_ELEMENTS`]
//! is refused before it is copied into Wasm memory (which could run out and
//! abort); a read that throws is a `TypeError`, not the exception unwinding
//! through Wasm. Errors say where (`data[0].unit`) and never format a float
//! ("a number"; only a whole number out of an integer field's range is
//! printed, as an integer).
//!
//! Primitive methods: `f64` and strings have their own (a single JS type
//! each; forwarding strings to `deserialize_any` measured bigger, gzip),
//! the rest forward to `deserialize_any`.
//!
//! `deserialize_any` (serde's path for self-describing input) sees only
//! `undefined`/`null`, booleans, numbers and strings; an object or array there
//! is refused ("found an object"). No type the core sends through here needs
//! more (untagged or internally tagged enums, `flatten`); `Histogram`'s `tag`
//! is a struct's, read field by field. This also means no input nests deeper
//! than the Rust type it fills: a cyclic object cannot recurse.
//!
//! # Nothing traps, nothing unwinds
//! Every read that can run user code or throw (property reads, `isArray` on a
//! revoked proxy, iteration, `Object.entries`) happens in JS
//! (`js/validate.js` `readFields`, `readElements`, `readEntries`), one call
//! per struct, sequence or map, which never throws: a throw comes back as
//! what it was (a field's index, `"threw"`) and becomes an [`Error`] naming where it happened, and through
//! [`super::from_js`] a `TypeError` with `.param`. Wasm then reads only the
//! fresh arrays those return, which runs no user code. (A `catch` import per
//! read would do too, but a call through one costs more from Wasm: `plan()`
//! measured slower that way.) Nothing here unwraps.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Expected, IntoDeserializer, Visitor};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// The most elements a sequence may have (2^24): far above any real
/// histogram, policy list or query result, and low enough that filling it
/// cannot exhaust Wasm memory (an array's `length` is checked before any
/// element is read).
pub(crate) const MAX_ELEMENTS: u32 = 1 << 24;

#[wasm_bindgen(raw_module = "./validate.js")]
extern "C" {
    /// `keys.map((k) => value[k])` when every read went; `null` when `value`
    /// is not an object; the index (a number) of the key whose read threw.
    #[wasm_bindgen(js_name = readFields)]
    fn read_fields(value: &JsValue, keys: &JsValue) -> JsValue;
    /// An array or iterable as a fresh array; `undefined`: neither;
    /// `"threw"`: a read threw; `"long"`: more than `max` elements.
    #[wasm_bindgen(js_name = readElements)]
    fn read_elements(value: &JsValue, max: u32) -> JsValue;
    /// A map's entries as fresh `[key, value]` arrays; the same answers.
    #[wasm_bindgen(js_name = readEntries)]
    fn read_entries(value: &JsValue, max: u32) -> JsValue;
}

#[wasm_bindgen]
extern "C" {
    /// For describing a wrong value only (a revoked proxy throws here).
    #[wasm_bindgen(js_namespace = Array, js_name = isArray, catch)]
    fn is_array(value: &JsValue) -> Result<bool, JsValue>;
}

/// A wrong shape: what was expected and found, and where (a path below the
/// argument, `[0].unit`, built as the error leaves each level).
///
/// Boxed: every `Result` the (de)serializers pass up is then one word and a
/// tag. With the three fields inline (eight words), each `?` of every derived
/// visitor copied them from frame to frame: boxed, the main `.wasm` and the
/// derive one measured smaller (gzip).
/// An error is built only on a wrong shape, so the allocation is off every
/// normal path.
#[derive(Debug)]
pub(crate) struct Error(Box<Inner>);

#[derive(Debug)]
struct Inner {
    detail: String,
    path: String,
    /// From `invalid_length`: how many elements there were (see [`Fields`]).
    short: Option<usize>,
}

impl Error {
    #[cold]
    #[inline(never)]
    fn new(detail: String) -> Self {
        Self(Box::new(Inner { detail, path: String::new(), short: None }))
    }

    /// A read that threw (a getter, a proxy trap, a revoked proxy).
    #[cold]
    #[inline(never)]
    fn threw() -> Self {
        Self::new("reading it threw".into())
    }

    #[cold]
    #[inline(never)]
    fn at_field(mut self, name: &str) -> Self {
        self.0.path.insert_str(0, name);
        self.0.path.insert(0, '.');
        self
    }

    #[cold]
    #[inline(never)]
    fn at_index(mut self, index: u32) -> Self {
        self.0.path.insert_str(0, &format!("[{index}]"));
        self
    }

    /// The detail, and where below `base` (the argument's name) it happened.
    pub(crate) fn describe(&self, base: &str) -> String {
        let Inner { detail, path, .. } = &*self.0;
        if path.is_empty() {
            return detail.clone();
        }
        format!("{detail} (in {base}{path})")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe(""))
    }
}

impl std::error::Error for Error {}

/// What a JS value is, in words (never its number: no float formatting).
#[cold]
#[inline(never)]
fn found(value: &JsValue) -> &'static str {
    if value.is_undefined() {
        "undefined"
    } else if value.is_null() {
        "null"
    } else if value.as_bool().is_some() {
        "a boolean"
    } else if value.as_f64().is_some() {
        "a number"
    } else if value.is_string() {
        "a string"
    } else if value.is_bigint() {
        "a BigInt"
    } else if value.is_symbol() {
        "a symbol"
    } else if value.is_function() {
        "a function"
    } else if is_array(value).unwrap_or(false) {
        "an array"
    } else {
        "an object"
    }
}

/// serde's description of a value, without formatting a float.
#[cold]
#[inline(never)]
fn unexpected(what: de::Unexpected<'_>) -> String {
    match what {
        de::Unexpected::Bool(_) => "a boolean".into(),
        de::Unexpected::Unsigned(n) => n.to_string(),
        de::Unexpected::Signed(n) => n.to_string(),
        de::Unexpected::Float(_) => "a number".into(),
        de::Unexpected::Char(_) | de::Unexpected::Str(_) => "a string".into(),
        de::Unexpected::Unit | de::Unexpected::Option => "null or undefined".into(),
        de::Unexpected::Seq => "an array".into(),
        de::Unexpected::Map => "an object".into(),
        de::Unexpected::Other(other) => other.into(),
        _ => "another value".into(),
    }
}

#[cold]
#[inline(never)]
fn expected_found(expected: &dyn Expected, found: &str) -> Error {
    Error::new(format!("expected {expected}, found {found}"))
}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self::new(msg.to_string())
    }

    fn invalid_type(unexp: de::Unexpected<'_>, exp: &dyn Expected) -> Self {
        expected_found(exp, &unexpected(unexp))
    }

    fn invalid_value(unexp: de::Unexpected<'_>, exp: &dyn Expected) -> Self {
        expected_found(exp, &unexpected(unexp))
    }

    fn invalid_length(len: usize, exp: &dyn Expected) -> Self {
        let mut error = expected_found(exp, &format!("{len} elements"));
        error.0.short = Some(len);
        error
    }
}

/// `T` from `value` (see the module doc for what is accepted).
pub(crate) fn from_value<T: de::DeserializeOwned>(value: JsValue) -> Result<T, Error> {
    T::deserialize(Deserializer(value))
}

/// JS values made from `&'static` Rust data, found by address: decoding
/// strings into JS costs more than the reads they key. A fixed table of
/// [`SLOTS`] entries, hashed by address and probed in order, holds every
/// field list there is; were it full, a value would just be made again each
/// time.
type Cache = Cell<Vec<Option<(usize, JsValue)>>>;

/// The entries of each cache.
const SLOTS: usize = 256;

thread_local! {
    static FIELD_LISTS: Cache = const { Cell::new(Vec::new()) };
}

#[inline(never)]
fn cached(cache: &'static std::thread::LocalKey<Cache>, address: usize, make: &dyn Fn() -> JsValue) -> JsValue {
    // `try_with`: no panic path (a thread's values are never destroyed in Wasm).
    let found = cache.try_with(|cell| {
        let mut slots = cell.take();
        if slots.is_empty() {
            slots.resize_with(SLOTS, || None);
        }
        // Fibonacci hashing of the address onto 0..SLOTS.
        let start = (address as u32).wrapping_mul(0x9E37_79B9) >> 24;
        let mut value = None;
        for i in 0..SLOTS {
            let Some(slot) = slots.get_mut((start as usize + i) % SLOTS) else { break };
            match slot {
                Some((a, v)) if *a == address => value = Some(v.clone()),
                Some(_) => continue,
                None => {
                    let v = make();
                    *slot = Some((address, v.clone()));
                    value = Some(v);
                }
            }
            break;
        }
        cell.set(slots);
        value
    });
    found.ok().flatten().unwrap_or_else(make)
}

/// A struct's field names as a JS array of strings, made once per struct.
fn field_list(fields: &'static [&'static str]) -> JsValue {
    cached(&FIELD_LISTS, fields.as_ptr() as usize, &|| {
        fields.iter().map(|f| JsValue::from_str(f)).collect::<js_sys::Array>().into()
    })
}

/// What [`read_elements`] or [`read_entries`] answered: the fresh array, or
/// `None` when the value was not a sequence (or map).
#[inline(never)]
fn fresh(answer: JsValue) -> Result<Option<js_sys::Array>, Error> {
    // The usual answer, an array, in one call (`isArray` of our own answer
    // cannot throw).
    if js_sys::Array::is_array(&answer) {
        return Ok(Some(answer.unchecked_into()));
    }
    match answer.as_string().as_deref() {
        Some("threw") => Err(Error::threw()),
        Some(_) => Err(Error::new(format!("expected an array of at most {MAX_ELEMENTS} elements"))),
        None => Ok(None),
    }
}

/// `undefined` or `null`, in one call into JS (`value == null`).
fn is_nullish(value: &JsValue) -> bool {
    value.loose_eq(&JsValue::NULL)
}

/// A JS value being read as some Rust type.
struct Deserializer(JsValue);

impl Deserializer {
    #[cold]
    #[inline(never)]
    fn invalid(&self, expected: &dyn Expected) -> Error {
        expected_found(expected, found(&self.0))
    }
}

impl<'de> IntoDeserializer<'de, Error> for Deserializer {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> de::Deserializer<'de> for Deserializer {
    type Error = Error;

    /// Scalars only (see the module doc): the primitive methods below forward
    /// here, so each primitive type costs one copy of this.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        // Each test is a call into JS: the likeliest (a number, for the
        // integer fields that come here) first.
        let v = &self.0;
        if let Some(n) = v.as_f64() {
            // A safe integer goes as one (integer targets check their range);
            // anything else as a float, which integer targets refuse.
            if n.trunc() == n && n.abs() <= 9_007_199_254_740_991.0 {
                visitor.visit_i64(n as i64)
            } else {
                visitor.visit_f64(n)
            }
        } else if let Some(s) = v.as_string() {
            visitor.visit_string(s)
        } else if let Some(b) = v.as_bool() {
            visitor.visit_bool(b)
        } else if is_nullish(v) {
            visitor.visit_unit()
        } else {
            Err(self.invalid(&visitor))
        }
    }

    /// Any JS number, `-0`, NaN and ±Infinity as they are.
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0.as_f64() {
            Some(n) => visitor.visit_f64(n),
            None => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0.as_string() {
            Some(s) => visitor.visit_string(s),
            None => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_string(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if is_nullish(&self.0) {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let Some(array) = fresh(read_elements(&self.0, MAX_ELEMENTS))? else {
            return Err(self.invalid(&visitor));
        };
        let len = array.length();
        // Elements past what the visitor reads (a tuple's) are not read, as before.
        visitor.visit_seq(Elements { array, len, next: 0 })
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let Some(pairs) = fresh(read_entries(&self.0, MAX_ELEMENTS))? else {
            return Err(self.invalid(&visitor));
        };
        let len = pairs.length();
        visitor.visit_map(Pairs { pairs, len, next: 0, key: JsValue::UNDEFINED, value: JsValue::UNDEFINED })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match Fields::read(&self.0, fields)? {
            Some(mut fields) => visitor.visit_seq(&mut fields).map_err(|e| fields.missing(e)),
            None => Err(self.invalid(&visitor)),
        }
    }

    /// A unit variant by its name.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0.as_string() {
            Some(name) => visitor.visit_enum(name.into_deserializer()),
            None => Err(not_a_name(variants, &self.0)),
        }
    }

    /// Never reads the value.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 char bytes byte_buf unit unit_struct identifier
    }
}

#[cold]
#[inline(never)]
fn not_a_name(variants: &[&str], value: &JsValue) -> Error {
    let mut names = String::new();
    for (i, v) in variants.iter().enumerate() {
        if i > 0 {
            names.push_str(", ");
        }
        names.push('`');
        names.push_str(v);
        names.push('`');
    }
    expected_found(&format!("one of {names}").as_str(), found(value))
}

/// A sequence's elements, read by index from a fresh array.
struct Elements {
    array: js_sys::Array,
    len: u32,
    next: u32,
}

impl<'de> de::SeqAccess<'de> for Elements {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        if self.next == self.len {
            return Ok(None);
        }
        let index = self.next;
        self.next += 1;
        seed.deserialize(Deserializer(self.array.get(index))).map(Some).map_err(|e| e.at_index(index))
    }

    fn size_hint(&self) -> Option<usize> {
        Some((self.len - self.next) as usize)
    }
}

/// A map's `[key, value]` pairs, fresh arrays.
struct Pairs {
    pairs: js_sys::Array,
    len: u32,
    next: u32,
    key: JsValue,
    value: JsValue,
}

impl<'de> de::MapAccess<'de> for Pairs {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        if self.next == self.len {
            return Ok(None);
        }
        let index = self.next;
        self.next += 1;
        let pair: js_sys::Array = self.pairs.get(index).unchecked_into();
        let key = pair.get(0);
        self.key = key.clone();
        self.value = pair.get(1);
        seed.deserialize(Deserializer(key)).map(Some).map_err(|e| e.at_index(index))
    }

    /// An error names the entry by its key (`labels.route`).
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = std::mem::replace(&mut self.value, JsValue::UNDEFINED);
        seed.deserialize(Deserializer(value)).map_err(|e| match self.key.as_string() {
            Some(key) => e.at_field(&key),
            None => e.at_index(self.next - 1),
        })
    }
}

/// A struct's declared fields as [`read_fields`] read them, handed to serde's
/// derived visitor as a sequence in declaration order; `undefined` is absent.
///
/// A sequence rather than a map: the derived `visit_map` matches each key
/// against the field names and checks for duplicates, code that is never
/// needed here (the keys are the declared fields, each read once), and
/// through `visit_seq` the linker drops it (the main `.wasm` measured smaller,
/// gzip, with the allocator and error savings in place and before them).
/// An absent field is `None`: the visitor then takes the field's
/// `default` (every `Option` field of an input type has one), or fails with
/// `invalid_length` at that index, which [`Fields::missing`] turns back into
/// "missing field `name`".
struct Fields {
    values: js_sys::Array,
    fields: &'static [&'static str],
    next: usize,
    /// The last field answered as absent.
    absent: Option<usize>,
}

impl Fields {
    /// `value`'s declared fields; `None` when it is not an object.
    #[inline(never)]
    fn read(value: &JsValue, fields: &'static [&'static str]) -> Result<Option<Self>, Error> {
        let answer = read_fields(value, &field_list(fields));
        // The answer's type says how it went (js/validate.js): the values (an
        // array, the one object it answers), a number or `null`.
        if answer.is_object() {
            return Ok(Some(Fields { values: answer.unchecked_into(), fields, next: 0, absent: None }));
        }
        match answer.as_f64() {
            Some(i) => Err(Error::threw().at_field(fields.get(i as usize).copied().unwrap_or(""))),
            None => Ok(None),
        }
    }

    /// The visitor's error, with a required field that was absent named as
    /// such (serde reports it as a sequence too short at that index).
    #[cold]
    #[inline(never)]
    fn missing(&self, error: Error) -> Error {
        match (error.0.short, self.absent) {
            (Some(len), Some(at)) if len == at && error.0.path.is_empty() => {
                Error::new(format!("missing field `{}`", self.fields.get(at).copied().unwrap_or("")))
            }
            _ => error,
        }
    }
}

impl<'de> de::SeqAccess<'de> for Fields {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        let at = self.next;
        let Some(&name) = self.fields.get(at) else { return Ok(None) };
        self.next += 1;
        let value = self.values.get(at as u32);
        if value.is_undefined() {
            self.absent = Some(at);
            return Ok(None);
        }
        seed.deserialize(Deserializer(value)).map(Some).map_err(|e| e.at_field(name))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.fields.len() - self.next)
    }
}
