/** Timestamps on the wire: RFC 3339 strings, null stays null. */
export const iso = (date: Date | null) => date === null ? null : date.toISOString()
