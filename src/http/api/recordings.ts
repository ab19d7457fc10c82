/**
 * Artifacts of DoAnything runs (today: the run's recording) under both conventions, and the
 * recordings' replay pages: signed, short-lived URLs that work without an API key.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Forbidden, NotFound } from "../../domain/api-errors.ts"
import { ArtifactId } from "../../domain/id-schemas.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { replayAssetNames } from "../../domain/recording.ts"
import { DoAnythingArtifactList } from "../../domain/wire/recordings.ts"
import { SignedUrlQuery } from "../../domain/wire/common.ts"
import { MaxString, ProjectIdParam, RunIdParam, SessionIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const ArtifactContent = Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "application/json" }))
const Html = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" }))
/** An artifact id in a path, decoded as the branded ArtifactId (on the wire the same string, at most 64 characters). */
const ArtifactIdParam = ArtifactId.check(Schema.isMaxCodePoints(64))

const contentDescription = "The artifact's content. A recording is JSON `{format: \"rrweb/2\", run_id, events: [rrweb events], " +
  "event_count, truncated}`, stored gzip-compressed: sent with `Content-Encoding: gzip` to clients that accept it, " +
  "decompressed otherwise."

/**
 * The JSON the artifact endpoints send (today every artifact is a recording): the generator shows
 * the bytes as a binary string, but under application/json the schema describes the parsed body.
 */
const recordingDocument = {
  type: "object",
  properties: {
    format: { type: "string", const: "rrweb/2" },
    run_id: { type: "string" },
    events: { type: "array", items: { type: "object" }, description: "rrweb events, in the order recorded" },
    event_count: { type: "integer", minimum: 0 },
    truncated: { type: "boolean", description: "the recording reached its size limit and stopped" }
  },
  required: ["format", "run_id", "events", "event_count", "truncated"]
}
const withRecordingSchema = (operation: Record<string, any>): Record<string, any> => {
  const json = operation["responses"]?.["200"]?.["content"]?.["application/json"]
  if (json !== undefined) json["schema"] = recordingDocument
  return operation
}

const sessionRun = { ...ProjectIdParam, sid: SessionIdParam, rid: RunIdParam }
const flatRun = { ...ProjectIdParam, rid: RunIdParam }

export class DoAnythingArtifactsApi extends HttpApiGroup.make("do_anything_artifacts")
  .add(
    HttpApiEndpoint.get("listArtifacts", "/v1/projects/:pid/do_anything/sessions/:sid/runs/:rid/artifacts", {
      params: sessionRun,
      query: PageQuery,
      success: DoAnythingArtifactList,
      error: [BadRequest, NotFound]
    }).annotate(OpenApi.Description, "The run's artifacts: `recording.json` once a run with recording.enabled has ended."),
    HttpApiEndpoint.get("getArtifact", "/v1/projects/:pid/do_anything/sessions/:sid/runs/:rid/artifacts/:aid", {
      params: { ...sessionRun, aid: ArtifactIdParam },
      success: ArtifactContent,
      error: NotFound
    }).annotate(OpenApi.Description, contentDescription).annotate(OpenApi.Transform, withRecordingSchema),
    HttpApiEndpoint.get("listFlatArtifacts", "/api/v1/projects/:pid/do_anything/runs/:rid/artifacts", {
      params: flatRun,
      query: PageQuery,
      success: DoAnythingArtifactList,
      error: [BadRequest, NotFound]
    }).annotate(OpenApi.Description, "The run's artifacts (Convention B)."),
    HttpApiEndpoint.get("getFlatArtifact", "/api/v1/projects/:pid/do_anything/runs/:rid/artifacts/:aid", {
      params: { ...flatRun, aid: ArtifactIdParam },
      success: ArtifactContent,
      error: NotFound
    }).annotate(OpenApi.Description, contentDescription).annotate(OpenApi.Transform, withRecordingSchema)
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({
    title: "DoAnything artifacts",
    description: "Files a DoAnything run produced. A run created with `recording: {enabled: true}` is recorded " +
      "(rrweb DOM recording of the agent's active tab) and, once it ends, has the artifact `recording.json`; " +
      "the run's `recording` field carries its artifact id and a replay URL."
  }))
{}

/** The replay page's styles (rrweb.css, replay.css) are sent as text/css beside its scripts, so the 200 declares both. */
const withStyles = (operation: Record<string, any>) => {
  const ok = operation["responses"]?.["200"]
  if (ok?.["content"] !== undefined) ok["content"]["text/css"] ??= { schema: { type: "string" } }
  return operation
}

export class RecordingReplayApi extends HttpApiGroup.make("recording_replay")
  .add(
    HttpApiEndpoint.get("replayPage", "/v1/recordings/:aid/replay", {
      params: { aid: ArtifactIdParam },
      query: SignedUrlQuery,
      success: Html,
      error: [NotFound, Forbidden]
    }).annotate(
      OpenApi.Description,
      "The replay page of a recording (HTML, served by the service, no CDN): plays the recorded pages with " +
        "play/pause, restart, speed and seek. Get the URL from the run's `recording.replay_url` or the artifact list; " +
        "it expires after about 15 minutes (403 url_expired; an altered URL is 403 invalid_signature)."
    ),
    HttpApiEndpoint.get("replayEvents", "/v1/recordings/:aid/events", {
      params: { aid: ArtifactIdParam },
      query: SignedUrlQuery,
      success: ArtifactContent,
      error: [NotFound, Forbidden]
    }).annotate(OpenApi.Description, `The recording the replay page plays, with the page's signature. ${contentDescription}`)
      .annotate(OpenApi.Transform, withRecordingSchema),
    HttpApiEndpoint.get("replayAsset", "/v1/recording_assets/:file", {
      params: { file: MaxString(64) },
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/javascript" })),
      error: NotFound
    }).annotate(OpenApi.Description, `Scripts and styles of the replay page (rrweb's replayer from the installed package, and the page's own): ${replayAssetNames.join(", ")}.`)
      .annotate(OpenApi.Transform, withStyles)
  )
  .annotateMerge(OpenApi.annotations({ title: "Recording replay", description: "Signed, short-lived replay pages (no API key needed)." }))
{}
