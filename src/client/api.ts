/**
 * The part of the contract the SDK calls: the product groups of src/http/api/api.ts, the same
 * definitions the server is built from, so the typed client follows every change of a route or a
 * schema. (The whole WebAgentApi would also pull in the operator groups, metrics and the
 * recording replay page, which import the server's browser pool.)
 */
import { HttpApi } from "effect/http-api"
import { BillingApi } from "../http/api/billing.ts"
import { DeepResearchApi } from "../http/api/deep-research.ts"
import { DoAnythingApi } from "../http/api/do-anything.ts"
import { ProfilesApi } from "../http/api/profiles.ts"
import { TrackApi } from "../http/api/track.ts"
import { WebSearchApi } from "../http/api/web-search.ts"

export class ClientApi extends HttpApi.make("web-agent-service")
  .add(DoAnythingApi)
  .add(DeepResearchApi)
  .add(WebSearchApi)
  .add(TrackApi)
  .add(ProfilesApi)
  .add(BillingApi)
{}

export type { CreateRunRequest, RunResponse, SessionResponse } from "../domain/wire/do-anything.ts"
