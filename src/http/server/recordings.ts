/**
 * Handlers of DoAnything run artifacts (both conventions) and of the recordings' replay pages
 * (src/http/api/recordings.ts). The recording is stored gzip-compressed and sent as stored to
 * clients that accept gzip.
 */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { gunzipSync } from "node:zlib"
import { Sessions } from "../../do-anything/service.ts"
import type { RunId, SessionId } from "../../domain/run.ts"
import type { ArtifactId } from "../../domain/id-schemas.ts"
import { REPLAY_PAGE_DIRECTIVES, replayAsset, replayHtml } from "../../recordings/replay-page.ts"
import { type ArtifactBody, type ArtifactRow, Recordings } from "../../recordings/service.ts"
import { pageSecurityHeaders } from "../page-security.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { httpErrors } from "../domain-errors.ts"
import { notFound } from "../errors.ts"
import { DEFAULT_LIMIT, decodeCursor, toPage } from "../pagination.ts"

const artifactNotFound = (aid: string) => notFound("artifact_not_found", `no artifact ${aid} in this run`)

/** The stored body as a response: compressed bytes as they are when the client takes gzip. */
const bodyResponse = (request: HttpServerRequest.HttpServerRequest, artifact: ArtifactBody, headers: Record<string, string> = {}) => {
  const { row, body } = artifact
  if (typeof body === "string") return HttpServerResponse.text(body, { contentType: row.content_type, headers })
  const acceptsGzip = /\bgzip\b/i.test(request.headers["accept-encoding"] ?? "")
  if (row.content_encoding === "gzip" && acceptsGzip) {
    return HttpServerResponse.uint8Array(body, { contentType: row.content_type, headers: { ...headers, "content-encoding": "gzip", vary: "accept-encoding" } })
  }
  const plain = row.content_encoding === "gzip" ? new Uint8Array(gunzipSync(body)) : body
  return HttpServerResponse.uint8Array(plain, { contentType: row.content_type, headers: { ...headers, vary: "accept-encoding" } })
}

export const DoAnythingArtifactsHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "do_anything_artifacts",
  Effect.fn(function*(handlers) {
    const sessions = yield* Sessions
    const recordings = yield* Recordings
    const findRun = (rid: RunId, sid?: SessionId) => CurrentKey.use(({ projectId }) => httpErrors(sessions.findRun(projectId, rid, sid)))
    const view = (row: ArtifactRow) =>
      Effect.map(recordings.replayUrl(row), (signed) => ({
        id: row.id,
        run_id: row.run_id,
        name: row.name,
        content_type: row.content_type,
        size_bytes: row.size_bytes,
        created_at: row.created_at.toISOString(),
        replay_url: signed?.url ?? null,
        replay_url_expires_at: signed?.expiresAt.toISOString() ?? null
      }))
    const list = (query: { readonly limit?: number | undefined; readonly cursor?: string | undefined }, rid: RunId, sid?: SessionId) =>
      Effect.gen(function*() {
        const limit = query.limit ?? DEFAULT_LIMIT
        const before = yield* decodeCursor(query.cursor)
        const run = yield* findRun(rid, sid)
        const page = toPage(yield* recordings.artifacts(run.id, { limit: limit + 1, before }), limit)
        return { items: yield* Effect.forEach(page.items, view), next_cursor: page.next_cursor }
      })
    const get = (request: HttpServerRequest.HttpServerRequest, aid: ArtifactId, rid: RunId, sid?: SessionId) =>
      Effect.gen(function*() {
        const run = yield* findRun(rid, sid)
        const artifact = yield* recordings.artifact(run.id, aid)
        if (artifact === undefined) return yield* artifactNotFound(aid)
        return bodyResponse(request, artifact)
      })
    return handlers
      .handle("listArtifacts", ({ params, query }) => list(query, params.rid, params.sid))
      .handle("getArtifact", ({ params, request }) => get(request, params.aid, params.rid, params.sid))
      .handle("listFlatArtifacts", ({ params, query }) => list(query, params.rid))
      .handle("getFlatArtifact", ({ params, request }) => get(request, params.aid, params.rid))
  })
)

export const RecordingReplayHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "recording_replay",
  Effect.fn(function*(handlers) {
    const recordings = yield* Recordings
    /** The recording a signed URL names (403 when the signature is wrong or expired). */
    const signedRecording = (aid: ArtifactId, expires: number, signature: string) =>
      Effect.gen(function*() {
        const artifact = yield* httpErrors(recordings.replay(aid, expires, signature))
        if (artifact === undefined) return yield* notFound("recording_not_found", "no such recording")
        return artifact
      })
    const pageHeaders = {
      ...pageSecurityHeaders({ directives: REPLAY_PAGE_DIRECTIVES, frameAncestors: "self" }),
      "cache-control": "private, no-store"
    }
    return handlers
      .handle("replayPage", ({ params, query }) =>
        Effect.map(signedRecording(params.aid, query.expires, query.signature), (artifact) =>
          HttpServerResponse.text(replayHtml(artifact.row.id, artifact.row.run_id, `expires=${query.expires}&signature=${encodeURIComponent(query.signature)}`), {
            contentType: "text/html; charset=utf-8",
            headers: pageHeaders
          })))
      .handle("replayEvents", ({ params, query, request }) =>
        Effect.map(signedRecording(params.aid, query.expires, query.signature), (artifact) =>
          bodyResponse(request, artifact, { "x-content-type-options": "nosniff", "cache-control": "private, max-age=900" })))
      .handle("replayAsset", ({ params }) =>
        Effect.gen(function*() {
          const asset = replayAsset(params.file)
          if (asset === undefined) return yield* notFound("not_found", `no replay asset ${params.file}`)
          return HttpServerResponse.text(asset.body, {
            contentType: asset.contentType,
            headers: { "x-content-type-options": "nosniff", "cache-control": "public, max-age=3600" }
          })
        }))
  })
)
