//! Platform caps as data, and the fold that turns them into one deadline.
//!
//! # Why the deadline is a minimum
//! Every hop in front of the code (the platform's limit for this kind of
//! invocation, the product's promise to the user) imposes its own cap, and
//! the first to expire wins. The edge deadline is therefore
//! `now + min(every wall-clock cap in front) − the fallback reserve`: the
//! reserve is the slice kept to produce a truthful terminal response before
//! the platform kills the invocation.
//!
//! # Wall-clock caps and CPU caps are different things
//! Some platforms limit *CPU time*, not elapsed time. A Cloudflare Worker on
//! the free plan may use 10 ms of CPU, yet it can wait 20 s on a `fetch`,
//! because waiting for I/O uses no CPU. CPU time never exceeds wall time, so
//! a CPU cap never bounds a wall-clock deadline; folding one in would be
//! wrong in both directions (10 ms would kill every request that waits on
//! the network, and 5 min says nothing about a client who leaves after 30 s).
//! [`for_platform`] folds only wall-clock caps ([`CapKind::Wall`],
//! [`CapKind::FirstByte`]) and returns the CPU cap beside the deadline, as data
//! for logs and for budgeting CPU-heavy work, never as an instant.
//!
//! # The Workers clock
//! In Cloudflare Workers (workerd), `Date.now()` and `performance.now()` do not
//! advance while JavaScript runs: time moves only when the isolate waits on
//! I/O (a `fetch`, a timer, a stream read). A CPU-bound loop therefore sees a
//! constant `now`, and `remaining()` does not decrease inside it: a deadline
//! cannot interrupt synchronous work there, and CPU-heavy steps must be
//! bounded by the CPU cap, not by the wall-clock deadline. Everything in this
//! crate takes `now` as an argument, so it reports exactly what the host
//! clock says; the `frozen_clock_reports_no_progress` test pins that down.
//!
//! # A shortage is not an error
//! A product limit at or below the fallback reserve (a `productMs` computed
//! from what a caller has left, say) leaves no time for the work, only for
//! the fallback. That is a runtime shortage, so [`for_platform`] answers a
//! deadline at `now`, already expired: work under it is skipped or refused
//! with `InsufficientBudget`, and the fallback, which runs outside this
//! deadline in the reserve, answers. Only values that could never be valid
//! (NaN, negative, a cap of 0) are errors.
//!
//! # Sources
//! Every built-in figure carries the page it came from and the date it was
//! read ([`RETRIEVED`]). Platforms change their limits; every figure can be
//! overridden ([`PlatformCaps::with_overrides`]) or replaced entirely
//! ([`PlatformCaps::custom`]). A platform with no documented limit for an
//! invocation has `ms: None`, never a guessed number.
//!
//! # Invariants (each is a property test in this module)
//! 1. The deadline is never later than `now + cap − reserve` for the product
//!    cap and every wall-clock cap in front, and equals the minimum of them.
//! 2. A CPU cap never changes the deadline.
//! 3. The deadline is never before `now`: a reserve at or above the smallest
//!    cap gives `now` itself, an expired deadline (see "A shortage").
//! 4. Every built-in figure is a finite positive number of milliseconds with
//!    an https source and the retrieval date.

use serde::{Deserialize, Serialize};

use crate::core::deadline::{check_ms, deadline_in, DeadlineError, MAX_MS};
use crate::core::error::{Described, Kind, Message};

/// When the built-in figures were read.
pub const RETRIEVED: &str = "2026-11-30";

const CF_LIMITS: &str = "https://developers.cloudflare.com/workers/platform/limits/";
const CF_CPU_CHANGELOG: &str = "https://developers.cloudflare.com/changelog/2025-03-25-higher-cpu-limits/";
const DENO_LIMITS: &str = "https://docs.deno.com/deploy/";
const VERCEL_LIMITS: &str = "https://vercel.com/docs/functions/limitations#edge-runtime";
const NETLIFY_LIMITS: &str = "https://docs.netlify.com/edge-functions/limits/";
const LAMBDA_TIMEOUT: &str = "https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html";
const UNDICI_CLIENT: &str = "https://github.com/nodejs/undici/blob/main/docs/docs/api/Client.md";
const NODE_HTTP: &str = "https://nodejs.org/api/http.html#serverrequesttimeout";
const BUN_FETCH_TIMEOUT: &str = "https://bun.sh/reference/globals/BunFetchRequestInit/timeout";
const BUN_SERVE_IDLE: &str = "https://github.com/oven-sh/bun/issues/13712";

/// When the figures of the server runtimes (Node, Bun, Netlify Edge, AWS Lambda) were read.
pub const RETRIEVED_RUNTIMES: &str = "2026-12-07";

/// Why a platform deadline was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum CapsError {
    /// A platform name this package has no data for. Use
    /// [`PlatformCaps::custom`] for others.
    UnknownPlatform {
        /// The name given (its first 64 characters).
        value: String,
    },
    /// A plan other than `free` or `paid`.
    UnknownTier {
        /// The plan given (its first 64 characters).
        value: String,
    },
    /// A trigger other than `fetch`, `wait-until`, `cron` or `queue`.
    UnknownTrigger {
        /// The trigger given (its first 64 characters).
        value: String,
    },
    /// The platform has no such invocation (Vercel Edge has no cron trigger).
    UnsupportedTrigger {
        /// The platform asked for.
        platform: Platform,
        /// The trigger it does not have.
        trigger: Trigger,
    },
    /// A cap (`wallMs`, `firstByteMs`, `cpuMs`) is 0: nothing could ever run.
    ZeroCap {
        /// The cap's JS name (`wallMs`, `firstByteMs` or `cpuMs`).
        param: &'static str,
    },
    /// `plan` or `trigger` was given with the platform `custom`, whose caps
    /// are the caller's own: pass them in `caps` instead.
    CustomWith {
        /// The option given with `custom` (`plan` or `trigger`).
        param: &'static str,
    },
    /// A time or duration argument is invalid.
    Time(DeadlineError),
}

/// The platform caps' message templates.
pub mod msg {
    crate::templates! { "caps";
        /// [`CapsError::UnknownPlatform`](super::CapsError::UnknownPlatform).
        UNKNOWN_PLATFORM = "'platform' must be one of cloudflare-workers, deno-deploy, vercel-edge, netlify-edge, aws-lambda, node, bun: current value is '{value}'";
        /// [`CapsError::UnknownTier`](super::CapsError::UnknownTier).
        UNKNOWN_TIER = "'plan' must be one of free, paid: current value is '{value}'";
        /// [`CapsError::UnknownTrigger`](super::CapsError::UnknownTrigger).
        UNKNOWN_TRIGGER = "'trigger' must be one of fetch, wait-until, cron, queue: current value is '{value}'";
        /// [`CapsError::UnsupportedTrigger`](super::CapsError::UnsupportedTrigger).
        UNSUPPORTED_TRIGGER = "'trigger' {trigger} is not an invocation {platform} has";
        /// [`CapsError::ZeroCap`](super::CapsError::ZeroCap).
        ZERO_CAP = "'{param}' must be above 0 milliseconds: current value is 0";
        /// [`CapsError::CustomWith`](super::CapsError::CustomWith).
        CUSTOM_WITH = "'{param}' applies to built-in platforms, not \"custom\": pass the caps in 'caps' instead";
    }
}

