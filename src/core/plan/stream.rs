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

/// Why a stream answered with its fallback or ended with an error event, as
/// the host classifies its reason (by the error's brand). Crosses from
/// JavaScript by name (`"stalled"`, `"deadline"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackCause {
    /// The stall guard gave up (`StreamStalled`).
    Stalled,
    /// The deadline passed (`DeadlineExceeded`).
    Deadline,
    /// Too little time to start (`InsufficientBudget`).
    Insufficient,
    /// A plan step's cap fired before the deadline (`StepTimeout`).
    StepTimeout,
    /// A retry gave up because time ran out (`RetryFailed` whose reason is
    /// `insufficient`, `backoff-past-deadline` or `deadline`).
    RetryTime,
    /// A retry gave up for any other reason (`RetryFailed`).
    Retry,
    /// Anything else: the upstream's or the step's own failure. Its text is
    /// never shown to the client (it may hold URLs, hosts, keys).
    Failed,
}

impl FallbackCause {
    /// Parses the JS spelling; any other string is [`Failed`](Self::Failed).
    pub fn parse(value: &str) -> Self {
        match value {
            "stalled" => Self::Stalled,
            "deadline" => Self::Deadline,
            "insufficient" => Self::Insufficient,
            "step-timeout" => Self::StepTimeout,
            "retry-time" => Self::RetryTime,
            "retry" => Self::Retry,
            _ => Self::Failed,
        }
    }

    /// The cause of a `RetryFailed` with this `reason` word.
    pub fn of_retry(reason: &str) -> Self {
        match reason {
            "insufficient" | "backoff-past-deadline" | "deadline" => Self::RetryTime,
            _ => Self::Retry,
        }
    }
}

/// Who answers: `relay` (its upstream) or a plan's streamed step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackScope {
    /// `relay`: the words speak of the upstream.
    Relay,
    /// `p.stream` / `Plan::stream`: the words speak of the step.
    Step,
}

/// What the public client is told: the status of a fallback answer, a
/// reason code and our own words. Never the upstream's error text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FallbackAnswer {
    /// 504 when time ran out (a stall, the deadline, a cap, too little
    /// time), 502 for a failure.
    pub status: u16,
    /// A stable code: `STREAM_STALLED`, `DEADLINE_EXCEEDED`,
    /// `INSUFFICIENT_BUDGET`, `STEP_TIMEOUT`, `RETRY_FAILED`,
    /// `UPSTREAM_FAILED` (relay) / `STEP_FAILED` (a step), or `NOT_CALLED`
    /// when the upstream request was never made.
    pub code: &'static str,
    /// The reason in words.
    pub reason: String,
}

