//! Canonical JSON written straight from a `Serialize` value: compact, object keys sorted by their
//! bytes. The same bytes as `serde_json::to_vec(&serde_json::to_value(v)?)` (serde_json's `Value`
//! keeps objects in a `BTreeMap`), without building the tree of values, which is most of what the
//! whole-state way cost. Scalars and strings are written by serde_json itself, so numbers and
//! escapes are serde_json's; objects are buffered per level and written sorted.

use serde::ser::{self, Serialize};

type Error = serde_json::Error;

fn custom(message: &str) -> Error {
    <Error as ser::Error>::custom(message)
}

/// The canonical JSON of `value`.
pub fn to_canonical_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(128);
    value.serialize(Canonical { out: &mut out })?;
    Ok(out)
}

/// Writes a scalar (or a string) exactly as serde_json does.
fn scalar<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), Error> {
    value.serialize(&mut serde_json::Serializer::new(out))
}

struct Canonical<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> ser::Serializer for Canonical<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Seq<'a>;
    type SerializeTupleStruct = Seq<'a>;
    type SerializeTupleVariant = Seq<'a>;
    type SerializeMap = Object<'a>;
    type SerializeStruct = Object<'a>;
    type SerializeStructVariant = Object<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        scalar(self.out, &v)
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        scalar(self.out, &v)
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        scalar(self.out, &v)
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        scalar(self.out, &v)
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        scalar(self.out, &v)
    }
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        // `to_value` turns what fits into i64/u64 into a number and fails otherwise; so do we.
        match (i64::try_from(v), u64::try_from(v)) {
            (Ok(v), _) => scalar(self.out, &v),
            (_, Ok(v)) => scalar(self.out, &v),
            _ => Err(custom("number out of range")),
        }
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        scalar(self.out, &v)
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        scalar(self.out, &v)
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        scalar(self.out, &v)
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        scalar(self.out, &v)
    }
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        u64::try_from(v).map_err(|_| custom("number out of range")).and_then(|v| scalar(self.out, &v))
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        // `to_value` widens f32 to f64 before printing.
        scalar(self.out, &serde_json::Value::from(f64::from(v)))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        scalar(self.out, &serde_json::Value::from(v))
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        scalar(self.out, &v)
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        scalar(self.out, v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        // As `to_value`: an array of numbers.
        scalar(self.out, v)
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.serialize_none()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        self.serialize_none()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), Error> {
        scalar(self.out, variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.out.push(b'{');
        scalar(self.out, variant)?;
        self.out.push(b':');
        value.serialize(Canonical { out: self.out })?;
        self.out.push(b'}');
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Seq<'a>, Error> {
        self.out.push(b'[');
        Ok(Seq { out: self.out, first: true, variant: false })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq<'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Seq<'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(self, _: &'static str, _: u32, variant: &'static str, _: usize) -> Result<Seq<'a>, Error> {
        self.out.push(b'{');
        scalar(self.out, variant)?;
        self.out.extend_from_slice(b":[");
        Ok(Seq { out: self.out, first: true, variant: true })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Object<'a>, Error> {
        Ok(Object::new(self.out, len.unwrap_or(8), false))
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Object<'a>, Error> {
        Ok(Object::new(self.out, len, false))
    }
    fn serialize_struct_variant(self, _: &'static str, _: u32, variant: &'static str, len: usize) -> Result<Object<'a>, Error> {
        self.out.push(b'{');
        scalar(self.out, variant)?;
        self.out.push(b':');
        Ok(Object::new(self.out, len, true))
    }
}

struct Seq<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
    /// A tuple variant: `{"Variant":[...]}`, one more brace to close.
    variant: bool,
}

impl Seq<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        if !std::mem::replace(&mut self.first, false) {
            self.out.push(b',');
        }
        value.serialize(Canonical { out: self.out })
    }

    fn close(self) -> Result<(), Error> {
        self.out.push(b']');
        if self.variant {
            self.out.push(b'}');
        }
        Ok(())
    }
}

impl ser::SerializeSeq for Seq<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTuple for Seq<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTupleStruct for Seq<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTupleVariant for Seq<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

/// An object being written: members are serialized into one scratch buffer as they come, then
/// written to the output sorted by key.
struct Object<'a> {
    out: &'a mut Vec<u8>,
    /// Each member's key, and where its value lies in `scratch`.
    members: Vec<(String, usize, usize)>,
    scratch: Vec<u8>,
    /// The key `serialize_key` gave, waiting for its value.
    pending_key: Option<String>,
    /// A struct variant: `{"Variant":{...}}`, one more brace to close.
    variant: bool,
}

impl<'a> Object<'a> {
    fn new(out: &'a mut Vec<u8>, len: usize, variant: bool) -> Self {
        Self { out, members: Vec::with_capacity(len), scratch: Vec::with_capacity(len * 16), pending_key: None, variant }
    }

    fn member<T: Serialize + ?Sized>(&mut self, key: String, value: &T) -> Result<(), Error> {
        let start = self.scratch.len();
        value.serialize(Canonical { out: &mut self.scratch })?;
        self.members.push((key, start, self.scratch.len()));
        Ok(())
    }

