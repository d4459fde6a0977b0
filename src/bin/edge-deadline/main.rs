//! `edge-deadline`: derive timeouts from recorded durations or Prometheus
//! histograms, and simulate timeout-and-retry policies, on the command line.
//!
//! Everything numeric is done by the library's pure core
//! (`edge_deadline::core`); this binary reads input (streaming, in constant
//! memory), parses flags, talks HTTP to Prometheus and prints. It is a host
//! program: none of it reaches the WebAssembly build.

mod http;
mod input;
mod json;
mod report;

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};

use edge_deadline::core::derive::{
    derive_exposition, derive_histograms, prom, BucketResult, DeriveOptions, Deriver, Outcome, PromSample,
};
use edge_deadline::core::simulate::{simulate, Body, Percentiles, Policy, Sampler, Scenario, Tail};

use input::{Format, Progress, RowSpec};
use json::Json;
use report::Meta;

const USAGE: &str = "\
edge-deadline: timeouts derived from data, not typed

usage:
  edge-deadline                        derive from a built-in demonstration data set
  edge-deadline derive FILE|- [options]
  edge-deadline derive --prometheus URL --metric NAME [options]
  edge-deadline simulate [options]

derive: reads durations of calls (CSV with a header, JSON Lines, the Prometheus
text format or a saved Prometheus query response), keeps the successful ones and
prints, per bucket, p50/p90/p99/p99.9 and timeout = quantile(q) x safety.
  --format csv|jsonl|prom|prom-json   input format (default: guessed from the first line)
  --column NAME          duration column or field (default: ms)
  --unit ms|s|us         unit of that column (default: ms)
  --outcome-column NAME  outcome column (default: outcome; absent = all successes)
  --by a,b               group into buckets by these columns / labels
  --q 0.99               percentile (0.99 user-facing; --background for 0.999)
  --safety 2             multiple applied to it (1..100; --stall for 5)
  --configured MS        the timeout in force now: checks drift and pile-ups
  --metric NAME          histogram family (Prometheus input)
  --prometheus URL       query a Prometheus server (http:// only) for NAME_bucket
  --window 1h            with --prometheus: use increase(NAME_bucket[1h])
  --relative-error 0.01  sketch accuracy for raw durations
  --json                 print a JSON config (percentile, safety, n, date)
  --skip-bad             count and skip malformed lines instead of stopping

simulate: per-attempt timeout and retries on a lognormal body + uniform slow tail
  --median 40 --sigma 0.348 --tail-share 0.005 --tail-lo 300 --tail-hi 1500
  --n 200000 --seed 1
  --policy T:R           timeout (ms, or p50/p90/p99/p99.9, or 2xp99) and retries;
                         repeatable (default: p99:0 2xp99:0 p99.9:0 p99:1)
  --json

exit status: 0 done, 1 bad input data or I/O, 2 bad command line
";

enum Exit {
    Usage(String),
    Data(String),
}

fn usage<T>(m: impl Into<String>) -> Result<T, Exit> {
    Err(Exit::Usage(m.into()))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match run(&args) {
        Ok(()) => 0,
        Err(Exit::Usage(m)) => {
            eprintln!("edge-deadline: {m}\n(run 'edge-deadline --help' for usage)");
            2
        }
        Err(Exit::Data(m)) => {
            eprintln!("edge-deadline: {m}");
            1
        }
    };
    std::process::exit(code);
}

/// Writes to stdout, ignoring a closed pipe (`edge-deadline … | head`).
fn out(text: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes());
    let _ = o.flush();
}

fn run(args: &[String]) -> Result<(), Exit> {
    match args.first().map(String::as_str) {
        None => demo(),
        Some("-h" | "--help" | "help") => {
            out(USAGE);
            Ok(())
        }
        Some("-V" | "--version") => {
            out(concat!("edge-deadline ", env!("CARGO_PKG_VERSION"), "\n"));
            Ok(())
        }
        Some("derive") => derive_cmd(&Flags::parse(&args[1..], DERIVE_VALUES, DERIVE_SWITCHES)?),
        Some("simulate") => simulate_cmd(&Flags::parse(&args[1..], SIM_VALUES, &["json"])?),
        Some(other) => usage(format!("unknown command '{other}': use derive or simulate")),
    }
}

