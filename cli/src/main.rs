//! `edge-deadline`: derive timeouts from recorded durations or Prometheus
//! histograms, and simulate timeout-and-retry policies, on the command line.
//!
//! Everything numeric is done by the library's pure core
//! (`edge_deadline::core`); this crate reads input (streaming, in constant
//! memory), parses flags, talks HTTP(S) to Prometheus and prints. It is its
//! own crate so that none of that (clap, csv, serde, ureq, rustls) reaches
//! the library or its WebAssembly build.

mod http;
mod input;
mod report;

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};

use clap::error::ErrorKind;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use edge_deadline::core::deadline::check_ms;
use edge_deadline::core::derive::{
    derive_exposition, derive_histograms, derive_sketch, BucketResult, DeriveError, DeriveOptions, Deriver, Excluded,
    Outcome,
};
use edge_deadline::core::prom::{self, PromSample};
use edge_deadline::core::simulate::{resolve_timeout, simulate, Body, Policy, Sampler, Scenario, SimulateError, Tail};
use edge_deadline::core::sketch::LatencySketch;
use serde_json::Value;

use input::{Format, Progress, RowSpec};
use report::Meta;

#[derive(Parser)]
#[command(
    name = "edge-deadline",
    version,
    about = "Timeouts derived from data, not typed",
    long_about = "Timeouts derived from data, not typed.\n\nWith no command, derives from a built-in demonstration data set.",
    after_help = "Exit status: 0 done, 1 bad input data or I/O, 2 bad command line."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

// Parsed once per run: the size of the larger variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Derive timeouts from recorded durations (CSV with a header, JSON Lines,
    /// the Prometheus text format, a saved Prometheus query response) or from
    /// a live Prometheus server: per bucket, p50/p90/p99/p99.9 and
    /// timeout = quantile(q) x safety, from successful calls only.
    #[command(
        after_help = "Examples:\n  edge-deadline derive durations.csv --by model,prompt_bucket\n  edge-deadline derive --prometheus https://prom.example:9090 --metric http_request_duration_seconds --bearer-token-env PROM_TOKEN\n  edge-deadline derive --aggregator https://your.worker/_timeouts --bearer-token-env TIMEOUTS_READ_TOKEN"
    )]
    Derive(DeriveArgs),
    /// Simulate per-attempt timeouts and retries on a lognormal body plus a
    /// uniform slow tail (by default: median 40 ms, sigma 0.348, 0.5% of calls
    /// in 300..1500 ms).
    Simulate(SimulateArgs),
}

