//! Streaming readers: CSV records (`csv-core`: quoted fields, embedded
//! delimiters and newlines, CRLF) and JSON Lines (serde_json) into a
//! [`Deriver`], one record at a time, so memory stays constant however long
//! the input is: a record (or a JSON line) longer than [`MAX_RECORD_BYTES`]
//! is refused, and so is a quote that is never closed, which would otherwise
//! make the rest of the input one field. Errors name the line a record
//! starts on, and show the input's text quoted, escaped and cut short
//! ([`shown`]).

use std::fmt::Write as _;
use std::io::{BufRead, IsTerminal, Read, Write};

use clap::ValueEnum;
use edge_deadline::core::derive::{DeriveError, Deriver, Outcome};
use serde_json::Value;

/// Input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// CSV with a header line.
    Csv,
    /// JSON Lines: one object per line.
    #[value(alias = "ndjson", alias = "json")]
    Jsonl,
    /// Prometheus text exposition format.
    #[value(alias = "prometheus", alias = "text")]
    Prom,
    /// A saved Prometheus query API response.
    PromJson,
}

impl Format {
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

    pub fn tick(&mut self, lines: u64, bytes: u64) {
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

/// The most bytes of field text one CSV record holds, and the longest JSON
/// line: past it the input is refused (a record this long is a damaged file
/// or a quote never closed), so memory stays flat whatever the input.
pub const MAX_RECORD_BYTES: usize = 1 << 20;
/// The most fields one CSV record holds.
pub const MAX_FIELDS: usize = 4096;
/// The longest label value (a `--by` field): each bucket keeps its values.
pub const MAX_LABEL_BYTES: usize = 1024;
/// How many characters of the input an error shows.
const SHOWN_CHARS: usize = 40;

/// `text` as a message may show it: control characters (terminal escapes,
/// newlines) and invisible direction marks escaped, cut after
/// [`SHOWN_CHARS`] characters with its length in bytes.
pub fn escaped(text: &str) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == SHOWN_CHARS {
            let _ = write!(out, "… ({} bytes)", text.len());
            break;
        }
        out.push_str(&escape_char(c));
    }
    out
}

/// `c` itself, or escaped (`\u{1b}`, `\n`) when a terminal would act on it.
pub fn escape_char(c: char) -> String {
    let invisible =
        matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}');
    if c.is_control() || invisible {
        c.escape_default().to_string()
    } else {
        c.to_string()
    }
}

/// [`escaped`] in single quotes (a quote inside escaped), the length of a
/// value cut short after them: how an error quotes a value from the input.
pub fn shown(text: &str) -> String {
    let mut out = String::from("'");
    for (n, c) in text.chars().enumerate() {
        if n == SHOWN_CHARS {
            let _ = write!(out, "…' ({} bytes)", text.len());
            return out;
        }
        if c == '\'' {
            out.push('\\');
        }
        out.push_str(&escape_char(c));
    }
    out.push('\'');
    out
}

fn parse_ms(text: &str, to_ms: f64) -> Result<f64, String> {
    let t = text.trim();
    let v: f64 = t.parse().map_err(|_| format!("{} is not a number", shown(t)))?;
    Ok(v * to_ms)
}

fn parse_outcome(text: &str) -> Result<Outcome, String> {
    Outcome::parse(text)
        .ok_or_else(|| format!("{} is not an outcome; use one of: {}", shown(text.trim()), Outcome::accepted()))
}

/// A serde_json error as `invalid JSON at column C: what`.
pub fn json_error(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let what = text.rsplit_once(" at line ").map_or(text.as_str(), |(m, _)| m);
    format!("invalid JSON at column {}: {what}", e.column())
}

