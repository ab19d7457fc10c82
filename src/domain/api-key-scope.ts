/** An API key's scope: `admin` may manage keys and read the webhook secret; `run` uses the products. */
export const apiKeyScopes = ["admin", "run"] as const
export type ApiKeyScope = typeof apiKeyScopes[number]