const DERIVE_VALUES: &[&str] = &[
    "format",
    "column",
    "unit",
    "outcome-column",
    "by",
    "q",
    "safety",
    "configured",
    "metric",
    "prometheus",
    "window",
    "relative-error",
];
const DERIVE_SWITCHES: &[&str] = &["json", "skip-bad", "background", "stall"];
const SIM_VALUES: &[&str] = &["median", "sigma", "tail-share", "tail-lo", "tail-hi", "n", "seed", "policy"];

/// Parsed `--flag value`, `--flag=value` and `--switch` arguments.
struct Flags {
    positional: Vec<String>,
    values: Vec<(String, String)>,
    switches: Vec<String>,
}

impl Flags {
    fn parse(args: &[String], values: &[&str], switches: &[&str]) -> Result<Flags, Exit> {
        let mut f = Flags { positional: Vec::new(), values: Vec::new(), switches: Vec::new() };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if a == "-" || !a.starts_with("--") {
                if a.starts_with('-') && a != "-" {
                    return usage(format!("unknown option '{a}'"));
                }
                f.positional.push(a.clone());
                continue;
            }
            let (name, inline) = match a[2..].split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (&a[2..], None),
            };
            if values.contains(&name) {
                let v = match inline {
                    Some(v) => v,
                    None => it.next().cloned().ok_or_else(|| Exit::Usage(format!("'--{name}' needs a value")))?,
                };
                f.values.push((name.to_string(), v));
            } else if switches.contains(&name) && inline.is_none() {
                f.switches.push(name.to_string());
            } else {
                return usage(format!("unknown option '--{name}'"));
            }
        }
        Ok(f)
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.values.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn all(&self, name: &str) -> Vec<&str> {
        self.values.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect()
    }

    fn has(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }

    fn num(&self, name: &str) -> Result<Option<f64>, Exit> {
        match self.get(name) {
            None => Ok(None),
            Some(t) => t
                .trim()
                .parse::<f64>()
                .map(Some)
                .map_err(|_| Exit::Usage(format!("'--{name}' expects a number: current value is '{t}'"))),
        }
    }
}

fn options(f: &Flags) -> Result<DeriveOptions, Exit> {
    let mut o = if f.has("background") { DeriveOptions::background() } else { DeriveOptions::user_facing() };
    if f.has("stall") {
        o.safety = DeriveOptions::stall().safety;
    }
    if let Some(q) = f.num("q")? {
        o.q = q;
    }
    if let Some(s) = f.num("safety")? {
        o.safety = s;
    }
    if let Some(r) = f.num("relative-error")? {
        o.relative_error = r;
    }
    o.configured_ms = f.num("configured")?;
    o.validate().map_err(|e| Exit::Usage(e.to_string()))?;
    Ok(o)
}

