//! The JSON Patch (RFC 6902) between two canonical JSON texts, computed on their bytes: objects are
//! compared member by member (both sides list their keys in the same sorted order), equal byte
//! ranges are skipped without looking inside, a key on one side only is an `add` or a `remove`, and
//! anything else that differs (a scalar, an array, a change of type) is a `replace` carrying the
//! new bytes as they are. No JSON value is built on either side; the patch is written as JSON text.
//!
//! The result is a valid patch from `before` to `after` for any RFC 6902 client; it is coarser
//! than a minimal one only inside arrays (an array that differs is replaced whole).

use std::borrow::Cow;

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
        let (Some(old), Some(new)) = (members(before), members(after)) else {
            self.operation("replace", path, Some(after));
            return;
        };
        let (mut i, mut j) = (0, 0);
        let mut child = String::with_capacity(path.len() + 16);
        while i < old.len() || j < new.len() {
            let order = match (old.get(i), new.get(j)) {
                (Some(a), Some(b)) => a.key.as_bytes().cmp(b.key.as_bytes()),
                (Some(_), None) => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            child.clear();
            child.push_str(path);
            child.push('/');
            match order {
                std::cmp::Ordering::Less => {
                    push_token(&mut child, &old[i].key);
                    self.operation("remove", &child, None);
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    push_token(&mut child, &new[j].key);
                    self.operation("add", &child, Some(new[j].value));
                    j += 1;
                }
                std::cmp::Ordering::Equal => {
                    if old[i].value != new[j].value {
                        push_token(&mut child, &new[j].key);
                        let path = child.clone();
                        self.diff(&path, old[i].value, new[j].value);
                    }
                    i += 1;
                    j += 1;
                }
            }
        }
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

struct Member<'a> {
    key: Cow<'a, str>,
    value: &'a [u8],
}

/// The members of a canonical JSON object, in their (sorted) order; `None` if it is not an object.
fn members(json: &[u8]) -> Option<Vec<Member<'_>>> {
    if json.first() != Some(&b'{') {
        return None;
    }
    let mut out = Vec::new();
    let mut i = 1;
    if json.get(i) == Some(&b'}') {
        return Some(out);
    }
    loop {
        let key_end = skip_string(json, i)?;
        let key = decode_key(&json[i..key_end])?;
        if json.get(key_end) != Some(&b':') {
            return None;
        }
        let value_start = key_end + 1;
        let value_end = skip_value(json, value_start)?;
        out.push(Member { key, value: &json[value_start..value_end] });
        match json.get(value_end) {
            Some(b',') => i = value_end + 1,
            Some(b'}') => return Some(out),
            _ => return None,
        }
    }
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

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (0i64..4).prop_map(|n| json!(n)),
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
