//! The `edge-deadline` binary, run as a user would: small inputs, the
//! messages and exit codes for malformed ones, and a Prometheus query
//! against a one-shot local HTTP server.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The binary under test: this build's, or `EDGE_DEADLINE_BIN` (to run the
/// suite against an installed or older binary).
fn bin() -> String {
    std::env::var("EDGE_DEADLINE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_edge-deadline").to_string())
}

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    {
        let mut input = child.stdin.take().expect("stdin");
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).expect("write stdin");
        }
    }
    child.wait_with_output().expect("the binary exits")
}

fn run_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(bin()).args(args).envs(env.iter().copied()).stdin(Stdio::null()).output().expect("the binary runs")
}

fn text(o: &Output) -> (String, String, i32) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code().unwrap_or(-1),
    )
}

fn temp(name: &str, contents: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("edge-deadline-cli-{}-{name}", std::process::id()));
    std::fs::write(&p, contents).expect("write temp file");
    p
}

fn one_to_hundred_csv() -> String {
    let mut s = String::from("ms,outcome,model\n");
    for i in 1..=100 {
        s.push_str(&format!("{i},ok,m1\n"));
    }
    s.push_str(",timeout,m1\n5000,error,m1\n");
    s
}

#[test]
fn no_arguments_runs_the_demonstration() {
    let (out, err, code) = text(&run(&[], None));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("prompt=short") && out.contains("prompt=long"), "{out}");
    assert!(out.contains("a slow tail of"), "{out}");
    assert!(out.contains("the configured 5000 ms is"), "{out}");
}

#[test]
fn help_and_version() {
    let (out, _, code) = text(&run(&["--help"], None));
    assert_eq!(code, 0);
    assert!(out.contains("Usage:") && out.contains("derive") && out.contains("simulate"), "{out}");
    let (out, _, code) = text(&run(&["--version"], None));
    assert_eq!((code, out.starts_with("edge-deadline ")), (0, true));
}

#[test]
fn derives_a_known_answer_from_a_file() {
    let p = temp("known.csv", &one_to_hundred_csv());
    let (out, err, code) = text(&run(&["derive", p.to_str().unwrap(), "--by", "model"], None));
    assert_eq!(code, 0, "{err}");
    // 1..=100 ms: p99 is 99 ms exactly, the timeout 198 ms.
    let row = out.lines().find(|l| l.starts_with("model=m1")).expect("a row for m1");
    assert!(row.contains("99.0 ms") && row.contains("198 ms"), "{row}");
    assert!(row.contains("1 timeout, 1 error"), "{row}");
    assert!(out.contains("only 100 successful calls: p99 needs at least 1000"), "{out}");

    let (out, _, code) = text(&run(&["derive", p.to_str().unwrap(), "--json", "--safety", "1.5", "--q", "0.5"], None));
    assert_eq!(code, 0);
    let config: serde_json::Value = serde_json::from_str(&out).expect("--json prints JSON");
    assert_eq!(config["buckets"][0]["timeoutMs"], 75);
    for want in [
        "\"percentile\": \"p50\"",
        "\"safety\": 1.5",
        "\"n\": 100",
        "\"quantileMs\": 50",
        "\"timeoutMs\": 75",
        "\"derivedAt\": \"20",
    ] {
        assert!(out.contains(want), "{want} missing in {out}");
    }
    std::fs::remove_file(p).ok();
}

#[test]
fn reads_standard_input_and_json_lines() {
    let rows = "{\"ms\": 10, \"outcome\": \"ok\", \"model\": \"a\"}\n\n{\"ms\": \"20\", \"model\": \"b\"}\n{\"outcome\": \"timeout\", \"model\": \"b\"}\n";
    let (out, err, code) = text(&run(&["derive", "-", "--by", "model"], Some(rows)));
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().any(|l| l.starts_with("model=a") && l.contains("20.0 ms")), "{out}");
    assert!(out.lines().any(|l| l.starts_with("model=b") && l.contains("40.0 ms") && l.contains("1 timeout")), "{out}");
    // Durations in seconds.
    let (out, _, code) = text(&run(&["derive", "-", "--unit", "s", "--format", "csv"], Some("ms\n0.25\n")));
    assert_eq!(code, 0);
    assert!(out.contains("500 ms"), "{out}");
}

#[test]
fn malformed_lines_name_line_and_field() {
    let csv = "ms,outcome\n12,ok\nabc,ok\n15,ok\n";
    let (out, err, code) = text(&run(&["derive", "-"], Some(csv)));
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.contains("line 3, field 'ms': 'abc' is not a number"), "{err}");
    assert!(err.contains("--skip-bad"), "{err}");
    for (args, input, want) in [
        (&["derive", "-"][..], "ms,outcome\n12,maybe\n", "line 2, field 'outcome': 'maybe' is not an outcome"),
        (&["derive", "-"], "ms\n-4\n", "line 2, field 'ms': 'ms' must be between 0"),
        // A quote never closed would swallow the rest of the input.
        (&["derive", "-"], "ms,outcome\n\"12,ok\n", "line 2: field 1 opens a quote that is never closed"),
        (&["derive", "-", "--by", "model"], "ms,model\n12\n", "line 2: expected at least 2 fields, found 1"),
        (
            &["derive", "-", "--column", "dur"],
            "ms,outcome\n1,ok\n",
            "line 1 (header): no column 'dur' (columns: ms, outcome)",
        ),
        (&["derive", "-"], "", "the input is empty"),
        (&["derive", "-"], "{\"ms\": 1}\n{\"ms\": 2,}\n", "line 2: invalid JSON at column 10: trailing comma"),
    ] {
        let (_, err, code) = text(&run(args, Some(input)));
        assert_eq!(code, 1, "{input:?}: {err}");
        assert!(err.contains(want), "{input:?}: {err}");
    }
}

#[test]
fn skip_bad_counts_and_continues() {
    let csv = "ms,outcome\n12,ok\nabc,ok\nNaN,ok\n15,ok\n";
    let (out, err, code) = text(&run(&["derive", "-", "--skip-bad"], Some(csv)));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("skipped 2 malformed lines of 5 (first: line 3, field 'ms'"), "{err}");
    assert!(out.contains("skipped 2 malformed lines"), "{out}");
    let (out, _, _) = text(&run(&["derive", "-", "--skip-bad", "--json"], Some(csv)));
    assert!(out.contains("\"skippedLines\": 2") && out.contains("\"n\": 2"), "{out}");
}

