//! How a state travels: its canonical JSON, its hash, and the JSON Patch (RFC 6902) between two states.
//!
//! Canonical JSON is serde_json's compact form of the state with object keys sorted (serde_json's
//! `Value` keeps keys in a BTreeMap). The browser computes the same bytes from its mirror (sorted
//! keys, `JSON.stringify`), so equal states give equal hashes. The state holds no floating-point
//! numbers, so both sides print every number identically.
//!
//! The state's top-level fields are [`Region`]s. Because the canonical form sorts keys, the whole
//! state's canonical JSON is `{"<key>":<region>,…}` with the regions in [`Region::ALL`] order, so
//! [`CanonicalState`] keeps each region's canonical bytes and, after a decision, re-serializes only
//! the regions its events touched ([`canonical`]: written straight from the typed state, no JSON
//! value in between), and the diff compares the touched regions' bytes ([`patch`])
//! (`docs/decisions/0308-region-cached-canonical-json.md`).
//!
//! The state hash is two-level, so that it too costs what a decision changed, not the state's
//! size (decision 0311): each top-level member's canonical JSON is hashed on its own, and the state
//! hash is the first 16 hex digits of SHA-256 over the canonical JSON of the object that maps each
//! top-level key to the lowercase hex SHA-256 of its value (see [`state_hash`]). A decision hashes
//! the regions it changed and that small object. The browser's mirror keeps the members' hashes the
//! same way.

pub mod canonical;
pub mod patch;

use std::sync::Arc;

use sha2::{Digest, Sha256};

pub use self::canonical::to_canonical_vec;
pub use self::patch::PatchText;
use crate::session::{Region, Regions, SessionState};

pub fn to_value(state: &SessionState) -> serde_json::Value {
    serde_json::to_value(state).expect("session state serializes")
}

pub fn canonical_json(value: &serde_json::Value) -> String {
    serde_json::to_string(value).expect("a JSON value serializes")
}

/// The state hash of a state (a JSON object): the first 16 hex digits of SHA-256 over the
/// canonical JSON of `{"<key>":"<hex SHA-256 of the member's canonical JSON>",…}`, one member per
/// top-level key. As collision-resistant as hashing the whole text (SHA-256 at both levels); a
/// consistency check, not a secret. A value that is not an object hashes as its canonical JSON.
pub fn state_hash(value: &serde_json::Value) -> String {
    let serde_json::Value::Object(members) = value else { return legacy_state_hash(value) };
    let mut digests = Sha256::new();
    digests.update(b"{");
    for (i, (key, member)) in members.iter().enumerate() {
        if i > 0 {
            digests.update(b",");
        }
        digests.update(&serde_json::to_vec(key).expect("a string serializes"));
        digests.update(b":\"");
        digests.update(hex::encode(Sha256::digest(value_json(member))).as_bytes());
        digests.update(b"\"");
    }
    digests.update(b"}");
    hex::encode(&digests.finalize()[..8])
}

/// The state hash as protocol 1 defined it (before decision 0311): the first 16 hex digits of
/// SHA-256 over the whole state's canonical JSON. Logs written before then carry it as their
/// events' checksums; `replay --verify` accepts it for them.
pub fn legacy_state_hash(value: &serde_json::Value) -> String {
    let digest = Sha256::digest(canonical_json(value).as_bytes());
    hex::encode(&digest[..8])
}

/// SHA-256 of one region's canonical bytes (the state hash's object holds it as lowercase hex).
type RegionDigest = [u8; 32];

fn region_digest(bytes: &[u8]) -> RegionDigest {
    Sha256::digest(bytes).into()
}

pub fn patch(before: &serde_json::Value, after: &serde_json::Value) -> json_patch::Patch {
    json_patch::diff(before, after)
}

/// One region of a state as a JSON value.
pub fn region_value(state: &SessionState, region: Region) -> serde_json::Value {
    serde_json::from_slice(&region_json(state, region)).expect("canonical JSON parses")
}

