//! Request bodies: JSON and YAML read into a type or a document, refused by content type,
//! charset, size or shape with a problem+json naming the field at fault.

use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, StatusCode, header};
use bytes::Bytes;
use serde::de::DeserializeOwned;

use super::field_path;
use crate::api::problem::Problem;
use crate::error::{Code, FieldError};

/// JSON body. Malformed JSON, wrong types and unknown fields become 400s naming the JSON path;
/// a body over the size limit is a 413 and a non-JSON content type a 415.
#[derive(Debug)]
pub struct Json<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Json<T> {
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(req.headers()) {
            return Err(Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Code::UnsupportedMediaType,
                "expected a JSON body with Content-Type: application/json",
            ));
        }
        check_charset(req.headers())?;
        let bytes = read_body(req, state).await?;
        // Every request body is an object; serde would otherwise read an array as a struct's
        // fields in order.
        if bytes
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|b| *b != b'{')
        {
            return Err(Problem::invalid(vec![FieldError::new(
                "body",
                "expected a JSON object",
            )]));
        }
        if may_hold_controls(&bytes)
            && let Ok(value) = serde_json::from_slice::<serde_json::Value>(&bytes)
        {
            check_controls(&value)?;
        }
        parse_json(&bytes).map(Json)
    }
}

/// Refuses a body declared in another charset than UTF-8 (JSON is UTF-8; reading UTF-16 as
/// UTF-8 would store garbage).
fn check_charset(headers: &HeaderMap) -> Result<(), Problem> {
    let Some(content_type) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return Ok(());
    };
    for param in content_type.split(';').skip(1) {
        let Some((name, value)) = param.split_once('=') else {
            continue;
        };
        if name.trim().eq_ignore_ascii_case("charset") {
            let charset = value.trim().trim_matches('"').to_ascii_lowercase();
            if charset != "utf-8" && charset != "utf8" {
                return Err(Problem::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    Code::UnsupportedMediaType,
                    format!("the body must be UTF-8, not {charset:?}"),
                ));
            }
        }
    }
    Ok(())
}

/// Whether a JSON text can hold a control character: only as a `\u` escape (JSON forbids them
/// raw) or as a raw C1 character (U+0080..U+009F, UTF-8 `C2 80`..`C2 9F`). Most bodies hold
/// neither, and skip the second parse.
fn may_hold_controls(bytes: &[u8]) -> bool {
    bytes
        .windows(2)
        .any(|w| w[0] == b'\\' || (w[0] == 0xC2 && (0x80..=0x9F).contains(&w[1])))
}

/// Control characters (NUL, ESC, BEL, DEL, C1 ...) are refused in every string of a body,
/// naming the field: they have no place in names, serials or addresses, PostgreSQL cannot
/// store NUL, and printed raw they drive terminals. Free text (`description`) may hold line
/// breaks and tabs.
fn check_controls(value: &serde_json::Value) -> Result<(), Problem> {
    let mut errors = Vec::new();
    walk_controls(value, "", false, &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Problem::invalid(errors))
    }
}

fn walk_controls(value: &serde_json::Value, path: &str, free: bool, out: &mut Vec<FieldError>) {
    match value {
        serde_json::Value::String(s) => {
            let bad = s
                .chars()
                .any(|c| c.is_control() && !(free && matches!(c, '\n' | '\r' | '\t')));
            if bad && out.len() < 20 {
                let field = if path.is_empty() { "body" } else { path };
                out.push(FieldError::new(
                    field,
                    "must not contain control characters (NUL, ESC, BEL, ...)",
                ));
            }
        }
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk_controls(item, &format!("{path}[{i}]"), free, out);
            }
        }
        serde_json::Value::Object(map) => {
            for (key, item) in map {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                if key.chars().any(char::is_control) && out.len() < 20 {
                    out.push(FieldError::new(
                        child.clone(),
                        "a key must not contain control characters",
                    ));
                }
                walk_controls(item, &child, key == "description", out);
            }
        }
        _ => {}
    }
}

/// The body's bytes; too large is a 413, anything else unreadable a 400.
async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, Problem> {
    Bytes::from_request(req, state).await.map_err(|rejection| {
        let status = rejection.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            Problem::new(
                status,
                Code::PayloadTooLarge,
                "the request body is larger than this server accepts",
            )
        } else {
            Problem::new(
                StatusCode::BAD_REQUEST,
                Code::InvalidBody,
                rejection.body_text(),
            )
        }
    })
}

fn is_yaml(headers: &HeaderMap) -> bool {
    media_type(headers).is_some_and(|mime| {
        matches!(
            mime.as_str(),
            "application/yaml" | "application/x-yaml" | "text/yaml" | "text/x-yaml"
        )
    })
}

