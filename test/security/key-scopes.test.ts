/**
 * API key scopes, through real HTTP against the real service: `admin` keys manage keys and read the
 * webhook secret, `run` keys use the products only, and a revoked key in its grace window keeps
 * what a run key may do but manages nothing, so revoking a leaked key contains it.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { migrations } from "../../src/store/migrations.ts"
import { embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"

let service: Service
let bootstrapKeyId: string

const keysPath = () => `/v1/projects/${service.projectId}/api_keys`
const sessionsPath = () => `/v1/projects/${service.projectId}/do_anything/sessions`
const secretPath = () => `/v1/projects/${service.projectId}/webhook_secret`

interface CreatedKey {
  readonly id: string
  readonly secret: string
  readonly json: any
}

/** A key created over the API with `key` (the bootstrap key by default). */
const createKey = async (body: Record<string, unknown>, key?: string): Promise<CreatedKey> => {
  const response = await service.request("POST", keysPath(), { body, ...(key === undefined ? {} : { key }) })
  expect(response.status, response.text).toBe(201)
  return { id: response.json.id, secret: response.json.secret_token, json: response.json }
}

const expectForbidden = (response: { status: number; json: any; text: string }, extra: Record<string, unknown>) => {
  expect(response.status, response.text).toBe(403)
  expect(response.json).toMatchObject({ code: "forbidden", detail: expect.any(String), extra: { required_scope: "admin", ...extra } })
  expect(Object.keys(response.json).sort()).toEqual(["code", "detail", "extra"])
}

/** Every key of the project, read with the bootstrap key. */
const allKeys = async (): Promise<Array<any>> => {
  const response = await service.request("GET", `${keysPath()}?limit=100`)
  expect(response.status, response.text).toBe(200)
  return response.json.items
}

beforeAll(async () => {
  // No model: a DoAnything run fails at once with model_not_configured, which is all these tests
  // need (the session and run exist and can be read).
  service = await startService()
  const keys = await allKeys()
  bootstrapKeyId = keys.find((k) => k.name === "default").id
})
afterAll(() => stopAndClean(service))

