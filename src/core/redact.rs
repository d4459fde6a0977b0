//! Credentials out of error text before it leaves for a trace.
//!
//! # Why
//! An upstream's error (a failed `fetch`, an SDK's exception) often names
//! the URL it called, and URLs carry credentials: `https://user:pass@host`,
//! `?api_key=…`. The stream wing hands such errors to OpenTelemetry, whose
//! exporters ship them off the machine. [`redact`] replaces what a URL holds
//! as a credential with `[redacted]` and leaves the rest readable.
//!
//! # Invariants (tests below)
//! 1. The user information of every `scheme://user:pass@host` goes, the
//!    scheme and host stay.
//! 2. The value of every query or fragment parameter whose name holds `key`,
//!    `token`, `secret`, `password`, `passwd`, `sig` or `auth` (any case) goes.
//! 3. Text without either comes back unchanged (borrowed), and no input
//!    panics (the scan is by bytes, cuts only at ASCII).

use std::borrow::Cow;

const MARK: &str = "[redacted]";
const NAMES: [&str; 7] = ["key", "token", "secret", "password", "passwd", "sig", "auth"];

/// Whether `hay` holds `needle`, ASCII case ignored (a plain scan: the
/// standard library's substring search is far bigger in the `.wasm`). One
/// copy for every name: inlined, the `.wasm` held one scan per name.
#[inline(never)]
fn holds(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
}

/// `text` with URL credentials replaced (see the module doc). Works on
/// bytes and cuts only at ASCII bytes, so what it keeps stays UTF-8.
pub fn redact(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    let mut out: Vec<u8> = Vec::new();
    let mut copied = 0; // bytes of `text` already in `out`
    let mut i = 0;
    while i < b.len() {
        // 1. `://userinfo@`: userinfo ends at the first '@' before any '/', '?', '#' or space.
        if b[i] == b':' && b.get(i + 1) == Some(&b'/') && b.get(i + 2) == Some(&b'/') {
            let start = i + 3;
            let mut j = start;
            while j < b.len() && !matches!(b[j], b'/' | b'?' | b'#' | b'@') && !b[j].is_ascii_whitespace() {
                j += 1;
            }
            if j < b.len() && b[j] == b'@' && j > start {
                out.extend_from_slice(b.get(copied..start).unwrap_or_default());
                out.extend_from_slice(MARK.as_bytes());
                copied = j;
                i = j + 1;
                continue;
            }
            i = start;
            continue;
        }
        // 2. `?name=value` / `&name=value` / `#name=value` with a credential-like name.
        if matches!(b[i], b'?' | b'&' | b'#' | b';') {
            let name_start = i + 1;
            let mut j = name_start;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || matches!(b[j], b'_' | b'-' | b'.')) {
                j += 1;
            }
            if j < b.len() && b[j] == b'=' && j > name_start {
                let name = b.get(name_start..j).unwrap_or_default();
                let value_start = j + 1;
                let mut k = value_start;
                while k < b.len()
                    && !matches!(b[k], b'&' | b'#' | b';' | b'"' | b'\'' | b')')
                    && !b[k].is_ascii_whitespace()
                {
                    k += 1;
                }
                if k > value_start && NAMES.iter().any(|n| holds(name, n.as_bytes())) {
                    out.extend_from_slice(b.get(copied..value_start).unwrap_or_default());
                    out.extend_from_slice(MARK.as_bytes());
                    copied = k;
                }
                i = k;
                continue;
            }
        }
        i += 1;
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.extend_from_slice(b.get(copied..).unwrap_or_default());
    // Cut only at ASCII bytes: always UTF-8; the text as it was otherwise.
    String::from_utf8(out).map_or(Cow::Borrowed(text), Cow::Owned)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn user_information_goes_scheme_and_host_stay() {
        assert_eq!(
            redact("request to http://user:s3cret@10.0.3.7:8443/v1/chat failed"),
            "request to http://[redacted]@10.0.3.7:8443/v1/chat failed"
        );
        assert_eq!(redact("a wss://tok@h and https://u:p@k/x"), "a wss://[redacted]@h and https://[redacted]@k/x");
    }

    #[test]
    fn credential_parameters_lose_their_values() {
        assert_eq!(
            redact("GET https://api.x/v1?model=a&api_key=sk-live-123&Token=t#sig=zz"),
            "GET https://api.x/v1?model=a&api_key=[redacted]&Token=[redacted]#sig=[redacted]"
        );
    }

    #[test]
    fn plain_text_is_unchanged_and_nothing_panics() {
        for t in ["fetch failed", "", "://@", "a@b", "x://", "?=", "?key=", "é://ü:ß@ñ?kéy=€", "://\u{1F600}@"] {
            let _ = redact(t);
        }
        assert!(matches!(redact("connect ECONNREFUSED 10.0.3.7:8443"), Cow::Borrowed(_)));
        assert_eq!(redact("é://ü:ß@ñ"), "é://[redacted]@ñ");
    }
}
