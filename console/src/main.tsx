/**
 * The console: sign in (a console account by default, or an API key), for an account pick a
 * tenant's project, then the pages of that project and of its tenant. The invitation link
 * (/console/accept-invitation?token=...) and the mailed links (/console/reset-password,
 * /console/verify-email) work signed in or not.
 */
import { StrictMode, useCallback, useEffect, useMemo, useRef, useState } from "react"
import { createRoot } from "react-dom/client"
import { loadMe, signOutAccount } from "./account.ts"
import { Api, describeError, unauthorizedEvent } from "./api.ts"
import { clearCredentials, type Credentials, loadCredentials, saveCredentials, type SessionCredentials } from "./auth.ts"
import { Link, match, navigate, usePath } from "./router.tsx"
import type { Me } from "./wire.ts"
import { SignIn } from "./pages/SignIn.tsx"
import { SessionPage, SessionsPage, RunPage } from "./pages/Sessions.tsx"
import { ResearchListPage, ResearchRunPage } from "./pages/Research.tsx"
import { SearchPage, SearchRunPage } from "./pages/Search.tsx"
import { MonitorPage, MonitorsPage } from "./pages/Monitors.tsx"
import { KeysPage } from "./pages/Keys.tsx"
import { InboxPage } from "./pages/Inbox.tsx"
import { BillingPage } from "./pages/Billing.tsx"
import { ProjectPicker } from "./pages/Picker.tsx"
import { ProjectsPage, TeamPage } from "./pages/Team.tsx"
import { BugReportsPage } from "./pages/BugReports.tsx"
import { AccountPage } from "./pages/Account.tsx"
import { AcceptInvitationPage } from "./pages/AcceptInvitation.tsx"
import { ForgotPasswordPage, ResetPasswordPage, VerifyEmailPage } from "./pages/PasswordReset.tsx"
import "./styles.css"

interface NavItem { readonly to: string; readonly label: string; readonly prefix: string }

const productNav: ReadonlyArray<NavItem> = [
  { to: "/", label: "Sessions & runs", prefix: "/sessions" },
  { to: "/research", label: "DeepResearch", prefix: "/research" },
  { to: "/search", label: "WebSearch", prefix: "/search" },
  { to: "/monitors", label: "Monitors", prefix: "/monitors" },
  { to: "/inbox", label: "Inbox", prefix: "/inbox" }
]
const keysNav: NavItem = { to: "/keys", label: "API keys", prefix: "/keys" }
const billingNav: NavItem = { to: "/billing", label: "Usage & credits", prefix: "/billing" }
const bugsNav: NavItem = { to: "/bug-reports", label: "Bug reports", prefix: "/bug-reports" }
const tenantNav: ReadonlyArray<NavItem> = [
  { to: "/team", label: "Team", prefix: "/team" },
  { to: "/projects", label: "Projects", prefix: "/projects" },
  { to: "/account", label: "Account", prefix: "/account" }
]

/** What the signed-in identity may use: a tenant member gets no API keys page (the server refuses it anyway). */
const navFor = (credentials: Credentials): ReadonlyArray<NavItem> =>
  credentials.kind === "api_key"
    ? [...productNav, keysNav, billingNav, bugsNav]
    : [...productNav, ...(credentials.role === "admin" ? [keysNav] : []), billingNav, bugsNav, ...tenantNav]

const Routes = ({ api, path, onSwitch }: { api: Api; path: string; onSwitch: (c: SessionCredentials) => void }) => {
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
  if (match("/bug-reports", path)) return <BugReportsPage api={api} />
  if (match("/team", path)) return <TeamPage api={api} />
  if (match("/projects", path)) return <ProjectsPage api={api} onSwitch={onSwitch} />
  if (match("/account", path) && api.isAccount) return <AccountPage api={api} />
  if (match("/", path) || match("/sessions", path)) return <SessionsPage api={api} />
  return <div className="card"><h2>Not found</h2><p>No console page at {path}. <Link to="/">Back to sessions</Link></p></div>
}

/** undefined: still asking the API whether a cookie session exists. */
type Account = Me | null | undefined

