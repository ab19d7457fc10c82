/**
 * The upgrade fixtures of test/fixtures/upgrade/ (made by make-dump.ts) and the comparison of what
 * an old service answered with what today's service answers on the upgraded database.
 */
import { readFileSync } from "node:fs"
import * as path from "node:path"

const directory = path.resolve(import.meta.dirname, "../fixtures/upgrade")

export interface Fixture {
  readonly commit: string
  readonly made_at: string
  readonly project_id: string
  readonly secret_key: string
  /** How many migrations the old service had applied (its wa_migrations rows). */
  readonly migrations_applied: number
  readonly made: ReadonlyArray<string>
  readonly skipped: ReadonlyArray<string>
  readonly keys: { readonly bootstrap: string; readonly admin: string; readonly run: string; readonly revoked: string }
  readonly console: { readonly email: string; readonly password: string }
  readonly ids: Record<string, string>
  /** The old service's JSON answer to each GET (or `{status, text}` for a raw body), by path. */
  readonly answers: Record<string, unknown>
  /** The bytes behind the download_url of the answer at each path. */
  readonly downloads: Record<string, { readonly status: number; readonly text: string }>
  /** The events of each stream the old service served, by path. */
  readonly streams: Record<string, ReadonlyArray<{ readonly id: number; readonly event: string; readonly data: unknown }>>
  /** The gzipped plain SQL dump of the old service's database. */
  readonly dumpPath: string
}

export const loadFixture = (commit: string): Fixture => ({
  ...JSON.parse(readFileSync(path.join(directory, `${commit}.answers.json`), "utf8")),
  dumpPath: path.join(directory, `${commit}.sql.gz`)
})

/** A URL signed for a while (screenshots, files, replays): its signature and expiry are made per answer. */
const signed = (value: string) => /^(https?:\/\/|\/).*[?&](sig|signature|expires|exp)=/.test(value)
const withoutQuery = (value: string) => value.split("?")[0]
/** A decimal amount ("0.04", "0.040000"): the same amount whatever its number of decimals. */
const decimal = /^-?\d+\.\d+$/
const micros = (usd: string) => Math.round(Number(usd) * 1_000_000)

/**
 * What today's service says differently of the same rows, on purpose (a change of the contract
 * between the fixture's commit and today, not of the data): where in an answer, why, and what
 * is accepted. Nothing else may differ.
 */
export interface ChangedByDesign {
  readonly at: RegExp
  readonly why: string
  /** `parent`: the object of the old answer that holds `before`. */
  readonly accepts: (before: unknown, after: unknown, parent: Record<string, unknown> | undefined) => boolean
}

const isoTime = (value: unknown): value is string => typeof value === "string" && !Number.isNaN(Date.parse(value))

export const changedByDesign: ReadonlyArray<ChangedByDesign> = [
  {
    at: /url_expires_at$/,
    why: "a signed URL's expiry is set when the answer is made (its URL compares without the query)",
    accepts: (before, after) => isoTime(before) && isoTime(after)
  },
  {
    at: /\.last_used_at$/,
    why: "the test itself uses the old keys: their last use moves forward, never back",
    accepts: (before, after) => isoTime(after) && (before === null || (isoTime(before) && Date.parse(after) >= Date.parse(before)))
  },
  {
    at: /^\/v1\/auth\/me\.expires_at$/,
    why: "the console session is the one the test signed in with (the old one has expired since)",
    accepts: (before, after) => isoTime(before) && isoTime(after)
  },
  {
    at: /_usd$/,
    why: "amounts are exact to the micro-dollar since 0f23696 (the old views rounded to cents): the old amount is the new one rounded to cents",
    accepts: (before, after) =>
      typeof before === "string" && typeof after === "string" && /^-?\d+\.\d{2}$/.test(before) && decimal.test(after) &&
      Math.round(micros(after) / 10_000) === Math.round(micros(before) / 10_000)
  },
  {
    at: /\.trigger_dsl$/,
    why: "trigger_dsl shows the rule in effect, {on: change} when none was given, never null (37a21ab)",
    accepts: (before, after) => before === null && JSON.stringify(after) === JSON.stringify({ on: "change" })
  },
  {
    at: /\/artifacts\.items$/,
    why: "run artifacts are listed newest first (id DESC) since their pagination (4aa9816); the old list was by name DESC",
    accepts: (before, after) => {
      const byId = (items: unknown) => Array.isArray(items) ? [...items].sort((a, b) => String(a?.id).localeCompare(String(b?.id))) : items
      return Array.isArray(after) && carriedOver(byId(before), byId(after), "").length === 0
    }
  }
]

