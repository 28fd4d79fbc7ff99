//! The JSON Patch (RFC 6902) between two canonical JSON texts, computed on their bytes: objects are
//! compared member by member (both sides list their keys in the same sorted order), equal byte
//! ranges are skipped without looking inside, a key on one side only is an `add` or a `remove`, and
//! anything else that differs (a scalar, an array, a change of type) is a `replace` carrying the
//! new bytes as they are. No JSON value is built on either side; the patch is written as JSON text.
//!
//! The result is a valid patch from `before` to `after` for any RFC 6902 client; it is coarser
//! than a minimal one only inside arrays (an array that differs is replaced whole).

use std::borrow::Cow;
use std::cmp::Ordering;

/// JSON Patch operations, written as the JSON text of an array.
#[derive(Debug, Default)]
pub struct PatchText {
    text: Vec<u8>,
    operations: usize,
}

impl PatchText {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.operations == 0
    }

    pub fn len(&self) -> usize {
        self.operations
    }

    /// The JSON array of the operations.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.text.len() + 2);
        out.push(b'[');
        out.extend_from_slice(&self.text);
        out.push(b']');
        out
    }

    /// Writes the JSON array of the operations to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.push(b'[');
        out.extend_from_slice(&self.text);
        out.push(b']');
    }

    fn operation(&mut self, op: &str, path: &str, value: Option<&[u8]>) {
        if self.operations > 0 {
            self.text.push(b',');
        }
        self.operations += 1;
        self.text.extend_from_slice(b"{\"op\":\"");
        self.text.extend_from_slice(op.as_bytes());
        self.text.extend_from_slice(b"\",\"path\":");
        serde_json::to_writer(&mut self.text, path).expect("a string serializes");
        if let Some(value) = value {
            self.text.extend_from_slice(b",\"value\":");
            self.text.extend_from_slice(value);
        }
        self.text.push(b'}');
    }

    /// Adds the operations that turn the canonical JSON `before` into `after`, at the JSON
    /// pointer `path` ("" for the root).
    pub fn diff(&mut self, path: &str, before: &[u8], after: &[u8]) {
        if before == after {
            return;
        }
        let (text, operations) = (self.text.len(), self.operations);
        if self.diff_objects(path, before, after).is_none() {
            // Not two objects (or not canonical JSON after all): whatever was written for their
            // members goes, and the value is replaced whole.
            self.text.truncate(text);
            self.operations = operations;
            self.operation("replace", path, Some(after));
        }
    }

    /// The operations between two objects, walking both members in step (their keys come sorted)
    /// without collecting them; `None` if either is not an object.
    fn diff_objects(&mut self, path: &str, before: &[u8], after: &[u8]) -> Option<()> {
        let (mut old, mut new) = (Cursor::open(before)?, Cursor::open(after)?);
        let (mut a, mut b) = (old.key()?, new.key()?);
        let mut child = String::with_capacity(path.len() + 16);
        loop {
            let order = match (&a, &b) {
                (None, None) => return Some(()),
                (Some(a), Some(b)) => compare_keys(a.0, b.0)?,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
            };
            child.clear();
            child.push_str(path);
            child.push('/');
            match order {
                Ordering::Less => {
                    let (key, start) = a.take()?;
                    push_token(&mut child, &decode_key(key)?);
                    self.operation("remove", &child, None);
                    old.finish(skip_value(before, start)?)?;
                    a = old.key()?;
                }
                Ordering::Greater => {
                    let (key, start) = b.take()?;
                    let end = skip_value(after, start)?;
                    push_token(&mut child, &decode_key(key)?);
                    self.operation("add", &child, Some(&after[start..end]));
                    new.finish(end)?;
                    b = new.key()?;
                }
                Ordering::Equal => {
                    let ((key, old_start), (_, new_start)) = (a.take()?, b.take()?);
                    let old_end = skip_value(before, old_start)?;
                    let value = &before[old_start..old_end];
                    // Most members are unchanged: when `after` has the same bytes there, followed by
                    // the end of the member, it is the same value (a JSON value's text ends where
                    // it ends), and `after` need not be scanned.
                    let same = after[new_start..].starts_with(value) && matches!(after.get(new_start + value.len()), Some(b',' | b'}'));
                    let new_end = if same { new_start + value.len() } else { skip_value(after, new_start)? };
                    if !same {
                        push_token(&mut child, &decode_key(key)?);
                        self.diff(&child, value, &after[new_start..new_end]);
                    }
                    old.finish(old_end)?;
                    new.finish(new_end)?;
                    a = old.key()?;
                    b = new.key()?;
                }
            }
        }
    }
}

/// Reads a canonical JSON object's members in order, one at a time.
struct Cursor<'a> {
    json: &'a [u8],
    /// Where the next member's key starts, or the closing brace.
    at: usize,
}

impl<'a> Cursor<'a> {
    /// `None` if `json` is not an object.
    fn open(json: &'a [u8]) -> Option<Self> {
        (json.first() == Some(&b'{')).then_some(Self { json, at: 1 })
    }

