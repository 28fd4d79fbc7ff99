//! Converts events written at older schema versions to the current ones, on read.

use serde_json::{Value, json};
use vestibule_store::Upcaster;

use crate::session::Event;

#[derive(Debug, Default, Clone, Copy)]
pub struct SessionUpcaster;

impl Upcaster for SessionUpcaster {
    fn upcast(&self, event_type: &str, schema_version: u32, payload: Value) -> Result<(u32, Value), String> {
        let current = Event::schema_version(event_type);
        if schema_version > current {
            return Err(format!("{event_type} v{schema_version} is newer than this build knows (v{current}); upgrade Vestibule"));
        }
        let mut version = schema_version;
        let mut payload = payload;
        while version < current {
            payload = match (event_type, version) {
                // v1: { id, rdns } -> v2: { wallet: { id, rdns, name } }; v1 recorded no name.
                ("RecentWalletUsed", 1) => {
                    let id = payload.get("id").and_then(Value::as_str).ok_or("RecentWalletUsed v1 has no id")?;
                    let rdns = payload.get("rdns").and_then(Value::as_str);
                    let mut wallet = json!({ "id": id, "name": rdns.unwrap_or(id) });
                    if let Some(rdns) = rdns {
                        wallet["rdns"] = json!(rdns);
                    }
                    json!({ "wallet": wallet })
                }
                // v1 typed `params.switchToChain` as a CAIP-2 network id; v2 names the namespace.
                ("Navigated", 1) => {
                    let mut payload = payload;
                    if let Some(chain) = payload.pointer_mut("/params/switchToChain") {
                        let namespace = chain.as_str().map(|c| c.split(':').next().unwrap_or(c).to_string());
                        *chain = namespace.map(Value::String).ok_or("Navigated v1: switchToChain is not a string")?;
                    }
                    payload
                }
                _ => return Err(format!("no upcaster for {event_type} v{version}")),
            };
            version += 1;
        }
        Ok((version, payload))
    }
}
