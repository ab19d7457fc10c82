/**
 * Recordings: what the API shows of a DoAnything run's artifacts and recording. It owns the rule
 * that an artifact which is a run's recording (RECORDING_ARTIFACT_NAME) carries a fresh signed
 * replay URL (src/recordings/replay-links.ts), and that a replay URL opens only a recording, only
 * while its signature holds. The artifacts themselves are the run store's (src/store/artifacts.ts).
 */
import { Context, Effect, Layer } from "effect"
import { InvalidSignature, SignedUrlExpired } from "../domain/errors.ts"
import type { ArtifactId } from "../domain/id-schemas.ts"
import type { RunId } from "../domain/run.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { type ArtifactBody, type ArtifactRow, ArtifactStore } from "../store/artifacts.ts"
import { RECORDING_ARTIFACT_NAME } from "./recorder.ts"
import { RecordingLinks, type SignedReplayUrl } from "./replay-links.ts"

export type { ArtifactBody, ArtifactRow, SignedReplayUrl }


export class Recordings extends Context.Service<Recordings, {
  /** The run's artifacts, newest first; with `page`, at most `limit` of them before the id `before`. */
  readonly artifacts: (runId: RunId, page: { readonly limit: number; readonly before: string | undefined }) => Effect.Effect<ReadonlyArray<ArtifactRow>>
  /** One artifact of the run with its stored body (undefined when the run has no such artifact). */
  readonly artifact: (runId: RunId, artifactId: ArtifactId) => Effect.Effect<ArtifactBody | undefined>
  /** A fresh replay URL when the artifact is a recording; undefined for any other artifact. */
  readonly replayUrl: (row: ArtifactRow) => Effect.Effect<SignedReplayUrl | undefined>
  /** The run's stored recording with a fresh replay URL; undefined until it is stored. */
  readonly ofRun: (runId: RunId) => Effect.Effect<{ readonly row: ArtifactRow; readonly replay: SignedReplayUrl } | undefined>
  /** The recording a signed replay URL names, once its signature and expiry are checked (undefined: no such recording). */
  readonly replay: (artifactId: ArtifactId, expires: number, signature: string) => Effect.Effect<ArtifactBody | undefined, InvalidSignature | SignedUrlExpired>
}>()("wa/recordings/Recordings") {
  static readonly layer = Layer.effect(
    Recordings,
    Effect.gen(function*() {
      const store = yield* ArtifactStore
      const links = yield* RecordingLinks
      return Recordings.of(withMethodSpans("Recordings", {
        artifacts: (runId: RunId, page: { readonly limit: number; readonly before: string | undefined }) => store.list(runId, page),
        artifact: (runId: RunId, artifactId: ArtifactId) => store.body(artifactId, runId),
        replayUrl: (row: ArtifactRow) => row.name === RECORDING_ARTIFACT_NAME ? links.sign(row.id) : Effect.succeed(undefined),
        ofRun: (runId: RunId) =>
          Effect.gen(function*() {
            const row = yield* store.findByName(runId, RECORDING_ARTIFACT_NAME)
            if (row === undefined) return undefined
            return { row, replay: yield* links.sign(row.id) }
          }),
        replay: (artifactId: ArtifactId, expires: number, signature: string) =>
          Effect.gen(function*() {
            const verdict = yield* links.verify(artifactId, expires, signature)
            if (verdict === "invalid") return yield* new InvalidSignature()
            if (verdict === "expired") return yield* new SignedUrlExpired({ refresh: "get the run (or its artifacts) again for a fresh replay_url" })
            const artifact = yield* store.body(artifactId)
            return artifact === undefined || artifact.row.name !== RECORDING_ARTIFACT_NAME ? undefined : artifact
          })
      }))
    })
  ).pipe(Layer.provide(RecordingLinks.layer))
}
