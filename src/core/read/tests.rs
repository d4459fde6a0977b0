//! Scripted reads (the line format of [`super::script`]): what the machine
//! answers to each sequence of inputs.
use super::*;
use crate::core::retry::{BackoffOptions, JitterOption, RetryOptions};

const O: ReadOptions = ReadOptions {
    deadline_at: 10_000.0,
    first_byte_ms: None,
    first_chunk_ms: Some(1_000.0),
    stall_ms: Some(500.0),
    from_headers: false,
    hook: false,
    max_event_bytes: 1_000,
    max_line_bytes: 1_000,
};

/// A read with a backoff of exactly 10 ms and `attempts` attempts.
fn read(o: ReadOptions, attempts: u32) -> Read {
    let options = RetryOptions {
        attempt_min_ms: None,
        attempt_timeout_ms: None,
        backoff: Some(BackoffOptions { base_ms: 10.0, max_ms: 10.0, jitter: JitterOption::Fraction(0.0) }),
        max_attempts: Some(attempts),
        idempotent: Some(true),
        max_retry_after_ms: None,
    };
    Read::new(o, RetryRun::new(options.policy().unwrap(), o.deadline_at, 7, false).unwrap())
}

/// A 200 answer with an event stream.
fn sse_ok() -> Head<'static> {
    Head { status: 200, event_stream: true, content_range: None, body: true, failure: None, server_wait_ms: None }
}

fn play(o: ReadOptions, attempts: u32, script: &[&str]) -> Vec<String> {
    let mut r = read(o, attempts);
    let mut out = Vec::new();
    let mut chunk: &[u8] = &[];
    let mut held = script::Held::default();
    for line in script {
        let (t, input) = script::input(line).unwrap();
        if let Input::Chunk { bytes, .. } = input {
            chunk = bytes;
        }
        r.handle(input, t, None);
        while let Some(a) = r.poll() {
            out.extend(script::describe(&a, chunk, &mut held));
        }
    }
    out
}

#[test]
fn events_reach_the_reader_whole_and_the_body_ends_the_read() {
    let got = play(
        O,
        3,
        &["0 start", "5 head 200 sse", "10 chunk data: a\n\nda", "20 chunk ta: b\n", "30 chunk \n", "40 end"],
    );
    assert_eq!(
        got,
        [
            "connect 1 plain",
            "wake 1000",
            "wake 505",
            "deliver data: a\n\n",
            "deliver data: b\n\n",
            "wake none",
            "end done"
        ]
    );
}

#[test]
fn comments_and_retry_only_events_are_silence_before_the_first_chunk() {
    // The first-chunk wait runs out under keep-alives: nothing was content, so the attempt is made again as it was.
    let got = play(O, 2, &["0 start", "5 head 200 sse", "10 chunk : ping\n\nretry: 30\n\n", "505 wake", "1000 wake"]);
    assert_eq!(
        got,
        [
            "connect 1 plain",
            "wake 1000",
            "wake 505",
            // The keep-alives are events, passed on: not content, not progress.
            "deliver : ping\n\nretry: 30\n\n",
            "wake 1000",
            "abort",
            "wake 1010",
        ]
    );
    let got = play(O, 2, &["0 start", "5 head 200 sse", "505 wake", "1000 wake", "1010 wake"]);
    assert_eq!(got[got.len() - 2..], ["connect 2 plain".to_string(), "wake 2010".to_string()]);
}

#[test]
fn a_byte_order_mark_changes_nothing_but_is_passed_on_once() {
    let plain = play(O, 1, &["0 start", "5 head 200 sse", "10 chunk : ping\n\n", "505 wake", "1000 wake"]);
    let bom = play(O, 1, &["0 start", "5 head 200 sse", "10 chunk \u{feff}: ping\n\n", "505 wake", "1000 wake"]);
    assert_eq!(plain.last().unwrap(), "end StreamStalled first-chunk bytes=8 504 STREAM_STALLED");
    // A mark before a keep-alive is silence too; the reader got it (and strips it).
    assert_eq!(bom.last().unwrap(), "end StreamStalled first-chunk bytes=11 504 STREAM_STALLED");
    assert_eq!(bom[..3], plain[..3]);
    assert_eq!(bom[3], "deliver \u{feff}: ping\n\n");
}