describe("scopes", () => {
  it("the bootstrap key is admin and was created by no key", async () => {
    expect((await allKeys()).find((k) => k.id === bootstrapKeyId)).toMatchObject({ scope: "admin", created_by_key_id: null })
  })

  it("a key created over the API is a run key unless asked; an admin key creates both kinds", async () => {
    const plain = await createKey({ name: "plain" })
    expect(plain.json).toMatchObject({ scope: "run", created_by_key_id: bootstrapKeyId })
    const run = await createKey({ name: "explicit-run", scope: "run" })
    expect(run.json.scope).toBe("run")
    const admin = await createKey({ name: "second-admin", scope: "admin" })
    expect(admin.json).toMatchObject({ scope: "admin", created_by_key_id: bootstrapKeyId })
    // The new admin key can itself create both kinds.
    const byAdmin = await createKey({ name: "by-second-admin", scope: "admin" }, admin.secret)
    expect(byAdmin.json).toMatchObject({ scope: "admin", created_by_key_id: admin.id })
    const got = await service.request("GET", `${keysPath()}/${run.id}`, { key: admin.secret })
    expect(got.status, got.text).toBe(200)
    expect(got.json).toMatchObject({ id: run.id, scope: "run", created_by_key_id: bootstrapKeyId })
  })

  it("a run key cannot create, list, get or revoke keys, nor read the webhook secret", async () => {
    const run = await createKey({ name: "run-only" })
    expect(run.json.scope).toBe("run")
    const victim = await createKey({ name: "victim", scope: "admin" })
    const refusals = [
      await service.request("POST", keysPath(), { body: { name: "minted", scope: "admin" }, key: run.secret }),
      await service.request("POST", keysPath(), { body: { name: "minted" }, key: run.secret }),
      await service.request("GET", keysPath(), { key: run.secret }),
      await service.request("GET", `${keysPath()}/${victim.id}`, { key: run.secret }),
      await service.request("GET", `${keysPath()}/${run.id}`, { key: run.secret }),
      await service.request("DELETE", `${keysPath()}/${victim.id}`, { key: run.secret }),
      await service.request("GET", secretPath(), { key: run.secret })
    ]
    for (const response of refusals) expectForbidden(response, { key_scope: "run" })
    const keys = await allKeys()
    expect(keys.filter((k) => k.name === "minted")).toEqual([])
    expect(keys.find((k) => k.id === victim.id)).toMatchObject({ grace_until: null, disabled_at: null })
  })

  it("a run key can create and read sessions and runs", async () => {
    const run = await createKey({ name: "worker" })
    expect(run.json.scope).toBe("run")
    const created = await service.request("POST", sessionsPath(), { body: { instructions: "anything" }, key: run.secret })
    expect(created.status, created.text).toBe(201)
    const sid = created.json.id
    const session = await service.request("GET", `${sessionsPath()}/${sid}`, { key: run.secret })
    expect(session.status, session.text).toBe(200)
    const rid = created.json.latest_run_id
    const runResponse = await service.request("GET", `${sessionsPath()}/${sid}/runs/${rid}`, { key: run.secret })
    expect(runResponse.status, runResponse.text).toBe(200)
    const listed = await service.request("GET", sessionsPath(), { key: run.secret })
    expect(listed.status, listed.text).toBe(200)
  })

  it("an admin key reads the webhook secret", async () => {
    const admin = await createKey({ name: "secret-reader", scope: "admin" })
    const response = await service.request("GET", secretPath(), { key: admin.secret })
    expect(response.status, response.text).toBe(200)
    expect(response.json.secret).toMatch(/^whsec_/)
  })

  it("a bad scope value is 422 on scope", async () => {
    for (const scope of ["owner", "ADMIN", "", 1, true, ["admin"]]) {
      const response = await service.request("POST", keysPath(), { body: { name: "bad-scope", scope } })
      expect(response.status, response.text).toBe(422)
      expect(response.json.code).toBe("validation_error")
      expect(response.json.extra.errors).toHaveLength(1)
      expect(response.json.extra.errors[0].loc).toEqual(["body", "scope"])
      expect(response.json.extra.errors[0].type).not.toBe("extra_forbidden")
    }
    expect((await allKeys()).filter((k) => k.name === "bad-scope")).toEqual([])
    // null is the default, like an absent scope.
    expect((await createKey({ name: "null-scope", scope: null })).json.scope).toBe("run")
  })
})

