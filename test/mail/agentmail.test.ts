/**
 * agentmail end to end: the real service with its SMTP listener on a loopback port
 * (WA_SMTP_LISTEN), real Chromium, the scripted model and a local sign-up site that mails a
 * confirmation link over SMTP (test/fixtures/sites/mail-signup.ts). The agent reads its inbox
 * address from its prompt, signs up with it, waits for the mail, opens the link and reports the
 * confirmed account. Then: the session's inbox over the API, mail to an unknown address refused
 * at RCPT (550), an oversized message refused (552), and a session created with agentmail: false
 * has no address, no mail tools and refuses mail.
 */
import { createTransport } from "nodemailer"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../../src/net/free-port.ts"
import { type ChatRequest, lastUserText, promptText, type ScriptedModel, startScriptedModel, taskOf, toolResults } from "../fixtures/model/scripted-model.ts"
import { type MailSignupSite, startMailSignupSite } from "../fixtures/sites/mail-signup.ts"
import { type Service, scriptedAgentEnv, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"
import { waitForRunStatus } from "../support/runs.ts"

const MAX_BYTES = 64 * 1024

let site: MailSignupSite
let model: ScriptedModel
let service: Service
let smtpPort: number

const refNamed = (observation: string, name: string) => observation.match(new RegExp(`"${name}" \\[((?:f\\d+)?e\\d+)\\]`))?.[1]
const toolsOf = (request: ChatRequest) => (request.tools ?? []).map((t) => t.function.name)

beforeAll(async () => {
  smtpPort = await freePort()
  site = await startMailSignupSite({ host: "127.0.0.1", port: smtpPort })
  model = await startScriptedModel((request) => {
    const page = lastUserText(request)
    const task = taskOf(request)
    const results = toolResults(request) as Array<{ code?: string; error?: string; links?: Array<string>; codes?: Array<string> }>
    const last = results.at(-1)
    if (task.startsWith("sign up")) {
      const address = promptText(request).match(/own email inbox: (\S+@\S+?)\. /)?.[1]
      if (address === undefined) return { tool: "done", args: { output: { failed: "no inbox address in the prompt" } } }
      const confirmed = page.match(/Account confirmed for (\S+)/)?.[1]
      if (confirmed !== undefined) return { tool: "done", args: { output: { confirmed_account: confirmed, code_seen: results.find((r) => r.codes)?.codes?.[0] ?? null } } }
      if (last?.links !== undefined) return { tool: "navigate", args: { url: last.links.find((link) => link.includes("/confirm"))! } }
      if (last?.code !== undefined) return { tool: "done", args: { output: { failed: last } } }
      if (page.includes("Check your email")) return { tool: "wait_for_email", args: { subject: "confirm", timeout_seconds: 60 } }
      if (page.includes("Create your account")) return { tool: "type", args: { ref: refNamed(page, "Email"), text: address, submit: true } }
      return { tool: "navigate", args: { url: `${site.url}/signup` } }
    }
    return { tool: "done", args: { output: { tools: toolsOf(request) } } }
  })
  service = await startService({
    env: scriptedAgentEnv(model.baseUrl, { WA_SMTP_LISTEN: `127.0.0.1:${smtpPort}`, WA_INBOUND_MAIL_MAX_BYTES: String(MAX_BYTES) })
  })
})
afterAll(async () => {
  await stopAndClean(service)
  await model?.close()
  await site?.close()
})

const sessionsPath = () => `/v1/projects/${service.projectId}/do_anything/sessions`
const terminal = ["done", "failed", "canceled"]

const runToEnd = async (body: Record<string, unknown>) => {
  const created = await service.request("POST", sessionsPath(), { body })
  expect(created.status, created.text).toBe(201)
  const sid = created.json.id as string
  const rid = created.json.latest_run_id as string
  const runPath = `${sessionsPath()}/${sid}/runs/${rid}`
  const run = await waitForRunStatus(service, runPath, terminal, { timeoutMs: 120_000, everyMs: 250 })
  const { events } = await readSse(`${service.url}${runPath}/events`, { authorization: `Bearer ${service.apiKey}` }, {
    stopAfter: (seen) => seen.some((event) => event.event === "run.completed")
  })
  return { created: created.json, run, events, sid, rid }
}

/** Sends one message to the listener as a mail server would; the SMTP error (with its code) when refused. */
const sendMail = async (to: string, extra: { text?: string; attachments?: Array<{ filename: string; content: string }> } = {}) => {
  const transport = createTransport({ host: "127.0.0.1", port: smtpPort, secure: false, ignoreTLS: true })
  try {
    await transport.sendMail({ from: "sender@example.org", to, subject: "Hello", text: extra.text ?? "hello", ...(extra.attachments ? { attachments: extra.attachments } : {}) })
    return undefined
  } catch (error) {
    return error as { responseCode?: number; response?: string }
  } finally {
    transport.close()
  }
}

let signup: Awaited<ReturnType<typeof runToEnd>>

describe("agentmail", () => {
  it("the agent signs up with its inbox address, waits for the mail, opens the link and reports the confirmed account", async () => {
    signup = await runToEnd({ instructions: "sign up at the shop with your email address and confirm the account" })
    const address = `${signup.sid}@agents.localhost`
    expect(signup.created.inbox_address).toBe(address)
    expect(signup.run.status, JSON.stringify(signup.run)).toBe("done")
    expect(site.sent.map((mail) => mail.to)).toEqual([address])
    expect(site.confirmed).toEqual([address])
    expect(signup.run.output).toEqual({ confirmed_account: address, code_seen: site.sent[0]!.code })
    const received = signup.events.filter((event) => event.event === "run.email_received")
    expect(received).toHaveLength(1)
    const data = received[0]!.data
    const payload = typeof data === "string" ? JSON.parse(data) : data
    expect(payload.data).toMatchObject({ session_id: signup.sid, subject: "Confirm your account", from: expect.stringContaining("accounts@shop.example") })
    const session = await service.request("GET", `${sessionsPath()}/${signup.sid}`)
    expect(session.json.inbox_address).toBe(address)
  })

  it("lists the session's messages and gets one with its body, links and codes", async () => {
    const list = await service.request("GET", `${sessionsPath()}/${signup.sid}/inbox`)
    expect(list.status, list.text).toBe(200)
    expect(list.json.items).toHaveLength(1)
    const item = list.json.items[0]
    expect(item).toMatchObject({ session_id: signup.sid, run_id: signup.rid, subject: "Confirm your account", to: `${signup.sid}@agents.localhost` })
    const message = await service.request("GET", `${sessionsPath()}/${signup.sid}/inbox/${item.id}`)
    expect(message.status, message.text).toBe(200)
    expect(message.json.links).toContain(`${site.url}/confirm?token=${site.sent[0]!.token}`)
    expect(message.json.codes[0]).toBe(site.sent[0]!.code)
    expect(message.json.text).toContain("Confirm your account")
    const missing = await service.request("GET", `${sessionsPath()}/${signup.sid}/inbox/eml_00000000000000000000000000`)
    expect(missing.status).toBe(404)
    expect(missing.json.code).toBe("inbox_message_not_found")
    const otherSession = await service.request("GET", `${sessionsPath()}/sess_00000000000000000000000000/inbox`)
    expect(otherSession.status).toBe(404)
  })

  it("pages the inbox with a cursor; an attachment of a session without a workspace is dropped with a note", async () => {
    expect(await sendMail(`${signup.sid}@agents.localhost`, { attachments: [{ filename: "invoice.txt", content: "total 12" }] })).toBeUndefined()
    const first = await service.request("GET", `${sessionsPath()}/${signup.sid}/inbox?limit=1`)
    expect(first.json.items).toHaveLength(1)
    expect(first.json.items[0].subject).toBe("Hello")
    expect(first.json.next_cursor).not.toBeNull()
    const second = await service.request("GET", `${sessionsPath()}/${signup.sid}/inbox?limit=1&cursor=${first.json.next_cursor}`)
    expect(second.json.items.map((m: { subject: string }) => m.subject)).toEqual(["Confirm your account"])
    expect(second.json.next_cursor).toBeNull()
    const withAttachment = await service.request("GET", `${sessionsPath()}/${signup.sid}/inbox/${first.json.items[0].id}`)
    expect(withAttachment.json.attachments).toEqual([
      expect.objectContaining({ filename: "invoice.txt", saved_as: null, note: expect.stringContaining("no workspace") })
    ])
  })

  it("saves an attachment into the session's workspace when it has one", async () => {
    const workspace = await service.request("POST", `/v1/projects/${service.projectId}/workspaces`, { body: { name: "mail" } })
    expect(workspace.status, workspace.text).toBe(201)
    const wid = workspace.json.id as string
    const session = await runToEnd({ instructions: "report your tools", workspace_id: wid })
    expect((session.run.output as { tools: Array<string> }).tools).toEqual(expect.arrayContaining(["read_inbox", "read_email", "wait_for_email"]))
    expect(await sendMail(session.created.inbox_address, { attachments: [{ filename: "invoice.txt", content: "total 12" }] })).toBeUndefined()
    const list = await service.request("GET", `${sessionsPath()}/${session.sid}/inbox`)
    const message = await service.request("GET", `${sessionsPath()}/${session.sid}/inbox/${list.json.items[0].id}`)
    expect(message.json.attachments).toEqual([{ filename: "invoice.txt", content_type: "text/plain", size_bytes: 8, saved_as: "invoice.txt", note: null }])
    const file = await service.request("GET", `/v1/projects/${service.projectId}/workspaces/${wid}/files/invoice.txt`)
    expect(file.status, file.text).toBe(200)
    expect(file.json.size_bytes).toBe(8)
  })

  it("refuses mail for an unknown address at RCPT and stores nothing", async () => {
    for (const to of ["sess_00000000000000000000000000@agents.localhost", `${signup.sid}@elsewhere.test`, "postmaster@agents.localhost"]) {
      const refused = await sendMail(to)
      expect(refused?.responseCode, to).toBe(550)
    }
  })

  it("refuses an oversized message with 552 and stores nothing", async () => {
    const refused = await sendMail(`${signup.sid}@agents.localhost`, { text: "x".repeat(MAX_BYTES + 1024) })
    expect(refused?.responseCode).toBe(552)
    const list = await service.request("GET", `${sessionsPath()}/${signup.sid}/inbox`)
    expect(list.json.items).toHaveLength(2)
  })

  it("a session created with agentmail: false has no address, no mail tools, and refuses mail; so does a closed session", async () => {
    const plain = await runToEnd({ instructions: "report your tools", agentmail: false })
    expect(plain.created.inbox_address).toBeNull()
    expect(plain.run.status).toBe("done")
    const tools = (plain.run.output as { tools: Array<string> }).tools
    expect(tools).toContain("navigate")
    expect(tools).not.toContain("read_inbox")
    expect(tools).not.toContain("wait_for_email")
    expect((await sendMail(`${plain.sid}@agents.localhost`))?.responseCode).toBe(550)
    // A closed session's address refuses mail too.
    const closed = await service.request("POST", `${sessionsPath()}/${signup.sid}/close`)
    expect(closed.status, closed.text).toBe(200)
    expect((await sendMail(`${signup.sid}@agents.localhost`))?.responseCode).toBe(550)
    // The sign-up run was offered them.
    const signupRequest = model.requests.find((request) => taskOf(request).startsWith("sign up"))!
    expect(toolsOf(signupRequest)).toEqual(expect.arrayContaining(["read_inbox", "read_email", "wait_for_email"]))
  })
})
