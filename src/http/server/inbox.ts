import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { WebAgentApi } from "../api/api.ts"

export const InboxHandlers = HttpApiBuilder.group(WebAgentApi, "inbox", (handlers) => Effect.succeed(handlers))
