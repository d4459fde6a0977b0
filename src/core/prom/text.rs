//! The text exposition format (what `/metrics` serves): lines to samples,
//! streamed into histograms, and the number parser that keeps the standard
//! library's float tables out of the Wasm build. A part of [`super`] (the
//! format is one way in; query results are the other), split out to keep
//! each file about one thing.

use super::*;

/// Parses the text exposition format into samples. Comments (`# HELP`,
/// `# TYPE`, any `#` line) and blank lines are skipped; every other line must
/// be `name{label="value",…} value [timestamp]`.
pub fn parse_text(text: &str) -> Result<Vec<PromSample>, PromError> {
    samples(text).collect()
}

/// The samples of `text`, one at a time (see [`parse_text`]).
fn samples(text: &str) -> impl Iterator<Item = Result<PromSample, PromError>> + '_ {
    samples_from(text, 0)
}

/// [`samples`] of a piece that follows `before` lines of the same text.
fn samples_from(text: &str, before: usize) -> impl Iterator<Item = Result<PromSample, PromError>> + '_ {
    text.lines().enumerate().filter_map(move |(i, raw)| {
        let line = raw.trim();
        (!line.is_empty() && !line.starts_with('#'))
            .then(|| parse_line(line, Loc { kind: "line", index: before + i + 1 }))
    })
}

/// The histograms of `metric` (or of the only family present) in exposition
/// text, streaming (see *Memory and time*): the same answer as [`parse_text`]
/// then [`histograms`], without holding every sample at once.
pub fn histograms_in_text(text: &str, metric: Option<&str>) -> Result<Vec<Histogram>, PromError> {
    let mut out = Vec::new();
    each_histogram_in_text(text, metric, &mut |h| out.push(h))?;
    Ok(out)
}

/// [`histograms_in_text`], handing each histogram to `each` (in label order)
/// instead of collecting them: the caller can convert and drop one at a time,
/// so the parse never holds every finished histogram at once.
pub fn each_histogram_in_text(
    text: &str,
    metric: Option<&str>,
    each: &mut dyn FnMut(Histogram),
) -> Result<(), PromError> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(PromError::TooLarge { size: text.len(), unit: "bytes" });
    }
    let mut parse = TextHistograms::new(metric);
    if metric.is_none() {
        parse.scan(text)?;
    }
    parse.feed(text)?;
    parse.finish(each)
}

/// [`each_histogram_in_text`] for text handed over in pieces, each ending at a
/// line break (or at the end of the text): the caller keeps the text, and
/// Wasm memory holds one piece at a time instead of all of it.
///
/// Without a metric, pass every piece to [`TextHistograms::scan`] first (it
/// finds the one family and checks every line), then every piece again to
/// [`TextHistograms::feed`]; with one, only `feed`. Then
/// [`TextHistograms::finish`]. Line numbers in errors count across pieces.
pub struct TextHistograms {
    metric: Option<String>,
    families: Vec<String>,
    assembler: Option<Assembler>,
    /// Lines and bytes seen so far in the current pass.
    lines: usize,
    bytes: usize,
}

impl TextHistograms {
    /// A parse of the histograms of `metric`, or, with `None`, of the one family
    /// the text holds ([`TextHistograms::scan`] finds it).
    pub fn new(metric: Option<&str>) -> Self {
        Self { metric: metric.map(str::to_string), families: Vec::new(), assembler: None, lines: 0, bytes: 0 }
    }

    /// The first pass (without a metric): notes the histogram families.
    pub fn scan(&mut self, piece: &str) -> Result<(), PromError> {
        self.count(piece)?;
        for s in samples_from(piece, self.lines) {
            note_family(&mut self.families, &s?);
        }
        self.lines += piece.lines().count();
        Ok(())
    }

    /// The second pass: files the family's samples under their series.
    pub fn feed(&mut self, piece: &str) -> Result<(), PromError> {
        let assembler = match &mut self.assembler {
            Some(a) => a,
            None => {
                let family = match &self.metric {
                    Some(m) => m.clone(),
                    None => only_family(core::mem::take(&mut self.families))?,
                };
                (self.lines, self.bytes) = (0, 0);
                self.assembler.insert(Assembler::new(&family))
            }
        };
        let total = self.bytes + piece.len();
        if total > MAX_TEXT_BYTES {
            return Err(PromError::TooLarge { size: total, unit: "bytes" });
        }
        self.bytes = total;
        for s in samples_from(piece, self.lines) {
            assembler.feed(&s?)?;
        }
        self.lines += piece.lines().count();
        Ok(())
    }

