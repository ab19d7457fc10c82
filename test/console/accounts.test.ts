/**
 * The console with console accounts, in real Chromium against the real service (embedded
 * PostgreSQL, the scripted model): the first user from `wa users create` signs in with email and
 * password (the session is the HttpOnly cookie, nothing secret in the page's storage), picks the
 * project, starts a run and watches its events over the cookie session, creates an API key (the
 * key shows who created it), invites a member whose link is accepted in a second browser with a
 * new password; the member sees no admin actions and the server refuses them when tried anyway;
 * the admin disables and re-enables the member; bug report with a screenshot; password change;
 * sign-out ends the session on the server; an SSO button leads through a real OpenID Connect
 * provider (`oidc-provider` on loopback) back into the console. Screenshots go to
 * test-results/console/.
 */
import { mkdirSync } from "node:fs"
import * as path from "node:path"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type BrowserWatch, watchBrowser } from "../support/contract-browser.ts"
import { buildConsole, isStale } from "../../console/build.ts"
import { selectChromium } from "../../src/browser/chromium-executable.ts"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { freePort, type OidcProvider, startOidcProvider } from "../fixtures/oidc/provider.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { createUser } from "../accounts/support.ts"

const shots = path.resolve(import.meta.dirname, "../../test-results/console")
let model: ScriptedModel
let oidc: OidcProvider | undefined
let service: Service
let browser: Browser
let browserWatch: BrowserWatch
let adminContext: BrowserContext
let admin: Page
let memberContext: BrowserContext
let member: Page
let inviteUrl: string
const adminPassword = "admin-password-1"
const memberPassword = "member-password-1"

beforeAll(async () => {
  if (isStale()) await buildConsole()
  mkdirSync(shots, { recursive: true })
  model = await startScriptedModel(() => ({ tool: "done", args: { output: "finished" } }))
  // A real OpenID Connect provider on loopback: any login name is the verified account `<name>@corp.example.com`.
  const servicePort = await freePort()
  oidc = await startOidcProvider(servicePort)
  service = await startService({
    env: {
      WA_PORT: String(servicePort),
      WA_MODEL_BASE_URL: model.baseUrl,
      WA_MODEL: "scripted",
      WA_ALLOW_PRIVATE_NETWORKS: "true",
      WA_STEP_SCREENSHOTS: "false",
      WA_OIDC_PROVIDERS: oidc.providersEnv
    }
  })
  await createUser(service, "ada@example.test", adminPassword, ["--name", "Ada", "--tenant", "ten_default", "--role", "admin"])
  const local = await selectChromium({ explicitPath: process.env["CHROMIUM_PATH"], dataDir: service.dataDir })
  const prepared = await local.prepare()
  browser = await chromium.launch({ executablePath: prepared.executablePath, env: { ...process.env, ...prepared.env }, args: ["--no-sandbox"] })
  browserWatch = watchBrowser(service.url)
  adminContext = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  browserWatch.watch(adminContext)
  admin = await adminContext.newPage()
  admin.setDefaultTimeout(60_000)
  memberContext = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  browserWatch.watch(memberContext)
  member = await memberContext.newPage()
  member.setDefaultTimeout(60_000)
})
// What the browsers got from the service goes through the contract hook; a mismatch fails the test whose page got it.
afterEach(async () => {
  expect(await browserWatch?.takeMismatches() ?? []).toEqual([])
})
afterAll(async () => {
  await browser?.close()
  await stopAndClean(service)
  await model?.close()
  await oidc?.close()
})

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true })

