/**
 * DoAnything artifacts on the wire: an artifact with its replay URL, and their list
 * (src/http/api/recordings.ts).
 */
import { Schema } from "effect"
import { ArtifactResponse } from "./deep-research.ts"

export const DoAnythingArtifactResponse = Schema.Struct({
  ...ArtifactResponse.fields,
  /** The replay page of a recording (a signed path, no API key needed); null for other artifacts. */
  replay_url: Schema.NullOr(Schema.String),
  replay_url_expires_at: Schema.NullOr(Schema.String)
})

export const DoAnythingArtifactList = Schema.Struct({ items: Schema.Array(DoAnythingArtifactResponse), next_cursor: Schema.NullOr(Schema.String) })