describe("revocation contains a key", () => {
  it("a revoked admin key in its grace window cannot manage keys but can still use the products", async () => {
    const revokedAdmin = await createKey({ name: "revoked-admin", scope: "admin" })
    const other = await createKey({ name: "other" })
    // Used once before the revocation, so authentication has it cached.
    expect((await service.request("GET", keysPath(), { key: revokedAdmin.secret })).status).toBe(200)
    const revoked = await service.request("DELETE", `${keysPath()}/${revokedAdmin.id}`)
    expect(revoked.status, revoked.text).toBe(200)
    expect(revoked.json.grace_until).not.toBeNull()

    const refusals = [
      await service.request("POST", keysPath(), { body: { name: "from-revoked", scope: "admin" }, key: revokedAdmin.secret }),
      await service.request("DELETE", `${keysPath()}/${other.id}`, { key: revokedAdmin.secret }),
      await service.request("DELETE", `${keysPath()}/${bootstrapKeyId}`, { key: revokedAdmin.secret }),
      await service.request("GET", keysPath(), { key: revokedAdmin.secret }),
      await service.request("GET", `${keysPath()}/${other.id}`, { key: revokedAdmin.secret }),
      await service.request("GET", secretPath(), { key: revokedAdmin.secret })
    ]
    for (const response of refusals) expectForbidden(response, { revoked: true })
    expect(refusals[0]!.json.detail).toMatch(/revoked/)

    // Still a working key for the products during the grace window: reads, and work in flight.
    const listed = await service.request("GET", sessionsPath(), { key: revokedAdmin.secret })
    expect(listed.status, listed.text).toBe(200)
    const created = await service.request("POST", sessionsPath(), { body: { instructions: "finish up" }, key: revokedAdmin.secret })
    expect(created.status, created.text).toBe(201)

    const keys = await allKeys()
    expect(keys.filter((k) => k.name === "from-revoked")).toEqual([])
    expect(keys.find((k) => k.id === other.id)).toMatchObject({ grace_until: null })
    expect(keys.find((k) => k.id === bootstrapKeyId)).toMatchObject({ grace_until: null })
  })

  it("after an admin revokes a leaked key, the keys the admin holds keep working", async () => {
    const leaked = await createKey({ name: "leaked", scope: "admin" })
    const held = await createKey({ name: "held", scope: "admin" })
    // The leaked key minted one before it was revoked: independent of it, and traceable to it.
    const minted = await createKey({ name: "minted-by-leaked" }, leaked.secret)
    expect(minted.json.created_by_key_id).toBe(leaked.id)

    expect((await service.request("DELETE", `${keysPath()}/${leaked.id}`, { key: held.secret })).status).toBe(200)
    // The attacker holding the leaked key fights back: every attempt is refused.
    for (const id of [held.id, bootstrapKeyId]) {
      expectForbidden(await service.request("DELETE", `${keysPath()}/${id}`, { key: leaked.secret }), { revoked: true })
    }
    expectForbidden(await service.request("POST", keysPath(), { body: { name: "respawn", scope: "admin" }, key: leaked.secret }), { revoked: true })

    for (const key of [held.secret, service.apiKey]) {
      const response = await service.request("GET", `${keysPath()}?limit=100`, { key })
      expect(response.status, response.text).toBe(200)
      const byId = new Map(response.json.items.map((k: any) => [k.id, k]))
      expect(byId.get(held.id)).toMatchObject({ grace_until: null, disabled_at: null })
      expect(byId.get(bootstrapKeyId)).toMatchObject({ grace_until: null, disabled_at: null })
      expect(byId.get(leaked.id)).toMatchObject({ grace_until: expect.any(String) })
      expect(byId.get(minted.id)).toMatchObject({ created_by_key_id: leaked.id, grace_until: null })
      expect(byId.has("respawn")).toBe(false)
    }
    // The held admin key still manages keys, and the key the leaked one minted is revoked separately.
    expect((await service.request("DELETE", `${keysPath()}/${minted.id}`, { key: held.secret })).status).toBe(200)
    expect((await createKey({ name: "replacement", scope: "admin" }, held.secret)).json.scope).toBe("admin")
  })

  it("a key may revoke itself, and then manages nothing", async () => {
    const admin = await createKey({ name: "self-revoker", scope: "admin" })
    const revoked = await service.request("DELETE", `${keysPath()}/${admin.id}`, { key: admin.secret })
    expect(revoked.status, revoked.text).toBe(200)
    expectForbidden(await service.request("GET", keysPath(), { key: admin.secret }), { revoked: true })
  })
})

