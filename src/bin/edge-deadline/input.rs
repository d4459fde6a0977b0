//! Streaming readers: CSV and JSON Lines rows into a [`Deriver`], one line
//! at a time, so memory stays constant however long the input is.

use std::io::{BufRead, IsTerminal, Write};

use edge_deadline::core::derive::{DeriveError, Deriver, Outcome};

use crate::json::{self, Json};

/// Input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Jsonl,
    /// Prometheus text exposition format.
    Prom,
    /// A saved Prometheus query API response.
    PromJson,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "csv" => Some(Format::Csv),
            "jsonl" | "ndjson" | "json" => Some(Format::Jsonl),
            "prom" | "prometheus" | "text" => Some(Format::Prom),
            "prom-json" => Some(Format::PromJson),
            _ => None,
        }
    }

    /// Guesses from the first non-blank line.
    pub fn sniff(first: &str) -> Format {
        let t = first.trim_start_matches('\u{feff}').trim();
        if t.starts_with('{') {
            if t.contains("\"status\"") && (t.contains("\"data\"") || t.ends_with('{') || t.len() < 20) {
                Format::PromJson
            } else {
                Format::Jsonl
            }
        } else if t.starts_with('#') || looks_like_exposition(t) {
            Format::Prom
        } else {
            Format::Csv
        }
    }
}

fn looks_like_exposition(t: &str) -> bool {
    // `name{...} value` or `name value`, where a CSV header would have commas
    // outside braces.
    let name_end = t.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')).unwrap_or(t.len());
    name_end > 0 && (t[name_end..].starts_with('{') || (t[name_end..].starts_with(' ') && !t.contains(',')))
}

/// Which fields to read.
#[derive(Debug, Clone)]
pub struct RowSpec {
    pub column: String,
    pub outcome_column: String,
    /// `true` when the outcome column was named on the command line, so its
    /// absence is an error rather than "every row is a success".
    pub outcome_explicit: bool,
    pub by: Vec<String>,
    /// Multiplies the duration column into milliseconds.
    pub to_ms: f64,
}

/// What a streaming pass saw.
#[derive(Debug, Default)]
pub struct Stats {
    pub lines: u64,
    pub rows: u64,
    pub skipped: u64,
    pub first_errors: Vec<String>,
    pub notes: Vec<String>,
}

/// A problem with one line: fatal, or counted with `--skip-bad`.
pub struct LineError {
    pub line: u64,
    pub field: Option<String>,
    pub message: String,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.field {
            Some(field) => write!(f, "line {}, field '{}': {}", self.line, field, self.message),
            None => write!(f, "line {}: {}", self.line, self.message),
        }
    }
}

/// Progress on stderr, only when stderr is a terminal.
pub struct Progress {
    enabled: bool,
    total_bytes: Option<u64>,
    shown: bool,
}

impl Progress {
    pub fn new(total_bytes: Option<u64>) -> Progress {
        Progress { enabled: std::io::stderr().is_terminal(), total_bytes, shown: false }
    }

    fn tick(&mut self, lines: u64, bytes: u64) {
        if !self.enabled {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = match self.total_bytes {
            Some(total) if total > 0 => {
                let frac = (bytes as f64 / total as f64).min(1.0);
                let filled = (frac * 30.0).round() as usize;
                write!(
                    err,
                    "\r[{}{}] {:>3.0}%  {} lines",
                    "#".repeat(filled),
                    " ".repeat(30 - filled),
                    frac * 100.0,
                    lines
                )
            }
            _ => write!(err, "\r{lines} lines"),
        };
        let _ = err.flush();
        self.shown = true;
    }

    pub fn done(&mut self) {
        if self.shown {
            let _ = write!(std::io::stderr(), "\r{}\r", " ".repeat(60));
            self.shown = false;
        }
    }
}

/// Splits one CSV line into `buf` (unescaped) and `ranges` into it.
/// Quoted fields may contain commas and doubled quotes; a quote left open is
/// an error (records spanning lines are not supported).
fn split_csv(line: &str, buf: &mut String, ranges: &mut Vec<(usize, usize)>) -> Result<(), String> {
    buf.clear();
    ranges.clear();
    if !line.contains('"') {
        buf.push_str(line);
        let mut start = 0;
        for (i, b) in line.bytes().enumerate() {
            if b == b',' {
                ranges.push((start, i));
                start = i + 1;
            }
        }
        ranges.push((start, line.len()));
        return Ok(());
    }
    let mut chars = line.chars().peekable();
    loop {
        let start = buf.len();
        // Leading spaces before an opening quote are allowed.
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err(format!("field {} has an opening quote but no closing one", ranges.len() + 1)),
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        buf.push('"');
                    }
                    Some('"') => break,
                    Some(c) => buf.push(c),
                }
            }
            while chars.peek() == Some(&' ') {
                chars.next();
            }
            ranges.push((start, buf.len()));
            match chars.next() {
                None => return Ok(()),
                Some(',') => continue,
                Some(c) => return Err(format!("field {} has '{c}' after its closing quote", ranges.len())),
            }
        }
        loop {
            match chars.next() {
                None => {
                    ranges.push((start, buf.len()));
                    return Ok(());
                }
                Some(',') => break,
                Some(c) => buf.push(c),
            }
        }
        ranges.push((start, buf.len()));
    }
}