#[derive(Args)]
#[command(group = clap::ArgGroup::new("remote").args(["prometheus", "aggregator"]).multiple(false))]
struct DeriveArgs {
    /// The input file, or '-' for standard input.
    #[arg(
        value_name = "FILE",
        required_unless_present_any = ["prometheus", "sketch", "aggregator"],
        conflicts_with_all = ["prometheus", "sketch", "aggregator"]
    )]
    file: Option<String>,
    /// Read the table a fleet aggregator serves (GET URL/table: a
    /// TimeoutAggregator Durable Object or a Deno KV aggregator, http:// or https://),
    /// with its read token from --bearer-token-env VAR.
    #[arg(
        long,
        value_name = "URL",
        conflicts_with_all = ["prometheus", "sketch", "by", "format", "column", "unit", "outcome_column", "relative_error", "skip_bad", "q", "safety", "background", "stall", "configured"]
    )]
    aggregator: Option<String>,
    /// Merge these sketches (LatencySketch toBytes() files, or JSON lines of
    /// their JSON form) and derive from them.
    #[arg(
        long,
        value_name = "FILE",
        num_args = 1..,
        conflicts_with_all = ["prometheus", "by", "format", "column", "unit", "outcome_column", "relative_error", "skip_bad"]
    )]
    sketch: Vec<String>,
    /// Input format (default: guessed from the first line).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// The duration column or field.
    #[arg(long, value_name = "NAME", default_value = "ms")]
    column: String,
    /// Unit of the duration column.
    #[arg(long, value_enum, default_value = "ms")]
    unit: Unit,
    /// The outcome column or label [default: outcome]: success, timeout or
    /// error words, or HTTP status codes (2xx success, 408 and 504 timeout,
    /// other 4xx and 5xx error). Input without the default column counts
    /// every row as a success; a column named here must exist.
    #[arg(long, value_name = "NAME")]
    outcome_column: Option<String>,
    /// Group into buckets by these columns or labels.
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    by: Vec<String>,
    /// The percentile, as a fraction (default 0.99; 0.999 with --background).
    #[arg(long, visible_alias = "quantile", value_name = "FRACTION", value_parser = parse_q, allow_negative_numbers = true)]
    q: Option<f64>,
    /// Background work: p99.9 instead of p99.
    #[arg(long)]
    background: bool,
    /// Multiple applied to the percentile, 1..100 (default 2; 5 with --stall).
    #[arg(long, value_name = "MULTIPLE", value_parser = parse_safety, allow_negative_numbers = true)]
    safety: Option<f64>,
    /// Stall limits: safety 5.
    #[arg(long)]
    stall: bool,
    /// The timeout in force now, in ms: checks drift and pile-ups.
    #[arg(long, value_name = "MS", value_parser = parse_configured, allow_negative_numbers = true)]
    configured: Option<f64>,
    /// Sketch accuracy for raw durations.
    #[arg(long, value_name = "FRACTION", value_parser = parse_relative_error, allow_negative_numbers = true)]
    relative_error: Option<f64>,
    /// The histogram family (Prometheus input).
    #[arg(long, value_name = "NAME")]
    metric: Option<String>,
    /// Query a Prometheus server (http:// or https://) for NAME_bucket.
    #[arg(long, value_name = "URL", requires = "metric")]
    prometheus: Option<String>,
    /// With --prometheus: use increase(NAME_bucket[WINDOW]), e.g. 1h.
    #[arg(long, value_name = "WINDOW", requires = "prometheus")]
    window: Option<String>,
    #[command(flatten)]
    http: http::HttpArgs,
    /// Print a JSON config (percentile, safety, n, date) instead of a table.
    #[arg(long)]
    json: bool,
    /// Count and skip malformed lines instead of stopping at the first.
    #[arg(long)]
    skip_bad: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum Unit {
    Ms,
    S,
    #[value(alias = "µs")]
    Us,
}

