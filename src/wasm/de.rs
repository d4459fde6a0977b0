//! Reading the core's data types from JavaScript values: a
//! [`serde::Deserializer`] over a [`JsValue`], the input side of
//! [`super::from_js`].
//!
//! # Why our own
//! serde-wasm-bindgen's deserializer made each once-per-request call the
//! largest code of the main `.wasm` (`platformDeadline` 11.9 KB,
//! `earliestIncoming` 9.0 KB, `planNew` 8.4 KB raw), and it kept float
//! formatting in the module even when no message is shown: its errors are
//! built from serde's `Unexpected::Float`, whose `Display` formats the
//! number. This one reads only what the core's types need, each monomorphized
//! method small, and its errors never format a float (a number is described
//! as "a number").
//!
//! # What it accepts (what serde-wasm-bindgen accepted)
//! - A struct: any object (`typeof` "object", arrays too, not `null`); each
//!   declared field is read by name ([`Reflect::get`], so getters and proxy
//!   traps run), an `undefined` one counting as absent (serde then applies
//!   `default`, `None` or "missing field"). Other properties are never read.
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
//! `deserialize_any` (serde's path for self-describing input) sees only
//! `undefined`/`null`, booleans, numbers and strings; an object or array there
//! is refused ("found an object"). No type the core sends through here needs
//! more (untagged or internally tagged enums, `flatten`); `Histogram`'s `tag`
//! is a struct's, read field by field. This also means no input nests deeper
//! than the Rust type it fills: a cyclic object cannot recurse.
//!
//! # Nothing traps
//! Every read that can run user code or throw (property reads, `isArray` on a
//! revoked proxy, iteration, `Object.entries`) is a `catch` import: a throw
//! becomes an [`Error`] naming where it happened, and through
//! [`super::from_js`] a `TypeError` with `.param`. Nothing here unwraps.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Expected, IntoDeserializer, Visitor};
use wasm_bindgen::prelude::*;

/// The most elements a sequence may have (2^24): far above any real
/// histogram, policy list or query result, and low enough that filling it
/// cannot exhaust Wasm memory (an array's `length` is checked before any
/// element is read).
pub(crate) const MAX_ELEMENTS: u32 = 1 << 24;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = Array, js_name = isArray, catch)]
    fn is_array(value: &JsValue) -> Result<bool, JsValue>;
    #[wasm_bindgen(js_namespace = Array, js_name = from, catch)]
    fn array_from(value: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_namespace = Object, js_name = entries, catch)]
    fn object_entries(value: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_namespace = Reflect, js_name = get, catch)]
    fn get(target: &JsValue, key: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_namespace = Reflect, js_name = get, catch)]
    fn get_index(target: &JsValue, index: u32) -> Result<JsValue, JsValue>;
}

/// A wrong shape: what was expected and found, and where (a path below the
/// argument, `[0].unit`, built as the error leaves each level).
#[derive(Debug)]
pub(crate) struct Error {
    detail: String,
    path: String,
}

impl Error {
    fn new(detail: String) -> Self {
        Self { detail, path: String::new() }
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
        self.path.insert_str(0, name);
        self.path.insert(0, '.');
        self
    }

    #[cold]
    #[inline(never)]
    fn at_index(mut self, index: u32) -> Self {
        self.path.insert_str(0, &format!("[{index}]"));
        self
    }

    /// The detail, and where below `base` (the argument's name) it happened.
    pub(crate) fn describe(&self, base: &str) -> String {
        if self.path.is_empty() {
            return self.detail.clone();
        }
        format!("{} (in {}{})", self.detail, base, self.path)
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
        expected_found(exp, &format!("{len} elements"))
    }
}

/// `T` from `value` (see the module doc for what is accepted).
pub(crate) fn from_value<T: de::DeserializeOwned>(value: JsValue) -> Result<T, Error> {
    T::deserialize(Deserializer(value))
}

/// The `JsValue` for a field name, created once per name: decoding a string
/// into JS costs more than the read it keys (a plan's steps read 5 fields
/// each). A handful of names exist, so a list searched by address is enough.
#[inline(never)]
pub(super) fn key(name: &'static str) -> JsValue {
    thread_local! {
        static KEYS: Cell<Vec<(usize, JsValue)>> = const { Cell::new(Vec::new()) };
    }
    KEYS.with(|cell| {
        let mut keys = cell.take();
        let address = name.as_ptr() as usize;
        let key = match keys.iter().find(|(a, _)| *a == address) {
            Some((_, key)) => key.clone(),
            None => {
                let key = JsValue::from_str(name);
                keys.push((address, key.clone()));
                key
            }
        };
        cell.set(keys);
        key
    })
}

