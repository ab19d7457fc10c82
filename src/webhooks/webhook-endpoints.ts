/**
 * Project webhook endpoints: the `global_webhook` notification channel. An endpoint is a URL and
 * its own Standard Webhooks secret (`whsec_` + base64 of 32 random bytes), shown once when it is
 * created; monitors name it by id. A project holds at most `MAX_WEBHOOK_ENDPOINTS`.
 *
 * The URL is checked like a `callback_url` when the endpoint is created (form, and a public
 * address unless private networks are allowed) and again by the dispatcher at every attempt.
 */
import { MAX_WEBHOOK_ENDPOINTS } from "../domain/limits.ts"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import { AppConfig } from "../config/config.ts"
import { InvalidField } from "../domain/errors.ts"
import { makeId } from "../domain/ids.ts"
import { earlierCreate, recordCreate } from "../store/keyed-create.ts"
import { validateCallbackUrl } from "./callback-url.ts"

/** Endpoints a project may hold. */
export { MAX_WEBHOOK_ENDPOINTS }

export interface WebhookEndpointRow {
  readonly id: string
  readonly project_id: string
  readonly url: string
  readonly description: string | null
  readonly created_at: Date
}

/** The project already holds `limit` endpoints. */
export class WebhookEndpointLimitReached extends Schema.TaggedError<WebhookEndpointLimitReached>()("WebhookEndpointLimitReached", {
  limit: Schema.Int
}) {}

/** A new signing secret, in the form Standard Webhooks libraries take. */
export const newWebhookSecret = () => `whsec_${randomBytes(32).toString("base64")}`

/**
 * Checks a target URL like a callback_url (src/webhooks/callback-url.ts), naming `field` (its
 * path in the request body) in the error.
 */
export const validateTargetUrl = (url: string, allowPrivate: boolean, field: ReadonlyArray<string>) => {
  const name = field.join(".")
  return validateCallbackUrl(url, allowPrivate).pipe(
    Effect.mapError((e) =>
      new InvalidField({
        field,
        detail: e.detail.replaceAll("callback_url", name),
        msg: e.msg.replaceAll("callback_url", name),
        type: e.type
      })
    )
  )
}

const columns = "id, project_id, url, description, created_at"

export class WebhookEndpoints extends Context.Service<WebhookEndpoints, {
  /** Creates an endpoint; the secret is returned here only. */
  readonly create: (projectId: string, input: { readonly url: string; readonly description: string | null }) => Effect.Effect<
    { readonly row: WebhookEndpointRow; readonly secret: string },
    InvalidField | WebhookEndpointLimitReached
  >
  /** Newest first, `limit` rows before the id `beforeId` (exclusive). */
  readonly list: (projectId: string, limit: number, beforeId?: string) => Effect.Effect<ReadonlyArray<WebhookEndpointRow>>
  readonly find: (projectId: string, id: string) => Effect.Effect<WebhookEndpointRow | undefined>
  /** The endpoint with its secret, for signing a delivery. */
  readonly findWithSecret: (projectId: string, id: string) => Effect.Effect<(WebhookEndpointRow & { readonly secret: string }) | undefined>
  /** Whether there was one to delete. */
  readonly delete: (projectId: string, id: string) => Effect.Effect<boolean>
}>()("wa/webhooks/WebhookEndpoints") {
  static readonly layer = Layer.effect(
    WebhookEndpoints,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const cols = sql.literal(columns)

      const create = Effect.fn("WebhookEndpoints.create")(function*(projectId: string, input: { readonly url: string; readonly description: string | null }) {
        yield* validateTargetUrl(input.url, config.allowPrivateNetworks, ["url"])
        // The retry of a keyed create whose first attempt committed before its process died gets that endpoint.
        const earlier = yield* earlierCreate((id) =>
          sql<WebhookEndpointRow & { secret: string }>`SELECT ${cols}, secret FROM webhook_endpoints WHERE project_id = ${projectId} AND id = ${id}`.pipe(
            Effect.orDie,
            Effect.map((rows) => rows[0] === undefined ? undefined : { row: rows[0] as WebhookEndpointRow, secret: rows[0].secret })
          ))
        if (earlier !== undefined) return earlier
        const id = makeId("wh")
        const secret = newWebhookSecret()
        // The count and the insert under one per-project lock: concurrent creates cannot pass the limit.
        const rows = yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`webhook_endpoints:${projectId}`}, 0))`
          const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_endpoints WHERE project_id = ${projectId}`
          if ((count?.n ?? 0) >= MAX_WEBHOOK_ENDPOINTS) return undefined
          const inserted = yield* sql<WebhookEndpointRow>`
            INSERT INTO webhook_endpoints (id, project_id, url, secret, description)
            VALUES (${id}, ${projectId}, ${input.url}, ${secret}, ${input.description})
            RETURNING ${cols}`
          // Under an Idempotency-Key the claim records the endpoint in this transaction (src/store/keyed-create.ts).
          yield* recordCreate(sql, id)
          return inserted
        })).pipe(Effect.orDie)
        if (rows === undefined) return yield* new WebhookEndpointLimitReached({ limit: MAX_WEBHOOK_ENDPOINTS })
        return { row: rows[0]!, secret }
      })

      return WebhookEndpoints.of({
        create,
        list: (projectId, limit, beforeId) =>
          sql<WebhookEndpointRow>`
            SELECT ${cols} FROM webhook_endpoints
            WHERE project_id = ${projectId} ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
            ORDER BY id DESC LIMIT ${limit}`.pipe(Effect.orDie),
        find: (projectId, id) =>
          sql<WebhookEndpointRow>`SELECT ${cols} FROM webhook_endpoints WHERE project_id = ${projectId} AND id = ${id}`.pipe(
            Effect.map((rows) => rows[0]),
            Effect.orDie
          ),
        findWithSecret: (projectId, id) =>
          sql<WebhookEndpointRow & { secret: string }>`
            SELECT ${cols}, secret FROM webhook_endpoints WHERE project_id = ${projectId} AND id = ${id}`.pipe(
            Effect.map((rows) => rows[0]),
            Effect.orDie
          ),
        delete: (projectId, id) =>
          sql<{ id: string }>`DELETE FROM webhook_endpoints WHERE project_id = ${projectId} AND id = ${id} RETURNING id`.pipe(
            Effect.map((rows) => rows.length > 0),
            Effect.orDie
          )
      })
    })
  )
}
