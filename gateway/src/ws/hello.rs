//! Reading the first frame: a `hello`, whose `options` are read apart from the rest so that a
//! wrong option is reported as `invalid_options` naming the field, like the checks serde cannot
//! make (`SessionOptions::validate`).

use serde_json::Value;
use vestibule_actors::model::options::{OptionsError, SessionOptions};
use vestibule_actors::protocol::ClientMessage;

#[derive(Debug, Clone, PartialEq)]
pub struct Hello {
    pub protocol: u32,
    pub project_id: String,
    pub session_id: Option<String>,
    pub resume_token: Option<String>,
    /// The client's last applied seq. 0 means it has applied nothing (no state a client ever had is
    /// at seq 0: a session starts at 1), so it is read as "send the whole state".
    pub last_seq: Option<u64>,
    pub options: Option<SessionOptions>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum HelloError {
    /// Not a `hello` at all, or a malformed one.
    NotHello(String),
    /// A `hello` whose `options` do not read as session options.
    Options(OptionsError),
}

pub fn parse_hello(text: &str) -> Result<Hello, HelloError> {
    let not_hello = |e: &dyn std::fmt::Display| HelloError::NotHello(format!("the first message must be hello: {e}"));
    let mut value: Value = serde_json::from_str(text).map_err(|e| not_hello(&e))?;
    let options = match value.as_object_mut() {
        Some(fields) if fields.get("type").and_then(Value::as_str) == Some("hello") => fields.remove("options"),
        _ => return Err(HelloError::NotHello("the first message must be hello".into())),
    };
    let ClientMessage::Hello { protocol, project_id, session_id, resume_token, last_seq, options: _ } =
        serde_json::from_value(value).map_err(|e| not_hello(&e))?
    else {
        return Err(HelloError::NotHello("the first message must be hello".into()));
    };
    let options = match options {
        None | Some(Value::Null) => None,
        // serde reads a struct from an array too, field by field in order: `[["eip155:1"]]` would
        // be read as `{"networks": ["eip155:1"]}`.
        Some(options) if !options.is_object() => {
            let message = format!("expected an object, found {}", json_type(&options));
            return Err(HelloError::Options(OptionsError { field: "options".into(), message }));
        }
        Some(options) => Some(serde_path_to_error::deserialize::<_, SessionOptions>(options).map_err(|e| {
            let field = field_name(e.path());
            HelloError::Options(OptionsError { field, message: e.into_inner().to_string() })
        })?),
    };
    Ok(Hello { protocol, project_id, session_id, resume_token, last_seq: last_seq.filter(|&seq| seq > 0), options })
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The field an options refusal names, written as `siwx.required` or `networks[0]`: the whole
/// `options` when the refusal is about them as a whole. A key that is empty or holds `.` or `[` is
/// written as its JSON string (`""`, `"a.b"`), so that no name is empty and none reads as a path it
/// is not (`Path`'s own `Display` writes an empty key as nothing at all).
fn field_name(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut field = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => field.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !field.is_empty() {
                    field.push('.');
                }
                if key.is_empty() || key.contains(['.', '[', '"']) {
                    field.push_str(&Value::from(key.as_str()).to_string());
                } else {
                    field.push_str(key);
                }
            }
            // A map's key that is not one of its keys' values (`defaultAccountTypes.nope`): the
            // message names the key, the field is the map.
            Segment::Unknown => {}
        }
    }
    if field.is_empty() { "options".to_string() } else { field }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hello_reads_with_its_options() {
        let hello = parse_hello(r#"{"type":"hello","protocol":2,"projectId":"p","options":{"networks":["eip155:1"]}}"#).unwrap();
        assert_eq!((hello.protocol, hello.project_id.as_str()), (2, "p"));
        assert_eq!(hello.options.unwrap().networks.len(), 1);
    }

    #[test]
    fn a_wrong_type_inside_the_options_names_the_field() {
        let e = parse_hello(r#"{"type":"hello","protocol":2,"projectId":"p","options":{"networks":[1]}}"#).unwrap_err();
        let HelloError::Options(e) = e else { panic!("{e:?}") };
        assert_eq!(e.field, "networks[0]");
        let e = parse_hello(r#"{"type":"hello","protocol":2,"projectId":"p","options":{"siwx":{"required":"yes"}}}"#).unwrap_err();
        assert!(matches!(&e, HelloError::Options(o) if o.field == "siwx.required"), "{e:?}");
        let e = parse_hello(r#"{"type":"hello","protocol":2,"projectId":"p","options":{"netwroks":[]}}"#).unwrap_err();
        assert!(matches!(&e, HelloError::Options(o) if o.field == "netwroks" && o.message.contains("unknown field")), "{e:?}");
        let e = parse_hello(r#"{"type":"hello","protocol":2,"projectId":"p","options":7}"#).unwrap_err();
        assert!(matches!(&e, HelloError::Options(o) if o.field == "options"), "{e:?}");
        let e = parse_hello(r#"{"type":"hello","protocol":2,"projectId":"p","options":[["eip155:1"]]}"#).unwrap_err();
        assert!(matches!(&e, HelloError::Options(o) if o.field == "options" && o.message.contains("an array")), "{e:?}");
        let e =
            parse_hello(r#"{"type":"hello","protocol":2,"projectId":"p","options":{"defaultAccountTypes":{"nope":"eoa"}}}"#).unwrap_err();
        assert!(matches!(&e, HelloError::Options(o) if o.field == "defaultAccountTypes" && o.message.contains("nope")), "{e:?}");
    }

    #[test]
    fn an_option_whose_name_is_empty_or_looks_like_a_path_is_named_as_a_json_string() {
        // An empty key once made a refusal that named no field (the ws_frame fuzzer found it).
        let e = parse_hello(r#"{"type":"hello","protocol":2,"projectId":"p","options":{"":1}}"#).unwrap_err();
        assert!(matches!(&e, HelloError::Options(o) if o.field == r#""""# && o.message.contains("unknown field")), "{e:?}");
        let e = parse_hello(r#"{"type":"hello","protocol":2,"projectId":"p","options":{"siwx":{"":1}}}"#).unwrap_err();
        assert!(matches!(&e, HelloError::Options(o) if o.field == r#"siwx."""#), "{e:?}");
        let e = parse_hello(r#"{"type":"hello","protocol":2,"projectId":"p","options":{"siwx.required":1}}"#).unwrap_err();
        assert!(matches!(&e, HelloError::Options(o) if o.field == r#""siwx.required""#), "{e:?}");
    }

    #[test]
    fn anything_else_is_not_a_hello() {
        for text in
            ["{not json", "[]", r#"{"type":"ack","seq":1}"#, r#"{"type":"hello","protocol":"one","projectId":"p"}"#, r#"{"type":"hello"}"#]
        {
            assert!(matches!(parse_hello(text), Err(HelloError::NotHello(_))), "{text}");
        }
    }

    #[test]
    fn last_seq_zero_asks_for_the_whole_state() {
        let hello = parse_hello(r#"{"type":"hello","protocol":2,"projectId":"p","sessionId":"s","resumeToken":"t","lastSeq":0}"#).unwrap();
        assert_eq!(hello.last_seq, None);
        let hello = parse_hello(r#"{"type":"hello","protocol":2,"projectId":"p","sessionId":"s","resumeToken":"t","lastSeq":3}"#).unwrap();
        assert_eq!(hello.last_seq, Some(3));
    }
}