#[test]
fn a_stall_after_content_resumes_by_id_and_a_replay_is_refused() {
    let got = play(
        O,
        3,
        &[
            "0 start",
            "5 head 200 sse",
            "10 chunk id: 1\ndata: a\n\nid: 2\ndata: b",
            "505 wake",
            "510 wake",
            // Resumed by id: the upstream starts again from the first event.
            "520 head 200 sse",
            "530 chunk \u{feff}id: 1\ndata: a\n\n",
        ],
    );
    assert_eq!(
        got,
        [
            "connect 1 plain",
            "wake 1000",
            "wake 505",
            "deliver id: 1\ndata: a\n\n",
            // The first resume waits only for the server (none asked): at once.
            "wake 510",
            "abort",
            "connect 2 id:1",
            "wake 1510",
            "wake 1020",
            // The upstream ignored the id: no hook, so the read ends with the failure that led here.
            "abort",
            "wake none",
            "end StreamStalled stall bytes=15 504 STREAM_STALLED",
        ]
    );
}

#[test]
fn a_resumed_stream_is_held_until_its_first_id_and_then_delivered() {
    let got = play(
        O,
        3,
        &[
            "0 start",
            "5 head 200 sse",
            "10 chunk id: 1\ndata: a\n\n",
            "20 fail ambiguous",
            "30 head 200 sse",
            "40 chunk \u{feff}: hi\n\n",
            "50 chunk id: 2\ndata: b\n\n",
            "60 end",
        ],
    );
    assert_eq!(
        got,
        [
            "connect 1 plain",
            "wake 1000",
            "wake 505",
            "deliver id: 1\ndata: a\n\n",
            "abort",
            "connect 2 id:1",
            "wake 1020",
            "wake 530",
            // The resumed body's mark is dropped; the comment waited for the first id.
            "deliver : hi\n\nid: 2\ndata: b\n\n",
            "wake none",
            "end done",
        ]
    );
    // The hook is asked when the upstream ignored the id.
    let got = play(
        ReadOptions { hook: true, ..O },
        3,
        &[
            "0 start",
            "5 head 200 sse",
            "10 chunk id: 1\ndata: a\n\n",
            "20 fail ambiguous",
            "30 head 200 sse",
            "40 chunk id: 1\ndata: a\n\n",
            "50 wake",
            "60 declined",
        ],
    );
    assert_eq!(
        got[9..],
        [
            "wake 50",
            "connect 3 hook bytes=15 id=1",
            "wake 1050",
            "abort",
            "wake none",
            "end RetryFailed not-resumable bytes=15 502 RETRY_FAILED"
        ]
        .map(String::from)
    );
}

#[test]
fn a_resume_by_id_needs_an_event_stream() {
    let got = play(
        O,
        3,
        &["0 start", "5 head 200 sse", "10 chunk id: 1\ndata: a\n\n", "20 fail ambiguous", "30 head 200 other"],
    );
    // Refused: a failed attempt (the second resume backs off), never spliced.
    assert_eq!(got[got.len() - 3..], ["wake 1020", "abort", "wake 40"].map(String::from));
}

