//! Rendering: readable tables for people, a JSON config for programs.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use edge_deadline::core::derive::{percentile_name, BucketResult, SAMPLES_BEYOND};
use edge_deadline::core::simulate::{PolicyResult, Scenario, Simulation};
use serde_json::{json, Map, Value};

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

/// The bucket's labels, `k=v,k=v`, with control characters escaped (a
/// label from the input must not drive the terminal).
fn bucket_name(r: &BucketResult) -> String {
    if r.labels.is_empty() {
        "(all)".into()
    } else {
        plain(&r.labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(","))
    }
}

/// `text` from the input (a file, Prometheus, an aggregator) as the table
/// prints it: whole, with control characters and invisible marks escaped, so
/// it can neither drive the terminal nor start a line of its own.
pub fn plain(text: &str) -> String {
    text.chars().map(crate::input::escape_char).collect()
}

/// `x` to `digits` significant digits, as Rust prints the nearest `f64`
/// (`40.17` → `40.2`, `0.3481` → `0.348`).
fn sig(x: f64, digits: i32) -> String {
    if x == 0.0 || !x.is_finite() {
        return "0".into();
    }
    let scale = 10f64.powi(digits - 1 - x.abs().log10().floor() as i32);
    format!("{}", (x * scale).round() / scale)
}

/// The `edge-deadline simulate` command line for a bucket with a slow tail:
/// its p50 as the median, sigma from p50 and p90 (lognormal: p90 = median ·
/// e^(1.2816 σ)), the tail's share and start, its end at p99.9 (at least
/// twice the start), and the recommended timeout with one retry against p99.
fn simulate_flags(r: &BucketResult, t: &edge_deadline::core::tail::TailShape) -> Option<String> {
    let (p50, p90) = (r.p50_ms?, r.p90_ms?);
    let sigma = ((p90 / p50).ln() / 1.2816).clamp(0.01, 4.0);
    let lo = t.tail_start_ms;
    let hi = r.p999_ms.unwrap_or(0.0).max(2.0 * lo);
    Some(format!(
        "edge-deadline simulate --median {} --sigma {} --tail-share {} --tail-lo {} --tail-hi {} --policy p99:0 --policy {}:1",
        sig(p50, 3),
        sig(sigma, 3),
        sig(t.tail_share, 2),
        sig(lo, 3),
        sig(hi, 3),
        sig(t.recommended_ms, 3)
    ))
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
        plain(&meta.source)
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
        let thin: Vec<&str> = under_sampled(r.n).map(|(name, _, _)| name).collect();
        let cell = |name: &str, v: Option<f64>| {
            let text = fmt_opt(v);
            if v.is_some() && thin.contains(&name) {
                format!("({text})")
            } else {
                text
            }
        };
        rows.push(vec![
            bucket_name(r),
            thousands(r.n),
            cell("p50", r.p50_ms),
            cell("p90", r.p90_ms),
            cell("p99", r.p99_ms),
            cell("p99.9", r.p999_ms),
            fmt_opt(r.timeout_ms),
            ex,
        ]);
    }
    out.push_str(&pad(&rows));
    // A legend line per percentile some bucket cannot support: the smallest
    // bucket lacks every one that any bucket lacks.
    let least = results.iter().map(|r| r.n).filter(|&n| n > 0).min().unwrap_or(u64::MAX);
    for (name, _, needed) in under_sampled(least) {
        let _ = writeln!(
            out,
            "({name}): too few calls to measure, an extrapolation: {name} needs at least {} successful calls (10 beyond it)",
            thousands(needed)
        );
    }
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
                "  if slow calls are independent (a retry lands in the body), {} with one retry cuts only the tail: try `{}`",
                fmt_ms(t.recommended_ms),
                simulate_flags(r, t).unwrap_or_else(|| "edge-deadline simulate".into())
            );
        }
        if !r.candidates.is_empty() && (r.tail.is_some() || meta.configured_ms.is_some()) {
            let list: Vec<String> = r
                .candidates
                .iter()
                .map(|c| format!("{} {} -> {}", c.name, fmt_ms(c.timeout_ms), fmt_pct(c.false_timeout_rate)))
                .collect();
            if r.tail.is_none() {
                let _ = writeln!(out, "\n{name}:");
            }
            let _ = writeln!(out, "  false timeouts of healthy calls: {}", list.join(", "));
        }
    }
    let warned: Vec<&BucketResult> = results.iter().filter(|r| !r.warnings.is_empty()).collect();
    if !warned.is_empty() || !meta.notes.is_empty() || meta.skipped > 0 {
        let _ = writeln!(out, "\nwarnings:");
        for n in &meta.notes {
            let _ = writeln!(out, "  {}", plain(n));
        }
        if meta.skipped > 0 {
            let _ = writeln!(out, "  skipped {} malformed lines", thousands(meta.skipped));
        }
        for r in warned {
            for w in &r.warnings {
                let _ = writeln!(out, "  {}: {}", bucket_name(r), plain(&w.to_string()));
            }
        }
    }
    out
}

