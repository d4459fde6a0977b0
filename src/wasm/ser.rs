//! Writing the core's data types as JavaScript values: a [`serde::Serializer`]
//! producing what tsify's `into_js` produced (serde-wasm-bindgen's serializer
//! with the type's tsify settings), the output side of [`super::into_js`].
//!
//! The output, value for value: a struct is a plain object with every field
//! serde writes set (an `Option`'s `None` as `undefined`, or `null` where the
//! type says `missing_as_null`); a sequence or tuple an array; a unit variant
//! its name; a map a plain object (`hashmap_as_object`) or a `Map`; integers
//! up to 2^53 numbers (beyond: an error, or a BigInt with
//! `large_number_types_as_bigints`). Field and variant names are created in
//! JS once each ([`super::de::key`]), as serde-wasm-bindgen cached them, but
//! without its hash map: BENCHMARKS.md has what that saved.

use serde::ser::{self, Serialize};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::de::{key, Error};

/// `value` as tsify's `into_js` wrote it, with `T`'s tsify settings.
pub(crate) fn to_value<T: tsify::Tsify + Serialize + ?Sized>(value: &T) -> Result<JsValue, Error> {
    let config = T::SERIALIZATION_CONFIG;
    value.serialize(Serializer {
        missing_as_null: config.missing_as_null,
        maps_as_objects: config.hashmap_as_object,
        bigints: config.large_number_types_as_bigints,
    })
}

#[derive(Clone, Copy)]
struct Serializer {
    missing_as_null: bool,
    maps_as_objects: bool,
    bigints: bool,
}

impl ser::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        <Self as serde::de::Error>::custom(msg)
    }
}

/// The largest integer a JS number holds exactly (2^53 − 1).
const MAX_SAFE: u64 = (1 << 53) - 1;

#[cold]
#[inline(never)]
fn too_large(v: &dyn std::fmt::Display) -> Error {
    <Error as ser::Error>::custom(format_args!("{v} can't be represented as a JavaScript number"))
}

#[wasm_bindgen]
extern "C" {
    /// A fresh plain object this serializer fills.
    type Fresh;
    #[wasm_bindgen(method, indexing_setter)]
    fn set_key(this: &Fresh, key: &JsValue, value: &JsValue);
}

/// `object[name] = value` (an assignment, as serde-wasm-bindgen did) on a
/// fresh plain object, which cannot throw: not through `Reflect.set`, a
/// `catch` import (about 150 ns a field more, called from Wasm).
#[inline(never)]
fn set(object: &JsValue, name: &JsValue, value: &JsValue) {
    object.unchecked_ref::<Fresh>().set_key(name, value);
}

/// `{ [variant]: value }`, an enum variant with data.
#[inline(never)]
fn tagged(variant: &'static str, value: JsValue) -> JsValue {
    let object = js_sys::Object::new().into();
    set(&object, &key(variant), &value);
    object
}

impl ser::Serializer for Serializer {
    type Ok = JsValue;
    type Error = Error;
    type SerializeSeq = Elements;
    type SerializeTuple = Elements;
    type SerializeTupleStruct = Elements;
    type SerializeTupleVariant = Variant<Elements>;
    type SerializeMap = Entries;
    type SerializeStruct = Fields;
    type SerializeStructVariant = Variant<Fields>;

    fn serialize_bool(self, v: bool) -> Result<JsValue, Error> {
        Ok(JsValue::from_bool(v))
    }

    fn serialize_i8(self, v: i8) -> Result<JsValue, Error> {
        self.serialize_f64(v.into())
    }

    fn serialize_i16(self, v: i16) -> Result<JsValue, Error> {
        self.serialize_f64(v.into())
    }

    fn serialize_i32(self, v: i32) -> Result<JsValue, Error> {
        self.serialize_f64(v.into())
    }

    fn serialize_i64(self, v: i64) -> Result<JsValue, Error> {
        if self.bigints {
            Ok(v.into())
        } else if v.unsigned_abs() <= MAX_SAFE {
            self.serialize_f64(v as f64)
        } else {
            Err(too_large(&v))
        }
    }

    fn serialize_u8(self, v: u8) -> Result<JsValue, Error> {
        self.serialize_f64(v.into())
    }

    fn serialize_u16(self, v: u16) -> Result<JsValue, Error> {
        self.serialize_f64(v.into())
    }

    fn serialize_u32(self, v: u32) -> Result<JsValue, Error> {
        self.serialize_f64(v.into())
    }

    fn serialize_u64(self, v: u64) -> Result<JsValue, Error> {
        if self.bigints {
            Ok(v.into())
        } else if v <= MAX_SAFE {
            self.serialize_f64(v as f64)
        } else {
            Err(too_large(&v))
        }
    }