#[test]
fn bad_command_lines_exit_2_naming_the_flag() {
    for (args, want) in [
        (vec!["derive", "-", "--q", "1.5"], "'--q <FRACTION>': must be greater than 0 and less than 1"),
        (vec!["derive", "-", "--safety", "0.5"], "'--safety <MULTIPLE>': must be between 1 and 100"),
        (vec!["derive", "-", "--q", "high"], "invalid value 'high' for '--q <FRACTION>'"),
        (vec!["derive", "-", "--configured", "-5"], "'--configured <MS>'"),
        (vec!["derive", "-", "--relative-error", "0.9"], "'--relative-error <FRACTION>'"),
        (vec!["derive", "-", "--unit", "h"], "invalid value 'h' for '--unit <UNIT>'"),
        (vec!["derive", "-", "--bogus"], "unexpected argument '--bogus'"),
        (vec!["derive"], "<FILE>"),
        (vec!["frobnicate"], "unrecognized subcommand 'frobnicate'"),
        (vec!["derive", "--prometheus", "http://127.0.0.1:9"], "--metric <NAME>"),
        (vec!["derive", "-", "--window", "1h"], "--prometheus <URL>"),
        (
            vec!["derive", "--prometheus", "ftp://x", "--metric", "m"],
            "--prometheus 'ftp://x': must start with http:// or https://",
        ),
        (
            vec!["derive", "--prometheus", "http://x", "--metric", "m", "--ca-file", "/dev/null"],
            "--ca-file applies to an https://",
        ),
        (
            vec!["derive", "--prometheus", "https://x", "--metric", "m", "--ca-file", "/dev/null"],
            "--ca-file /dev/null: no CERTIFICATE",
        ),
        (
            vec![
                "derive",
                "--prometheus",
                "https://x",
                "--metric",
                "m",
                "--bearer-token-env",
                "EDGE_DEADLINE_TEST_UNSET",
            ],
            "--bearer-token-env EDGE_DEADLINE_TEST_UNSET: the environment variable EDGE_DEADLINE_TEST_UNSET is not set",
        ),
        (vec!["simulate", "--policy", "p95:1"], "--policy 'p95:1'"),
        (vec!["simulate", "--policy", "p99:11"], "--policy 'p99:11': 'retries' must be between 0 and 10"),
        (vec!["simulate", "--sigma", "-1"], "'--sigma <SIGMA>': must be between 0 and 4"),
        (vec!["simulate", "--tail-lo", "2000"], "--tail-lo (2000) must not exceed --tail-hi (1500)"),
        (vec!["simulate", "--n", "0"], "--n: must be between 1 and"),
    ] {
        let (_, err, code) = text(&run(&args, Some("")));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn help_on_every_subcommand_exits_0() {
    for args in [
        vec!["--help"],
        vec!["-h"],
        vec!["help"],
        vec!["help", "derive"],
        vec!["derive", "--help"],
        vec!["derive", "-h"],
        vec!["simulate", "--help"],
        vec!["help", "simulate"],
    ] {
        let (out, err, code) = text(&run(&args, None));
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.contains("Usage: edge-deadline"), "{args:?}: {out}");
    }
    let (out, _, _) = text(&run(&["derive", "--help"], None));
    for flag in ["--skip-bad", "--prometheus", "--bearer-token-env", "--basic-auth-env", "--ca-file", "--metric"] {
        assert!(out.contains(flag), "{flag} missing from derive --help");
    }
}

/// Durations 1..=n ms, all successes, one bucket.
fn ramp_csv(n: u32) -> String {
    let mut s = String::from("ms\n");
    for i in 1..=n {
        s.push_str(&format!("{i}\n"));
    }
    s
}

#[test]
fn percentiles_the_data_cannot_support_are_flagged() {
    // 2 767 samples: p99 needs 1 000 (supported), p99.9 needs 10 000 (not).
    let (out, err, code) = text(&run(&["derive", "-"], Some(&ramp_csv(2767))));
    assert_eq!(code, 0, "{err}");
    let row = out.lines().find(|l| l.starts_with("(all)")).expect("a row");
    let cells: Vec<&str> = row.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    // bucket, n, p50, p90, p99, p99.9, timeout, excluded
    assert!(!cells[4].starts_with('('), "p99 is supported: {row}");
    assert!(cells[5].starts_with('(') && cells[5].ends_with(')'), "p99.9 is flagged: {row}");
    assert!(out.contains("(p99.9): too few calls to measure, an extrapolation: p99.9 needs at least 10,000"), "{out}");
    let (out, _, _) = text(&run(&["derive", "-", "--json"], Some(&ramp_csv(2767))));
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["buckets"][0]["underSampled"], serde_json::json!(["p999"]));
    // Enough calls: nothing flagged.
    let (out, _, _) = text(&run(&["derive", "-", "--json"], Some(&ramp_csv(10_000))));
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["buckets"][0]["underSampled"], serde_json::json!([]));
    let (out, _, _) = text(&run(&["derive", "-"], Some(&ramp_csv(10_000))));
    assert!(!out.contains("extrapolation"), "{out}");
}

/// `--json` output without what differs between two runs of the same data.
fn answer(args: &[&str], input: &str) -> serde_json::Value {
    let (out, err, code) = text(&run(args, Some(input)));
    assert_eq!(code, 0, "{args:?}: {err}\n{input}");
    let mut v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    v.as_object_mut().unwrap().retain(|k, _| !matches!(k.as_str(), "derivedAt" | "source"));
    for b in v["buckets"].as_array_mut().unwrap() {
        b.as_object_mut().unwrap().remove("derivedAt");
    }
    v
}

/// Rows of (model label, duration, outcome), with labels that need quoting.
const ROWS: &[(&str, &str, &str)] = &[
    ("gpt, large", "120.5", "ok"),
    ("say \"hi\"", "80", "ok"),
    ("two\nlines", "95.25", "ok"),
    ("gpt, large", "130", "ok"),
    ("plain", "40", "ok"),
    ("gpt, large", "", "timeout"),
    ("say \"hi\"", "70", "error"),
];

