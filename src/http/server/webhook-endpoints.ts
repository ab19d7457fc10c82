import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { WebAgentApi } from "../api/api.ts"

export const WebhookEndpointsHandlers = HttpApiBuilder.group(WebAgentApi, "webhook_endpoints", (handlers) => Effect.succeed(handlers))
