/**
 * Every operator setting, read once at start through one Config and validated there, so a bad
 * value stops start-up with one line naming the variable instead of failing later.
 */
import { Config, ConfigProvider, Context, Effect, Layer, LogLevel, Option, Redacted, Schema } from "effect"
import * as path from "node:path"
import { parseSecretKey } from "./secret-key.ts"
import { planTableProblem } from "./plan-table.ts"
import { defaultPricesFile, loadPriceTable, type PriceTable } from "./prices.ts"

const optionalString = (name: string) => Config.option(Config.NonEmptyString(name))
const optionalRedacted = (name: string) => Config.option(Config.Redacted(name))

/** WA_LOG_LEVEL in any case (`info`, `WARN`, `Debug`; `warning` means `Warn`), or undefined. */
const parseLogLevel = (raw: string): LogLevel.LogLevel | undefined => {
  const wanted = raw.trim().toLowerCase() === "warning" ? "warn" : raw.trim().toLowerCase()
  return LogLevel.values.find((value) => value.toLowerCase() === wanted)
}

/** WA_BROWSER_CPU_WEIGHT's default, in cgroup v2 units (the service's own cgroup has 100). */
export const defaultBrowserCpuWeight = 25

/** WA_BROWSER_CPU_WEIGHT: 1..10000 (cgroup v2 units), 0 or `off` to disable; undefined when invalid. */
export const parseBrowserCpuWeight = (raw: string): number | undefined => {
  const text = raw.trim().toLowerCase()
  if (text === "off" || text === "false" || text === "none") return 0
  if (!/^\d+$/.test(text)) return undefined
  const value = Number(text)
  return value <= 10_000 ? value : undefined
}

/**
 * Defaults of the search-engine settings (WebSearch, DeepResearch, Track): src/engines/search-config.ts
 * builds its SearchSettings from AppConfig with these.
 */
export const searchEngineDefaults = {
  braveBaseUrl: "https://api.search.brave.com",
  googleBaseUrl: "https://www.googleapis.com",
  tavilyBaseUrl: "https://api.tavily.com",
  exaBaseUrl: "https://api.exa.ai",
  duckduckgoBaseUrl: "https://html.duckduckgo.com",
  engineTimeoutMs: 8_000,
  breakerFailures: 3,
  breakerCooldownMs: 30_000,
  summarizeTop: 5,
  concurrency: 64
} as const

/** Defaults of the Reader's settings: src/reader/reader.ts builds its ReaderSettings from AppConfig with these. */
export const readerDefaults = {
  timeoutMs: 20_000,
  cacheSize: 256,
  cacheTtlSeconds: 15 * 60,
  maxBytes: 5_000_000
} as const

/** An unset or blank variable is None, else the trimmed value (a blank key in a .env file means "not configured"). */
const optionalTrimmed = (name: string) =>
  Config.option(Config.String(name)).pipe(
    Config.map(Option.flatMap((value) => value.trim() === "" ? Option.none() : Option.some(value.trim())))
  )
const optionalTrimmedRedacted = (name: string) => optionalTrimmed(name).pipe(Config.map(Option.map((value) => Redacted.make(value))))
/** An integer (a malformed one stops start-up naming the variable); below 1 means the default. */
const intOrDefaultBelowOne = (name: string, fallback: number) =>
  Config.Int(name).pipe(Config.withDefault(fallback), Config.map((value) => value < 1 ? fallback : value))