/// Reads every record of `reader` into `deriver`. Malformed records stop
/// the pass with an error naming the line and field, or are counted and
/// skipped with `skip_bad`. Errors that no line can fix (too many buckets, a
/// missing column) always stop it.
pub fn stream(
    reader: impl BufRead,
    format: Format,
    spec: &RowSpec,
    deriver: &mut Deriver,
    skip_bad: bool,
    progress: &mut Progress,
) -> Result<Stats, String> {
    let mut pass = Pass { spec, deriver, skip_bad, progress, stats: Stats::default(), records: 0, cols: None };
    match format {
        Format::Csv => pass.csv(reader)?,
        _ => pass.jsonl(reader)?,
    }
    pass.progress.done();
    Ok(pass.stats)
}

/// One CSV record: its fields' bytes end to end, and where each ends.
pub struct Record<'a> {
    bytes: &'a [u8],
    ends: &'a [usize],
}

impl<'a> Record<'a> {
    fn len(&self) -> usize {
        self.ends.len()
    }

    /// Field `i` (< `len()`) as bytes.
    fn get(&self, i: usize) -> &'a [u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    fn iter(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

/// Field `i` (< `record.len()`) as text, `None` if it is not UTF-8.
fn field<'a>(record: &Record<'a>, i: usize) -> Option<&'a str> {
    std::str::from_utf8(record.get(i)).ok()
}

/// CSV records, RFC 4180 as the `csv` crate reads it (`csv-core` is its
/// parser), in buffers that never grow past [`MAX_RECORD_BYTES`] and
/// [`MAX_FIELDS`]. Unlike the `csv` crate, it tells a quote closed by the
/// end of the input (an error: it would swallow every line after it) from
/// a record that ends there.
struct CsvReader<R> {
    input: R,
    core: csv_core::Reader,
    out: Vec<u8>,
    ends: Vec<usize>,
    /// The current record's bytes and fields, once read.
    len: (usize, usize),
    byte: u64,
}

impl<R: BufRead> CsvReader<R> {
    fn new(input: R) -> Self {
        CsvReader { input, core: csv_core::Reader::new(), out: vec![0; 4096], ends: vec![0; 64], len: (0, 0), byte: 0 }
    }

    fn record(&self) -> Record<'_> {
        Record { bytes: &self.out[..self.len.0], ends: &self.ends[..self.len.1] }
    }

    /// Reads the next record: `Some((line, byte))` where it starts, `None` at
    /// the end of the input.
    fn next(&mut self) -> Result<Option<(u64, u64)>, String> {
        use csv_core::ReadRecordResult::*;
        let read_error = |e: std::io::Error| format!("reading the input failed: {e}");
        // Line breaks before a record are blank lines: skip them here, so
        // the line a record starts on is its own.
        loop {
            let input = self.input.fill_buf().map_err(read_error)?;
            let blank = input.iter().take_while(|&&b| b == b'\n' || b == b'\r').count();
            let lines = input[..blank].iter().filter(|&&b| b == b'\n').count() as u64;
            let all = blank == input.len() && blank > 0;
            self.input.consume(blank);
            self.byte += blank as u64;
            self.core.set_line(self.core.line() + lines);
            if !all {
                break;
            }
        }
        let (line, start) = (self.core.line(), self.byte);
        let (mut outlen, mut endlen, mut took) = (0, 0, 0);
        loop {
            let input = self.input.fill_buf().map_err(read_error)?;
            // At the end of the input inside a record, feed one line break:
            // a closed record ends with it as it would at the end, while a
            // quoted field takes it in (and the record stays open). (A
            // clone of the parser cannot be probed: csv-core 0.1's `Clone`
            // copies only part of its tables.)
            let at_end = input.is_empty() && took > 0;
            let feed: &[u8] = if at_end { b"\n" } else { input };
            let (res, nin, nout, nend) = self.core.read_record(feed, &mut self.out[outlen..], &mut self.ends[endlen..]);
            if !at_end {
                self.input.consume(nin);
                self.byte += nin as u64;
                took += nin;
            }
            outlen += nout;
            endlen += nend;
            match res {
                InputEmpty if at_end => {
                    return Err(format!(
                        "line {line}: field {} opens a quote that is never closed (a quote inside a field is written \"\")",
                        endlen + 1
                    ));
                }
                InputEmpty => {}
                OutputFull => {
                    if self.out.len() >= MAX_RECORD_BYTES {
                        let field = endlen + 1;
                        // The same line break tells an open quote (the
                        // parser is not used again after this error).
                        let (mut out, mut ends) = ([0u8; 4], [0usize; 4]);
                        let quoted = self.core.read_record(b"\n", &mut out, &mut ends).0 == InputEmpty;
                        return Err(if quoted {
                            format!("line {line}: field {field} opens a quote that is not closed within {} (a quote never closed?)", mib(MAX_RECORD_BYTES))
                        } else {
                            format!(
                                "line {line}: the record passes {} at field {field}: too long for a CSV record",
                                mib(MAX_RECORD_BYTES)
                            )
                        });
                    }
                    let grown = (self.out.len() * 2).min(MAX_RECORD_BYTES);
                    self.out.resize(grown, 0);
                }
                OutputEndsFull => {
                    if self.ends.len() >= MAX_FIELDS {
                        return Err(format!("line {line}: more than {MAX_FIELDS} fields in one record"));
                    }
                    let grown = (self.ends.len() * 2).min(MAX_FIELDS);
                    self.ends.resize(grown, 0);
                }
                Record => {
                    self.len = (outlen, endlen);
                    return Ok(Some((line, start)));
                }
                End => return Ok(None),
            }
        }
    }
}