/// The answer for a stream that ended with `cause`. `phase`: a stall's phase
/// (`first-byte`, `first-chunk`, `stall`); `unsent`: the relay's upstream
/// request was never made; `own_message`: the message of one of this
/// library's own errors (rendered from its templates, so it carries no
/// upstream text), appended after the words. The host passes no message for
/// [`FallbackCause::Failed`], and one given is ignored: the upstream's or the
/// step's error goes to the caller's hooks and the trace, never to the client.
pub fn fallback_answer(
    cause: FallbackCause,
    scope: FallbackScope,
    phase: Option<&str>,
    unsent: bool,
    own_message: Option<&str>,
) -> FallbackAnswer {
    use FallbackCause as C;
    let status = if cause == C::Failed || cause == C::Retry { 502 } else { 504 };
    let code = match cause {
        _ if unsent => "NOT_CALLED",
        C::Stalled => "STREAM_STALLED",
        C::Deadline => "DEADLINE_EXCEEDED",
        C::Insufficient => "INSUFFICIENT_BUDGET",
        C::StepTimeout => "STEP_TIMEOUT",
        C::RetryTime | C::Retry => "RETRY_FAILED",
        C::Failed if scope == FallbackScope::Relay => "UPSTREAM_FAILED",
        C::Failed => "STEP_FAILED",
    };
    let phase = match phase {
        Some("first-byte") => "first-byte",
        Some("first-chunk") => "first-chunk",
        _ => "stall",
    };
    let lead = match (scope, cause) {
        (FallbackScope::Relay, _) if unsent => "the upstream was not called and the fallback answered",
        (FallbackScope::Relay, C::Stalled) => "upstream stalled",
        (FallbackScope::Relay, C::Deadline | C::StepTimeout) => "upstream did not finish within the deadline",
        (FallbackScope::Relay, C::Insufficient) => "the upstream was not called: too little time was left",
        (FallbackScope::Relay, C::RetryTime | C::Retry | C::Failed) => "upstream failed",
        (FallbackScope::Step, C::Stalled) => "the step stalled",
        (FallbackScope::Step, C::Insufficient) => "the step did not start",
        (FallbackScope::Step, C::Deadline) => "the step did not finish within the deadline",
        (FallbackScope::Step, C::StepTimeout) => "the step reached its cap",
        (FallbackScope::Step, C::RetryTime | C::Retry | C::Failed) => "the step failed",
    };
    let mut reason = String::from(lead);
    if cause == C::Stalled && !unsent {
        reason.push_str(" (");
        reason.push_str(phase);
        reason.push(')');
    }
    if let Some(m) = own_message.filter(|m| cause != C::Failed && !m.is_empty()) {
        reason.push_str(": ");
        reason.push_str(m);
    }
    FallbackAnswer { status, code, reason }
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

    #[test]
    fn a_fallback_says_our_words_and_a_code_never_the_upstream_error() {
        let secret = "connect http://user:s3cret@10.0.3.7:8443/v1 failed: key sk-live-abc123";
        for scope in [FallbackScope::Relay, FallbackScope::Step] {
            for unsent in [false, true] {
                let a = fallback_answer(FallbackCause::Failed, scope, None, unsent, Some(secret));
                assert_eq!(a.status, 502);
                assert!(
                    !a.reason.contains("s3cret") && !a.reason.contains("10.0.3.7") && !a.reason.contains("sk-live"),
                    "{a:?}"
                );
            }
        }
        let relay = fallback_answer(FallbackCause::Failed, FallbackScope::Relay, None, false, None);
        assert_eq!((relay.code, relay.reason.as_str()), ("UPSTREAM_FAILED", "upstream failed"));
        let step = fallback_answer(FallbackCause::Failed, FallbackScope::Step, None, false, None);
        assert_eq!((step.code, step.reason.as_str()), ("STEP_FAILED", "the step failed"));
    }

    #[test]
    fn a_fallback_for_time_is_504_with_its_code_and_our_own_message() {
        let s =
            fallback_answer(FallbackCause::Stalled, FallbackScope::Relay, Some("first-chunk"), false, Some("no chunk"));
        assert_eq!(
            (s.status, s.code, s.reason.as_str()),
            (504, "STREAM_STALLED", "upstream stalled (first-chunk): no chunk")
        );
        let s = fallback_answer(FallbackCause::Stalled, FallbackScope::Step, Some("<script>"), false, None);
        assert_eq!(s.reason, "the step stalled (stall)", "an unknown phase is not echoed");
        for (cause, code) in [
            (FallbackCause::Deadline, "DEADLINE_EXCEEDED"),
            (FallbackCause::Insufficient, "INSUFFICIENT_BUDGET"),
            (FallbackCause::StepTimeout, "STEP_TIMEOUT"),
            (FallbackCause::RetryTime, "RETRY_FAILED"),
        ] {
            let a = fallback_answer(cause, FallbackScope::Step, None, false, None);
            assert_eq!((a.status, a.code), (504, code), "{cause:?}");
        }
        let r = fallback_answer(
            FallbackCause::of_retry("exhausted"),
            FallbackScope::Relay,
            None,
            false,
            Some("all 3 attempts failed"),
        );
        assert_eq!(
            (r.status, r.code, r.reason.as_str()),
            (502, "RETRY_FAILED", "upstream failed: all 3 attempts failed")
        );
        assert_eq!(FallbackCause::of_retry("deadline"), FallbackCause::RetryTime);
        let u = fallback_answer(FallbackCause::Deadline, FallbackScope::Relay, None, true, Some("deadline exceeded"));
        assert_eq!(
            (u.status, u.code, u.reason.as_str()),
            (504, "NOT_CALLED", "the upstream was not called and the fallback answered: deadline exceeded")
        );
        assert_eq!(FallbackCause::parse("whatever"), FallbackCause::Failed);
    }
}
