/**
 * What only the server decides of a schedule: whether a cron expression parses and fires, and
 * whether a time zone is a known IANA name. Both need effect's `Cron` and `DateTime` with the
 * platform's time-zone data, so the browser SDK leaves them out: its build
 * (vite.client.config.ts) reads this module as src/client/browser/schedule-validity.ts, where
 * every expression and zone passes, and the server answers a bad one with a 422
 * `validation_error` in the usual envelope. The shape of a schedule (its kind, the types and
 * bounds of its fields) is checked on both sides by the schemas of src/domain/schedule-spec.ts.
 */
import { Cron, DateTime, Option, Result } from "effect"

/** A field of the schedule object and what is wrong with it, for a 422 `validation_error`. */
export interface ScheduleProblem {
  readonly path: ReadonlyArray<string>
  readonly message: string
}

/** A fixed instant to look at a cron's slots from, so validation does not depend on today's date. */
export const REFERENCE = new Date("2025-01-01T00:00:00Z")

/**
 * A named IANA zone (`Europe/Berlin`, `UTC`), not an offset: an offset does not follow daylight
 * saving, which is what a cron user means by a zone.
 */
export const zoneProblem = (tz: string): string | undefined => {
  if (!/^[A-Za-z]/.test(tz)) return `tz must be an IANA time zone name such as "Europe/Berlin", not ${JSON.stringify(tz)}`
  return Option.isSome(DateTime.zoneMakeNamed(tz)) ? undefined : `unknown time zone ${JSON.stringify(tz)} (use an IANA name such as "Europe/Berlin")`
}

/** Parsed expressions by `tz \0 expr`: parsing is pure, and the scheduler meets the same few often. */
const parsedCrons = new Map<string, Cron.Cron>()

export const parseCron = (expr: string, tz: string): Result.Result<Cron.Cron, string> => {
  const key = `${tz}\u0000${expr}`
  const cached = parsedCrons.get(key)
  if (cached !== undefined) return Result.succeed(cached)
  const parsed = Cron.parse(expr, tz)
  if (Result.isFailure(parsed)) return Result.fail(parsed.failure.message)
  if (parsedCrons.size >= 1_000) parsedCrons.clear()
  parsedCrons.set(key, parsed.success)
  return Result.succeed(parsed.success)
}

/** The problem of a cron expression in a zone, without the minimum interval. */
export const cronProblem = (expr: string, tz: string): ScheduleProblem | undefined => {
  const zone = zoneProblem(tz)
  if (zone !== undefined) return { path: ["tz"], message: zone }
  const parsed = parseCron(expr, tz)
  if (Result.isFailure(parsed)) return { path: ["expr"], message: `invalid cron expression ${JSON.stringify(expr)}: ${parsed.failure}` }
  try {
    Cron.next(parsed.success, REFERENCE)
  } catch {
    return { path: ["expr"], message: `cron expression ${JSON.stringify(expr)} never fires` }
  }
  return undefined
}
