//! A read as a script: one line per input, one line per action. The
//! conformance op `read` (tests/conformance/cases.json) and the machine's own
//! tests write reads this way; each host's runner parses the same lines.
//!
//! An input line is `T verb rest`, `T` the instant in ms:
//! `start`, `head STATUS TYPE [CONTENT-RANGE]` (`TYPE`: `sse`, `other`, or
//! `none` for an answer without a body), `chunk TEXT` (the text's UTF-8 bytes,
//! `\n` and `\r` as in JSON), `end`, `wake`, `fail FAILURE` (`ambiguous`,
//! `not-applied`, `permanent`), `declined`, `hold`, `unhold`, `cancel`,
//! `abort deadline` or `abort signal`.
//!
//! An action line: `connect N plain`, `connect N id:ID`, `connect N hook
//! bytes=B id=ID` (`-` for no id), `abort`, `deliver TEXT`, `wake T` (`none`
//! to disarm), `end done`, `end hand-back`, `end cancelled`, or `end CLASS
//! DETAIL bytes=B STATUS CODE` (the reader's error: its class, the detail
//! that tells it apart (a stall's phase, a `RetryFailed`'s reason, a cap's
//! code, a refusal's word, a status), the bytes it says were delivered (`-`:
//! none, the error goes as it is), and the fallback's status and code).

use super::{Action, Ending, Head, How, Input};
use crate::core::retry::Failure;

/// Parses an input line (see the module doc): its instant and the input.
pub fn input(line: &str) -> Result<(f64, Input<'_>), String> {
    let (t, rest) = line.split_once(' ').ok_or_else(|| format!("no verb in {line:?}"))?;
    let t: f64 = t.parse().map_err(|_| format!("no instant in {line:?}"))?;
    let (verb, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let input = match verb {
        "start" => Input::Start,
        "end" => Input::End,
        "wake" => Input::Wake,
        "declined" => Input::HookDeclined,
        "hold" => Input::Hold,
        "unhold" => Input::Unhold,
        "cancel" => Input::Cancel,
        "abort" => Input::Aborted { deadline: rest == "deadline" },
        "chunk" => Input::Chunk { bytes: rest.as_bytes(), progress: None },
        "fail" => Input::Failed {
            failure: Failure::parse(rest).map_err(|_| format!("no failure {rest:?}"))?,
            server_wait_ms: None,
        },
        "head" => {
            let mut words = rest.splitn(3, ' ');
            let status = words.next().and_then(|s| s.parse().ok()).ok_or_else(|| format!("no status in {line:?}"))?;
            let kind = words.next().unwrap_or("other");
            Input::Head(Head {
                status,
                event_stream: kind == "sse",
                content_range: words.next(),
                body: kind != "none",
                failure: None,
                server_wait_ms: None,
            })
        }
        _ => return Err(format!("no input {verb:?}")),
    };
    Ok((t, input))
}

/// The bytes a host holds ([`Action::Keep`]), as a host keeps them.
#[derive(Debug, Default)]
pub struct Held(Vec<u8>);

/// An action as its line (see the module doc); `chunk`: the last chunk
/// reported; `held`: what was kept of the chunks before. Holding and
/// dropping bytes ([`Action::Keep`], [`Action::Discard`]) have no line of
/// their own: what they do shows in what is delivered.
pub fn describe(action: &Action, chunk: &[u8], held: &mut Held) -> Option<String> {
    Some(match action {
        Action::Keep => {
            held.0.extend_from_slice(chunk);
            return None;
        }
        Action::Discard(n) => {
            held.0.drain(..(*n).min(held.0.len()));
            return None;
        }
        Action::Deliver { len, .. } => {
            let bytes: Vec<u8> = held.0.drain(..(*len).min(held.0.len())).collect();
            format!("deliver {}", String::from_utf8_lossy(&bytes))
        }
        Action::Connect { attempt, how: How::Plain } => format!("connect {attempt} plain"),
        Action::Connect { attempt, how: How::LastEventId(id) } => format!("connect {attempt} id:{id}"),
        Action::Connect { attempt, how: How::Hook { bytes, last_event_id } } => {
            format!("connect {attempt} hook bytes={bytes} id={}", last_event_id.as_deref().unwrap_or("-"))
        }
        Action::Abort => "abort".into(),
        Action::DeliverChunk => format!("deliver {}", String::from_utf8_lossy(chunk)),
        Action::Wake { at_ms } if at_ms.is_finite() => format!("wake {at_ms}"),
        Action::Wake { .. } => "wake none".into(),
        Action::End(Ending::Done) => "end done".into(),
        Action::End(Ending::HandBack) => "end hand-back".into(),
        Action::End(Ending::Cancelled) => "end cancelled".into(),
        Action::End(Ending::Failed(f)) => {
            let bytes = f.delivered_bytes.map_or_else(|| "-".to_string(), |b| b.to_string());
            let fallback = f.error.fallback();
            format!("end {} {} bytes={bytes} {} {}", f.error.class(), f.error.detail(), fallback.status, fallback.code)
        }
    })
}
