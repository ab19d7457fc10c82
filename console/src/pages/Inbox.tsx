/** The console inbox: monitors' notifications on the console_inbox channel, newest first. */
import { useState } from "react"
import { type Api, describeError } from "../api.ts"
import { Link } from "../router.tsx"
import { ErrorBox, Json, Section, Time, useLoad } from "../ui.tsx"
import type { InboxList, InboxNotification, UpdateInboxNotificationBody } from "../wire.ts"


export const InboxPage = ({ api }: { api: Api }) => {
  const [unreadOnly, setUnreadOnly] = useState(false)
  const inbox = useLoad(() => api.get<InboxList>(api.project(`/inbox?limit=50${unreadOnly ? "&unread=true" : ""}`)), [api, unreadOnly])
  const [error, setError] = useState<string>()
  const mark = async (n: InboxNotification, read: boolean) => {
    try {
      await api.patch<InboxNotification>(api.project(`/inbox/${n.id}`), { read } satisfies UpdateInboxNotificationBody)
      inbox.reload()
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  return (
    <Section title={`Inbox${inbox.data ? ` (${inbox.data.unread_count} unread)` : ""}`} actions={
      <div className="row">
        <label className="inline"><input type="checkbox" checked={unreadOnly} onChange={(e) => setUnreadOnly(e.target.checked)} /> unread only</label>
        <button className="secondary" onClick={inbox.reload}>Refresh</button>
      </div>
    }>
      <ErrorBox error={inbox.error ?? error} />
      <ul className="plain inbox">
        {inbox.data?.items.map((n) => (
          <li key={n.id} className={n.read ? "read" : "unread"}>
            <div className="row">
              <strong>{n.title}</strong>
              <span className="muted small">{n.type} · <Time value={n.created_at} /> · <Link to={`/monitors/${n.monitor_id}`}>monitor</Link></span>
              <button className="link" onClick={() => mark(n, !n.read)}>{n.read ? "mark unread" : "mark read"}</button>
            </div>
            <details><summary>data</summary><Json value={n.data} /></details>
          </li>
        ))}
      </ul>
      {inbox.data?.items.length === 0 ? <p className="muted">No notifications.</p> : null}
    </Section>
  )
}