fn parse_ms(text: &str, to_ms: f64) -> Result<f64, String> {
    let t = text.trim();
    let v: f64 = t.parse().map_err(|_| format!("'{t}' is not a number"))?;
    Ok(v * to_ms)
}

fn parse_outcome(text: &str) -> Result<Outcome, String> {
    Outcome::parse(text)
        .ok_or_else(|| format!("'{}' is not an outcome; use one of: {}", text.trim(), Outcome::ACCEPTED))
}

/// Reads every line of `reader` into `deriver`. Malformed lines stop the
/// pass with an error naming the line and field, or are counted and skipped
/// with `skip_bad`. Errors that no line can fix (too many buckets, a missing
/// column) always stop it.
pub fn stream(
    mut reader: impl BufRead,
    format: Format,
    spec: &RowSpec,
    deriver: &mut Deriver,
    skip_bad: bool,
    progress: &mut Progress,
) -> Result<Stats, String> {
    let mut stats = Stats::default();
    let mut raw = Vec::with_capacity(256);
    let mut bytes = 0u64;
    let mut buf = String::new();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    // CSV column positions: duration, outcome, by-labels.
    let mut cols: Option<(usize, Option<usize>, Vec<usize>)> = None;
    let mut labels: Vec<String> = vec![String::new(); spec.by.len()];
    loop {
        raw.clear();
        let n = reader.read_until(b'\n', &mut raw).map_err(|e| format!("reading the input failed: {e}"))?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
        stats.lines += 1;
        let lineno = stats.lines;
        if lineno % (1 << 18) == 0 {
            progress.tick(lineno, bytes);
        }
        while matches!(raw.last(), Some(b'\n' | b'\r')) {
            raw.pop();
        }
        let line = match std::str::from_utf8(&raw) {
            Ok(l) => l,
            Err(_) => {
                let e = LineError { line: lineno, field: None, message: "not valid UTF-8".into() };
                skip_or_fail(&mut stats, e, skip_bad)?;
                continue;
            }
        };
        let line = if lineno == 1 { line.trim_start_matches('\u{feff}') } else { line };
        if line.trim().is_empty() {
            continue;
        }
        let row = match format {
            Format::Csv => {
                if cols.is_none() {
                    cols = Some(header(line, spec, &mut stats)?);
                    continue;
                }
                let Some((ms_i, out_i, by_i)) = &cols else { continue };
                csv_row(line, lineno, spec, (*ms_i, *out_i, by_i), &mut buf, &mut ranges, &mut labels)
            }
            _ => json_row(line, lineno, spec, &mut labels),
        };
        let (outcome, ms) = match row {
            Ok(r) => r,
            Err(e) => {
                skip_or_fail(&mut stats, e, skip_bad)?;
                continue;
            }
        };
        let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
        match deriver.add(&refs, outcome, ms) {
            Ok(()) => stats.rows += 1,
            Err(e @ (DeriveError::Groups { .. } | DeriveError::Labels { .. })) => {
                return Err(format!("line {lineno}: {e}"))
            }
            Err(e) => {
                let field = if matches!(e, DeriveError::MissingDuration | DeriveError::Sketch(_)) {
                    Some(spec.column.clone())
                } else {
                    None
                };
                skip_or_fail(&mut stats, LineError { line: lineno, field, message: e.to_string() }, skip_bad)?;
            }
        }
    }
    progress.done();
    if format == Format::Csv && cols.is_none() {
        return Err("the input is empty: expected a CSV header line and rows".into());
    }
    Ok(stats)
}

fn skip_or_fail(stats: &mut Stats, e: LineError, skip_bad: bool) -> Result<(), String> {
    if !skip_bad {
        return Err(format!("{e} (pass --skip-bad to count and skip malformed lines)"));
    }
    stats.skipped += 1;
    if stats.first_errors.len() < 3 {
        stats.first_errors.push(e.to_string());
    }
    Ok(())
}

fn header(line: &str, spec: &RowSpec, stats: &mut Stats) -> Result<(usize, Option<usize>, Vec<usize>), String> {
    let mut buf = String::new();
    let mut ranges = Vec::new();
    split_csv(line, &mut buf, &mut ranges).map_err(|e| format!("line 1 (header): {e}"))?;
    let names: Vec<&str> = ranges.iter().map(|&(a, b)| buf[a..b].trim()).collect();
    let find = |want: &str| names.iter().position(|n| n.eq_ignore_ascii_case(want));
    let listed = names.join(", ");
    let ms = find(&spec.column).ok_or_else(|| {
        format!(
            "line 1 (header): no column '{}' (columns: {listed}); choose the duration column with --column",
            spec.column
        )
    })?;
    let outcome = find(&spec.outcome_column);
    if outcome.is_none() {
        if spec.outcome_explicit {
            return Err(format!("line 1 (header): no column '{}' (columns: {listed})", spec.outcome_column));
        }
        stats.notes.push(format!("no '{}' column: every row counts as a success", spec.outcome_column));
    }
    let mut by = Vec::new();
    for b in &spec.by {
        by.push(find(b).ok_or_else(|| format!("line 1 (header): no column '{b}' to group by (columns: {listed})"))?);
    }
    Ok((ms, outcome, by))
}