#[test]
fn a_range_resume_needs_a_206_from_where_the_reader_is() {
    let hook = ReadOptions { hook: true, ..O };
    let start = ["0 start", "5 head 200 other", "10 chunk 0123456", "20 fail ambiguous"];
    let ok = play(hook, 3, &[&start[..], &["30 head 206 other bytes 7-26/27", "40 chunk 789", "50 end"]].concat());
    assert_eq!(
        ok[4..],
        ["abort", "connect 2 hook bytes=7 id=-", "wake 1020", "wake 530", "deliver 789", "wake none", "end done"]
            .map(String::from)
    );
    // A 200 that ignored Range would append the whole body again: a failed attempt.
    let whole = play(hook, 2, &[&start[..], &["30 head 200 other", "40 chunk 0123456789"]].concat());
    assert_eq!(
        whole[7..],
        ["abort", "wake none", "end RetryFailed exhausted bytes=7 502 RETRY_FAILED"].map(String::from)
    );
    let elsewhere = play(hook, 2, &[&start[..], &["30 head 206 other bytes 0-26/27"]].concat());
    assert_eq!(elsewhere.last().unwrap(), "end RetryFailed exhausted bytes=7 502 RETRY_FAILED");
}

#[test]
fn past_a_cap_the_read_ends_at_once_with_what_came_before() {
    let o = ReadOptions { max_event_bytes: 12, ..O };
    let got = play(o, 3, &["0 start", "5 head 200 sse", "10 chunk data: a\n\ndata: bbbbbbbb\n\n"]);
    assert_eq!(
        got[3..],
        ["deliver data: a\n\n", "abort", "wake none", "end StreamTooLarge EVENT_TOO_LARGE bytes=9 502 UPSTREAM_FAILED"]
            .map(String::from)
    );
}

#[test]
fn before_the_body_a_status_is_retried_or_handed_back() {
    let got = play(O, 2, &["0 start", "5 head 503 sse", "15 wake", "20 head 404 other"]);
    assert_eq!(
        got,
        [
            "connect 1 plain",
            "wake 1000",
            "abort",
            "wake 15",
            "connect 2 plain",
            "wake 1015",
            "wake none",
            "end hand-back"
        ]
    );
}

#[test]
fn the_deadline_and_the_reader_end_the_read_where_it_is() {
    let got = play(O, 3, &["0 start", "5 head 200 sse", "10 chunk data: a\n\n", "20 cancel", "30 chunk data: b\n\n"]);
    assert_eq!(got[4..], ["abort", "wake none", "end cancelled"].map(String::from));
    let o = ReadOptions { deadline_at: 300.0, ..O };
    let got = play(o, 3, &["0 start", "5 head 200 sse", "10 chunk data: a\n\n", "300 wake"]);
    assert_eq!(
        got,
        [
            "connect 1 plain",
            "wake 300",
            "wake 300",
            "deliver data: a\n\n",
            "abort",
            "wake none",
            "end DeadlineExceeded - bytes=- 504 DEADLINE_EXCEEDED"
        ]
    );
}

#[test]
fn a_reader_that_holds_the_stream_up_is_not_a_silent_source() {
    let o = ReadOptions { deadline_at: 100_000.0, ..O };
    let got = play(
        o,
        1,
        &["0 start", "5 head 200 sse", "10 chunk data: a\n\n", "10 hold", "505 wake", "2000 unhold", "2500 wake"],
    );
    // Parked while held: only the deadline; the silence counts again from the read.
    assert_eq!(
        got[4..],
        ["wake 100000", "wake 2500", "abort", "wake none", "end StreamStalled stall bytes=9 504 STREAM_STALLED"]
            .map(String::from)
    );
}