    /// Hands over every histogram, in label order ([`each_histogram_in_text`]).
    pub fn finish(&mut self, each: &mut dyn FnMut(Histogram)) -> Result<(), PromError> {
        self.feed("")?;
        match self.assembler.take() {
            Some(a) => a.finish(each),
            None => Ok(()),
        }
    }

    fn count(&mut self, piece: &str) -> Result<(), PromError> {
        self.bytes += piece.len();
        if self.bytes > MAX_TEXT_BYTES {
            return Err(PromError::TooLarge { size: self.bytes, unit: "bytes" });
        }
        Ok(())
    }
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// Parses a sample value as Prometheus writes it: `+Inf`, `-Inf`, `NaN`,
/// or a decimal number with an optional exponent.
pub fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" => Some(f64::NAN),
        _ => parse_decimal(s),
    }
}

/// Consumes an optional `-` or `+` at `b[*i]`; `true` for `-`.
fn sign(b: &[u8], i: &mut usize) -> bool {
    match b.get(*i) {
        Some(b'-') => {
            *i += 1;
            true
        }
        Some(b'+') => {
            *i += 1;
            false
        }
        _ => false,
    }
}

/// A decimal number (`-12.5e-3`) to `f64` without the standard library's
/// float parser, whose tables would add kilobytes (gzip) to the Wasm
/// build. Exact (correctly rounded) when the digits fit in 2^53 and the
/// decimal exponent is within ±22, which covers every bucket bound and count
/// an exporter writes; otherwise within a few ulps.
pub fn parse_decimal(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0;
    let neg = sign(b, &mut i);
    let (mut mant, mut exp, mut any) = (0u64, 0i32, false);
    let digit = |d: u8, frac: bool, mant: &mut u64, exp: &mut i32| {
        if *mant < 100_000_000_000_000_000 {
            *mant = *mant * 10 + u64::from(d - b'0');
            if frac {
                *exp -= 1;
            }
        } else if !frac {
            // Digits beyond 18 only scale an integer part.
            *exp += 1;
        }
    };
    while i < b.len() && b[i].is_ascii_digit() {
        digit(b[i], false, &mut mant, &mut exp);
        any = true;
        i += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            digit(b[i], true, &mut mant, &mut exp);
            any = true;
            i += 1;
        }
    }
    if !any {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        let eneg = sign(b, &mut i);
        let start = i;
        let mut e = 0i32;
        while i < b.len() && b[i].is_ascii_digit() {
            e = (e * 10 + i32::from(b[i] - b'0')).min(10_000);
            i += 1;
        }
        if i == start {
            return None;
        }
        exp += if eneg { -e } else { e };
    }
    if i != b.len() {
        return None;
    }
    let m = mant as f64;
    let v = if mant == 0 {
        0.0
    } else if exp == 0 {
        m
    } else if mant <= 1 << 53 && (0..=22).contains(&exp) {
        // 10^exp is exact up to 10^22, so one rounding.
        m * 10f64.powi(exp)
    } else if mant <= 1 << 53 && (-22..0).contains(&exp) {
        m / 10f64.powi(-exp)
    } else {
        let e = exp.clamp(-400, 400);
        if e < 0 {
            m / 10f64.powi(-e.max(-300)) / 10f64.powi(-(e + 300).min(0))
        } else {
            m * 10f64.powi(e)
        }
    };
    Some(if neg { -v } else { v })
}

#[inline(never)] // one copy in the Wasm build, though three loops call it
fn parse_line(line: &str, loc: Loc) -> Result<PromSample, PromError> {
    let mut chars = line.char_indices().peekable();
    match chars.peek() {
        Some(&(_, c)) if is_name_start(c) => {}
        _ => return Err(syntax(loc, "metric name", Message::new(msg::NAME_START))),
    }
    let mut end = line.len();
    while let Some(&(i, c)) = chars.peek() {
        if !is_name_char(c) {
            end = i;
            break;
        }
        chars.next();
    }
    // `end` is a char boundary (from char_indices); `split_at_checked`
    // keeps the panic path (and its formatting code) out of the build.
    let (name, after) = line.split_at_checked(end).unwrap_or((line, ""));
    let mut labels = Vec::new();
    let mut rest = after;
    if let Some(body) = rest.strip_prefix('{') {
        let (parsed, after) = parse_labels(body, loc)?;
        labels = parsed;
        rest = after;
    }
    if !rest.starts_with([' ', '\t']) {
        return Err(syntax(loc, "metric name", Message::new(msg::AFTER_NAME).arg("name", name)));
    }
    let mut parts = rest.split_ascii_whitespace();
    let value_text = parts.next().ok_or_else(|| syntax(loc, "value", Message::new(msg::MISSING)))?;
    let value = parse_value(value_text)
        .ok_or_else(|| syntax(loc, "value", Message::new(msg::NOT_A_NUMBER).arg("text", value_text)))?;
    if let Some(ts) = parts.next() {
        if ts.parse::<i64>().is_err() {
            return Err(syntax(loc, "timestamp", Message::new(msg::TIMESTAMP).arg("text", ts)));
        }
    }
    if let Some(extra) = parts.next() {
        return Err(syntax(loc, "value", Message::new(msg::AFTER_TIMESTAMP).arg("text", extra)));
    }
    Ok(PromSample { name: name.to_string(), labels, value, loc })
}