/// The canonical JSON of one region of a state.
pub fn region_json(state: &SessionState, region: Region) -> Vec<u8> {
    let bytes = match region {
        Region::ConnectView => to_canonical_vec(&state.connect_view),
        Region::Connection => to_canonical_vec(&state.connection),
        Region::Modal => to_canonical_vec(&state.modal),
        Region::Networks => to_canonical_vec(&state.networks),
        Region::Options => to_canonical_vec(&state.options),
        Region::Origin => to_canonical_vec(&state.origin),
        Region::Project => to_canonical_vec(&state.project),
        Region::Requests => to_canonical_vec(&state.requests),
        Region::Router => to_canonical_vec(&state.router),
        Region::Siwx => to_canonical_vec(&state.siwx),
        Region::Started => to_canonical_vec(&state.started),
        Region::Toasts => to_canonical_vec(&state.toasts),
        Region::Activity => to_canonical_vec(&state.activity),
        Region::Balances => to_canonical_vec(&state.balances),
        Region::ChainService => to_canonical_vec(&state.chain_service),
        Region::NetworkSwitch => to_canonical_vec(&state.network_switch),
        Region::Send => to_canonical_vec(&state.send),
        Region::HostRequests => to_canonical_vec(&state.host_requests),
        Region::Embedded => to_canonical_vec(&state.embedded),
    };
    bytes.expect("session state serializes")
}

/// A JSON value's canonical bytes. serde_json keeps a `Value`'s objects in a `BTreeMap` (the
/// workspace does not enable its `preserve_order`; `value_objects_are_written_sorted` below
/// checks), so serde_json writes them with their keys already sorted: no reordering pass needed.
fn value_json(value: &serde_json::Value) -> Arc<[u8]> {
    serde_json::to_vec(value).expect("a JSON value serializes").into()
}

/// The canonical JSON of a state, kept per region, so that after a decision only the regions its
/// events touched are serialized again. Cloning it shares the bytes.
///
/// A state the gateway builds has every region. A mirror's state has the regions its gateway sent,
/// which for a gateway of another version may be fewer: those are `absent`, and left out of the
/// JSON and the hash, as a browser's mirror (which hashes the object it holds) leaves them out.
///
/// Each region's hash (see [`state_hash`]) is kept beside its bytes and computed again only when
/// its bytes change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalState {
    regions: [Arc<[u8]>; Region::ALL.len()],
    digests: [RegionDigest; Region::ALL.len()],
    absent: Regions,
}

impl CanonicalState {
    /// Serializes every region of `state`.
    pub fn of(state: &SessionState) -> Self {
        let regions: [Arc<[u8]>; Region::ALL.len()] = Region::ALL.map(|r| region_json(state, r).into());
        let digests = regions.each_ref().map(|bytes| region_digest(bytes));
        Self { regions, digests, absent: Regions::NONE }
    }

    /// Builds it from a whole state's JSON value (e.g. a mirror's), region by region; a region the
    /// value has no member for is absent.
    pub fn of_value(value: &serde_json::Value) -> Self {
        let null = region_digest(b"null");
        let mut canonical =
            Self { regions: Region::ALL.map(|_| Arc::from(&b"null"[..])), digests: [null; Region::ALL.len()], absent: Regions::NONE };
        for region in Region::ALL {
            canonical.set_region_of(region, value.get(region.key()));
        }
        canonical
    }

    /// The canonical bytes of one region.
    pub fn region(&self, region: Region) -> &Arc<[u8]> {
        &self.regions[region.index()]
    }

    /// The SHA-256 of one region's canonical bytes, as the state hash uses it.
    pub fn region_digest(&self, region: Region) -> &[u8; 32] {
        &self.digests[region.index()]
    }

    /// Replaces one region's bytes (with bytes shared with another session, say). The caller
    /// promises they are that region's canonical JSON.
    pub fn set_region(&mut self, region: Region, bytes: Arc<[u8]>) {
        if *self.regions[region.index()] != *bytes {
            self.digests[region.index()] = region_digest(&bytes);
        }
        self.regions[region.index()] = bytes;
        self.absent = self.absent.without(region);
    }

    /// Sets one region from a mirror's member for it (`None`: the state has no such member).
    fn set_region_of(&mut self, region: Region, value: Option<&serde_json::Value>) {
        match value {
            Some(value) => {
                // Sized from the region's bytes before: a patched region is about as long, and
                // growing the buffer from serde_json's default copies it several times.
                let mut bytes = Vec::with_capacity(self.regions[region.index()].len() + 64);
                serde_json::to_writer(&mut bytes, value).expect("a JSON value serializes");
                self.set_region(region, bytes.into())
            }
            None => self.absent = self.absent.union(Regions::of(&[region])),
        }
    }

