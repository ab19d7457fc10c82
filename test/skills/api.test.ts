/**
 * The skills resource over HTTP (`/v1/projects/{pid}/skills`): the real service with a scripted
 * model. Instructions skills created, refused (name taken, bad parameters, placeholders naming no
 * parameter), listed in cursor pages, read by id and by name, updated into new versions and
 * deleted; another project's skill is 404. "Save this run as a skill": a run that saved no script
 * is 422 run_has_no_script; with a cached script seeded for it (tables of migration 0030) the skill
 * gets its steps without done, the typed literals made {{param:name}}. A run that lists a skill the
 * project does not have is 422 unknown_skills and creates nothing. A run key (not admin) does it all.
 */
import type pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { CachedStep } from "../../src/domain/cache-script.ts"
import { makeId } from "../../src/domain/ids.ts"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { waitForRunStatus } from "../support/runs.ts"
import { embeddedDatabaseClient, scriptedAgentEnv, type Service, startService, stopAndClean } from "../support/service.ts"

let service: Service
let model: ScriptedModel
let db: pg.Client
/** A run-scoped key of the project (the bootstrap key is an admin key). */
let runKey: string
const OTHER_PROJECT = "proj_00000000000000000000000000"

beforeAll(async () => {
  model = await startScriptedModel(() => ({ tool: "done", args: { output: "ok" } }))
  service = await startService({ env: scriptedAgentEnv(model.baseUrl) })
  db = await embeddedDatabaseClient(service.dataDir)
  const key = await service.request("POST", `/v1/projects/${service.projectId}/api_keys`, { body: { name: "skills user" } })
  expect(key.status, key.text).toBe(201)
  expect(key.json.scope).toBe("run")
  runKey = key.json.secret_token
}, 180_000)
afterAll(async () => {
  await db?.end()
  await stopAndClean(service)
  await model?.close()
})

const skillsPath = () => `/v1/projects/${service.projectId}/skills`
const doAnything = () => `/v1/projects/${service.projectId}/do_anything`
const post = (body: unknown) => service.request("POST", skillsPath(), { body, key: runKey })

const expectStatus = (response: { status: number; text: string; json: any }, status: number, code: string) => {
  expect(response.status, response.text).toBe(status)
  expect(response.json.code, response.text).toBe(code)
  expect(typeof response.json.detail).toBe("string")
}

/** A DoAnything run of the project that ended done (the scripted model calls done at once). */
const doneRun = async () => {
  const created = await service.request("POST", `${doAnything()}/sessions`, { body: { instructions: "read the page", keep_alive: true }, key: runKey })
  expect(created.status, created.text).toBe(201)
  const sid = created.json.id as string
  const rid = created.json.latest_run_id as string
  const run = await waitForRunStatus(service, `${doAnything()}/sessions/${sid}/runs/${rid}`, ["done", "failed", "canceled"])
  expect(run.status, JSON.stringify(run)).toBe("done")
  return { sid, rid }
}

const step = (tool: string, params: Record<string, unknown>): CachedStep => ({
  tool,
  params,
  target: tool === "navigate" || tool === "done" ? null : { role: "textbox", name: "Search", containers: ["form"], ordinal: 0, css: "form > input" },
  to_target: null,
  expects: { url: "https://shop.example/", title: "Shop" },
  output_on_page: []
})

/** A cached script whose version 1 was recorded by `runId` (what a cache_script: true run saves). */
const seedScript = async (projectId: string, runId: string, steps: ReadonlyArray<CachedStep>) => {
  const id = makeId("cs")
  await db.query(
    `INSERT INTO cache_scripts (id, project_id, cache_key, instructions, start_origin, output_schema, version) VALUES ($1, $2, $3, $4, NULL, NULL, 1)`,
    [id, projectId, `key-${id}`, "search the shop"]
  )
  await db.query(
    `INSERT INTO cache_script_versions (script_id, version, steps, source_run_id, healed_steps) VALUES ($1, 1, $2::jsonb, $3, 0)`,
    [id, JSON.stringify(steps), runId]
  )
}

