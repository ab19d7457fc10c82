/**
 * What a schedule is on the wire and when it fires.
 *
 * The wire form (the spec's CreateMonitorRequest.schedule) is `{kind: "cron", expr, tz}` or
 * `{kind: "interval", interval_seconds}`. The spec names the cron key `expr` in its schema and
 * `cron` on the feature page, so both are accepted (both given: they must be equal). Expressions
 * are parsed by Effect's `Cron` (5 fields, or 6 with seconds first) in the schedule's IANA time
 * zone (UTC when none is given). Stored and answered in one canonical form, `{kind, expr, tz}` or
 * `{kind, interval_seconds}`.
 *
 * The minimum interval is an operator setting, so it is not part of the schema: `validateSchedule`
 * checks it (and everything else) and names the field, for a 422.
 *
 * Whether an expression parses and a zone exists is decided in src/domain/schedule-validity.ts,
 * which the browser SDK leaves to the server (its schemas check the shape only).
 */
import { Cron, Result, Schema } from "effect"
import { cronProblem, parseCron, REFERENCE, type ScheduleProblem, zoneProblem } from "./schedule-validity.ts"

const MAX_EXPR_LENGTH = 200
const MAX_TZ_LENGTH = 64
/** interval_seconds above this would overflow Date arithmetic long before it is useful (10 years). */
const MAX_INTERVAL_SECONDS = 10 * 365 * 24 * 3600

export type { ScheduleProblem } from "./schedule-validity.ts"

/** The cron expression under whichever key it was given (undefined only for an invalid spec). */
const exprOf = (spec: { readonly expr?: string | undefined; readonly cron?: string | undefined }) => spec.expr ?? spec.cron

const CronExpr = Schema.String.check(Schema.isMinCodePoints(1), Schema.isMaxCodePoints(MAX_EXPR_LENGTH))
const Zone = Schema.String.check(Schema.isMinCodePoints(1), Schema.isMaxCodePoints(MAX_TZ_LENGTH))

/** `{kind: "cron", expr | cron, tz?}`: the expression under either name, parsed in the zone. */
export const CronScheduleSpec = Schema.Struct({
  kind: Schema.Literal("cron"),
  expr: Schema.optionalKey(CronExpr),
  cron: Schema.optionalKey(CronExpr),
  tz: Schema.optionalKey(Schema.NullOr(Zone)).annotate({ description: "IANA time zone the expression is read in (default UTC)" })
}).check(Schema.makeFilter((spec) => {
  if (spec.expr === undefined && spec.cron === undefined) return { path: ["expr"], issue: "a cron schedule needs expr (or its alias cron)" }
  if (spec.expr !== undefined && spec.cron !== undefined && spec.expr !== spec.cron) {
    return { path: ["cron"], issue: "expr and cron name the same expression: give one, or the same value in both" }
  }
  const problem = cronProblem(exprOf(spec) ?? "", spec.tz ?? "UTC")
  if (problem === undefined) return undefined
  // The expression's problem is reported under the key the caller used.
  const path = problem.path[0] === "expr" && spec.expr === undefined ? ["cron"] : problem.path
  return { path, issue: problem.message }
}))

/**
 * `{kind: "interval", interval_seconds, tz?}`. The spec's shape lists `tz` for every schedule, so an
 * interval accepts it too (a named IANA zone, checked like a cron's); it anchors nothing: slots are
 * `anchor + k * interval_seconds` in absolute time, so the zone is not stored or answered.
 */
export const IntervalScheduleSpec = Schema.Struct({
  kind: Schema.Literal("interval"),
  interval_seconds: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_INTERVAL_SECONDS })),
  tz: Schema.optionalKey(Schema.NullOr(Zone)).annotate({
    description: "accepted for the shape's sake and checked as an IANA zone; an interval counts absolute seconds, so the zone changes nothing and is not stored"
  })
}).check(Schema.makeFilter((spec) => {
  const problem = spec.tz === undefined || spec.tz === null ? undefined : zoneProblem(spec.tz)
  return problem === undefined ? undefined : { path: ["tz"], issue: problem }
}))

/** The wire schedule of a create or refine request (decode it with `onExcessProperty: "error"`). */
export const ScheduleSpec = Schema.Union([CronScheduleSpec, IntervalScheduleSpec]).annotate({
  message: "schedule must be {kind: \"cron\", expr, tz} or {kind: \"interval\", interval_seconds, tz}"
})
export type ScheduleSpec = typeof ScheduleSpec.Type