#[derive(Args)]
struct SimulateArgs {
    /// Median of the lognormal body, ms.
    #[arg(long, value_name = "MS", value_parser = |t: &str| scenario_value(t, |s, v| s.body.median_ms = v), allow_negative_numbers = true)]
    median: Option<f64>,
    /// Sigma of the lognormal body.
    #[arg(long, value_parser = |t: &str| scenario_value(t, |s, v| s.body.sigma = v), allow_negative_numbers = true)]
    sigma: Option<f64>,
    /// Share of calls in the slow tail (0.005 is 0.5%).
    #[arg(long, value_name = "SHARE", value_parser = |t: &str| scenario_value(t, |s, v| s.tail.share = v), allow_negative_numbers = true)]
    tail_share: Option<f64>,
    /// Lower bound of the slow tail, ms.
    #[arg(long, value_name = "MS", value_parser = parse_ms, allow_negative_numbers = true)]
    tail_lo: Option<f64>,
    /// Upper bound of the slow tail, ms.
    #[arg(long, value_name = "MS", value_parser = parse_ms, allow_negative_numbers = true)]
    tail_hi: Option<f64>,
    /// Number of simulated calls.
    #[arg(long, allow_negative_numbers = true)]
    n: Option<usize>,
    /// Seed of the random draws.
    #[arg(long, allow_negative_numbers = true)]
    seed: Option<u64>,
    /// Timeout (ms, or p50/p90/p99/p99.9, optionally multiplied: 2xp99) and
    /// retries, as T:R; repeatable (default: p99:0 2xp99:0 p99.9:0 p99:1).
    #[arg(long, value_name = "T:R")]
    policy: Vec<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// A core error message without its leading parameter name (`'q' must …` →
/// `must …`): clap already names the flag as typed.
fn without_param(message: String) -> String {
    match message.strip_prefix('\'').and_then(|m| m.split_once("' ")) {
        Some((_, rest)) => rest.to_string(),
        None => message,
    }
}

fn number(t: &str) -> Result<f64, String> {
    t.trim().parse::<f64>().map_err(|_| "expects a number".to_string())
}

/// Validates one derive option through the core, on top of the defaults.
fn derive_value(t: &str, set: impl Fn(&mut DeriveOptions, f64)) -> Result<f64, String> {
    let v = number(t)?;
    let mut o = DeriveOptions::user_facing();
    set(&mut o, v);
    o.validate().map(|()| v).map_err(|e| without_param(e.to_string()))
}

fn parse_q(t: &str) -> Result<f64, String> {
    derive_value(t, |o, v| o.q = v)
}

fn parse_safety(t: &str) -> Result<f64, String> {
    derive_value(t, |o, v| o.safety = v)
}

fn parse_configured(t: &str) -> Result<f64, String> {
    derive_value(t, |o, v| o.configured_ms = Some(v))
}

fn parse_relative_error(t: &str) -> Result<f64, String> {
    let v = number(t)?;
    LatencySketch::new(v).map(|_| v).map_err(|e| without_param(e.to_string()))
}

fn parse_ms(t: &str) -> Result<f64, String> {
    check_ms("ms", number(t)?).map_err(|e| without_param(e.to_string()))
}

/// Validates one scenario parameter through the core's sampler, on top of
/// seed 003's scenario.
fn scenario_value(t: &str, set: impl Fn(&mut Scenario, f64)) -> Result<f64, String> {
    let v = number(t)?;
    let mut s = Scenario::seed_003();
    set(&mut s, v);
    Sampler::new(&s).map(|_| v).map_err(|e| without_param(e.to_string()))
}

enum Exit {
    /// A command line that clap accepted but that cannot run; exit 2.
    Usage(ErrorKind, String),
    /// Bad input data or I/O; exit 1.
    Data(String),
}

fn data(m: impl Into<String>) -> Exit {
    Exit::Data(m.into())
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        None => demo().map_err(|e| (e, "")),
        Some(Command::Derive(a)) => derive_cmd(&a).map_err(|e| (e, "derive")),
        Some(Command::Simulate(a)) => simulate_cmd(&a).map_err(|e| (e, "simulate")),
    };
    match result {
        Ok(()) => {}
        Err((Exit::Usage(kind, m), name)) => {
            let mut cmd = Cli::command();
            cmd.build();
            match cmd.find_subcommand_mut(name) {
                Some(sub) => sub.error(kind, m).exit(),
                None => cmd.error(kind, m).exit(),
            }
        }
        Err((Exit::Data(m), _)) => {
            // Bad data's message may quote the data (a refusal's body, a bucket
            // name): one line, nothing a terminal would act on.
            eprintln!("edge-deadline: {}", report::plain(&m));
            std::process::exit(1);
        }
    }
}

/// Writes to stdout, ignoring a closed pipe (`edge-deadline … | head`).
fn out(text: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes());
    let _ = o.flush();
}

fn options(a: &DeriveArgs) -> DeriveOptions {
    let mut o = if a.background { DeriveOptions::background() } else { DeriveOptions::user_facing() };
    if a.stall {
        o.safety = DeriveOptions::stall().safety;
    }
    o.q = a.q.unwrap_or(o.q);
    o.safety = a.safety.unwrap_or(o.safety);
    o.relative_error = a.relative_error.unwrap_or(o.relative_error);
    o.configured_ms = a.configured;
    o
}

fn print_results(results: &[BucketResult], opts: &DeriveOptions, meta: &Meta, as_json: bool) {
    if as_json {
        out(&report::json(results, opts.q, opts.safety, meta));
    } else {
        out(&report::table(results, opts.q, opts.safety, meta));
    }
}

/// A core error, with option names as the command line spells them.
fn flagged(e: &DeriveError) -> String {
    match e {
        DeriveError::Prom(prom::PromError::Ambiguous { found }) => {
            format!("several histograms are present ({}): choose one with --metric", found.join(", "))
        }
        e => e.to_string(),
    }
}

