//! Querying Prometheus over HTTP or HTTPS, with ureq on rustls.
//!
//! Production Prometheus usually sits behind TLS and a token (a reverse
//! proxy, a managed service), so both are first-class here. Credentials come
//! from environment variables, never from the command line (where `ps` and
//! shell history would show them). Redirects are followed, but credentials
//! go only to the same host, and every request has a time limit.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use clap::error::ErrorKind;
use clap::Args;
use ureq::config::RedirectAuthHeaders;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};
use ureq::Agent;

/// A response larger than this is refused (a query for bucket series is
/// kilobytes to a few megabytes).
const MAX_RESPONSE: u64 = 256 * 1024 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_REDIRECTS: u32 = 5;

#[derive(Args)]
pub struct HttpArgs {
    /// With --prometheus or --aggregator: send `Authorization: Bearer <token>`,
    /// the token read from the environment variable VAR (an aggregator's read token).
    #[arg(long, value_name = "VAR", requires = "remote", conflicts_with = "basic_auth_env")]
    bearer_token_env: Option<String>,
    /// With --prometheus: HTTP basic authentication, `user:password` read from
    /// the environment variable VAR.
    #[arg(long, value_name = "VAR", requires = "prometheus")]
    basic_auth_env: Option<String>,
    /// With an https:// --prometheus: trust only the CA certificates in this
    /// PEM file (a private CA, a self-signed server) instead of the built-in
    /// public roots.
    #[arg(long, value_name = "PEM", requires = "prometheus")]
    ca_file: Option<PathBuf>,
    /// With --prometheus: give up on the whole request after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value = "60", value_parser = parse_seconds)]
    http_timeout: Duration,
}

fn parse_seconds(t: &str) -> Result<Duration, String> {
    match t.trim().parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 86_400.0 => Ok(Duration::from_secs_f64(s)),
        _ => Err("must be a number of seconds greater than 0 and at most 86400".into()),
    }
}

type UsageError = (ErrorKind, String);

/// A configured client for one Prometheus base URL.
pub struct Client {
    agent: Agent,
    base: String,
    authorization: Option<String>,
}

fn secret(flag: &str, var: &str) -> Result<String, UsageError> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Ok(v.trim().to_string()),
        Ok(_) => Err((ErrorKind::ValueValidation, format!("{flag} {var}: the environment variable {var} is empty"))),
        Err(_) => Err((ErrorKind::ValueValidation, format!("{flag} {var}: the environment variable {var} is not set"))),
    }
}

fn roots(path: &PathBuf) -> Result<RootCerts, UsageError> {
    let bad = |m: String| (ErrorKind::ValueValidation, format!("--ca-file {}: {m}", path.display()));
    let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let mut certs: Vec<Certificate<'static>> = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        if let PemItem::Certificate(c) = item.map_err(|e| bad(format!("not a PEM file: {e}")))? {
            certs.push(c);
        }
    }
    if certs.is_empty() {
        return Err(bad("no CERTIFICATE block in the file".into()));
    }
    Ok(RootCerts::Specific(Arc::new(certs)))
}

impl HttpArgs {
    /// Checks the URL and the credentials, and builds the client.
    pub fn client(&self, url: &str) -> Result<Client, UsageError> {
        let bad_url = |m: &str| (ErrorKind::ValueValidation, format!("--prometheus '{url}': {m}"));
        let https = url.starts_with("https://");
        if !https && !url.starts_with("http://") {
            return Err(bad_url("must start with http:// or https://"));
        }
        let parsed: ureq::http::Uri = url.parse().map_err(|e| bad_url(&format!("not a URL ({e})")))?;
        if parsed.host().is_none_or(str::is_empty) {
            return Err(bad_url("has no host"));
        }
        if parsed.query().is_some() {
            return Err(bad_url("give the server's base URL, without a query"));
        }
        if self.ca_file.is_some() && !https {
            return Err((ErrorKind::ArgumentConflict, "--ca-file applies to an https:// --prometheus URL".into()));
        }
        let authorization = match (&self.bearer_token_env, &self.basic_auth_env) {
            (Some(var), _) => Some(format!("Bearer {}", secret("--bearer-token-env", var)?)),
            (None, Some(var)) => {
                let pair = secret("--basic-auth-env", var)?;
                if !pair.contains(':') {
                    return Err((
                        ErrorKind::ValueValidation,
                        format!("--basic-auth-env {var}: the variable must hold user:password"),
                    ));
                }
                Some(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair)))
            }
            (None, None) => None,
        };
        let mut tls = TlsConfig::builder();
        if let Some(path) = &self.ca_file {
            tls = tls.root_certs(roots(path)?);
        }
        let agent: Agent = Agent::config_builder()
            .tls_config(tls.build())
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_global(Some(self.http_timeout))
            .max_redirects(MAX_REDIRECTS)
            // Credentials follow a redirect only to the same host, never from https to http.
            .redirect_auth_headers(RedirectAuthHeaders::SameHost)
            .http_status_as_error(false)
            .user_agent(concat!("edge-deadline/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Ok(Client { agent, base: url.trim_end_matches('/').to_string(), authorization })
    }
}

impl HttpArgs {
    /// The `--http-timeout`.
    pub fn timeout(&self) -> Duration {
        self.http_timeout
    }
}

impl HttpArgs {
    /// The `Authorization: Bearer <token>` value of `--bearer-token-env VAR`, if given.
    pub fn bearer(&self) -> Result<Option<String>, UsageError> {
        match &self.bearer_token_env {
            Some(var) => Ok(Some(format!("Bearer {}", secret("--bearer-token-env", var)?))),
            None => Ok(None),
        }
    }
}

/// `GET url` (http:// or https://, the built-in roots), with `authorization`
/// sent only to the URL's own host: the status and the body.
pub fn get(url: &str, timeout: Duration, authorization: Option<&str>) -> Result<(u16, String), String> {
    let agent: Agent = Agent::config_builder()
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_global(Some(timeout))
        .max_redirects(MAX_REDIRECTS)
        .redirect_auth_headers(RedirectAuthHeaders::SameHost)
        .http_status_as_error(false)
        .user_agent(concat!("edge-deadline/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let io = |e: ureq::Error| format!("GET {url}: {e}");
    let mut req = agent.get(url).header("Accept", "application/json");
    if let Some(a) = authorization {
        req = req.header("Authorization", a);
    }
    let mut res = req.call().map_err(io)?;
    let status = res.status().as_u16();
    let body = res.body_mut().with_config().limit(MAX_RESPONSE).read_to_string().map_err(io)?;
    Ok((status, body))
}

impl Client {
    /// Runs an instant query; returns the status code and the body.
    pub fn query(&self, query: &str) -> Result<(u16, String), String> {
        let mut req = self
            .agent
            .get(format!("{}/api/v1/query", self.base))
            .query("query", query)
            .header("Accept", "application/json");
        if let Some(a) = &self.authorization {
            req = req.header("Authorization", a);
        }
        let mut res = req.call().map_err(|e| e.to_string())?;
        let status = res.status().as_u16();
        let body = res
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE)
            .read_to_string()
            .map_err(|e| format!("reading the response failed: {e}"))?;
        Ok((status, body))
    }
}
