/**
 * Idempotency-Key on writes: the first response (status, body, ids) is kept for 24 hours and
 * replayed for the same key; the same key while the first request is still running gets 409, and
 * the same key with a different request gets 422. Keys are scoped to project and API key.
 *
 * - A claim is a lease (WA_IDEMPOTENCY_LEASE_SECONDS) that the running request renews: a process
 *   that dies mid-request leaves a claim that expires within one lease and is taken over by the
 *   next request with that key, instead of answering 409 for 24 hours.
 * - Secrets (`secret_token`, `notify_secret`, ...) are never stored: the replay carries them as
 *   null, so the secret exists only in the first response.
 * - Server errors (5xx), 429s (retry later) and interrupted requests are not kept, so a retry runs
 *   again.
 */
import { Effect, Exit, Fiber, Layer, Schedule } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { AppConfig } from "../../config/config.ts"
import { conflict, statusOf, validationError } from "../errors.ts"
import { CurrentCaller, Idempotency } from "../api/security.ts"

export const IDEMPOTENCY_WINDOW_HOURS = 24
const writeMethods = new Set(["POST", "PUT", "PATCH", "DELETE"])
const replayedHeaders = ["content-type", "location"]
/** Response fields that hold secrets shown once; a replay shows them as null. */
const secretFields = new Set(["secret_token", "notify_secret", "webhook_secret", "secret"])

/** The response body as it may be stored: every secret field set to null. */
export const redactSecrets = (body: string): string => {
  if (![...secretFields].some((field) => body.includes(`"${field}"`))) return body
  try {
    return JSON.stringify(JSON.parse(body), (key, value) => secretFields.has(key) && value !== null ? null : value)
  } catch {
    return body
  }
}

/** Statuses whose response is not the outcome of the request, so a retry must run it again. */
const replayable = (status: number) => status < 500 && status !== 429

interface StoredResponse {
  readonly request_hash: string
  readonly status: number | null
  readonly response_headers: Record<string, string> | null
  readonly response_body: string | null
}