fn derive_cmd(a: &DeriveArgs) -> Result<(), Exit> {
    let opts = options(a);
    if let Some(url) = &a.prometheus {
        return prometheus_cmd(a, url, &opts);
    }
    if !a.sketch.is_empty() {
        return sketch_cmd(a, &opts);
    }
    if let Some(url) = &a.aggregator {
        return aggregator_cmd(a, url);
    }
    let path = a.file.clone().unwrap_or_else(|| "-".into());
    let to_ms = match a.unit {
        Unit::Ms => 1.0,
        Unit::S => 1000.0,
        Unit::Us => 0.001,
    };
    let (reader, size): (Box<dyn Read>, Option<u64>) = if path == "-" {
        (Box::new(std::io::stdin().lock()), None)
    } else {
        let file = File::open(&path).map_err(|e| data(format!("cannot open '{path}': {e}")))?;
        let size = file.metadata().ok().map(|m| m.len());
        (Box::new(file), size)
    };
    let mut reader = BufReader::with_capacity(1 << 18, reader);
    let head = reader.fill_buf().map_err(|e| data(format!("cannot read '{path}': {e}")))?;
    // A UTF-8 byte order mark (as spreadsheets write) is not part of the data.
    let bom = head.starts_with(b"\xEF\xBB\xBF");
    let format = a.format.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(&head[if bom { 3 } else { 0 }..head.len().min(4096)]);
        Format::sniff(text.lines().find(|l| !l.trim().is_empty()).unwrap_or(""))
    });
    if bom {
        reader.consume(3);
    }
    let source = if path == "-" { "standard input".to_string() } else { path.clone() };
    let outcome_label = a.outcome_column.as_deref().unwrap_or("outcome");
    let by_refs: Vec<&str> = a.by.iter().map(String::as_str).collect();
    let metric = a.metric.as_deref();
    let mut meta = Meta {
        source: source.clone(),
        derived_at: report::utc_now(),
        configured_ms: opts.configured_ms,
        skipped: 0,
        notes: vec![],
    };
    let results = match format {
        Format::Prom | Format::PromJson => {
            let mut text = String::new();
            reader.read_to_string(&mut text).map_err(|e| data(format!("cannot read '{path}' as UTF-8 text: {e}")))?;
            if format == Format::Prom {
                derive_exposition(&text, metric, &by_refs, Some(outcome_label), &opts)
                    .map_err(|e| data(format!("{source}: {}", flagged(&e))))?
            } else {
                let samples = prom_json_samples(&text, metric).map_err(|e| data(format!("{source}: {e}")))?;
                from_samples(&samples, metric, &by_refs, outcome_label, &opts)
                    .map_err(|e| data(format!("{source}: {e}")))?
            }
        }
        Format::Csv | Format::Jsonl => {
            let spec = RowSpec {
                column: a.column.clone(),
                outcome_column: outcome_label.to_string(),
                outcome_explicit: a.outcome_column.is_some(),
                by: a.by.clone(),
                to_ms,
            };
            let mut deriver = Deriver::new(opts, a.by.clone()).map_err(|e| data(e.to_string()))?;
            let mut progress = Progress::new(size);
            let stats = input::stream(reader, format, &spec, &mut deriver, a.skip_bad, &mut progress).map_err(|m| {
                progress.done();
                data(format!("{source}: {m}"))
            })?;
            if stats.skipped > 0 {
                eprintln!(
                    "edge-deadline: skipped {} malformed line{} of {} (first: {})",
                    stats.skipped,
                    if stats.skipped == 1 { "" } else { "s" },
                    stats.lines,
                    report::plain(&stats.first_errors.join("; "))
                );
            }
            meta.skipped = stats.skipped;
            meta.notes = stats.notes;
            deriver.results()
        }
    };
    print_results(&results, &opts, &meta, a.json);
    Ok(())
}

/// The sketches of one `--sketch` file: the raw bytes of `toBytes()`, or
/// text with one sketch per line, as the JSON form (`{"bytes": "…"}`) or bare
/// base64, so a log of `JSON.stringify(sketch)` lines reads as it is.
fn read_sketches(path: &str) -> Result<Vec<LatencySketch>, String> {
    use base64::Engine as _;
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read '{path}': {e}"))?;
    if bytes.starts_with(&edge_deadline::core::sketch::MAGIC) {
        return LatencySketch::from_bytes(&bytes).map(|s| vec![s]).map_err(|e| e.to_string());
    }
    let text = String::from_utf8(bytes).map_err(|_| "neither a sketch from toBytes() nor text".to_string())?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let line = line.trim();
        let b64 = match serde_json::from_str::<Value>(line) {
            Ok(v) => v.get("bytes").and_then(Value::as_str).map(str::to_owned),
            Err(_) => Some(line.to_owned()),
        };
        let raw = b64.and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok()).ok_or_else(|| {
            format!("line {} is neither a sketch's JSON form (with \"bytes\") nor base64 of toBytes()", i + 1)
        })?;
        out.push(LatencySketch::from_bytes(&raw).map_err(|e| format!("line {}: {e}", i + 1))?);
    }
    if out.is_empty() {
        return Err("holds no sketch".into());
    }
    Ok(out)
}

