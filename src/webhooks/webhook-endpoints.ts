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
import { randomBytes } from "node:crypto"
import { AppConfig } from "../config/config.ts"
import { InvalidField, type WireBody } from "../domain/errors.ts"
import { makeId } from "../domain/ids.ts"
import { earlierCreate } from "../store/keyed-create.ts"
import { validateCallbackUrl } from "./callback-url.ts"
import { EndpointStore, WebhookEndpointRow } from "./endpoint-store.ts"
import { withMethodSpans } from "../observability/spans.ts"
import type { ProjectId } from "../domain/run.ts"
import { WebhookEndpointId } from "../domain/id-schemas.ts"

/** Endpoints a project may hold. */
export { MAX_WEBHOOK_ENDPOINTS }

export { WebhookEndpointRow }

/** The project already holds `limit` endpoints. */
export class WebhookEndpointLimitReached extends Schema.TaggedError<WebhookEndpointLimitReached>()("WebhookEndpointLimitReached", {
  limit: Schema.Int
}) {
  get httpStatus() { return 409 as const }
  get code() { return "webhook_endpoint_limit_reached" }
  wire(): WireBody {
    return { detail: `this project already has ${this.limit} webhook endpoints; delete one first`, extra: { limit: this.limit } }
  }
}

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

export class WebhookEndpoints extends Context.Service<WebhookEndpoints, {
  /** Creates an endpoint; the secret is returned here only. */
  readonly create: (projectId: ProjectId, input: { readonly url: string; readonly description: string | null }) => Effect.Effect<
    { readonly row: WebhookEndpointRow; readonly secret: string },
    InvalidField | WebhookEndpointLimitReached
  >
  /** Newest first, `limit` rows before the id `beforeId` (exclusive). */
  readonly list: (projectId: ProjectId, limit: number, beforeId?: string) => Effect.Effect<ReadonlyArray<WebhookEndpointRow>>
  readonly find: (projectId: ProjectId, id: WebhookEndpointId) => Effect.Effect<WebhookEndpointRow | undefined>
  /** The endpoint with its secret, for signing a delivery. */
  readonly findWithSecret: (projectId: ProjectId, id: WebhookEndpointId) => Effect.Effect<(WebhookEndpointRow & { readonly secret: string }) | undefined>
  /** Whether there was one to delete. */
  readonly delete: (projectId: ProjectId, id: WebhookEndpointId) => Effect.Effect<boolean>
}>()("wa/webhooks/WebhookEndpoints") {
  static readonly layer = Layer.effect(
    WebhookEndpoints,
    Effect.gen(function*() {
      const store = yield* EndpointStore
      const config = yield* AppConfig

      const create = Effect.fn("WebhookEndpoints.create")(function*(projectId: ProjectId, input: { readonly url: string; readonly description: string | null }) {
        yield* validateTargetUrl(input.url, config.allowPrivateNetworks, ["url"])
        // The retry of a keyed create whose first attempt committed before its process died gets that endpoint.
        const earlier = yield* earlierCreate((id) =>
          store.findWithSecret(projectId, WebhookEndpointId.make(id)).pipe(
            Effect.map((found) => {
              if (found === undefined) return undefined
              const { secret, ...row } = found
              return { row, secret }
            })
          ))
        if (earlier !== undefined) return earlier
        const id = makeId("wh")
        const secret = newWebhookSecret()
        const row = yield* store.insert(projectId, { id, url: input.url, secret, description: input.description }, MAX_WEBHOOK_ENDPOINTS)
        if (row === undefined) return yield* new WebhookEndpointLimitReached({ limit: MAX_WEBHOOK_ENDPOINTS })
        return { row, secret }
      })

      return WebhookEndpoints.of({
        ...withMethodSpans("WebhookEndpoints", {
          list: store.list,
          find: store.find,
          findWithSecret: store.findWithSecret,
          delete: store.delete
        }),
        create
      })
    })
  ).pipe(Layer.provide(EndpointStore.layer))
}