crate::described_error!(CapsError);

impl Described for CapsError {
    fn code(&self) -> &'static str {
        match self {
            Self::UnknownPlatform { .. } => "UNKNOWN_PLATFORM",
            Self::UnknownTier { .. } => "UNKNOWN_PLAN",
            Self::UnknownTrigger { .. } => "UNKNOWN_TRIGGER",
            Self::UnsupportedTrigger { .. } => "UNSUPPORTED_TRIGGER",
            Self::ZeroCap { .. } => "ZERO_CAP",
            Self::CustomWith { .. } => "NOT_FOR_CUSTOM",
            Self::Time(e) => e.code(),
        }
    }

    /// Names inside [`PlatformRequest`] (`caps.wallMs`, `productMs`); the
    /// binding prefixes the argument.
    fn param(&self) -> Option<String> {
        let caps = |p: &str| Some(format!("caps.{p}"));
        match self {
            Self::UnknownPlatform { .. } => Some("platform".into()),
            Self::UnknownTier { .. } => Some("plan".into()),
            Self::UnknownTrigger { .. } | Self::UnsupportedTrigger { .. } => Some("trigger".into()),
            Self::ZeroCap { param } => caps(param),
            Self::CustomWith { param } => Some((*param).into()),
            Self::Time(e) => match e.param() {
                Some(p @ ("wallMs" | "firstByteMs" | "cpuMs")) => caps(p),
                other => other.map(String::from),
            },
        }
    }

    fn kind(&self) -> Kind {
        match self {
            Self::CustomWith { .. } => Kind::Type,
            Self::Time(e) => e.kind(),
            _ => Kind::Range,
        }
    }

    fn message(&self) -> Message {
        match self {
            Self::UnknownPlatform { value } => Message::new(msg::UNKNOWN_PLATFORM).arg("value", value.as_str()),
            Self::UnknownTier { value } => Message::new(msg::UNKNOWN_TIER).arg("value", value.as_str()),
            Self::UnknownTrigger { value } => Message::new(msg::UNKNOWN_TRIGGER).arg("value", value.as_str()),
            Self::UnsupportedTrigger { platform, trigger } => Message::new(msg::UNSUPPORTED_TRIGGER)
                .arg("trigger", trigger.as_str())
                .arg("platform", platform.as_str()),
            Self::ZeroCap { param } => Message::new(msg::ZERO_CAP).arg("param", *param),
            Self::CustomWith { param } => Message::new(msg::CUSTOM_WITH).arg("param", *param),
            Self::Time(e) => e.message(),
        }
    }
}

impl From<DeadlineError> for CapsError {
    fn from(e: DeadlineError) -> Self {
        Self::Time(e)
    }
}

/// A platform with built-in figures. Crosses to JavaScript as its name
/// (`"cloudflare-workers"`, `"deno-deploy"`, `"vercel-edge"`, `"netlify-edge"`, `"aws-lambda"`,
/// `"node"`, `"bun"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum Platform {
    /// Cloudflare Workers (`"cloudflare-workers"`).
    CloudflareWorkers,
    /// Deno Deploy (`"deno-deploy"`).
    DenoDeploy,
    /// Vercel Edge Functions (`"vercel-edge"`).
    VercelEdge,
    /// Netlify Edge Functions (`"netlify-edge"`).
    NetlifyEdge,
    /// AWS Lambda (`"aws-lambda"`).
    AwsLambda,
    /// A Node server (`"node"`): its `fetch` (undici) has caps of its own.
    Node,
    /// A Bun server (`"bun"`): `Bun.serve` and Bun's `fetch` have caps of their own.
    Bun,
}

impl Platform {
    /// The platform named `value` (`"cloudflare-workers"`, `"deno-deploy"`, `"vercel-edge"`,
    /// `"netlify-edge"`, `"aws-lambda"`, `"node"` or `"bun"`); any other name is
    /// [`CapsError::UnknownPlatform`].
    pub fn parse(value: &str) -> Result<Self, CapsError> {
        match value {
            "cloudflare-workers" => Ok(Self::CloudflareWorkers),
            "deno-deploy" => Ok(Self::DenoDeploy),
            "vercel-edge" => Ok(Self::VercelEdge),
            "netlify-edge" => Ok(Self::NetlifyEdge),
            "aws-lambda" => Ok(Self::AwsLambda),
            "node" => Ok(Self::Node),
            "bun" => Ok(Self::Bun),
            _ => Err(CapsError::UnknownPlatform { value: value.chars().take(64).collect() }),
        }
    }

    /// The platform's name as JavaScript writes it (`"cloudflare-workers"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CloudflareWorkers => "cloudflare-workers",
            Self::DenoDeploy => "deno-deploy",
            Self::VercelEdge => "vercel-edge",
            Self::NetlifyEdge => "netlify-edge",
            Self::AwsLambda => "aws-lambda",
            Self::Node => "node",
            Self::Bun => "bun",
        }
    }
}

/// The account plan (`plan` in JS; `Plan` is the pipeline type here):
/// `"free"` or `"paid"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum Tier {
    /// The free plan (`"free"`).
    Free,
    /// A paid plan (`"paid"`).
    Paid,
}

impl Tier {
    /// The plan named `value` (`"free"` or `"paid"`); any other name is
    /// [`CapsError::UnknownTier`].
    pub fn parse(value: &str) -> Result<Self, CapsError> {
        match value {
            "free" => Ok(Self::Free),
            "paid" => Ok(Self::Paid),
            _ => Err(CapsError::UnknownTier { value: value.chars().take(64).collect() }),
        }
    }
}

/// What started the invocation: `"fetch"`, `"wait-until"`, `"cron"` or `"queue"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum Trigger {
    /// An HTTP request.
    Fetch,
    /// Work passed to `waitUntil`, measured from when the response was sent
    /// (or the client disconnected): call [`for_platform`] with that `now`.
    #[serde(rename = "wait-until")]
    AfterResponse,
    /// A scheduled (cron) invocation.
    Cron,
    /// A queue consumer.
    Queue,
}