/// `derive --aggregator URL`: the table the fleet's aggregator derived
/// (its percentile and safety), printed as the other derivations are; its
/// warnings and censoring floors become notes.
fn aggregator_cmd(a: &DeriveArgs, url: &str) -> Result<(), Exit> {
    if !url.starts_with("https://") && !url.starts_with("http://") {
        return Err(Exit::Usage(
            ErrorKind::ValueValidation,
            format!("--aggregator '{url}': must start with http:// or https://"),
        ));
    }
    let table_url = format!("{}/table", url.trim_end_matches('/'));
    let authorization = a.http.bearer().map_err(|(kind, m)| Exit::Usage(kind, m))?;
    let (status, body) = http::get(&table_url, a.http.timeout(), authorization.as_deref()).map_err(data)?;
    if status == 401 || status == 403 {
        let hint = if authorization.is_some() {
            "the token of --bearer-token-env is not the aggregator's read token"
        } else {
            "the aggregator asks for its read token: pass --bearer-token-env VAR"
        };
        return Err(data(format!("GET {table_url} answered HTTP {status}: {hint}")));
    }
    if status != 200 {
        let detail: String = body.chars().take(300).collect();
        return Err(data(format!("GET {table_url} answered HTTP {status}: {detail}")));
    }
    let table: Value =
        serde_json::from_str(&body).map_err(|e| data(format!("GET {table_url}: not a JSON table ({e})")))?;
    let (results, notes, q, safety) =
        aggregator_results(&table).map_err(|m| data(format!("GET {table_url}: not an aggregator's table: {m}")))?;
    let meta = Meta {
        source: format!("the aggregator at {url} ({} window(s) of {} ms)", table["windows"], table["windowMs"]),
        derived_at: table["derivedAt"].as_str().unwrap_or_default().to_string(),
        configured_ms: None,
        skipped: 0,
        notes,
    };
    let opts = DeriveOptions { q, safety, ..DeriveOptions::default() };
    print_results(&results, &opts, &meta, a.json);
    Ok(())
}

/// The buckets of an aggregator's table (its JSON, version 1) as derivation
/// results, with its warnings and floors as notes.
fn aggregator_results(t: &Value) -> Result<(Vec<BucketResult>, Vec<String>, f64, f64), String> {
    if t["v"].as_u64() != Some(1) {
        return Err(format!("version {} (this CLI reads 1)", t["v"]));
    }
    let num = |v: &Value, k: &str| v[k].as_f64().ok_or_else(|| format!("'{k}' is not a number"));
    let (q, safety) = (num(t, "q")?, num(t, "safety")?);
    let buckets = t["buckets"].as_object().ok_or("'buckets' is not an object")?;
    let mut results = Vec::new();
    let mut notes = Vec::new();
    for (name, row) in buckets {
        let count = |k: &str| row[k].as_u64().ok_or_else(|| format!("{name}: '{k}' is not a count"));
        let opt = |k: &str| row[k].as_f64();
        let timeout_ms = opt("timeoutMs");
        if let Some(f) = opt("floorMs") {
            notes.push(format!(
                "{name}: served at no less than {} (the censoring floor: the timeout in force when calls timed out)",
                report::fmt_ms(f)
            ));
        }
        for w in row["warnings"].as_array().into_iter().flatten() {
            notes.push(format!("{name}: {}", w["message"].as_str().unwrap_or_default()));
        }
        results.push(BucketResult {
            labels: vec![("bucket".into(), name.clone())],
            n: count("n")?,
            p50_ms: opt("p50"),
            p90_ms: None,
            p99_ms: opt("p99"),
            p999_ms: None,
            quantile_ms: timeout_ms.map(|t| t / safety),
            timeout_ms,
            q,
            safety,
            excluded: Excluded { timeouts: count("timeouts")?, errors: count("errors")? },
            tail: None,
            candidates: Vec::new(),
            warnings: Vec::new(),
        });
    }
    Ok((results, notes, q, safety))
}

