// Element builders: text goes in as text nodes, never as markup, so job outputs cannot inject anything.
type Child = Node | string | number | null | undefined | false;
type AttrValue = string | number | boolean | undefined | ((event: Event) => void);
export type Attrs = Record<string, AttrValue>;

function apply(el: Element, attrs: Attrs, children: Child[]): void {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === "function") el.addEventListener(name.replace(/^on/, ""), value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  apply(el, attrs, children);
  return el;
}

const SVG = "http://www.w3.org/2000/svg";

export function s<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  apply(el, attrs, children);
  return el;
}

/** The element with this id; the page's markup guarantees it exists. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`The page has no #${id}`);
  return el as T;
}

export function clear(el: Element): void {
  el.replaceChildren();
}

/** Children for `append`, with the conditional ones that came out empty left out. */
export function present(...children: Child[]): (Node | string)[] {
  const out: (Node | string)[] = [];
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    out.push(child instanceof Node ? child : String(child));
  }
  return out;
}