    /// The next member's key (quoted, as written: most keys are only compared, and decoded only
    /// for the path of an operation) and where its value starts; `Some(None)` at the closing
    /// brace, `None` if the text is not an object's.
    fn key(&mut self) -> Option<Option<(&'a [u8], usize)>> {
        if self.json.get(self.at) == Some(&b'}') {
            return Some(None);
        }
        let key_end = skip_string(self.json, self.at)?;
        let key = &self.json[self.at..key_end];
        if self.json.get(key_end) != Some(&b':') {
            return None;
        }
        Some(Some((key, key_end + 1)))
    }

    /// Moves past the current member, whose value ends at `end`.
    fn finish(&mut self, end: usize) -> Option<()> {
        match self.json.get(end) {
            Some(b',') => self.at = end + 1,
            Some(b'}') => self.at = end,
            _ => return None,
        }
        Some(())
    }
}

/// A JSON pointer reference token: `~` and `/` escaped (RFC 6901).
fn push_token(path: &mut String, key: &str) {
    for c in key.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

/// The order of two quoted keys: that of their bytes, decoded first only when one has an escape
/// (canonical JSON sorts keys by their decoded text).
fn compare_keys(a: &[u8], b: &[u8]) -> Option<Ordering> {
    if a.contains(&b'\\') || b.contains(&b'\\') {
        return Some(decode_key(a)?.as_bytes().cmp(decode_key(b)?.as_bytes()));
    }
    Some(a[1..a.len() - 1].cmp(&b[1..b.len() - 1]))
}

fn decode_key(quoted: &[u8]) -> Option<Cow<'_, str>> {
    let inner = &quoted[1..quoted.len() - 1];
    if inner.contains(&b'\\') {
        serde_json::from_slice::<String>(quoted).ok().map(Cow::Owned)
    } else {
        std::str::from_utf8(inner).ok().map(Cow::Borrowed)
    }
}

/// The index just past the string starting at `i` (which must be `"`).
fn skip_string(json: &[u8], i: usize) -> Option<usize> {
    if json.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    // Strings are most of a state's bytes: jump to the next quote or backslash.
    while let Some(at) = memchr::memchr2(b'"', b'\\', json.get(j..)?) {
        j += at;
        if json[j] == b'"' {
            return Some(j + 1);
        }
        j += 2;
    }
    None
}

/// The index just past the value starting at `i` (canonical JSON: no whitespace).
fn skip_value(json: &[u8], i: usize) -> Option<usize> {
    match json.get(i)? {
        b'"' => skip_string(json, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < json.len() {
                match json[j] {
                    b'"' => {
                        j = skip_string(json, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < json.len() && !matches!(json[j], b',' | b'}' | b']') {
                j += 1;
            }
            Some(j)
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::PatchText;

    fn canonical(v: &Value) -> Vec<u8> {
        serde_json::to_vec(v).unwrap()
    }

    fn applies(before: &Value, after: &Value) -> Result<(), String> {
        let mut patch = PatchText::new();
        patch.diff("", &canonical(before), &canonical(after));
        let ops: json_patch::Patch = serde_json::from_slice(&patch.to_json()).map_err(|e| format!("not a patch: {e}"))?;
        let mut doc = before.clone();
        json_patch::patch(&mut doc, &ops).map_err(|e| format!("does not apply: {e}"))?;
        if &doc != after {
            return Err(format!("leads to {doc}, not {after}"));
        }
        Ok(())
    }

    #[test]
    fn objects_are_compared_member_by_member_and_the_rest_replaced() {
        let before = json!({"a": {"x": 1, "y": [1, 2]}, "gone": true, "s": "a/b~c", "k/~": 1});
        let after = json!({"a": {"x": 2, "y": [1, 2]}, "new": null, "s": "a/b~c", "k/~": 2});
        let mut patch = PatchText::new();
        patch.diff("", &canonical(&before), &canonical(&after));
        let ops: Value = serde_json::from_slice(&patch.to_json()).unwrap();
        assert_eq!(
            ops,
            json!([
                {"op": "replace", "path": "/a/x", "value": 2},
                {"op": "remove", "path": "/gone"},
                {"op": "replace", "path": "/k~1~0", "value": 2},
                {"op": "add", "path": "/new", "value": null},
            ])
        );
        applies(&before, &after).unwrap();
        let mut none = PatchText::new();
        none.diff("/r", b"{\"a\":1}", b"{\"a\":1}");
        assert!(none.is_empty());
    }

    #[test]
    fn text_that_stops_being_an_object_midway_is_replaced_whole() {
        let mut patch = PatchText::new();
        // The member "a" differs and is diffed before "b" turns out not to be JSON: that operation
        // is taken back, and the whole value replaced.
        patch.diff("/r", br#"{"a":1,"b":2}"#, br#"{"a":2,"b"}"#);
        assert_eq!(patch.len(), 1);
        let text = String::from_utf8(patch.to_json()).unwrap();
        assert_eq!(text, r#"[{"op":"replace","path":"/r","value":{"a":2,"b"}}]"#);
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            // Numbers that are prefixes of one another ("1", "12"): an unchanged member is
            // recognized by its bytes and the byte after them.
            (0i64..40).prop_map(|n| json!(n)),
            "[a-c~/\"\\\\]{0,3}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-c~/\"\\\\é]{0,3}", inner, 0..5).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_patch_leads_from_any_value_to_any_other(before in arb_json(), after in arb_json()) {
            prop_assert!(applies(&before, &after).is_ok(), "{:?}", applies(&before, &after));
        }
    }
}