/// `derive --sketch FILE…`: merges every sketch (one place, as a Durable
/// Object would) and derives one bucket from the result.
fn sketch_cmd(a: &DeriveArgs, opts: &DeriveOptions) -> Result<(), Exit> {
    let mut merged: Option<LatencySketch> = None;
    let mut n = 0;
    for path in &a.sketch {
        for s in read_sketches(path).map_err(|m| data(format!("{path}: {m}")))? {
            n += 1;
            match &mut merged {
                None => merged = Some(s),
                Some(m) => m.merge(&s).map_err(|e| data(format!("{path}: {e}")))?,
            }
        }
    }
    let merged = merged.unwrap_or_default();
    let result = derive_sketch(&merged, Excluded::default(), opts).map_err(|e| data(flagged(&e)))?;
    let meta = Meta {
        source: format!("{n} sketch{} ({})", if n == 1 { "" } else { "es" }, a.sketch.join(", ")),
        derived_at: report::utc_now(),
        configured_ms: opts.configured_ms,
        skipped: 0,
        notes: vec![],
    };
    print_results(&[result], opts, &meta, a.json);
    Ok(())
}

fn from_samples(
    samples: &[PromSample],
    metric: Option<&str>,
    by: &[&str],
    outcome_label: &str,
    opts: &DeriveOptions,
) -> Result<Vec<BucketResult>, String> {
    let hists = prom::histograms(samples, metric).map_err(|e| flagged(&DeriveError::Prom(e)))?;
    derive_histograms(&hists, by, Some(outcome_label), opts).map_err(|e| flagged(&e))
}

/// Reads a Prometheus query API response (`resultType: vector`) into
/// samples. Results without `__name__` (as from `increase()`) are named
/// `METRIC_bucket`.
fn prom_json_samples(text: &str, metric: Option<&str>) -> Result<Vec<PromSample>, String> {
    let v: Value = serde_json::from_str(text.trim()).map_err(|e| input::json_error(&e))?;
    match v.get("status").and_then(Value::as_str) {
        Some("success") => {}
        Some(s) => {
            let e = v.get("error").and_then(Value::as_str).unwrap_or("no error message");
            return Err(format!("the query failed (status '{s}'): {e}"));
        }
        None => return Err("not a Prometheus query response: no 'status' field".into()),
    }
    let data = v.get("data").ok_or("not a Prometheus query response: no 'data' field")?;
    match data.get("resultType").and_then(Value::as_str) {
        Some("vector") => {}
        Some(t) => {
            return Err(format!(
                "result type '{t}' is not supported: query an instant vector, such as NAME_bucket or increase(NAME_bucket[1h])"
            ))
        }
        None => return Err("no 'data.resultType' field".into()),
    }
    let results = data.get("result").and_then(Value::as_array).ok_or("no 'data.result' array")?;
    let fallback = metric.map(|m| format!("{}_bucket", m.strip_suffix("_bucket").unwrap_or(m)));
    let mut out = Vec::with_capacity(results.len());
    for (i, r) in results.iter().enumerate() {
        let loc = prom::Loc { kind: "result", index: i + 1 };
        let m = r.get("metric").and_then(Value::as_object).ok_or_else(|| format!("{loc}: no 'metric' object"))?;
        let mut name = None;
        let mut labels = Vec::new();
        for (k, val) in m {
            let s = val.as_str().ok_or_else(|| format!("{loc}: label '{k}' is not a string"))?;
            if k == "__name__" {
                name = Some(s.to_string());
            } else {
                labels.push((k.clone(), s.to_string()));
            }
        }
        let name = name
            .or_else(|| fallback.clone())
            .ok_or_else(|| format!("{loc}: the result has no __name__ (as after increase()): pass --metric"))?;
        let value = match r.get("value").and_then(Value::as_array).map(Vec::as_slice) {
            Some([_, v]) => v.as_str().and_then(prom::parse_value),
            _ => None,
        }
        .ok_or_else(|| format!("{loc}: 'value' must be [timestamp, \"number\"]"))?;
        out.push(PromSample { name, labels, value, loc });
    }
    Ok(out)
}