/// A number for JSON: three decimals (a microsecond for milliseconds),
/// whole numbers without a fraction; `null` when not finite.
fn num(v: f64) -> Value {
    round_to(v, 1e3)
}

/// A share for JSON: six decimals.
fn share(v: f64) -> Value {
    round_to(v, 1e6)
}

fn round_to(v: f64, scale: f64) -> Value {
    if !v.is_finite() {
        return Value::Null;
    }
    let r = (v * scale).round() / scale;
    if r.fract() == 0.0 && r.abs() < 9.0e15 {
        // Exact: |r| < 2^53 and whole.
        Value::from(r as i64)
    } else {
        Value::from(r)
    }
}

fn opt(v: Option<f64>) -> Value {
    v.map_or(Value::Null, num)
}

/// The table's percentile columns: name, JSON key, quantile.
const COLUMNS: [(&str, &str, f64); 4] =
    [("p50", "p50", 0.5), ("p90", "p90", 0.9), ("p99", "p99", 0.99), ("p99.9", "p999", 0.999)];

/// The percentile columns `n` successful calls cannot support: fewer than
/// [`SAMPLES_BEYOND`] calls would lie beyond them, so the value is an
/// extrapolation (and, from raw samples, the largest few calls).
fn under_sampled(n: u64) -> impl Iterator<Item = (&'static str, &'static str, u64)> {
    COLUMNS.into_iter().filter_map(move |(name, key, q)| {
        let needed = (SAMPLES_BEYOND / (1.0 - q)).ceil() as u64;
        (n > 0 && n < needed).then_some((name, key, needed))
    })
}

/// The JSON config: what was derived, from what, when.
pub fn json(results: &[BucketResult], q: f64, safety: f64, meta: &Meta) -> String {
    let buckets: Vec<Value> = results
        .iter()
        .map(|r| {
            let labels: Map<String, Value> = r.labels.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))).collect();
            json!({
                "bucket": labels,
                "n": r.n,
                "p50": opt(r.p50_ms),
                "p90": opt(r.p90_ms),
                "p99": opt(r.p99_ms),
                "p999": opt(r.p999_ms),
                "underSampled": under_sampled(r.n).map(|(_, key, _)| key).collect::<Vec<_>>(),
                "quantileMs": opt(r.quantile_ms),
                "timeoutMs": opt(r.timeout_ms),
                "q": num(r.q),
                "safety": num(r.safety),
                "derivedAt": meta.derived_at,
                "excluded": {"timeouts": r.excluded.timeouts, "errors": r.excluded.errors},
                "tail": r.tail.as_ref().map(|t| json!({
                    "bodyEdgeMs": num(t.body_edge_ms),
                    "tailStartMs": num(t.tail_start_ms),
                    "gapRatio": num(t.gap_ratio),
                    "tailShare": share(t.tail_share),
                    "tailCount": t.tail_count,
                    "stragglers": t.stragglers,
                    "recommendedMs": num(t.recommended_ms),
                })),
                "candidates": r.candidates.iter().map(|c| json!({
                    "name": c.name,
                    "timeoutMs": num(c.timeout_ms),
                    "falseTimeoutRate": share(c.false_timeout_rate),
                })).collect::<Vec<_>>(),
                "warnings": r.warnings.iter().map(|w| json!({"code": w.code(), "message": w.to_string()})).collect::<Vec<_>>(),
            })
        })
        .collect();
    pretty(&json!({
        "generator": concat!("edge-deadline ", env!("CARGO_PKG_VERSION")),
        "derivedAt": meta.derived_at,
        "source": meta.source,
        "percentile": percentile_name(q),
        "q": num(q),
        "safety": num(safety),
        "configuredMs": opt(meta.configured_ms),
        "skippedLines": meta.skipped,
        "notes": meta.notes,
        "buckets": buckets,
    }))
}

fn pretty(v: &Value) -> String {
    // Serializing a Value cannot fail (its keys are strings).
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
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
    pretty(&json!({
        "scenario": {
            "body": {"medianMs": num(s.body.median_ms), "sigma": s.body.sigma},
            "tail": {"share": s.tail.share, "loMs": num(s.tail.lo_ms), "hiMs": num(s.tail.hi_ms)},
            "n": s.n,
            "seed": s.seed,
            "p50Ms": num(sc.p50_ms),
            "p90Ms": num(sc.p90_ms),
            "p99Ms": num(sc.p99_ms),
            "p999Ms": num(sc.p999_ms),
        },
        "policies": policies.iter().map(|p| {
            let r = p.result;
            json!({
                "label": p.label,
                "timeoutMs": num(r.policy.timeout_ms),
                "retries": r.policy.retries,
                "falseTimeoutRate": share(r.first_attempt_timeout_rate),
                "p50Ms": num(r.p50_ms),
                "p99Ms": num(r.p99_ms),
                "p999Ms": num(r.p999_ms),
                "failureRate": share(r.failure_rate),
                "extraLoad": share(r.extra_load),
            })
        }).collect::<Vec<_>>(),
    }))
}
