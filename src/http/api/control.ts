/**
 * Take control: the control page a take-control URL opens (no API key: the signed `exp` and `sig`
 * of the URL are the credential, for this one run only). Its WebSocket, `GET /v1/control/{grant}/ws`,
 * is served beside the API (src/http/server/control.ts), not through this contract.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Forbidden } from "../../domain/api-errors.ts"
import { ControlPageQuery } from "../../domain/wire/control.ts"
import { ControlGrantIdParam } from "./schemas.ts"

export class ControlApi extends HttpApiGroup.make("control")
  .add(
    HttpApiEndpoint.get("controlPage", "/v1/control/:grant", {
      params: { grant: ControlGrantIdParam },
      query: ControlPageQuery,
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" })),
      error: Forbidden
    }).annotate(
      OpenApi.Description,
      "The control page of a take-control URL (standalone_control_url of run.take_control_pending): the agent's page live, " +
        "with the person's mouse, wheel and keyboard forwarded, and a release button. It connects to `GET /v1/control/{grant}/ws` (same query) " +
        "(WebSocket); that connection pauses the run (run.user_paused). 403 control_url_invalid for a URL that is not ours " +
        "(tampered, or of another service); 403 control_url_expired once the URL expired, was refreshed, or its control ended."
    )
  )
  .annotateMerge(OpenApi.annotations({ title: "Take control", description: "Signed control pages for people (no API key needed)." }))
{}
