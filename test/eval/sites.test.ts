/**
 * The eval's fixture sites check the tasks themselves: a code is never in a page's HTML, a form
 * with wrong values reveals nothing, and the codes differ per task and per start (so an agent can
 * neither read nor guess them). Plain HTTP against the real sites, no service.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type EvalSite, startEvalSite } from "../../src/eval/sites.ts"
import { evalTasks } from "../../src/eval/tasks.ts"

let site: EvalSite

beforeAll(async () => {
  site = await startEvalSite()
})
afterAll(async () => {
  await site.close()
})

const get = async (path: string, init?: RequestInit) => {
  const response = await fetch(site.url + path, { redirect: "manual", ...init })
  return { status: response.status, text: await response.text(), headers: response.headers }
}
const form = (fields: Record<string, string>, cookie?: string): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded", ...(cookie !== undefined ? { cookie } : {}) },
  body: new URLSearchParams(fields).toString()
})

describe("eval fixture sites", () => {
  it("every task's start page is served and carries no success code", async () => {
    for (const task of evalTasks) {
      const page = await get(task.path)
      expect(page.status, task.name).toBe(200)
      expect(page.text, task.name).not.toContain(site.codeOf(task.name))
      expect(page.text, task.name).not.toMatch(/WA-[0-9A-F]{10}/)
    }
    expect(site.solved.size).toBe(0)
  })

  it("codes differ per task and per start", async () => {
    const codes = new Set(evalTasks.map((t) => site.codeOf(t.name)))
    expect(codes.size).toBe(evalTasks.length)
    const other = await startEvalSite()
    try {
      expect(other.codeOf("wizard")).not.toBe(site.codeOf("wizard"))
    } finally {
      await other.close()
    }
  })

  it("a multi-page form with a wrong value reveals nothing; the right values reveal the code", async () => {
    const wrong = await get("/t/wizard/done", form({ name: "Ana Silva", city: "Faro", postcode: "4000-123", confirm: "yes" }))
    expect(wrong.text).toContain("Order rejected")
    expect(wrong.text).not.toContain(site.codeOf("wizard"))
    expect(site.solved.has("wizard")).toBe(false)
    const right = await get("/t/wizard/done", form({ name: "Ana Silva", city: "Porto", postcode: "4000-123", confirm: "yes" }))
    expect(right.text).toContain(`Success code: ${site.codeOf("wizard")}`)
    expect(site.solved.has("wizard")).toBe(true)
  })

  it("the 2FA login needs the password and then the one-time code", async () => {
    expect((await get("/t/login-2fa/account")).headers.get("location")).toBe("/t/login-2fa")
    const signedIn = await get("/t/login-2fa", form({ username: "eval", password: "correct-horse" }))
    expect(signedIn.status).toBe(303)
    const cookie = signedIn.headers.get("set-cookie")!.split(";")[0]!
    // Past the password but not the code: no account yet.
    expect((await get("/t/login-2fa/account", { headers: { cookie } })).status).toBe(303)
    const wrong = await get("/t/login-2fa/verify", form({ otp: "000000" }, cookie))
    expect(wrong.text).toContain("not right")
    const verified = await get("/t/login-2fa/verify", form({ otp: site.oneTimeCode }, cookie))
    expect(verified.headers.get("location")).toBe("/t/login-2fa/account")
    expect((await get("/t/login-2fa/account", { headers: { cookie } })).text).toContain(site.codeOf("login-2fa"))
  })

  it("the upload task takes only the expected file content", async () => {
    const upload = (content: string) => {
      const body = new FormData()
      body.append("invoice", new Blob([content], { type: "text/plain" }), "invoice.txt")
      return get("/t/file-input", { method: "POST", body })
    }
    expect((await upload("something else")).text).toContain("Upload failed")
    expect((await upload(site.uploadContent)).text).toContain(site.codeOf("file-input"))
  })
})
