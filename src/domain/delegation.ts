/**
 * Delegation scopes (`<service>.<resource>:<action>`), and the access key a signed delegation
 * request comes from. Which scope each endpoint needs is src/delegation/scopes.ts.
 */

import type { AccessKeyId, TenantId } from "./id-schemas.ts"

export const delegationResources = ["do_anything", "deep_research", "web_search", "track", "profiles", "workspaces"] as const
export type DelegationResource = typeof delegationResources[number]
export type DelegationAction = "read" | "manage"

export const delegationScopes: ReadonlyArray<string> = delegationResources.flatMap((resource) => [
  `web_agent.${resource}:read`,
  `web_agent.${resource}:manage`
])

/** The access key a signed delegation request authenticated with. */
export interface SignedCaller {
  readonly accessKeyId: AccessKeyId
  readonly tenantId: TenantId
  /** Where the key's delegation requests may send the user back (read with the key itself). */
  readonly redirectUris: ReadonlyArray<string>
}
