//! What the CLI prints: aligned tables for people, the API's JSON (re-indented only) for scripts.

use std::io::Write;

use serde_json::Value;

/// `-o table` (default) or `-o json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
}

/// Writes to stdout; a closed pipe (`flow rack list | head`) is not worth a panic. Control
/// characters other than line breaks and tabs never reach the terminal raw (a stored name with
/// ESC could otherwise rewrite the screen): they are printed as `\u001b`-style escapes.
pub fn print(text: &str) {
    let text = printable(text, true);
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = out.write_all(b"\n");
    }
    let _ = out.flush();
}

/// Prints the API's JSON as received, pretty-printed; or, for tables, what `table` renders.
pub fn emit(format: Format, raw: &str, body: &Value, table: impl FnOnce(&Value) -> String) {
    match format {
        Format::Json => print(&pretty(raw)),
        Format::Table => print(&table(body)),
    }
}

/// Re-indents JSON text without parsing it into a map, so the API's key order survives.
pub fn pretty(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len() * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = raw.trim().chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                // Empty containers stay on one line.
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('}' | ']')) {
                    if let Some(close) = chars.next() {
                        out.push(close);
                    }
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

/// A text table: columns as wide as their widest cell, two spaces apart.
#[derive(Debug)]
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new(headers: &[&str]) -> Self {
        Self {
            rows: vec![headers.iter().map(|h| h.to_string()).collect()],
        }
    }

    /// Adds a row (cells in column order).
    pub fn row(&mut self, cells: Vec<String>) -> &mut Self {
        self.rows.push(cells);
        self
    }

    /// The table as text, one line per row.
    pub fn render(&self) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|i| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .map(|c| c.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                line.push_str(cell);
                if i + 1 < row.len() {
                    let pad = widths[i] - cell.chars().count() + 2;
                    line.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `key  value` lines for one object, skipping absent values.
pub fn fields(pairs: &[(&str, String)]) -> String {
    let width = pairs.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    pairs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k:width$}  {v}\n"))
        .collect()
}

/// A JSON value as a table cell: strings bare, null as empty; control characters (line breaks
/// included, which would break the table) escaped.
pub fn cell(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => printable(s, false).into_owned(),
        other => other.to_string(),
    }
}

/// `text` with its control characters escaped (`\n`, `\t`, `\u001b`), keeping line breaks
/// and tabs when `keep_lines`. The escapes are also valid inside JSON strings.
pub fn printable(text: &str, keep_lines: bool) -> std::borrow::Cow<'_, str> {
    let kept = |c: char| keep_lines && matches!(c, '\n' | '\t');
    if !text.chars().any(|c| c.is_control() && !kept(c)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !c.is_control() || kept(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push_str(&format!("\\u{:04x}", c as u32)),
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_keeps_key_order_and_strings_intact() {
        let raw = r#"{"z":1,"a":{"s":"x, {y}: \"q\"","e":[],"l":[1,2]}}"#;
        let out = pretty(raw);
        assert!(out.find("\"z\"") < out.find("\"a\""), "{out}");
        let reparsed: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(reparsed, serde_json::from_str::<Value>(raw).unwrap());
        assert!(out.contains("\"e\": []"), "{out}");
    }

    #[test]
    fn control_characters_are_never_printed_raw() {
        assert_eq!(
            cell(&Value::from("a\u{1b}[2Jb\nc\u{7}")),
            "a\\u001b[2Jb\\nc\\u0007"
        );
        assert_eq!(printable("x\n\ty\u{85}\r", true), "x\n\ty\\u0085\\r");
        assert!(matches!(
            printable("plain", true),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn tables_align_columns_and_trim_trailing_space() {
        let mut t = Table::new(&["ID", "NAME"]);
        t.row(vec!["1".into(), "g10".into()]);
        t.row(vec!["22".into(), String::new()]);
        assert_eq!(t.render(), "ID  NAME\n1   g10\n22\n");
    }
}