#[test]
fn a_plain_body_is_read_by_its_count_as_by_its_bytes_and_an_event_stream_needs_its_bytes() {
    for event_stream in [false, true] {
        let head =
            Head { status: 200, event_stream, content_range: None, body: true, failure: None, server_wait_ms: None };
        let (mut by_bytes, mut by_count) = (read(O, 1), read(O, 1));
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let chunks: [(f64, &[u8]); 4] = [(10.0, b"data: a\n\n"), (20.0, b"xyz"), (30.0, b""), (40.0, b"data: b\n\n")];
        for (r, out) in [(&mut by_bytes, &mut a), (&mut by_count, &mut b)] {
            r.handle(Input::Start, 0.0, None);
            r.handle(Input::Head(head), 5.0, None);
            while let Some(x) = r.poll() {
                out.push(x);
            }
        }
        for (t, bytes) in chunks {
            by_bytes.handle(Input::Chunk { bytes, progress: None }, t, None);
            by_count.handle(Input::Counted { len: bytes.len(), progress: None }, t, None);
            a.extend(std::iter::from_fn(|| by_bytes.poll()));
            b.extend(std::iter::from_fn(|| by_count.poll()));
        }
        // Then silence: the same verdict either way on a plain body.
        // Each wake when the watcher asked for it, until the read ends.
        for _ in 0..5 {
            let at = b.iter().rev().find_map(|x| if let Action::Wake { at_ms } = x { Some(*at_ms) } else { None });
            let (Some(at_ms), false) = (at, matches!(b.last(), Some(Action::End(_)))) else { break };
            by_bytes.handle(Input::Wake, at_ms, None);
            by_count.handle(Input::Wake, at_ms, None);
            a.extend(std::iter::from_fn(|| by_bytes.poll()));
            b.extend(std::iter::from_fn(|| by_count.poll()));
        }
        if event_stream {
            assert!(!b.iter().any(|x| matches!(x, Action::Deliver { .. } | Action::DeliverChunk)), "{b:?}");
            assert_eq!(by_count.delivered_bytes(), 0.0);
        } else {
            assert_eq!(a, b);
            assert_eq!(by_count.delivered_bytes(), 21.0);
            assert!(matches!(b.last(), Some(Action::End(Ending::Failed(_)))), "{b:?}");
        }
    }
}

#[test]
fn nothing_happens_after_the_end() {
    let script = ["0 start", "5 head 200 sse", "10 chunk data: a\n\n", "20 end"];
    let after = [
        "30 chunk data: b\n\n",
        "40 wake",
        "50 fail ambiguous",
        "60 cancel",
        "70 abort deadline",
        "80 head 200 sse",
        "90 start",
    ];
    assert_eq!(play(O, 3, &[&script[..], &after[..]].concat()), play(O, 3, &script));
}

/// One input of a random script: its kind, its instant, and bytes (a chunk, or a head's `Content-Range`).
#[test]
fn the_last_attempt_s_cause_is_there_for_the_host() {
    let mut r = read(O, 3);
    assert_eq!(r.last_cause(), None);
    for (t, input) in [
        (0.0, Input::Start),
        (
            5.0,
            Input::Head(Head {
                status: 503,
                event_stream: true,
                content_range: None,
                body: true,
                failure: None,
                server_wait_ms: None,
            }),
        ),
    ] {
        r.handle(input, t, None);
    }
    assert_eq!(r.last_cause(), Some(Cause::Status(503)));
    let mut r = read(O, 3);
    for line in ["0 start", "5 head 200 sse", "10 chunk data: a\n\n", "505 wake", "510 wake"] {
        let (t, input) = script::input(line).unwrap();
        r.handle(input, t, None);
    }
    // A stall after content: the verdict's numbers, for the StreamStalled the attempt's request is aborted with.
    assert_eq!(r.last_cause(), Some(Cause::Stalled { phase: "stall", after_ms: 500.0, chunks: 1.0, bytes: 9.0 }));
}

#[test]
fn whether_a_resume_by_id_can_be_checked_is_there_for_the_host() {
    let o = ReadOptions { max_event_bytes: 1 << 20, ..O };
    let events = |n: usize| (1..=n).map(|i| format!("id: {i}\ndata: x\n\n")).collect::<String>();
    for (n, checkable) in [(0, true), (1025, true), (1026, false)] {
        let mut r = read(o, 3);
        r.handle(Input::Start, 0.0, None);
        r.handle(Input::Head(sse_ok()), 1.0, None);
        r.handle(Input::Chunk { bytes: events(n).as_bytes(), progress: None }, 2.0, None);
        assert_eq!(r.ids_checkable(), checkable, "{n} ids");
    }
}

