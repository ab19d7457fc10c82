/**
 * Project webhook endpoints in PostgreSQL (webhook_endpoints). Rows are decoded through
 * WebhookEndpointRow; the rules (URL checks, the limit) are the WebhookEndpoints service's
 * (src/webhooks/webhook-endpoints.ts).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { recordCreate } from "../store/keyed-create.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { ProjectId } from "../domain/run.ts"
import { WebhookEndpointId } from "../domain/id-schemas.ts"

export const WebhookEndpointRow = Schema.Struct({
  id: WebhookEndpointId,
  project_id: ProjectId,
  url: Schema.String,
  description: Schema.NullOr(Schema.String),
  created_at: Schema.Date
})
export type WebhookEndpointRow = typeof WebhookEndpointRow.Type
const WithSecret = Schema.Struct({ ...WebhookEndpointRow.fields, secret: Schema.String })
const decodeRow = Schema.decodeUnknownSync(WebhookEndpointRow)
const decodeWithSecret = Schema.decodeUnknownSync(WithSecret)
const decodeCount = Schema.decodeUnknownSync(Schema.Struct({ n: Schema.Number }))

const columns = "id, project_id, url, description, created_at"

export class EndpointStore extends Context.Service<EndpointStore, {
  /**
   * Inserts the endpoint unless the project already holds `limit` (the count and the insert under
   * one per-project lock, so concurrent creates cannot pass it); records it on the request's
   * Idempotency-Key claim in the same transaction. Undefined at the limit.
   */
  readonly insert: (projectId: ProjectId, input: {
    readonly id: WebhookEndpointId
    readonly url: string
    readonly secret: string
    readonly description: string | null
  }, limit: number) => Effect.Effect<WebhookEndpointRow | undefined>
  readonly list: (projectId: ProjectId, limit: number, beforeId?: string) => Effect.Effect<ReadonlyArray<WebhookEndpointRow>>
  readonly find: (projectId: ProjectId, id: WebhookEndpointId) => Effect.Effect<WebhookEndpointRow | undefined>
  readonly findWithSecret: (projectId: ProjectId, id: WebhookEndpointId) => Effect.Effect<(WebhookEndpointRow & { readonly secret: string }) | undefined>
  /** Whether there was one to delete. */
  readonly delete: (projectId: ProjectId, id: WebhookEndpointId) => Effect.Effect<boolean>
}>()("wa/webhooks/EndpointStore") {
  static readonly layer = Layer.effect(
    EndpointStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const cols = sql.literal(columns)
      return EndpointStore.of(withMethodSpans("EndpointStore", {
        insert: (projectId, input, limit) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`webhook_endpoints:${projectId}`}, 0))`
            const [count] = yield* sql`SELECT count(*)::int AS n FROM webhook_endpoints WHERE project_id = ${projectId}`
            if ((count === undefined ? 0 : decodeCount(count).n) >= limit) return undefined
            const [inserted] = yield* sql`
              INSERT INTO webhook_endpoints (id, project_id, url, secret, description)
              VALUES (${input.id}, ${projectId}, ${input.url}, ${input.secret}, ${input.description})
              RETURNING ${cols}`
            // Under an Idempotency-Key the claim records the endpoint in this transaction (src/store/keyed-create.ts).
            yield* recordCreate(sql, input.id)
            return decodeRow(inserted)
          })).pipe(Effect.orDie),
        list: (projectId, limit, beforeId) =>
          sql`
            SELECT ${cols} FROM webhook_endpoints
            WHERE project_id = ${projectId} ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
            ORDER BY id DESC LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map((row) => decodeRow(row))), Effect.orDie),
        find: (projectId, id) =>
          sql`SELECT ${cols} FROM webhook_endpoints WHERE project_id = ${projectId} AND id = ${id}`.pipe(
            Effect.map((rows) => rows[0] === undefined ? undefined : decodeRow(rows[0])),
            Effect.orDie
          ),
        findWithSecret: (projectId, id) =>
          sql`SELECT ${cols}, secret FROM webhook_endpoints WHERE project_id = ${projectId} AND id = ${id}`.pipe(
            Effect.map((rows) => rows[0] === undefined ? undefined : decodeWithSecret(rows[0])),
            Effect.orDie
          ),
        delete: (projectId, id) =>
          sql`DELETE FROM webhook_endpoints WHERE project_id = ${projectId} AND id = ${id} RETURNING id`.pipe(
            Effect.map((rows) => rows.length > 0),
            Effect.orDie
          )
      }))
    })
  )
}
