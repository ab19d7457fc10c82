/**
 * Workspaces end to end through HTTP: the real service (embedded PostgreSQL), real Chromium, the
 * local fixture site (an upload form and a download link) and the scripted model.
 */
import { createHmac } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fixtureReportCsv, type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { type ChatRequest, lastUserText, type ScriptedModel, startScriptedModel, toolResults } from "../fixtures/model/scripted-model.ts"
import { embeddedDatabaseClient, type Service, scriptedAgentEnv, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"
import { waitForRunStatus } from "../support/runs.ts"

const MAX_FILE_BYTES = 3 * 1024 * 1024

let site: FixtureSites
let model: ScriptedModel
let service: Service

beforeAll(async () => {
  site = await startFixtureSites()
  model = await startScriptedModel(() => ({ text: "no script" }))
  service = await startService({
    env: scriptedAgentEnv(model.baseUrl, { WA_STEP_SCREENSHOTS: "false", WA_WORKSPACE_MAX_FILE_BYTES: String(MAX_FILE_BYTES) })
  })
})
afterAll(async () => {
  await stopAndClean(service)
  await model.close()
  await site.close()
})

const workspaces = () => `/v1/projects/${service.projectId}/workspaces`
const auth = () => ({ authorization: `Bearer ${service.apiKey}` })

const createWorkspace = async (name: string) => {
  const response = await service.request("POST", workspaces(), { body: { name } })
  expect(response.status, response.text).toBe(201)
  return response.json as { id: string; name: string; file_count: number; size_bytes: number }
}

/** PUT of raw bytes (fetch, so the body is not turned into a string). */
const upload = (wid: string, name: string, body: Uint8Array | ReadableStream<Uint8Array>, contentType = "application/octet-stream") =>
  service.fetch(`${service.url}${workspaces()}/${wid}/files/${encodeURIComponent(name)}`, {
    method: "PUT",
    headers: { ...auth(), "content-type": contentType },
    body,
    ...(body instanceof ReadableStream ? { duplex: "half" } : {})
  } as RequestInit)

const bytes = (size: number, seed = 7) => {
  const out = new Uint8Array(size)
  for (let i = 0; i < size; i++) out[i] = (i * 31 + seed) % 251
  return out
}

/** A body sent chunked (no Content-Length), so the size is only known while reading it. */
const chunked = (total: number, chunk = 256 * 1024) => {
  let sent = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) return controller.close()
      const size = Math.min(chunk, total - sent)
      controller.enqueue(bytes(size, sent))
      sent += size
    }
  })
}

/** The ref right after `text` in the snapshot (several elements can share a line). */
const refAfter = (observation: string, text: string) => {
  const at = observation.indexOf(text)
  return at === -1 ? undefined : /\[((?:f\d+)?e\d+)\]/.exec(observation.slice(at))?.[1]
}

const blobRows = async () => {
  const client = await embeddedDatabaseClient(service.dataDir)
  try {
    const blobs = await client.query("SELECT count(*)::int AS n FROM workspace_blobs")
    const chunks = await client.query("SELECT count(*)::int AS n FROM workspace_blob_chunks")
    return { blobs: blobs.rows[0].n as number, chunks: chunks.rows[0].n as number }
  } finally {
    await client.end()
  }
}