/**
 * What differs only because time has passed since the fixture was made (at `now`): an invitation
 * past its expiry shows `expired`; once the fixture's billing period has ended, the views of the
 * current period (its bounds, spend, quota use, the costs of the account view) describe another
 * month, and only the balances and settings in them are compared.
 */
export const changedByTime = (fixture: Fixture, now: Date): ReadonlyArray<ChangedByDesign> => {
  const account = Object.entries(fixture.answers).find(([pathname]) => pathname.endsWith("/billing/account"))?.[1] as { period_end?: string } | undefined
  const periodEnded = account?.period_end !== undefined && now.getTime() >= Date.parse(account.period_end)
  return [
    {
      at: /\/invitations\.items\[\d+\]\.status$/,
      why: "a pending invitation past its expires_at is shown expired",
      accepts: (before, after, parent) =>
        before === "pending" && after === "expired" && typeof parent?.["expires_at"] === "string" && now.getTime() >= Date.parse(parent["expires_at"])
    },
    ...(periodEnded
      ? [{
        at: /\/billing\/(account|budget|quota)\.(period_start|period_end|sessions_count|[a-z]+_cost_usd|spent_usd|remaining_usd|warning|exceeded|quota_[a-z_]+)$/,
        why: "the fixture's billing period has ended: these fields are of the current one",
        accepts: () => true
      }]
      : [])
  ]
}

/**
 * What `before` said is still said by `after`: every field of an object is there with the same
 * value (fields `after` adds are allowed: they are new in today's contract), arrays have the same
 * length and elements; signed URLs compare without their query, decimal amounts by value; what
 * `changes` accepts is accepted. Returns one line per difference, named by its path in the answer.
 */
export const carriedOver = (
  before: unknown,
  after: unknown,
  at: string,
  changes: ReadonlyArray<ChangedByDesign> = changedByDesign,
  parent?: Record<string, unknown>
): Array<string> => {
  if (changes.some((change) => change.at.test(at) && change.accepts(before, after, parent))) return []
  if (Array.isArray(before)) {
    if (!Array.isArray(after)) return [`${at}: was an array, now ${JSON.stringify(after)?.slice(0, 200)}`]
    if (before.length !== after.length) return [`${at}: ${before.length} elements before, ${after.length} now`]
    return before.flatMap((element, i) => carriedOver(element, after[i], `${at}[${i}]`, changes))
  }
  if (before !== null && typeof before === "object") {
    if (after === null || typeof after !== "object" || Array.isArray(after)) return [`${at}: was an object, now ${JSON.stringify(after)?.slice(0, 200)}`]
    const holder = before as Record<string, unknown>
    return Object.entries(holder).flatMap(([key, value]) =>
      key in after
        ? carriedOver(value, (after as Record<string, unknown>)[key], `${at}.${key}`, changes, holder)
        : [`${at}.${key}: gone (was ${JSON.stringify(value)?.slice(0, 200)})`]
    )
  }
  if (typeof before === "string" && typeof after === "string") {
    if (before === after) return []
    if (signed(before) && signed(after) && withoutQuery(before) === withoutQuery(after)) return []
    if (decimal.test(before) && decimal.test(after) && Number(before) === Number(after)) return []
  }
  return before === after ? [] : [`${at}: ${JSON.stringify(before)?.slice(0, 200)} -> ${JSON.stringify(after)?.slice(0, 200)}`]
}
