/**
 * Run checkpoints' browser state at rest, in-process: RunStore seals it (run id as additional
 * data) and reads it back whole; a plaintext row written before encryption still reads; a sealed
 * value moved onto another run's row does not open (the resume goes on without it).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { RunId } from "../../src/domain/run.ts"
import { RunStore } from "../../src/store/runs.ts"
import { Fixtures, inProcess } from "./harness.ts"
import { createSession } from "./do-anything.ts"
import { awaitStatus, TERMINAL } from "./waits.ts"

layer(inProcess(), { excludeTestServices: true })("run checkpoints at rest", (it) => {
  it.effect("sealed on write, opened on read; plaintext rows still read; a row of another run does not open", () =>
    Effect.gen(function*() {
      const { site, model } = yield* Fixtures
      const store = yield* RunStore
      const sql = yield* SqlClient.SqlClient
      const user = `inproc${Date.now()}`
      model.setScript((_request, turn) => {
        if (turn === 0) return { tool: "navigate", args: { url: `${site.url}/login` } }
        return { tool: "done", args: { output: "ok" } }
      })
      const first = yield* createSession({ instructions: "one" })
      expect((yield* awaitStatus(first.run.id, TERMINAL)).status).toBe("done")
      const second = yield* createSession({ instructions: "two" })
      expect((yield* awaitStatus(second.run.id, TERMINAL)).status).toBe("done")

      // A checkpoint with a cookie, written through the store.
      const state = { cookies: [{ name: "session", value: user, domain: "127.0.0.1", path: "/", expires: -1, httpOnly: true, secure: false, sameSite: "Lax" }], origins: [] }
      const checkpoint = { step: 1, history: [], url: `${site.url}/account`, tabs: [`${site.url}/account`], dirtyForm: false, storageState: state }
      yield* store.completeStep(first.run.id, 0, checkpoint)
      const [row] = yield* sql<{ storage_state: Record<string, unknown> }>`SELECT storage_state FROM run_checkpoints WHERE run_id = ${first.run.id}`
      expect(JSON.stringify(row!.storage_state)).not.toContain(user)
      expect(row!.storage_state["wa_sealed"]).toBe(1)
      expect((yield* store.loadCheckpoint(first.run.id as RunId))?.storageState).toEqual(state)

      // A plaintext row (written before checkpoints were encrypted) reads as it is.
      yield* sql`UPDATE run_checkpoints SET storage_state = ${JSON.stringify(state)}::jsonb WHERE run_id = ${first.run.id}`
      expect((yield* store.loadCheckpoint(first.run.id as RunId))?.storageState).toEqual(state)

      // The sealed value of one run copied onto another run's row does not open there.
      yield* store.completeStep(first.run.id, 0, checkpoint)
      yield* store.completeStep(second.run.id, 0, { ...checkpoint, storageState: undefined })
      yield* sql`UPDATE run_checkpoints SET storage_state = (SELECT storage_state FROM run_checkpoints WHERE run_id = ${first.run.id}) WHERE run_id = ${second.run.id}`
      const moved = yield* store.loadCheckpoint(second.run.id as RunId)
      expect(moved?.url).toBe(`${site.url}/account`)
      expect(moved?.storageState).toBeUndefined()
    }))
})