export const IdempotencyLive = Layer.effect(
  Idempotency,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { idempotencyLeaseSeconds } = yield* AppConfig
    const lease = `${idempotencyLeaseSeconds} seconds`
    const window = `${IDEMPOTENCY_WINDOW_HOURS} hours`

    // Takes the key when it is new, past its 24 h window, or held by a request whose lease ran out
    // (its process died): one statement, so two racing requests cannot both take it.
    const claim = (scope: CurrentCaller["Service"], key: string, requestHash: string) =>
      sql<{ claimed: boolean }>`
        INSERT INTO idempotency_records (project_id, api_key_id, idempotency_key, request_hash, locked_until)
        VALUES (${scope.space}, ${scope.id}, ${key}, ${requestHash}, now() + ${lease}::interval)
        ON CONFLICT (project_id, api_key_id, idempotency_key) DO UPDATE
          SET request_hash = EXCLUDED.request_hash, status = NULL, response_headers = NULL, response_body = NULL,
              created_at = now(), locked_until = EXCLUDED.locked_until
          WHERE idempotency_records.created_at < now() - ${window}::interval
             OR (idempotency_records.status IS NULL AND coalesce(idempotency_records.locked_until, idempotency_records.created_at) < now())
        RETURNING true AS claimed`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    const find = (scope: CurrentCaller["Service"], key: string) =>
      sql<StoredResponse>`
        SELECT request_hash, status, response_headers, response_body
        FROM idempotency_records
        WHERE project_id = ${scope.space} AND api_key_id = ${scope.id} AND idempotency_key = ${key}`.pipe(
        Effect.map((rows) => rows[0]),
        Effect.orDie
      )

    const release = (scope: CurrentCaller["Service"], key: string) =>
      sql`DELETE FROM idempotency_records
          WHERE project_id = ${scope.space} AND api_key_id = ${scope.id} AND idempotency_key = ${key}
            AND status IS NULL`.pipe(Effect.orDie)

    const renew = (scope: CurrentCaller["Service"], key: string) =>
      sql`UPDATE idempotency_records SET locked_until = now() + ${lease}::interval
          WHERE project_id = ${scope.space} AND api_key_id = ${scope.id} AND idempotency_key = ${key}
            AND status IS NULL`.pipe(Effect.ignore)

    const store = (scope: CurrentCaller["Service"], key: string, status: number, headers: Record<string, string>, body: string) =>
      sql`UPDATE idempotency_records
          SET status = ${status}, response_headers = ${JSON.stringify(headers)}::jsonb, response_body = ${redactSecrets(body)},
              locked_until = NULL
          WHERE project_id = ${scope.space} AND api_key_id = ${scope.id} AND idempotency_key = ${key}`.pipe(
        Effect.orDie
      )

    const withIdempotency = <E, R>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const key = request.headers["idempotency-key"]
        if (key === undefined) return yield* httpEffect
        if (key.length < 1 || key.length > 255) {
          return yield* validationError("Idempotency-Key must be 1 to 255 characters", [
            { loc: ["header", "Idempotency-Key"], msg: "must be 1 to 255 characters", type: "string_length" }
          ])
        }
        const scope = yield* CurrentCaller
        const body = yield* Effect.orElseSucceed(request.text, () => "")
        const requestHash = createHash("sha256").update(`${request.method} ${request.url}\n${body}`).digest("hex")

        if (!(yield* claim(scope, key, requestHash))) {
          const existing = yield* find(scope, key)
          if (existing === undefined) {
            // Released between the two statements: the request that held it failed; one more try.
            if (!(yield* claim(scope, key, requestHash))) return yield* conflict("a request with this Idempotency-Key is in flight")
          } else if (existing.request_hash !== requestHash) {
            return yield* validationError("Idempotency-Key was already used with a different request", [
              { loc: ["header", "Idempotency-Key"], msg: "reused with a different method, path or body", type: "idempotency_key_reused" }
            ])
          } else if (existing.status === null) {
            return yield* conflict("a request with this Idempotency-Key is still in flight", { idempotency_key: key })
          } else {
            return HttpServerResponse.text(existing.response_body ?? "", {
              status: existing.status,
              headers: { ...existing.response_headers, "idempotent-replayed": "true" }
            })
          }
        }

        // The claim is renewed while the request runs; an interrupted request (client gone, shutdown)
        // frees the key, so a retry is not stuck on 409.
        const renewal = yield* renew(scope, key).pipe(
          Effect.repeat(Schedule.spaced(`${Math.max(1, idempotencyLeaseSeconds / 3)} seconds`)),
          Effect.delay(`${Math.max(1, idempotencyLeaseSeconds / 3)} seconds`),
          Effect.forkChild
        )
        const exit = yield* Effect.exit(httpEffect).pipe(
          Effect.onInterrupt(() => release(scope, key)),
          Effect.ensuring(Fiber.interrupt(renewal))
        )
        if (Exit.isSuccess(exit)) {
          const response = exit.value
          const responseBody = response.body
          if (replayable(response.status) && responseBody._tag === "Uint8Array") {
            const headers: Record<string, string> = {}
            for (const name of replayedHeaders) {
              const value = response.headers[name]
              if (value !== undefined) headers[name] = value
            }
            headers["content-type"] ??= responseBody.contentType
            yield* store(scope, key, response.status, headers, new TextDecoder().decode(responseBody.body))
          } else {
            yield* release(scope, key)
          }
          return response
        }
        // A typed 4xx is part of the outcome and replays too; anything else lets the client retry.
        const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
        const status = failure === undefined ? undefined : statusOf(failure.error)
        if (failure !== undefined && status !== undefined && replayable(status)) {
          const { code, detail, extra } = failure.error as unknown as { code: string; detail: string; extra: unknown }
          yield* store(scope, key, status, { "content-type": "application/json" }, JSON.stringify({ code, detail, extra }))
        } else {
          yield* release(scope, key)
        }
        return yield* exit
      })

    // Reads never take part: their endpoints get the handler unwrapped, decided once per route.
    return Idempotency.of((httpEffect, { endpoint }) => writeMethods.has(endpoint.method) ? withIdempotency(httpEffect) : httpEffect)
  })
)
