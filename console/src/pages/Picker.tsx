/**
 * After an account signs in: pick the tenant and project to work in (GET /v1/auth/me for the
 * tenants, GET /v1/tenants/{tid}/projects for each). A user without a tenant creates one (they
 * become its admin); an admin can create a project right here.
 */
import { type FormEvent, useState } from "react"
import type { CreateProjectBody, CreateTenantBody, Me, Membership, TenantCreated, TenantProject, TenantProjectList } from "../wire.ts"
import { type Api, describeError } from "../api.ts"
import type { SessionCredentials } from "../auth.ts"
import { ErrorBox, Section, useLoad } from "../ui.tsx"

const TenantProjects = ({ api, me, tenant, onPick }: { api: Api; me: Me; tenant: Membership; onPick: (c: SessionCredentials) => void }) => {
  const projects = useLoad(() => api.get<TenantProjectList>(`/v1/tenants/${encodeURIComponent(tenant.tenant_id)}/projects?limit=100`), [api, tenant.tenant_id])
  const [name, setName] = useState("")
  const [error, setError] = useState<string>()
  const pick = (project: TenantProject) => onPick({
    kind: "session", projectId: project.id, tenantId: tenant.tenant_id, tenantName: tenant.name, role: tenant.role, userId: me.user_id, email: me.email
  })
  const create = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    try {
      const created = await api.post<TenantProject>(`/v1/tenants/${encodeURIComponent(tenant.tenant_id)}/projects`, { name: name.trim() } satisfies CreateProjectBody)
      pick(created)
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  return (
    <Section title={tenant.name} actions={<span className="muted small">{tenant.role}{tenant.status === "disabled" ? " · disabled" : ""}</span>}>
      {tenant.status === "disabled" ? <p className="notice">Your membership of this tenant is disabled; an admin can re-enable it.</p> : <ErrorBox error={projects.error} />}
      <ul className="plain" aria-label={`projects of ${tenant.name}`}>
        {projects.data?.items.map((p) => (
          <li key={p.id} className="row">
            <button className="secondary" onClick={() => pick(p)} aria-label={`Open ${p.name}`}>Open</button>
            <strong>{p.name}</strong> <code className="small">{p.id}</code>
          </li>
        ))}
      </ul>
      {projects.data?.items.length === 0 ? <p className="muted">No projects yet.</p> : null}
      {tenant.role === "admin" && tenant.status === "active" ? (
        <form className="row" onSubmit={create} aria-label={`create a project in ${tenant.name}`}>
          <input placeholder="new project name" maxLength={100} value={name} onChange={(e) => setName(e.target.value)} required />
          <button type="submit">Create project</button>
        </form>
      ) : null}
      <ErrorBox error={error} />
    </Section>
  )
}

export const ProjectPicker = ({ api, me, onPick, onReload, onSignOut }: {
  api: Api
  me: Me
  onPick: (c: SessionCredentials) => void
  onReload: () => void
  onSignOut: () => void
}) => {
  const [name, setName] = useState("")
  const [error, setError] = useState<string>()
  const createTenant = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    try {
      await api.post<TenantCreated>("/v1/tenants", { name: name.trim() } satisfies CreateTenantBody)
      setName("")
      onReload()
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  return (
    <div className="picker">
      <header className="card-head">
        <h1>Pick a project</h1>
        <span className="row small"><span data-testid="signed-in-as">{me.display_name ?? me.email}</span><button className="link" onClick={onSignOut}>Sign out</button></span>
      </header>
      {me.tenants.map((t) => <TenantProjects key={t.tenant_id} api={api} me={me} tenant={t} onPick={onPick} />)}
      <Section title={me.tenants.length === 0 ? "Create your first tenant" : "Create a tenant"}>
        {me.tenants.length === 0 ? <p className="muted">You are not a member of any tenant yet: create one (you become its admin), or accept an invitation link.</p> : null}
        <form className="row" onSubmit={createTenant} aria-label="create a tenant">
          <input placeholder="tenant name" maxLength={100} value={name} onChange={(e) => setName(e.target.value)} required />
          <button type="submit">Create tenant</button>
        </form>
        <ErrorBox error={error} />
      </Section>
    </div>
  )
}
