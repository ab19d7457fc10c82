/**
 * Elements of a cached script, described so a later page can be searched for them: the role and
 * accessible name the snapshot shows (src/browser/page-script.ts), the landmark containers around
 * the element, its place among the page's elements of the same role and name, and a CSS path as
 * the last resort. Refs do not outlive the document; these do, as long as the page keeps its
 * meaning.
 */
import type { Page } from "playwright-core"
import { resolveRefHandle } from "../browser/observe.ts"
import type { CachedTarget } from "../domain/cache-script.ts"

/** One interactive element of a snapshot. */
export interface SnapshotElement {
  readonly ref: string
  readonly role: string
  readonly name: string
  readonly containers: ReadonlyArray<string>
}

// `role "name" [ref]` or `role [ref]`; names are JSON-quoted by the snapshot.
const elementPattern = /([a-z][a-z-]*)(?: ("(?:[^"\\]|\\.)*"))? \[((?:f\d+)*e\d+)\]/g
// A landmark container's header line: `form:`, `dialog "Sign in":` (no ref).
const containerPattern = /^([a-z][a-z-]*(?: "(?:[^"\\]|\\.)*")?):$/

const unquote = (quoted: string | undefined): string => {
  if (quoted === undefined) return ""
  try {
    return JSON.parse(quoted) as string
  } catch {
    return quoted.slice(1, -1)
  }
}

/** The interactive elements of a snapshot's text, in page order, each with its containers. */
export const elementsOf = (snapshot: string): Array<SnapshotElement> => {
  const elements: Array<SnapshotElement> = []
  const stack: Array<{ readonly indent: number; readonly label: string }> = []
  for (const line of snapshot.split("\n")) {
    const body = line.trimStart()
    if (body === "") continue
    const indent = line.length - body.length
    while (stack.length > 0 && stack[stack.length - 1]!.indent >= indent) stack.pop()
    const containers = stack.map((entry) => entry.label)
    for (const match of body.matchAll(elementPattern)) {
      elements.push({ ref: match[3]!, role: match[1]!, name: unquote(match[2]), containers })
    }
    const container = containerPattern.exec(body)
    if (container !== null) stack.push({ indent, label: container[1]! })
    else if (body.endsWith(":") && /\[(?:f\d+)*e\d+\][^[]*:$/.test(body)) {
      // An element that contains others (a dropzone, a labelled group): a container too.
      const last = [...body.matchAll(elementPattern)].pop()
      if (last !== undefined) stack.push({ indent, label: `${last[1]}${last[2] === undefined ? "" : ` ${last[2]}`}` })
    }
  }
  return elements
}

const sameList = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((item, i) => item === b[i])

/** The description of the element a ref names in `snapshot` (without its CSS path), or undefined when the snapshot has no such ref. */
export const describeRef = (snapshot: string, ref: string): Omit<CachedTarget, "css"> | undefined => {
  const elements = elementsOf(snapshot)
  const element = elements.find((candidate) => candidate.ref === ref)
  if (element === undefined) return undefined
  const twins = elements.filter((candidate) => candidate.role === element.role && candidate.name === element.name)
  return { role: element.role, name: element.name, containers: [...element.containers], ordinal: twins.indexOf(element) }
}

/**
 * The ref of the element a target describes in `snapshot`: the elements with its role and name,
 * those in the same containers first; its ordinal picks among several. Undefined when the page has
 * no element of that role and name (the CSS path is tried next, see refForCss).
 */
export const findRef = (snapshot: string, target: CachedTarget): string | undefined => {
  const twins = elementsOf(snapshot).filter((candidate) => candidate.role === target.role && candidate.name === target.name)
  if (twins.length === 0) return undefined
  const inPlace = twins.filter((candidate) => sameList(candidate.containers, target.containers))
  const pool = inPlace.length > 0 ? inPlace : twins
  if (pool.length === 1) return pool[0]!.ref
  return (twins[target.ordinal] !== undefined && pool.includes(twins[target.ordinal]!) ? twins[target.ordinal]! : pool[Math.min(target.ordinal, pool.length - 1)]!).ref
}

/** In the page: a CSS path from the document to the element (ids where unique, else tag and position). */
function cssPathOf(element: Element): string {
  const parts: Array<string> = []
  let node: Element | null = element
  while (node !== null && node.nodeType === 1 && node !== document.documentElement) {
    const id = node.getAttribute("id")
    if (id !== null && id !== "" && /^[A-Za-z][\w-]*$/.test(id) && document.querySelectorAll(`#${id}`).length === 1) {
      parts.unshift(`#${id}`)
      break
    }
    const tag = node.tagName.toLowerCase()
    const parent: Element | null = node.parentElement
    const same = parent === null ? [] : Array.from(parent.children).filter((child) => child.tagName === node!.tagName)
    parts.unshift(same.length > 1 ? `${tag}:nth-of-type(${same.indexOf(node) + 1})` : tag)
    node = parent
  }
  return parts.join(" > ")
}

/** In the page: the main-frame ref the last snapshot gave the element at `css`, if it gave one. */
function refAtCss(css: string): string | null {
  let element: Element | null = null
  try {
    element = document.querySelector(css)
  } catch {
    return null
  }
  if (element === null) return null
  const state = (window as unknown as Record<symbol, { ids: WeakMap<Element, number> } | undefined>)[Symbol.for("web-agent-service.refs")]
  const id = state?.ids.get(element)
  return id === undefined ? null : `e${id}`
}

/** The CSS path of a main-frame ref's element (refs inside iframes have none). */
export const cssPathOfRef = async (page: Page, ref: string): Promise<string | null> => {
  if (!/^e\d+$/.test(ref)) return null
  const handle = await resolveRefHandle(page, ref).catch(() => undefined)
  if (handle === undefined) return null
  try {
    return await handle.evaluate(cssPathOf)
  } catch {
    return null
  } finally {
    await handle.dispose().catch(() => undefined)
  }
}

/** The ref of the element at a CSS path, when the current snapshot listed it. */
export const refForCss = (page: Page, css: string): Promise<string | null> => page.evaluate(refAtCss, css).catch(() => null)
