//! Paged lists: one page (`--limit`, `--cursor`) or every page (`--all`, following `next_cursor`).

use serde_json::Value;

use super::client::{CliError, Client};
use super::output::{self, Format};

/// Paging options shared by every `list`.
#[derive(Debug, Clone, clap::Args)]
pub struct Paging {
    /// Items per page (1–1000; the server's default is 100).
    #[arg(long)]
    pub limit: Option<u32>,
    /// Start after this cursor (the `next_cursor` of a previous page).
    #[arg(long, conflicts_with = "all")]
    pub cursor: Option<String>,
    /// Follow cursors and print every page.
    #[arg(long)]
    pub all: bool,
    /// Ask the server for `total`: `exact` (a count of every match) or `estimate` (PostgreSQL's
    /// planner estimate). Without it a page says only whether there is more.
    #[arg(long, value_parser = ["exact", "estimate"], conflicts_with = "all")]
    pub count: Option<String>,
}

/// Query parameters with the empty filters left out.
pub fn query<'a>(pairs: &[(&'a str, Option<String>)]) -> Vec<(&'a str, String)> {
    pairs
        .iter()
        .filter_map(|(k, v)| v.clone().map(|v| (*k, v)))
        .collect()
}

/// Fetches a list (one page, or all of them) and prints it with `table` for the items.
pub async fn run(
    client: &Client,
    format: Format,
    path: &str,
    mut query: Vec<(&str, String)>,
    paging: &Paging,
    table: impl Fn(&[Value]) -> String,
) -> Result<(), CliError> {
    if let Some(limit) = paging.limit {
        query.push(("limit", limit.to_string()));
    }
    if let Some(cursor) = &paging.cursor {
        query.push(("cursor", cursor.clone()));
    }
    if let Some(count) = &paging.count {
        query.push(("count", count.clone()));
    }
    let first = client.get(path, &query).await?;
    if !paging.all {
        output::emit(format, &first.text, &first.body, |body| {
            let items = body["items"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            footer(items.len(), body);
            table(items)
        });
        return Ok(());
    }
    let mut items = first.body["items"].as_array().cloned().unwrap_or_default();
    let mut next = first.body["next_cursor"].as_str().map(String::from);
    while let Some(cursor) = next {
        let mut page_query = query.clone();
        page_query.push(("cursor", cursor));
        let page = client.get(path, &page_query).await?;
        items.extend(page.body["items"].as_array().cloned().unwrap_or_default());
        next = page.body["next_cursor"].as_str().map(String::from);
    }
    match format {
        // One document in the list shape, as if the server had answered with a single page;
        // having read every page, its total is exact for free.
        Format::Json => {
            let all = serde_json::json!({
                "items": items,
                "next_cursor": null,
                "total": items.len(),
                "total_is_estimate": false,
            });
            output::print(&serde_json::to_string_pretty(&all).unwrap_or_default());
        }
        Format::Table => output::print(&table(&items)),
    }
    Ok(())
}

/// On stderr, so stdout holds only the table: how many (of how many, when counted with
/// `--count`), and how to get more.
fn footer(shown: usize, body: &Value) {
    let Some(cursor) = body["next_cursor"].as_str() else {
        return;
    };
    let of = match (body["total"].as_u64(), body["total_is_estimate"].as_bool()) {
        (Some(total), Some(true)) => format!(" of about {total}"),
        (Some(total), _) => format!(" of {total}"),
        (None, _) => ", more".to_string(),
    };
    eprintln!("{shown}{of}; next page: --cursor {cursor} (or --all)");
}
