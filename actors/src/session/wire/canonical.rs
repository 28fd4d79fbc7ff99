//! Canonical JSON written straight from a `Serialize` value: compact, object keys sorted by their
//! bytes. The same bytes as `serde_json::to_vec(&serde_json::to_value(v)?)` (serde_json's `Value`
//! keeps objects in a `BTreeMap`), without building the tree of values, which is most of what the
//! whole-state way cost. Scalars and strings are written by serde_json itself, so numbers and
//! escapes are serde_json's.
//!
//! Every level writes into the one output buffer, in the order the value gives its members. An
//! object notes each member on a stack that all levels share: where the member (`"key":value`)
//! lies in the output and where its raw key is (a struct field's `&'static str`, or a map key's
//! bytes in a shared key buffer). When the object closes, if its keys already come in strictly
//! increasing order nothing moves; else its body is copied once to a shared buffer and the members
//! are written back sorted (a later duplicate key wins, as in a `BTreeMap` inserted into in order).
//! Then the stack and the key buffer drop the object's entries. A nested object closes before its
//! parent goes on, so the parent notes a member's end after the member's value, reordered and
//! possibly shorter, is complete. Those buffers (output included) stay with the thread for its next
//! call, so a call's only allocation is the exact-size `Vec` it returns.

use std::cell::Cell;
use std::cmp::Ordering;
use std::fmt::Write as _;

use serde::ser::{self, Serialize};

type Error = serde_json::Error;

fn custom(message: &str) -> Error {
    <Error as ser::Error>::custom(message)
}

/// The canonical JSON of `value`.
pub fn to_canonical_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, Error> {
    // The buffers the last call on this thread left, empty (none if this call is inside another).
    let mut cx = SPARE.try_with(Cell::take).ok().flatten().unwrap_or_default();
    let result = value.serialize(Canonical { cx: &mut cx });
    let keep = cx.out.capacity() <= SPARE_BYTES
        && cx.temp.capacity() <= SPARE_BYTES
        && cx.keys.capacity() <= SPARE_BYTES
        && cx.members.capacity() <= SPARE_MEMBERS;
    // Copied out at its exact size when the buffer stays for the next call.
    let bytes = result.map(|()| if keep { cx.out.to_vec() } else { std::mem::take(&mut cx.out) });
    if keep {
        cx.clear();
        let _ = SPARE.try_with(|spare| spare.set(Some(cx)));
    }
    bytes
}

/// The buffers are kept for the next call on the thread unless they grew past these.
const SPARE_BYTES: usize = 64 * 1024;
const SPARE_MEMBERS: usize = 1024;

thread_local! {
    static SPARE: Cell<Option<Context>> = const { Cell::new(None) };
}

/// Writes a scalar (or a string) exactly as serde_json does.
fn scalar<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), Error> {
    value.serialize(&mut serde_json::Serializer::new(out))
}

/// What one call shares across all levels of the value.
#[derive(Default)]
struct Context {
    out: Vec<u8>,
    /// The members of every object still open, innermost last.
    members: Vec<Member>,
    /// The raw bytes of the map keys of every object still open.
    keys: String,
    /// Where an object's body waits while its members are written back sorted.
    temp: Vec<u8>,
}

impl Context {
    fn clear(&mut self) {
        self.out.clear();
        self.members.clear();
        self.keys.clear();
        self.temp.clear();
    }
}

/// One member of an open object.
#[derive(Clone, Copy)]
struct Member {
    key: Key,
    /// The key's first 8 bytes, big-endian, zero-padded: if two members' prefixes differ, their
    /// keys' byte order is the prefixes' order, so most comparisons need not look at the keys.
    prefix: u64,
    /// Where `"key":value` lies in the output (without a separating comma).
    start: usize,
    end: usize,
}