/** The one stored and answered form: the cron key is `expr`, the zone is always named. */
export const CanonicalSchedule = Schema.Union([
  Schema.Struct({ kind: Schema.Literal("cron"), expr: Schema.String, tz: Schema.String }),
  Schema.Struct({ kind: Schema.Literal("interval"), interval_seconds: Schema.Int })
])
export type CanonicalSchedule = typeof CanonicalSchedule.Type

/** The parse options of the API's request bodies: every error, unknown fields refused. */
export const scheduleParseOptions = { errors: "all", onExcessProperty: "error" } as const

/** Strict decoding of the wire form, for callers outside HttpApi (a schedule the model proposed). */
export const decodeScheduleSpec = (input: unknown) => Schema.decodeUnknownEffect(ScheduleSpec)(input, scheduleParseOptions)

/** The stored and answered form of a (valid) schedule. */
export const canonicalSchedule = (spec: ScheduleSpec | CanonicalSchedule): CanonicalSchedule =>
  spec.kind === "interval"
    ? { kind: "interval", interval_seconds: spec.interval_seconds }
    : { kind: "cron", expr: exprOf(spec) ?? "", tz: spec.tz ?? "UTC" }

/** The parsed cron of a canonical spec; throws on an invalid one (they are validated before they are stored). */
const cronOf = (spec: { readonly expr: string; readonly tz: string }): Cron.Cron => {
  const parsed = parseCron(spec.expr, spec.tz)
  if (Result.isFailure(parsed)) throw new Error(`invalid cron expression ${JSON.stringify(spec.expr)}: ${parsed.failure}`)
  return parsed.success
}

/**
 * The first slot strictly after `after`. Interval slots are `anchor + k * interval_seconds`
 * (anchored, e.g. at creation, so they do not drift with processing time); the anchor defaults
 * to `after`, i.e. one interval from it. Throws for a cron that never fires again (validation
 * refuses those).
 */
export const nextSlot = (spec: ScheduleSpec | CanonicalSchedule, after: Date, anchor: Date = after): Date => {
  const canonical = canonicalSchedule(spec)
  if (canonical.kind === "interval") {
    const step = canonical.interval_seconds * 1000
    const k = Math.floor((after.getTime() - anchor.getTime()) / step) + 1
    return new Date(anchor.getTime() + k * step)
  }
  return Cron.next(cronOf(canonical), after)
}

/**
 * The shortest gap between two consecutive slots of a cron, looked at over a day and a bit of
 * slots from a fixed date, stopping as soon as one gap is under `minimumSeconds`. With a single
 * seconds value every gap is a whole number of minutes (daylight saving moves by 30 or 60
 * minutes), so a minimum of a minute or less needs no look at all.
 */
const cronGapUnder = (cron: Cron.Cron, minimumSeconds: number): number | undefined => {
  if (minimumSeconds <= 1 || (cron.seconds.size === 1 && minimumSeconds <= 60)) return undefined
  let previous = Cron.next(cron, REFERENCE)
  const horizon = previous.getTime() + 26 * 3600_000
  for (let i = 0; i < 2_000 && previous.getTime() < horizon; i++) {
    const following = Cron.next(cron, previous)
    const gapSeconds = (following.getTime() - previous.getTime()) / 1000
    if (gapSeconds < minimumSeconds) return gapSeconds
    previous = following
  }
  return undefined
}

/**
 * Everything wrong with a schedule, first problem only, with the field it is in: the cron
 * expression and zone (as the schema checks them), and the operator's minimum interval
 * (`WA_SCHEDULE_MIN_INTERVAL_SECONDS`) for intervals and for the gap between two cron slots.
 */
