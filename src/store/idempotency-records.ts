/**
 * The claims of Idempotency-Key requests (table idempotency_records): one row per project, caller
 * and key, held by one attempt at a time (its `attempt` token) with a lease the request renews,
 * then holding the stored answer for 24 h. The HTTP middleware (src/http/middleware/idempotency.ts)
 * decides what to answer; the statements that make the claim safe under races are here.
 */
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeRows } from "../domain/rows.ts"

/** One attempt's hold on a key: the claim's primary key and the attempt's token. */
export interface HeldKey {
  readonly space: string
  readonly callerId: string
  readonly key: string
  readonly attempt: string
}

/** A key's record: the request it was claimed for and, once stored, the answer to replay. */
const StoredResponse = Schema.Struct({
  request_hash: Schema.String,
  status: Schema.NullOr(Schema.Number),
  response_headers: Schema.NullOr(Schema.Record(Schema.String, Schema.String)),
  response_body: Schema.NullOr(Schema.String)
})
export type StoredResponse = typeof StoredResponse.Type
const storedResponses = decodeRows(StoredResponse)

/** What a claim reads back when it took the key: the resource a committed create recorded on it, if any. */
const TakenClaim = Schema.Struct({ resource_id: Schema.NullOr(Schema.String) })
const takenClaims = decodeRows(TakenClaim)

export const idempotencyRecords = (options: { readonly leaseSeconds: number; readonly windowHours: number }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const lease = `${options.leaseSeconds} seconds`
    const window = `${options.windowHours} hours`
    const where = (held: HeldKey) =>
      sql`project_id = ${held.space} AND api_key_id = ${held.callerId} AND idempotency_key = ${held.key} AND attempt = ${held.attempt}`

    return {
      /**
       * Takes the key when it is new, past its window, or held by a request whose lease ran out
       * (its process died): one statement, so two racing requests cannot both take it. A claim
       * that records a committed create (resource_id) is taken over only by the same request,
       * which then gets that resource (src/store/keyed-create.ts); undefined when not taken.
       */
      claim: (held: HeldKey, requestHash: string) =>
        takenClaims(sql`
          INSERT INTO idempotency_records (project_id, api_key_id, idempotency_key, request_hash, locked_until, attempt)
          VALUES (${held.space}, ${held.callerId}, ${held.key}, ${requestHash}, now() + ${lease}::interval, ${held.attempt})
          ON CONFLICT (project_id, api_key_id, idempotency_key) DO UPDATE
            SET request_hash = EXCLUDED.request_hash, status = NULL, response_headers = NULL, response_body = NULL,
                resource_id = CASE WHEN idempotency_records.created_at < now() - ${window}::interval THEN NULL ELSE idempotency_records.resource_id END,
                created_at = now(), locked_until = EXCLUDED.locked_until, attempt = EXCLUDED.attempt
            WHERE idempotency_records.created_at < now() - ${window}::interval
               OR (idempotency_records.status IS NULL AND coalesce(idempotency_records.locked_until, idempotency_records.created_at) < now()
                   AND (idempotency_records.resource_id IS NULL OR idempotency_records.request_hash = EXCLUDED.request_hash))
          RETURNING resource_id`).pipe(Effect.map((rows) => rows[0])),

      find: (space: string, callerId: string, key: string) =>
        storedResponses(sql`
          SELECT request_hash, status, response_headers, response_body
          FROM idempotency_records
          WHERE project_id = ${space} AND api_key_id = ${callerId} AND idempotency_key = ${key}`).pipe(
          Effect.map((rows) => rows[0])
        ),

      /**
       * Frees the key for a retry. A claim that records a committed create stays (its lease ends
       * now), so the retry gets that resource instead of making a second one.
       */
      release: (held: HeldKey) =>
        sql`DELETE FROM idempotency_records WHERE ${where(held)} AND status IS NULL AND resource_id IS NULL`.pipe(
          Effect.andThen(sql`UPDATE idempotency_records SET locked_until = now() WHERE ${where(held)} AND status IS NULL`),
          Effect.orDie
        ),

      renew: (held: HeldKey) =>
        sql`UPDATE idempotency_records SET locked_until = now() + ${lease}::interval
            WHERE ${where(held)} AND status IS NULL`.pipe(Effect.ignore),

      /** Keeps the outcome; false when another attempt took the claim over (this one outlived its lease). */
      store: (held: HeldKey, status: number, headers: Record<string, string>, body: string) =>
        sql`UPDATE idempotency_records
            SET status = ${status}, response_headers = ${JSON.stringify(headers)}::jsonb, response_body = ${body},
                locked_until = NULL
            WHERE ${where(held)}
            RETURNING 1`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        )
    }
  })