impl Trigger {
    /// The trigger named `value` (`"fetch"`, `"wait-until"`, `"cron"` or
    /// `"queue"`); any other name is [`CapsError::UnknownTrigger`].
    pub fn parse(value: &str) -> Result<Self, CapsError> {
        match value {
            "fetch" => Ok(Self::Fetch),
            "wait-until" => Ok(Self::AfterResponse),
            "cron" => Ok(Self::Cron),
            "queue" => Ok(Self::Queue),
            _ => Err(CapsError::UnknownTrigger { value: value.chars().take(64).collect() }),
        }
    }

    /// The trigger's name as JavaScript writes it (`"wait-until"` for
    /// [`Trigger::AfterResponse`]).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fetch => "fetch",
            Self::AfterResponse => "wait-until",
            Self::Cron => "cron",
            Self::Queue => "queue",
        }
    }
}

/// What a cap limits: `"wall"`, `"first-byte"`, `"cpu"` or `"fetch-idle"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum CapKind {
    /// Elapsed (wall-clock) time for the whole invocation.
    Wall,
    /// Elapsed time until the response must *begin*.
    FirstByte,
    /// CPU time. Not a deadline: see the module docs.
    Cpu,
    /// How long an outbound `fetch` may go without a byte (waiting for the headers, or between
    /// body chunks) before the runtime's own fetch fails it, whatever its signal says. Not a
    /// deadline of the invocation: reported beside it ([`PlatformAnswer::fetch_idle_ms`]), and
    /// what `fetchWithDeadline` raises or clamps to.
    FetchIdle,
}

/// One documented limit. Crosses to JavaScript with `null` for an absent
/// plan, trigger or figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify), tsify(missing_as_null))]
pub struct Cap {
    /// The platform the figure belongs to.
    pub platform: Platform,
    /// `null` (`None`): every plan.
    #[serde(rename = "plan")]
    pub tier: Option<Tier>,
    /// `null` (`None`): every trigger the platform has.
    pub trigger: Option<Trigger>,
    /// What the cap limits: wall-clock time, time to first byte or CPU time.
    pub kind: CapKind,
    /// The limit; `null` (`None`) when the platform documents none.
    pub ms: Option<f64>,
    /// The highest value the user may configure, when configurable.
    pub configurable_max_ms: Option<f64>,
    /// What the figure covers and any condition on it, in words for logs and docs.
    pub note: &'static str,
    /// The https page the figure was read from.
    pub source: &'static str,
    /// The date the page was read (`YYYY-MM-DD`, [`RETRIEVED`]).
    pub retrieved: &'static str,
}

const fn cap(
    platform: Platform,
    tier: Option<Tier>,
    trigger: Option<Trigger>,
    kind: CapKind,
    ms: Option<f64>,
    note: &'static str,
    source: &'static str,
) -> Cap {
    Cap { platform, tier, trigger, kind, ms, configurable_max_ms: None, note, source, retrieved: RETRIEVED }
}

use CapKind::{Cpu, FetchIdle, FirstByte, Wall};
use Platform::{AwsLambda, Bun, CloudflareWorkers, DenoDeploy, NetlifyEdge, Node, VercelEdge};

/// A figure of the server runtimes, read on [`RETRIEVED_RUNTIMES`].
const fn runtime_cap(
    platform: Platform,
    kind: CapKind,
    ms: Option<f64>,
    configurable_max_ms: Option<f64>,
    note: &'static str,
    source: &'static str,
) -> Cap {
    Cap {
        platform,
        tier: None,
        trigger: Some(Trigger::Fetch),
        kind,
        ms,
        configurable_max_ms,
        note,
        source,
        retrieved: RETRIEVED_RUNTIMES,
    }
}

/// The built-in figures. Only numbers found on the cited page are listed.
pub const BUILTIN: [Cap; 17] = [
    cap(CloudflareWorkers, Some(Tier::Free), None, Cpu, Some(10.0), "CPU time per invocation", CF_LIMITS),
    Cap {
        configurable_max_ms: Some(300_000.0),
        ..cap(
            CloudflareWorkers,
            Some(Tier::Paid),
            None,
            Cpu,
            Some(30_000.0),
            "CPU time per invocation: 30 s by default, up to 5 min with limits.cpu_ms",
            CF_CPU_CHANGELOG,
        )
    },
    cap(
        CloudflareWorkers,
        None,
        Some(Trigger::Fetch),
        Wall,
        None,
        "no wall-clock limit while the client stays connected",
        CF_LIMITS,
    ),
    cap(
        CloudflareWorkers,
        None,
        Some(Trigger::AfterResponse),
        Wall,
        Some(30_000.0),
        "waitUntil may run 30 s after the response is sent or the client disconnects",
        CF_LIMITS,
    ),
    cap(CloudflareWorkers, None, Some(Trigger::Cron), Wall, Some(900_000.0), "Cron Triggers: 15 min", CF_LIMITS),
    cap(CloudflareWorkers, None, Some(Trigger::Queue), Wall, Some(900_000.0), "queue consumers: 15 min", CF_LIMITS),
    cap(
        DenoDeploy,
        None,
        None,
        Wall,
        None,
        "no per-request wall-clock or CPU limit is documented for the current Deno Deploy (Deploy Classic's 50/200 ms CPU limit was an average across requests, not per request)",
        DENO_LIMITS,
    ),
    cap(
        VercelEdge,
        None,
        Some(Trigger::Fetch),
        FirstByte,
        Some(25_000.0),
        "the Edge runtime must begin sending a response within 25 s",
        VERCEL_LIMITS,
    ),
    cap(
        VercelEdge,
        None,
        Some(Trigger::Fetch),
        Wall,
        Some(300_000.0),
        "a streamed response may continue for up to 300 s",
        VERCEL_LIMITS,
    ),
    runtime_cap(NetlifyEdge, FirstByte, Some(40_000.0), None, "an edge function must send its response headers within 40 s", NETLIFY_LIMITS),
    runtime_cap(NetlifyEdge, Cpu, Some(50.0), None, "CPU time per request (time waiting on I/O not counted)", NETLIFY_LIMITS),
    runtime_cap(
        AwsLambda,
        Wall,
        Some(900_000.0),
        Some(900_000.0),
        "the function's configured timeout, 3 s by default and at most 900 s; Deadline.forLambda reads what is left of this invocation from its context",
        LAMBDA_TIMEOUT,
    ),
    runtime_cap(Node, Wall, None, None, "no wall-clock limit on a handler (the http server's requestTimeout bounds receiving the request, not answering it)", NODE_HTTP),
    runtime_cap(
        Node,
        FetchIdle,
        Some(300_000.0),
        None,
        "Node's fetch (undici) fails a request after 300 s waiting for its headers or between body chunks (headersTimeout, bodyTimeout); a dispatcher of your own may set other values",
        UNDICI_CLIENT,
    ),
    runtime_cap(Bun, Wall, None, None, "no wall-clock limit on a handler while bytes flow", BUN_SERVE_IDLE),
    runtime_cap(
        Bun,
        FirstByte,
        Some(10_000.0),
        Some(255_000.0),
        "Bun.serve closes a connection after 10 s without a byte (idleTimeout, at most 255 s; server.timeout(request, seconds) raises it for one request)",
        BUN_SERVE_IDLE,
    ),
    runtime_cap(
        Bun,
        FetchIdle,
        Some(300_000.0),
        None,
        "Bun's fetch fails a request after 5 min without a byte (BUN_CONFIG_HTTP_IDLE_TIMEOUT); its `timeout` option sets another value per request",
        BUN_FETCH_TIMEOUT,
    ),
];

