/**
 * Idempotency-Key on writes: the first response (status, body, ids) is kept for 24 hours and
 * replayed for the same key; the same key while the first request is still running gets 409, and
 * the same key with a different request gets 422. Keys are scoped to project and API key.
 * Server errors (5xx) and interrupted requests are not kept, so a retry runs again.
 */
import { Effect, Exit, Layer } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { conflict, statusOf, validationError } from "../../domain/errors.ts"
import { CurrentKey, Idempotency } from "../api/security.ts"

export const IDEMPOTENCY_WINDOW_HOURS = 24
const writeMethods = new Set(["POST", "PUT", "PATCH", "DELETE"])
const replayedHeaders = ["content-type", "location"]

interface StoredResponse {
  readonly request_hash: string
  readonly status: number | null
  readonly response_headers: Record<string, string> | null
  readonly response_body: string | null
  readonly expired: boolean
}

export const IdempotencyLive = Layer.effect(
  Idempotency,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const claim = (scope: CurrentKey["Service"], key: string, requestHash: string) =>
      sql<{ claimed: boolean }>`
        INSERT INTO idempotency_records (project_id, api_key_id, idempotency_key, request_hash)
        VALUES (${scope.projectId}, ${scope.keyId}, ${key}, ${requestHash})
        ON CONFLICT DO NOTHING
        RETURNING true AS claimed`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    const find = (scope: CurrentKey["Service"], key: string) =>
      sql<StoredResponse>`
        SELECT request_hash, status, response_headers, response_body,
               created_at < now() - ${`${IDEMPOTENCY_WINDOW_HOURS} hours`}::interval AS expired
        FROM idempotency_records
        WHERE project_id = ${scope.projectId} AND api_key_id = ${scope.keyId} AND idempotency_key = ${key}`.pipe(
        Effect.map((rows) => rows[0]),
        Effect.orDie
      )

    const release = (scope: CurrentKey["Service"], key: string) =>
      sql`DELETE FROM idempotency_records
          WHERE project_id = ${scope.projectId} AND api_key_id = ${scope.keyId} AND idempotency_key = ${key}`.pipe(
        Effect.orDie
      )

    const store = (scope: CurrentKey["Service"], key: string, status: number, headers: Record<string, string>, body: string) =>
      sql`UPDATE idempotency_records
          SET status = ${status}, response_headers = ${JSON.stringify(headers)}::jsonb, response_body = ${body}
          WHERE project_id = ${scope.projectId} AND api_key_id = ${scope.keyId} AND idempotency_key = ${key}`.pipe(
        Effect.orDie
      )

    return Idempotency.of(Effect.fnUntraced(function*(httpEffect) {
      const request = yield* HttpServerRequest.HttpServerRequest
      const key = request.headers["idempotency-key"]
      if (key === undefined || !writeMethods.has(request.method)) return yield* httpEffect
      if (key.length < 1 || key.length > 255) {
        return yield* validationError("Idempotency-Key must be 1 to 255 characters", [
          { loc: ["header", "Idempotency-Key"], msg: "must be 1 to 255 characters", type: "string_length" }
        ])
      }
      const scope = yield* CurrentKey
      const body = yield* Effect.orElseSucceed(request.text, () => "")
      const requestHash = createHash("sha256").update(`${request.method} ${request.url}\n${body}`).digest("hex")

      let claimed = yield* claim(scope, key, requestHash)
      if (!claimed) {
        const existing = yield* find(scope, key)
        if (existing === undefined || existing.expired) {
          // Gone or past the 24 h window: this request starts afresh.
          if (existing !== undefined) yield* release(scope, key)
          claimed = yield* claim(scope, key, requestHash)
          if (!claimed) return yield* conflict("a request with this Idempotency-Key is in flight")
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

      // An interrupted request (client gone, shutdown) frees the key, so a retry is not stuck on 409.
      const exit = yield* Effect.exit(httpEffect).pipe(Effect.onInterrupt(() => release(scope, key)))
      if (Exit.isSuccess(exit)) {
        const response = exit.value
        const responseBody = response.body
        if (response.status < 500 && responseBody._tag === "Uint8Array") {
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
      if (failure !== undefined && status !== undefined && status < 500) {
        const { code, detail, extra } = failure.error as unknown as { code: string; detail: string; extra: unknown }
        yield* store(scope, key, status, { "content-type": "application/json" }, JSON.stringify({ code, detail, extra }))
      } else {
        yield* release(scope, key)
      }
      return yield* exit
    }))
  })
)