fn any_input() -> impl Strategy<Value = (u8, f64, Vec<u8>, u16)> {
    let instant = prop_oneof![8 => 0.0..20_000.0f64, 1 => Just(f64::NAN), 1 => Just(-1.0)];
    let bytes = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..40),
        proptest::collection::vec(
            prop_oneof![
                Just(b'\n'),
                Just(b'\r'),
                Just(b':'),
                Just(b'i'),
                Just(b'd'),
                Just(b' '),
                Just(0xef),
                Just(0xbb),
                Just(0xbf),
                Just(b'x')
            ],
            0..60
        ),
    ];
    (0u8..12, instant, bytes, prop_oneof![Just(200u16), Just(206), Just(404), Just(503), any::<u16>()])
}

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Invariant 6 and the core's rule: any sequence of inputs, at any instants, never panics; the read
    /// ends at most once, with one `End` last among the actions, and delivers nothing after it. The host
    /// is never told to deliver or drop more bytes than it keeps.
    #[test]
    fn any_script_ends_at_most_once_and_never_panics(
        script in proptest::collection::vec(any_input(), 0..40),
        hook in any::<bool>(),
        caps in (1usize..64, 1usize..64),
    ) {
        let o = ReadOptions { hook, max_event_bytes: caps.0, max_line_bytes: caps.1, ..O };
        let mut r = read(o, 3);
        r.handle(Input::Start, 0.0, None);
        let mut ends = 0;
        let mut after_end = 0;
        let mut kept = 0usize;
        for (kind, t, bytes, status) in &script {
            let range = std::str::from_utf8(bytes).ok();
            let input = match kind {
                0 => Input::Head(Head { status: *status, event_stream: bytes.len() % 2 == 0, content_range: range, body: bytes.len() != 1, failure: None, server_wait_ms: None }),
                1..=3 => Input::Chunk { bytes, progress: None },
                4 => Input::End,
                5 | 6 => Input::Wake,
                7 => Input::Failed { failure: Failure::Ambiguous, server_wait_ms: Some(*t) },
                8 => Input::HookDeclined,
                9 => Input::Hold,
                10 => Input::Unhold,
                _ => if t.is_nan() { Input::Cancel } else { Input::Aborted { deadline: bytes.is_empty() } },
            };
            r.handle(input, *t, None);
            while let Some(a) = r.poll() {
                if ends > 0 {
                    after_end += 1;
                }
                if let Action::End(_) = a {
                    ends += 1;
                }
                if let Action::Wake { at_ms } = a {
                    prop_assert!(!at_ms.is_nan());
                }
                match a {
                    Action::Keep => kept += bytes.len(),
                    Action::Deliver { len: n, .. } | Action::Discard(n) => {
                        prop_assert!(n <= kept, "{} of {} kept", n, kept);
                        kept -= n;
                    }
                    _ => {}
                }
            }
        }
        prop_assert!(ends <= 1);
        prop_assert_eq!(after_end, 0);
        prop_assert_eq!(ends == 1, r.ended());
    }
}

#[test]
fn an_event_held_whole_is_kept_by_the_host_and_handed_on_as_read_past_the_default_cap() {
    // The machine counts what an unfinished event holds; the host keeps the bytes. A delivery up to
    // the default event cap is joined; a longer one (raised caps) goes in the pieces it was read in.
    for (pieces, join) in [(4, true), (JOIN_MAX / 4096 + 1, false)] {
        let o = ReadOptions { max_event_bytes: 64 << 20, max_line_bytes: 64 << 20, ..O };
        let mut r = read(o, 3);
        r.handle(Input::Start, 0.0, None);
        r.handle(Input::Head(sse_ok()), 1.0, None);
        let data = vec![b'x'; 4096];
        let mut actions = Vec::new();
        r.handle(Input::Chunk { bytes: b"data: ", progress: None }, 2.0, None);
        actions.extend(std::iter::from_fn(|| r.poll()));
        for _ in 0..pieces {
            r.handle(Input::Chunk { bytes: &data, progress: None }, 3.0, None);
            actions.extend(std::iter::from_fn(|| r.poll()));
        }
        r.handle(Input::Chunk { bytes: b"\n\n", progress: None }, 4.0, None);
        actions.extend(std::iter::from_fn(|| r.poll()));
        let keeps = actions.iter().filter(|a| matches!(a, Action::Keep)).count();
        assert_eq!(keeps, pieces + 2, "every chunk of the unfinished event is kept by the host");
        let len = 6 + pieces * 4096 + 2;
        let delivered: Vec<_> = actions.iter().filter(|a| matches!(a, Action::Deliver { .. })).collect();
        assert_eq!(delivered, [&Action::Deliver { len, join }]);
        assert_eq!(r.delivered_bytes(), len as f64);
    }
}