fn jsonl_reference() -> String {
    ROWS.iter()
        .map(|(m, ms, o)| {
            let ms =
                if ms.is_empty() { serde_json::Value::Null } else { serde_json::json!(ms.parse::<f64>().unwrap()) };
            serde_json::json!({"model": m, "ms": ms, "outcome": o}).to_string() + "\n"
        })
        .collect()
}

fn quoted_csv(eol: &str, bom: bool) -> String {
    let mut s = String::from(if bom { "\u{feff}" } else { "" });
    s.push_str(&format!("model,ms,outcome{eol}"));
    for (m, ms, o) in ROWS {
        // Quote every label (doubling quotes), and pad the duration with
        // spaces, as spreadsheets and hand edits do.
        s.push_str(&format!("\"{}\", {ms} ,{o}{eol}", m.replace('"', "\"\"")));
    }
    s
}

#[test]
fn csv_edge_cases_give_the_reference_answer() {
    let args = ["derive", "-", "--by", "model", "--json"];
    let reference = answer(&args, &jsonl_reference());
    let labels: Vec<&str> =
        reference["buckets"].as_array().unwrap().iter().map(|b| b["bucket"]["model"].as_str().unwrap()).collect();
    assert_eq!(labels.len(), 4, "{reference}");
    for want in ["gpt, large", "say \"hi\"", "two\nlines", "plain"] {
        assert!(labels.contains(&want), "{want:?} in {labels:?}");
    }
    for (eol, bom) in [("\n", false), ("\r\n", false), ("\n", true), ("\r\n", true)] {
        let csv = quoted_csv(eol, bom);
        assert_eq!(answer(&args, &csv), reference, "eol {eol:?}, bom {bom}:\n{csv}");
        assert_eq!(answer(&["derive", "-", "--by", "model", "--json", "--format", "csv"], &csv), reference);
    }
    // Plain lines first, quotes later (the fast path hands over mid-file),
    // with CRLF: still the reference answer.
    let mut mixed = String::from("model,ms,outcome\r\nplain,40,ok\r\n");
    for (m, ms, o) in ROWS.iter().filter(|r| r.0 != "plain") {
        mixed.push_str(&format!("\"{}\",{ms},{o}\r\n", m.replace('"', "\"\"")));
    }
    assert_eq!(answer(&args, &mixed), reference, "{mixed}");
}

