/**
 * `wa keys create` (the operator CLI) honours the plan's cap on a project's API keys, as
 * `POST /api_keys` does (403 plan_limit_reached): past the cap it exits non-zero with a line that
 * says why and what to do, and creates nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"

const CAP = 3
let service: Service

beforeAll(async () => {
  service = await startService({ env: { WA_MAX_KEYS_PER_PROJECT: String(CAP) } })
}, 180_000)
afterAll(async () => {
  await stopAndClean(service)
})

const keysOf = async (projectId: string) => {
  const db = await embeddedDatabaseClient(service.dataDir)
  try {
    return (await db.query("SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1 AND disabled_at IS NULL", [projectId])).rows[0].n as number
  } finally {
    await db.end()
  }
}

describe("wa keys create", () => {
  it("creates keys up to the project's cap, then refuses with a clear message and creates nothing", { timeout: 300_000 }, async () => {
    const projectId = service.projectId
    // The bootstrap key is the first; the CLI adds up to the cap.
    expect(await keysOf(projectId)).toBe(1)
    for (let i = 1; i < CAP; i++) {
      const made = await service.cli("keys", "create", "--project", projectId, "--name", `cli ${i}`)
      expect(made.code, made.stderr).toBe(0)
      expect(JSON.parse(made.stdout).secret_token).toMatch(/^wa/)
    }
    expect(await keysOf(projectId)).toBe(CAP)

    const refused = await service.cli("keys", "create", "--project", projectId, "--name", "one too many")
    expect(refused.code).not.toBe(0)
    expect(refused.stdout).not.toContain("secret_token")
    expect(refused.stderr).toContain(`already has ${CAP} API keys`)
    expect(refused.stderr).toContain(`limit is ${CAP}`)
    expect(refused.stderr).toContain("WA_MAX_KEYS_PER_PROJECT")
    expect(await keysOf(projectId)).toBe(CAP)

    // The API agrees: 403 plan_limit_reached.
    const api = await service.request("POST", `/v1/projects/${projectId}/api_keys`, { body: { name: "through the API" } })
    expect(api.status, api.text).toBe(403)
    expect(api.json.code).toBe("plan_limit_reached")

    // A revoked key frees its place, for the CLI too.
    const listed = await service.request("GET", `/v1/projects/${projectId}/api_keys?limit=100`)
    const victim = listed.json.items.find((key: any) => key.name === "cli 1")
    expect((await service.request("DELETE", `/v1/projects/${projectId}/api_keys/${victim.id}`)).status).toBeLessThan(300)
    const again = await service.cli("keys", "create", "--project", projectId, "--name", "after a revoke")
    expect(again.code, again.stderr).toBe(0)
    expect(await keysOf(projectId)).toBe(CAP)
  })
})