/** A request from inside the page with its cookie session (and the CSRF header from wa_csrf on writes). */
const fromPage = (page: Page, method: string, pathname: string, body?: unknown) =>
  page.evaluate(async ({ method, pathname, body }) => {
    const csrf = /(?:^|; )wa_csrf=([^;]*)/.exec(document.cookie)?.[1]
    const response = await fetch(pathname, {
      method,
      headers: { "content-type": "application/json", ...(csrf && method !== "GET" ? { "x-csrf-token": decodeURIComponent(csrf) } : {}) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: response.status, json: await response.json().catch(() => null) as any }
  }, { method, pathname, body })

const openProject = async (page: Page, projectId: string) => {
  await page.getByRole("heading", { name: "Pick a project" }).waitFor()
  await page.locator("li", { has: page.getByText(projectId, { exact: true }) }).getByRole("button", { name: /^Open/ }).click()
  await page.getByRole("heading", { name: "Sessions" }).waitFor()
  expect(await page.getByTestId("project-id").textContent()).toBe(projectId)
}

const nav = (page: Page, label: string) => page.locator("nav").getByRole("link", { name: label, exact: true }).click()

describe("the console with console accounts", () => {
  it("signs in with email and password (refusing a wrong one), offers SSO, and picks the project", async () => {
    await admin.goto(`${service.url}/console`)
    const sso = admin.getByRole("link", { name: "Sign in with Corp SSO" })
    await sso.waitFor()
    expect(await sso.getAttribute("href")).toBe("/v1/auth/sso/corp/start?return_to=%2Fconsole%2F")
    await admin.getByLabel("Email").fill("ada@example.test")
    await admin.getByLabel("Password").fill("wrong-password")
    await admin.getByRole("button", { name: "Sign in", exact: true }).click()
    await expect.poll(() => admin.getByRole("alert").textContent()).toContain("Wrong email or password")
    await admin.getByLabel("Password").fill(adminPassword)
    await shot(admin, "20-account-sign-in")
    await admin.getByRole("button", { name: "Sign in", exact: true }).click()
    await admin.getByRole("heading", { name: "Pick a project" }).waitFor()
    await shot(admin, "21-pick-project")
    await openProject(admin, service.projectId)
    expect(await admin.getByTestId("signed-in-as").textContent()).toBe("ada@example.test")
    expect(await admin.getByTestId("role").textContent()).toBe("admin")

    // The session is the HttpOnly cookie: no token in the page's storage, none readable by script.
    const cookies = await adminContext.cookies(service.url)
    expect(cookies.find((c) => c.name === "wa_session")).toMatchObject({ httpOnly: true, sameSite: "Strict" })
    expect(await admin.evaluate(() => document.cookie)).not.toContain("wa_session")
    const stored = JSON.parse((await admin.evaluate(() => sessionStorage.getItem("wa.console.credentials")))!)
    expect(stored).toMatchObject({ kind: "session", projectId: service.projectId, tenantId: "ten_default", role: "admin" })
    expect(JSON.stringify(stored)).not.toMatch(/was_|wa_[0-9A-Za-z]{20}/)
    expect(await admin.evaluate(() => localStorage.length)).toBe(0)
    // A reload keeps the session and the picked project.
    await admin.reload()
    await admin.getByRole("heading", { name: "Sessions" }).waitFor()
  })

  it("starts a run and watches its events arrive over the cookie session", async () => {
    await admin.getByLabel("Instructions").fill("Finish at once")
    await admin.getByRole("button", { name: "Start run" }).click()
    await admin.waitForURL(/\/console\/sessions\/sess_[^/]+\/runs\/run_/)
    const [, sid, rid] = /sessions\/(sess_[^/]+)\/runs\/(run_[^/?#]+)/.exec(admin.url())!
    await admin.locator('[data-event-type="run.completed"]').waitFor()
    await expect.poll(() => admin.getByTestId("run-status").textContent()).toContain("done")
    const types = await admin.locator("[data-event-type]").evaluateAll((items) => items.map((li) => li.getAttribute("data-event-type")))
    expect(types).toEqual(expect.arrayContaining(["run.status_changed", "run.completed"]))
    const run = await service.request("GET", `/v1/projects/${service.projectId}/do_anything/sessions/${sid}/runs/${rid}`)
    expect(run.json).toMatchObject({ status: "done", output: "finished" })
    await shot(admin, "22-account-run-done")
  })

  it("creates an API key as the user: the list shows who created it", async () => {
    await nav(admin, "API keys")
    await admin.getByPlaceholder("name (optional)").fill("from the console")
    await admin.getByRole("button", { name: "Create", exact: true }).click()
    await admin.getByTestId("new-key").waitFor()
    const row = admin.locator("tr", { hasText: "from the console" })
    await expect.poll(() => row.getByTestId("key-user").textContent()).toMatch(/^usr_.*\(you\)$/)
    const keys = await service.request("GET", `/v1/projects/${service.projectId}/api_keys`)
    const created = keys.json.items.find((k: { name: string | null }) => k.name === "from the console")
    const me = await fromPage(admin, "GET", "/v1/auth/me")
    expect(created.user_id).toBe(me.json.user_id)
  })

  it("invites a member; the link is shown once and accepted in a second browser with a new password", async () => {
    await nav(admin, "Team")
    await admin.getByRole("table", { name: "members" }).getByText("ada@example.test").waitFor()
    await admin.getByLabel("Email to invite").fill("bob@example.test")
    await admin.getByLabel("Role", { exact: true }).selectOption("member")
    await admin.getByRole("button", { name: "Invite" }).click()
    inviteUrl = (await admin.getByTestId("invite-link").textContent())!
    expect(inviteUrl).toMatch(/\/console\/accept-invitation\?token=/)
    const pending = admin.locator('tr[data-invitation="bob@example.test"]')
    await expect.poll(() => pending.locator("[data-status]").getAttribute("data-status")).toBe("pending")
    await shot(admin, "23-team-invite")
    // Shown once: after a reload the list has the invitation, the link is gone.
    await admin.reload()
    await admin.locator('tr[data-invitation="bob@example.test"]').waitFor()
    expect(await admin.getByTestId("invite-link").count()).toBe(0)

    const token = new URL(inviteUrl).searchParams.get("token")!
    await member.goto(`${service.url}/console/accept-invitation?token=${encodeURIComponent(token)}`)
    await member.getByRole("heading", { name: "Join a team" }).waitFor()
    await member.getByLabel("Email (the invited address)").fill("bob@example.test")
    await member.getByLabel("Display name").fill("Bob")
    await member.getByLabel("Password", { exact: true }).fill(memberPassword)
    await member.getByLabel("Repeat the password").fill(memberPassword)
    await shot(member, "24-accept-invitation")
    await member.getByRole("button", { name: "Create account and join" }).click()
    await openProject(member, service.projectId)
    expect(await member.getByTestId("role").textContent()).toBe("member")
    // The link works once.
    const again = await service.fetch(`${service.url}/v1/invitations/accept`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ token, password: "another-password" }) })
    expect((await again.json()).code).toBe("invitation_accepted")
    await admin.reload()
    await expect.poll(() => admin.locator('tr[data-invitation="bob@example.test"] [data-status]').getAttribute("data-status")).toBe("accepted")
    await admin.locator('tr[data-member="bob@example.test"]').waitFor()
  })

  it("shows a member no admin actions, and the server refuses them when tried anyway", async () => {
    const links = await member.locator("nav a").allTextContents()
    expect(links).not.toContain("API keys")
    expect(links).toEqual(expect.arrayContaining(["Team", "Projects", "Bug reports", "Account"]))
    await nav(member, "Team")
    await member.locator('tr[data-member="ada@example.test"]').waitFor()
    expect(await member.getByTestId("my-role").textContent()).toBe("member")
    expect(await member.getByRole("combobox").count()).toBe(0)
    expect(await member.getByRole("button", { name: /^Disable/ }).count()).toBe(0)
    expect(await member.getByRole("heading", { name: "Invitations" }).count()).toBe(0)
    await shot(member, "25-member-team")
    await nav(member, "Projects")
    await member.getByRole("table", { name: "projects" }).getByText(service.projectId).waitFor()
    expect(await member.getByRole("button", { name: "Create project" }).count()).toBe(0)
    // The server enforces the roles whatever the page shows.
    const users = await fromPage(admin, "GET", "/v1/tenants/ten_default/members?limit=100")
    const adaId = users.json.items.find((m: { email: string }) => m.email === "ada@example.test").user_id
    const refused = [
      await fromPage(member, "POST", "/v1/tenants/ten_default/invitations", { email: "eve@example.test" }),
      await fromPage(member, "PATCH", `/v1/tenants/ten_default/members/${adaId}`, { role: "member" }),
      await fromPage(member, "POST", "/v1/tenants/ten_default/projects", { name: "nope" }),
      await fromPage(member, "GET", `/v1/projects/${service.projectId}/api_keys`),
      await fromPage(member, "POST", `/v1/projects/${service.projectId}/api_keys`, { scope: "admin" })
    ]
    expect(refused.map((r) => [r.status, r.json?.code])).toEqual(refused.map(() => [403, "forbidden"]))
    // The API keys page itself, opened by URL, says why it is empty.
    await member.goto(`${service.url}/console/keys`)
    await member.getByText("Managing keys needs the admin role").waitFor()
  })

  it("lets the admin disable and re-enable the member (the member's next request is refused meanwhile)", async () => {
    await admin.getByRole("button", { name: "Disable bob@example.test" }).click()
    await admin.getByRole("button", { name: "Enable bob@example.test" }).waitFor()
    expect((await fromPage(member, "GET", `/v1/projects/${service.projectId}/do_anything/sessions`)).status).toBe(403)
    await admin.getByRole("button", { name: "Enable bob@example.test" }).click()
    await admin.getByRole("button", { name: "Disable bob@example.test" }).waitFor()
    expect((await fromPage(member, "GET", `/v1/projects/${service.projectId}/do_anything/sessions`)).status).toBe(200)
  })

  it("files a bug report with a screenshot and lists it", async () => {
    await member.goto(`${service.url}/console/bug-reports`)
    await member.getByLabel("What went wrong?").fill("The run list does not refresh")
    const png = await member.screenshot({ clip: { x: 0, y: 0, width: 200, height: 120 } })
    await member.getByLabel(/^Screenshot/).setInputFiles({ name: "shot.png", mimeType: "image/png", buffer: png })
    await member.getByAltText("screenshot to send").waitFor()
    await member.getByRole("button", { name: "Send report" }).click()
    await member.getByRole("status").filter({ hasText: "Sent" }).waitFor()
    const row = member.locator("tr", { hasText: "The run list does not refresh" })
    await row.getByRole("img").waitFor()
    await shot(member, "26-bug-reports")
    const listed = await service.request("GET", `/v1/projects/${service.projectId}/bug_reports`)
    const report = listed.json.items.find((r: { message: string }) => r.message === "The run list does not refresh")
    expect(report.screenshot_data_url).toMatch(/^data:image\/png;base64,/)
    expect(report.user_id).toMatch(/^usr_/)
  })

  it("changes the password (a wrong current one is refused without signing out), then signs out and in again", async () => {
    await nav(member, "Account")
    await member.getByTestId("account-email").waitFor()
    await member.getByLabel("Current password").fill("not-my-password")
    await member.getByLabel("New password", { exact: true }).fill("member-password-2")
    await member.getByLabel("Repeat the new password").fill("member-password-2")
    await member.getByRole("button", { name: "Change password" }).click()
    await expect.poll(() => member.getByRole("alert").textContent()).toContain("current password is wrong")
    await member.getByLabel("Current password").fill(memberPassword)
    await member.getByRole("button", { name: "Change password" }).click()
    await member.getByRole("status").filter({ hasText: "Password changed" }).waitFor()

    await member.getByRole("button", { name: "Sign out" }).click()
    await member.getByLabel("Email", { exact: true }).waitFor()
    expect((await fromPage(member, "GET", "/v1/auth/me")).status).toBe(401)
    await member.getByLabel("Email").fill("bob@example.test")
    await member.getByLabel("Password").fill("member-password-2")
    await member.getByRole("button", { name: "Sign in", exact: true }).click()
    await openProject(member, service.projectId)
  })

  it("signs out: the session ends on the server, and the console is back at sign-in", async () => {
    const before = (await adminContext.cookies(service.url)).find((c) => c.name === "wa_session")!.value
    // A second tab of the same browser shares the cookie session (and picks its own project).
    const otherTab = await adminContext.newPage()
    await otherTab.goto(`${service.url}/console`)
    await otherTab.getByRole("heading", { name: "Pick a project" }).waitFor()
    await admin.getByRole("button", { name: "Sign out" }).click()
    // Exact: the team page's "Email to invite" field would match a substring before sign-out ends.
    await admin.getByLabel("Email", { exact: true }).waitFor()
    await expect.poll(() => admin.evaluate(() => sessionStorage.getItem("wa.console.credentials"))).toBeNull()
    await expect.poll(async () => (await adminContext.cookies(service.url)).find((c) => c.name === "wa_session")).toBeUndefined()
    // The old cookie no longer works, even if someone kept it.
    const replay = await service.fetch(`${service.url}/v1/auth/me`, { headers: { cookie: `wa_session=${before}` } })
    expect(replay.status).toBe(401)
    await admin.reload()
    await admin.getByLabel("Email", { exact: true }).waitFor()
    await shot(admin, "27-signed-out")
    // The other tab's next request is refused (401): it signs out too and says why.
    await otherTab.locator("li", { has: otherTab.getByText(service.projectId, { exact: true }) }).getByRole("button", { name: /^Open/ }).click()
    await otherTab.getByRole("status").filter({ hasText: "Your session has ended" }).waitFor()
    await otherTab.getByLabel("Email", { exact: true }).waitFor()
    expect(await otherTab.evaluate(() => sessionStorage.getItem("wa.console.credentials"))).toBeNull()
    await otherTab.close()
  })

  it("signs in with an SSO button through the provider and lands in the console's project picker", async () => {
    await createUser(service, "lee@corp.example.com", "lee-password-1", ["--tenant", "ten_default", "--role", "member"])
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    browserWatch.watch(context)
    try {
      // Only loopback: the provider's pages import a web font that must not be fetched.
      await context.route((url) => url.hostname !== "127.0.0.1", (route) => route.abort())
      const page = await context.newPage()
      page.setDefaultTimeout(60_000)
      await page.goto(`${service.url}/console`)
      await page.getByRole("link", { name: "Sign in with Corp SSO" }).click()
      await page.waitForURL((url) => url.port !== new URL(service.url).port, { waitUntil: "domcontentloaded" })
      await page.fill("input[name=login]", "lee")
      await page.fill("input[name=password]", "anything")
      await Promise.all([page.waitForURL(/\/interaction\//, { waitUntil: "domcontentloaded" }), page.click("button[type=submit]")])
      await page.click("button[type=submit]")
      await page.waitForURL(`${service.url}/console/`)
      await openProject(page, service.projectId)
      expect(await page.getByTestId("signed-in-as").textContent()).toBe("lee@corp.example.com")
      expect(await page.getByTestId("role").textContent()).toBe("member")
      await shot(page, "28-sso-signed-in")
    } finally {
      await context.close()
    }
  })
})
