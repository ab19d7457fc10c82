/** The part of `oidc-provider` (which ships no types) the SSO test uses. */
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http"
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>)
    callback(): (request: IncomingMessage, response: ServerResponse) => void
  }
}