export const AppConfigSchema = Config.all({
  // 0 asks the OS for a free port (tests); the bound address is logged as "listening".
  port: Config.schema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 65535 })), "WA_PORT").pipe(Config.withDefault(8080)),
  host: Config.NonEmptyString("WA_HOST").pipe(Config.withDefault("127.0.0.1")),
  dataDir: Config.NonEmptyString("WA_DATA_DIR").pipe(Config.withDefault("./data")),
  databaseUrl: optionalRedacted("DATABASE_URL"),
  redisUrl: optionalString("REDIS_URL"),
  chromiumPath: optionalString("CHROMIUM_PATH"),
  browserCdpUrl: optionalString("WA_BROWSER_CDP_URL"),
  modelProvider: Config.Literals(["openai-compatible", "anthropic"], "WA_MODEL_PROVIDER").pipe(
    Config.withDefault("openai-compatible" as const)
  ),
  modelBaseUrl: optionalString("WA_MODEL_BASE_URL"),
  modelApiKey: optionalRedacted("WA_MODEL_API_KEY"),
  model: optionalString("WA_MODEL"),
  openAiApiKey: optionalRedacted("OPENAI_API_KEY"),
  anthropicApiKey: optionalRedacted("ANTHROPIC_API_KEY"),
  allowPrivateNetworks: Config.Boolean("WA_ALLOW_PRIVATE_NETWORKS").pipe(Config.withDefault(false)),
  logLevelName: Config.String("WA_LOG_LEVEL").pipe(Config.withDefault("Info")),
  /**
   * Where spans go (src/observability/tracing.ts): an OTLP/HTTP traces endpoint
   * (http://collector:4318/v1/traces). Unset: no span is recorded (they would go nowhere).
   */
  otlpTracesUrl: optionalString("WA_OTLP_TRACES_URL"),
  /** Requests a key may make per rate-limit window (sliding window). */
  rateLimitRequests: Config.Int("WA_RATE_LIMIT_REQUESTS").pipe(Config.withDefault(600)),
  rateLimitWindowSeconds: Config.Int("WA_RATE_LIMIT_WINDOW_SECONDS").pipe(Config.withDefault(60)),
  /** Requests failing authentication one client address may make per minute (each costs a lookup). */
  authFailuresPerMinute: Config.Int("WA_AUTH_FAILURES_PER_MINUTE").pipe(Config.withDefault(60)),
  /** Largest request body accepted (413 above it, refused before it is read). */
  maxBodyBytes: Config.Int("WA_MAX_BODY_BYTES").pipe(Config.withDefault(1024 * 1024)),
  /** A client must send its request headers within this time (slow-header clients get 408). */
  headersTimeoutSeconds: Config.Int("WA_HEADERS_TIMEOUT_SECONDS").pipe(Config.withDefault(20)),
  /** A request body that stops arriving for this long is answered 408 (a body still flowing is never cut). */
  requestBodyIdleSeconds: Config.Int("WA_REQUEST_BODY_IDLE_SECONDS").pipe(Config.withDefault(60)),
  /** An event stream whose client reads nothing for this long is closed (the client reconnects). */
  sseStallSeconds: Config.Int("WA_SSE_STALL_SECONDS").pipe(Config.withDefault(60)),
  /**
   * How long an Idempotency-Key claim holds without its request renewing it: after a crash the key
   * is free again after this time instead of answering 409 for 24 hours.
   */
  idempotencyLeaseSeconds: Config.Int("WA_IDEMPOTENCY_LEASE_SECONDS").pipe(Config.withDefault(30)),
  /** Concurrent sessions a key may hold (plan-like default of the Dev tier). */
  maxConcurrentSessions: Config.Int("WA_MAX_CONCURRENT_SESSIONS").pipe(Config.withDefault(5)),
  /** How long a revoked key keeps working, so runs in flight do not get 401 (spec: one hour). */
  keyRevocationGraceSeconds: Config.Int("WA_KEY_REVOCATION_GRACE_SECONDS").pipe(Config.withDefault(3600)),
  sseHeartbeatSeconds: Config.Int("WA_SSE_HEARTBEAT_SECONDS").pipe(Config.withDefault(15)),
  /** Agent steps a run may take before it is marked expired (continue starts a fresh budget). */
  maxSteps: Config.Int("WA_MAX_STEPS").pipe(Config.withDefault(50)),
  /** Length of a minute of max_duration_minutes (tests shorten it to watch the limit act). */
  runMinuteMs: Config.Int("WA_RUN_MINUTE_MS").pipe(Config.withDefault(60_000)),
  /** A kept-alive session's browser is released after this much idle time. */
  sessionIdleSeconds: Config.Int("WA_SESSION_IDLE_SECONDS").pipe(Config.withDefault(300)),
  /** A run.screenshot event after every agent step. */
  stepScreenshots: Config.Boolean("WA_STEP_SCREENSHOTS").pipe(Config.withDefault(true)),
  /**
   * Send a marked screenshot with each observation: `auto` when the model is known to accept images
   * (visionCapable in src/agent/model.ts), `on`/`off` to force it; `true`/`false` are taken as on/off.
   */
  modelVision: Config.Literals(["auto", "on", "off", "true", "false"], "WA_MODEL_VISION").pipe(
    Config.map((value) => value === "true" ? "on" as const : value === "false" ? "off" as const : value),
    Config.withDefault("auto" as const)
  ),
  /** "input,output" USD per million tokens for models that are not in the price table. */
  modelPricePerMtok: Config.schema(
    Schema.String.check(Schema.isPattern(/^\d+(\.\d+)?,\d+(\.\d+)?$/)),
    "WA_MODEL_PRICE_PER_MTOK"
  ).pipe(Config.withDefault("1,3")),
  /** First retry delay of callbacks (exponential backoff). */
  webhookRetryBaseMs: Config.Int("WA_WEBHOOK_RETRY_BASE_MS").pipe(Config.withDefault(1000)),
  /** Shortest interval a schedule may have (interval_seconds, and the gap between two cron slots). */
  scheduleMinIntervalSeconds: Config.Int("WA_SCHEDULE_MIN_INTERVAL_SECONDS").pipe(Config.withDefault(60)),
  /** How often each process's scheduler looks for due schedules when nothing is due sooner. */
  schedulerPollMs: Config.Int("WA_SCHEDULER_POLL_MS").pipe(Config.withDefault(500)),
  /**
   * WA_SCHEDULED_CAP when set: overrides every plan's scheduled-run cap (`scheduled_running` <= it).
   * Read only through Plans.capsOf (src/billing/plans.ts).
   */
  scheduledCapOverride: Config.option(Config.Int("WA_SCHEDULED_CAP")),
  /** Consecutive failed ticks after which an active monitor becomes `failing`. */
  trackMaxConsecutiveFailures: Config.Int("WA_TRACK_MAX_CONSECUTIVE_FAILURES").pipe(Config.withDefault(5)),
  /** How long a WebSearch POST with wait=true blocks before answering 202 (spec: 30 s). */
  webSearchWaitSeconds: Config.Int("WA_WEB_SEARCH_WAIT_SECONDS").pipe(Config.withDefault(30)),
  // Scale-out (src/cluster/): how this process joins the cluster. WA_CLUSTER defaults to
  // "socket" when DATABASE_URL is set and "single" otherwise (see clusterMode below).
  cluster: Config.option(Config.Literals(["single", "socket"], "WA_CLUSTER")),
  /** The address other runners reach this runner at (advertised in the runner table). */
  runnerHost: Config.NonEmptyString("WA_RUNNER_HOST").pipe(Config.withDefault("127.0.0.1")),
  /** The interface the runner socket binds to; defaults to WA_RUNNER_HOST (0.0.0.0 in containers). */
  runnerListenHost: optionalString("WA_RUNNER_LISTEN_HOST"),
  /** 0 binds a free port and advertises the port actually bound. */
  runnerPort: Config.schema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 65535 })), "WA_RUNNER_PORT").pipe(Config.withDefault(0)),
  /** Shards of the cluster; every runner of one cluster must use the same value. */
  clusterShards: Config.Int("WA_CLUSTER_SHARDS").pipe(Config.withDefault(300)),
  /** How often runners ping each other; a runner that does not answer loses its shards. */
  clusterHealthCheckSeconds: Config.Int("WA_CLUSTER_HEALTH_CHECK_SECONDS").pipe(Config.withDefault(10)),
  /**
   * Shard lock (and runner heartbeat) expiry: the bound on failover when pings cannot tell, e.g.
   * when the dead runner hosted the health-check singleton itself (Effect's default is 35 s).
   */
  clusterLockExpirationSeconds: Config.Int("WA_CLUSTER_LOCK_EXPIRATION_SECONDS").pipe(Config.withDefault(15)),
  /** How long SIGTERM waits for runs in flight on this runner before handing its shards over. */
  drainSeconds: Config.Int("WA_DRAIN_SECONDS").pipe(Config.withDefault(20)),
  /**
   * Which local Chromium: `auto` (CHROMIUM_PATH, else a system Chromium, else the one bundled in
   * the npm package @sparticuz/chromium), `system` (never the bundled one), `bundled` (only it).
   * WA_BROWSER_CDP_URL overrides all three. See src/browser/chromium-executable.ts.
   */
  browser: Config.Literals(["auto", "system", "bundled"], "WA_BROWSER").pipe(Config.withDefault("auto" as const)),
  /** Keep one browser context opened ahead, so a session (or a search, a Track check) starts without waiting for one. */
  browserWarmContext: Config.Boolean("WA_BROWSER_WARM_CONTEXT").pipe(Config.withDefault(true)),
  /** How many contexts are kept opened ahead when WA_BROWSER_WARM_CONTEXT is on (0..64): the sessions a burst starts at once. */
  browserWarmContexts: Config.Int("WA_BROWSER_WARM_CONTEXTS").pipe(Config.withDefault(1)),
  /**
   * The local browser's CPU weight against the service's 100 (cgroup v2 units, 1..10000; 0 or
   * `off`: none), through a cgroup of its own where the machine allows (src/browser/cpu-weight.ts):
   * under load the browser's renderers yield to the service's control plane. NaN when invalid.
   */
  browserCpuWeight: Config.String("WA_BROWSER_CPU_WEIGHT").pipe(
    Config.withDefault(String(defaultBrowserCpuWeight)),
    Config.map((raw) => parseBrowserCpuWeight(raw) ?? Number.NaN)
  ),
  /** Largest file a workspace holds (uploads over it get 413; page downloads over it are not kept). */
  workspaceMaxFileBytes: Config.Int("WA_WORKSPACE_MAX_FILE_BYTES").pipe(Config.withDefault(100 * 1024 * 1024)),
  /** Largest recording of one run, compressed (a recording stops taking events before it would pass this). */
  recordingMaxBytes: Config.Int("WA_RECORDING_MAX_BYTES").pipe(Config.withDefault(32 * 1024 * 1024)),
  /**
   * The key that encrypts saved browser state (profiles) at rest: 32 bytes as 64 hex characters or
   * base64. Unset: generated once into <WA_DATA_DIR>/secret.key (mode 0600). See src/config/secret-key.ts.
   */
  secretKey: optionalRedacted("WA_SECRET_KEY"),
  // Take control (src/control/): how long a control URL waits for a person (spec: about 5
  // minutes), and how long a connected control page may stay without input before the agent
  // gets the browser back (spec: about 30 s). Tests shorten both.
  controlConnectSeconds: Config.Int("WA_CONTROL_CONNECT_SECONDS").pipe(Config.withDefault(300)),
  controlIdleSeconds: Config.Int("WA_CONTROL_IDLE_SECONDS").pipe(Config.withDefault(30)),
  /** The service's public base URL (https://agents.example.com), for control URLs; else the request's Host. */
  publicUrl: optionalString("WA_PUBLIC_URL"),
  // Billing (src/billing/): `off` (default) charges nothing and refuses nothing; `on` records
  // every charge in the credit ledger and refuses new runs below the minimum balance (402).
  billing: Config.Literals(["off", "on"], "WA_BILLING").pipe(Config.withDefault("off" as const)),
  billingMinBalanceUsd: Config.Number("WA_BILLING_MIN_BALANCE_USD").pipe(Config.withDefault(0.5)),
  // Plans, Stripe top-ups and auto-recharge (src/billing/plans.ts, stripe.ts, auto-recharge.ts).
  /** The plan table file (default: the shipped config/plans.json). */
  plansFile: optionalString("WA_PLANS_FILE"),
  /** The plan of projects the operator has not put on one (default: dev). */
  defaultPlan: optionalString("WA_DEFAULT_PLAN"),
  /** WA_MAX_CONCURRENT_SESSIONS when set: overrides every plan's per-key concurrency. */
  maxConcurrentSessionsOverride: Config.option(Config.Int("WA_MAX_CONCURRENT_SESSIONS")),
  /** Overrides of every plan's per-project caps: open sessions, API keys, monitors not ended. */
  maxProjectSessionsOverride: Config.option(Config.Int("WA_MAX_SESSIONS_PER_PROJECT")),
  maxProjectKeysOverride: Config.option(Config.Int("WA_MAX_KEYS_PER_PROJECT")),
  maxProjectMonitorsOverride: Config.option(Config.Int("WA_MAX_MONITORS_PER_PROJECT")),
  /** Standalone runs (WebSearch, DeepResearch) a project may have under way; one more gets 429 too_many_concurrent_runs. */
  maxConcurrentRuns: Config.Int("WA_MAX_CONCURRENT_RUNS").pipe(Config.withDefault(25)),
  /** Of those, what one API key (or console user) may have under way; unset: WA_MAX_CONCURRENT_RUNS. */
  maxConcurrentRunsPerKey: Config.option(Config.Int("WA_MAX_CONCURRENT_RUNS_PER_KEY")),
  stripeWebhookSecret: optionalRedacted("WA_STRIPE_WEBHOOK_SECRET"),
  stripeSecretKey: optionalRedacted("WA_STRIPE_SECRET_KEY"),
  stripeApiBase: Config.NonEmptyString("WA_STRIPE_API_BASE").pipe(Config.withDefault("https://api.stripe.com")),
  /** How often each process looks for projects below their auto-recharge threshold. */
  autoRechargePollMs: Config.Int("WA_AUTO_RECHARGE_POLL_MS").pipe(Config.withDefault(2000)),
  /** The price table (src/config/prices.ts); unset: config/prices.json of the repository. */
  pricesFile: optionalString("WA_PRICES_FILE"),
  // Console accounts (src/accounts/): sign-in throttling, session lifetime, invitations, caps.
  loginAttemptsPerAccount: Config.Int("WA_LOGIN_ATTEMPTS_PER_ACCOUNT").pipe(Config.withDefault(10)),
  loginAttemptsPerAddress: Config.Int("WA_LOGIN_ATTEMPTS_PER_ADDRESS").pipe(Config.withDefault(100)),
  loginWindowSeconds: Config.Int("WA_LOGIN_WINDOW_SECONDS").pipe(Config.withDefault(900)),
  consoleSessionHours: Config.Int("WA_CONSOLE_SESSION_HOURS").pipe(Config.withDefault(12)),
  invitationTtlHours: Config.Int("WA_INVITATION_TTL_HOURS").pipe(Config.withDefault(168)),
  maxPendingInvitations: Config.Int("WA_MAX_PENDING_INVITATIONS").pipe(Config.withDefault(100)),
  maxTenantsPerUser: Config.Int("WA_MAX_TENANTS_PER_USER").pipe(Config.withDefault(20)),
  /**
   * SSO providers (OpenID Connect), a JSON array of {provider_id, display_name, issuer, client_id,
   * client_secret}; see README "Accounts".
   */
  oidcProviders: optionalString("WA_OIDC_PROVIDERS"),
  /**
   * Outgoing mail (src/mail/outgoing.ts): an SMTP URL (smtp://user:pass@host:587, smtps://...:465).
   * Unset: mails (address verification, password reset) are written to the log for the operator.
   */
  smtpUrl: optionalRedacted("WA_SMTP_URL"),
  /** The From of outgoing mail (default: Web Agent Service <no-reply@localhost>). */
  mailFrom: optionalString("WA_MAIL_FROM"),
  /**
   * Inbound mail (agentmail, src/mail/inbound/): the SMTP listener's host:port (off unless set) and
   * the domain of session inboxes (<session id>@<domain>; default agents.localhost when the listener is on).
   */
  smtpListen: optionalString("WA_SMTP_LISTEN"),
  mailDomain: optionalString("WA_MAIL_DOMAIN"),
  /** Largest inbound message accepted (552 past it). */
  inboundMailMaxBytes: Config.Int("WA_INBOUND_MAIL_MAX_BYTES").pipe(Config.withDefault(1024 * 1024)),
  bugReportScreenshotMaxBytes: Config.Int("WA_BUG_REPORT_SCREENSHOT_MAX_BYTES").pipe(Config.withDefault(512 * 1024)),
  // Search engines (src/engines/search-config.ts turns these into SearchSettings). An engine is
  // configured by its key (Google: key and engine id); base URLs point an engine at a proxy or a test server.
  searxngUrl: optionalTrimmed("WA_SEARXNG_URL"),
  braveApiKey: optionalTrimmedRedacted("WA_BRAVE_API_KEY"),
  braveBaseUrl: Config.NonEmptyString("WA_BRAVE_BASE_URL").pipe(Config.withDefault(searchEngineDefaults.braveBaseUrl)),
  googleApiKey: optionalTrimmedRedacted("WA_GOOGLE_API_KEY"),
  googleCx: optionalTrimmed("WA_GOOGLE_CX"),
  googleBaseUrl: Config.NonEmptyString("WA_GOOGLE_BASE_URL").pipe(Config.withDefault(searchEngineDefaults.googleBaseUrl)),
  tavilyApiKey: optionalTrimmedRedacted("WA_TAVILY_API_KEY"),
  tavilyBaseUrl: Config.NonEmptyString("WA_TAVILY_BASE_URL").pipe(Config.withDefault(searchEngineDefaults.tavilyBaseUrl)),
  exaApiKey: optionalTrimmedRedacted("WA_EXA_API_KEY"),
  exaBaseUrl: Config.NonEmptyString("WA_EXA_BASE_URL").pipe(Config.withDefault(searchEngineDefaults.exaBaseUrl)),
  duckduckgoBaseUrl: Config.NonEmptyString("WA_DUCKDUCKGO_BASE_URL").pipe(Config.withDefault(searchEngineDefaults.duckduckgoBaseUrl)),
  /** Time of one engine call. */
  searchEngineTimeoutMs: intOrDefaultBelowOne("WA_SEARCH_ENGINE_TIMEOUT_MS", searchEngineDefaults.engineTimeoutMs),
  /** Consecutive failures that open an engine's circuit, and how long it stays open before a trial call. */
  searchBreakerFailures: intOrDefaultBelowOne("WA_SEARCH_BREAKER_FAILURES", searchEngineDefaults.breakerFailures),
  searchBreakerCooldownMs: intOrDefaultBelowOne("WA_SEARCH_BREAKER_COOLDOWN_MS", searchEngineDefaults.breakerCooldownMs),
  /** Fusion weights, `brave=1.5,exa=0.8` (default 1 each; malformed entries are skipped). */
  searchEngineWeights: Config.String("WA_SEARCH_ENGINE_WEIGHTS").pipe(Config.withDefault("")),
  /** Results read and summarized when a search asks for summaries. */
  searchSummarizeTop: intOrDefaultBelowOne("WA_SEARCH_SUMMARIZE_TOP", searchEngineDefaults.summarizeTop),
  /** Engine calls in flight per run. */
  searchConcurrency: intOrDefaultBelowOne("WA_SEARCH_CONCURRENCY", searchEngineDefaults.concurrency),
  // The Reader (src/reader/reader.ts): URL in, main content out. WA_ALLOW_PRIVATE_NETWORKS above applies to it too.
  readerTimeoutMs: intOrDefaultBelowOne("WA_READER_TIMEOUT_MS", readerDefaults.timeoutMs),
  /** Pages kept in the Reader's cache, and for how long. */
  readerCacheSize: intOrDefaultBelowOne("WA_READER_CACHE_SIZE", readerDefaults.cacheSize),
  readerCacheTtlSeconds: intOrDefaultBelowOne("WA_READER_CACHE_TTL_SECONDS", readerDefaults.cacheTtlSeconds),
  /** Largest document the Reader fetches. */
  readerMaxBytes: intOrDefaultBelowOne("WA_READER_MAX_BYTES", readerDefaults.maxBytes)
})