/// The caps that apply to one invocation, folded per kind (smallest wins).
#[derive(Debug, Clone, PartialEq)]
pub struct PlatformCaps {
    /// The wall-clock limit for the whole invocation, in ms; `None` when none applies.
    pub wall_ms: Option<f64>,
    /// The limit until the response must begin, in ms; `None` when none applies.
    pub first_byte_ms: Option<f64>,
    /// The CPU-time limit, in ms: reported beside the deadline, never folded
    /// into it (module docs). `None` when none applies.
    pub cpu_ms: Option<f64>,
    /// The highest CPU limit the user may configure, in ms, when the plan lets them.
    pub cpu_configurable_max_ms: Option<f64>,
    /// How long the runtime's own `fetch` waits without a byte, in ms ([`CapKind::FetchIdle`]):
    /// reported, never folded into the invocation's deadline. `None` when none applies.
    pub fetch_idle_ms: Option<f64>,
    /// The source of every figure used, for logs and docs.
    pub sources: Vec<&'static str>,
}

/// User corrections to the built-in figures; a figure given replaces the built-in one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct CapOverrides {
    /// Replaces the wall-clock cap, in ms (`wallMs` in JS). Above 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub wall_ms: Option<f64>,
    /// Replaces the time-to-first-byte cap, in ms (`firstByteMs` in JS). Above 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub first_byte_ms: Option<f64>,
    /// Replaces the CPU cap, in ms (`cpuMs` in JS). Above 0; reported, never a deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub cpu_ms: Option<f64>,
}

impl PlatformCaps {
    /// The built-in caps for `platform`, `tier` and `trigger`. With no tier,
    /// tier-specific figures take the smallest across tiers (the safe guess).
    pub fn builtin(platform: Platform, tier: Option<Tier>, trigger: Trigger) -> Result<Self, CapsError> {
        let matching: Vec<&Cap> = BUILTIN
            .iter()
            .filter(|c| c.platform == platform)
            .filter(|c| c.trigger.map_or(true, |t| t == trigger))
            .filter(|c| match (c.tier, tier) {
                (Some(ct), Some(t)) => ct == t,
                _ => true,
            })
            .collect();
        if !matching.iter().any(|c| c.kind != Cpu) {
            return Err(CapsError::UnsupportedTrigger { platform, trigger });
        }
        let fold = |kind: CapKind| matching.iter().filter(|c| c.kind == kind).filter_map(|c| c.ms).reduce(f64::min);
        let mut sources: Vec<&'static str> = Vec::new();
        for c in &matching {
            if !sources.contains(&c.source) {
                sources.push(c.source);
            }
        }
        Ok(Self {
            wall_ms: fold(Wall),
            first_byte_ms: fold(FirstByte),
            cpu_ms: fold(Cpu),
            cpu_configurable_max_ms: matching
                .iter()
                .filter(|c| c.kind == Cpu)
                .filter_map(|c| c.configurable_max_ms)
                .reduce(f64::min),
            fetch_idle_ms: fold(FetchIdle),
            sources,
        })
    }

    /// [`PlatformCaps::builtin`] from the JS spellings.
    pub fn parse(platform: &str, plan: Option<&str>, trigger: &str) -> Result<Self, CapsError> {
        let tier = match plan {
            Some(p) => Some(Tier::parse(p)?),
            None => None,
        };
        Self::builtin(Platform::parse(platform)?, tier, Trigger::parse(trigger)?)
    }

    /// Caps for a platform this package has no data for. Each present cap
    /// must be a valid duration above 0.
    pub fn custom(wall_ms: Option<f64>, first_byte_ms: Option<f64>, cpu_ms: Option<f64>) -> Result<Self, CapsError> {
        Ok(Self {
            wall_ms: check_cap("wallMs", wall_ms)?,
            first_byte_ms: check_cap("firstByteMs", first_byte_ms)?,
            cpu_ms: check_cap("cpuMs", cpu_ms)?,
            cpu_configurable_max_ms: None,
            fetch_idle_ms: None,
            sources: Vec::new(),
        })
    }

    /// Replaces the figures given in `overrides` (for example the `cpu_ms`
    /// configured in `wrangler.toml`, or a limit that changed).
    pub fn with_overrides(mut self, overrides: CapOverrides) -> Result<Self, CapsError> {
        if let Some(v) = check_cap("wallMs", overrides.wall_ms)? {
            self.wall_ms = Some(v);
        }
        if let Some(v) = check_cap("firstByteMs", overrides.first_byte_ms)? {
            self.first_byte_ms = Some(v);
        }
        if let Some(v) = check_cap("cpuMs", overrides.cpu_ms)? {
            self.cpu_ms = Some(v);
        }
        Ok(self)
    }
}

fn check_cap(param: &'static str, value: Option<f64>) -> Result<Option<f64>, CapsError> {
    match value {
        None => Ok(None),
        Some(v) => {
            let v = check_ms(param, v)?;
            if v == 0.0 {
                return Err(CapsError::ZeroCap { param });
            }
            Ok(Some(v))
        }
    }
}

/// Which cap set the deadline: `"product"`, `"wall"` or `"first-byte"` in
/// JavaScript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum Bound {
    /// The product's own limit (`productMs`).
    Product,
    /// The platform's wall-clock limit.
    Wall,
    /// The platform's time-to-first-byte limit.
    FirstByte,
}

impl Bound {
    /// The bound as a log line names it (`"product"`, `"platform wall-clock limit"`,
    /// `"platform first-byte limit"`); JavaScript's `bound` field uses the
    /// kebab-case names instead.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Product => "product",
            Self::Wall => "platform wall-clock limit",
            Self::FirstByte => "platform first-byte limit",
        }
    }
}

/// The deadline for an invocation, with what bound it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlatformDeadline {
    /// `now + min(product, wall, first byte) − reserve`.
    pub at: f64,
    /// The cap that was smallest (the product wins ties).
    pub bound: Bound,
    /// The CPU budget, reported, never folded into `at`.
    pub cpu_ms: Option<f64>,
}

