/** Builds an element in one expression: attributes (as attributes, so `data-*` and `aria-*` work) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | undefined> | null = null,
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) for (const name in attrs) if (attrs[name] !== undefined) el.setAttribute(name, attrs[name]!);
  el.append(...children);
  return el;
}

/** An element the page's HTML must have: a missing one is a build mistake, said at once. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`index.html has no #${id}`);
  return el as T;
}