/// Where a member's raw (unescaped) key is.
#[derive(Clone, Copy)]
enum Key {
    /// A struct field's name.
    Field(&'static str),
    /// A range of `Context::keys`.
    Map(usize, usize),
}

impl Key {
    fn bytes(self, keys: &str) -> &[u8] {
        match self {
            Key::Field(name) => name.as_bytes(),
            Key::Map(start, end) => &keys.as_bytes()[start..end],
        }
    }
}

fn prefix(key: &[u8]) -> u64 {
    let mut bytes = [0; 8];
    let n = key.len().min(8);
    bytes[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(bytes)
}

impl Member {
    /// The order of the raw keys' bytes (as `String`'s `Ord`).
    fn cmp_key(&self, other: &Member, keys: &str) -> Ordering {
        self.prefix.cmp(&other.prefix).then_with(|| self.key.bytes(keys).cmp(other.key.bytes(keys)))
    }
}

struct Canonical<'a> {
    cx: &'a mut Context,
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
        scalar(&mut self.cx.out, &v)
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        scalar(&mut self.cx.out, &v)
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        scalar(&mut self.cx.out, &v)
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        scalar(&mut self.cx.out, &v)
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        scalar(&mut self.cx.out, &v)
    }
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        // `to_value` turns what fits into i64/u64 into a number and fails otherwise; so do we.
        match (i64::try_from(v), u64::try_from(v)) {
            (Ok(v), _) => scalar(&mut self.cx.out, &v),
            (_, Ok(v)) => scalar(&mut self.cx.out, &v),
            _ => Err(custom("number out of range")),
        }
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        scalar(&mut self.cx.out, &v)
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        scalar(&mut self.cx.out, &v)
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        scalar(&mut self.cx.out, &v)
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        scalar(&mut self.cx.out, &v)
    }
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        u64::try_from(v).map_err(|_| custom("number out of range")).and_then(|v| scalar(&mut self.cx.out, &v))
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        // `to_value` widens f32 to f64 before printing.
        scalar(&mut self.cx.out, &serde_json::Value::from(f64::from(v)))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        scalar(&mut self.cx.out, &serde_json::Value::from(v))
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        scalar(&mut self.cx.out, &v)
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        scalar(&mut self.cx.out, v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        // As `to_value`: an array of numbers.
        scalar(&mut self.cx.out, v)
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.cx.out.extend_from_slice(b"null");
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
        scalar(&mut self.cx.out, variant)
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
        self.cx.out.push(b'{');
        scalar(&mut self.cx.out, variant)?;
        self.cx.out.push(b':');
        value.serialize(Canonical { cx: &mut *self.cx })?;
        self.cx.out.push(b'}');
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Seq<'a>, Error> {
        self.cx.out.push(b'[');
        Ok(Seq { cx: self.cx, first: true, variant: false })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq<'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Seq<'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(self, _: &'static str, _: u32, variant: &'static str, _: usize) -> Result<Seq<'a>, Error> {
        self.cx.out.push(b'{');
        scalar(&mut self.cx.out, variant)?;
        self.cx.out.extend_from_slice(b":[");
        Ok(Seq { cx: self.cx, first: true, variant: true })
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Object<'a>, Error> {
        Ok(Object::open(self.cx, false))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Object<'a>, Error> {
        Ok(Object::open(self.cx, false))
    }
    fn serialize_struct_variant(self, _: &'static str, _: u32, variant: &'static str, _: usize) -> Result<Object<'a>, Error> {
        self.cx.out.push(b'{');
        scalar(&mut self.cx.out, variant)?;
        self.cx.out.push(b':');
        Ok(Object::open(self.cx, true))
    }
}

struct Seq<'a> {
    cx: &'a mut Context,
    first: bool,
    /// A tuple variant: `{"Variant":[...]}`, one more brace to close.
    variant: bool,
}

