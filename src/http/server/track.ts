import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { WebAgentApi } from "../api/api.ts"

export const TrackHandlers = HttpApiBuilder.group(WebAgentApi, "track", (handlers) => Effect.succeed(handlers))
export const TrackFlatHandlers = HttpApiBuilder.group(WebAgentApi, "track_flat", (handlers) => Effect.succeed(handlers))
