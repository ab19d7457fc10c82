/** The console: sign in, then the pages of the project the credentials are for. */
import { StrictMode, useEffect, useMemo, useState } from "react"
import { createRoot } from "react-dom/client"
import { Api, unauthorizedEvent } from "./api.ts"
import { clearCredentials, type Credentials, loadCredentials, saveCredentials } from "./auth.ts"
import { Link, match, usePath } from "./router.tsx"
import { SignIn } from "./pages/SignIn.tsx"
import { SessionPage, SessionsPage, RunPage } from "./pages/Sessions.tsx"
import { ResearchListPage, ResearchRunPage } from "./pages/Research.tsx"
import { SearchPage, SearchRunPage } from "./pages/Search.tsx"
import { MonitorPage, MonitorsPage } from "./pages/Monitors.tsx"
import { KeysPage } from "./pages/Keys.tsx"
import { InboxPage } from "./pages/Inbox.tsx"
import { BillingPage } from "./pages/Billing.tsx"
import "./styles.css"

const nav: ReadonlyArray<{ to: string; label: string; prefix: string }> = [
  { to: "/", label: "Sessions & runs", prefix: "/sessions" },
  { to: "/research", label: "DeepResearch", prefix: "/research" },
  { to: "/search", label: "WebSearch", prefix: "/search" },
  { to: "/monitors", label: "Monitors", prefix: "/monitors" },
  { to: "/inbox", label: "Inbox", prefix: "/inbox" },
  { to: "/keys", label: "API keys", prefix: "/keys" },
  { to: "/billing", label: "Usage & credits", prefix: "/billing" }
]

const Routes = ({ api, path }: { api: Api; path: string }) => {
  let m: Record<string, string> | undefined
  if ((m = match("/sessions/:sid/runs/:rid", path))) return <RunPage api={api} sid={m["sid"]!} rid={m["rid"]!} />
  if ((m = match("/sessions/:sid", path))) return <SessionPage api={api} sid={m["sid"]!} />
  if (match("/research", path)) return <ResearchListPage api={api} />
  if ((m = match("/research/:rid", path))) return <ResearchRunPage api={api} rid={m["rid"]!} />
  if (match("/search", path)) return <SearchPage api={api} />
  if ((m = match("/search/:rid", path))) return <SearchRunPage api={api} rid={m["rid"]!} />
  if (match("/monitors", path)) return <MonitorsPage api={api} />
  if ((m = match("/monitors/:mid", path))) return <MonitorPage api={api} mid={m["mid"]!} />
  if (match("/inbox", path)) return <InboxPage api={api} />
  if (match("/keys", path)) return <KeysPage api={api} />
  if (match("/billing", path)) return <BillingPage api={api} />
  if (match("/", path) || match("/sessions", path)) return <SessionsPage api={api} />
  return <div className="card"><h2>Not found</h2><p>No console page at {path}. <Link to="/">Back to sessions</Link></p></div>
}

const App = () => {
  const [credentials, setCredentials] = useState<Credentials | undefined>(loadCredentials)
  const path = usePath()
  const api = useMemo(() => credentials && new Api(credentials), [credentials])
  const [notice, setNotice] = useState<string>()
  useEffect(() => {
    const expired = () => {
      if (loadCredentials() === undefined) return // a sign-in attempt: the form says why
      clearCredentials()
      setCredentials(undefined)
      setNotice("The API key is no longer accepted (revoked or unknown); sign in again.")
    }
    window.addEventListener(unauthorizedEvent, expired)
    return () => window.removeEventListener(unauthorizedEvent, expired)
  }, [])
  useEffect(() => {
    // The first paint a person can use: the bench reads this mark (interactive time).
    performance.mark("console-interactive")
    document.documentElement.dataset["ready"] = "true"
  }, [])
  if (api === undefined) {
    return <SignIn notice={notice} onSignedIn={(c) => {
      saveCredentials(c)
      setNotice(undefined)
      setCredentials(c)
    }} />
  }
  const signOut = () => {
    clearCredentials()
    setCredentials(undefined)
  }
  return (
    <div className="shell">
      <aside className="sidebar">
        <div className="brand">Web Agent Service</div>
        <nav>
          {nav.map((item) => {
            const active = item.to === "/" ? path === "/" || path.startsWith("/sessions") : path.startsWith(item.prefix)
            return <Link key={item.to} to={item.to} className={active ? "active" : ""}>{item.label}</Link>
          })}
        </nav>
        <div className="who">
          <div className="muted small">project</div>
          <code className="small" data-testid="project-id">{api.projectId}</code>
          <button className="link" onClick={signOut}>Sign out</button>
          <a className="small" href="/docs" target="_blank" rel="noreferrer">API reference</a>
        </div>
      </aside>
      <main className="content"><Routes api={api} path={path} /></main>
    </div>
  )
}

createRoot(document.getElementById("root")!).render(<StrictMode><App /></StrictMode>)
