/** Client-side routes under /console (the service answers every such path with the app). */
import { type MouseEvent, type ReactNode, useEffect, useState } from "react"

export const base = "/console"

const current = () => {
  const path = location.pathname.startsWith(base) ? location.pathname.slice(base.length) : location.pathname
  return path === "" ? "/" : path
}

export const navigate = (to: string) => {
  history.pushState(null, "", base + to)
  window.dispatchEvent(new PopStateEvent("popstate"))
  window.scrollTo(0, 0)
}

export const usePath = (): string => {
  const [path, setPath] = useState(current)
  useEffect(() => {
    const update = () => setPath(current())
    window.addEventListener("popstate", update)
    return () => window.removeEventListener("popstate", update)
  }, [])
  return path
}

/** Matches `/sessions/:sid` against a path; undefined when it does not match. */
export const match = (pattern: string, path: string): Record<string, string> | undefined => {
  const names: Array<string> = []
  const source = pattern.replace(/:([a-z_]+)/g, (_, name: string) => {
    names.push(name)
    return "([^/]+)"
  })
  const found = new RegExp(`^${source}/?$`).exec(path)
  if (found === null) return undefined
  return Object.fromEntries(names.map((name, i) => [name, decodeURIComponent(found[i + 1]!)]))
}

export const Link = ({ to, children, className }: { to: string; children: ReactNode; className?: string }) => (
  <a
    href={base + to}
    className={className}
    onClick={(event: MouseEvent) => {
      if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
      event.preventDefault()
      navigate(to)
    }}
  >
    {children}
  </a>
)
