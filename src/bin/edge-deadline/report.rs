//! Rendering: readable tables for people, a JSON config for programs.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use edge_deadline::core::derive::{percentile_name, BucketResult};
use edge_deadline::core::simulate::{PolicyResult, Scenario, Simulation};

use crate::json::{num, opt, share, write_str};

/// Milliseconds for a table: 2 decimals below 10, 1 below 100, whole above.
pub fn fmt_ms(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v < 10.0 {
        format!("{v:.2} ms")
    } else if v < 100.0 {
        format!("{v:.1} ms")
    } else {
        format!("{v:.0} ms")
    }
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), fmt_ms)
}

pub fn fmt_pct(v: f64) -> String {
    let p = v * 100.0;
    if p == 0.0 {
        "0%".into()
    } else if p < 0.001 {
        format!("{p:.4}%")
    } else if p < 0.1 {
        format!("{p:.3}%")
    } else if p < 10.0 {
        format!("{p:.2}%")
    } else {
        format!("{p:.1}%")
    }
}

/// `1234567` → `"1,234,567"`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn plural(n: u64, word: &str) -> String {
    format!("{} {word}{}", thousands(n), if n == 1 { "" } else { "s" })
}

/// The current UTC time as RFC 3339 (`2026-11-30T12:34:56Z`).
pub fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

fn bucket_name(r: &BucketResult) -> String {
    if r.labels.is_empty() {
        "(all)".into()
    } else {
        r.labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
    }
}