#[test]
fn csv_errors_name_the_line_a_record_starts_on() {
    // The record on line 3 spans lines 3-4; the bad one starts on line 5.
    let csv = "model,ms\nplain,1\n\"two\nlines\",2\n\"x\",abc\n";
    let (_, err, code) = text(&run(&["derive", "-", "--by", "model"], Some(csv)));
    assert_eq!(code, 1);
    assert!(err.contains("line 5, field 'ms': 'abc' is not a number"), "{err}");
    // Blank lines before a record: the line is the record's own.
    let (_, err, code) = text(&run(&["derive", "-"], Some("ms\n1\n\n\r\n\nabc\n")));
    assert_eq!(code, 1);
    assert!(err.contains("line 6, field 'ms': 'abc' is not a number"), "{err}");
    // Invalid UTF-8 in a plain line and in a quoted one.
    for input in [&b"ms,model\n1,a\n2,\xff\n"[..], &b"ms,model\n\"1\",a\n2,\xff\n"[..]] {
        let mut child = Command::new(bin())
            .args(["derive", "-", "--by", "model"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let (_, err, code) = text(&child.wait_with_output().unwrap());
        assert_eq!(code, 1);
        assert!(err.contains("line 3") && err.contains("not valid UTF-8"), "{err}");
    }
}

#[test]
fn malformed_json_lines_are_line_numbered_or_skipped_to_the_reference() {
    let good = jsonl_reference();
    let reference = answer(&["derive", "-", "--by", "model", "--json"], &good);
    for (bad, want) in [
        ("{\"ms\": 2,}", "invalid JSON at column 10: trailing comma"),
        ("{\"ms\": 2", "invalid JSON at column 8: EOF while parsing an object"),
        ("[1, 2]", "expected a JSON object per line"),
        ("{\"ms\": \"fast\", \"model\": \"plain\"}", "field 'ms': 'fast' is not a number"),
        ("{\"ms\": true}", "field 'ms': expected a number of milliseconds, found true"),
        ("{\"model\": \"plain\"}", "field 'ms': missing"),
        ("{\"ms\": 1, \"outcome\": 3}", "field 'outcome': '3' is not an outcome"),
        (
            "{\"ms\": 1, \"outcome\": [1]}",
            "field 'outcome': expected a string, a number (an HTTP status) or a boolean, found [1]",
        ),
        ("{\"ms\": 1, \"outcome\": \"maybe\"}", "field 'outcome': 'maybe' is not an outcome"),
        ("{\"ms\": -1}", "field 'ms'"),
    ] {
        // The bad line goes third: after two good lines.
        let mut lines: Vec<&str> = good.lines().collect();
        lines.insert(2, bad);
        let input = lines.join("\n") + "\n";
        let (out, err, code) = text(&run(&["derive", "-", "--by", "model", "--format", "jsonl"], Some(&input)));
        assert_eq!((code, out.as_str()), (1, ""), "{bad}: {err}");
        assert!(
            err.contains(&format!("line 3{}", if want.starts_with("field") { ", " } else { ": " })),
            "{bad}: {err}"
        );
        assert!(err.contains(want), "{bad}: {err}");
        let skipped = answer(&["derive", "-", "--by", "model", "--json", "--format", "jsonl", "--skip-bad"], &input);
        let mut expected = reference.clone();
        expected["skippedLines"] = serde_json::json!(1);
        assert_eq!(skipped, expected, "{bad}");
    }
}

#[test]
fn ambiguous_prometheus_input_names_the_metric_flag() {
    let two = "a_bucket{le=\"1\"} 1\na_bucket{le=\"+Inf\"} 1\nb_bucket{le=\"1\"} 1\nb_bucket{le=\"+Inf\"} 1\n";
    let (_, err, code) = text(&run(&["derive", "-"], Some(two)));
    assert_eq!(code, 1);
    assert!(err.contains("several histograms are present (a, b): choose one with --metric"), "{err}");
}

const EXPOSITION: &str = "# TYPE lat_seconds histogram
lat_seconds_bucket{op=\"q\",outcome=\"ok\",le=\"0.05\"} 500
lat_seconds_bucket{op=\"q\",outcome=\"ok\",le=\"0.1\"} 990
lat_seconds_bucket{op=\"q\",outcome=\"ok\",le=\"+Inf\"} 1000
lat_seconds_bucket{op=\"q\",outcome=\"timeout\",le=\"0.05\"} 0
lat_seconds_bucket{op=\"q\",outcome=\"timeout\",le=\"0.1\"} 0
lat_seconds_bucket{op=\"q\",outcome=\"timeout\",le=\"+Inf\"} 4
";

#[test]
fn prometheus_text_and_its_errors() {
    let (out, err, code) = text(&run(&["derive", "-", "--by", "op"], Some(EXPOSITION)));
    assert_eq!(code, 0, "{err}");
    let row = out.lines().find(|l| l.starts_with("op=q")).expect("row");
    assert!(
        row.contains("1,000") && row.contains("100 ms") && row.contains("200 ms") && row.contains("4 timeouts"),
        "{row}"
    );
    assert!(out.contains("p99 lies in the bucket 50 ms..100 ms"), "{out}");

    let (_, err, code) =
        text(&run(&["derive", "-"], Some("x_bucket{le=\"1\"} 5\nx_bucket{le=\"2\"} 3\nx_bucket{le=\"+Inf\"} 9\n")));
    assert_eq!(code, 1);
    assert!(err.contains("line 2: bucket le=\"2\" of x counts 3, fewer than the 5"), "{err}");
    let (_, err, code) = text(&run(&["derive", "-", "--format", "prom"], Some("x_bucket{le=\"1\"} 5\n")));
    assert_eq!(code, 1);
    assert!(err.contains("has no le=\"+Inf\" bucket"), "{err}");
    let (_, err, code) = text(&run(&["derive", "-", "--format", "prom"], Some("# x\nx_bucket{le=\"1} 5\n")));
    assert_eq!(code, 1);
    assert!(err.contains("line 2: label value: value of 'le' has no closing quote"), "{err}");
}

/// Serves one HTTP response (chunked) and returns the request head it got
/// (request line and headers, lower-cased header names kept as sent).
fn one_shot_server(status: &'static str, body: String) -> (u16, std::thread::JoinHandle<String>) {
    one_shot_server_with(status, String::new(), body)
}

/// [`one_shot_server`] with extra response header lines (each ending in CRLF).
fn one_shot_server_with(status: &'static str, headers: String, body: String) -> (u16, std::thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let handle = std::thread::spawn(move || {
        // A binary that never connects fails the test instead of hanging it.
        let started = std::time::Instant::now();
        let (mut sock, _) = loop {
            match listener.accept() {
                Ok(s) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && started.elapsed().as_secs() < 30 => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => panic!("no request within 30 s: {e}"),
            }
        };
        sock.set_nonblocking(false).expect("blocking");
        let mut reader = BufReader::new(sock.try_clone().expect("clone"));
        let mut request_line = String::new();
        reader.read_line(&mut request_line).expect("request line");
        let mut line = String::new();
        while reader.read_line(&mut line).map(|n| n > 2).unwrap_or(false) {
            request_line.push_str(&line);
            line.clear();
        }
        let (a, b) = body.split_at(body.len() / 2);
        let resp = format!(
            "HTTP/1.1 {status}\r\n{headers}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
            a.len(),
            b.len()
        );
        sock.write_all(resp.as_bytes()).expect("respond");
        // Dropping the socket closes it: the client reads to the end.
        request_line
    });
    (port, handle)
}

#[test]
fn queries_prometheus_over_http() {
    let mut result = Vec::new();
    for (outcome, les) in
        [("ok", [("0.05", 500), ("0.1", 990), ("+Inf", 1000)]), ("timeout", [("0.05", 0), ("0.1", 0), ("+Inf", 3)])]
    {
        for (le, v) in les {
            result.push(format!(
                "{{\"metric\":{{\"__name__\":\"lat_seconds_bucket\",\"op\":\"q\",\"outcome\":\"{outcome}\",\"le\":\"{le}\"}},\"value\":[1700000000.5,\"{v}\"]}}"
            ));
        }
    }
    let body =
        format!("{{\"status\":\"success\",\"data\":{{\"resultType\":\"vector\",\"result\":[{}]}}}}", result.join(","));
    let (port, server) = one_shot_server("200 OK", body);
    // A path prefix (Prometheus behind a proxy) and basic auth from the environment.
    let url = format!("http://127.0.0.1:{port}/prom/");
    let (out, err, code) = text(&run_env(
        &[
            "derive",
            "--prometheus",
            &url,
            "--metric",
            "lat_seconds",
            "--by",
            "op",
            "--json",
            "--basic-auth-env",
            "EDGE_DEADLINE_TEST_AUTH",
        ],
        &[("EDGE_DEADLINE_TEST_AUTH", "reader:s3cret")],
    ));
    let request = server.join().expect("server");
    assert_eq!(code, 0, "{err}");
    assert!(request.starts_with("GET /prom/api/v1/query?query=lat_seconds_bucket HTTP/1.1"), "{request}");
    // base64("reader:s3cret")
    assert!(request.contains("Basic cmVhZGVyOnMzY3JldA=="), "{request}");
    assert!(
        out.contains("\"p99\": 100") && out.contains("\"timeouts\": 3") && out.contains("\"timeoutMs\": 200"),
        "{out}"
    );

    // increase() over a window: the results carry no __name__.
    let body = "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"le\":\"0.1\"},\"value\":[1,\"10\"]},{\"metric\":{\"le\":\"+Inf\"},\"value\":[1,\"10\"]}]}}";
    let (port, server) = one_shot_server("200 OK", body.to_string());
    let url = format!("http://127.0.0.1:{port}");
    let (out, err, code) =
        text(&run(&["derive", "--prometheus", &url, "--metric", "lat_seconds", "--window", "1h"], None));
    let request = server.join().expect("server");
    assert_eq!(code, 0, "{err}");
    let first = request.lines().next().unwrap_or_default();
    assert!(
        first.contains("query=increase%28lat_seconds_bucket%5B1h%5D%29")
            || first.contains("query=increase(lat_seconds_bucket%5B1h%5D)"),
        "{first}"
    );
    assert!(!request.to_ascii_lowercase().contains("authorization"), "no credentials unless asked: {request}");
    assert!(out.contains("10"), "{out}");

    // An error from Prometheus is shown with its status.
    let body = "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse error: unexpected\"}";
    let (port, server) = one_shot_server("400 Bad Request", body.to_string());
    let url = format!("http://127.0.0.1:{port}");
    let (_, err, code) = text(&run(&["derive", "--prometheus", &url, "--metric", "lat_seconds"], None));
    server.join().expect("server");
    assert_eq!(code, 1);
    assert!(err.contains("Prometheus answered 400 to 'lat_seconds_bucket': parse error: unexpected"), "{err}");
}

#[test]
fn follows_redirects_without_taking_credentials_to_another_host() {
    let body = "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"le\":\"0.1\"},\"value\":[1,\"10\"]},{\"metric\":{\"le\":\"+Inf\"},\"value\":[1,\"10\"]}]}}";
    let (target_port, target) = one_shot_server("200 OK", body.to_string());
    // 127.0.0.1 redirects to localhost: another host by name.
    let location = format!("Location: http://localhost:{target_port}/api/v1/query?query=lat_seconds_bucket\r\n");
    let (port, first) = one_shot_server_with("302 Found", location, String::new());
    let url = format!("http://127.0.0.1:{port}");
    let (out, err, code) = text(&run_env(
        &["derive", "--prometheus", &url, "--metric", "lat_seconds", "--bearer-token-env", "EDGE_DEADLINE_TEST_TOKEN"],
        &[("EDGE_DEADLINE_TEST_TOKEN", "tok")],
    ));
    let (first, target) = (first.join().expect("first server"), target.join().expect("target server"));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("lat_seconds_bucket"), "{out}");
    assert!(first.contains("Bearer tok"), "{first}");
    assert!(!target.to_ascii_lowercase().contains("authorization"), "{target}");
}

#[test]
fn simulate_prints_the_seed_003_table() {
    let (out, err, code) = text(&run(&["simulate"], None));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("200,000 calls"), "{out}");
    let retry = out.lines().find(|l| l.starts_with("p99:1")).expect("p99:1 row");
    assert!(retry.contains("160 ms"), "{retry}");
    let (out, _, code) =
        text(&run(&["simulate", "--n", "20000", "--policy", "98:1", "--policy", "1262", "--json"], None));
    assert_eq!(code, 0);
    assert!(
        out.contains("\"label\": \"98:1\"") && out.contains("\"timeoutMs\": 1262") && out.contains("\"n\": 20000"),
        "{out}"
    );
}

#[test]
fn derives_from_sketch_files_merged() {
    use edge_deadline::core::sketch::LatencySketch;
    // 1..=100 ms in two "isolates", as raw bytes and as the JSON lines a log
    // pipeline keeps (the form `JSON.stringify(sketch)` writes).
    let (mut odd, mut even) = (LatencySketch::default(), LatencySketch::default());
    for i in 1..=100 {
        if i % 2 == 1 { &mut odd } else { &mut even }.add(f64::from(i)).unwrap();
    }
    let a = std::env::temp_dir().join(format!("edge-deadline-cli-{}-odd.bin", std::process::id()));
    std::fs::write(&a, odd.to_bytes()).unwrap();
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(even.to_bytes());
    let b = temp("even.jsonl", &format!("{{\"type\":\"LatencySketch\",\"count\":50,\"bytes\":\"{b64}\"}}\n\n"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let (out, err, code) = text(&run(&["derive", "--sketch", a, b], None));
    assert_eq!(code, 0, "{err}");
    // The same answer as the CSV of 1..=100: p99 is 99 ms exactly, the timeout 198 ms.
    assert!(out.contains("99.0 ms") && out.contains("198 ms"), "{out}");
    assert!(out.contains("2 sketches"), "{out}");
    let (out, err, code) =
        text(&run(&["derive", "--sketch", a, "--sketch", b, "--json", "--q", "0.5", "--safety", "1.5"], None));
    assert_eq!(code, 0, "{err}");
    let config: serde_json::Value = serde_json::from_str(&out).expect("--json prints JSON");
    assert_eq!(config["buckets"][0]["n"], 100);
    assert_eq!(config["buckets"][0]["timeoutMs"], 75);

    // A damaged file is named, with what is wrong with it.
    let mut bytes = odd.to_bytes();
    bytes.truncate(bytes.len() - 4);
    let cut = std::env::temp_dir().join(format!("edge-deadline-cli-{}-cut.bin", std::process::id()));
    std::fs::write(&cut, bytes).unwrap();
    let (out, err, code) = text(&run(&["derive", "--sketch", a, cut.to_str().unwrap()], None));
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(err.contains("cut.bin: 'bytes' is not a valid LatencySketch: it ends inside 'samples'"), "{err}");
    let csv = temp("not-a-sketch.csv", "ms\n1\n");
    let (_, err, code) = text(&run(&["derive", "--sketch", csv.to_str().unwrap()], None));
    assert_eq!(code, 1);
    assert!(err.contains("not-a-sketch.csv: line 1 is neither"), "{err}");
    // Different accuracies do not merge.
    let mut coarse = LatencySketch::new(0.05).unwrap();
    coarse.add(3.0).unwrap();
    let c = std::env::temp_dir().join(format!("edge-deadline-cli-{}-coarse.bin", std::process::id()));
    std::fs::write(&c, coarse.to_bytes()).unwrap();
    let (_, err, code) = text(&run(&["derive", "--sketch", a, c.to_str().unwrap()], None));
    assert_eq!(code, 1);
    assert!(err.contains("coarse.bin: cannot merge a sketch with relative error 0.05"), "{err}");
    // --sketch replaces FILE and --prometheus.
    let (_, err, code) = text(&run(&["derive", "x.csv", "--sketch", a], None));
    assert_eq!(code, 2, "{err}");
    // Options for raw rows mean nothing for a sketch: refused, not ignored.
    for flag in [&["--by", "model"][..], &["--relative-error", "0.02"], &["--unit", "s"]] {
        let mut args = vec!["derive", "--sketch", a];
        args.extend_from_slice(flag);
        let (_, err, code) = text(&run(&args, None));
        assert_eq!(code, 2, "{flag:?}: {err}");
        assert!(err.contains("cannot be used with"), "{err}");
    }
    for p in [a, b, cut.to_str().unwrap(), csv.to_str().unwrap(), c.to_str().unwrap()] {
        std::fs::remove_file(p).ok();
    }
}

/// Runs the binary on `input` written from another thread, so a binary that
/// stops reading early (as it should on a fatal error) does not fail the
/// write; `shell` wraps the command (`ulimit …`) when given.
fn run_piped(args: &[&str], input: impl FnOnce(&mut dyn Write) + Send + 'static, shell: Option<&str>) -> Output {
    let mut cmd = match shell {
        Some(prefix) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(format!("{prefix} && exec \"$0\" \"$@\"")).arg(bin());
            c
        }
        None => Command::new(bin()),
    };
    let mut child =
        cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || input(&mut stdin));
    let out = child.wait_with_output().expect("exits");
    // A write error (the binary closed the pipe) is the point, not a failure.
    let _ = writer.join();
    out
}

/// `ms,outcome` rows of 20 ms, `n` of them, with `bad` as line `at`.
fn rows_with(n: usize, at: usize, bad: &'static str) -> impl FnOnce(&mut dyn Write) + Send + 'static {
    move |w: &mut dyn Write| {
        let mut text = String::from("ms,outcome\n");
        for line in 2..=n + 1 {
            text.push_str(if line == at { bad } else { "20,ok\n" });
        }
        let _ = w.write_all(text.as_bytes());
    }
}

#[test]
fn an_unclosed_quote_is_an_error_naming_its_line() {
    // Line 4 of 200 000 opens a quote nobody closes: before, the rest of the
    // file became one field and the run reported n = 2 with exit 0.
    let (out, err, code) = text(&run_piped(&["derive", "-"], rows_with(200_000, 4, "5,\"oops\n"), None));
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(err.contains("line 4: field 2 opens a quote that is not closed within 1 MiB"), "{err}");
    // Near the end of the input, with and without a final newline.
    for input in ["ms,outcome\n1,ok\n2,\"ok\n", "ms,outcome\n1,ok\n2,\"ok", "ms,outcome\n1,ok\n\"2,ok\n3,ok\n"] {
        let (out, err, code) = text(&run(&["derive", "-"], Some(input)));
        assert_eq!((code, out.as_str()), (1, ""), "{input:?}: {err}");
        assert!(
            err.contains("line 3: field") && err.contains("opens a quote that is never closed"),
            "{input:?}: {err}"
        );
        assert!(!err.contains("--skip-bad"), "no line can be skipped past it: {err}");
        let (_, err, code) = text(&run(&["derive", "-", "--skip-bad"], Some(input)));
        assert_eq!(code, 1, "{input:?}: {err}");
    }
    // Quotes closed (a doubled one inside, a newline inside) are fine.
    let (out, err, code) = text(&run(&["derive", "-"], Some("ms,outcome\n\"1\",\"o\"\"k\"\n2,\"ok\"")));
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("line 2, field 'outcome': 'o\"k' is not an outcome"), "{err}");
    let (_, err, code) = text(&run(&["derive", "-"], Some("ms,note\n1,\"two\nlines\"\n2,\"x\"\n")));
    assert_eq!(code, 0, "{err}");
}

#[test]
fn over_long_records_are_refused_with_a_short_escaped_message() {
    // A 20 MB field starting with a terminal escape: refused at 1 MiB, and
    // the message shows 40 characters of it, escaped.
    let field = |w: &mut dyn Write| {
        let _ = w.write_all(b"ms,outcome\n1,ok\n\x1b[2J\x1b]0;pwned\x07");
        let chunk = vec![b'7'; 1 << 16];
        for _ in 0..320 {
            if w.write_all(&chunk).is_err() {
                return;
            }
        }
        let _ = w.write_all(b",ok\n");
    };
    let (out, err, code) = text(&run_piped(&["derive", "-"], field, None));
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(err.contains("line 3: the record passes 1 MiB at field 1"), "{err}");
    assert!(err.len() < 300, "{} bytes: {err}", err.len());
    // Under the cap, a bad value is quoted, escaped and cut short.
    let mut bad = String::from("ms\n1\n\u{1b}[31m");
    bad.push_str(&"9".repeat(500_000));
    bad.push_str("x\n");
    let (_, err, code) = text(&run(&["derive", "-"], Some(&bad)));
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains('\u{1b}'), "raw escape echoed: {err:?}");
    assert!(err.contains("line 3, field 'ms': '\\u{1b}[31m999"), "{err}");
    assert!(err.contains("…' (500006 bytes) is not a number"), "{err}");
    assert!(err.len() < 300, "{} bytes: {err}", err.len());
    // A header of escapes and a JSON line too long.
    let (_, err, code) = text(&run(&["derive", "-", "--column", "dur"], Some("ms,\u{1b}[2Jx\n1,2\n")));
    assert_eq!(code, 1);
    assert!(err.contains("(columns: ms, \\u{1b}[2Jx)") && !err.contains('\u{1b}'), "{err:?}");
    let long = |w: &mut dyn Write| {
        let _ = w.write_all(b"{\"ms\": 1}\n{\"model\": \"");
        let chunk = vec![b'a'; 1 << 16];
        for _ in 0..40 {
            if w.write_all(&chunk).is_err() {
                return;
            }
        }
        let _ = w.write_all(b"\", \"ms\": 2}\n");
    };
    let (_, err, code) = text(&run_piped(&["derive", "-", "--format", "jsonl", "--by", "model"], long, None));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("line 2 is longer than 1 MiB"), "{err}");
    // A label value past 1 KiB is a bad line (skippable), not a bucket.
    let csv = format!("ms,model\n1,a\n2,{}\n", "m".repeat(2000));
    let (_, err, code) = text(&run(&["derive", "-", "--by", "model"], Some(&csv)));
    assert_eq!(code, 1);
    assert!(err.contains("line 3, field 'model': 'mmm") && err.contains("longer than the 1024 bytes"), "{err}");
}

/// Memory stays flat: under a 64 MiB address-space limit, 256 MB of one
/// unclosed quoted field (and a 256 MB line) through a pipe end in exit 1
/// naming the line, where the old reader grew with the input and aborted.
#[cfg(target_os = "linux")]
#[test]
fn memory_stays_flat_on_a_huge_record() {
    for (args, head, want) in [
        (
            &["derive", "-"][..],
            &b"ms,outcome\n1,ok\n2,\""[..],
            "line 3: field 2 opens a quote that is not closed within 1 MiB",
        ),
        (&["derive", "-"], &b"ms,outcome\n1,ok\n"[..], "line 3: the record passes 1 MiB at field 1"),
        (&["derive", "-", "--format", "jsonl"], &b"{\"ms\": 1}\n"[..], "line 2 is longer than 1 MiB"),
    ] {
        let head = head.to_vec();
        let feed = move |w: &mut dyn Write| {
            let _ = w.write_all(&head);
            let chunk = vec![b'9'; 1 << 20];
            for _ in 0..256 {
                if w.write_all(&chunk).is_err() {
                    return;
                }
            }
        };
        let (_, err, code) = text(&run_piped(args, feed, Some("ulimit -v 65536")));
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn http_status_codes_read_as_outcomes() {
    let csv = "ms,outcome\n10,200\n20,204\n30,201\n,504\n,408\n5,500\n5,404\n5,429\n";
    let (out, err, code) = text(&run(&["derive", "-"], Some(csv)));
    assert_eq!(code, 0, "{err}");
    let row = out.lines().find(|l| l.starts_with("(all)")).expect("a row");
    assert!(row.contains("2 timeouts, 3 errors") && row.contains(" 3 "), "{row}");
    let (_, err, code) = text(&run(&["derive", "-"], Some("ms,outcome\n10,302\n")));
    assert_eq!(code, 1);
    assert!(err.contains("'302' is not an outcome") && err.contains("2xx"), "{err}");
}

#[test]
fn quantile_is_a_long_alias_of_q() {
    let p = temp("alias.csv", &one_to_hundred_csv());
    let file = p.to_str().unwrap();
    let by_q = answer(&["derive", file, "--json", "--q", "0.5"], "");
    assert_eq!(answer(&["derive", file, "--json", "--quantile", "0.5"], ""), by_q);
    assert_eq!(by_q["buckets"][0]["quantileMs"], 50);
    let (_, err, code) = text(&run(&["derive", file, "--quantile", "1.5"], None));
    assert_eq!(code, 2, "{err}");
    let (help, _, _) = text(&run(&["derive", "--help"], None));
    assert!(help.contains("--quantile"), "{help}");
    std::fs::remove_file(p).ok();
}

#[test]
fn the_notes_under_the_table_name_their_bucket_and_the_simulate_flags() {
    // With a timeout in force and no slow tail: the false-timeout line names its bucket.
    let mut csv = String::from("ms,model\n");
    for i in 1..=2000 {
        csv.push_str(&format!("{},a\n{},b\n", 10 + i % 50, 20 + i % 70));
    }
    let (out, err, code) = text(&run(&["derive", "-", "--by", "model", "--configured", "500"], Some(&csv)));
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let notes: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("false timeouts of healthy calls"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(notes.len(), 2, "{out}");
    for (i, name) in notes.iter().zip(["model=a", "model=b"]) {
        assert!(lines[i - 1] == format!("{name}:") || lines[*i].starts_with(&format!("{name}:")), "{out}");
    }
    // A slow tail: the hint is a simulate command line that runs.
    let (out, err, code) = text(&run(&[], None));
    assert_eq!(code, 0, "{err}");
    let hint = out.lines().find(|l| l.contains("try `edge-deadline simulate")).expect("a hint");
    let command = hint.split('`').nth(1).expect("a quoted command");
    for flag in ["--median ", "--sigma ", "--tail-share ", "--tail-lo ", "--tail-hi ", "--policy "] {
        assert!(command.contains(flag), "{flag} missing: {command}");
    }
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    let (sim, err, code) = text(&run(&args, None));
    assert_eq!(code, 0, "{command}: {err}");
    assert!(sim.contains("scenario: lognormal body"), "{sim}");
}

#[test]
fn the_outcome_column_help_says_its_default() {
    let (help, _, _) = text(&run(&["derive", "--help"], None));
    let at = help.find("--outcome-column").expect("the flag");
    let text: String =
        help[at..].split("\n  -").next().unwrap_or_default().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("[default: outcome]") || text.contains("default: outcome"), "{text}");
    assert!(!text.contains("absent = every row is a success"), "{text}");
}

/// LEB128, as the sketch format writes counts.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A bucketed sketch of `n` samples at 20 ms with the given min and max, as
/// a forger writes it (the layout of 300 genuine samples at 20 ms).
fn forged_sketch(n: u64, min: f64, max: f64) -> Vec<u8> {
    use edge_deadline::core::sketch::LatencySketch;
    let mut s = LatencySketch::default();
    s.add_all(&[20.0; 300]).unwrap();
    let good = s.to_bytes();
    // Header (14 bytes), count (2), sum, min, max (24), zero count (1), the
    // first key, one key (1), its counter (2).
    let key = &good[14 + 2 + 24 + 1..good.len() - 3];
    let mut out = good[..14].to_vec();
    varint(&mut out, n);
    for v in [20.0 * n as f64, min, max] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.push(0);
    out.extend_from_slice(key);
    out.push(1);
    varint(&mut out, n);
    out
}

#[test]
fn forged_sketches_are_refused_naming_the_file() {
    let write = |name: &str, bytes: &[u8]| {
        let p = std::env::temp_dir().join(format!("edge-deadline-cli-{}-{name}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let honest = write("honest.bin", &forged_sketch(300, 20.0, 20.0));
    let h = honest.to_str().unwrap();
    let (out, err, code) = text(&run(&["derive", "--sketch", h], None));
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().any(|l| l.starts_with("(all)") && l.contains("20.0 ms")), "{out}");
    // Counts near 2^63 whose counters add up: two of them saturated a merge,
    // and the table read p50 = p99 = 376 ms for data at 20 ms.
    let huge = write("huge.bin", &forged_sketch(1 << 62, 20.0, 20.0));
    let (out, err, code) = text(&run(&["derive", "--sketch", h, huge.to_str().unwrap()], None));
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(err.contains("huge.bin: 'bytes' is not a valid LatencySketch: 'count' is 4611686018427388000, more than a sketch counts (9007199254740991)"), "{err}");
    let lying = write("lying.bin", &forged_sketch(300, 376.0, 376.0));
    let (out, err, code) = text(&run(&["derive", "--sketch", h, lying.to_str().unwrap()], None));
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(
        err.contains(
            "lying.bin: 'bytes' is not a valid LatencySketch: 'max' is 376, outside the highest non-empty bucket"
        ),
        "{err}"
    );
    // Two sketches at the cap: each is accepted, their merge is refused.
    let full = write("full.bin", &forged_sketch((1 << 53) - 1, 20.0, 20.0));
    let f = full.to_str().unwrap();
    let (out, err, code) = text(&run(&["derive", "--sketch", f, "--json"], None));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"n\": 9007199254740991") && out.contains("\"p50\": 20"), "{out}");
    let (out, err, code) = text(&run(&["derive", "--sketch", f, f], None));
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(err.contains("full.bin: cannot add 9007199254740991 samples to a sketch of 9007199254740991"), "{err}");
    for p in [honest, huge, lying, full] {
        std::fs::remove_file(p).ok();
    }
}

#[test]
fn derive_aggregator_sends_the_read_token_of_bearer_token_env() {
    let table = r#"{"v":1,"derivedAt":"2026-12-05T13:00:00.000Z","windowMs":3600000,"windows":24,"q":0.99,"safety":2,"buckets":{"chat":{"n":5000,"timeouts":0,"errors":0,"timeoutMs":300,"p50":40,"p99":150,"floorMs":null,"falseTimeoutRate":0.001,"warnings":[]}}}"#;
    let (port, server) = one_shot_server("200 OK", table.to_string());
    let url = format!("http://127.0.0.1:{port}/_timeouts");
    let (out, err, code) = text(&run_env(
        &["derive", "--aggregator", &url, "--bearer-token-env", "EDGE_DEADLINE_TEST_READ"],
        &[("EDGE_DEADLINE_TEST_READ", "read-token")],
    ));
    let head = server.join().expect("server");
    assert_eq!(code, 0, "{err}");
    assert!(head.starts_with("GET /_timeouts/table "), "{head}");
    assert!(head.contains("Bearer read-token"), "{head}");
    assert!(out.contains("bucket=chat"), "{out}");

    // Refused (401): the status and what to do, not the answer's body.
    let (port, server) = one_shot_server("401 Unauthorized", r#"{"code":"UNAUTHORIZED"}"#.to_string());
    let url = format!("http://127.0.0.1:{port}");
    let (_, err, code) = text(&run(&["derive", "--aggregator", &url], None));
    let head = server.join().expect("server");
    assert_eq!(code, 1, "{err}");
    assert!(!head.to_ascii_lowercase().contains("authorization"), "{head}");
    assert!(err.contains("HTTP 401") && err.contains("--bearer-token-env"), "{err}");

    // The variable must be set; the flag needs --prometheus or --aggregator.
    let (_, err, code) = text(&run(
        &["derive", "--aggregator", "http://127.0.0.1:9", "--bearer-token-env", "EDGE_DEADLINE_TEST_UNSET"],
        None,
    ));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("EDGE_DEADLINE_TEST_UNSET is not set"), "{err}");
    let (_, err, code) = text(&run(&["derive", "x.csv", "--bearer-token-env", "V"], None));
    assert_eq!(code, 2, "{err}");
}

#[test]
fn http_status_codes_are_outcomes_as_json_numbers_and_strings() {
    let mut lines = String::new();
    for i in 0..200 {
        let status = if i % 2 == 0 { "200".to_string() } else { "\"204\"".to_string() };
        lines.push_str(&format!("{{\"ms\": {}, \"status\": {status}}}\n", 10 + i % 7));
    }
    for status in ["408", "\"504\"", "404", "\"500\"", "503", "200.0"] {
        lines.push_str(&format!("{{\"ms\": 5, \"status\": {status}}}\n"));
    }
    let a = answer(&["derive", "-", "--json", "--format", "jsonl", "--outcome-column", "status"], &lines);
    let b = &a["buckets"][0];
    assert_eq!(b["n"], 201, "{a}");
    assert_eq!(b["excluded"]["timeouts"], 2, "{a}");
    assert_eq!(b["excluded"]["errors"], 3, "{a}");
    let (_, err, code) = text(&run(
        &["derive", "-", "--format", "jsonl", "--outcome-column", "status"],
        Some("{\"ms\": 5, \"status\": 302}\n"),
    ));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("'302' is not an outcome"), "{err}");
}

#[test]
fn an_aggregators_words_reach_the_terminal_escaped() {
    // A bucket name with terminal escapes and a forged report line, in the bucket column,
    // a floor note and a warning's message.
    let evil = "chat\u{1b}[2J\u{1b}]0;owned\u{7}\n  gpt: served at no less than 1 ms";
    let table = serde_json::json!({
        "v": 1, "derivedAt": "2026-01-01T00:00:00.000Z", "windowMs": 3600000, "windows": 24, "q": 0.99, "safety": 1.5,
        "buckets": { evil: {
            "n": 5000, "timeouts": 1, "errors": 0, "timeoutMs": 300, "p50": 40, "p99": 150, "floorMs": 400,
            "falseTimeoutRate": 0.001, "warnings": [{ "code": "censored", "message": format!("{evil}\u{1b}[31m\r") }],
        }},
    });
    let (port, server) = one_shot_server("200 OK", table.to_string());
    let (out, err, code) = text(&run(&["derive", "--aggregator", &format!("http://127.0.0.1:{port}")], None));
    server.join().unwrap();
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}') && !out.contains('\r'), "{out:?}");
    assert!(!out.lines().any(|l| l.starts_with("  gpt:")), "no forged line: {out}");
    assert!(out.contains("chat\\u{1b}[2J"), "{out}");
    // A refusal's body and a bucket named in an error are escaped too.
    let (port, server) = one_shot_server("503 Service Unavailable", format!("down\u{1b}[2J\nedge-deadline: {evil}"));
    let (_, err, code) = text(&run(&["derive", "--aggregator", &format!("http://127.0.0.1:{port}")], None));
    server.join().unwrap();
    assert_eq!(code, 1);
    assert!(!err.contains('\u{1b}') && err.trim_end().lines().count() == 1, "{err:?}");
    let bad = serde_json::json!({ "v": 1, "q": 0.99, "safety": 1.5, "buckets": { evil: { "n": "x" } } });
    let (port, server) = one_shot_server("200 OK", bad.to_string());
    let (_, err, code) = text(&run(&["derive", "--aggregator", &format!("http://127.0.0.1:{port}")], None));
    server.join().unwrap();
    assert_eq!(code, 1);
    assert!(!err.contains('\u{1b}') && err.trim_end().lines().count() == 1, "{err:?}");
}
