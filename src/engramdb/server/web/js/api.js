// The public HTTP API, called with the user's key. The page has no other access: whatever a
// key may not do, the server refuses, and the page shows the server's message.

const KEY = "engram.key";
const NAMESPACE = "engram.namespace";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }

  // "403 forbidden: this key's role is 'read'; this needs 'write'"
  get display() {
    return `${this.status} ${this.code}: ${this.message}`;
  }
}

const listeners = new Set();

export const session = {
  get key() { return localStorage.getItem(KEY) || ""; },
  set key(value) { value ? localStorage.setItem(KEY, value) : localStorage.removeItem(KEY); },
  get namespace() { return localStorage.getItem(NAMESPACE) || ""; },
  set namespace(value) { value ? localStorage.setItem(NAMESPACE, value) : localStorage.removeItem(NAMESPACE); },
  onUnauthorized(fn) { listeners.add(fn); },
};

function headers(json) {
  const out = { Accept: "application/json" };
  if (json) out["Content-Type"] = "application/json";
  if (session.key) out.Authorization = `Bearer ${session.key}`;
  return out;
}

export function query(params) {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(params || {})) {
    if (Array.isArray(value)) value.forEach((v) => q.append(name, v));
    else if (value !== undefined && value !== null && value !== "") q.set(name, String(value));
  }
  const text = q.toString();
  return text ? `?${text}` : "";
}

export async function api(method, path, { body, params } = {}) {
  // The namespace goes in the query, not the X-Engram-Namespace header: a browser sends only
  // ISO-8859-1 in headers, and a namespace may be Chinese.
  const scoped = session.namespace ? { namespace: session.namespace, ...(params || {}) } : params;
  let response;
  try {
    response = await fetch(path + query(scoped), {
      method, headers: headers(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit", cache: "no-store",
    });
  } catch (exc) {
    throw new ApiError(0, "network", `the server did not answer (${exc.message})`);
  }
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!response.ok) {
    const err = data && data.error ? data.error : { code: "http_error", message: text.slice(0, 200) || response.statusText };
    const error = new ApiError(response.status, err.code, err.message);
    if (response.status === 401) listeners.forEach((fn) => fn(error));
    throw error;
  }
  return data;
}

export const get = (path, params) => api("GET", path, { params });

// One entry by id, cached for the page's lifetime (ids are immutable names; edits bust it).
const entries = new Map();

export function getEntry(id) {
  if (!entries.has(id)) {
    entries.set(id, get(`/v1/memories/${encodeURIComponent(id)}`).catch((exc) => {
      entries.delete(id);
      throw exc;
    }));
  }
  return entries.get(id);
}

export function forgetEntry(id) {
  entries.delete(id);
}

export function forgetEntries() {
  entries.clear();
}

// Every page of a listing (for a session's thread), up to `max` entries.
export async function listAll(params, max = 5000) {
  const out = [];
  let cursor = null;
  do {
    const page = await get("/v1/memories", { ...params, limit: 1000, cursor });
    out.push(...page.results);
    cursor = page.next_cursor;
  } while (cursor && out.length < max);
  return out;
}