type Row = Result<(Outcome, Option<f64>), LineError>;

fn csv_row(
    line: &str,
    lineno: u64,
    spec: &RowSpec,
    (ms_i, out_i, by_i): (usize, Option<usize>, &[usize]),
    buf: &mut String,
    ranges: &mut Vec<(usize, usize)>,
    labels: &mut [String],
) -> Row {
    split_csv(line, buf, ranges).map_err(|message| LineError { line: lineno, field: None, message })?;
    let field = |i: usize| ranges.get(i).map(|&(a, b)| &buf[a..b]);
    let need = by_i.iter().copied().chain(out_i).chain([ms_i]).max().unwrap_or(0) + 1;
    if ranges.len() < need {
        return Err(LineError {
            line: lineno,
            field: None,
            message: format!("expected at least {need} fields, found {}", ranges.len()),
        });
    }
    let outcome = match out_i.and_then(field) {
        Some(t) => parse_outcome(t).map_err(|message| LineError {
            line: lineno,
            field: Some(spec.outcome_column.clone()),
            message,
        })?,
        None => Outcome::Success,
    };
    let ms_text = field(ms_i).unwrap_or("");
    let ms = if ms_text.trim().is_empty() && outcome != Outcome::Success {
        None
    } else {
        Some(parse_ms(ms_text, spec.to_ms).map_err(|message| LineError {
            line: lineno,
            field: Some(spec.column.clone()),
            message,
        })?)
    };
    for (slot, &i) in labels.iter_mut().zip(by_i) {
        slot.clear();
        slot.push_str(field(i).unwrap_or("").trim());
    }
    Ok((outcome, ms))
}

fn json_row(line: &str, lineno: u64, spec: &RowSpec, labels: &mut [String]) -> Row {
    let err =
        |field: Option<&str>, message: String| LineError { line: lineno, field: field.map(str::to_string), message };
    let v = json::parse(line).map_err(|m| err(None, m))?;
    if !matches!(v, Json::Obj(_)) {
        return Err(err(None, "expected a JSON object per line".into()));
    }
    let outcome = match v.get(&spec.outcome_column) {
        None | Some(Json::Null) => Outcome::Success,
        Some(Json::Bool(true)) => Outcome::Success,
        Some(Json::Bool(false)) => Outcome::Error,
        Some(Json::Str(s)) => parse_outcome(s).map_err(|m| err(Some(&spec.outcome_column), m))?,
        Some(other) => return Err(err(Some(&spec.outcome_column), format!("expected a string, found {other:?}"))),
    };
    let ms = match v.get(&spec.column) {
        Some(Json::Num(x)) => Some(x * spec.to_ms),
        Some(Json::Str(s)) => Some(parse_ms(s, spec.to_ms).map_err(|m| err(Some(&spec.column), m))?),
        None | Some(Json::Null) if outcome != Outcome::Success => None,
        None => return Err(err(Some(&spec.column), "missing".into())),
        Some(other) => {
            return Err(err(Some(&spec.column), format!("expected a number of milliseconds, found {other:?}")))
        }
    };
    for (slot, name) in labels.iter_mut().zip(&spec.by) {
        slot.clear();
        match v.get(name) {
            Some(Json::Str(s)) => slot.push_str(s),
            Some(Json::Num(x)) => slot.push_str(&x.to_string()),
            Some(Json::Bool(b)) => slot.push_str(if *b { "true" } else { "false" }),
            _ => {}
        }
    }
    Ok((outcome, ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str) -> Result<Vec<String>, String> {
        let (mut buf, mut ranges) = (String::new(), Vec::new());
        split_csv(line, &mut buf, &mut ranges)?;
        Ok(ranges.iter().map(|&(a, b)| buf[a..b].to_string()).collect())
    }

    #[test]
    fn csv_fields() {
        assert_eq!(split("a,b,,c").unwrap(), ["a", "b", "", "c"]);
        assert_eq!(split("\"x, y\",\"say \"\"hi\"\"\", z").unwrap(), ["x, y", "say \"hi\"", "z"]);
        assert_eq!(split("\"\"").unwrap(), [""]);
        assert!(split("\"open,1").unwrap_err().contains("no closing one"));
        assert!(split("\"a\"b,1").unwrap_err().contains("after its closing quote"));
    }

    #[test]
    fn sniffing() {
        assert_eq!(Format::sniff("ms,outcome"), Format::Csv);
        assert_eq!(Format::sniff("{\"ms\": 1}"), Format::Jsonl);
        assert_eq!(Format::sniff("{\"status\":\"success\",\"data\":{"), Format::PromJson);
        assert_eq!(Format::sniff("# HELP x y"), Format::Prom);
        assert_eq!(Format::sniff("x_bucket{le=\"1\"} 3"), Format::Prom);
        assert_eq!(Format::sniff("ms"), Format::Csv);
    }
}
