//! Plain HTTP/1.1 GET over `TcpStream`: enough to query a Prometheus server
//! on the local network. No TLS; `Connection: close`, so the body ends where
//! the stream does (or is chunked).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// A response larger than this is refused (a query for bucket series is
/// kilobytes to a few megabytes).
const MAX_RESPONSE: u64 = 256 * 1024 * 1024;

/// `http://host[:port][/prefix]` split into parts.
#[derive(Debug, PartialEq)]
pub struct Url {
    pub host: String,
    pub port: u16,
    pub prefix: String,
}

pub fn parse_url(url: &str) -> Result<Url, String> {
    if url.starts_with("https://") {
        return Err(format!(
            "'{url}': only http:// is supported (no TLS); query Prometheus over plain HTTP, e.g. http://127.0.0.1:9090"
        ));
    }
    let rest = url.strip_prefix("http://").ok_or_else(|| format!("'{url}' must start with http://"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
            let port =
                p.parse::<u16>().map_err(|_| format!("'{url}': port '{p}' must be a number between 0 and 65535"))?;
            (h, port)
        }
        _ => (authority, 80),
    };
    if host.is_empty() {
        return Err(format!("'{url}' has no host"));
    }
    Ok(Url {
        host: host.trim_start_matches('[').trim_end_matches(']').to_string(),
        port,
        prefix: path.trim_end_matches('/').to_string(),
    })
}

/// Percent-encodes a query parameter value.
pub fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// GETs `path_and_query` from `url`; returns the status code and body.
pub fn get(url: &Url, path_and_query: &str) -> Result<(u16, String), String> {
    let target = format!("{}:{}", url.host, url.port);
    let addrs: Vec<_> = target.to_socket_addrs().map_err(|e| format!("cannot resolve {target}: {e}"))?.collect();
    let mut last = String::from("no address");
    let mut stream = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, CONNECT_TIMEOUT) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = e.to_string(),
        }
    }
    let mut stream = stream.ok_or_else(|| format!("cannot connect to {target}: {last}"))?;
    stream.set_read_timeout(Some(READ_TIMEOUT)).map_err(|e| e.to_string())?;
    let req = format!(
        "GET {}{} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nUser-Agent: edge-deadline/{}\r\nConnection: close\r\n\r\n",
        url.prefix,
        path_and_query,
        target,
        env!("CARGO_PKG_VERSION")
    );
    stream.write_all(req.as_bytes()).map_err(|e| format!("cannot send the request to {target}: {e}"))?;
    // Read until the server closes, or until the body is complete by its
    // Content-Length or final chunk (for servers that keep the connection).
    let mut raw = Vec::new();
    let mut block = [0u8; 16 * 1024];
    let mut framing: Option<(usize, Option<usize>, bool)> = None; // (body start, length, chunked)
    loop {
        if let Some((start, len, chunked)) = framing {
            let body = &raw[start..];
            let complete = match (len, chunked) {
                (Some(n), false) => body.len() >= n,
                (_, true) => body.ends_with(b"0\r\n\r\n") && dechunk(body).is_some(),
                _ => false,
            };
            if complete {
                break;
            }
        }
        let n = match stream.read(&mut block) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => return Err(format!("reading the response from {target} failed: {e}")),
        };
        raw.extend_from_slice(&block[..n]);
        if raw.len() as u64 > MAX_RESPONSE {
            return Err(format!("the response from {target} is larger than {MAX_RESPONSE} bytes"));
        }
        if framing.is_none() {
            if let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
                let len = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok());
                let chunked = head.lines().any(|l| l.starts_with("transfer-encoding:") && l.contains("chunked"));
                framing = Some((split + 4, len, chunked));
            }
        }
    }
    let (start, len, chunked) = framing.ok_or_else(|| format!("{target} sent a response without headers"))?;
    let head = String::from_utf8_lossy(&raw[..start - 4]).to_string();
    let status_line = head.lines().next().unwrap_or("");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("{target} sent a malformed status line: '{status_line}'"))?;
    let mut body = raw[start..].to_vec();
    if chunked {
        body = dechunk(&body).ok_or_else(|| format!("{target} sent a malformed or truncated chunked body"))?;
    } else if let Some(n) = len {
        if body.len() < n {
            return Err(format!("{target} closed the connection after {} of {n} bytes", body.len()));
        }
        body.truncate(n);
    }
    let body = String::from_utf8(body).map_err(|_| format!("{target} sent a body that is not UTF-8"))?;
    Ok((status, body))
}

fn dechunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&b[..eol]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        b = &b[eol + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(b.get(..size)?);
        b = b.get(size + 2..)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_chunks() {
        assert_eq!(
            parse_url("http://127.0.0.1:9090").unwrap(),
            Url { host: "127.0.0.1".into(), port: 9090, prefix: String::new() }
        );
        assert_eq!(
            parse_url("http://prom/sub/").unwrap(),
            Url { host: "prom".into(), port: 80, prefix: "/sub".into() }
        );
        assert!(parse_url("https://x").unwrap_err().contains("no TLS"));
        assert!(parse_url("http://x:99999").is_err());
        assert_eq!(encode("a_bucket{x=\"1\"}[5m]"), "a_bucket%7Bx%3D%221%22%7D%5B5m%5D");
        assert_eq!(dechunk(b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n").unwrap(), b"abcde");
        assert_eq!(dechunk(b"5\r\nab"), None);
    }
}
