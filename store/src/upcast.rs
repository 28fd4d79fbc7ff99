/// Converts stored events of an older schema version to the current one, on read.
///
/// The log is never rewritten: old records stay as written and are upcast every time they are read.
/// The domain supplies the implementation; this crate only calls it.
pub trait Upcaster: Send + Sync + 'static {
    /// Upcast `payload`, written as `event_type` at `schema_version`, to the current version.
    /// Returns the current version and the converted payload, or a reason it cannot be converted
    /// (reported as [`crate::StoreError::Corrupt`] with the record's session and seq).
    fn upcast(&self, event_type: &str, schema_version: u32, payload: serde_json::Value) -> Result<(u32, serde_json::Value), String>;
}

/// For callers with a single schema version.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoUpcasting;

impl Upcaster for NoUpcasting {
    fn upcast(&self, _event_type: &str, schema_version: u32, payload: serde_json::Value) -> Result<(u32, serde_json::Value), String> {
        Ok((schema_version, payload))
    }
}