fn by_list(f: &Flags) -> Vec<String> {
    f.get("by")
        .map_or_else(Vec::new, |b| b.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
}

fn print_results(results: &[BucketResult], opts: &DeriveOptions, meta: &Meta, as_json: bool) {
    if as_json {
        out(&report::json(results, opts.q, opts.safety, meta));
    } else {
        out(&report::table(results, opts.q, opts.safety, meta));
    }
}

fn derive_cmd(f: &Flags) -> Result<(), Exit> {
    let opts = options(f)?;
    let by = by_list(f);
    let as_json = f.has("json");
    if let Some(url) = f.get("prometheus") {
        if !f.positional.is_empty() {
            return usage("give either a FILE or --prometheus, not both");
        }
        return prometheus_cmd(f, url, &by, &opts, as_json);
    }
    let path = match f.positional.as_slice() {
        [p] => p.clone(),
        [] => return usage("derive needs a FILE, '-' for standard input, or --prometheus URL --metric NAME"),
        _ => return usage(format!("derive reads one input, got {}", f.positional.join(" "))),
    };
    let to_ms = match f.get("unit").unwrap_or("ms") {
        "ms" => 1.0,
        "s" => 1000.0,
        "us" | "µs" => 0.001,
        other => return usage(format!("'--unit' must be ms, s or us: current value is '{other}'")),
    };
    let format = f
        .get("format")
        .map(|s| {
            Format::parse(s).ok_or_else(|| {
                Exit::Usage(format!("'--format' must be csv, jsonl, prom or prom-json: current value is '{s}'"))
            })
        })
        .transpose()?;
    let (reader, size): (Box<dyn Read>, Option<u64>) = if path == "-" {
        (Box::new(std::io::stdin().lock()), None)
    } else {
        let file = File::open(&path).map_err(|e| Exit::Data(format!("cannot open '{path}': {e}")))?;
        let size = file.metadata().ok().map(|m| m.len());
        (Box::new(file), size)
    };
    let mut reader = BufReader::with_capacity(1 << 18, reader);
    let format = match format {
        Some(fm) => fm,
        None => {
            let head = reader.fill_buf().map_err(|e| Exit::Data(format!("cannot read '{path}': {e}")))?;
            let text = String::from_utf8_lossy(&head[..head.len().min(4096)]).to_string();
            Format::sniff(text.lines().find(|l| !l.trim().is_empty()).unwrap_or(""))
        }
    };
    let source = if path == "-" { "standard input".to_string() } else { path.clone() };
    let outcome_label = f.get("outcome-column").unwrap_or("outcome");
    let by_refs: Vec<&str> = by.iter().map(String::as_str).collect();
    match format {
        Format::Prom | Format::PromJson => {
            let mut text = String::new();
            reader
                .read_to_string(&mut text)
                .map_err(|e| Exit::Data(format!("cannot read '{path}' as UTF-8 text: {e}")))?;
            let results = if format == Format::Prom {
                derive_exposition(&text, f.get("metric"), &by_refs, Some(outcome_label), &opts)
                    .map_err(|e| Exit::Data(format!("{source}: {e}")))?
            } else {
                let samples =
                    prom_json_samples(&text, f.get("metric")).map_err(|e| Exit::Data(format!("{source}: {e}")))?;
                from_samples(&samples, f.get("metric"), &by_refs, outcome_label, &opts)
                    .map_err(|e| Exit::Data(format!("{source}: {e}")))?
            };
            let meta = Meta {
                source,
                derived_at: report::utc_now(),
                configured_ms: opts.configured_ms,
                skipped: 0,
                notes: vec![],
            };
            print_results(&results, &opts, &meta, as_json);
            Ok(())
        }
        Format::Csv | Format::Jsonl => {
            let spec = RowSpec {
                column: f.get("column").unwrap_or("ms").to_string(),
                outcome_column: outcome_label.to_string(),
                outcome_explicit: f.get("outcome-column").is_some(),
                by: by.clone(),
                to_ms,
            };
            let mut deriver = Deriver::new(opts, by).map_err(|e| Exit::Usage(e.to_string()))?;
            let mut progress = Progress::new(size);
            let stats =
                input::stream(reader, format, &spec, &mut deriver, f.has("skip-bad"), &mut progress).map_err(|m| {
                    progress.done();
                    Exit::Data(format!("{source}: {m}"))
                })?;
            if stats.skipped > 0 {
                eprintln!(
                    "edge-deadline: skipped {} malformed line{} of {} (first: {})",
                    stats.skipped,
                    if stats.skipped == 1 { "" } else { "s" },
                    stats.lines,
                    stats.first_errors.join("; ")
                );
            }
            let meta = Meta {
                source,
                derived_at: report::utc_now(),
                configured_ms: opts.configured_ms,
                skipped: stats.skipped,
                notes: stats.notes,
            };
            print_results(&deriver.results(), &opts, &meta, as_json);
            Ok(())
        }
    }
}

fn from_samples(
    samples: &[PromSample],
    metric: Option<&str>,
    by: &[&str],
    outcome_label: &str,
    opts: &DeriveOptions,
) -> Result<Vec<BucketResult>, String> {
    let hists = prom::histograms(samples, metric).map_err(|e| e.to_string())?;
    derive_histograms(&hists, by, Some(outcome_label), opts).map_err(|e| e.to_string())
}

/// Reads a Prometheus query API response (`resultType: vector`) into
/// samples. Results without `__name__` (as from `increase()`) are named
/// `METRIC_bucket`.
fn prom_json_samples(text: &str, metric: Option<&str>) -> Result<Vec<PromSample>, String> {
    let v = json::parse(text.trim())?;
    match v.get("status").and_then(Json::as_str) {
        Some("success") => {}
        Some(s) => {
            let e = v.get("error").and_then(Json::as_str).unwrap_or("no error message");
            return Err(format!("the query failed (status '{s}'): {e}"));
        }
        None => return Err("not a Prometheus query response: no 'status' field".into()),
    }
    let data = v.get("data").ok_or("not a Prometheus query response: no 'data' field")?;
    match data.get("resultType").and_then(Json::as_str) {
        Some("vector") => {}
        Some(t) => {
            return Err(format!(
                "result type '{t}' is not supported: query an instant vector, such as NAME_bucket or increase(NAME_bucket[1h])"
            ))
        }
        None => return Err("no 'data.resultType' field".into()),
    }
    let Some(Json::Arr(results)) = data.get("result") else {
        return Err("no 'data.result' array".into());
    };
    let fallback = metric.map(|m| format!("{}_bucket", m.strip_suffix("_bucket").unwrap_or(m)));
    let mut out = Vec::with_capacity(results.len());
    for (i, r) in results.iter().enumerate() {
        let loc = prom::Loc { kind: "result", index: i + 1 };
        let Some(Json::Obj(m)) = r.get("metric") else {
            return Err(format!("{loc}: no 'metric' object"));
        };
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
        let value = match r.get("value") {
            Some(Json::Arr(pair)) if pair.len() == 2 => pair[1].as_str().and_then(prom::parse_value),
            _ => None,
        }
        .ok_or_else(|| format!("{loc}: 'value' must be [timestamp, \"number\"]"))?;
        out.push(PromSample { name, labels, value, loc });
    }
    Ok(out)
}

fn prometheus_cmd(f: &Flags, url: &str, by: &[String], opts: &DeriveOptions, as_json: bool) -> Result<(), Exit> {
    let metric =
        f.get("metric").ok_or_else(|| Exit::Usage("--prometheus needs --metric NAME (the histogram family)".into()))?;
    let family = metric.strip_suffix("_bucket").unwrap_or(metric);
    let u = http::parse_url(url).map_err(Exit::Usage)?;
    let query = match f.get("window") {
        Some(w) => format!("increase({family}_bucket[{w}])"),
        None => format!("{family}_bucket"),
    };
    let (status, body) = http::get(&u, &format!("/api/v1/query?query={}", http::encode(&query)))
        .map_err(|e| Exit::Data(format!("{url}: {e}")))?;
    if status != 200 {
        let detail = json::parse(body.trim())
            .ok()
            .and_then(|v| v.get("error").and_then(Json::as_str).map(str::to_string))
            .unwrap_or_else(|| body.chars().take(200).collect());
        return Err(Exit::Data(format!("{url}: Prometheus answered {status} to '{query}': {detail}")));
    }
    let samples = prom_json_samples(&body, Some(family)).map_err(|e| Exit::Data(format!("{url}: {e}")))?;
    let by_refs: Vec<&str> = by.iter().map(String::as_str).collect();
    let outcome = f.get("outcome-column").unwrap_or("outcome");
    let results =
        from_samples(&samples, Some(family), &by_refs, outcome, opts).map_err(|e| Exit::Data(format!("{url}: {e}")))?;
    let meta = Meta {
        source: format!("{url} ({query})"),
        derived_at: report::utc_now(),
        configured_ms: opts.configured_ms,
        skipped: 0,
        notes: vec![],
    };
    print_results(&results, opts, &meta, as_json);
    Ok(())
}

/// A policy's timeout: milliseconds, or a multiple of a scenario percentile.
fn resolve_timeout(text: &str, p: &Percentiles) -> Option<f64> {
    if let Ok(v) = text.parse::<f64>() {
        return Some(v);
    }
    let (mult, name) = match text.split_once(['x', '*']) {
        Some((m, n)) => (m.parse::<f64>().ok()?, n),
        None => (1.0, text),
    };
    let base = match name {
        "p50" => p.p50_ms,
        "p90" => p.p90_ms,
        "p99" => p.p99_ms,
        "p99.9" | "p999" => p.p999_ms,
        _ => return None,
    };
    Some(mult * base)
}

fn simulate_cmd(f: &Flags) -> Result<(), Exit> {
    if let Some(p) = f.positional.first() {
        return usage(format!("simulate takes no file: unexpected '{p}'"));
    }
    let d = Scenario::seed_003();
    let int = |name: &str, dflt: u64| -> Result<u64, Exit> {
        match f.get(name) {
            None => Ok(dflt),
            Some(t) => t
                .trim()
                .parse::<u64>()
                .map_err(|_| Exit::Usage(format!("'--{name}' expects a whole number: current value is '{t}'"))),
        }
    };
    let n = int("n", d.n as u64)?;
    let scenario = Scenario {
        body: Body {
            median_ms: f.num("median")?.unwrap_or(d.body.median_ms),
            sigma: f.num("sigma")?.unwrap_or(d.body.sigma),
        },
        tail: Tail {
            share: f.num("tail-share")?.unwrap_or(d.tail.share),
            lo_ms: f.num("tail-lo")?.unwrap_or(d.tail.lo_ms),
            hi_ms: f.num("tail-hi")?.unwrap_or(d.tail.hi_ms),
        },
        n: usize::try_from(n).unwrap_or(usize::MAX),
        seed: int("seed", d.seed)?,
    };
    let base = simulate(&scenario, &[]).map_err(|e| Exit::Usage(e.to_string()))?;
    let mut specs: Vec<&str> = f.all("policy");
    if specs.is_empty() {
        specs = vec!["p99:0", "2xp99:0", "p99.9:0", "p99:1"];
    }
    let mut policies = Vec::new();
    for s in &specs {
        let (t, r) = s.split_once(':').unwrap_or((s, "0"));
        let timeout_ms = resolve_timeout(t.trim(), &base.scenario).ok_or_else(|| {
            Exit::Usage(format!("policy '{s}': the timeout must be milliseconds or one of p50, p90, p99, p99.9, optionally multiplied (2xp99)"))
        })?;
        let retries = r
            .trim()
            .parse::<u32>()
            .map_err(|_| Exit::Usage(format!("policy '{s}': retries must be a whole number")))?;
        policies.push(Policy { timeout_ms, retries });
    }
    let sim = simulate(&scenario, &policies).map_err(|e| Exit::Usage(e.to_string()))?;
    let labeled: Vec<report::Labeled<'_>> =
        specs.iter().zip(&sim.policies).map(|(s, r)| report::Labeled { label: (*s).to_string(), result: r }).collect();
    if f.has("json") {
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
    let mut d = Deriver::new(opts, vec!["prompt".into()]).map_err(|e| Exit::Data(e.to_string()))?;
    let short = Scenario::seed_003();
    let long = Scenario {
        body: Body { median_ms: 160.0, ..short.body },
        tail: Tail { share: 0.005, lo_ms: 1200.0, hi_ms: 6000.0 },
        seed: 2,
        ..short
    };
    for (label, s) in [("short", short), ("long", long)] {
        let sampler = Sampler::new(&s).map_err(|e| Exit::Data(e.to_string()))?;
        for i in 0..100_000u64 {
            let ms = sampler.draw(i, 0);
            let (outcome, ms) = if i % 500 == 7 {
                (Outcome::Error, None)
            } else if ms > configured {
                (Outcome::Timeout, Some(configured))
            } else {
                (Outcome::Success, Some(ms))
            };
            d.add(&[label], outcome, ms).map_err(|e| Exit::Data(e.to_string()))?;
        }
    }
    let meta = Meta {
        source: "a built-in demonstration (seed 003's dependency, two prompt sizes, a 5000 ms timeout in force)".into(),
        derived_at: report::utc_now(),
        configured_ms: Some(configured),
        skipped: 0,
        notes: vec![],
    };
    out(&report::table(&d.results(), opts.q, opts.safety, &meta));
    out("\nYour data: edge-deadline derive durations.csv --by model,prompt_bucket   (edge-deadline --help)\n");
    Ok(())
}