export type AppConfigShape = Omit<Config.Success<typeof AppConfigSchema>, "logLevelName"> & {
  readonly logLevel: LogLevel.LogLevel
  /** Absolute data directory. */
  readonly dataDirAbsolute: string
  /** The price table read from WA_PRICES_FILE (or the shipped one), validated at start. */
  readonly prices: PriceTable
}

export class InvalidConfig extends Error {
  override readonly name = "InvalidConfig"
}

/** Loads the config; a bad value becomes one line that names the variable. */
export const loadAppConfig = (env?: Record<string, string | undefined>) =>
  Effect.gen(function*() {
    const provider = env === undefined
      ? ConfigProvider.fromEnv()
      : ConfigProvider.fromEnv({ env: Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as Record<string, string> })
    const parsed = yield* AppConfigSchema.parse(provider).pipe(
      Effect.mapError((error) => new InvalidConfig(`invalid configuration: ${oneLine(error.message).replace(/^SchemaError\((.*)\)$/, "$1")}`)),
      Effect.orDie
    )
    if (parsed.rateLimitRequests < 1) return yield* Effect.die(new InvalidConfig("invalid configuration: WA_RATE_LIMIT_REQUESTS must be at least 1"))
    if (parsed.rateLimitWindowSeconds < 1) return yield* Effect.die(new InvalidConfig("invalid configuration: WA_RATE_LIMIT_WINDOW_SECONDS must be at least 1"))
    if (parsed.maxConcurrentSessions < 1) return yield* Effect.die(new InvalidConfig("invalid configuration: WA_MAX_CONCURRENT_SESSIONS must be at least 1"))
    if (Option.getOrElse(parsed.scheduledCapOverride, () => 1) < 1) return yield* Effect.die(new InvalidConfig("invalid configuration: WA_SCHEDULED_CAP must be at least 1"))
    if (parsed.maxConcurrentRuns < 1) return yield* Effect.die(new InvalidConfig("invalid configuration: WA_MAX_CONCURRENT_RUNS must be at least 1"))
    for (const [name, value] of [
      ["WA_MAX_STEPS", parsed.maxSteps], ["WA_RUN_MINUTE_MS", parsed.runMinuteMs], ["WA_SESSION_IDLE_SECONDS", parsed.sessionIdleSeconds],
      ["WA_WEBHOOK_RETRY_BASE_MS", parsed.webhookRetryBaseMs], ["WA_WEB_SEARCH_WAIT_SECONDS", parsed.webSearchWaitSeconds],
      ["WA_SSE_HEARTBEAT_SECONDS", parsed.sseHeartbeatSeconds], ["WA_KEY_REVOCATION_GRACE_SECONDS", parsed.keyRevocationGraceSeconds],
      ["WA_AUTH_FAILURES_PER_MINUTE", parsed.authFailuresPerMinute], ["WA_MAX_BODY_BYTES", parsed.maxBodyBytes],
      ["WA_HEADERS_TIMEOUT_SECONDS", parsed.headersTimeoutSeconds], ["WA_SSE_STALL_SECONDS", parsed.sseStallSeconds],
      ["WA_REQUEST_BODY_IDLE_SECONDS", parsed.requestBodyIdleSeconds],
      ["WA_IDEMPOTENCY_LEASE_SECONDS", parsed.idempotencyLeaseSeconds],
      ["WA_SCHEDULE_MIN_INTERVAL_SECONDS", parsed.scheduleMinIntervalSeconds], ["WA_SCHEDULER_POLL_MS", parsed.schedulerPollMs],
      ["WA_TRACK_MAX_CONSECUTIVE_FAILURES", parsed.trackMaxConsecutiveFailures],
      ["WA_WORKSPACE_MAX_FILE_BYTES", parsed.workspaceMaxFileBytes],
      ["WA_CONTROL_CONNECT_SECONDS", parsed.controlConnectSeconds], ["WA_CONTROL_IDLE_SECONDS", parsed.controlIdleSeconds],
      ["WA_RECORDING_MAX_BYTES", parsed.recordingMaxBytes], ["WA_INBOUND_MAIL_MAX_BYTES", parsed.inboundMailMaxBytes],
      ["WA_LOGIN_ATTEMPTS_PER_ACCOUNT", parsed.loginAttemptsPerAccount], ["WA_LOGIN_ATTEMPTS_PER_ADDRESS", parsed.loginAttemptsPerAddress],
      ["WA_LOGIN_WINDOW_SECONDS", parsed.loginWindowSeconds], ["WA_CONSOLE_SESSION_HOURS", parsed.consoleSessionHours],
      ["WA_INVITATION_TTL_HOURS", parsed.invitationTtlHours], ["WA_MAX_PENDING_INVITATIONS", parsed.maxPendingInvitations],
      ["WA_MAX_TENANTS_PER_USER", parsed.maxTenantsPerUser], ["WA_BUG_REPORT_SCREENSHOT_MAX_BYTES", parsed.bugReportScreenshotMaxBytes],
      // The per-project plan caps' overrides, when set (unset: the plan table's values).
      ["WA_MAX_SESSIONS_PER_PROJECT", Option.getOrElse(parsed.maxProjectSessionsOverride, () => 1)],
      ["WA_MAX_KEYS_PER_PROJECT", Option.getOrElse(parsed.maxProjectKeysOverride, () => 1)],
      ["WA_MAX_MONITORS_PER_PROJECT", Option.getOrElse(parsed.maxProjectMonitorsOverride, () => 1)],
      ["WA_MAX_CONCURRENT_RUNS_PER_KEY", Option.getOrElse(parsed.maxConcurrentRunsPerKey, () => 1)]
    ] as const) {
      if (value < 1) return yield* Effect.die(new InvalidConfig(`invalid configuration: ${name} must be at least 1`))
    }
    if (parsed.cluster._tag === "Some" && parsed.cluster.value === "socket" && Option.isNone(parsed.databaseUrl)) {
      return yield* Effect.die(new InvalidConfig("invalid configuration: WA_CLUSTER=socket needs DATABASE_URL (runners share one external PostgreSQL)"))
    }
    if (Option.isSome(parsed.secretKey) && parseSecretKey(Redacted.value(parsed.secretKey.value)) === undefined) {
      return yield* Effect.die(new InvalidConfig("invalid configuration: WA_SECRET_KEY must be 32 bytes, as 64 hex characters or base64"))
    }
    if (Option.isSome(parsed.smtpUrl) && !/^smtps?:\/\/[^/?#]/.test(Redacted.value(parsed.smtpUrl.value))) {
      return yield* Effect.die(new InvalidConfig("invalid configuration: WA_SMTP_URL must be an smtp:// or smtps:// URL (smtp://user:password@host:587)"))
    }
    if (Option.isSome(parsed.smtpListen) && !/^[^\s]*:\d{1,5}$/.test(parsed.smtpListen.value)) {
      return yield* Effect.die(new InvalidConfig("invalid configuration: WA_SMTP_LISTEN must be host:port (127.0.0.1:2525, 0.0.0.0:25)"))
    }
    if (Option.isSome(parsed.mailDomain) && !/^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/i.test(parsed.mailDomain.value)) {
      return yield* Effect.die(new InvalidConfig("invalid configuration: WA_MAIL_DOMAIN must be a domain name (agents.example.com)"))
    }
    if (parsed.clusterShards < 1) return yield* Effect.die(new InvalidConfig("invalid configuration: WA_CLUSTER_SHARDS must be at least 1"))
    if (parsed.clusterHealthCheckSeconds < 1) return yield* Effect.die(new InvalidConfig("invalid configuration: WA_CLUSTER_HEALTH_CHECK_SECONDS must be at least 1"))
    if (parsed.clusterLockExpirationSeconds < 3) return yield* Effect.die(new InvalidConfig("invalid configuration: WA_CLUSTER_LOCK_EXPIRATION_SECONDS must be at least 3"))
    if (!(parsed.billingMinBalanceUsd >= 0)) return yield* Effect.die(new InvalidConfig("invalid configuration: WA_BILLING_MIN_BALANCE_USD must be at least 0"))
    if (parsed.drainSeconds < 0) return yield* Effect.die(new InvalidConfig("invalid configuration: WA_DRAIN_SECONDS must be at least 0"))
    if (!(parsed.browserWarmContexts >= 0 && parsed.browserWarmContexts <= 64)) {
      return yield* Effect.die(new InvalidConfig("invalid configuration: WA_BROWSER_WARM_CONTEXTS must be 0 to 64"))
    }
    if (Number.isNaN(parsed.browserCpuWeight)) {
      return yield* Effect.die(new InvalidConfig("invalid configuration: WA_BROWSER_CPU_WEIGHT must be 1 to 10000 (the service has 100), or 0 / off"))
    }
    const plansProblem = planTableProblem(Option.getOrUndefined(parsed.plansFile), Option.getOrUndefined(parsed.defaultPlan))
    if (plansProblem !== undefined) return yield* Effect.die(new InvalidConfig(`invalid configuration: ${plansProblem}`))
    if (parsed.autoRechargePollMs < 1) return yield* Effect.die(new InvalidConfig("invalid configuration: WA_AUTO_RECHARGE_POLL_MS must be at least 1"))
    const { logLevelName, ...settings } = parsed
    const logLevel = parseLogLevel(logLevelName)
    if (logLevel === undefined) {
      return yield* Effect.die(new InvalidConfig(`invalid configuration: WA_LOG_LEVEL must be one of ${LogLevel.values.join(", ")} (any case), not ${logLevelName}`))
    }
    const prices = yield* Effect.try({
      try: () => loadPriceTable(Option.getOrElse(parsed.pricesFile, defaultPricesFile)),
      catch: (error) => new InvalidConfig(`invalid configuration: ${(error as Error).message}`)
    }).pipe(Effect.orDie)
    return { ...settings, logLevel, dataDirAbsolute: path.resolve(parsed.dataDir), prices } satisfies AppConfigShape
  })

const oneLine = (text: string) => text.replace(/\s*\n\s*/g, " ").trim()

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("wa/config/AppConfig") {
  /** Reads the environment (or the given record, in tests) once. */
  static readonly layerFrom = (env?: Record<string, string | undefined>) =>
    Layer.effect(AppConfig, loadAppConfig(env))

  static readonly layer = AppConfig.layerFrom()
}

/** The model API key: WA_MODEL_API_KEY, else the provider's conventional variable. */
/** The cluster mode: WA_CLUSTER, else socket runners with DATABASE_URL and a SingleRunner without. */
export const clusterMode = (config: AppConfigShape): "single" | "socket" =>
  Option.getOrElse(config.cluster, () => Option.isSome(config.databaseUrl) ? "socket" as const : "single" as const)

export const modelApiKey = (config: AppConfigShape): Option.Option<Redacted.Redacted> =>
  Option.orElse(config.modelApiKey, () => config.modelProvider === "anthropic" ? config.anthropicApiKey : config.openAiApiKey)