    /// The regions present, in canonical (key) order.
    fn present(&self) -> impl Iterator<Item = Region> + '_ {
        Region::ALL.into_iter().filter(|r| !self.absent.contains(*r))
    }

    /// Re-serializes `regions` of `state`; returns those whose bytes changed, with their bytes
    /// before (for the diff). The rest keep their bytes untouched.
    pub fn update(&mut self, state: &SessionState, regions: Regions) -> Vec<(Region, Arc<[u8]>)> {
        let mut changed = Vec::new();
        for region in regions.iter() {
            let bytes = region_json(state, region);
            if *self.regions[region.index()] != *bytes {
                self.digests[region.index()] = region_digest(&bytes);
                let before = std::mem::replace(&mut self.regions[region.index()], bytes.into());
                changed.push((region, before));
            }
        }
        changed
    }

    /// Feeds the whole state's canonical JSON, piece by piece, to `sink`.
    fn pieces(&self, mut sink: impl FnMut(&[u8])) {
        sink(b"{");
        for (i, region) in self.present().enumerate() {
            if i > 0 {
                sink(b",");
            }
            sink(b"\"");
            sink(region.key().as_bytes());
            sink(b"\":");
            sink(&self.regions[region.index()]);
        }
        sink(b"}");
    }

    /// The whole state's canonical JSON: the same bytes as `canonical_json(&to_value(state))`.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        self.pieces(|p| out.extend_from_slice(p));
        out
    }

    /// Length of the whole state's canonical JSON.
    pub fn len(&self) -> usize {
        // The braces, and per region its quoted key, a colon, its bytes and a comma (one comma
        // fewer than regions).
        let members: usize = self.present().map(|r| r.key().len() + 4 + self.regions[r.index()].len()).sum();
        if members == 0 { 2 } else { 1 + members }
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// Protocol 1's state hash ([`legacy_state_hash`] of the same state): SHA-256 over the whole
    /// canonical JSON, fed from the regions' bytes without copying them. For a client of a gateway
    /// that still speaks protocol 1 (the load harness's `--protocol 1`).
    pub fn legacy_hash(&self) -> String {
        let mut sha = Sha256::new();
        self.pieces(|piece| sha.update(piece));
        hex::encode(&sha.finalize()[..8])
    }

    /// The state hash ([`state_hash`] of the same state), from the regions' hashes kept beside
    /// their bytes: about a kilobyte hashed whatever the state's size.
    pub fn hash(&self) -> String {
        let mut sha = Sha256::new();
        sha.update(b"{");
        for (i, region) in self.present().enumerate() {
            if i > 0 {
                sha.update(b",");
            }
            sha.update(b"\"");
            sha.update(region.key().as_bytes());
            let mut hex = [0u8; 64];
            hex::encode_to_slice(self.digests[region.index()], &mut hex).expect("32 bytes are 64 hex digits");
            sha.update(b"\":\"");
            sha.update(hex);
            sha.update(b"\"");
        }
        sha.update(b"}");
        hex::encode(&sha.finalize()[..8])
    }
}

/// The JSON Patch to `current` from the state whose changed regions had the bytes in `changed` (as
/// [`CanonicalState::update`] returns them); the other regions are the same in both. Paths are from
/// the state's root.
pub fn patch_regions(changed: &[(Region, Arc<[u8]>)], current: &CanonicalState) -> PatchText {
    let mut patch = PatchText::new();
    for (region, before) in changed {
        patch.diff(&format!("/{}", region.key()), before, current.region(*region));
    }
    patch
}

/// A mirror of a session's state as a client keeps it (a JSON value patched by every diff), with
/// the hash check done the way the server computes it: after a patch, only the regions its
/// operations name are serialized again. For the load harness and tests; the browser's mirror
/// is `client/src/mirror/`.
#[derive(Debug, Clone)]
pub struct StateMirror {
    state: serde_json::Value,
    canonical: CanonicalState,
}

impl StateMirror {
    pub fn new(state: serde_json::Value) -> Self {
        let canonical = CanonicalState::of_value(&state);
        Self { state, canonical }
    }

    pub fn state(&self) -> &serde_json::Value {
        &self.state
    }

    pub fn hash(&self) -> String {
        self.canonical.hash()
    }

    /// Protocol 1's state hash of the mirrored state.
    pub fn legacy_hash(&self) -> String {
        self.canonical.legacy_hash()
    }

    /// Applies `patch`, taking its values (no copy of them); on an error the mirror is unusable and
    /// must be rebuilt from a welcome.
    pub fn apply(&mut self, patch: json_patch::Patch) -> Result<(), json_patch::PatchError> {
        let mut touched = Regions::NONE;
        for operation in patch.0 {
            touched = touched.union(regions_of(&operation));
            if let Err(operation) = apply_in_objects(&mut self.state, operation) {
                // Without `patch`'s undo log: on an error the mirror is rebuilt anyway.
                json_patch::patch_unsafe(&mut self.state, std::slice::from_ref(&operation))?;
            }
        }
        for region in touched.iter() {
            self.canonical.set_region_of(region, self.state.get(region.key()));
        }
        Ok(())
    }
}