    fn close(mut self) -> Result<(), Error> {
        // Stable, and a later duplicate wins, as in a BTreeMap that was inserted into in order.
        self.members.sort_by(|a, b| a.0.cmp(&b.0));
        self.members.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                std::mem::swap(later, earlier);
            }
            same
        });
        self.out.push(b'{');
        for (i, (key, start, end)) in self.members.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            scalar(self.out, key.as_str())?;
            self.out.push(b':');
            self.out.extend_from_slice(&self.scratch[*start..*end]);
        }
        self.out.push(b'}');
        if self.variant {
            self.out.push(b'}');
        }
        Ok(())
    }
}

impl ser::SerializeMap for Object<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.pending_key = Some(key.serialize(MapKey)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self.pending_key.take().ok_or_else(|| custom("a map value without a key"))?;
        self.member(key, value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeStruct for Object<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        self.member(key.to_string(), value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeStructVariant for Object<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        self.member(key.to_string(), value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

/// Map keys become strings as serde_json makes them: strings, unit variants, numbers and booleans
/// (quoted); anything else is an error.
struct MapKey;

impl ser::Serializer for MapKey {
    type Ok = String;
    type Error = Error;
    type SerializeSeq = ser::Impossible<String, Error>;
    type SerializeTuple = ser::Impossible<String, Error>;
    type SerializeTupleStruct = ser::Impossible<String, Error>;
    type SerializeTupleVariant = ser::Impossible<String, Error>;
    type SerializeMap = ser::Impossible<String, Error>;
    type SerializeStruct = ser::Impossible<String, Error>;
    type SerializeStructVariant = ser::Impossible<String, Error>;

    fn serialize_bool(self, v: bool) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_i16(self, v: i16) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_i32(self, v: i32) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_u16(self, v: u16) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_u32(self, v: u32) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_f32(self, _: f32) -> Result<String, Error> {
        Err(custom("a float map key"))
    }
    fn serialize_f64(self, _: f64) -> Result<String, Error> {
        Err(custom("a float map key"))
    }
    fn serialize_char(self, v: char) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_str(self, v: &str) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, Error> {
        Err(custom("a bytes map key"))
    }
    fn serialize_none(self) -> Result<String, Error> {
        Err(custom("a null map key"))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, Error> {
        Err(custom("an optional map key"))
    }
    fn serialize_unit(self) -> Result<String, Error> {
        Err(custom("a unit map key"))
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, Error> {
        Err(custom("a unit map key"))
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<String, Error> {
        Ok(variant.to_string())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<String, Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(self, _: &'static str, _: u32, _: &'static str, _: &T) -> Result<String, Error> {
        Err(custom("a variant map key"))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(custom("a sequence map key"))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(custom("a tuple map key"))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, Error> {
        Err(custom("a tuple map key"))
    }
    fn serialize_tuple_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self::SerializeTupleVariant, Error> {
        Err(custom("a tuple map key"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(custom("a map map key"))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        Err(custom("a struct map key"))
    }
    fn serialize_struct_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self::SerializeStructVariant, Error> {
        Err(custom("a struct map key"))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use serde::Serialize;
    use serde_json::{Value, json};

    use super::to_canonical_vec;

    fn via_value<T: Serialize>(v: &T) -> Vec<u8> {
        serde_json::to_vec(&serde_json::to_value(v).unwrap()).unwrap()
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Fields {
        zeta: u32,
        alpha: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
        nested: BTreeMap<String, Vec<Kind>>,
        float: f64,
        value: Value,
    }

    #[derive(Serialize)]
    #[serde(tag = "kind", rename_all = "camelCase")]
    enum Kind {
        Plain,
        WithFields { b: bool, a: i64 },
    }

    #[derive(Serialize)]
    enum External {
        Unit,
        New(u8),
        Tuple(u8, String),
        Struct { y: u8, x: u8 },
    }

    #[test]
    fn writes_the_bytes_serde_json_writes_through_a_value() {
        let f = Fields {
            zeta: 1,
            alpha: None,
            skipped: None,
            nested: BTreeMap::from([("b".into(), vec![Kind::Plain]), ("a\"é".into(), vec![Kind::WithFields { b: true, a: -3 }])]),
            float: 1.5,
            value: json!({"z": [1, {"y": null, "x": "\u{1F600}\n"}], "a": 2.25}),
        };
        assert_eq!(to_canonical_vec(&f).unwrap(), via_value(&f));
        for e in [External::Unit, External::New(3), External::Tuple(1, "t".into()), External::Struct { y: 2, x: 1 }] {
            assert_eq!(to_canonical_vec(&e).unwrap(), via_value(&e));
        }
        let keyed: BTreeMap<u32, bool> = BTreeMap::from([(10, true), (9, false)]);
        assert_eq!(to_canonical_vec(&keyed).unwrap(), via_value(&keyed), "numeric keys sort as strings");
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
            "\\PC{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map("\\PC{0,6}", inner, 0..5).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_json_value_is_written_as_through_a_value(v in arb_json()) {
            prop_assert_eq!(to_canonical_vec(&v).unwrap(), via_value(&v));
        }
    }
}