fn prometheus_cmd(a: &DeriveArgs, url: &str, opts: &DeriveOptions) -> Result<(), Exit> {
    // clap guarantees --metric with --prometheus.
    let metric = a.metric.as_deref().unwrap_or_default();
    let family = metric.strip_suffix("_bucket").unwrap_or(metric);
    let client = a.http.client(url).map_err(|(kind, m)| Exit::Usage(kind, m))?;
    let query = match &a.window {
        Some(w) => format!("increase({family}_bucket[{w}])"),
        None => format!("{family}_bucket"),
    };
    let (status, body) = client.query(&query).map_err(|e| data(format!("{url}: {e}")))?;
    if status != 200 {
        let detail = serde_json::from_str::<Value>(body.trim())
            .ok()
            .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| body.chars().take(200).collect());
        return Err(data(format!("{url}: Prometheus answered {status} to '{query}': {detail}")));
    }
    let samples = prom_json_samples(&body, Some(family)).map_err(|e| data(format!("{url}: {e}")))?;
    let by_refs: Vec<&str> = a.by.iter().map(String::as_str).collect();
    let outcome = a.outcome_column.as_deref().unwrap_or("outcome");
    let results =
        from_samples(&samples, Some(family), &by_refs, outcome, opts).map_err(|e| data(format!("{url}: {e}")))?;
    let meta = Meta {
        source: format!("{url} ({query})"),
        derived_at: report::utc_now(),
        configured_ms: opts.configured_ms,
        skipped: 0,
        notes: vec![],
    };
    print_results(&results, opts, &meta, a.json);
    Ok(())
}

/// A simulation error, with the flag that set the value.
fn simulate_error(e: &SimulateError, specs: &[&str]) -> Exit {
    let m = match e {
        SimulateError::TailOrder { lo_ms, hi_ms } => {
            format!("--tail-lo ({lo_ms}) must not exceed --tail-hi ({hi_ms})")
        }
        SimulateError::Retries { index, .. } | SimulateError::Timeout { index, .. } => {
            let spec = specs.get(*index).copied().unwrap_or("?");
            let text = e.to_string();
            format!("--policy '{spec}': {}", text.split_once(": ").map_or(text.as_str(), |(_, m)| m))
        }
        SimulateError::Policies { .. } => format!("--policy: {e}"),
        SimulateError::Calls { .. } => format!("--n: {}", without_param(e.to_string())),
        e => e.to_string(),
    };
    Exit::Usage(ErrorKind::ValueValidation, m)
}

fn simulate_cmd(a: &SimulateArgs) -> Result<(), Exit> {
    let d = Scenario::seed_003();
    let scenario = Scenario {
        body: Body { median_ms: a.median.unwrap_or(d.body.median_ms), sigma: a.sigma.unwrap_or(d.body.sigma) },
        tail: Tail {
            share: a.tail_share.unwrap_or(d.tail.share),
            lo_ms: a.tail_lo.unwrap_or(d.tail.lo_ms),
            hi_ms: a.tail_hi.unwrap_or(d.tail.hi_ms),
        },
        n: a.n.unwrap_or(d.n),
        seed: a.seed.unwrap_or(d.seed),
    };
    let mut specs: Vec<&str> = a.policy.iter().map(String::as_str).collect();
    if specs.is_empty() {
        specs = vec!["p99:0", "2xp99:0", "p99.9:0", "p99:1"];
    }
    let base = simulate(&scenario, &[]).map_err(|e| simulate_error(&e, &specs))?;
    let mut policies = Vec::new();
    for s in &specs {
        let (t, r) = s.split_once(':').unwrap_or((s, "0"));
        let timeout_ms = resolve_timeout(t.trim(), &base.scenario).ok_or_else(|| {
            Exit::Usage(ErrorKind::ValueValidation, format!("--policy '{s}': the timeout must be milliseconds or one of p50, p90, p99, p99.9, optionally multiplied (2xp99)"))
        })?;
        let retries = r.trim().parse::<u32>().map_err(|_| {
            Exit::Usage(ErrorKind::ValueValidation, format!("--policy '{s}': retries must be a whole number"))
        })?;
        policies.push(Policy { timeout_ms, retries });
    }
    let sim = simulate(&scenario, &policies).map_err(|e| simulate_error(&e, &specs))?;
    let labeled: Vec<report::Labeled<'_>> =
        specs.iter().zip(&sim.policies).map(|(s, r)| report::Labeled { label: (*s).to_string(), result: r }).collect();
    if a.json {
        out(&report::simulation_json(&scenario, &sim, &labeled));
    } else {
        out(&report::simulation_table(&scenario, &sim, &labeled));
    }
    Ok(())
}