/// The regions an operation changes: its path's, and a `move`'s source too; every region for an
/// operation on the root (or on a key that is no region).
fn regions_of(operation: &json_patch::PatchOperation) -> Regions {
    let from = match operation {
        json_patch::PatchOperation::Move(m) => Some(&*m.from),
        _ => None,
    };
    let mut touched = Regions::NONE;
    for path in std::iter::once(operation.path()).chain(from) {
        let first = path.tokens().next();
        match first.as_ref().map(|t| t.decoded()).as_deref().and_then(Region::from_key) {
            Some(region) => touched = touched.union(Regions::of(&[region])),
            None => return Regions::ALL,
        }
    }
    touched
}

/// Applies an `add`, `remove` or `replace` whose path runs through objects only (every operation
/// the gateway writes: it replaces arrays whole), walking the path without allocating (json_patch's
/// walk decodes each token into two new strings) and moving the operation's value into place. For
/// anything else (arrays, the root, `move`, `copy`, `test`, a missing member) it gives the operation
/// back with `doc` untouched, for json_patch to apply or refuse with its own error.
fn apply_in_objects(doc: &mut serde_json::Value, operation: json_patch::PatchOperation) -> Result<(), json_patch::PatchOperation> {
    use json_patch::PatchOperation::{Add, Remove, Replace};
    use serde_json::Value;

    fn member<'v>(doc: &'v mut Value, pointer: &json_patch::jsonptr::Pointer) -> Option<&'v mut Value> {
        pointer.tokens().try_fold(doc, |target, token| match target {
            Value::Object(map) => map.get_mut(token.decoded().as_ref()),
            _ => None,
        })
    }
    fn parent_object<'v>(
        doc: &'v mut Value,
        pointer: &json_patch::jsonptr::Pointer,
    ) -> Option<(&'v mut serde_json::Map<String, Value>, String)> {
        let (parent, last) = pointer.split_back()?;
        match member(doc, parent)? {
            Value::Object(map) => Some((map, last.decoded().into_owned())),
            _ => None,
        }
    }
    match operation {
        Replace(op) if !op.path.is_root() => match member(doc, &op.path) {
            Some(target) => {
                *target = op.value;
                Ok(())
            }
            None => Err(Replace(op)),
        },
        Add(op) => match parent_object(doc, &op.path) {
            Some((map, key)) => {
                map.insert(key, op.value);
                Ok(())
            }
            None => Err(Add(op)),
        },
        Remove(op) => match parent_object(doc, &op.path).map(|(map, key)| map.remove(&key)) {
            Some(Some(_)) => Ok(()),
            _ => Err(Remove(op)),
        },
        other => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{to_canonical_vec, value_json};

    /// `value_json` relies on `Value`'s objects being sorted maps: a dependency that turned on
    /// serde_json's `preserve_order` (features unify across the build) would break the hash every
    /// client checks.
    #[test]
    fn value_objects_are_written_sorted() {
        let mut object = serde_json::Map::new();
        for key in ["zeta", "alpha", "Mid", "a/b", "é", "~"] {
            object.insert(key.to_string(), json!({ "z": 1, "a": [{ "y": null, "b": true }] }));
        }
        let value = serde_json::Value::Object(object);
        let bytes = value_json(&value);
        assert_eq!(&*bytes, to_canonical_vec(&value).unwrap().as_slice());
        assert!(std::str::from_utf8(&bytes).unwrap().starts_with(r#"{"Mid":{"a":[{"b":true,"y":null}],"z":1},"a/b":"#));
    }
}

#[cfg(test)]
mod mirror_tests {
    use serde_json::{Value, json};

    use super::StateMirror;

    /// What json_patch itself makes of `ops` on `doc`: the state, or that it refuses.
    fn reference(doc: &Value, ops: &Value) -> Option<Value> {
        let patch: json_patch::Patch = serde_json::from_value(ops.clone()).unwrap();
        let mut doc = doc.clone();
        json_patch::patch(&mut doc, &patch).ok().map(|()| doc)
    }

    /// The mirror's walk through objects gives json_patch's result on every kind of operation, and
    /// refuses what json_patch refuses.
    #[test]
    fn the_mirror_applies_a_patch_as_json_patch_does() {
        let doc = json!({
            "connection": { "status": "connecting", "a/b": { "~x": 1 }, "list": [1, { "k": 2 }] },
            "router": { "current": "Connect" },
        });
        let cases = [
            json!([{ "op": "replace", "path": "/connection/status", "value": "connected" }]),
            json!([{ "op": "replace", "path": "/connection/a~1b/~0x", "value": [1, 2] }]),
            json!([{ "op": "add", "path": "/connection/new", "value": { "z": null } }]),
            json!([{ "op": "add", "path": "/connection/status", "value": 3 }]),
            json!([{ "op": "remove", "path": "/connection/a~1b" }]),
            json!([{ "op": "add", "path": "/connection/list/1", "value": 9 }]),
            json!([{ "op": "replace", "path": "/connection/list/1/k", "value": 3 }]),
            json!([{ "op": "remove", "path": "/connection/list/0" }]),
            json!([{ "op": "move", "from": "/router/current", "path": "/connection/current" }]),
            json!([{ "op": "copy", "from": "/router", "path": "/connection/router" }]),
            json!([{ "op": "test", "path": "/router/current", "value": "Connect" }, { "op": "remove", "path": "/router" }]),
            json!([{ "op": "replace", "path": "", "value": { "router": {} } }]),
            // Refused: a missing member, a missing parent, a failed test, an index out of range.
            json!([{ "op": "replace", "path": "/connection/missing", "value": 1 }]),
            json!([{ "op": "add", "path": "/nowhere/x", "value": 1 }]),
            json!([{ "op": "remove", "path": "/connection/missing" }]),
            json!([{ "op": "test", "path": "/router/current", "value": "Account" }]),
            json!([{ "op": "add", "path": "/connection/list/7", "value": 1 }]),
        ];
        for ops in cases {
            let patch: json_patch::Patch = serde_json::from_value(ops.clone()).unwrap();
            let mut mirror = StateMirror::new(doc.clone());
            let applied = mirror.apply(patch).ok().map(|()| mirror.state().clone());
            assert_eq!(applied, reference(&doc, &ops), "{ops}");
            if let Some(state) = applied {
                assert_eq!(mirror.hash(), StateMirror::new(state.clone()).hash(), "{ops}");
                // Every key of these states is a region: the hash is the whole value's.
                assert_eq!(mirror.hash(), super::state_hash(&state), "{ops}");
            }
        }
    }

    /// A gateway of another version may send a state with fewer regions (one from before the
    /// embedded wallet has no `embedded`): the mirror hashes what it holds, as the browser's mirror
    /// does, not a `null` for each region it was not sent.
    #[test]
    fn a_state_with_fewer_regions_hashes_as_the_value_it_is() {
        let started = crate::session::SessionState::default();
        let mut older = super::to_value(&started);
        for key in ["embedded", "send", "chainService"] {
            older.as_object_mut().unwrap().remove(key);
        }
        let mut mirror = StateMirror::new(older.clone());
        assert_eq!(mirror.hash(), super::state_hash(&older));
        assert_ne!(mirror.hash(), StateMirror::new(super::to_value(&started)).hash(), "the regions left out count");

        let ops = json!([
            { "op": "replace", "path": "/modal/status", "value": "open" },
            { "op": "add", "path": "/send", "value": { "step": "idle" } },
            { "op": "remove", "path": "/toasts" },
        ]);
        let patch: json_patch::Patch = serde_json::from_value(ops.clone()).unwrap();
        mirror.apply(patch).unwrap();
        let expected = reference(&older, &ops).unwrap();
        assert_eq!(mirror.state(), &expected);
        assert_eq!(mirror.hash(), super::state_hash(&expected));
    }

    /// Given a mirror of an older gateway's state (protocol 1, fewer regions), when diffs change
    /// it, then its protocol 1 hash is the whole state's canonical JSON hashed, as that gateway
    /// computes it, and not protocol 2's.
    #[test]
    fn a_mirror_hashes_for_protocol_1_as_a_protocol_1_gateway_does() {
        let mut older = super::to_value(&crate::session::SessionState::default());
        older.as_object_mut().unwrap().remove("embedded");
        let mut mirror = StateMirror::new(older.clone());
        assert_eq!(mirror.legacy_hash(), super::legacy_state_hash(&older));

        let ops = json!([{ "op": "replace", "path": "/modal/status", "value": "open" }, { "op": "remove", "path": "/toasts" }]);
        mirror.apply(serde_json::from_value(ops.clone()).unwrap()).unwrap();
        let expected = reference(&older, &ops).unwrap();
        assert_eq!(mirror.legacy_hash(), super::legacy_state_hash(&expected));
        assert_ne!(mirror.legacy_hash(), mirror.hash(), "the two protocols' hashes differ");
    }
}