fn pad(cells: &[Vec<String>]) -> String {
    let cols = cells.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| cells.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in cells {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let w = widths[c];
            if c == 0 {
                let _ = write!(line, "{cell:<w$}");
            } else {
                let _ = write!(line, "  {cell:>w$}");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Where the numbers came from, for the header and the JSON config.
pub struct Meta {
    pub source: String,
    pub derived_at: String,
    pub configured_ms: Option<f64>,
    pub skipped: u64,
    pub notes: Vec<String>,
}

/// The readable table.
pub fn table(results: &[BucketResult], q: f64, safety: f64, meta: &Meta) -> String {
    let p = percentile_name(q);
    let total: u64 = results.iter().map(|r| r.n).sum();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "timeouts = {p} x {safety} of successful calls; {} calls in {} bucket{} from {}\n",
        thousands(total),
        results.len(),
        if results.len() == 1 { "" } else { "s" },
        meta.source
    );
    let mut rows =
        vec![["bucket", "n", "p50", "p90", "p99", "p99.9", "timeout", "excluded"].map(String::from).to_vec()];
    for r in results {
        let ex = match (r.excluded.timeouts, r.excluded.errors) {
            (0, 0) => "-".to_string(),
            (t, 0) => plural(t, "timeout"),
            (0, e) => plural(e, "error"),
            (t, e) => format!("{}, {}", plural(t, "timeout"), plural(e, "error")),
        };
        rows.push(vec![
            bucket_name(r),
            thousands(r.n),
            fmt_opt(r.p50_ms),
            fmt_opt(r.p90_ms),
            fmt_opt(r.p99_ms),
            fmt_opt(r.p999_ms),
            fmt_opt(r.timeout_ms),
            ex,
        ]);
    }
    out.push_str(&pad(&rows));
    for r in results {
        let name = bucket_name(r);
        if let Some(t) = &r.tail {
            let gap = match t.stragglers {
                0 => format!("nothing until {}", fmt_ms(t.tail_start_ms)),
                k => format!("only {} until {}", plural(k, "straggler"), fmt_ms(t.tail_start_ms)),
            };
            let _ = writeln!(
                out,
                "\n{name}: a fast body up to {}, then {gap}: a slow tail of {} of calls",
                fmt_ms(t.body_edge_ms),
                fmt_pct(t.tail_share)
            );
            let _ = writeln!(
                out,
                "  if slow calls are independent (a retry lands in the body), {} with one retry cuts only the tail: try `edge-deadline simulate`",
                fmt_ms(t.recommended_ms)
            );
        }
        if !r.candidates.is_empty() && (r.tail.is_some() || meta.configured_ms.is_some()) {
            let list: Vec<String> = r
                .candidates
                .iter()
                .map(|c| format!("{} {} -> {}", c.name, fmt_ms(c.timeout_ms), fmt_pct(c.false_timeout_rate)))
                .collect();
            if r.tail.is_none() {
                let _ = writeln!(out);
            }
            let _ = writeln!(out, "  false timeouts of healthy calls: {}", list.join(", "));
        }
    }
    let warned: Vec<&BucketResult> = results.iter().filter(|r| !r.warnings.is_empty()).collect();
    if !warned.is_empty() || !meta.notes.is_empty() || meta.skipped > 0 {
        let _ = writeln!(out, "\nwarnings:");
        for n in &meta.notes {
            let _ = writeln!(out, "  {n}");
        }
        if meta.skipped > 0 {
            let _ = writeln!(out, "  skipped {} malformed lines", thousands(meta.skipped));
        }
        for r in warned {
            for w in &r.warnings {
                let _ = writeln!(out, "  {}: {w}", bucket_name(r));
            }
        }
    }
    out
}

/// The JSON config: what was derived, from what, when.
pub fn json(results: &[BucketResult], q: f64, safety: f64, meta: &Meta) -> String {
    let mut o = String::new();
    o.push_str("{\n  \"generator\": ");
    write_str(&mut o, concat!("edge-deadline ", env!("CARGO_PKG_VERSION")));
    o.push_str(",\n  \"derivedAt\": ");
    write_str(&mut o, &meta.derived_at);
    o.push_str(",\n  \"source\": ");
    write_str(&mut o, &meta.source);
    o.push_str(",\n  \"percentile\": ");
    write_str(&mut o, &percentile_name(q));
    let _ = write!(
        o,
        ",\n  \"q\": {},\n  \"safety\": {},\n  \"configuredMs\": {},\n  \"skippedLines\": {},\n  \"notes\": [",
        num(q),
        num(safety),
        opt(meta.configured_ms),
        meta.skipped
    );
    for (i, n) in meta.notes.iter().enumerate() {
        if i > 0 {
            o.push_str(", ");
        }
        write_str(&mut o, n);
    }
    o.push_str("],\n  \"buckets\": [");
    for (i, r) in results.iter().enumerate() {
        o.push_str(if i == 0 { "\n    {" } else { ",\n    {" });
        o.push_str("\"bucket\": {");
        for (j, (k, v)) in r.labels.iter().enumerate() {
            if j > 0 {
                o.push_str(", ");
            }
            write_str(&mut o, k);
            o.push_str(": ");
            write_str(&mut o, v);
        }
        let _ = write!(
            o,
            "}}, \"n\": {}, \"p50\": {}, \"p90\": {}, \"p99\": {}, \"p999\": {}, \"quantileMs\": {}, \"timeoutMs\": {}, \"q\": {}, \"safety\": {}, \"derivedAt\": ",
            r.n,
            opt(r.p50_ms),
            opt(r.p90_ms),
            opt(r.p99_ms),
            opt(r.p999_ms),
            opt(r.quantile_ms),
            opt(r.timeout_ms),
            num(r.q),
            num(r.safety)
        );
        write_str(&mut o, &meta.derived_at);
        let _ = write!(
            o,
            ", \"excluded\": {{\"timeouts\": {}, \"errors\": {}}}, \"tail\": ",
            r.excluded.timeouts, r.excluded.errors
        );
        match &r.tail {
            Some(t) => {
                let _ = write!(
                    o,
                    "{{\"bodyEdgeMs\": {}, \"tailStartMs\": {}, \"gapRatio\": {}, \"tailShare\": {}, \"tailCount\": {}, \"stragglers\": {}, \"recommendedMs\": {}}}",
                    num(t.body_edge_ms),
                    num(t.tail_start_ms),
                    num(t.gap_ratio),
                    share(t.tail_share),
                    t.tail_count,
                    t.stragglers,
                    num(t.recommended_ms)
                );
            }
            None => o.push_str("null"),
        }
        o.push_str(", \"candidates\": [");
        for (j, c) in r.candidates.iter().enumerate() {
            if j > 0 {
                o.push_str(", ");
            }
            o.push_str("{\"name\": ");
            write_str(&mut o, &c.name);
            let _ = write!(
                o,
                ", \"timeoutMs\": {}, \"falseTimeoutRate\": {}}}",
                num(c.timeout_ms),
                share(c.false_timeout_rate)
            );
        }
        o.push_str("], \"warnings\": [");
        for (j, w) in r.warnings.iter().enumerate() {
            if j > 0 {
                o.push_str(", ");
            }
            o.push_str("{\"code\": ");
            write_str(&mut o, w.code());
            o.push_str(", \"message\": ");
            write_str(&mut o, &w.to_string());
            o.push('}');
        }
        o.push_str("]}");
    }
    o.push_str(if results.is_empty() { "]\n}\n" } else { "\n  ]\n}\n" });
    o
}

/// A policy as the user wrote it, with its resolved numbers.
pub struct Labeled<'a> {
    pub label: String,
    pub result: &'a PolicyResult,
}

pub fn simulation_table(s: &Scenario, sim: &Simulation, policies: &[Labeled<'_>]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scenario: lognormal body (median {}, sigma {}) + {} tail uniform {}..{}, {} calls, seed {}",
        fmt_ms(s.body.median_ms),
        s.body.sigma,
        fmt_pct(s.tail.share),
        fmt_ms(s.tail.lo_ms),
        fmt_ms(s.tail.hi_ms),
        thousands(s.n as u64),
        s.seed
    );
    let sc = &sim.scenario;
    let _ = writeln!(
        out,
        "  p50 {}   p90 {}   p99 {}   p99.9 {}\n",
        fmt_ms(sc.p50_ms),
        fmt_ms(sc.p90_ms),
        fmt_ms(sc.p99_ms),
        fmt_ms(sc.p999_ms)
    );
    let mut rows = vec![[
        "policy",
        "timeout",
        "retries",
        "false timeouts",
        "e2e p50",
        "e2e p99",
        "e2e p99.9",
        "failures",
        "extra load",
    ]
    .map(String::from)
    .to_vec()];
    for p in policies {
        let r = p.result;
        rows.push(vec![
            p.label.clone(),
            fmt_ms(r.policy.timeout_ms),
            r.policy.retries.to_string(),
            fmt_pct(r.first_attempt_timeout_rate),
            fmt_ms(r.p50_ms),
            fmt_ms(r.p99_ms),
            fmt_ms(r.p999_ms),
            fmt_pct(r.failure_rate),
            fmt_pct(r.extra_load),
        ]);
    }
    out.push_str(&pad(&rows));
    let _ = writeln!(
        out,
        "\nA call fails when every attempt times out; its end-to-end time is the time spent ((retries + 1) x timeout).\nEach attempt is an independent draw: retries help only when slow calls are independent."
    );
    out
}

pub fn simulation_json(s: &Scenario, sim: &Simulation, policies: &[Labeled<'_>]) -> String {
    let sc = &sim.scenario;
    let mut o = format!(
        "{{\n  \"scenario\": {{\"body\": {{\"medianMs\": {}, \"sigma\": {}}}, \"tail\": {{\"share\": {}, \"loMs\": {}, \"hiMs\": {}}}, \"n\": {}, \"seed\": {}, \"p50Ms\": {}, \"p90Ms\": {}, \"p99Ms\": {}, \"p999Ms\": {}}},\n  \"policies\": [",
        num(s.body.median_ms),
        s.body.sigma,
        s.tail.share,
        num(s.tail.lo_ms),
        num(s.tail.hi_ms),
        s.n,
        s.seed,
        num(sc.p50_ms),
        num(sc.p90_ms),
        num(sc.p99_ms),
        num(sc.p999_ms)
    );
    for (i, p) in policies.iter().enumerate() {
        let r = p.result;
        o.push_str(if i == 0 { "\n    {\"label\": " } else { ",\n    {\"label\": " });
        write_str(&mut o, &p.label);
        let _ = write!(
            o,
            ", \"timeoutMs\": {}, \"retries\": {}, \"falseTimeoutRate\": {}, \"p50Ms\": {}, \"p99Ms\": {}, \"p999Ms\": {}, \"failureRate\": {}, \"extraLoad\": {}}}",
            num(r.policy.timeout_ms),
            r.policy.retries,
            share(r.first_attempt_timeout_rate),
            num(r.p50_ms),
            num(r.p99_ms),
            num(r.p999_ms),
            share(r.failure_rate),
            share(r.extra_load)
        );
    }
    o.push_str(if policies.is_empty() { "]\n}\n" } else { "\n  ]\n}\n" });
    o
}
