/** Take control on the wire: the query of a control page's signed URL (src/http/api/control.ts). */
import { Schema } from "effect"
import { MaxString } from "../schemas.ts"

/** The signed `exp` and `sig` of a take-control URL, the credential for its one run. */
export const ControlPageQuery = { exp: Schema.optional(MaxString(16)), sig: Schema.optional(MaxString(128)) }