/// The elements of an array or an iterable, as an array and its length;
/// `None` when `value` is neither.
#[inline(never)]
fn elements(value: &JsValue) -> Result<Option<(JsValue, u32)>, Error> {
    if !value.is_object() {
        return Ok(None);
    }
    let array = if is_array(value).map_err(|_| Error::threw())? {
        value.clone()
    } else {
        let iterator = get(value, &js_sys::Symbol::iterator()).map_err(|_| Error::threw())?;
        if !iterator.is_function() {
            return Ok(None);
        }
        array_from(value).map_err(|_| Error::threw())?
    };
    let length = get(&array, &key("length")).map_err(|_| Error::threw())?;
    match length.as_f64() {
        Some(n) if n <= MAX_ELEMENTS as f64 => Ok(Some((array, n as u32))),
        _ => Err(Error::new(format!("expected an array of at most {MAX_ELEMENTS} elements"))),
    }
}

/// The `[key, value]` pairs of a map: a plain object's entries, or an
/// iterable's elements (a `Map`).
#[inline(never)]
fn pairs(value: &JsValue) -> Result<Option<(JsValue, u32)>, Error> {
    match elements(value)? {
        Some(found) => Ok(Some(found)),
        None if value.is_object() => {
            let entries = object_entries(value).map_err(|_| Error::threw())?;
            // An array of [key, value] arrays, made by the engine.
            elements(&entries)
        }
        None => Ok(None),
    }
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
        let v = &self.0;
        if v.is_undefined() || v.is_null() {
            visitor.visit_unit()
        } else if let Some(b) = v.as_bool() {
            visitor.visit_bool(b)
        } else if let Some(n) = v.as_f64() {
            // A safe integer goes as one (integer targets check their range);
            // anything else as a float, which integer targets refuse.
            if n.trunc() == n && n.abs() <= 9_007_199_254_740_991.0 {
                visitor.visit_i64(n as i64)
            } else {
                visitor.visit_f64(n)
            }
        } else if let Some(s) = v.as_string() {
            visitor.visit_string(s)
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
        if self.0.is_undefined() || self.0.is_null() {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let Some((array, len)) = elements(&self.0)? else {
            return Err(self.invalid(&visitor));
        };
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
        let Some((pairs, len)) = pairs(&self.0)? else {
            return Err(self.invalid(&visitor));
        };
        visitor.visit_map(Pairs { pairs, len, next: 0, key: JsValue::UNDEFINED, value: JsValue::UNDEFINED })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        if !self.0.is_object() {
            return Err(self.invalid(&visitor));
        }
        visitor.visit_map(Fields { object: self.0, fields: fields.iter(), name: "", value: JsValue::UNDEFINED })
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

/// A sequence's elements, read by index.
struct Elements {
    array: JsValue,
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
        let value = get_index(&self.array, index).map_err(|_| Error::threw().at_index(index))?;
        seed.deserialize(Deserializer(value)).map(Some).map_err(|e| e.at_index(index))
    }

    fn size_hint(&self) -> Option<usize> {
        Some((self.len - self.next) as usize)
    }
}

/// A map's `[key, value]` pairs.
struct Pairs {
    pairs: JsValue,
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
        let (key, value) = pair(&self.pairs, index).map_err(|e| e.at_index(index))?;
        self.key = key.clone();
        self.value = value;
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

/// The key and value of the pair at `index`.
#[inline(never)]
fn pair(pairs: &JsValue, index: u32) -> Result<(JsValue, JsValue), Error> {
    let pair = get_index(pairs, index).map_err(|_| Error::threw())?;
    if !pair.is_object() {
        return Err(expected_found(&"a [key, value] pair", found(&pair)));
    }
    let key = get_index(&pair, 0).map_err(|_| Error::threw())?;
    let value = get_index(&pair, 1).map_err(|_| Error::threw())?;
    Ok((key, value))
}

/// A struct's declared fields, read by name; `undefined` is absent.
struct Fields {
    object: JsValue,
    fields: std::slice::Iter<'static, &'static str>,
    name: &'static str,
    value: JsValue,
}

impl<'de> de::MapAccess<'de> for Fields {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        for &name in self.fields.by_ref() {
            let value = get(&self.object, &key(name)).map_err(|_| Error::threw().at_field(name))?;
            if !value.is_undefined() {
                self.name = name;
                self.value = value;
                let name: de::value::StrDeserializer<'_, Error> = name.into_deserializer();
                return seed.deserialize(name).map(Some);
            }
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = std::mem::replace(&mut self.value, JsValue::UNDEFINED);
        seed.deserialize(Deserializer(value)).map_err(|e| e.at_field(self.name))
    }
}