/// A JSON or YAML object body, untyped: for inputs the domain validates field by field so that
/// every problem is reported at once.
#[derive(Debug)]
pub struct Document(pub serde_json::Value);

impl<S: Send + Sync> FromRequest<S> for Document {
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let yaml = is_yaml(req.headers());
        if !yaml && !is_json(req.headers()) {
            return Err(Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Code::UnsupportedMediaType,
                "expected a body with Content-Type: application/json or application/yaml",
            ));
        }
        if !yaml {
            check_charset(req.headers())?;
        }
        let bytes = read_body(req, state).await?;
        let parsed: Result<serde_json::Value, String> = if yaml {
            serde_yaml::from_slice(&bytes).map_err(|e| format!("not valid YAML: {e}"))
        } else {
            serde_json::from_slice(&bytes).map_err(|e| format!("not valid JSON: {e}"))
        };
        match parsed {
            Ok(value) if value.is_object() => {
                check_controls(&value)?;
                Ok(Document(value))
            }
            Ok(_) => Err(Problem::invalid(vec![FieldError::new(
                "body",
                "expected an object",
            )])),
            Err(message) => Err(Problem::invalid(vec![FieldError::new("body", message)])),
        }
    }
}

/// An optional JSON body: no body at all is `None`; anything else is read as [`Json`] reads it.
#[derive(Debug)]
pub struct MaybeJson<T>(pub Option<T>);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for MaybeJson<T> {
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let declared_empty = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() == b"0");
        if declared_empty
            || (!is_json(req.headers()) && req.headers().get(header::CONTENT_TYPE).is_none())
        {
            let (parts, body) = req.into_parts();
            let bytes = Bytes::from_request(Request::from_parts(parts, body), state)
                .await
                .map_err(|r| {
                    Problem::new(StatusCode::BAD_REQUEST, Code::InvalidBody, r.body_text())
                })?;
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return Ok(Self(None));
            }
            return Err(Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Code::UnsupportedMediaType,
                "expected no body, or a JSON body with Content-Type: application/json",
            ));
        }
        Json::<T>::from_request(req, state)
            .await
            .map(|Json(body)| Self(Some(body)))
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    media_type(headers).is_some_and(|mime| {
        mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
    })
}

/// The `Content-Type`'s media type without its parameters, trimmed and lower-cased.
fn media_type(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let mime = value.split(';').next()?;
    Some(mime.trim().to_ascii_lowercase())
}

/// Deserializes JSON, reporting the path of the first bad field. Text after the object (a second
/// object, stray characters) is refused: the body is one JSON value.
fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Problem> {
    // Read plainly first; only a body that fails is read again, tracking the path, to name the
    // field at fault (the same input fails the same way).
    if let Ok(value) = serde_json::from_slice(bytes) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let tracked = serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let field = if inner.is_syntax() || inner.is_eof() {
            "body".to_string()
        } else {
            field_path(&path, &serde_message(&inner))
        };
        Problem::invalid(vec![FieldError::new(field, serde_message(&inner))])
    })?;
    // What the plain read refused and the tracked one took can only be trailing text.
    de.end()
        .map_err(|e| Problem::invalid(vec![FieldError::new("body", serde_message(&e))]))?;
    Ok(tracked)
}

/// serde_json's message without the " at line L column C" it appends: the field path says more.
fn serde_message(error: &serde_json::Error) -> String {
    let message = error.to_string();
    match message.split_once(" at line ") {
        Some((head, _)) => head.to_string(),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Named {
        name: String,
        count: Option<u32>,
    }

    fn field_of(problem: &Problem) -> String {
        let body = serde_json::to_value(problem).unwrap();
        body["errors"][0]["field"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    #[test]
    fn a_good_body_is_read_and_a_bad_one_names_its_field() {
        let good: Named = parse_json(br#"{"name": "r1", "count": 3}"#).unwrap();
        assert_eq!(
            good,
            Named {
                name: "r1".into(),
                count: Some(3)
            }
        );
        let cases: [(&[u8], &str); 5] = [
            (br#"{"name": "r1", "count": "many"}"#, "count"),
            (br#"{"count": 1}"#, "name"),
            (br#"{"name": "r1", "colour": 1}"#, "colour"),
            (br#"{"name": "r1""#, "body"),
            (br#"{"name": "r1"} {"name": "r2"}"#, "body"),
        ];
        for (text, field) in cases {
            let problem = parse_json::<Named>(text).expect_err(&String::from_utf8_lossy(text));
            assert_eq!(
                field_of(&problem),
                field,
                "{}",
                String::from_utf8_lossy(text)
            );
        }
    }
}