/// `now + min(product_ms, every wall-clock cap in front) − fallback_reserve_ms`.
pub fn for_platform(
    now_ms: f64,
    caps: &PlatformCaps,
    product_ms: f64,
    fallback_reserve_ms: f64,
) -> Result<PlatformDeadline, CapsError> {
    let now = check_ms("now", now_ms)?;
    let product = check_ms("productMs", product_ms)?;
    let reserve = check_ms("fallbackReserveMs", fallback_reserve_ms)?;
    let mut front = product;
    let mut bound = Bound::Product;
    for (cap, which) in [(caps.wall_ms, Bound::Wall), (caps.first_byte_ms, Bound::FirstByte)] {
        if let Some(ms) = cap {
            // Caps built through this module are validated; public fields may
            // not be, and a NaN must not slip through `<`.
            let ms = check_ms(if which == Bound::Wall { "wallMs" } else { "firstByteMs" }, ms)?;
            if ms < front {
                front = ms;
                bound = which;
            }
        }
    }
    // A reserve at or above the cap leaves nothing: an expired deadline (module doc).
    let left = if front > reserve { front - reserve } else { 0.0 };
    // Past the end of the timeline: named as the caller wrote the bound that won, not `ms`.
    let at = deadline_in(now, left).map_err(|e| match e {
        DeadlineError::TooFar { .. } => DeadlineError::TooFar {
            param: match bound {
                Bound::Product => "productMs",
                Bound::Wall => "wallMs",
                Bound::FirstByte => "firstByteMs",
            },
            value: front,
            max: MAX_MS - now + reserve,
        },
        other => other,
    })?;
    Ok(PlatformDeadline { at, bound, cpu_ms: caps.cpu_ms })
}

/// A platform deadline as the caller asks for it (`Deadline.forPlatform`'s
/// options). The names stay strings here, so that an unknown one is refused
/// by name ([`CapsError`]) rather than by the deserializer; `platform:
/// "custom"` takes every cap from `caps`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct PlatformRequest {
    /// A [`Platform`] name, or `"custom"` for caps given only in `caps`.
    #[cfg_attr(feature = "typescript", tsify(type = "Platform | \"custom\""))]
    pub platform: String,
    /// A [`Tier`] name (`"free"` or `"paid"`); unless given, a plan-specific
    /// figure is the smallest across plans (the safe guess). Not with `custom`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional, type = "Tier"))]
    pub plan: Option<String>,
    /// `fetch` unless given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional, type = "Trigger"))]
    pub trigger: Option<String>,
    /// The product's own limit, in ms (`productMs` in JS): how long the caller
    /// may wait.
    pub product_ms: f64,
    /// Kept back from the smallest cap for the fallback's terminal response, in
    /// ms (`fallbackReserveMs` in JS).
    pub fallback_reserve_ms: f64,
    /// Figures that replace the built-in ones (all of them with `custom`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub caps: Option<CapOverrides>,
}

/// The answer to a [`PlatformRequest`]: the instant, which cap bound it, the
/// CPU budget (reported, never folded in) and the sources of the figures used.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify), tsify(missing_as_null))]
pub struct PlatformAnswer {
    /// The deadline, in ms on the monotonic timeline: `now + min(caps) − reserve`,
    /// never before `now`.
    pub at: f64,
    /// The cap that was smallest (the product wins ties).
    pub bound: Bound,
    /// The CPU budget in ms (`cpuMs` in JS), reported, never folded into `at`;
    /// `null` when none applies.
    pub cpu_ms: Option<f64>,
    /// How long the runtime's own `fetch` waits without a byte, in ms (`fetchIdleMs` in JS):
    /// reported, never folded into `at`; `null` when none applies.
    pub fetch_idle_ms: Option<f64>,
    /// The source of every figure used, for logs.
    pub sources: Vec<&'static str>,
}

/// [`PlatformCaps`] for `request` (built-in figures with its overrides, or
/// its own caps for `custom`) folded by [`for_platform`] at `now_ms`.
pub fn platform_deadline(now_ms: f64, request: &PlatformRequest) -> Result<PlatformAnswer, CapsError> {
    let overrides = request.caps.unwrap_or_default();
    let caps = if request.platform == "custom" {
        if request.plan.is_some() {
            return Err(CapsError::CustomWith { param: "plan" });
        }
        if request.trigger.is_some() {
            return Err(CapsError::CustomWith { param: "trigger" });
        }
        PlatformCaps::custom(overrides.wall_ms, overrides.first_byte_ms, overrides.cpu_ms)?
    } else {
        let trigger = request.trigger.as_deref().unwrap_or("fetch");
        PlatformCaps::parse(&request.platform, request.plan.as_deref(), trigger)?.with_overrides(overrides)?
    };
    let d = for_platform(now_ms, &caps, request.product_ms, request.fallback_reserve_ms)?;
    Ok(PlatformAnswer {
        at: d.at,
        bound: d.bound,
        cpu_ms: d.cpu_ms,
        fetch_idle_ms: caps.fetch_idle_ms,
        sources: caps.sources,
    })
}

/// How [`for_lambda`]'s errors name the remaining time: the context's method that reports it.
pub const REMAINING: &str = "getRemainingTimeInMillis()";

/// The deadline of one AWS Lambda invocation: `now + min(remaining, product) − reserve`, where
/// `remaining_ms` is what the invocation's context says is left (`context.getRemainingTimeInMillis()`)
/// and `product_ms`, when given, the product's own limit. The bound is [`Bound::Wall`] when the
/// invocation's time wins. What is left at or below the reserve (or a remaining time already at or
/// under 0) gives an expired deadline: a shortage, not an error. Each invocation gets its own, also
/// when many run in one process (Lambda Managed Instances).
pub fn for_lambda(
    now_ms: f64,
    remaining_ms: f64,
    product_ms: Option<f64>,
    fallback_reserve_ms: f64,
) -> Result<PlatformAnswer, CapsError> {
    if remaining_ms.is_nan() {
        return Err(CapsError::from(check_ms(REMAINING, remaining_ms).unwrap_err()));
    }
    // The platform's own figure: a time already spent is a shortage, whatever its sign.
    let remaining = check_ms(REMAINING, remaining_ms.max(0.0))?;
    let caps = PlatformCaps {
        wall_ms: Some(remaining),
        first_byte_ms: None,
        cpu_ms: None,
        cpu_configurable_max_ms: None,
        fetch_idle_ms: None,
        sources: vec![LAMBDA_TIMEOUT],
    };
    // No product limit: the invocation's time alone bounds it (a product of MAX_MS never wins).
    let d = for_platform(now_ms, &caps, product_ms.unwrap_or(MAX_MS), fallback_reserve_ms)?;
    Ok(PlatformAnswer { at: d.at, bound: d.bound, cpu_ms: None, fetch_idle_ms: None, sources: caps.sources })
}

