//! The query-string extractor and path parameters: every rejection names the parameter at
//! fault.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use super::field_path;
use crate::api::problem::Problem;
use crate::error::FieldError;

/// Query string, with the offending parameter named on failure.
#[derive(Debug)]
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        check_query_controls(query)?;
        let parse =
            || serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        // Read plainly first; only a query that fails is read again, tracking the path, to
        // name the parameter at fault (the same input fails the same way).
        if let Ok(value) = T::deserialize(parse()) {
            return Ok(Query(value));
        }
        serde_path_to_error::deserialize(parse())
            .map(Query)
            .map_err(|err| {
                let path = err.path().to_string();
                let message = err.into_inner().to_string();
                let field = match field_path(&path, &message).as_str() {
                    "body" => "query".to_string(),
                    other => other.to_string(),
                };
                Problem::invalid(vec![FieldError::new(field, message)])
            })
    }
}

/// A path segment that must be a UUID.
pub fn uuid_param(name: &str, raw: &str) -> Result<Uuid, Problem> {
    Uuid::parse_str(raw).map_err(|_| {
        Problem::invalid(vec![FieldError::new(
            name,
            format!("{raw:?} is not a UUID"),
        )])
    })
}

/// Refuses control characters in a query parameter, naming it.
fn check_query_controls(query: &str) -> Result<(), Problem> {
    // Without `%` escapes a query decodes to its own visible characters (`+` to a space): no
    // control character can come out, and the usual query is not parsed twice.
    if query.bytes().all(|b| b.is_ascii_graphic() && b != b'%') {
        return Ok(());
    }
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        if name.chars().chain(value.chars()).any(char::is_control) {
            return Err(Problem::invalid(vec![FieldError::new(
                name.chars().filter(|c| !c.is_control()).collect::<String>(),
                "must not contain control characters (NUL, ESC, BEL, ...)",
            )]));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_control_characters_are_refused_and_plain_queries_pass_unparsed() {
        for query in [
            "",
            "a=b",
            "manufacturer=wiwynn&serial_number=S-1",
            "q=a+b",
            "x=~!*()",
        ] {
            assert!(check_query_controls(query).is_ok(), "{query}");
        }
        for query in [
            "name=g%00",
            "a=%1B%5B31m",
            "a=%7F",
            "a=%C2%85",
            "%07=x",
            "a=b&c=%0A",
        ] {
            assert!(check_query_controls(query).is_err(), "{query}");
        }
        // Escaped but harmless text still passes the full check.
        assert!(check_query_controls("a=%41%20b").is_ok());
    }

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Asked {
        limit: u32,
    }

    #[tokio::test]
    async fn a_query_that_fails_names_its_parameter() {
        let (mut parts, ()) = axum::http::Request::get("/x?limit=many")
            .body(())
            .unwrap()
            .into_parts();
        let Err(problem) = Query::<Asked>::from_request_parts(&mut parts, &()).await else {
            panic!("`many` is not a number");
        };
        let body = serde_json::to_value(&problem).unwrap();
        assert_eq!(body["errors"][0]["field"], "limit", "{body}");
    }
}