type Labels = Vec<(String, String)>;

/// Parses `name="value",…}` and returns the labels and the text after `}`.
fn parse_labels(mut s: &str, loc: Loc) -> Result<(Labels, &str), PromError> {
    let mut labels: Vec<(String, String)> = Vec::new();
    loop {
        s = s.trim_start();
        if let Some(after) = s.strip_prefix('}') {
            return Ok((labels, after));
        }
        let n = s.find(|c: char| !is_name_char(c)).unwrap_or(s.len());
        let (lname, after) = s.split_at_checked(n).unwrap_or((s, ""));
        if lname.is_empty() || !lname.starts_with(is_name_start) {
            return Err(syntax(loc, "label name", Message::new(msg::LABEL_NAME)));
        }
        s = after.trim_start();
        s = s
            .strip_prefix('=')
            .ok_or_else(|| syntax(loc, "label name", Message::new(msg::EQUALS).arg("name", lname)))?;
        s = s.trim_start();
        s = s
            .strip_prefix('"')
            .ok_or_else(|| syntax(loc, "label value", Message::new(msg::UNQUOTED).arg("name", lname)))?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let close = loop {
            match chars.next() {
                None => return Err(syntax(loc, "label value", Message::new(msg::UNCLOSED).arg("name", lname))),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    other => {
                        let escape = other.map_or(Message::new(msg::END_OF_LINE), |(_, c)| {
                            Message::new(msg::ESCAPE).arg("char", String::from(c))
                        });
                        let detail = Message::new(msg::BAD_ESCAPE).arg("escape", escape).arg("name", lname);
                        return Err(syntax(loc, "label value", detail));
                    }
                },
                Some((_, c)) => value.push(c),
            }
        };
        if labels.iter().any(|(k, _)| k == lname) {
            return Err(syntax(loc, "label name", Message::new(msg::TWICE).arg("name", lname)));
        }
        if labels.len() >= MAX_LABELS {
            return Err(syntax(loc, "label name", Message::new(msg::TOO_MANY_LABELS).arg("max", MAX_LABELS)));
        }
        labels.push((lname.to_string(), value));
        s = s.get(close + 1..).unwrap_or("").trim_start();
        if let Some(after) = s.strip_prefix(',') {
            s = after;
        } else if !s.starts_with('}') {
            return Err(syntax(loc, "label value", Message::new(msg::AFTER_VALUE).arg("name", lname)));
        }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn decimal_parser_matches_std() {
        for t in [
            "0",
            "-0",
            "0.005",
            "0.025",
            ".5",
            "5.",
            "1e3",
            "2.5E-3",
            "+Inf",
            "17",
            "123456789012345678901234",
            "1e-400",
            "1e400",
            "0.1",
            "0.3",
            "1262.75",
            "9007199254740993",
        ] {
            let want: f64 = t.parse().unwrap();
            let got = parse_value(t).unwrap();
            assert!(got == want || (got - want).abs() <= want.abs() * 1e-15, "{t}: {got} vs {want}");
        }
        for bad in ["", ".", "-", "e5", "1e", "1.2.3", "0x10", "1 ", "five", "1e+"] {
            assert_eq!(parse_value(bad), None, "{bad}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn decimal_parser_is_exact_on_the_fast_path(m in 0u64..(1 << 53), e in -22i32..=22, neg in any::<bool>()) {
            let t = format!("{}{m}e{e}", if neg { "-" } else { "" });
            prop_assert_eq!(parse_decimal(&t), t.parse::<f64>().ok());
            let d = format!("{}.{:03}", m / 1000, m % 1000);
            prop_assert_eq!(parse_decimal(&d), d.parse::<f64>().ok());
        }

        #[test]
        fn decimal_parser_is_close_elsewhere(x in any::<f64>()) {
            prop_assume!(x.is_finite() && (x == 0.0 || x.abs() > 1e-300));
            let t = format!("{x:e}");
            let got = parse_decimal(&t).unwrap();
            prop_assert!(got == x || ((got - x) / x).abs() <= 1e-14, "{t}: {got} vs {x}");
        }
    }
}
