//! The page shell (navigation, assets, skip link), shared snippets (badges, pagers, times) and
//! the one mapping of errors to readable HTML: a problem is shown as a message and its field
//! errors, with its status code, never as raw JSON.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use maud::{DOCTYPE, Markup, html};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::access::Viewer;
use crate::api::problem::Problem;
use crate::error::Code;

/// The navigation, in order: (path, label).
pub const NAV: &[(&str, &str)] = &[
    ("/ui/racks", "Racks"),
    ("/ui/tasks", "Tasks"),
    ("/ui/drift", "Drift"),
    ("/ui/schedules", "Schedules"),
    ("/ui/rules", "Rules"),
    ("/ui/rollouts", "Rollouts"),
    ("/ui/holds", "Holds"),
];

/// Who is signed in, and the sign-out control (a form: signing out changes state).
fn who(viewer: &Viewer) -> Markup {
    let role = viewer.role().map_or("no role", |r| r.as_str());
    html! {
        div.who {
            @if viewer.signed_in {
                span { "Signed in as " strong { (viewer.identity.actor) } " (" (role) ")" }
                @if let Some(csrf) = &viewer.csrf {
                    form method="post" action="/ui/logout" {
                        (csrf_field(csrf))
                        button.secondary type="submit" { "Sign out" }
                    }
                }
            } @else {
                span.muted { "Sign-in is off (FLOW_AUTH=none)" }
            }
        }
    }
}

/// A whole page: `current` is the navigation entry to mark; `viewer` (none on the sign-in
/// and error pages) is shown with a sign-out control.
pub fn layout(title: &str, current: &str, viewer: Option<&Viewer>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Flow" }
                // No favicon request (and no 404 in the browser console).
                link rel="icon" href="data:,";
                // htmx would otherwise add an inline <style>, which the console's
                // Content-Security-Policy refuses (and the browser reports as an error).
                meta name="htmx-config" content=r#"{"includeIndicatorStyles":false}"#;
                link rel="stylesheet" href="/ui/assets/console.css";
                script src="/ui/assets/htmx-2.0.11.js" defer {}
                script src="/ui/assets/htmx-ext-sse-2.2.4.js" defer {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    a.brand href="/ui/racks" { "Flow console" }
                    nav aria-label="Main" {
                        @for (path, label) in NAV {
                            @if *path == current {
                                a href=(path) aria-current="page" { (label) }
                            } @else {
                                a href=(path) { (label) }
                            }
                        }
                    }
                    @if let Some(v) = viewer { (who(v)) }
                }
                main id="main" { (body) }
            }
        }
    }
}

/// A page with status 200.
pub fn ok(markup: Markup) -> Response {
    markup.into_response()
}

/// A readable error box for a problem.
pub fn problem_box(p: &Problem) -> Markup {
    html! {
        div.error role="alert" {
            h2 { (p.title) }
            p { (p.detail) }
            @if !p.errors.is_empty() {
                ul { @for e in &p.errors { li { strong { (e.field) } ": " (e.message) } } }
            }
        }
    }
}

/// A whole error page with the problem's status code.
pub fn error_page(p: Problem) -> Response {
    let status = StatusCode::from_u16(p.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = html! {
        h1 { "Something went wrong" }
        (problem_box(&p))
        p { a href="/ui/racks" { "Back to racks" } }
    };
    (status, layout(&p.title, "", None, body)).into_response()
}

/// What console handlers return: a page, or a problem shown as an error page.
pub type UiResult = Result<Response, UiError>;

/// A problem on its way to becoming an error page.
#[derive(Debug)]
pub struct UiError(pub Problem);

impl From<Problem> for UiError {
    fn from(p: Problem) -> Self {
        Self(p)
    }
}

impl From<crate::error::Error> for UiError {
    fn from(e: crate::error::Error) -> Self {
        Self(e.into())
    }
}

impl IntoResponse for UiError {
    fn into_response(self) -> Response {
        error_page(self.0)
    }
}

/// Parses a query string into one of the API's query types. Empty form fields mean "no
/// filter", so they are dropped first; unknown fields are refused like the API does.
pub fn query<T: DeserializeOwned>(
    raw: Option<&str>,
) -> Result<(T, Vec<(String, String)>), Problem> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw.unwrap_or(""))
        .map_err(|e| Problem::new(StatusCode::BAD_REQUEST, Code::Invalid, e.to_string()))?;
    let kept: Vec<(String, String)> = pairs
        .into_iter()
        .filter(|(_, v)| !v.trim().is_empty())
        .collect();
    let encoded = serde_urlencoded::to_string(&kept).unwrap_or_default();
    let parsed = serde_urlencoded::from_str(&encoded).map_err(|e| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            Code::Invalid,
            format!("bad filter: {e}"),
        )
    })?;
    Ok((parsed, kept))
}

