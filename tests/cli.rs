//! The `edge-deadline` binary, run as a user would: small inputs, the
//! messages and exit codes for malformed ones, and a Prometheus query
//! against a one-shot local HTTP server.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_edge-deadline");

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(BIN)
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
    assert!(out.contains("usage:") && out.contains("--skip-bad"));
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
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(err.contains("line 3, field 'ms': 'abc' is not a number"), "{err}");
    assert!(err.contains("--skip-bad"), "{err}");

    let (_, err, code) = text(&run(&["derive", "-"], Some("ms,outcome\n12,maybe\n")));
    assert_eq!(code, 1);
    assert!(err.contains("line 2, field 'outcome': 'maybe' is not an outcome"), "{err}");

    let (_, err, code) = text(&run(&["derive", "-"], Some("ms\n-4\n")));
    assert_eq!(code, 1);
    assert!(err.contains("line 2, field 'ms': 'ms' must be between 0"), "{err}");

    let (_, err, code) = text(&run(&["derive", "-"], Some("ms,outcome\n\"12,ok\n")));
    assert_eq!(code, 1);
    assert!(err.contains("line 2: field 1 has an opening quote but no closing one"), "{err}");

    let (_, err, code) = text(&run(&["derive", "-", "--by", "model"], Some("ms,model\n12\n")));
    assert_eq!(code, 1);
    assert!(err.contains("line 2: expected at least 2 fields, found 1"), "{err}");

    let (_, err, code) = text(&run(&["derive", "-", "--column", "dur"], Some("ms,outcome\n1,ok\n")));
    assert_eq!(code, 1);
    assert!(err.contains("line 1 (header): no column 'dur' (columns: ms, outcome)"), "{err}");

    let (_, err, code) = text(&run(&["derive", "-"], Some("")));
    assert_eq!(code, 1);
    assert!(err.contains("the input is empty"), "{err}");

    let (_, err, code) = text(&run(&["derive", "-"], Some("{\"ms\": 1}\n{\"ms\": 2,}\n")));
    assert_eq!(code, 1);
    assert!(err.contains("line 2: invalid JSON at column 10"), "{err}");
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
fn bad_command_lines_exit_2() {
    for (args, want) in [
        (vec!["derive", "-", "--q", "1.5"], "'q' must be greater than 0 and less than 1"),
        (vec!["derive", "-", "--safety", "0.5"], "'safety' must be between 1 and 100"),
        (vec!["derive", "-", "--q", "high"], "'--q' expects a number: current value is 'high'"),
        (vec!["derive", "-", "--bogus"], "unknown option '--bogus'"),
        (vec!["derive"], "derive needs a FILE"),
        (vec!["frobnicate"], "unknown command 'frobnicate'"),
        (vec!["derive", "--prometheus", "http://127.0.0.1:9"], "--prometheus needs --metric"),
        (vec!["derive", "--prometheus", "https://x", "--metric", "m"], "no TLS"),
        (vec!["simulate", "--policy", "p95:1"], "policy 'p95:1'"),
        (vec!["simulate", "--sigma", "-1"], "'sigma' must be between 0 and 4"),
    ] {
        let (_, err, code) = text(&run(&args, Some("")));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
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

/// Serves one HTTP response (chunked) and returns the request line it got.
fn one_shot_server(status: &'static str, body: String) -> (u16, std::thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let handle = std::thread::spawn(move || {
        let (mut sock, _) = listener.accept().expect("accept");
        let mut reader = BufReader::new(sock.try_clone().expect("clone"));
        let mut request_line = String::new();
        reader.read_line(&mut request_line).expect("request line");
        let mut line = String::new();
        while reader.read_line(&mut line).map(|n| n > 2).unwrap_or(false) {
            line.clear();
        }
        let (a, b) = body.split_at(body.len() / 2);
        let resp = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
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
    let url = format!("http://127.0.0.1:{port}");
    let (out, err, code) =
        text(&run(&["derive", "--prometheus", &url, "--metric", "lat_seconds", "--by", "op", "--json"], None));
    let request = server.join().expect("server");
    assert_eq!(code, 0, "{err}");
    assert!(request.starts_with("GET /api/v1/query?query=lat_seconds_bucket HTTP/1.1"), "{request}");
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
    assert!(request.contains("query=increase%28lat_seconds_bucket%5B1h%5D%29"), "{request}");
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
