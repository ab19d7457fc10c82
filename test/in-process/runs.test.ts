/**
 * DoAnything in-process on the live clock: the agent loop, the Session entity, cancel and
 * ask_human, through the Sessions service and the real entity on the cluster's TestRunner, with
 * real Chromium, the fixture site and the scripted model behind the real OpenAI-compatible
 * provider. The HTTP contract of the same operations stays in test/do-anything.
 *
 * `excludeTestServices`: the cluster, the pool and the agent run on the live clock here (the
 * entity's clock is Sharding's); the TestClock tests are in deadlines.test.ts.
 */
import { assert, expect, layer } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { Sessions } from "../../src/do-anything/service.ts"
import { InputRequestId } from "../../src/domain/id-schemas.ts"
import { RunStore } from "../../src/store/runs.ts"
import { lastUserText, refOf, toolResults } from "../fixtures/model/scripted-model.ts"
import { createSession, doAnything } from "./do-anything.ts"
import { Fixtures, inProcess, Tenant } from "./harness.ts"
import { awaitEvent, awaitStatus, eventsOf, gate, TERMINAL } from "./waits.ts"

layer(inProcess(), { excludeTestServices: true })("DoAnything in-process", (it) => {
  it.effect("the agent loop: navigate to a page, read it, finish with the output", () =>
    Effect.gen(function*() {
      const { site, model } = yield* Fixtures
      model.setScript((request, turn) => {
        if (turn === 0) return { tool: "navigate", args: { url: `${site.url}/page/2` } }
        const results = toolResults(request) as Array<{ markdown?: string }>
        const read = results.findLast((result) => result?.markdown !== undefined)
        if (read === undefined) return { tool: "read_page" }
        return { tool: "done", args: { output: { page: lastUserText(request).includes("/page/2"), says: read.markdown!.match(/page number \d/)?.[0] } } }
      })
      const { run } = yield* createSession({ instructions: "Read page 2" })
      const done = yield* awaitStatus(run.id, TERMINAL)
      expect(done).toMatchObject({ status: "done", terminal_reason: "done", error_code: null, step_count: 3 })
      expect(done.output).toEqual({ page: true, says: "page number 2" })
      const types = (yield* eventsOf(run.id)).map((event) => event.type)
      for (const type of ["run.action.started", "run.action.completed", "run.cost_update", "run.completed"]) expect(types).toContain(type)
      expect(types.at(-1)).toBe("run.completed")
      expect(Number(done.llm_cost_usd)).toBeGreaterThan(0)
    }))

  it.effect("reads a value that only JavaScript renders, waiting for it", () =>
    Effect.gen(function*() {
      const { site, model } = yield* Fixtures
      model.setScript((request, turn) => {
        const page = lastUserText(request)
        if (turn === 0) return { tool: "navigate", args: { url: `${site.url}/js-rendered?delay=300` } }
        const match = page.match(/Rendered by JavaScript[^\n]*/)
        if (match) return { tool: "done", args: { output: { text: match[0] } } }
        return { tool: "wait_for", args: { text: "Rendered by JavaScript", timeout_ms: 5000 } }
      })
      const { run } = yield* createSession({ instructions: "Read the text the page renders with JavaScript" })
      const done = yield* awaitStatus(run.id, TERMINAL)
      expect(done.error_code).toBeNull()
      expect(done.status).toBe("done")
      expect(String((done.output as { text: string }).text)).toContain("Rendered by JavaScript")
    }))

  it.effect("done validates the output against output_schema and the model repairs it", () =>
    Effect.gen(function*() {
      const { site, model } = yield* Fixtures
      const schema = { type: "object", properties: { title: { type: "string" }, count: { type: "integer" } }, required: ["title", "count"] }
      const reported: Array<unknown> = []
      model.setScript((request, turn) => {
        if (turn === 0) return { tool: "navigate", args: { url: `${site.url}/page/2` } }
        if (turn === 1) return { tool: "done", args: { output: { title: "Page 2" } } } // count missing
        reported.push(toolResults(request).at(-1))
        return { tool: "done", args: { output: { title: "Page 2", count: 2 } } }
      })
      const { run } = yield* createSession({ instructions: "Title and number of page 2", output_schema: schema })
      const done = yield* awaitStatus(run.id, TERMINAL)
      expect(done.status).toBe("done")
      expect(done.output).toEqual({ title: "Page 2", count: 2 })
      expect(reported[0]).toMatchObject({ code: "InvalidOutput" })
      expect(done.request._tag === "DoAnything" ? done.request.output_schema : undefined).toEqual(schema)
      const failed = yield* awaitEvent(run.id, "run.action.failed")
      expect(failed.data).toMatchObject({ action: "done", code: "InvalidOutput" })
    }))

  it.effect("the Session entity: a follow-up run in the same session sees the cookie the earlier run set", () =>
    Effect.gen(function*() {
      const { site, model } = yield* Fixtures
      const tenant = yield* Tenant
      const sessions = yield* Sessions
      model.setScript((request, turn) => {
        const page = lastUserText(request)
        if (turn === 0) return { tool: "navigate", args: { url: `${site.url}/login` } }
        if (turn === 1) return { tool: "type", args: { ref: refOf(page, "textbox")!, text: "ada", submit: true } }
        return { tool: "done", args: { output: { page: page.includes("Logged in as ada") ? "logged-in" : "not" } } }
      })
      const { session, run } = yield* createSession({ instructions: "Log in as ada", keep_alive: true })
      const first = yield* awaitStatus(run.id, TERMINAL)
      expect(first.status).toBe("done")
      expect(first.output).toEqual({ page: "logged-in" })
      expect((yield* sessions.find(tenant.projectId, session.id)).session.status).toBe("idle")

      model.setScript((request, turn) => {
        if (turn === 0) return { tool: "navigate", args: { url: `${site.url}/account` } }
        return { tool: "done", args: { output: { state: lastUserText(request).match(/Logged in as \w+|Not logged in/)?.[0] } } }
      })
      const followUp = yield* sessions.addRun(tenant.projectId, session.id, doAnything({ instructions: "Who am I logged in as?" }))
      const second = yield* awaitStatus(followUp.id, TERMINAL)
      expect(second.output).toEqual({ state: "Logged in as ada" })
      const after = yield* sessions.find(tenant.projectId, session.id)
      expect(after.runs.map((r) => r.id)).toEqual([run.id, followUp.id])
      expect(after.session.latest_run_id).toBe(followUp.id)
    }))

  it.effect("a new run in a session needs the previous one to be terminal", () =>
    Effect.gen(function*() {
      const { model } = yield* Fixtures
      const tenant = yield* Tenant
      const sessions = yield* Sessions
      const hold = gate()
      model.setScript(async () => {
        await hold.pass()
        return { tool: "done", args: { output: "ok" } }
      })
      const { session, run } = yield* createSession({ instructions: "wait" })
      yield* hold.reached
      const refused = yield* Effect.exit(sessions.addRun(tenant.projectId, session.id, doAnything({ instructions: "another" })))
      assert.isTrue(Exit.isFailure(refused))
      expect(Exit.isFailure(refused) && JSON.stringify(refused.cause)).toContain("PreviousRunActive")
      yield* hold.open
      expect((yield* awaitStatus(run.id, TERMINAL)).status).toBe("done")
    }))

  it.effect("cancel: a running run is canceled, its status event is written, and its execution stops", () =>
    Effect.gen(function*() {
      const { model } = yield* Fixtures
      const tenant = yield* Tenant
      const sessions = yield* Sessions
      const hold = gate()
      model.setScript(async () => {
        await hold.pass()
        return { tool: "done", args: { output: "late" } }
      })
      const { session, run } = yield* createSession({ instructions: "slow", keep_alive: true })
      yield* hold.reached // the agent is inside its first model call
      const requestsBefore = model.requests.length
      const canceled = yield* sessions.cancel(yield* sessions.findRun(tenant.projectId, run.id), "changed my mind")
      expect(canceled).toMatchObject({ status: "canceled", terminal_reason: "canceled" })
      const change = yield* awaitEvent(run.id, "run.status_changed", (data) => data["status"] === "canceled")
      expect(change.data).toMatchObject({ from: "running", status: "canceled", reason: "changed my mind" })
      yield* hold.open // the model answers "done" now: the interrupted execution must not use it

      // The entity handles a session's runs one at a time: a follow-up that runs to its end is the
      // barrier after which the canceled execution can no longer write anything.
      model.setScript(() => ({ tool: "done", args: { output: "next" } }))
      const next = yield* sessions.addRun(tenant.projectId, session.id, doAnything({ instructions: "next" }))
      expect((yield* awaitStatus(next.id, TERMINAL)).output).toBe("next")
      const events = yield* eventsOf(run.id)
      expect(events.filter((e) => e.type === "run.completed")).toHaveLength(1)
      expect(events.at(-1)!.type).toBe("run.completed")
      expect(yield* RunStore.use((store) => store.getRun(run.id))).toMatchObject({ status: "canceled", output: null })
      // One model call for the follow-up, none more for the canceled run.
      expect(model.requests.length).toBe(requestsBefore + 1)
    }))

  it.effect("cancel: a run awaiting input is canceled; a terminal run refuses with RunEnded", () =>
    Effect.gen(function*() {
      const { model } = yield* Fixtures
      const sessions = yield* Sessions
      model.setScript(() => ({ tool: "ask_human", args: { prompt: "?" } }))
      const { run } = yield* createSession({ instructions: "ask" })
      const waiting = yield* awaitStatus(run.id, ["awaiting_input"])
      expect((yield* sessions.cancel(waiting, null)).status).toBe("canceled")
      const ended = yield* awaitStatus(run.id, TERMINAL)
      const again = yield* Effect.flip(sessions.cancel(ended, null))
      expect(again._tag).toBe("RunEnded")
    }))

  it.effect("ask_human: the run waits with run.input_request, and answering it resumes the run", () =>
    Effect.gen(function*() {
      const { model } = yield* Fixtures
      const sessions = yield* Sessions
      model.setScript((request, turn) => {
        if (turn === 0) return { tool: "ask_human", args: { prompt: "What is the 2FA code?", schema: { type: "string" } } }
        const results = toolResults(request) as Array<{ answer?: unknown }>
        return { tool: "done", args: { output: { code: results.at(-1)?.answer } } }
      })
      const { run } = yield* createSession({ instructions: "Log in with 2FA" })
      const waiting = yield* awaitStatus(run.id, ["awaiting_input"])
      const asked = yield* awaitEvent(run.id, "run.input_request")
      expect(asked.data).toMatchObject({ prompt: "What is the 2FA code?", schema: { type: "string" } })
      const requestId = InputRequestId.make(String(asked.data["input_request_id"]))
      expect(requestId).toMatch(/^ir_/)

      const unknown = yield* Effect.flip(sessions.answer(waiting, InputRequestId.make("ir_unknown"), "1"))
      expect(unknown._tag).toBe("InputRequestNotFound")
      yield* sessions.answer(waiting, requestId, "424242")
      const done = yield* awaitStatus(run.id, TERMINAL)
      expect(done).toMatchObject({ status: "done", output: { code: "424242" } })
      const twice = yield* Effect.flip(sessions.answer(done, requestId, "1"))
      expect(twice._tag).toBe("InputRequestAnswered")
    }))
})
