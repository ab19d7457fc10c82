/**
 * The safety boundary against what a page sends by itself, past forms and fetch (issue 28 §2):
 * the real service, real Chromium, the scripted model, and a fixture site served by this test,
 * with a real WebSocket endpoint (the handshake and framing of RFC 6455, done here on node:http's
 * upgrade).
 *
 * - A click whose handler sends the message with `navigator.sendBeacon`, and a chat page that
 *   sends it over a WebSocket: with `confirm_actions: ["send_message"]` each is held in the page
 *   and a person is asked; "no" leaves nothing sent (the run ends as for a form: the agent is told
 *   the user declined), "yes" sends the held payload once, as the page made it.
 * - A form inside a shadow root (made by attachShadow, and a declarative one) that the page submits
 *   with a plain click on its submit button: stopped and asked as a light-DOM form; "yes" lets the
 *   repeated click submit once.
 * - Beacons and socket messages that are not guarded (an analytics beacon on load, a socket's
 *   hello and typing messages) go through untouched while the guard is on; and with no matching
 *   category everything goes through at once (the tests above can fail).
 */
import { createHash } from "node:crypto"
import { createServer } from "node:http"
import type { Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { lastUserText, refOfElement, type ScriptedModel, startScriptedModel, taskOf, toolResults } from "../fixtures/model/scripted-model.ts"
import { eventually, waitForRunStatus } from "../support/runs.ts"
import { type Service, scriptedAgentEnv, startService, stopAndClean } from "../support/service.ts"
import { listen, safetyClient, terminal } from "./support.ts"

const page = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`

/**
 * A chat room whose "Finish" button sends the draft over a WebSocket (hello on open, typing as one
 * writes, and a relayed request naming its method, {"method": "post"}, with the message).
 */
const chatPage = page("Chat", `<h1>Chat room</h1>
  <label>Message <input id="draft"></label>
  <button type="button" id="finish">Finish</button>
  <p id="status">Connecting</p>
  <script>
    const status = document.getElementById("status")
    const draft = document.getElementById("draft")
    const socket = new WebSocket("ws://" + location.host + "/socket")
    socket.onopen = () => { socket.send(JSON.stringify({ type: "hello" })); status.textContent = "Connected" }
    socket.onmessage = (event) => { const reply = JSON.parse(event.data); if (reply.type === "delivered") status.textContent = "Delivered: " + reply.text }
    draft.addEventListener("input", () => { socket.send(JSON.stringify({ type: "typing" })); status.textContent = "Draft: " + draft.value })
    document.getElementById("finish").addEventListener("click", () => {
      // A relayed request names its HTTP method: not an operation, it goes through.
      socket.send(JSON.stringify({ type: "presence", method: "post", path: "/presence" }))
      socket.send(JSON.stringify({ type: "chat.sendMessage", text: draft.value }))
      draft.value = ""
      status.textContent = "Sending"
    })
  </script>`)

/** A page that beacons a page view on load, and sends the seller a message by beacon on "Finish". */
const beaconPage = page("Seller", `<h1>Contact the seller</h1>
  <button type="button" id="finish">Finish</button>
  <p id="status">Not sent</p>
  <script>
    navigator.sendBeacon("/collect", JSON.stringify({ event: "page_view", page: "seller" }))
    document.getElementById("finish").addEventListener("click", () => {
      navigator.sendBeacon("/api/inbox/messages", new URLSearchParams({ to: "seller", body: "Is it still available?" }))
      document.getElementById("status").textContent = "Queued"
    })
  </script>`)

/** The note form of both shadow pages: "Review" clicks the form's own submit button. */
const noteForm = `<form method="post" action="/notes/messages">
  <label>Note <input name="body" value="Hi there"></label>
  <button type="button" onclick="this.form.querySelector('button[type=submit]').click()">Review</button>
  <button type="submit">Save</button>
</form>`

const shadowPage = page("Notes", `<h1>Notes</h1><note-box></note-box>
  <script>
    customElements.define("note-box", class extends HTMLElement {
      connectedCallback() { this.attachShadow({ mode: "open" }).innerHTML = ${JSON.stringify(noteForm)} }
    })
  </script>`)

const declarativeShadowPage = page("Notes", `<h1>Notes</h1><div><template shadowrootmode="open">${noteForm}</template></div>`)

interface Site {
  readonly port: number
  readonly counts: Record<string, number>
  /** The types of the socket messages received, in order. */
  readonly socketTypes: Array<string>
  /** The texts of the chat messages received. */
  readonly chatTexts: Array<string>
  close(): Promise<void>
}

/** A server frame (unmasked, FIN set) with a payload under 64 KiB. */
const frame = (opcode: number, payload: Buffer) =>
  Buffer.concat([
    payload.length < 126 ? Buffer.from([0x80 | opcode, payload.length]) : Buffer.from([0x80 | opcode, 126, payload.length >> 8, payload.length & 0xff]),
    payload
  ])

/** Accepts a WebSocket on `socket` and calls `onText` with each text message the client sends. */
const acceptWebSocket = (key: string, socket: Socket, onText: (text: string, reply: (text: string) => void) => void) => {
  const accept = createHash("sha1").update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64")
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`)
  let buffered = Buffer.alloc(0)
  socket.on("data", (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk])
    for (;;) {
      if (buffered.length < 2) return
      const opcode = buffered[0]! & 0x0f
      let length = buffered[1]! & 0x7f
      let offset = 2
      if (length === 126) {
        if (buffered.length < 4) return
        length = buffered.readUInt16BE(2)
        offset = 4
      } else if (length === 127) {
        if (buffered.length < 10) return
        length = Number(buffered.readBigUInt64BE(2))
        offset = 10
      }
      const masked = (buffered[1]! & 0x80) !== 0
      const total = offset + (masked ? 4 : 0) + length
      if (buffered.length < total) return
      const payload = Buffer.from(buffered.subarray(total - length, total))
      if (masked) for (let i = 0; i < payload.length; i++) payload[i] = payload[i]! ^ buffered[offset + (i % 4)]!
      buffered = buffered.subarray(total)
      if (opcode === 0x8) {
        socket.end(frame(0x8, Buffer.alloc(0)))
        return
      }
      if (opcode === 0x9) socket.write(frame(0xa, payload))
      if (opcode === 0x1) onText(payload.toString("utf8"), (text) => socket.write(frame(0x1, Buffer.from(text))))
    }
  })
  socket.on("error", () => undefined)
}