/// No arguments: derive from seed 003's dependency in two prompt-size
/// buckets, with a 5 s timeout in force, so a newcomer sees every part of
/// the output at once.
fn demo() -> Result<(), Exit> {
    let configured = 5000.0;
    let opts = DeriveOptions { configured_ms: Some(configured), ..DeriveOptions::user_facing() };
    let mut d = Deriver::new(opts, vec!["prompt".into()]).map_err(|e| data(e.to_string()))?;
    let short = Scenario::seed_003();
    let long = Scenario {
        body: Body { median_ms: 160.0, ..short.body },
        tail: Tail { share: 0.005, lo_ms: 1200.0, hi_ms: 6000.0 },
        seed: 2,
        ..short
    };
    for (label, s) in [("short", short), ("long", long)] {
        let sampler = Sampler::new(&s).map_err(|e| data(e.to_string()))?;
        for i in 0..100_000u64 {
            let ms = sampler.draw(i, 0);
            let (outcome, ms) = if i % 500 == 7 {
                (Outcome::Error, None)
            } else if ms > configured {
                (Outcome::Timeout, Some(configured))
            } else {
                (Outcome::Success, Some(ms))
            };
            d.add(&[label], outcome, ms).map_err(|e| data(e.to_string()))?;
        }
    }
    let meta = Meta {
        source: "a built-in demonstration (a dependency with a 0.5% slow tail, two prompt sizes, a 5000 ms timeout in force)".into(),
        derived_at: report::utc_now(),
        configured_ms: Some(configured),
        skipped: 0,
        notes: vec![],
    };
    out(&report::table(&d.results(), opts.q, opts.safety, &meta));
    out("\nYour data: edge-deadline derive durations.csv --by model,prompt_bucket   (edge-deadline --help)\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn an_aggregator_table_becomes_results_and_notes() {
        let t: Value = serde_json::from_str(
            r#"{"v":1,"derivedAt":"2026-12-05T13:00:00.000Z","windowMs":3600000,"windows":24,"q":0.99,"safety":2,
            "buckets":{"chat":{"n":5000,"timeouts":90,"errors":3,"timeoutMs":300,"p50":40,"p99":150,"floorMs":400,
            "falseTimeoutRate":0.001,"warnings":[{"code":"censored","message":"many calls timed out"}]}}}"#,
        )
        .unwrap();
        let (results, notes, q, safety) = aggregator_results(&t).unwrap();
        assert_eq!((q, safety), (0.99, 2.0));
        assert_eq!(results[0].labels, vec![("bucket".to_string(), "chat".to_string())]);
        assert_eq!((results[0].n, results[0].excluded.timeouts, results[0].excluded.errors), (5000, 90, 3));
        assert_eq!((results[0].timeout_ms, results[0].quantile_ms), (Some(300.0), Some(150.0)));
        assert!(notes[0].contains("chat") && notes[0].contains("floor"), "{notes:?}");
        assert_eq!(notes[1], "chat: many calls timed out");
        let mut newer = t.clone();
        newer["v"] = 2.into();
        assert!(aggregator_results(&newer).unwrap_err().contains("version 2"));
        let mut bad = t;
        bad["buckets"]["chat"]["n"] = "many".into();
        assert!(aggregator_results(&bad).unwrap_err().contains("'n'"));
    }

    #[test]
    fn core_messages_lose_their_parameter_name() {
        assert_eq!(without_param("'q' must be less than 1".into()), "must be less than 1");
        assert_eq!(without_param("no quote".into()), "no quote");
    }
}