describe("workspaces", () => {
  it("create, list, get and delete a workspace; an unknown one is 404 workspace_not_found", async () => {
    const created = await createWorkspace("crud")
    expect(created.id).toMatch(/^ws_[0-9a-z]{26}$/)
    expect(created).toMatchObject({ name: "crud", file_count: 0, size_bytes: 0 })
    expect(typeof (created as unknown as { created_at: string }).created_at).toBe("string")

    const list = await service.request("GET", `${workspaces()}?limit=100`)
    expect(list.status).toBe(200)
    expect(list.json.items.map((w: { id: string }) => w.id)).toContain(created.id)
    expect(list.json.total).toBeGreaterThanOrEqual(1)

    expect((await service.request("GET", `${workspaces()}/${created.id}`)).json).toMatchObject({ id: created.id, name: "crud" })
    const deleted = await service.request("DELETE", `${workspaces()}/${created.id}`)
    expect(deleted.status).toBe(200)
    const gone = await service.request("GET", `${workspaces()}/${created.id}`)
    expect(gone.status).toBe(404)
    expect(gone.json.code).toBe("workspace_not_found")
    const files = await service.request("GET", `${workspaces()}/ws_unknown/files`)
    expect(files.status).toBe(404)
    expect(files.json.code).toBe("workspace_not_found")
    const put = await upload("ws_unknown", "a.txt", new TextEncoder().encode("x"))
    expect(put.status).toBe(404)
    expect((await put.json()).code).toBe("workspace_not_found")
    // Without a key: 401 like every project endpoint.
    expect((await service.request("GET", workspaces(), { key: null })).status).toBe(401)
  })

  it("a file larger than the 1 MiB request-body limit uploads streamed, lists, and downloads through its signed URL without a key", async () => {
    const ws = await createWorkspace("big")
    const content = bytes(2 * 1024 * 1024 + 123)
    const put = await upload(ws.id, "data.bin", content)
    const stored = await put.json()
    expect(put.status, JSON.stringify(stored)).toBe(201)
    expect(stored).toMatchObject({ workspace_id: ws.id, name: "data.bin", size_bytes: content.length, content_type: "application/octet-stream", source: "upload" })

    const listed = await service.request("GET", `${workspaces()}/${ws.id}/files`)
    expect(listed.json.items.map((f: { name: string; size_bytes: number }) => [f.name, f.size_bytes])).toEqual([["data.bin", content.length]])
    expect((await service.request("GET", `${workspaces()}/${ws.id}`)).json).toMatchObject({ file_count: 1, size_bytes: content.length })

    const download = await service.fetch(service.url + listed.json.items[0].download_url)
    expect(download.status).toBe(200)
    expect(download.headers.get("content-disposition")).toContain("attachment")
    expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(content))).toBe(true)

    // Replacing keeps one file with the new content; deleting removes it and its bytes.
    const replaced = await upload(ws.id, "data.bin", new TextEncoder().encode("small now"), "text/plain")
    expect(replaced.status).toBe(201)
    const fresh = (await service.request("GET", `${workspaces()}/${ws.id}/files/data.bin`)).json
    expect(fresh).toMatchObject({ size_bytes: 9, content_type: "text/plain" })
    expect(await (await service.fetch(service.url + fresh.download_url)).text()).toBe("small now")
    expect((await service.request("DELETE", `${workspaces()}/${ws.id}/files/data.bin`)).status).toBe(200)
    expect((await service.request("GET", `${workspaces()}/${ws.id}/files/data.bin`)).json.code).toBe("file_not_found")
  })

  it("an upload over WA_WORKSPACE_MAX_FILE_BYTES is 413 payload_too_large and stores nothing, declared or streamed", async () => {
    const ws = await createWorkspace("limits")
    const kept = await upload(ws.id, "keep.txt", new TextEncoder().encode("the original"))
    expect(kept.status).toBe(201)
    const before = await blobRows()

    // Declared by Content-Length: refused before the body is read.
    const declared = await upload(ws.id, "huge.bin", bytes(MAX_FILE_BYTES + 1))
    expect(declared.status).toBe(413)
    expect(await declared.json()).toMatchObject({ code: "payload_too_large", extra: { limit_bytes: MAX_FILE_BYTES } })

    // Sent chunked: refused while streaming, once past the limit; an existing file of that name is kept.
    const streamed = await upload(ws.id, "keep.txt", chunked(MAX_FILE_BYTES + 512 * 1024))
    expect(streamed.status).toBe(413)
    expect((await streamed.json()).code).toBe("payload_too_large")

    const files = (await service.request("GET", `${workspaces()}/${ws.id}/files`)).json.items
    expect(files.map((f: { name: string }) => f.name)).toEqual(["keep.txt"])
    expect(await (await service.fetch(service.url + files[0].download_url)).text()).toBe("the original")
    expect(await blobRows()).toEqual(before)

    // Exactly at the limit is fine.
    expect((await upload(ws.id, "edge.bin", chunked(MAX_FILE_BYTES))).status).toBe(201)

    for (const name of ["a\\b", "bad\u0001name"]) {
      const badName = await upload(ws.id, name, new TextEncoder().encode("x"))
      expect(badName.status, name).toBe(422)
      expect((await badName.json()).extra.errors[0].loc).toEqual(["path", "name"])
    }
  })

  it("names of 101 to 255 characters work; longer is 422, never 405; a path segment past any sane length is 414", async () => {
    const ws = await createWorkspace("long names")
    for (const length of [101, 200, 255]) {
      const name = `${"n".repeat(length - 4)}.txt`
      const put = await upload(ws.id, name, new TextEncoder().encode(`len ${length}`))
      expect(put.status, `${length}: ${await put.clone().text()}`).toBe(201)
      const got = await service.request("GET", `${workspaces()}/${ws.id}/files/${encodeURIComponent(name)}`)
      expect(got.status, String(length)).toBe(200)
      expect(got.json.name).toBe(name)
      expect(await (await service.fetch(service.url + got.json.download_url)).text()).toBe(`len ${length}`)
    }
    // Non-ASCII: 255 characters (1020 percent-encoded bytes in the path) still fit.
    const wide = "ü".repeat(251) + ".txt"
    expect((await upload(ws.id, wide, new TextEncoder().encode("wide"))).status).toBe(201)
    const deleted = await service.request("DELETE", `${workspaces()}/${ws.id}/files/${encodeURIComponent(wide)}`)
    expect(deleted.status).toBe(200)

    const tooLong = await upload(ws.id, "x".repeat(256), new TextEncoder().encode("x"))
    expect(tooLong.status).toBe(422)
    expect((await tooLong.json()).extra.errors[0].loc).toEqual(["path", "name"])
    const absurd = await upload(ws.id, "x".repeat(5000), new TextEncoder().encode("x"))
    expect(absurd.status).toBe(414)
    expect((await absurd.json()).code).toBe("uri_too_long")
  })

  it("the file list pages by name with a cursor that holds names up to 255 characters of any script", async () => {
    const ws = await createWorkspace("paged files")
    // The longest names, in 4- and 2-byte UTF-8 (255 code points each): their cursors are far longer than an id's.
    const names = ["a.txt", "b.txt", `c${"\u{1D518}".repeat(250)}.txt`, `d${"ü".repeat(250)}.txt`, "e.txt"]
    for (const name of names) expect((await upload(ws.id, name, new TextEncoder().encode(name))).status).toBe(201)
    const seen: Array<string> = []
    let cursor: string | null = null
    let pages = 0
    do {
      const query: string = `?limit=2${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`
      const page = await service.request("GET", `${workspaces()}/${ws.id}/files${query}`)
      expect(page.status, page.text).toBe(200)
      expect(page.json.items.length).toBeLessThanOrEqual(2)
      seen.push(...page.json.items.map((file: { name: string }) => file.name))
      cursor = page.json.next_cursor
      pages++
    } while (cursor !== null && pages < 10)
    expect(pages).toBe(3)
    expect(seen).toEqual(names)
    // A cursor of another list (an id cursor) is not a file cursor: 400 naming the parameter.
    const sessions = await service.request("GET", `/v1/projects/${service.projectId}/do_anything/sessions?limit=1`)
    const idCursor = Buffer.from(JSON.stringify({ a: "sess_00000000000000000000000000" })).toString("base64url")
    const refused = await service.request("GET", `${workspaces()}/${ws.id}/files?cursor=${sessions.json.next_cursor ?? idCursor}`)
    expect(refused.status, refused.text).toBe(400)
    expect(refused.json.extra).toMatchObject({ param: "cursor" })
    // Without limit a page holds up to 20 files and says there is no more.
    const all = await service.request("GET", `${workspaces()}/${ws.id}/files`)
    expect(all.json).toMatchObject({ next_cursor: null })
    expect(all.json.items).toHaveLength(5)
  })

  it("names refuse C1 controls and bidi overrides; NFC and NFD twins are one name, stored in NFC", async () => {
    const ws = await createWorkspace("unicode names")
    for (const name of ["bad\u0085name.txt", "bad\u009bname.txt", "invoice\u202Etxt.exe", "a\u2066b\u2069.txt", "mark\u200F.txt"]) {
      const refused = await upload(ws.id, name, new TextEncoder().encode("x"))
      expect(refused.status, JSON.stringify(name)).toBe(422)
      expect((await refused.json()).extra.errors[0].loc).toEqual(["path", "name"])
    }
    const nfc = "caf\u00e9.txt"
    const nfd = "cafe\u0301.txt"
    expect((await upload(ws.id, nfd, new TextEncoder().encode("first"))).status).toBe(201)
    const second = await upload(ws.id, nfc, new TextEncoder().encode("second"))
    expect(second.status).toBe(201)
    expect((await second.json()).name).toBe(nfc)
    const files = (await service.request("GET", `${workspaces()}/${ws.id}/files`)).json.items as Array<{ name: string; download_url: string }>
    expect(files.map((f) => f.name)).toEqual([nfc])
    // Either spelling finds (and downloads) the one file.
    const byNfd = await service.request("GET", `${workspaces()}/${ws.id}/files/${encodeURIComponent(nfd)}`)
    expect(byNfd.status).toBe(200)
    expect(byNfd.json.name).toBe(nfc)
    expect(await (await service.fetch(service.url + byNfd.json.download_url)).text()).toBe("second")
    // A signed URL spelled in NFD names the same file, so its signature holds.
    const signedNfd = service.url + files[0]!.download_url.replace(encodeURIComponent(nfc), encodeURIComponent(nfd))
    expect(signedNfd).not.toBe(service.url + files[0]!.download_url)
    expect(await (await service.fetch(signedNfd)).text()).toBe("second")
    expect((await service.request("DELETE", `${workspaces()}/${ws.id}/files/${encodeURIComponent(nfd)}`)).status).toBe(200)
    expect((await service.request("GET", `${workspaces()}/${ws.id}/files`)).json.items).toEqual([])
  })

  it("a tampered or expired download URL is 403", async () => {
    const ws = await createWorkspace("urls")
    expect((await upload(ws.id, "a.txt", new TextEncoder().encode("A"))).status).toBe(201)
    expect((await upload(ws.id, "b.txt", new TextEncoder().encode("B"))).status).toBe(201)
    const file = (await service.request("GET", `${workspaces()}/${ws.id}/files/a.txt`)).json
    const url = new URL(service.url + file.download_url)
    expect(Date.parse(file.download_url_expires_at) - Date.now()).toBeGreaterThan(14 * 60 * 1000)
    expect(await (await service.fetch(url)).text()).toBe("A")

    const tamperedSignature = new URL(url)
    const signature = url.searchParams.get("signature")!
    tamperedSignature.searchParams.set("signature", (signature[0] === "A" ? "B" : "A") + signature.slice(1))
    const otherFile = new URL(url.toString().replace("/a.txt?", "/b.txt?"))
    const laterExpiry = new URL(url)
    laterExpiry.searchParams.set("expires", String(Number(url.searchParams.get("expires")) + 3600))
    for (const bad of [tamperedSignature, otherFile, laterExpiry]) {
      const response = await service.fetch(bad)
      expect(response.status, bad.toString()).toBe(403)
      expect((await response.json()).code).toBe("invalid_signature")
    }

    // A name that needs percent-encoding round-trips through the API and the signed URL.
    const odd = "my report (1) — ü.txt"
    expect((await upload(ws.id, odd, new TextEncoder().encode("odd"))).status).toBe(201)
    const oddFile = (await service.request("GET", `${workspaces()}/${ws.id}/files/${encodeURIComponent(odd)}`)).json
    expect(oddFile.name).toBe(odd)
    const oddDownload = await service.fetch(service.url + oddFile.download_url)
    expect(await oddDownload.text()).toBe("odd")
    expect(oddDownload.headers.get("content-disposition")).toContain(`filename*=UTF-8''${encodeURIComponent(odd)}`)

    // A URL correctly signed (with the service's shared secret) whose time has passed.
    const client = await embeddedDatabaseClient(service.dataDir)
    const secret = (await client.query("SELECT value FROM service_secrets WHERE name = 'url_signing'")).rows[0].value as string
    await client.end()
    const expires = Math.floor(Date.now() / 1000) - 60
    const sig = createHmac("sha256", secret).update(`workspace_file\u0000${ws.id}\u0000a.txt\u0000${expires}`).digest("base64url")
    const expired = await service.fetch(`${service.url}/v1/workspace_files/${ws.id}/a.txt?expires=${expires}&signature=${sig}`)
    expect(expired.status).toBe(403)
    expect((await expired.json()).code).toBe("url_expired")
    // The same secret with a future expiry works: the expiry alone made the difference.
    const later = expires + 3600
    const ok = createHmac("sha256", secret).update(`workspace_file\u0000${ws.id}\u0000a.txt\u0000${later}`).digest("base64url")
    expect((await service.fetch(`${service.url}/v1/workspace_files/${ws.id}/a.txt?expires=${later}&signature=${ok}`)).status).toBe(200)
  })

  it("a session with an unknown workspace_id is 404 workspace_not_found and creates nothing", async () => {
    const sessions = `/v1/projects/${service.projectId}/do_anything/sessions`
    const before = (await service.request("GET", `${sessions}?limit=100`)).json.items.length
    const response = await service.request("POST", sessions, { body: { instructions: "x", workspace_id: "ws_00000000000000000000000000" } })
    expect(response.status).toBe(404)
    expect(response.json.code).toBe("workspace_not_found")
    const flat = await service.request("POST", `/api/v1/projects/${service.projectId}/do_anything/runs`, {
      body: { instructions: "x", workspace_id: "ws_nope" }
    })
    expect(flat.status).toBe(404)
    expect((await service.request("GET", `${sessions}?limit=100`)).json.items.length).toBe(before)
  })

  it("a run uploads a workspace file through a form and downloads a generated file into the workspace", async () => {
    const ws = await createWorkspace("agent")
    const notes = "hello from the workspace"
    expect((await upload(ws.id, "notes.txt", new TextEncoder().encode(notes), "text/plain")).status).toBe(201)

    const offered: Array<Array<string>> = []
    const observations: Array<string> = []
    let stage = 0
    let uploadResult = ""
    model.setScript((request: ChatRequest) => {
      offered.push((request.tools ?? []).map((t) => t.function.name))
      const observation = lastUserText(request)
      observations.push(observation)
      const results = toolResults(request) as Array<any>
      switch (stage++) {
        case 0: return { tool: "navigate", args: { url: `${site.url}/upload` } }
        case 1: return { tool: "upload_file", args: { ref: refAfter(observation, 'file "Document"'), name: "notes.txt" } }
        case 2: return { tool: "click", args: { ref: refAfter(observation, 'button "Upload"') } }
        case 3:
          uploadResult = observation
          return { tool: "navigate", args: { url: `${site.url}/download` } }
        case 4: return { tool: "click", args: { ref: refAfter(observation, "Download the fruit report") } }
        case 5: return { tool: "list_files" }
        case 6: return { tool: "read_file", args: { name: "report.csv" } }
        case 7: return { tool: "write_file", args: { name: "summary.txt", content: `fruits: ${(results.at(-1)?.text ?? "").split("\n").length - 2}` } }
        default: return { tool: "done", args: { output: { files: results.find((r) => r?.files !== undefined)?.files, report: results.find((r) => r?.text !== undefined)?.text } } }
      }
    })
    const created = await service.request("POST", `/v1/projects/${service.projectId}/do_anything/sessions`, {
      body: { instructions: "Upload notes.txt through the form, then download the fruit report", workspace_id: ws.id, keep_alive: false }
    })
    expect(created.status, created.text).toBe(201)
    expect(created.json.workspace_id).toBe(ws.id)
    const runPath = `/v1/projects/${service.projectId}/do_anything/sessions/${created.json.id}/runs/${created.json.latest_run_id}`
    const run = await waitForRunStatus(service, runPath, ["done", "failed", "canceled"])
    expect(run.status, `${JSON.stringify(run.error)}\n${observations.join("\n-----\n")}`).toBe("done")

    // The file tools were offered, and the page received the workspace file through its form.
    expect(offered[0]).toEqual(expect.arrayContaining(["upload_file", "list_files", "read_file", "write_file"]))
    expect(uploadResult).toContain("Received notes.txt")
    expect(uploadResult).toContain(`${notes.length}`)
    expect(uploadResult).toContain(notes)

    // The download landed in the workspace; the agent saw it and read it.
    expect(run.output.files).toEqual(expect.arrayContaining([
      expect.objectContaining({ name: "report.csv", size_bytes: fixtureReportCsv.length, source: "download" }),
      expect.objectContaining({ name: "notes.txt", source: "upload" })
    ]))
    expect(run.output.report).toBe(fixtureReportCsv)

    const { events } = await readSse(`${service.url}${runPath}/events`, auth())
    const downloaded = events.filter((e) => e.event === "run.file_downloaded").map((e) => e.data.data ?? e.data)
    expect(downloaded).toEqual([expect.objectContaining({ name: "report.csv", size_bytes: fixtureReportCsv.length, workspace_id: ws.id })])
    expect(events.filter((e) => e.event === "run.action.completed").map((e) => (e.data.data ?? e.data).action)).toEqual(
      expect.arrayContaining(["upload_file", "list_files", "read_file", "write_file"])
    )

    // The downloaded file and the agent's own file, fetched through their signed URLs.
    const files = (await service.request("GET", `${workspaces()}/${ws.id}/files`)).json.items as Array<any>
    expect(files.map((f) => f.name).sort()).toEqual(["notes.txt", "report.csv", "summary.txt"])
    const report = files.find((f) => f.name === "report.csv")
    const fetched = await service.fetch(service.url + report.download_url)
    expect(fetched.status).toBe(200)
    expect(await fetched.text()).toBe(fixtureReportCsv)
    const summary = files.find((f) => f.name === "summary.txt")
    expect(summary.source).toBe("agent")
    expect(await (await service.fetch(service.url + summary.download_url)).text()).toBe("fruits: 3")
  })

  it("without a workspace the file tools are not offered, and allowed_actions governs them", async () => {
    const offered: Array<Array<string>> = []
    model.setScript((request) => {
      offered.push((request.tools ?? []).map((t) => t.function.name))
      return { tool: "done", args: { output: "ok" } }
    })
    const sessions = `/v1/projects/${service.projectId}/do_anything/sessions`
    const plain = await service.request("POST", sessions, { body: { instructions: "x", keep_alive: false } })
    await waitForRunStatus(service, `${sessions}/${plain.json.id}/runs/${plain.json.latest_run_id}`, ["done"])
    expect(offered[0]).not.toContain("list_files")
    expect(offered[0]).toContain("navigate")

    const ws = await createWorkspace("allowed")
    offered.length = 0
    const limited = await service.request("POST", sessions, {
      body: { instructions: "x", keep_alive: false, workspace_id: ws.id, allowed_actions: ["list_files", "read_file"] }
    })
    expect(limited.status, limited.text).toBe(201)
    await waitForRunStatus(service, `${sessions}/${limited.json.id}/runs/${limited.json.latest_run_id}`, ["done"])
    expect([...offered[0]!].sort()).toEqual(["done", "list_files", "read_file"])

    const unknown = await service.request("POST", sessions, { body: { instructions: "x", workspace_id: ws.id, allowed_actions: ["upload_files"] } })
    expect(unknown.status).toBe(422)
  })
})