const App = () => {
  const [credentials, setCredentials] = useState<Credentials | undefined>(loadCredentials)
  const [me, setMe] = useState<Account>(credentials?.kind === "api_key" ? null : undefined)
  const [meError, setMeError] = useState<string>()
  const meRef = useRef<Account>(me)
  meRef.current = me
  const path = usePath()
  const api = useMemo(() => credentials && new Api(credentials), [credentials])
  const accountApi = useMemo(() => new Api(null), [])
  const [notice, setNotice] = useState<string>()
  const [signInMode, setSignInMode] = useState<"account" | "api_key">("account")

  const refreshMe = useCallback(() => {
    setMeError(undefined)
    loadMe().then(setMe, (error) => {
      setMeError(describeError(error))
      setMe(null)
    })
  }, [])
  useEffect(() => {
    if (credentials?.kind !== "api_key") refreshMe()
    // Only at load: later changes go through the handlers below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [])

  const pick = (next: Credentials) => {
    saveCredentials(next)
    setNotice(undefined)
    setCredentials(next)
  }
  const signedOut = (message?: string) => {
    clearCredentials()
    setCredentials(undefined)
    setMe(null)
    setNotice(message)
  }
  useEffect(() => {
    const expired = () => {
      const kept = loadCredentials()
      if (kept?.kind === "api_key") {
        clearCredentials()
        setCredentials(undefined)
        setSignInMode("api_key")
        setNotice("The API key is no longer accepted (revoked or unknown); sign in again.")
        return
      }
      // An account: its session ended (signed out elsewhere, expired, password changed on another device).
      if (meRef.current == null && kept === undefined) return // no session yet (a sign-in attempt): the form says why
      clearCredentials()
      setCredentials(undefined)
      setMe(null)
      setSignInMode("account")
      setNotice("Your session has ended; sign in again.")
    }
    window.addEventListener(unauthorizedEvent, expired)
    return () => window.removeEventListener(unauthorizedEvent, expired)
  }, [])
  useEffect(() => {
    // The first paint a person can use: the bench reads this mark (interactive time).
    if (me === undefined) return
    performance.mark("console-interactive")
    document.documentElement.dataset["ready"] = "true"
  }, [me])

  const signOut = async () => {
    if (credentials?.kind !== "api_key") {
      try {
        await signOutAccount()
      } catch (error) {
        setNotice(`Signing out failed: ${describeError(error)}`)
        return
      }
    }
    signedOut()
    navigate("/")
  }

  // The pages of mailed links (password reset, address verification) work signed in or not.
  if (match("/forgot-password", path)) return <ForgotPasswordPage />
  if (match("/reset-password", path)) return <ResetPasswordPage />
  if (match("/verify-email", path)) {
    if (me === undefined) return <div className="signin"><p className="muted">Loading…</p></div>
    return <VerifyEmailPage me={me} />
  }

  if (match("/accept-invitation", path)) {
    if (me === undefined) return <div className="signin"><p className="muted">Loading…</p></div>
    return <AcceptInvitationPage
      me={me}
      onSignOut={() => void signOutAccount().then(() => signedOut(), () => signedOut())}
      onAccepted={() => {
        // Into the console: the picker shows the new tenant (its projects) with the others.
        clearCredentials()
        setCredentials(undefined)
        refreshMe()
        navigate("/")
      }}
    />
  }

  if (credentials === undefined || credentials.kind === "session") {
    if (me === undefined) return <div className="signin"><p className="muted">Loading…</p></div>
    if (me === null) {
      return <SignIn notice={notice ?? meError} initialMode={signInMode} key={signInMode}
        onApiKey={(c) => {
          setMe(null)
          pick(c)
        }}
        onAccount={() => {
          setNotice(undefined)
          refreshMe()
        }} />
    }
    // A kept project choice is used only for the same user, in a tenant they are still active in.
    const membership = credentials?.kind === "session" && credentials.userId === me.user_id
      ? me.tenants.find((t) => t.tenant_id === credentials.tenantId && t.status === "active")
      : undefined
    if (credentials === undefined || membership === undefined) {
      return <ProjectPicker api={accountApi} me={me} onPick={pick} onReload={refreshMe} onSignOut={() => void signOut()} />
    }
  }
  if (api === undefined) return null
  const session = api.credentials?.kind === "session" ? api.credentials : undefined
  return (
    <div className="shell">
      <aside className="sidebar">
        <div className="brand">Web Agent Service</div>
        <nav>
          {navFor(credentials!).map((item) => {
            const active = item.to === "/" ? path === "/" || path.startsWith("/sessions") : path.startsWith(item.prefix)
            return <Link key={item.to} to={item.to} className={active ? "active" : ""}>{item.label}</Link>
          })}
        </nav>
        <div className="who">
          {session ? (
            <>
              <div className="small" data-testid="signed-in-as">{session.email}</div>
              <div className="muted small">{session.tenantName} · <span data-testid="role">{session.role}</span></div>
            </>
          ) : null}
          <div className="muted small">project</div>
          <code className="small" data-testid="project-id">{api.projectId}</code>
          {session ? <button className="link" onClick={() => { clearCredentials(); setCredentials(undefined); refreshMe() }}>Switch project</button> : null}
          <button className="link" onClick={() => void signOut()}>Sign out</button>
          <a className="small" href="/docs" target="_blank" rel="noreferrer">API reference</a>
        </div>
      </aside>
      <main className="content">
        {notice !== undefined ? <div className="notice" role="status">{notice}</div> : null}
        <Routes api={api} path={path} onSwitch={(c) => { pick(c); navigate("/") }} />
      </main>
    </div>
  )
}

createRoot(document.getElementById("root")!).render(<StrictMode><App /></StrictMode>)
