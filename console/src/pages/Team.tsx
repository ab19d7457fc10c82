/**
 * The tenant of the picked project: members (list; role change, disable and re-enable for admins),
 * invitations (admins: create with a role, the invite link shown once, list, revoke) and the
 * tenant's projects (list, switch to one; admins create). What a member cannot do is not shown;
 * the server refuses it anyway (README "Accounts", roles).
 */
import { type FormEvent, useState } from "react"
import { type Api, describeError } from "../api.ts"
import type { SessionCredentials } from "../auth.ts"
import { ErrorBox, Section, Status, Time, useLoad } from "../ui.tsx"
import type {
  CreateProjectBody, CursorPage, Invitation, InvitationCreated, InvitationList, InviteBody, Member, MemberList, TenantProject,
  TenantProjectList, UpdateMemberBody
} from "../wire.ts"

const tenantPath = (session: SessionCredentials, rest: string) => `/v1/tenants/${encodeURIComponent(session.tenantId)}${rest}`

/** Pages through a tenant list (members, invitations, projects) up to `max` items; `L` is the list's response type. */
const loadAll = async <L extends CursorPage<unknown>>(api: Api, path: string, max = 1000): Promise<Array<L["items"][number]>> => {
  const items: Array<L["items"][number]> = []
  let cursor: string | null = null
  do {
    const page: L = await api.get<L>(`${path}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)
    items.push(...page.items)
    cursor = page.next_cursor
  } while (cursor !== null && items.length < max)
  return items
}

const Members = ({ api, session }: { api: Api; session: SessionCredentials }) => {
  const members = useLoad(() => loadAll<MemberList>(api, tenantPath(session, "/members")), [api, session.tenantId])
  const [error, setError] = useState<string>()
  const admin = session.role === "admin"
  const update = async (member: Member, change: UpdateMemberBody) => {
    setError(undefined)
    try {
      await api.patch<Member>(tenantPath(session, `/members/${encodeURIComponent(member.user_id)}`), change)
    } catch (failure) {
      setError(describeError(failure))
    }
    members.reload()
  }
  return (
    <Section title="Members" actions={<button className="secondary" onClick={members.reload}>Refresh</button>}>
      <ErrorBox error={members.error ?? error} />
      <table className="list" aria-label="members">
        <thead><tr><th>Name</th><th>Email</th><th>Role</th><th>Status</th><th>Since</th>{admin ? <th /> : null}</tr></thead>
        <tbody>
          {members.data?.map((m) => (
            <tr key={m.user_id} data-member={m.email}>
              <td>{m.display_name ?? <span className="muted">–</span>}{m.user_id === session.userId ? <span className="muted small"> (you)</span> : null}</td>
              <td>{m.email}</td>
              <td>
                {admin
                  ? <select aria-label={`role of ${m.email}`} value={m.role} onChange={(e) => update(m, { role: e.target.value === "admin" ? "admin" : "member" })}>
                    <option value="member">member</option><option value="admin">admin</option>
                  </select>
                  : m.role}
              </td>
              <td><Status value={m.status === "active" ? "active" : "disabled"} /></td>
              <td><Time value={m.created_at} /></td>
              {admin ? (
                <td>
                  {m.status === "active"
                    ? <button className="danger" onClick={() => update(m, { status: "disabled" })} aria-label={`Disable ${m.email}`}>Disable</button>
                    : <button className="secondary" onClick={() => update(m, { status: "active" })} aria-label={`Enable ${m.email}`}>Enable</button>}
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
      {admin ? null : <p className="muted small">Only the tenant's admins change roles, disable members and invite.</p>}
    </Section>
  )
}

const Invitations = ({ api, session }: { api: Api; session: SessionCredentials }) => {
  const invitations = useLoad(() => loadAll<InvitationList>(api, tenantPath(session, "/invitations")), [api, session.tenantId])
  const [email, setEmail] = useState("")
  const [role, setRole] = useState<Invitation["role"]>("member")
  /** url null: the answer was an Idempotency-Key replay, which never carries the link (it is shown once). */
  const [link, setLink] = useState<{ email: string; url: string | null }>()
  const [error, setError] = useState<string>()
  const invite = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    setLink(undefined)
    try {
      const created = await api.post<InvitationCreated>(tenantPath(session, "/invitations"), { email: email.trim(), role } satisfies InviteBody)
      setLink({ email: email.trim(), url: created.invite_url })
      setEmail("")
      invitations.reload()
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  const revoke = async (invitation: Invitation) => {
    if (!confirm(`Revoke the invitation of ${invitation.email}?`)) return
    setError(undefined)
    try {
      await api.delete<Invitation>(tenantPath(session, `/invitations/${encodeURIComponent(invitation.id)}`))
    } catch (failure) {
      setError(describeError(failure))
    }
    invitations.reload()
  }
  return (
    <Section title="Invitations" actions={<button className="secondary" onClick={invitations.reload}>Refresh</button>}>
      <form className="row" onSubmit={invite} aria-label="invite">
        <input type="email" placeholder="email to invite" aria-label="Email to invite" maxLength={255} value={email} onChange={(e) => setEmail(e.target.value)} required />
        <select aria-label="Role" value={role} onChange={(e) => setRole(e.target.value === "admin" ? "admin" : "member")}><option value="member">member</option><option value="admin">admin</option></select>
        <button type="submit">Invite</button>
      </form>
      {link?.url ? (
        <div className="notice">
          Invitation link for {link.email} (shown only now; send it to them, it works once):{" "}
          <code className="invite-link" data-testid="invite-link">{link.url}</code>{" "}
          <button className="link" onClick={() => void navigator.clipboard?.writeText(link.url!)}>copy</button>
        </div>
      ) : link ? (
        <div className="notice">The invitation of {link.email} exists, but its link is shown only once and cannot be shown again: revoke it and invite again.</div>
      ) : null}
      <ErrorBox error={invitations.error ?? error} />
      <table className="list" aria-label="invitations">
        <thead><tr><th>Email</th><th>Role</th><th>Status</th><th>Expires</th><th>Created</th><th /></tr></thead>
        <tbody>
          {invitations.data?.map((i) => (
            <tr key={i.id} data-invitation={i.email}>
              <td>{i.email}</td>
              <td>{i.role}</td>
              <td><Status value={i.status} /></td>
              <td><Time value={i.expires_at} /></td>
              <td><Time value={i.created_at} /></td>
              <td>{i.status === "pending" ? <button className="danger" onClick={() => revoke(i)} aria-label={`Revoke ${i.email}`}>Revoke</button> : null}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {invitations.data?.length === 0 ? <p className="muted">No invitations.</p> : null}
    </Section>
  )
}

export const TeamPage = ({ api }: { api: Api }) => {
  const session = api.credentials?.kind === "session" ? api.credentials : undefined
  if (session === undefined) return <Section title="Team"><p className="muted">Sign in with a console account to see the tenant's members.</p></Section>
  return (
    <>
      <p className="muted">Tenant <strong>{session.tenantName}</strong> · your role: <strong data-testid="my-role">{session.role}</strong></p>
      <Members api={api} session={session} />
      {session.role === "admin" ? <Invitations api={api} session={session} /> : null}
    </>
  )
}

export const ProjectsPage = ({ api, onSwitch }: { api: Api; onSwitch: (c: SessionCredentials) => void }) => {
  const session = api.credentials?.kind === "session" ? api.credentials : undefined
  const projects = useLoad(
    () => session === undefined ? Promise.resolve([]) : loadAll<TenantProjectList>(api, tenantPath(session, "/projects")),
    [api, session?.tenantId]
  )
  const [name, setName] = useState("")
  const [error, setError] = useState<string>()
  if (session === undefined) return <Section title="Projects"><p className="muted">Sign in with a console account to see the tenant's projects.</p></Section>
  const create = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    try {
      await api.post<TenantProject>(tenantPath(session, "/projects"), { name: name.trim() } satisfies CreateProjectBody)
      setName("")
      projects.reload()
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  return (
    <Section title={`Projects of ${session.tenantName}`} actions={<button className="secondary" onClick={projects.reload}>Refresh</button>}>
      <ErrorBox error={projects.error ?? error} />
      <table className="list" aria-label="projects">
        <thead><tr><th>Name</th><th>Id</th><th>Created</th><th /></tr></thead>
        <tbody>
          {projects.data?.map((p) => (
            <tr key={p.id}>
              <td>{p.name}</td>
              <td><code>{p.id}</code></td>
              <td><Time value={p.created_at} /></td>
              <td>{p.id === session.projectId
                ? <span className="badge blue">current</span>
                : <button className="secondary" onClick={() => onSwitch({ ...session, projectId: p.id })} aria-label={`Switch to ${p.name}`}>Switch</button>}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {session.role === "admin" ? (
        <form className="row" onSubmit={create} aria-label="create project">
          <input placeholder="new project name" aria-label="Project name" maxLength={100} value={name} onChange={(e) => setName(e.target.value)} required />
          <button type="submit">Create project</button>
        </form>
      ) : null}
    </Section>
  )
}