/// What `fetchWithDeadline` does about the runtime's own fetch cap ([`CapKind::FetchIdle`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify), tsify(missing_as_null))]
pub struct FetchIdlePlan {
    /// Raise the runtime's cap for this request to this many ms (Bun's `timeout` option): the
    /// deadline's remaining time, whole ms up. `None`: leave it.
    pub raise_ms: Option<f64>,
    /// The wait for the headers to use: the caller's, clamped to the cap when the cap cannot be raised.
    pub first_byte_ms: Option<f64>,
    /// The stall limit to use: the caller's, clamped to the cap when the cap cannot be raised.
    pub stall_ms: Option<f64>,
    /// The deadline outlasts a cap that cannot be raised here: the waits were clamped to it (say so, once).
    pub clamped: bool,
}

/// Keeps a deadline longer than the runtime's own fetch cap (`cap_ms`: Node's undici 300 s, Bun's
/// 5 min) from being cut by it without a word. Where the runtime lets a request raise its cap
/// (`can_raise`: Bun's `timeout` option) and the caller set none, it is raised to the deadline's
/// remaining time. Where it cannot (Node without a dispatcher of the caller's), the waits for the
/// headers and between chunks are clamped to the cap, so the request ends with this package's
/// `StreamStalled` at the cap rather than the runtime's bare "fetch failed", and `clamped` says so.
/// A deadline within the cap, or no cap, changes nothing.
pub fn fetch_idle_plan(
    cap_ms: Option<f64>,
    can_raise: bool,
    remaining_ms: f64,
    first_byte_ms: Option<f64>,
    stall_ms: Option<f64>,
) -> FetchIdlePlan {
    let unchanged = FetchIdlePlan { raise_ms: None, first_byte_ms, stall_ms, clamped: false };
    let Some(cap) = cap_ms.filter(|c| c.is_finite() && *c > 0.0) else { return unchanged };
    if remaining_ms.is_nan() || remaining_ms <= cap {
        return unchanged;
    }
    if can_raise {
        return FetchIdlePlan { raise_ms: Some(remaining_ms.ceil().min(MAX_MS)), ..unchanged };
    }
    let clamp = |ms: Option<f64>| Some(ms.map_or(cap, |v| v.min(cap)));
    FetchIdlePlan { raise_ms: None, first_byte_ms: clamp(first_byte_ms), stall_ms: clamp(stall_ms), clamped: true }
}

/// The seconds to hand `Bun.serve`'s `server.timeout(request, seconds)` so that its idle cap (10 s
/// without a byte by default, at most 255 s) does not cut a request whose deadline is longer:
/// `None` while the deadline fits the default cap; past it, the deadline's remaining time in whole
/// seconds up, plus one (the request ends at its deadline, not at Bun's); past the 255 s Bun allows,
/// 0, which turns the idle cap off for that request (the deadline still ends it).
pub fn serve_idle_seconds(remaining_ms: f64) -> Option<f64> {
    let cap = BUILTIN.iter().find(|c| c.platform == Platform::Bun && c.kind == FirstByte)?;
    let (default_ms, max_ms) = (cap.ms?, cap.configurable_max_ms?);
    if remaining_ms.is_nan() || remaining_ms <= default_ms {
        return None;
    }
    let seconds = (remaining_ms / 1_000.0).ceil() + 1.0;
    Some(if seconds * 1_000.0 <= max_ms { seconds } else { 0.0 })
}