    fn serialize_i128(self, v: i128) -> Result<JsValue, Error> {
        Ok(v.into())
    }

    fn serialize_u128(self, v: u128) -> Result<JsValue, Error> {
        Ok(v.into())
    }

    fn serialize_f32(self, v: f32) -> Result<JsValue, Error> {
        self.serialize_f64(v.into())
    }

    fn serialize_f64(self, v: f64) -> Result<JsValue, Error> {
        Ok(JsValue::from_f64(v))
    }

    fn serialize_char(self, v: char) -> Result<JsValue, Error> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, v: &str) -> Result<JsValue, Error> {
        Ok(JsValue::from_str(v))
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<JsValue, Error> {
        Ok(js_sys::Uint8Array::from(v).into())
    }

    fn serialize_none(self) -> Result<JsValue, Error> {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<JsValue, Error> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<JsValue, Error> {
        Ok(if self.missing_as_null { JsValue::NULL } else { JsValue::UNDEFINED })
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<JsValue, Error> {
        self.serialize_unit()
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<JsValue, Error> {
        Ok(key(variant))
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<JsValue, Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<JsValue, Error> {
        Ok(tagged(variant, value.serialize(self)?))
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Elements, Error> {
        Ok(Elements { ser: self, array: js_sys::Array::new() })
    }

    fn serialize_tuple(self, len: usize) -> Result<Elements, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Elements, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<Elements>, Error> {
        Ok(Variant { variant, inner: self.serialize_seq(Some(len))? })
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Entries, Error> {
        let map = if self.maps_as_objects { js_sys::Object::new().into() } else { js_sys::Map::new().into() };
        Ok(Entries { ser: self, map, key: JsValue::UNDEFINED })
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Fields, Error> {
        Ok(Fields { ser: self, object: js_sys::Object::new().into() })
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<Fields>, Error> {
        Ok(Variant { variant, inner: self.serialize_struct(name, len)? })
    }
}

/// An array being filled.
pub(crate) struct Elements {
    ser: Serializer,
    array: js_sys::Array,
}

impl ser::SerializeSeq for Elements {
    type Ok = JsValue;
    type Error = Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.array.push(&value.serialize(self.ser)?);
        Ok(())
    }

    fn end(self) -> Result<JsValue, Error> {
        Ok(self.array.into())
    }
}

impl ser::SerializeTuple for Elements {
    type Ok = JsValue;
    type Error = Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }

    fn end(self) -> Result<JsValue, Error> {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleStruct for Elements {
    type Ok = JsValue;
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }

    fn end(self) -> Result<JsValue, Error> {
        ser::SerializeSeq::end(self)
    }
}

/// A map being filled: a plain object or a `Map`.
pub(crate) struct Entries {
    ser: Serializer,
    map: JsValue,
    key: JsValue,
}

impl ser::SerializeMap for Entries {
    type Ok = JsValue;
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.key = key.serialize(self.ser)?;
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let value = value.serialize(self.ser)?;
        entry(&self.map, self.ser.maps_as_objects, &self.key, &value)
    }

    fn end(self) -> Result<JsValue, Error> {
        Ok(self.map)
    }
}

#[inline(never)]
fn entry(map: &JsValue, as_object: bool, key: &JsValue, value: &JsValue) -> Result<(), Error> {
    if !as_object {
        map.unchecked_ref::<js_sys::Map>().set(key, value);
    } else if key.is_string() {
        set(map, key, value);
    } else {
        return Err(<Error as ser::Error>::custom("Map key is not a string and cannot be an object key"));
    }
    Ok(())
}

/// A struct's fields on a plain object.
pub(crate) struct Fields {
    ser: Serializer,
    object: JsValue,
}

impl ser::SerializeStruct for Fields {
    type Ok = JsValue;
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, value: &T) -> Result<(), Error> {
        set(&self.object, &key(name), &value.serialize(self.ser)?);
        Ok(())
    }

    fn end(self) -> Result<JsValue, Error> {
        Ok(self.object)
    }
}

/// A variant with data: `{ [variant]: fields or elements }`.
pub(crate) struct Variant<S> {
    variant: &'static str,
    inner: S,
}

impl ser::SerializeTupleVariant for Variant<Elements> {
    type Ok = JsValue;
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(&mut self.inner, value)
    }

    fn end(self) -> Result<JsValue, Error> {
        Ok(tagged(self.variant, ser::SerializeSeq::end(self.inner)?))
    }
}

impl ser::SerializeStructVariant for Variant<Fields> {
    type Ok = JsValue;
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, value: &T) -> Result<(), Error> {
        ser::SerializeStruct::serialize_field(&mut self.inner, name, value)
    }

    fn end(self) -> Result<JsValue, Error> {
        Ok(tagged(self.variant, ser::SerializeStruct::end(self.inner)?))
    }
}