describe("CLI and OpenAPI", () => {
  const cliKey = async (...extra: Array<string>) => {
    const result = await service.cli("keys", "create", "--project", service.projectId, ...extra)
    expect(result.code, result.stderr).toBe(0)
    return JSON.parse(result.stdout.trim()) as { key_id: string; scope: string; secret_token: string }
  }

  it("wa keys create makes admin keys by default and a run key with --scope run", async () => {
    const admin = await cliKey("--name", "cli-default")
    expect(admin.scope).toBe("admin")
    expect((await service.request("GET", keysPath(), { key: admin.secret_token })).status).toBe(200)
    const explicitAdmin = await cliKey("--scope", "admin")
    expect(explicitAdmin.scope).toBe("admin")

    const run = await cliKey("--name", "cli-run", "--scope", "run")
    expect(run.scope).toBe("run")
    expectForbidden(await service.request("GET", keysPath(), { key: run.secret_token }), { key_scope: "run" })
    expect((await service.request("GET", sessionsPath(), { key: run.secret_token })).status).toBe(200)
    expect((await allKeys()).find((k) => k.id === run.key_id)).toMatchObject({ scope: "run", created_by_key_id: null })

    const bad = await service.cli("keys", "create", "--project", service.projectId, "--scope", "root")
    expect(bad.code).toBe(2)
    expect(bad.stdout).toBe("")
    expect(bad.stderr).toMatch(/--scope/)
  })

  it("the OpenAPI document shows the scope and declares 403 where a scope is needed", async () => {
    const spec = (await service.request("GET", "/openapi.json", { key: null })).json
    const keys = spec.paths["/v1/projects/{pid}/api_keys"]
    const key = spec.paths["/v1/projects/{pid}/api_keys/{key_id}"]
    const secret = spec.paths["/v1/projects/{pid}/webhook_secret"]
    for (const operation of [keys.get, keys.post, key.get, key.delete, secret.get]) {
      expect(Object.keys(operation.responses)).toContain("403")
    }
    const text = JSON.stringify(spec)
    expect(text).toContain("created_by_key_id")
    expect(text).toMatch(/"enum":\["admin","run"\]|"const":"admin"/)
  })
})

describe("upgrade", () => {
  /** Applies this build's migrations up to `upTo` (all of them by default) to the database at `url`. */
  const migrate = (url: string, upTo = Number.MAX_SAFE_INTEGER) =>
    Effect.runPromise(
      PgMigrator.run({ loader: Effect.map(migrations, (all) => all.filter(([id]) => id <= upTo)), table: "wa_migrations" }).pipe(
        Effect.provide(PgClient.layer({ url: Redacted.make(url) })),
        Effect.provide(NodeServices.layer)
      )
    )

  it("keys that existed before scopes become admin; later rows default to run", async () => {
    // A database as the release before scopes left it (migrations up to 0006), on the service's
    // embedded PostgreSQL, then upgraded by this build's migrations.
    const admin = await embeddedDatabaseClient(service.dataDir)
    const name = `wa_upgrade_${Date.now()}`
    const url = `postgres://${admin.user}:${encodeURIComponent(admin.password ?? "")}@${admin.host}:${admin.port}/${name}`
    await admin.query(`CREATE DATABASE ${name}`)
    try {
      expect((await migrate(url, 6)).map(([id]) => id)).not.toContain(7)
      const old = new pg.Client({ connectionString: url })
      await old.connect()
      try {
        await old.query("INSERT INTO projects (id, name) VALUES ('proj_old', 'old')")
        await old.query("INSERT INTO api_keys (id, project_id, prefix, secret_hash) VALUES ('key_old1', 'proj_old', 'wa_old1', 'h1'), ('key_old2', 'proj_old', 'wa_old2', 'h2')")
        await migrate(url)
        const rows = await old.query("SELECT id, scope, created_by_key_id FROM api_keys ORDER BY id")
        expect(rows.rows).toEqual([
          { id: "key_old1", scope: "admin", created_by_key_id: null },
          { id: "key_old2", scope: "admin", created_by_key_id: null }
        ])
        // A row written without a scope after the upgrade gets the least privilege.
        await old.query("INSERT INTO api_keys (id, project_id, prefix, secret_hash) VALUES ('key_new', 'proj_old', 'wa_new', 'h3')")
        expect((await old.query("SELECT scope FROM api_keys WHERE id = 'key_new'")).rows[0].scope).toBe("run")
        await expect(old.query("UPDATE api_keys SET scope = 'owner' WHERE id = 'key_new'")).rejects.toThrow()
      } finally {
        await old.end()
      }
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.end()
    }
  }, 60_000)
})