/// The value of one field of a parsed query, or "".
pub fn field<'a>(pairs: &'a [(String, String)], name: &str) -> &'a str {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or("")
}

/// The link to the next page: the same filters with `cursor` replaced.
pub fn next_link(path: &str, pairs: &[(String, String)], cursor: &str) -> String {
    let mut kept: Vec<(&str, &str)> = pairs
        .iter()
        .filter(|(k, _)| k != "cursor")
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    kept.push(("cursor", cursor));
    format!(
        "{path}?{}",
        serde_urlencoded::to_string(&kept).unwrap_or_default()
    )
}

/// Pager under a list: how many are shown (of how many, when the list was counted: the
/// console does not ask, so a page costs the same at any size), "more" and a link to the next
/// page, if any.
pub fn pager(
    path: &str,
    pairs: &[(String, String)],
    shown: usize,
    total: Option<String>,
    next: Option<&str>,
) -> Markup {
    html! {
        div.pager {
            @match (&total, next) {
                (Some(total), _) => span { (shown) " shown of " (total) },
                (None, Some(_)) => span { (shown) " shown, more on the next page" },
                (None, None) => span { (shown) " shown" },
            }
            @if pairs.iter().any(|(k, _)| k == "cursor") {
                a href=(format!("{path}?{}", serde_urlencoded::to_string(pairs.iter().filter(|(k, _)| k != "cursor").collect::<Vec<_>>()).unwrap_or_default())) { "First page" }
            }
            @if let Some(c) = next {
                a href=(next_link(path, pairs, c)) rel="next" { "Next page" }
            }
        }
    }
}

/// The wire name of an API enum value (`powershelf`, `running`, …).
pub fn code<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// An id as the console shows it: its last 12 hex digits (Flow's ids are time-ordered, so
/// their first digits are a timestamp that many ids of one view share), the full id as the
/// element's title.
pub fn short_id(id: impl std::fmt::Display) -> maud::Markup {
    let full = id.to_string();
    let tail = full
        .get(full.len().saturating_sub(12)..)
        .unwrap_or(&full)
        .to_string();
    maud::html! { span.mono title=(full) { "…" (tail) } }
}

/// A time, to the second, in UTC.
pub fn time(t: Option<DateTime<Utc>>) -> String {
    t.map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| "—".into())
}

/// A coloured status badge; the class follows the meaning, the text says it.
pub fn badge(text: &str) -> Markup {
    let class = match text {
        "succeeded" | "on" | "ok" | "matched" | "enabled" | "completed" => "badge b-ok",
        "failed" | "cancelled" | "missing" | "mismatch" | "unexpected" | "unreachable"
        | "rejected" | "halted" | "aborted" | "exceeded" => "badge b-bad",
        "running" | "pending" | "waiting" | "queued" | "verifying" => "badge b-run",
        "off" | "paused" | "stale" | "mixed" | "awaiting_approval" | "waiting_for_window"
        | "held" => "badge b-warn",
        _ => "badge b-idle",
    };
    html! { span class=(class) { (text) } }
}

/// A hidden CSRF field for a form.
pub fn csrf_field(token: &super::csrf::CsrfToken) -> Markup {
    html! { input type="hidden" name=(super::csrf::FIELD) value=(token.0); }
}

/// Escaped text inside a `<pre>` (YAML, JSON).
pub fn preformatted(text: &str) -> Markup {
    html! { pre { (text) } }
}

#[cfg(test)]
mod short_id_tests {
    use super::short_id;

    #[test]
    fn ids_made_in_the_same_instant_show_apart_with_the_full_id_as_title() {
        let ids: Vec<uuid::Uuid> = (0..7).map(|_| uuid::Uuid::now_v7()).collect();
        let shown: std::collections::BTreeSet<String> =
            ids.iter().map(|id| short_id(id).into_string()).collect();
        assert_eq!(shown.len(), 7, "{shown:?}");
        let one = short_id(ids[0]).into_string();
        assert!(one.contains(&format!("title=\"{}\"", ids[0])), "{one}");
        assert!(one.contains(&ids[0].to_string()[24..]), "{one}");
    }
}