impl Seq<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        if !std::mem::replace(&mut self.first, false) {
            self.cx.out.push(b',');
        }
        value.serialize(Canonical { cx: &mut *self.cx })
    }

    fn close(self) -> Result<(), Error> {
        self.cx.out.push(b']');
        if self.variant {
            self.cx.out.push(b'}');
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

/// An object being written: its members go straight to the output as they come, and are put in
/// key order when it closes.
struct Object<'a> {
    cx: &'a mut Context,
    /// Where the body (after `{`) starts in the output.
    body: usize,
    /// Where this object's members start on `cx.members`, and its map keys in `cx.keys`.
    members: usize,
    keys: usize,
    /// The key `serialize_key` gave (a range of `cx.keys`), waiting for its value.
    pending_key: Option<Key>,
    /// A struct variant: `{"Variant":{...}}`, one more brace to close.
    variant: bool,
}

impl<'a> Object<'a> {
    fn open(cx: &'a mut Context, variant: bool) -> Self {
        cx.out.push(b'{');
        let (body, members, keys) = (cx.out.len(), cx.members.len(), cx.keys.len());
        Self { cx, body, members, keys, pending_key: None, variant }
    }

    fn member<T: Serialize + ?Sized>(&mut self, key: Key, value: &T) -> Result<(), Error> {
        let cx = &mut *self.cx;
        if cx.members.len() > self.members {
            cx.out.push(b',');
        }
        let start = cx.out.len();
        let raw = match key {
            Key::Field(name) => name,
            Key::Map(from, to) => &cx.keys[from..to],
        };
        let prefix = prefix(raw.as_bytes());
        scalar(&mut cx.out, raw)?;
        cx.out.push(b':');
        value.serialize(Canonical { cx: &mut *cx })?;
        // Any object inside the value has closed (and dropped its entries) by now.
        cx.members.push(Member { key, prefix, start, end: cx.out.len() });
        Ok(())
    }

    fn close(self) -> Result<(), Error> {
        let Context { out, members, keys: key_buffer, temp } = &mut *self.cx;
        let keys = key_buffer.as_str();
        let ours = &mut members[self.members..];
        let sorted = ours.windows(2).all(|pair| pair[0].cmp_key(&pair[1], keys) == Ordering::Less);
        if !sorted {
            // By key, then by position: stable (so among equal keys the later is last) without the
            // scratch allocation a stable sort may make.
            ours.sort_unstable_by(|a, b| a.cmp_key(b, keys).then(a.start.cmp(&b.start)));
            temp.clear();
            temp.extend_from_slice(&out[self.body..]);
            out.truncate(self.body);
            let mut first = true;
            for (i, member) in ours.iter().enumerate() {
                // A later duplicate wins, as in a BTreeMap that was inserted into in order.
                if ours.get(i + 1).is_some_and(|next| next.cmp_key(member, keys) == Ordering::Equal) {
                    continue;
                }
                if !std::mem::replace(&mut first, false) {
                    out.push(b',');
                }
                out.extend_from_slice(&temp[member.start - self.body..member.end - self.body]);
            }
        }
        out.push(b'}');
        if self.variant {
            out.push(b'}');
        }
        members.truncate(self.members);
        key_buffer.truncate(self.keys);
        Ok(())
    }
}

impl ser::SerializeMap for Object<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        let start = self.cx.keys.len();
        key.serialize(MapKey { keys: &mut self.cx.keys })?;
        self.pending_key = Some(Key::Map(start, self.cx.keys.len()));
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
        self.member(Key::Field(key), value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeStructVariant for Object<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        self.member(Key::Field(key), value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

/// Map keys become strings as serde_json makes them: strings, unit variants, numbers and booleans
/// (as text); anything else is an error. The raw key is appended to the shared key buffer.
struct MapKey<'a> {
    keys: &'a mut String,
}

impl MapKey<'_> {
    fn text(self, text: &str) -> Result<(), Error> {
        self.keys.push_str(text);
        Ok(())
    }

    fn display(self, value: impl std::fmt::Display) -> Result<(), Error> {
        write!(self.keys, "{value}").map_err(|_| custom("a map key could not be written"))
    }
}

impl ser::Serializer for MapKey<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = ser::Impossible<(), Error>;
    type SerializeTuple = ser::Impossible<(), Error>;
    type SerializeTupleStruct = ser::Impossible<(), Error>;
    type SerializeTupleVariant = ser::Impossible<(), Error>;
    type SerializeMap = ser::Impossible<(), Error>;
    type SerializeStruct = ser::Impossible<(), Error>;
    type SerializeStructVariant = ser::Impossible<(), Error>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.text(if v { "true" } else { "false" })
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.display(v)
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.display(v)
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.display(v)
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.display(v)
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.display(v)
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.display(v)
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.display(v)
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.display(v)
    }
    fn serialize_f32(self, _: f32) -> Result<(), Error> {
        Err(custom("a float map key"))
    }
    fn serialize_f64(self, _: f64) -> Result<(), Error> {
        Err(custom("a float map key"))
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.keys.push(v);
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.text(v)
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), Error> {
        Err(custom("a bytes map key"))
    }
    fn serialize_none(self) -> Result<(), Error> {
        Err(custom("a null map key"))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), Error> {
        Err(custom("an optional map key"))
    }
    fn serialize_unit(self) -> Result<(), Error> {
        Err(custom("a unit map key"))
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        Err(custom("a unit map key"))
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), Error> {
        self.text(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(self, _: &'static str, _: u32, _: &'static str, _: &T) -> Result<(), Error> {
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
    use std::collections::{BTreeMap, HashMap};

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

    /// Key characters whose raw and escaped orders differ (`"`, `\\`, a control character), plus
    /// neighbours, a non-ASCII letter and two letters: short keys from them collide often.
    const KEY_CHARS: [char; 8] = ['a', 'b', '"', '\\', '/', '~', '\u{1}', 'é'];

    /// Short keys from `KEY_CHARS`, some after a common 8-byte prefix.
    fn arb_key() -> impl Strategy<Value = String> {
        (prop::bool::weighted(0.2), prop::collection::vec(prop::sample::select(KEY_CHARS.to_vec()), 0..4))
            .prop_map(|(long, chars)| if long { "prefix8:".chars().chain(chars).collect() } else { chars.into_iter().collect() })
    }

    fn arb_leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
            arb_key().prop_map(Value::String),
            "\\PC{0,8}".prop_map(Value::String),
        ]
    }

    fn arb_json_with_colliding_keys() -> impl Strategy<Value = Value> {
        arb_leaf().prop_recursive(5, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map(arb_key(), inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Struct field names (`&'static str` keys) from the same characters.
    const FIELDS: [&str; 12] = ["a", "b", "ab", "ba", "\"", "a\\", "/~", "\u{1}", "é", "prefix8:", "prefix8:a", "prefix8:\""];

    /// A map key of any kind serde_json accepts; chars and numbers collide with strings' text.
    #[derive(Debug, Clone, Serialize)]
    #[serde(untagged)]
    enum AnyKey {
        Str(String),
        Char(char),
        U64(u64),
        I8(i8),
        Bool(bool),
    }

    /// A value whose objects give their members in any order, duplicates included.
    #[derive(Debug, Clone)]
    enum Node {
        Leaf(Value),
        Bytes(Vec<u8>),
        Array(Vec<Node>),
        Map(Vec<(AnyKey, Node)>),
        Struct(Vec<(usize, Node)>),
        Variant(Vec<(usize, Node)>),
    }

    impl Serialize for Node {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::{SerializeMap, SerializeStruct, SerializeStructVariant};
            match self {
                Node::Leaf(v) => v.serialize(s),
                Node::Bytes(b) => s.serialize_bytes(b),
                Node::Array(items) => s.collect_seq(items),
                Node::Map(entries) => {
                    let mut map = s.serialize_map(Some(entries.len()))?;
                    for (k, v) in entries {
                        map.serialize_entry(k, v)?;
                    }
                    map.end()
                }
                Node::Struct(fields) => {
                    let mut st = s.serialize_struct("Node", fields.len())?;
                    for (i, v) in fields {
                        st.serialize_field(FIELDS[*i], v)?;
                    }
                    st.end()
                }
                Node::Variant(fields) => {
                    let mut st = s.serialize_struct_variant("Node", 5, "V\"é", fields.len())?;
                    for (i, v) in fields {
                        st.serialize_field(FIELDS[*i], v)?;
                    }
                    st.end()
                }
            }
        }
    }

    fn arb_any_key() -> impl Strategy<Value = AnyKey> {
        prop_oneof![
            4 => arb_key().prop_map(AnyKey::Str),
            1 => prop::sample::select(KEY_CHARS.to_vec()).prop_map(AnyKey::Char),
            1 => (0u64..12).prop_map(AnyKey::U64),
            1 => (-3i8..3).prop_map(AnyKey::I8),
            1 => any::<bool>().prop_map(AnyKey::Bool),
        ]
    }

    fn arb_node() -> impl Strategy<Value = Node> {
        let leaf = prop_oneof![4 => arb_leaf().prop_map(Node::Leaf), 1 => prop::collection::vec(any::<u8>(), 0..4).prop_map(Node::Bytes)];
        leaf.prop_recursive(5, 64, 7, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Node::Array),
                prop::collection::vec((arb_any_key(), inner.clone()), 0..7).prop_map(Node::Map),
                prop::collection::vec((0..FIELDS.len(), inner.clone()), 0..7).prop_map(Node::Struct),
                prop::collection::vec((0..FIELDS.len(), inner), 0..5).prop_map(Node::Variant),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn any_json_value_with_colliding_escaped_keys_is_written_as_through_a_value(v in arb_json_with_colliding_keys()) {
            prop_assert_eq!(to_canonical_vec(&v).unwrap(), via_value(&v));
        }

        #[test]
        fn members_in_any_order_with_duplicates_are_written_as_through_a_value(node in arb_node()) {
            prop_assert_eq!(to_canonical_vec(&node).unwrap(), via_value(&node));
        }
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Everything {
        zulu: Inner,
        mike: BTreeMap<String, Shape>,
        hashed: HashMap<String, Option<Inner>>,
        alpha: Option<Shape>,
        nothing: Option<u8>,
        shapes: Vec<Shape>,
        #[serde(flatten)]
        extra: Extra,
        beta: (u8, Option<String>),
        #[serde(rename = "a\"quoted")]
        quoted: Option<Inner>,
    }

    #[derive(Serialize, Clone)]
    struct Inner {
        y: i64,
        x: Option<String>,
        w: Vec<u8>,
        flag: bool,
    }

    #[derive(Serialize, Clone)]
    enum Shape {
        Unit,
        Newtype(Inner),
        Tuple(u8, String),
        Struct { z: u8, a: Option<bool>, m: Inner },
    }

    #[derive(Serialize)]
    struct Extra {
        kilo: u8,
        #[serde(rename = "a\\b")]
        backslash: bool,
        nested: BTreeMap<String, u8>,
        #[serde(flatten)]
        more: HashMap<String, Shape>,
    }

    #[test]
    fn a_derived_struct_of_every_shape_is_written_as_through_a_value() {
        let inner = |y: i64| Inner { y, x: (y % 2 == 0).then(|| format!("x\"{y}\u{7}")), w: vec![1, 2], flag: y > 0 };
        let shapes = vec![
            Shape::Unit,
            Shape::Newtype(inner(1)),
            Shape::Tuple(7, "t".into()),
            Shape::Struct { z: 1, a: None, m: inner(-2) },
            Shape::Struct { z: 2, a: Some(true), m: inner(3) },
        ];
        let hashed: HashMap<String, Option<Inner>> =
            (0..12).map(|i| (format!("{}k{i}", ["z", "a", "\"", "é"][i % 4]), (i % 3 != 0).then(|| inner(i as i64)))).collect();
        let e = Everything {
            zulu: inner(4),
            mike: BTreeMap::from([("b".into(), Shape::Unit), ("a\u{1}".into(), shapes[3].clone()), ("a".into(), shapes[1].clone())]),
            hashed,
            alpha: Some(shapes[2].clone()),
            nothing: None,
            shapes: shapes.clone(),
            extra: Extra {
                kilo: 9,
                backslash: true,
                nested: BTreeMap::from([("y".into(), 1), ("~".into(), 2)]),
                more: HashMap::from([
                    ("omega".into(), Shape::Unit),
                    ("delta".into(), shapes[4].clone()),
                    ("charlie".into(), shapes[1].clone()),
                ]),
            },
            beta: (3, None),
            quoted: Some(inner(5)),
        };
        let bytes = to_canonical_vec(&e).unwrap();
        assert_eq!(String::from_utf8(bytes).unwrap(), String::from_utf8(via_value(&e)).unwrap());
    }

    /// A map that gives `b`, `a`, `b` again and `a` again (the first `a` a whole object).
    struct Duplicates;

    impl Serialize for Duplicates {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = s.serialize_map(None)?;
            map.serialize_entry("b", &1)?;
            map.serialize_entry("a", &json!({"big": [1, 2, {"z": 0, "y": 1}]}))?;
            map.serialize_entry("b", &2)?;
            map.serialize_entry("a", &3)?;
            map.end()
        }
    }

    #[derive(Serialize)]
    struct HoldsDuplicates {
        z: Duplicates,
        y: Vec<Duplicates>,
        a: u8,
    }

    #[test]
    fn a_later_duplicate_key_wins() {
        assert_eq!(to_canonical_vec(&Duplicates).unwrap(), br#"{"a":3,"b":2}"#);
        assert_eq!(to_canonical_vec(&Duplicates).unwrap(), via_value(&Duplicates));
        // The parent reorders its members after a child shrank by dropping a duplicate.
        let held = HoldsDuplicates { z: Duplicates, y: vec![Duplicates, Duplicates], a: 1 };
        assert_eq!(to_canonical_vec(&held).unwrap(), br#"{"a":1,"y":[{"a":3,"b":2},{"a":3,"b":2}],"z":{"a":3,"b":2}}"#);
        assert_eq!(to_canonical_vec(&held).unwrap(), via_value(&held));
        // Equal keys already in order.
        let same = Node::Map(vec![(AnyKey::Str("a".into()), Node::Leaf(json!(1))), (AnyKey::Char('a'), Node::Leaf(json!(2)))]);
        assert_eq!(to_canonical_vec(&same).unwrap(), br#"{"a":2}"#);
    }

    /// A map value given without its key.
    struct ValueWithoutKey;

    impl Serialize for ValueWithoutKey {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = s.serialize_map(None)?;
            map.serialize_value(&1)?;
            map.end()
        }
    }

    #[test]
    fn rejects_what_it_rejected_and_recovers() {
        assert!(to_canonical_vec(&ValueWithoutKey).is_err());
        assert!(to_canonical_vec(&BTreeMap::from([(vec![1u8], 1)])).is_err(), "a sequence map key");
        assert!(to_canonical_vec(&HashMap::from([(Some("a"), 1)])).is_err(), "an optional map key");
        assert!(to_canonical_vec(&u128::MAX).is_err());
        assert!(to_canonical_vec(&i128::MIN).is_err());
        assert_eq!(to_canonical_vec(&(u128::from(u64::MAX), -1i128)).unwrap(), format!("[{},-1]", u64::MAX).as_bytes());
        assert_eq!(to_canonical_vec(&1.5f32).unwrap(), via_value(&1.5f32));
        // An error midway leaves nothing behind for the next call.
        let half = Node::Struct(vec![(1, Node::Map(vec![(AnyKey::Str("x".into()), Node::Leaf(json!(1)))])), (0, Node::Leaf(json!(2)))]);
        let failing = (&half, ValueWithoutKey);
        assert!(to_canonical_vec(&failing).is_err());
        assert_eq!(to_canonical_vec(&half).unwrap(), br#"{"a":2,"b":{"x":1}}"#);
    }

    /// A value whose serialization itself calls `to_canonical_vec`.
    struct Reentrant;

    impl Serialize for Reentrant {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let inner = to_canonical_vec(&json!({"b": 1, "a": {"d": 2, "c": 3}})).map_err(serde::ser::Error::custom)?;
            s.serialize_str(std::str::from_utf8(&inner).map_err(serde::ser::Error::custom)?)
        }
    }

    #[test]
    fn a_call_inside_a_call_leaves_the_outer_one_alone() {
        let outer = BTreeMap::from([("z", json!({"y": 1, "x": 2})), ("a", json!(null))]);
        let value = (HashMap::from([("q", Reentrant), ("p", Reentrant)]), outer);
        assert_eq!(to_canonical_vec(&value).unwrap(), via_value(&value));
    }
}
