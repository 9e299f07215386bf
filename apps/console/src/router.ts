import { useEffect, useState } from "preact/hooks";

/**
 * Routes live in the hash (`#/conversations/conv_...`): the API serves one page at
 * /console, and no key or id ever reaches a server log through a path.
 */
export interface Route {
  path: string[];
  query: URLSearchParams;
}

function current(): Route {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path = "", query = ""] = raw.split("?");
  return { path: path.split("/").filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(query) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const update = () => setRoute(current());
    addEventListener("hashchange", update);
    return () => removeEventListener("hashchange", update);
  }, []);
  return route;
}

export function href(path: string, query?: Record<string, string | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) if (value) search.set(name, value);
  const text = search.toString();
  return `#/${path}${text ? `?${text}` : ""}`;
}

export function navigate(path: string, query?: Record<string, string | undefined>): void {
  location.hash = href(path, query);
}
