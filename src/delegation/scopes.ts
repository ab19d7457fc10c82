/**
 * Delegation scopes (`<service>.<resource>:<action>`) and which one each project endpoint needs.
 *
 * A scope grants exactly what it names: `:read` is GET (and HEAD) on the resource's endpoints,
 * `:manage` every other method (create, cancel, intervene, patch, delete, ...); `:manage` does not
 * include `:read`, ask for both. Endpoints outside the resources below (API keys, the webhook
 * secret, webhooks and deliveries, billing, the inbox, bug reports) are not delegable: a
 * delegation token gets 403 there whatever its scopes. Table: README "Delegation".
 */

import { type DelegationAction, type DelegationResource, delegationResources, delegationScopes } from "../domain/delegation.ts"

// The scopes are the contract's (src/domain/delegation.ts).
export { type DelegationAction, type DelegationResource, delegationResources, delegationScopes } from "../domain/delegation.ts"

const known = new Set(delegationScopes)
export const isDelegationScope = (scope: string): boolean => known.has(scope)

/** The resource of a project route (its template, e.g. `/v1/projects/:pid/do_anything/sessions`), or undefined when not delegable. */
export const resourceOfRoute = (routePath: string): DelegationResource | undefined => {
  const segments = routePath.split("/")
  // Schedules start DoAnything sessions; DoAnything artifacts live under do_anything.
  if (segments.includes("schedules")) return "do_anything"
  if (routePath === "/v1/deep_research" || routePath.startsWith("/v1/deep_research/")) return "deep_research"
  for (const resource of delegationResources) {
    if (segments.includes(resource)) return resource
  }
  return undefined
}

/** The scope a request needs, or undefined when the endpoint is not delegable. */
export const requiredScope = (method: string, routePath: string): string | undefined => {
  const resource = resourceOfRoute(routePath)
  if (resource === undefined) return undefined
  const upper = method.toUpperCase()
  const action: DelegationAction = upper === "GET" || upper === "HEAD" ? "read" : "manage"
  return `web_agent.${resource}:${action}`
}