/// `1 MiB` for 2^20.
fn mib(bytes: usize) -> String {
    format!("{} MiB", bytes >> 20)
}

/// One streaming pass: where rows go, and what it has seen so far.
struct Pass<'a> {
    spec: &'a RowSpec,
    deriver: &'a mut Deriver,
    skip_bad: bool,
    progress: &'a mut Progress,
    stats: Stats,
    records: u64,
    /// CSV: duration, outcome and by-label column positions, once the header is read.
    cols: Option<(usize, Option<usize>, Vec<usize>)>,
}

impl Pass<'_> {
    /// Counts a record that starts on line `lineno`, `byte` bytes in.
    fn tick(&mut self, lineno: u64, byte: u64) {
        self.stats.lines = lineno;
        self.records += 1;
        if self.records % (1 << 18) == 0 {
            self.progress.tick(lineno, byte);
        }
    }

    fn skip_or_fail(&mut self, e: LineError) -> Result<(), String> {
        if !self.skip_bad {
            return Err(format!("{e} (pass --skip-bad to count and skip malformed lines)"));
        }
        self.stats.skipped += 1;
        if self.stats.first_errors.len() < 3 {
            self.stats.first_errors.push(e.to_string());
        }
        Ok(())
    }

    /// Adds one parsed row, or handles its error.
    fn add_row(&mut self, row: Row, labels: &[&str], lineno: u64) -> Result<(), String> {
        let (outcome, ms) = match row {
            Ok(r) => r,
            Err(e) => return self.skip_or_fail(e),
        };
        match self.deriver.add(labels, outcome, ms) {
            Ok(()) => {
                self.stats.rows += 1;
                Ok(())
            }
            Err(e @ (DeriveError::Groups { .. } | DeriveError::Labels { .. })) => Err(format!("line {lineno}: {e}")),
            Err(e) => {
                let field = matches!(e, DeriveError::MissingDuration | DeriveError::Sketch(_))
                    .then(|| self.spec.column.clone());
                self.skip_or_fail(LineError { line: lineno, field, message: e.to_string() })
            }
        }
    }

    /// Handles one CSV record that starts on line `lineno`, `byte` bytes in.
    fn csv_record(&mut self, record: &Record<'_>, lineno: u64, byte: u64) -> Result<(), String> {
        self.tick(lineno, byte);
        // A line holding only spaces is blank (the csv crate skips empty ones).
        if record.len() == 1 && field(record, 0).is_some_and(|t| t.trim().is_empty()) {
            return Ok(());
        }
        let Some((ms_i, out_i, by_i)) = &self.cols else {
            self.cols = Some(header(record, lineno, self.spec, &mut self.stats)?);
            return Ok(());
        };
        let mut labels: Vec<&str> = Vec::with_capacity(by_i.len());
        let row = csv_row(record, lineno, self.spec, (*ms_i, *out_i, by_i), &mut labels);
        self.add_row(row, &labels, lineno)
    }

    /// CSV by `csv-core`, the `csv` crate's parser (RFC 4180: quoted fields,
    /// doubled quotes, delimiters and newlines inside quotes, CRLF). On the
    /// 10 M-line bench the `csv` crate took less CPU time than the
    /// hand-written splitter it replaced (0.77 vs 0.83 s); this loop is the
    /// crate's own, with capped buffers and the check for an unclosed quote.
    fn csv(&mut self, reader: impl BufRead) -> Result<(), String> {
        let mut rdr = CsvReader::new(reader);
        while let Some((lineno, byte)) = rdr.next()? {
            self.csv_record(&rdr.record(), lineno, byte)?;
        }
        if self.cols.is_none() {
            return Err("the input is empty: expected a CSV header line and rows".into());
        }
        Ok(())
    }

    fn jsonl(&mut self, mut reader: impl BufRead) -> Result<(), String> {
        let mut raw = Vec::with_capacity(256);
        let (mut lineno, mut bytes) = (0u64, 0u64);
        let mut labels: Vec<String> = vec![String::new(); self.spec.by.len()];
        loop {
            raw.clear();
            // One byte past the cap tells a line that is too long.
            let n = (&mut reader)
                .take(MAX_RECORD_BYTES as u64 + 1)
                .read_until(b'\n', &mut raw)
                .map_err(|e| format!("reading the input failed: {e}"))?;
            if n == 0 {
                break;
            }
            lineno += 1;
            if raw.len() > MAX_RECORD_BYTES {
                return Err(format!(
                    "line {lineno} is longer than {}: too long for a JSON line",
                    mib(MAX_RECORD_BYTES)
                ));
            }
            bytes += n as u64;
            self.tick(lineno, bytes);
            while matches!(raw.last(), Some(b'\n' | b'\r')) {
                raw.pop();
            }
            if raw.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let row = json_row(&raw, lineno, self.spec, &mut labels);
            let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
            self.add_row(row, &refs, lineno)?;
        }
        Ok(())
    }
}

