/**
 * Bug reports of the project: a form (message, the console page it is about, an optional
 * screenshot picked from disk, sent as a data URL of at most 524288 characters, the server's
 * default cap) and the list (admins and API keys see every report, a member their own).
 */
import { type FormEvent, useState } from "react"
import { type Api, describeError } from "../api.ts"
import type { BugReport, BugReportList, CreateBugReportBody } from "../wire.ts"
import { ErrorBox, Section, Status, Time, useLoad } from "../ui.tsx"

/** The server's default WA_BUG_REPORT_SCREENSHOT_MAX_BYTES; a larger limit still works (the server decides). */
const screenshotMax = 524_288

const readDataUrl = (file: File) =>
  new Promise<string>((resolve, reject) => {
    const reader = new FileReader()
    reader.onload = () => resolve(String(reader.result))
    reader.onerror = () => reject(reader.error ?? new Error("cannot read the file"))
    reader.readAsDataURL(file)
  })

export const BugReportsPage = ({ api }: { api: Api }) => {
  const [cursors, setCursors] = useState<Array<string>>([])
  const cursor = cursors[cursors.length - 1]
  const reports = useLoad(
    () => api.get<BugReportList>(api.project(`/bug_reports?limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)),
    [api, cursor]
  )
  const [message, setMessage] = useState("")
  const [pagePath, setPagePath] = useState("/console/")
  const [screenshot, setScreenshot] = useState<string>()
  const [error, setError] = useState<string>()
  const [sent, setSent] = useState<string>()
  const pick = async (file: File | undefined) => {
    setError(undefined)
    setScreenshot(undefined)
    if (file === undefined) return
    if (!/^image\/(png|jpeg|webp)$/.test(file.type)) return setError("The screenshot must be a PNG, JPEG or WebP image.")
    const url = await readDataUrl(file)
    if (url.length > screenshotMax) return setError(`The screenshot is too large (${Math.round(url.length / 1024)} KB encoded; at most ${screenshotMax / 1024} KB).`)
    setScreenshot(url)
  }
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    setSent(undefined)
    try {
      const created = await api.post<BugReport>(api.project("/bug_reports"), {
        message: message.trim(),
        page_path: pagePath.trim() || "/console/",
        input_method: "text",
        screenshot_data_url: screenshot ?? null,
        user_agent: navigator.userAgent.slice(0, 512),
        viewport_width: Math.min(window.innerWidth, 10000),
        viewport_height: Math.min(window.innerHeight, 10000)
      } satisfies CreateBugReportBody)
      setSent(created.id)
      setMessage("")
      setScreenshot(undefined)
      setCursors([])
      reports.reload()
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  return (
    <>
      <Section title="Report a bug">
        <form onSubmit={submit} aria-label="report a bug" className="stack">
          <label>
            What went wrong?
            <textarea name="message" rows={4} maxLength={2000} value={message} onChange={(e) => setMessage(e.target.value)} required />
          </label>
          <label>
            Page
            <input name="page_path" maxLength={2048} value={pagePath} onChange={(e) => setPagePath(e.target.value)} />
          </label>
          <label>
            Screenshot (optional, PNG/JPEG/WebP)
            <input name="screenshot" type="file" accept="image/png,image/jpeg,image/webp" onChange={(e) => void pick(e.target.files?.[0])} />
          </label>
          {screenshot ? <img className="bug-shot" src={screenshot} alt="screenshot to send" /> : null}
          <ErrorBox error={error} />
          <div className="row"><button type="submit">Send report</button>{sent ? <span className="notice" role="status">Sent ({sent}).</span> : null}</div>
        </form>
      </Section>
      <Section title={`Reports${reports.data ? ` (${reports.data.total})` : ""}`} actions={<button className="secondary" onClick={reports.reload}>Refresh</button>}>
        <ErrorBox error={reports.error} />
        <table className="list" aria-label="bug reports">
          <thead><tr><th>When</th><th>Message</th><th>Page</th><th>By</th><th>Status</th><th>Screenshot</th></tr></thead>
          <tbody>
            {reports.data?.items.map((r) => (
              <tr key={r.id} data-report={r.id}>
                <td><Time value={r.created_at} /></td>
                <td>{r.message}</td>
                <td><code className="small">{r.page_path}</code></td>
                <td>{r.user_id ? <code className="small">{r.user_id}</code> : <span className="muted small">API key</span>}</td>
                <td><Status value={r.status} /></td>
                <td>{r.screenshot_data_url ? <img className="bug-thumb" src={r.screenshot_data_url} alt={`screenshot of ${r.id}`} /> : null}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {reports.data?.items.length === 0 ? <p className="muted">No reports.</p> : null}
        <div className="pager">
          {cursors.length > 0 ? <button className="secondary" onClick={() => setCursors(cursors.slice(0, -1))}>Newer</button> : null}
          {reports.data?.next_cursor ? <button className="secondary" onClick={() => setCursors([...cursors, reports.data!.next_cursor!])}>Older</button> : null}
        </div>
      </Section>
    </>
  )
}
