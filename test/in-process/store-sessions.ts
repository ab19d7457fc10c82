/** Sessions made straight through the SessionStore (no entity runs them), for tests of what the store records. */
import { ApiKeyId, type ProjectId } from "../../src/domain/run.ts"
import { SessionStore } from "../../src/store/sessions.ts"

/** A kept-alive DoAnything session and its first run, 5 steps, no profile or workspace. */
export const storeSession = (projectId: ProjectId, instructions = "browse") =>
  SessionStore.use((store) =>
    store.createSession({
      projectId,
      apiKeyId: ApiKeyId.make("key_none"),
      profileId: null,
      workspaceId: null,
      maxOpenSessions: 5,
      run: {
        instructions,
        request: { _tag: "DoAnything", instructions, keep_alive: true, agentmail: true, skills: [], allowed_actions: [] } as never,
        maxSteps: 5,
        model: null,
        maxDurationMs: null
      }
    })
  )

/** The checkpoint a completed step stores, with nothing in it but its number. */
export const stepCheckpoint = (step: number) => ({ step, history: [], url: null, tabs: [], dirtyForm: false, storageState: undefined })
