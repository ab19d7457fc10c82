/** Track monitors (Convention A and B). Placeholder until built. */
import { HttpApiGroup } from "effect/http-api"

export class TrackApi extends HttpApiGroup.make("track").prefix("/v1/projects/:pid/track") {}
export class TrackFlatApi extends HttpApiGroup.make("track_flat").prefix("/api/v1/projects/:pid/track") {}
