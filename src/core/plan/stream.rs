//! A step that streams to the client: how it ended, and what the host sends
//! next.
//!
//! # Why the core decides it
//! A streamed step (`p.stream` in JS, `Plan::stream` in Rust) has two lives.
//! Before any content reaches the client nothing is committed: the status
//! and headers can still change, so any failure is answered by the plan's
//! fallback, inside the reserve the plan held for it. Once content went out
//! the status cannot change: the host ends the body, on an event stream with
//! an `event: error` naming the reason, so a client can tell an interrupted
//! answer from a complete one. Both hosts must name the ending the same way
//! in the trace and take the same turn, so the rule is here, once:
//! [`stream_verdict`].
//!
//! # Invariants (tests below)
//! 1. A step whose body ended normally is `ok` and the body closes, whether
//!    or not it carried content (an empty body is the step's answer).
//! 2. A reader that cancelled the body is `aborted`, and nothing more is
//!    sent: nobody is reading.
//! 3. Any other ending (the step failed, stalled, reached its cap, or a
//!    parent of the deadline aborted) is answered by the fallback when no
//!    content was sent, and by an error event when some was. The outcome is
//!    the same either way: `error`, `stalled`, `timeout` (a cap before the
//!    deadline's instant) or `deadline` (a cap at it), `aborted`.

use serde::{Deserialize, Serialize};

use super::Outcome;

/// How a streamed step's body ended, as the host saw it. Crosses from
/// JavaScript by name (`"done"`, `"failed"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamEnd {
    /// The body ended normally.
    Done,
    /// The step threw, answered with a non-ok response, gave something that
    /// is not a stream, or its body errored.
    Failed,
    /// The stall guard gave up on it (first chunk or gap between chunks).
    Stalled,
    /// The step's cap fired.
    Cap,
    /// A parent of the deadline aborted (the client left).
    Parent,
    /// The response's reader cancelled the body.
    Cancelled,
}

impl StreamEnd {
    /// Parses the JS spelling; `None` for any other string.
    pub fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "done" => Self::Done,
            "failed" => Self::Failed,
            "stalled" => Self::Stalled,
            "cap" => Self::Cap,
            "parent" => Self::Parent,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }
}

/// What the host does after a streamed step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum StreamNext {
    /// Close the body: it is complete, or nobody reads it.
    Close,
    /// Nothing reached the client: the plan's fallback answers instead.
    Fallback,
    /// Content was sent: end the body with an error event naming the reason
    /// (an event stream), or error it (any other body).
    Error,
}

/// The verdict on a streamed step's ending: its trace outcome and what the
/// host sends next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct StreamVerdict {
    /// The step's trace outcome.
    pub outcome: Outcome,
    /// What the host sends next.
    pub next: StreamNext,
}

/// The verdict for a streamed step that ended with `end`; `content_sent`:
/// whether any content had reached the client; `cap_is_deadline`: whether
/// the step's cap was the deadline's own instant (see the module doc).
pub fn stream_verdict(end: StreamEnd, content_sent: bool, cap_is_deadline: bool) -> StreamVerdict {
    let outcome = match end {
        StreamEnd::Done => Outcome::Ok,
        StreamEnd::Failed => Outcome::Error,
        StreamEnd::Stalled => Outcome::Stalled,
        StreamEnd::Cap if cap_is_deadline => Outcome::Deadline,
        StreamEnd::Cap => Outcome::Timeout,
        StreamEnd::Parent | StreamEnd::Cancelled => Outcome::Aborted,
    };
    let next = match end {
        StreamEnd::Done | StreamEnd::Cancelled => StreamNext::Close,
        _ if content_sent => StreamNext::Error,
        _ => StreamNext::Fallback,
    };
    StreamVerdict { outcome, next }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    const ENDS: [StreamEnd; 6] = [
        StreamEnd::Done,
        StreamEnd::Failed,
        StreamEnd::Stalled,
        StreamEnd::Cap,
        StreamEnd::Parent,
        StreamEnd::Cancelled,
    ];

    #[test]
    fn a_normal_end_is_ok_and_closes_with_or_without_content() {
        for sent in [false, true] {
            let v = stream_verdict(StreamEnd::Done, sent, false);
            assert_eq!((v.outcome, v.next), (Outcome::Ok, StreamNext::Close));
        }
    }

    #[test]
    fn a_cancelled_reader_is_aborted_and_nothing_more_is_sent() {
        for sent in [false, true] {
            let v = stream_verdict(StreamEnd::Cancelled, sent, true);
            assert_eq!((v.outcome, v.next), (Outcome::Aborted, StreamNext::Close));
        }
    }

    #[test]
    fn failures_fall_back_before_content_and_end_with_an_error_after() {
        for end in [StreamEnd::Failed, StreamEnd::Stalled, StreamEnd::Cap, StreamEnd::Parent] {
            for cap_is_deadline in [false, true] {
                let before = stream_verdict(end, false, cap_is_deadline);
                let after = stream_verdict(end, true, cap_is_deadline);
                assert_eq!(before.next, StreamNext::Fallback, "{end:?}");
                assert_eq!(after.next, StreamNext::Error, "{end:?}");
                assert_eq!(before.outcome, after.outcome, "the outcome does not depend on content: {end:?}");
            }
        }
    }

    #[test]
    fn outcomes_name_the_ending() {
        let name = |end, d| stream_verdict(end, true, d).outcome.as_str();
        assert_eq!(name(StreamEnd::Failed, false), "error");
        assert_eq!(name(StreamEnd::Stalled, false), "stalled");
        assert_eq!(name(StreamEnd::Cap, false), "timeout");
        assert_eq!(name(StreamEnd::Cap, true), "deadline");
        assert_eq!(name(StreamEnd::Parent, false), "aborted");
    }

    #[test]
    fn ends_parse_from_their_js_spelling() {
        let names = ["done", "failed", "stalled", "cap", "parent", "cancelled"];
        for (end, name) in ENDS.into_iter().zip(names) {
            assert_eq!(StreamEnd::parse(name), Some(end));
        }
        assert_eq!(StreamEnd::parse("later"), None);
    }
}