fn header(
    record: &Record<'_>,
    line: u64,
    spec: &RowSpec,
    stats: &mut Stats,
) -> Result<(usize, Option<usize>, Vec<usize>), String> {
    let names: Vec<String> = record.iter().map(|f| String::from_utf8_lossy(f).trim().to_string()).collect();
    let find = |want: &str| names.iter().position(|n| n.eq_ignore_ascii_case(want));
    let mut listed = names.iter().take(20).map(|n| escaped(n)).collect::<Vec<_>>().join(", ");
    if names.len() > 20 {
        let _ = write!(listed, ", … ({} columns)", names.len());
    }
    let ms = find(&spec.column).ok_or_else(|| {
        format!(
            "line {line} (header): no column '{}' (columns: {listed}); choose the duration column with --column",
            spec.column
        )
    })?;
    let outcome = find(&spec.outcome_column);
    if outcome.is_none() {
        if spec.outcome_explicit {
            return Err(format!(
                "line {line} (header): no column '{}' (columns: {listed}); check --outcome-column",
                spec.outcome_column
            ));
        }
        stats.notes.push(format!("no '{}' column: every row counts as a success", spec.outcome_column));
    }
    let mut by = Vec::new();
    for b in &spec.by {
        by.push(find(b).ok_or_else(|| {
            format!("line {line} (header): no column '{b}' to group by with --by (columns: {listed})")
        })?);
    }
    Ok((ms, outcome, by))
}

type Row = Result<(Outcome, Option<f64>), LineError>;