export const validateSchedule = (spec: ScheduleSpec | CanonicalSchedule, minimumSeconds: number): ScheduleProblem | undefined => {
  if (spec.kind === "interval") {
    const tz = "tz" in spec ? spec.tz : undefined
    const zone = tz === undefined || tz === null ? undefined : zoneProblem(tz)
    if (zone !== undefined) return { path: ["tz"], message: zone }
    if (!Number.isInteger(spec.interval_seconds) || spec.interval_seconds < 1 || spec.interval_seconds > MAX_INTERVAL_SECONDS) {
      return { path: ["interval_seconds"], message: `interval_seconds must be a whole number of seconds from 1 to ${MAX_INTERVAL_SECONDS}` }
    }
    if (spec.interval_seconds < minimumSeconds) {
      return { path: ["interval_seconds"], message: `interval_seconds must be at least ${minimumSeconds}` }
    }
    return undefined
  }
  const alias: string | undefined = "cron" in spec ? spec.cron : undefined
  const exprKey = spec.expr === undefined && alias !== undefined ? "cron" : "expr"
  if (alias !== undefined && spec.expr !== undefined && alias !== spec.expr) {
    return { path: ["cron"], message: "expr and cron name the same expression: give one, or the same value in both" }
  }
  const expr = spec.expr ?? alias
  if (expr === undefined || expr.length === 0) return { path: ["expr"], message: "a cron schedule needs expr (or its alias cron)" }
  const tz = spec.tz ?? "UTC"
  const problem = cronProblem(expr, tz)
  if (problem !== undefined) return problem.path[0] === "expr" ? { ...problem, path: [exprKey] } : problem
  const gap = cronGapUnder(cronOf({ expr, tz }), minimumSeconds)
  if (gap !== undefined) {
    return { path: [exprKey], message: `cron expression ${JSON.stringify(expr)} fires ${gap} s apart; schedules must be at least ${minimumSeconds} s apart` }
  }
  return undefined
}

// --- DoAnything schedules: event and autonomous kinds -----------------------------------------

/** An event name: a label a trigger is filed under (letters, digits, `.`, `_`, `:`, `-`). */
const EventName = Schema.String.check(Schema.isMinCodePoints(1), Schema.isMaxCodePoints(200), Schema.isPattern(/^[A-Za-z0-9._:-]+$/u))

/** `{kind: "event", event?}`: fires on `POST .../schedules/{id}/trigger`; `event` names what it waits for. */
export const EventScheduleSpec = Schema.Struct({
  kind: Schema.Literal("event"),
  event: Schema.optionalKey(Schema.NullOr(EventName))
})

const Seconds = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_INTERVAL_SECONDS }))

/**
 * `{kind: "autonomous", min_interval_seconds?, max_interval_seconds?}`: the agent's `done` proposes
 * `next_run_at`, clamped to [run end + min, run end + max]; without a proposal the next firing is
 * one `max_interval_seconds` after the last one. Defaults: min = WA_SCHEDULE_MIN_INTERVAL_SECONDS,
 * max = one day.
 */
export const AutonomousScheduleSpec = Schema.Struct({
  kind: Schema.Literal("autonomous"),
  min_interval_seconds: Schema.optionalKey(Seconds),
  max_interval_seconds: Schema.optionalKey(Seconds)
}).check(Schema.makeFilter((spec) =>
  spec.min_interval_seconds !== undefined && spec.max_interval_seconds !== undefined && spec.max_interval_seconds < spec.min_interval_seconds
    ? { path: ["max_interval_seconds"], issue: "max_interval_seconds must be at least min_interval_seconds" }
    : undefined
))

export const DEFAULT_AUTONOMOUS_MAX_SECONDS = 24 * 3600

/** A DoAnything session's `schedule` on the wire: every kind of the spec. */
export const SessionScheduleSpec = Schema.Union([CronScheduleSpec, IntervalScheduleSpec, EventScheduleSpec, AutonomousScheduleSpec]).annotate({
  message: "schedule must be {kind: \"cron\", expr, tz}, {kind: \"interval\", interval_seconds, tz?}, {kind: \"event\", event?} " +
    "or {kind: \"autonomous\", min_interval_seconds?, max_interval_seconds?}"
})
export type SessionScheduleSpec = typeof SessionScheduleSpec.Type

/** Strict decoding of a session's schedule: unknown fields are refused (a misspelt `tz` would silently mean UTC). */
export const decodeSessionSchedule = (input: unknown) => Schema.decodeUnknownResult(SessionScheduleSpec)(input, scheduleParseOptions)

/** The JSON Schema of the four session schedule shapes, by `kind` (computed once, when a document is made). */
let shapes: Record<string, unknown> | undefined
const sessionScheduleShapes = () => {
  if (shapes === undefined) {
    const { schema } = Schema.toJsonSchemaDocument(SessionScheduleSpec, { onExcessProperty: "error" })
    const { anyOf, oneOf } = schema as { anyOf?: Array<unknown>; oneOf?: Array<unknown> }
    shapes = { oneOf: oneOf ?? anyOf ?? [schema] }
  }
  return shapes
}

