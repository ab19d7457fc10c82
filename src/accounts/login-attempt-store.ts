/**
 * Sign-in attempts in PostgreSQL (login_attempts): counts per scope key in fixed windows, so every
 * node counts together; a count also reads the window before, which the service weighs into a
 * sliding window. Rows are decoded through Schema; the limits are the service's
 * (src/accounts/login-throttle.ts).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/config.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { decodeRows } from "../domain/rows.ts"

const CountedRow = Schema.Struct({
  /** This attempt's number in the current window. */
  attempts: Schema.Number,
  /** The attempts of the window before the current one. */
  previous_attempts: Schema.Number,
  /** How far into the current window this attempt is. */
  seconds_into_window: Schema.Number
})
export type Counted = typeof CountedRow.Type

export class LoginAttemptStore extends Context.Service<LoginAttemptStore, {
  /**
   * Counts one attempt of `key` in the current window, in one atomic upsert: every attempt gets its
   * own number. The window before is read in the same statement.
   */
  readonly count: (key: string) => Effect.Effect<Counted>
  /** Deletes the windows that ended (they only ever count up). */
  readonly sweep: Effect.Effect<void>
  /** Deletes every count of `key`. */
  readonly clear: (key: string) => Effect.Effect<void>
  /** Gives `key` one attempt of the current window back. */
  readonly giveBack: (key: string) => Effect.Effect<void>
}>()("wa/accounts/LoginAttemptStore") {
  static readonly layer = Layer.effect(
    LoginAttemptStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const window = (yield* AppConfig).loginWindowSeconds
      const windowStart = sql`to_timestamp(floor(extract(epoch FROM now()) / ${window}) * ${window})`
      return LoginAttemptStore.of(withMethodSpans("LoginAttemptStore", {
        count: (key) =>
          decodeRows(CountedRow)(sql`
            WITH counted AS (
              INSERT INTO login_attempts (scope_key, window_start, attempts)
              VALUES (${key}, ${windowStart}, 1)
              ON CONFLICT (scope_key, window_start) DO UPDATE SET attempts = login_attempts.attempts + 1
              RETURNING attempts, window_start
            )
            SELECT counted.attempts,
              coalesce((SELECT before.attempts FROM login_attempts before
                WHERE before.scope_key = ${key} AND before.window_start = counted.window_start - ${`${window} seconds`}::interval), 0)::int
                AS previous_attempts,
              extract(epoch FROM (now() - counted.window_start))::float8 AS seconds_into_window
            FROM counted`).pipe(
            Effect.map((rows) => rows[0]!)
          ),
        sweep: sql`DELETE FROM login_attempts WHERE window_start < now() - ${`${window * 2} seconds`}::interval`.pipe(Effect.asVoid, Effect.orDie),
        clear: (key) => sql`DELETE FROM login_attempts WHERE scope_key = ${key}`.pipe(Effect.asVoid, Effect.orDie),
        giveBack: (key) =>
          sql`
            UPDATE login_attempts SET attempts = greatest(attempts - 1, 0)
            WHERE scope_key = ${key} AND window_start = ${windowStart}`.pipe(Effect.asVoid, Effect.orDie)
      }))
    })
  )
}