const startSite = async (): Promise<Site> => {
  const counts: Record<string, number> = { collect: 0, beaconMessages: 0, notes: 0 }
  const socketTypes: Array<string> = []
  const chatTexts: Array<string> = []
  const sockets = new Set<Socket>()
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x")
    const html = (body: string) => res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(body)
    if (req.method === "POST") req.resume()
    if (req.method === "GET" && url.pathname === "/chat") return html(chatPage)
    if (req.method === "GET" && url.pathname === "/seller") return html(beaconPage)
    if (req.method === "GET" && url.pathname === "/shadow") return html(shadowPage)
    if (req.method === "GET" && url.pathname === "/shadow-declarative") return html(declarativeShadowPage)
    if (req.method === "POST" && url.pathname === "/collect") {
      counts["collect"]!++
      return res.writeHead(204).end()
    }
    if (req.method === "POST" && url.pathname === "/api/inbox/messages") {
      counts["beaconMessages"]!++
      return res.writeHead(204).end()
    }
    if (req.method === "POST" && url.pathname === "/notes/messages") {
      counts["notes"]!++
      return html(page("Notes", "<h1>Note sent</h1>"))
    }
    res.writeHead(404, { "content-type": "text/plain" }).end("not found")
  })
  server.on("upgrade", (req, socket: Socket) => {
    const key = req.headers["sec-websocket-key"]
    if (req.url !== "/socket" || typeof key !== "string") return socket.destroy()
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
    acceptWebSocket(key, socket, (text, reply) => {
      const message = JSON.parse(text) as { type: string; text?: string }
      socketTypes.push(message.type)
      if (message.type === "chat.sendMessage") {
        chatTexts.push(message.text ?? "")
        reply(JSON.stringify({ type: "delivered", text: message.text }))
      }
    })
  })
  const port = await listen(server)
  return {
    port,
    counts,
    socketTypes,
    chatTexts,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

let site: Site
let model: ScriptedModel
let service: Service

beforeAll(async () => {
  site = await startSite()
  const base = `http://127.0.0.1:${site.port}`
  model = await startScriptedModel((request) => {
    const observed = lastUserText(request)
    const task = taskOf(request)
    const last = toolResults(request).at(-1) as { code?: string; error?: string } | undefined
    if (last?.code === "UserDeclined") return { tool: "done", args: { output: { declined: last.error } } }
    if (task.startsWith("chat with the seller")) {
      if (observed.includes("Delivered: Hello there")) return { tool: "done", args: { output: { sent: true, told: last?.code ?? null } } }
      if (!observed.includes("Chat room")) return { tool: "navigate", args: { url: `${base}/chat` } }
      if (observed.includes("Sending")) {
        // The click went through; the delivery receipt comes over the socket.
        if (last?.code !== undefined) return { tool: "done", args: { output: { sent: false, told: last.code } } }
        return { tool: "wait_for", args: { text: "Delivered", timeout_ms: 10_000 } }
      }
      if (observed.includes("Draft: Hello there")) return { tool: "click", args: { ref: refOfElement(observed, "button", "Finish") } }
      if (!observed.includes("Connected")) return { tool: "wait_for", args: { text: "Connected", timeout_ms: 10_000 } }
      return { tool: "type", args: { ref: refOfElement(observed, "textbox", "Message"), text: "Hello there" } }
    }
    if (task.startsWith("message the seller")) {
      if (observed.includes("Queued")) return { tool: "done", args: { output: { queued: true, told: last?.code ?? null } } }
      if (!observed.includes("Contact the seller")) return { tool: "navigate", args: { url: `${base}/seller` } }
      return { tool: "click", args: { ref: refOfElement(observed, "button", "Finish") } }
    }
    if (task.startsWith("save a note")) {
      if (observed.includes("Note sent")) return { tool: "done", args: { output: { sent: true, told: last?.code ?? null } } }
      if (!observed.includes("Notes")) return { tool: "navigate", args: { url: `${base}/${task.split(" ").at(-1)}` } }
      return { tool: "click", args: { ref: refOfElement(observed, "button", "Review") } }
    }
    return { tool: "done", args: { output: "unknown task" } }
  })
  service = await startService({ env: scriptedAgentEnv(model.baseUrl) })
}, 120_000)
afterAll(async () => {
  await stopAndClean(service)
  await model?.close()
  await site?.close()
})

const { putPolicy, startRun: startSession, eventsOf } = safetyClient(() => service)
const startRun = async (instructions: string) => (await startSession(instructions)).runPath

/**
 * Runs `task` until it asks a person, checks the question, calls `whileAsked` (what reached the
 * site by then), answers `answer`, and returns the finished run and the tools' failures.
 */
const answered = async (task: string, answer: string, prompt: RegExp, whileAsked: () => Promise<void> | void) => {
  const runPath = await startRun(task)
  const waiting = await waitForRunStatus(service, runPath, ["awaiting_input", ...terminal], { timeoutMs: 90_000, everyMs: 200 })
  expect(waiting.status, JSON.stringify(waiting.error ?? waiting.output)).toBe("awaiting_input")
  const asked = (await eventsOf(runPath, "run.input_request")).filter((e) => e.event === "run.input_request")
  expect(asked).toHaveLength(1)
  const request = asked[0]!.data.data
  expect(request.prompt).toMatch(prompt)
  await whileAsked()
  const reply = await service.request("POST", `${runPath}/intervene`, {
    body: { kind: "answer_input_request", input_request_id: request.input_request_id, response: answer }
  })
  expect(reply.status, reply.text).toBe(200)
  const run = await waitForRunStatus(service, runPath, terminal, { timeoutMs: 90_000, everyMs: 200 })
  const events = await eventsOf(runPath)
  const failed = events.filter((e) => e.event === "run.action.failed").map((e) => e.data.data)
  const questions = events.filter((e) => e.event === "run.input_request")
  return { run, failed, questions }
}

const chatPrompt =
  /^The page tried to make a send message request by itself \(a WebSocket message to \/socket; operation "chat\.sendMessage"\) during the agent's click\. It is held: nothing was sent\. Allow it\? yes\/no$/
const beaconPrompt =
  /^The page tried to make a send message request by itself \(navigator\.sendBeacon \/api\/inbox\/messages; submit \(form posting to \/api\/inbox\/messages\)\) during the agent's click\. It is held: nothing was sent\. Allow it\? yes\/no$/
const shadowPrompt =
  /^The page tried to submit a send message form by itself \(a submit event; Save \(form posting to \/notes\/messages\)\) during the agent's click\. Nothing was submitted\. Allow it\? yes\/no$/

describe("a chat message sent over a WebSocket", () => {
  it("is held and asked about while the socket's hello and typing go through; no drops it, yes sends it once, as typed", async () => {
    await putPolicy({ confirm_actions: ["send_message"] })
    const declined = await answered("chat with the seller", "no", chatPrompt, () => {
      // Not guarded: the socket's own traffic went through while the message is held.
      expect(site.socketTypes).toContain("hello")
      expect(site.socketTypes).toContain("typing")
      expect(site.socketTypes).toContain("presence")
      expect(site.chatTexts).toEqual([])
    })
    expect(declined.run.status).toBe("done")
    expect(declined.run.output.declined).toContain(
      `the user declined: the page tried to make a send message request by itself (a WebSocket message to /socket; operation "chat.sendMessage")`
    )
    expect(site.chatTexts).toEqual([])

    const allowed = await answered("chat with the seller", "yes", chatPrompt, () => expect(site.chatTexts).toEqual([]))
    expect(allowed.run.status, JSON.stringify(allowed.run.error)).toBe("done")
    // Sent when the person said yes, as the page made it (the page had cleared its input by then).
    expect(allowed.run.output).toEqual({ sent: true, told: null })
    expect(site.chatTexts).toEqual(["Hello there"])
    expect(allowed.questions).toHaveLength(1)
    expect(allowed.failed.filter((f) => f.code === "PageSubmitStopped")).toEqual([])
  }, 240_000)
})

describe("a message sent with navigator.sendBeacon", () => {
  it("is held and asked about while the page-view beacon goes through; no drops it, yes sends it once", async () => {
    await putPolicy({ confirm_actions: ["send_message"] })
    const collected = site.counts["collect"]!
    const declined = await answered("message the seller", "no", beaconPrompt, async () => {
      // The analytics beacon on load is not held.
      await eventually("the page-view beacon", () => site.counts["collect"]! > collected ? true : undefined, { timeoutMs: 30_000 })
      expect(site.counts["beaconMessages"]).toBe(0)
    })
    expect(declined.run.status).toBe("done")
    expect(declined.run.output.declined).toContain("the user declined: the page tried to make a send message request by itself (navigator.sendBeacon /api/inbox/messages")
    expect(site.counts["beaconMessages"]).toBe(0)

    const allowed = await answered("message the seller", "yes", beaconPrompt, () => expect(site.counts["beaconMessages"]).toBe(0))
    expect(allowed.run.status, JSON.stringify(allowed.run.error)).toBe("done")
    expect(allowed.run.output).toEqual({ queued: true, told: null })
    await eventually("the released beacon", () => site.counts["beaconMessages"]! > 0 ? true : undefined, { timeoutMs: 30_000 })
    expect(site.counts["beaconMessages"]).toBe(1)
  }, 240_000)
})

describe("a form inside a shadow root submitted by a click on its submit button", () => {
  it("(attachShadow) is stopped and asked about; no leaves nothing sent, yes lets the repeated click send once", async () => {
    await putPolicy({ confirm_actions: ["send_message"] })
    const declined = await answered("save a note shadow", "no", shadowPrompt, () => expect(site.counts["notes"]).toBe(0))
    expect(declined.run.status).toBe("done")
    expect(declined.run.output.declined).toContain("the user declined: the page tried to submit a send message form by itself (a submit event")
    expect(site.counts["notes"]).toBe(0)

    const allowed = await answered("save a note shadow", "yes", shadowPrompt, () => expect(site.counts["notes"]).toBe(0))
    expect(allowed.run.status, JSON.stringify(allowed.run.error)).toBe("done")
    expect(allowed.run.output).toEqual({ sent: true, told: null })
    expect(site.counts["notes"]).toBe(1)
    expect(allowed.failed.find((f) => f.code === "PageSubmitStopped")?.error).toContain("repeat the action")
  }, 240_000)

  it("(a declarative shadow root) is stopped and asked about; no leaves nothing sent", async () => {
    await putPolicy({ confirm_actions: ["send_message"] })
    const before = site.counts["notes"]!
    const declined = await answered("save a note shadow-declarative", "no", shadowPrompt, () => expect(site.counts["notes"]).toBe(before))
    expect(declined.run.status).toBe("done")
    expect(declined.run.output.declined).toContain("the user declined")
    expect(site.counts["notes"]).toBe(before)
  }, 120_000)
})

describe("without send_message among the confirm categories (the tests above can fail)", () => {
  it("the chat message, the beacon and both shadow forms go at once, with no question", async () => {
    // The guard is on (payment) but these are not payments.
    await putPolicy({ confirm_actions: ["payment"] })
    const before = { notes: site.counts["notes"]!, beacon: site.counts["beaconMessages"]!, chat: site.chatTexts.length }
    for (const [task, output] of [
      ["chat with the seller", { sent: true, told: null }],
      ["message the seller", { queued: true, told: null }],
      ["save a note shadow", { sent: true, told: null }],
      ["save a note shadow-declarative", { sent: true, told: null }]
    ] as const) {
      const runPath = await startRun(task)
      const run = await waitForRunStatus(service, runPath, terminal, { timeoutMs: 90_000, everyMs: 200 })
      expect(run.status, JSON.stringify(run.error)).toBe("done")
      expect(run.output, task).toEqual(output)
    }
    expect(site.chatTexts.length).toBe(before.chat + 1)
    expect(site.counts["notes"]).toBe(before.notes + 2)
    await eventually("the beacon", () => site.counts["beaconMessages"]! > before.beacon ? true : undefined, { timeoutMs: 30_000 })
    expect(site.counts["beaconMessages"]).toBe(before.beacon + 1)
  }, 360_000)
})