/**
 * The `schedule` field of a run request: a JSON object that must decode strictly as a
 * SessionScheduleSpec (a plain struct union would drop unknown keys silently). The issue of a bad
 * one keeps its path, so the 422 names the field inside `schedule`.
 */
export const SessionScheduleField = Schema.Record(Schema.String, Schema.Unknown).check(Schema.makeFilter((input) => {
  const decoded = decodeSessionSchedule(input)
  return Result.isFailure(decoded) ? decoded.failure.issue : undefined
}, {
  // The document shows the four shapes this filter decodes (a looser fragment: the cron checks are code).
  toJsonSchema: () => [sessionScheduleShapes(), true]
})).annotate({
  description: "{kind: \"cron\", expr (or cron), tz?} | {kind: \"interval\", interval_seconds, tz?} | {kind: \"event\", event?} | " +
    "{kind: \"autonomous\", min_interval_seconds?, max_interval_seconds?}; unknown fields are refused. Each firing adds a run " +
    "to the session with this request's instructions (see README \"Schedules\")."
})

/** Every stored schedule: the timed ones (canonical) and the event and autonomous ones of sessions. */
export const StoredSchedule = Schema.Union([
  Schema.Struct({ kind: Schema.Literal("cron"), expr: Schema.String, tz: Schema.String }),
  Schema.Struct({ kind: Schema.Literal("interval"), interval_seconds: Schema.Int }),
  Schema.Struct({ kind: Schema.Literal("event"), event: Schema.NullOr(Schema.String) }),
  Schema.Struct({ kind: Schema.Literal("autonomous"), min_interval_seconds: Schema.Int, max_interval_seconds: Schema.Int })
])
export type StoredSchedule = typeof StoredSchedule.Type

/** The stored form of a (valid) session schedule, with the autonomous defaults filled in. */
export const storedSchedule = (spec: SessionScheduleSpec | StoredSchedule, minimumSeconds: number): StoredSchedule => {
  switch (spec.kind) {
    case "event":
      return { kind: "event", event: spec.event ?? null }
    case "autonomous": {
      const min = spec.min_interval_seconds ?? minimumSeconds
      return { kind: "autonomous", min_interval_seconds: min, max_interval_seconds: spec.max_interval_seconds ?? Math.max(min, DEFAULT_AUTONOMOUS_MAX_SECONDS) }
    }
    default:
      return canonicalSchedule(spec)
  }
}

/**
 * The next timed firing strictly after `after`, or null when the kind has none by itself: an event
 * schedule fires only when triggered; an autonomous one falls back to one max interval later (the
 * agent's proposal moves it). Null too for a cron without a further slot.
 */
export const nextFireAt = (spec: StoredSchedule | ScheduleSpec, after: Date, anchor: Date = after): Date | null => {
  if (spec.kind === "event") return null
  if (spec.kind === "autonomous") return new Date(after.getTime() + spec.max_interval_seconds * 1000)
  try {
    return nextSlot(spec, after, anchor)
  } catch {
    return null
  }
}

/** The problem of a session schedule beyond its schema: the operator's minimum interval. */
export const validateSessionSchedule = (spec: SessionScheduleSpec, minimumSeconds: number): ScheduleProblem | undefined => {
  if (spec.kind === "event") return undefined
  if (spec.kind === "autonomous") {
    if (spec.min_interval_seconds !== undefined && spec.min_interval_seconds < minimumSeconds) {
      return { path: ["min_interval_seconds"], message: `min_interval_seconds must be at least ${minimumSeconds}` }
    }
    if (spec.min_interval_seconds === undefined && spec.max_interval_seconds !== undefined && spec.max_interval_seconds < minimumSeconds) {
      return { path: ["max_interval_seconds"], message: `max_interval_seconds must be at least ${minimumSeconds}` }
    }
    return undefined
  }
  return validateSchedule(spec, minimumSeconds)
}

/** Clamps an agent's proposed next run into [from + min, from + max] of an autonomous schedule. */
export const clampProposal = (proposed: Date, from: Date, spec: { readonly min_interval_seconds: number; readonly max_interval_seconds: number }): Date =>
  new Date(Math.min(Math.max(proposed.getTime(), from.getTime() + spec.min_interval_seconds * 1000), from.getTime() + spec.max_interval_seconds * 1000))