describe("skills", () => {
  let carefulId: string

  it("creates an instructions skill (201), with the default parameters; a second of the name is 409 skill_name_taken", async () => {
    const created = await post({ name: "careful", description: "Check each page before acting", instructions: "Read the page before each action." })
    expect(created.status, created.text).toBe(201)
    expect(created.json).toMatchObject({
      id: expect.stringMatching(/^sk_/),
      name: "careful",
      description: "Check each page before acting",
      parameters: { type: "object", properties: {} },
      kind: "instructions",
      instructions: "Read the page before each action.",
      steps: null,
      version: 1,
      call_count: 0,
      last_used_at: null
    })
    expect(created.json).not.toHaveProperty("versions")
    carefulId = created.json.id

    const again = await post({ name: "careful", description: "another", instructions: "x" })
    expectStatus(again, 409, "skill_name_taken")
    expect(again.json.extra).toEqual({ name: "careful" })
  })

  it("refuses bad input with 422: parameters not of type object, a placeholder naming no parameter, neither or both of instructions and from_run_id, a bad name", async () => {
    const notObject = await post({ name: "bad_params", description: "d", parameters: { type: "string" }, instructions: "x" })
    expectStatus(notObject, 422, "validation_error")
    expect(notObject.json.extra.errors[0].loc).toEqual(["body", "parameters", "type"])

    const notSchema = await post({ name: "bad_schema", description: "d", parameters: { type: "object", properties: { q: { type: "no-such-type" } } }, instructions: "x" })
    expectStatus(notSchema, 422, "validation_error")

    const placeholder = await post({
      name: "search",
      description: "d",
      parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
      instructions: "Search for {{param:qeury}}"
    })
    expectStatus(placeholder, 422, "unknown_parameters")
    expect(placeholder.json.extra.names).toEqual(["qeury"])

    expectStatus(await post({ name: "neither", description: "d" }), 422, "validation_error")
    expectStatus(await post({ name: "both", description: "d", instructions: "x", from_run_id: "run_x" }), 422, "validation_error")
    expectStatus(await post({ name: "Bad-Name", description: "d", instructions: "x" }), 422, "validation_error")
    expectStatus(await post({ name: "long", description: "d", instructions: "" }), 422, "validation_error")

    const listed = await service.request("GET", `${skillsPath()}?limit=100`, { key: runKey })
    expect(listed.json.items.map((item: any) => item.name)).toEqual(["careful"])
  })

  it("lists the project's skills newest first in cursor pages", async () => {
    const names = ["alpha", "beta", "gamma", "delta"]
    for (const name of names) {
      const created = await post({
        name,
        description: `skill ${name}`,
        parameters: { type: "object", properties: { query: { type: "string", description: "what to look for" } }, required: ["query"] },
        instructions: `Search ${name} for {{param:query}}`
      })
      expect(created.status, created.text).toBe(201)
    }
    const seen: Array<any> = []
    let cursor: string | null = null
    let pages = 0
    do {
      const query: string = cursor === null ? "?limit=2" : `?limit=2&cursor=${encodeURIComponent(cursor)}`
      const page = await service.request("GET", `${skillsPath()}${query}`, { key: runKey })
      expect(page.status, page.text).toBe(200)
      expect(page.json.items.length).toBeLessThanOrEqual(2)
      seen.push(...page.json.items)
      cursor = page.json.next_cursor
      pages++
    } while (cursor !== null && pages < 10)
    expect(pages).toBe(3)
    expect(seen.map((item) => item.name)).toEqual(["delta", "gamma", "beta", "alpha", "careful"])
    expect(seen[0]).not.toHaveProperty("versions")

    const bad = await service.request("GET", `${skillsPath()}?cursor=not-a-cursor`, { key: runKey })
    expect(bad.status).toBe(400)
  })

  it("gets a skill by id and by name, with its versions", async () => {
    const byId = await service.request("GET", `${skillsPath()}/${carefulId}`, { key: runKey })
    expect(byId.status, byId.text).toBe(200)
    const byName = await service.request("GET", `${skillsPath()}/careful`, { key: runKey })
    expect(byName.status, byName.text).toBe(200)
    expect(byName.json).toEqual(byId.json)
    expect(byId.json.versions).toEqual([{ version: 1, kind: "instructions", source_run_id: null, created_at: expect.any(String) }])
  })

  it("an update saves a new version carrying the other fields over; versions newest first; the name cannot change", async () => {
    const updated = await service.request("PATCH", `${skillsPath()}/careful`, { body: { description: "Check twice" }, key: runKey })
    expect(updated.status, updated.text).toBe(200)
    expect(updated.json).toMatchObject({
      id: carefulId,
      name: "careful",
      description: "Check twice",
      instructions: "Read the page before each action.",
      kind: "instructions",
      version: 2
    })
    const again = await service.request("PATCH", `${skillsPath()}/${carefulId}`, {
      body: { parameters: { type: "object", properties: { page: { type: "string" } } }, instructions: "Read {{param:page}} twice." },
      key: runKey
    })
    expect(again.status, again.text).toBe(200)
    expect(again.json).toMatchObject({ description: "Check twice", instructions: "Read {{param:page}} twice.", version: 3 })

    const got = (await service.request("GET", `${skillsPath()}/careful`, { key: runKey })).json
    expect(got.versions.map((v: any) => v.version)).toEqual([3, 2, 1])

    // Dropping the parameter the instructions use is refused; so is a name in the body.
    expectStatus(await service.request("PATCH", `${skillsPath()}/careful`, { body: { parameters: { type: "object" } }, key: runKey }), 422, "unknown_parameters")
    expect((await service.request("PATCH", `${skillsPath()}/careful`, { body: { name: "renamed" }, key: runKey })).status).toBe(422)
    expectStatus(await service.request("PATCH", `${skillsPath()}/no_such_skill`, { body: { description: "x" }, key: runKey }), 404, "skill_not_found")
    expect((await service.request("GET", `${skillsPath()}/careful`, { key: runKey })).json.version).toBe(3)
  })

  it("deletes a skill (204), then it is 404 skill_not_found", async () => {
    const deleted = await service.request("DELETE", `${skillsPath()}/alpha`, { key: runKey })
    expect(deleted.status, deleted.text).toBe(204)
    expect(deleted.text).toBe("")
    const gone = await service.request("GET", `${skillsPath()}/alpha`, { key: runKey })
    expectStatus(gone, 404, "skill_not_found")
    expect(gone.json.extra).toEqual({ skill: "alpha" })
    expectStatus(await service.request("DELETE", `${skillsPath()}/alpha`, { key: runKey }), 404, "skill_not_found")
  })

  it("another project's skill is 404, by id and by name", async () => {
    const id = makeId("sk")
    await db.query(`INSERT INTO skills (id, project_id, name, version) VALUES ($1, $2, 'theirs', 1)`, [id, OTHER_PROJECT])
    await db.query(
      `INSERT INTO skill_versions (skill_id, version, description, parameters, kind, instructions) VALUES ($1, 1, 'd', '{"type":"object"}'::jsonb, 'instructions', 'x')`,
      [id]
    )
    for (const ref of [id, "theirs"]) {
      expectStatus(await service.request("GET", `${skillsPath()}/${ref}`, { key: runKey }), 404, "skill_not_found")
      expectStatus(await service.request("PATCH", `${skillsPath()}/${ref}`, { body: { description: "mine" }, key: runKey }), 404, "skill_not_found")
      expectStatus(await service.request("DELETE", `${skillsPath()}/${ref}`, { key: runKey }), 404, "skill_not_found")
    }
    const kept = await db.query("SELECT count(*)::int AS n FROM skills WHERE id = $1", [id])
    expect(kept.rows[0].n).toBe(1)
    // The same name is free in this project.
    expect((await post({ name: "theirs", description: "d", instructions: "x" })).status).toBe(201)
  })

  it("saves a run as a skill: 404 for an unknown run, 422 run_has_no_script without a script, its steps without done and with {{param:name}} with one", async () => {
    expectStatus(await post({ name: "from_nothing", description: "d", from_run_id: makeId("run") }), 404, "run_not_found")

    const { rid } = await doneRun()
    const noScript = await post({ name: "from_run", description: "d", from_run_id: rid })
    expectStatus(noScript, 422, "run_has_no_script")
    expect(noScript.json.detail).toContain("cache_script: true")
    expect(noScript.json.extra.run_id).toBe(rid)

    await seedScript(service.projectId, rid, [
      step("navigate", { url: "https://shop.example/" }),
      step("type", { text: "blue shoes", submit: true }),
      step("type", { text: "{{secret:shop_password}}" }),
      step("extract", { goals: ["price of blue shoes", { nested: "blue shoes" }] }),
      step("done", { output: "blue shoes cost 10" })
    ])
    const parameters = { type: "object", properties: { item: { type: "string" } }, required: ["item"] }

    expectStatus(
      await post({ name: "from_run", description: "d", from_run_id: rid, parameters, parameter_values: { item: "red hat" } }),
      422,
      "parameter_value_not_found"
    )
    expectStatus(
      await post({ name: "from_run", description: "d", from_run_id: rid, parameters, parameter_values: { color: "blue" } }),
      422,
      "unknown_parameters"
    )
    expectStatus(await post({ name: "from_run", description: "d", instructions: "x", parameter_values: { item: "blue shoes" } }), 422, "validation_error")

    const saved = await post({ name: "buy_item", description: "Search the shop for an item", from_run_id: rid, parameters, parameter_values: { item: "blue shoes" } })
    expect(saved.status, saved.text).toBe(201)
    expect(saved.json).toMatchObject({ kind: "script", instructions: null, version: 1, parameters })
    expect(saved.json.steps.map((s: any) => s.tool)).toEqual(["navigate", "type", "type", "extract"])
    expect(saved.json.steps.map((s: any) => s.params)).toEqual([
      { url: "https://shop.example/" },
      { text: "{{param:item}}", submit: true },
      { text: "{{secret:shop_password}}" },
      { goals: ["price of {{param:item}}", { nested: "{{param:item}}" }] }
    ])
    const got = (await service.request("GET", `${skillsPath()}/buy_item`, { key: runKey })).json
    expect(got.versions).toEqual([{ version: 1, kind: "script", source_run_id: rid, created_at: expect.any(String) }])

    // An instructions update turns it into an instructions skill (version 2).
    const changed = await service.request("PATCH", `${skillsPath()}/buy_item`, { body: { instructions: "Buy {{param:item}}" }, key: runKey })
    expect(changed.status, changed.text).toBe(200)
    expect(changed.json).toMatchObject({ kind: "instructions", steps: null, version: 2 })
  })

  it("a run that lists a skill the project does not have is 422 unknown_skills and creates nothing", async () => {
    const count = async () => (await db.query("SELECT count(*)::int AS n FROM runs WHERE project_id = $1", [service.projectId])).rows[0].n as number
    const before = await count()

    const sessions = await service.request("POST", `${doAnything()}/sessions`, {
      body: { instructions: "go", skills: ["careful", "nope", "alpha"] },
      key: runKey
    })
    expectStatus(sessions, 422, "unknown_skills")
    expect(sessions.json.extra.names).toEqual(["nope", "alpha"])

    const flat = await service.request("POST", `/api/v1/projects/${service.projectId}/do_anything/runs`, { body: { instructions: "go", skills: ["nope"] }, key: runKey })
    expectStatus(flat, 422, "unknown_skills")
    expect(flat.json.extra.names).toEqual(["nope"])

    const { sid } = await doneRun()
    const afterRun = await count()
    expect(afterRun).toBe(before + 1)
    const followUp = await service.request("POST", `${doAnything()}/sessions/${sid}/runs`, { body: { instructions: "again", skills: ["nope"] }, key: runKey })
    expectStatus(followUp, 422, "unknown_skills")
    expect(await count()).toBe(afterRun)

    // A name that is not a skill name at all is refused by the schema.
    expect((await service.request("POST", `${doAnything()}/sessions`, { body: { instructions: "go", skills: ["Not A Name"] }, key: runKey })).status).toBe(422)

    // Skills the project has are accepted.
    const ok = await service.request("POST", `${doAnything()}/sessions/${sid}/runs`, { body: { instructions: "again", skills: ["careful", "beta"] }, key: runKey })
    expect(ok.status, ok.text).toBe(201)
    expect(ok.json.skills).toEqual(["careful", "beta"])
  })

  it("the OpenAPI document has the five operations", async () => {
    const doc = (await service.request("GET", "/openapi.json", { key: null })).json
    const list = "/v1/projects/{pid}/skills"
    const one = "/v1/projects/{pid}/skills/{skill}"
    expect(Object.keys(doc.paths[list]).sort()).toEqual(expect.arrayContaining(["get", "post"]))
    expect(Object.keys(doc.paths[one]).sort()).toEqual(expect.arrayContaining(["delete", "get", "patch"]))
    expect(doc.paths[list].post.responses["201"]).toBeDefined()
    expect(doc.paths[one].delete.responses["204"]).toBeDefined()
  })
})