/// The built-in fetch cap of a server runtime (`"node"`, `"bun"`), in ms; `None` for any other name.
pub fn runtime_fetch_idle_ms(platform: &str) -> Option<f64> {
    let platform = Platform::parse(platform).ok()?;
    BUILTIN.iter().find(|c| c.platform == platform && c.kind == FetchIdle).and_then(|c| c.ms)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::core::deadline::remaining;
    use proptest::prelude::*;

    #[test]
    fn workers_fetch_is_bound_by_the_product_not_the_cpu_limit() {
        let caps = PlatformCaps::parse("cloudflare-workers", Some("free"), "fetch").unwrap();
        assert_eq!((caps.wall_ms, caps.first_byte_ms, caps.cpu_ms), (None, None, Some(10.0)));
        let d = for_platform(1_000.0, &caps, 8_000.0, 500.0).unwrap();
        assert_eq!(d, PlatformDeadline { at: 8_500.0, bound: Bound::Product, cpu_ms: Some(10.0) });
        let paid = PlatformCaps::builtin(CloudflareWorkers, Some(Tier::Paid), Trigger::Fetch).unwrap();
        assert_eq!((paid.cpu_ms, paid.cpu_configurable_max_ms), (Some(30_000.0), Some(300_000.0)));
        // No plan given: the smaller CPU figure, as the safe guess.
        let unknown = PlatformCaps::builtin(CloudflareWorkers, None, Trigger::Fetch).unwrap();
        assert_eq!(unknown.cpu_ms, Some(10.0));
    }

    #[test]
    fn workers_wait_until_cron_and_queue_have_wall_caps() {
        let w = PlatformCaps::parse("cloudflare-workers", Some("paid"), "wait-until").unwrap();
        assert_eq!(w.wall_ms, Some(30_000.0));
        let d = for_platform(0.0, &w, 60_000.0, 1_000.0).unwrap();
        assert_eq!((d.at, d.bound), (29_000.0, Bound::Wall));
        for t in ["cron", "queue"] {
            assert_eq!(PlatformCaps::parse("cloudflare-workers", None, t).unwrap().wall_ms, Some(900_000.0));
        }
    }

    #[test]
    fn vercel_edge_first_byte_and_stream() {
        let v = PlatformCaps::parse("vercel-edge", None, "fetch").unwrap();
        assert_eq!((v.first_byte_ms, v.wall_ms), (Some(25_000.0), Some(300_000.0)));
        let d = for_platform(0.0, &v, 30_000.0, 500.0).unwrap();
        assert_eq!((d.at, d.bound), (24_500.0, Bound::FirstByte));
        assert_eq!(
            PlatformCaps::parse("vercel-edge", None, "cron"),
            Err(CapsError::UnsupportedTrigger { platform: VercelEdge, trigger: Trigger::Cron })
        );
    }

    #[test]
    fn deno_deploy_documents_no_cap() {
        let d = PlatformCaps::parse("deno-deploy", None, "fetch").unwrap();
        assert_eq!((d.wall_ms, d.first_byte_ms, d.cpu_ms), (None, None, None));
        assert_eq!(for_platform(10.0, &d, 5_000.0, 0.0).unwrap().at, 5_010.0);
    }

    #[test]
    fn overrides_and_custom_caps() {
        let c = PlatformCaps::parse("cloudflare-workers", Some("paid"), "fetch")
            .unwrap()
            .with_overrides(CapOverrides { cpu_ms: Some(300_000.0), wall_ms: Some(20_000.0), ..Default::default() })
            .unwrap();
        assert_eq!((c.cpu_ms, c.wall_ms), (Some(300_000.0), Some(20_000.0)));
        assert_eq!(for_platform(0.0, &c, 30_000.0, 0.0).unwrap().bound, Bound::Wall);
        let bad = CapOverrides { cpu_ms: Some(f64::NAN), ..Default::default() };
        assert!(matches!(c.clone().with_overrides(bad), Err(CapsError::Time(_))));
        let zero = CapOverrides { wall_ms: Some(0.0), ..Default::default() };
        assert_eq!(c.with_overrides(zero), Err(CapsError::ZeroCap { param: "wallMs" }));
        let custom = PlatformCaps::custom(Some(10_000.0), None, None).unwrap();
        assert_eq!(for_platform(0.0, &custom, 60_000.0, 250.0).unwrap().at, 9_750.0);
        assert!(PlatformCaps::custom(Some(-1.0), None, None).is_err());
    }

    #[test]
    fn rejects_bad_input_with_clear_errors() {
        assert!(matches!(Platform::parse("lambda"), Err(CapsError::UnknownPlatform { .. })));
        assert!(matches!(Tier::parse("pro"), Err(CapsError::UnknownTier { .. })));
        assert!(matches!(Trigger::parse("waitUntil"), Err(CapsError::UnknownTrigger { .. })));
        let caps = PlatformCaps::parse("vercel-edge", None, "fetch").unwrap();
        // A reserve that fills the cap is a shortage: an expired deadline, not an error.
        let d = for_platform(10.0, &caps, 30_000.0, 25_000.0).unwrap();
        assert_eq!((d.at, d.bound), (10.0, Bound::FirstByte));
        assert_eq!(for_platform(10.0, &caps, 200.0, 500.0).unwrap().at, 10.0);
        assert_eq!(for_platform(10.0, &caps, 0.0, 0.0).unwrap().at, 10.0);
        assert!(matches!(for_platform(f64::NAN, &caps, 1.0, 0.0), Err(CapsError::Time(_))));
        assert!(matches!(for_platform(0.0, &caps, 1.0, -1.0), Err(CapsError::Time(_))));
        let mut broken = caps.clone();
        broken.wall_ms = Some(f64::NAN);
        assert!(matches!(for_platform(0.0, &broken, 1_000.0, 0.0), Err(CapsError::Time(_))));
        assert!(matches!(
            for_platform(MAX_MS, &caps, 1_000.0, 0.0),
            Err(CapsError::Time(DeadlineError::TooFar { .. }))
        ));
        // A product limit in range that only overflows from now is named as given.
        let unbounded = PlatformCaps::custom(None, None, None).unwrap();
        assert!(matches!(
            for_platform(100.0, &unbounded, MAX_MS, 0.0),
            Err(CapsError::Time(DeadlineError::TooFar { param: "productMs", value: MAX_MS, max })) if max == MAX_MS - 100.0
        ));
    }

    /// A request for `platform`'s deadline: no plan, the `fetch` trigger.
    fn request(
        platform: &str,
        product_ms: f64,
        fallback_reserve_ms: f64,
        caps: Option<CapOverrides>,
    ) -> PlatformRequest {
        PlatformRequest { platform: platform.into(), plan: None, trigger: None, product_ms, fallback_reserve_ms, caps }
    }

    #[test]
    fn requests_fold_like_the_caps_and_errors_name_the_option() {
        use crate::core::error::{Described, Within};
        let request = |platform: &str, caps: Option<CapOverrides>| request(platform, 30_000.0, 500.0, caps);
        let a = platform_deadline(0.0, &request("vercel-edge", None)).unwrap();
        assert_eq!((a.at, a.bound, a.cpu_ms), (24_500.0, Bound::FirstByte, None));
        assert_eq!(a.sources, vec![VERCEL_LIMITS]);
        let zero = Some(CapOverrides { wall_ms: Some(0.0), ..Default::default() });
        let e = Within::new("options", platform_deadline(0.0, &request("custom", zero)).unwrap_err());
        assert_eq!((e.param().as_deref(), e.code()), (Some("options.caps.wallMs"), "ZERO_CAP"));
        let nan = Some(CapOverrides { cpu_ms: Some(f64::NAN), ..Default::default() });
        let e = platform_deadline(0.0, &request("deno-deploy", nan)).unwrap_err();
        assert_eq!(e.param().as_deref(), Some("caps.cpuMs"));
        let e = platform_deadline(0.0, &request("lambda", None)).unwrap_err();
        assert_eq!((e.param().as_deref(), e.code()), (Some("platform"), "UNKNOWN_PLATFORM"));
        let mut custom = request("custom", None);
        custom.plan = Some("free".into());
        let e = platform_deadline(0.0, &custom).unwrap_err();
        assert_eq!((e.param().as_deref(), e.kind()), (Some("plan"), Kind::Type));
        let custom = request("custom", Some(CapOverrides { wall_ms: Some(10_000.0), ..Default::default() }));
        assert_eq!(platform_deadline(0.0, &custom).unwrap().at, 9_500.0);
    }

    /// Invariant 4.
    #[test]
    fn the_server_runtimes_caps_bound_what_they_cut_and_report_the_fetch_cap() {
        // Netlify Edge: response headers within 40 s; 50 ms of CPU reported, never folded.
        let netlify = PlatformCaps::parse("netlify-edge", None, "fetch").unwrap();
        assert_eq!(
            (netlify.wall_ms, netlify.first_byte_ms, netlify.cpu_ms, netlify.fetch_idle_ms),
            (None, Some(40_000.0), Some(50.0), None)
        );
        let d = for_platform(0.0, &netlify, 60_000.0, 1_000.0).unwrap();
        assert_eq!((d.at, d.bound), (39_000.0, Bound::FirstByte));
        // AWS Lambda: at most 900 s a function.
        let lambda = PlatformCaps::parse("aws-lambda", None, "fetch").unwrap();
        assert_eq!(lambda.wall_ms, Some(900_000.0));
        // Node: no wall-clock cap on a handler, but its fetch gives up after 300 s without a byte.
        let node = platform_deadline(0.0, &request("node", 630_000.0, 0.0, None)).unwrap();
        assert_eq!((node.at, node.bound, node.fetch_idle_ms), (630_000.0, Bound::Product, Some(300_000.0)));
        // Bun: Bun.serve's 10 s idle cap bounds the first byte; its fetch's 5 min is reported.
        let bun = platform_deadline(0.0, &request("bun", 30_000.0, 500.0, None)).unwrap();
        assert_eq!((bun.at, bun.bound, bun.fetch_idle_ms), (9_500.0, Bound::FirstByte, Some(300_000.0)));
        // The first-byte cap raised (server.timeout(request, 60)): the product bounds again.
        let raised = platform_deadline(
            0.0,
            &request(
                "bun",
                30_000.0,
                500.0,
                Some(CapOverrides { first_byte_ms: Some(60_000.0), ..Default::default() }),
            ),
        )
        .unwrap();
        assert_eq!((raised.at, raised.bound), (29_500.0, Bound::Product));
        assert!(matches!(Platform::parse("lambda"), Err(CapsError::UnknownPlatform { .. })));
    }

    #[test]
    fn a_deadline_past_the_runtimes_fetch_cap_raises_it_or_clamps_to_it() {
        let node = runtime_fetch_idle_ms("node");
        assert_eq!(
            (node, runtime_fetch_idle_ms("bun"), runtime_fetch_idle_ms("deno-deploy")),
            (Some(300_000.0), Some(300_000.0), None)
        );
        // Within the cap, or no cap: nothing changes.
        let within = fetch_idle_plan(node, false, 299_000.0, Some(5_000.0), None);
        assert_eq!(
            within,
            FetchIdlePlan { raise_ms: None, first_byte_ms: Some(5_000.0), stall_ms: None, clamped: false }
        );
        assert!(!fetch_idle_plan(None, false, 1e9, None, None).clamped);
        // Past it, where a request can raise it (Bun): raised to what is left, whole ms up.
        let bun = fetch_idle_plan(Some(300_000.0), true, 630_000.4, None, Some(1_000.0));
        assert_eq!(
            bun,
            FetchIdlePlan { raise_ms: Some(630_001.0), first_byte_ms: None, stall_ms: Some(1_000.0), clamped: false }
        );
        // Where it cannot (Node): the waits are clamped to it, and said so.
        let clamped = fetch_idle_plan(node, false, 630_000.0, None, Some(400_000.0));
        assert_eq!(
            clamped,
            FetchIdlePlan { raise_ms: None, first_byte_ms: Some(300_000.0), stall_ms: Some(300_000.0), clamped: true }
        );
        let shorter = fetch_idle_plan(node, false, 630_000.0, Some(10_000.0), Some(60_000.0));
        assert_eq!((shorter.first_byte_ms, shorter.stall_ms), (Some(10_000.0), Some(60_000.0)));
        assert!(!fetch_idle_plan(node, false, f64::NAN, None, None).clamped);
    }

    #[test]
    fn a_bun_request_whose_deadline_outlasts_the_idle_cap_raises_it_for_itself() {
        assert_eq!(serve_idle_seconds(9_000.0), None, "within the default 10 s");
        assert_eq!(serve_idle_seconds(10_000.0), None);
        assert_eq!(serve_idle_seconds(15_000.0), Some(16.0));
        assert_eq!(serve_idle_seconds(15_000.4), Some(17.0), "whole seconds up, plus one");
        assert_eq!(serve_idle_seconds(254_000.0), Some(255.0));
        assert_eq!(serve_idle_seconds(600_000.0), Some(0.0), "past 255 s: off, the deadline ends it");
        assert_eq!(serve_idle_seconds(f64::NAN), None);
    }

    #[test]
    fn a_lambda_invocation_takes_what_its_context_says_is_left() {
        let d = for_lambda(1_000.0, 6_000.0, None, 500.0).unwrap();
        assert_eq!((d.at, d.bound), (6_500.0, Bound::Wall));
        let product = for_lambda(1_000.0, 6_000.0, Some(2_000.0), 500.0).unwrap();
        assert_eq!((product.at, product.bound), (2_500.0, Bound::Product));
        // Spent, or below the reserve: expired at now, not an error.
        for remaining in [0.0, -20.0, 300.0] {
            let spent = for_lambda(1_000.0, remaining, None, 500.0).unwrap();
            assert_eq!(spent.at, 1_000.0, "{remaining}");
        }
        // What could never be a time is refused, by name.
        let e = for_lambda(1_000.0, f64::NAN, None, 500.0).unwrap_err();
        assert_eq!(e.param().as_deref(), Some(REMAINING));
        assert!(for_lambda(1_000.0, 6_000.0, Some(-1.0), 0.0).is_err());
    }

    #[test]
    fn builtin_figures_are_sourced() {
        for c in &BUILTIN {
            assert!(c.source.starts_with("https://"), "{c:?}");
            assert!(c.retrieved == RETRIEVED || c.retrieved == RETRIEVED_RUNTIMES, "{c:?}");
            assert!(!c.note.is_empty());
            for ms in [c.ms, c.configurable_max_ms].into_iter().flatten() {
                assert!(ms.is_finite() && ms > 0.0, "{c:?}");
            }
        }
    }

    /// In workerd the clock only moves across I/O: a CPU-bound loop reads the
    /// same `now` throughout, so `remaining` does not shrink while it runs.
    #[test]
    fn frozen_clock_reports_no_progress() {
        let caps = PlatformCaps::parse("cloudflare-workers", Some("free"), "fetch").unwrap();
        let d = for_platform(1_000.0, &caps, 50.0, 0.0).unwrap();
        let frozen_now = 1_000.0;
        let mut work = 0u64;
        for i in 0..100_000u64 {
            work = work.wrapping_add(i * i); // CPU time passes; the clock does not
            assert_eq!(remaining(d.at, frozen_now), Ok(50.0));
        }
        assert!(work > 0);
        // After an await on I/O the clock jumps by the whole wait at once.
        assert_eq!(remaining(d.at, frozen_now + 80.0), Ok(0.0));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Invariants 1, 2 and 3.
        #[test]
        fn deadline_is_the_minimum_minus_the_reserve(
            now in 0.0..1e12f64,
            product in 0.0..1e7f64,
            wall in proptest::option::of(1.0..1e7f64),
            first in proptest::option::of(1.0..1e7f64),
            cpu in proptest::option::of(1.0..1e6f64),
            reserve in prop_oneof![Just(0.0), 0.0..1e5f64],
        ) {
            let caps = PlatformCaps::custom(wall, first, cpu).unwrap();
            let front = [Some(product), wall, first].into_iter().flatten().fold(f64::INFINITY, f64::min);
            match for_platform(now, &caps, product, reserve) {
                Ok(d) if reserve >= front => prop_assert_eq!(d.at, now),
                Ok(d) => {
                    prop_assert!(d.at > now || front - reserve < 1e-3);
                    for cap in [Some(product), wall, first].into_iter().flatten() {
                        prop_assert!(d.at <= now + cap - reserve + 1e-3);
                    }
                    prop_assert!((d.at - (now + front - reserve)).abs() <= 1e-3);
                    prop_assert_eq!(d.cpu_ms, cpu);
                    let without_cpu = PlatformCaps::custom(wall, first, None).unwrap();
                    prop_assert_eq!(for_platform(now, &without_cpu, product, reserve).unwrap().at, d.at);
                }
                Err(e) => prop_assert!(false, "unexpected {e}"),
            }
        }
    }
}
