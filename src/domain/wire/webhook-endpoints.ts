/**
 * Project webhook endpoints on the wire: an endpoint, the one a create answers (with its secret
 * once), the create body and the list (src/http/api/webhook-endpoints.ts).
 */
import { Schema } from "effect"
import { CALLBACK_URL_MAX_LENGTH, callbackUrlFormProblem } from "../callback-url.ts"
import { MaxString, OptionalNullable, Timestamp } from "../schemas.ts"
import { secretField } from "./common.ts"

/** The endpoint's URL: the form rules of a callback_url, named `url` in the messages. */
export const WebhookUrl = MaxString(CALLBACK_URL_MAX_LENGTH).check(
  Schema.makeFilter((url: string) => callbackUrlFormProblem(url)?.replaceAll("callback_url", "url") ?? true, {
    expected: "an absolute http or https URL",
    toJsonSchema: () => [{ pattern: "^[hH][tT][tT][pP][sS]?://" }, true]
  })
).annotate({ format: "uri" })

export const WebhookEndpointResponse = Schema.Struct({
  id: Schema.String.annotate({ description: "wh_...; a monitor's notify_channel {kind: global_webhook, webhook_id} names it" }),
  url: Schema.String,
  description: Schema.NullOr(Schema.String),
  created_at: Timestamp
})

export const WebhookEndpointCreatedResponse = Schema.Struct({
  ...WebhookEndpointResponse.fields,
  secret: secretField(Schema.String, "whsec_... Standard Webhooks secret that signs this endpoint's deliveries")
})

export const CreateWebhookEndpointRequest = Schema.Struct({
  url: WebhookUrl,
  description: OptionalNullable(MaxString(500))
})

export const WebhookEndpointListResponse = Schema.Struct({ items: Schema.Array(WebhookEndpointResponse), next_cursor: Schema.NullOr(Schema.String) })