fn csv_row<'r>(
    record: &Record<'r>,
    lineno: u64,
    spec: &RowSpec,
    (ms_i, out_i, by_i): (usize, Option<usize>, &[usize]),
    labels: &mut Vec<&'r str>,
) -> Row {
    let err = |field: Option<&String>, message: String| LineError { line: lineno, field: field.cloned(), message };
    let need = by_i.iter().copied().chain(out_i).chain([ms_i]).max().unwrap_or(0) + 1;
    if record.len() < need {
        return Err(err(None, format!("expected at least {need} fields, found {}", record.len())));
    }
    let text = |i: usize, name: &String| field(record, i).ok_or_else(|| err(Some(name), "not valid UTF-8".into()));
    let outcome = match out_i {
        Some(i) => parse_outcome(text(i, &spec.outcome_column)?).map_err(|m| err(Some(&spec.outcome_column), m))?,
        None => Outcome::Success,
    };
    let ms_text = text(ms_i, &spec.column)?;
    let ms = if ms_text.trim().is_empty() && outcome != Outcome::Success {
        None
    } else {
        Some(parse_ms(ms_text, spec.to_ms).map_err(|m| err(Some(&spec.column), m))?)
    };
    for (&i, name) in by_i.iter().zip(&spec.by) {
        let label = text(i, name)?.trim();
        check_label(label).map_err(|m| err(Some(name), m))?;
        labels.push(label);
    }
    Ok((outcome, ms))
}

/// A label value longer than [`MAX_LABEL_BYTES`] is refused (every bucket
/// keeps its values, up to 1 024 buckets).
fn check_label(label: &str) -> Result<(), String> {
    if label.len() > MAX_LABEL_BYTES {
        return Err(format!("{} is longer than the {MAX_LABEL_BYTES} bytes a label value may hold", shown(label)));
    }
    Ok(())
}

fn json_row(line: &[u8], lineno: u64, spec: &RowSpec, labels: &mut [String]) -> Row {
    let err =
        |field: Option<&str>, message: String| LineError { line: lineno, field: field.map(str::to_string), message };
    let v: Value = serde_json::from_slice(line).map_err(|e| err(None, json_error(&e)))?;
    let Value::Object(v) = v else {
        return Err(err(None, "expected a JSON object per line".into()));
    };
    let outcome = match v.get(&spec.outcome_column) {
        None | Some(Value::Null | Value::Bool(true)) => Outcome::Success,
        Some(Value::Bool(false)) => Outcome::Error,
        Some(Value::String(s)) => parse_outcome(s).map_err(|m| err(Some(&spec.outcome_column), m))?,
        // An HTTP status as a JSON number: the core's rule, as for "404".
        Some(Value::Number(n)) => n.as_f64().and_then(Outcome::of_status).ok_or_else(|| {
            let m = format!("{} is not an outcome; use one of: {}", shown(&n.to_string()), Outcome::accepted());
            err(Some(&spec.outcome_column), m)
        })?,
        Some(other) => {
            return Err(err(
                Some(&spec.outcome_column),
                format!(
                    "expected a string, a number (an HTTP status) or a boolean, found {}",
                    escaped(&other.to_string())
                ),
            ))
        }
    };
    let ms = match v.get(&spec.column) {
        Some(Value::Number(x)) => x.as_f64().map(|x| x * spec.to_ms),
        Some(Value::String(s)) => Some(parse_ms(s, spec.to_ms).map_err(|m| err(Some(&spec.column), m))?),
        None | Some(Value::Null) if outcome != Outcome::Success => None,
        None => return Err(err(Some(&spec.column), "missing".into())),
        Some(other) => {
            return Err(err(
                Some(&spec.column),
                format!("expected a number of milliseconds, found {}", escaped(&other.to_string())),
            ))
        }
    };
    for (slot, name) in labels.iter_mut().zip(&spec.by) {
        slot.clear();
        match v.get(name) {
            Some(Value::String(s)) => slot.push_str(s),
            Some(Value::Null) | None => {}
            Some(other) => slot.push_str(&other.to_string()),
        }
        check_label(slot).map_err(|m| err(Some(name), m))?;
    }
    Ok((outcome, ms))
}

#[cfg(test)]
mod tests {
    use super::*;

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