/// A host that reports a chunk with the reader's instant while the watcher
/// samples (the module doc's licence, js/resume.js) against the true
/// arrivals: the stall is never early and at most `sample_ms` late.
#[test]
fn while_the_watcher_samples_a_chunk_may_carry_the_readers_instant_and_no_stall_is_early() {
    let o = ReadOptions {
        deadline_at: 100_000.0,
        first_chunk_ms: Some(1_000.0),
        stall_ms: Some(100.0),
        max_event_bytes: 1 << 20,
        max_line_bytes: 1 << 20,
        ..O
    };
    let sample_ms = 16.0; // ⌊stallMs / 4⌋ within 1 ..= MAX_SAMPLE_MS
    let chunk = b"data: x\n\n";
    for gap in [0.05, 5.0, 15.0, 20.0, 60.0, 99.0] {
        // A burst of 40 chunks 0.01 ms apart, then 6 chunks `gap` apart, then silence.
        let mut arrivals: Vec<f64> = (0..40).map(|i| 10.0 + f64::from(i) * 0.01).collect();
        for k in 1..=6 {
            arrivals.push(10.39 + f64::from(k) * gap);
        }
        let last = arrivals[arrivals.len() - 1];
        let mut r = read(o, 1);
        r.handle(Input::Start, 0.0, None);
        r.handle(Input::Head(sse_ok()), 5.0, None);
        let mut wake = f64::INFINITY;
        let mut ended = None;
        let drain = |r: &mut Read, now: f64, wake: &mut f64, ended: &mut Option<(f64, &str)>| {
            while let Some(a) = r.poll() {
                match a {
                    Action::Wake { at_ms } => *wake = at_ms,
                    Action::End(Ending::Failed(f)) => *ended = Some((now, f.error.class())),
                    _ => {}
                }
            }
        };
        drain(&mut r, 5.0, &mut wake, &mut ended);
        let (mut licence, mut sampled, mut reader_at, mut i) = (false, false, 5.0, 0);
        while ended.is_none() {
            match arrivals.get(i) {
                Some(&at) if at < wake => {
                    // The reader asked right after the last delivery (`reader_at`): its instant stands in.
                    let t = if licence { reader_at } else { at };
                    r.handle(Input::Chunk { bytes: chunk, progress: None }, t, None);
                    licence = r.sampling();
                    sampled |= licence;
                    drain(&mut r, at, &mut wake, &mut ended);
                    reader_at = at;
                    i += 1;
                }
                _ => {
                    let now = wake;
                    assert!(now.is_finite(), "gap {gap}: no wake armed");
                    r.handle(Input::Wake, now, None);
                    licence = false; // any other input ends the licence
                    drain(&mut r, now, &mut wake, &mut ended);
                }
            }
        }
        let (at, class) = ended.unwrap();
        assert!(sampled, "gap {gap}: the burst was sampled");
        assert_eq!(class, "StreamStalled", "gap {gap}");
        assert!(at >= last + 100.0, "gap {gap}: stalled {} ms after the last chunk", at - last);
        assert!(at <= last + 100.0 + sample_ms, "gap {gap}: stalled {} ms after the last chunk", at - last);
    }
}
