// The filters of search and browse: one form, read from and written to the address, and
// turned into the API's two spellings (a search's `filters` object, a listing's `filter=k=v`).

import { h } from "./dom.js";

export const KINDS = ["fact", "turn", "chunk"];

// name in the address -> [filter key, label, placeholder]
const TEXT_FIELDS = [
  ["person", "person", "Person", "Alice, 王伟"],
  ["entity", "entity", "Entity", "Lisbon"],
  ["session", "session_id", "Session", "session id"],
  ["since", "since", "Since", "2024-03-01"],
  ["until", "until", "Until", "2024-03-31T18:00"],
];

function split(value) {
  return (value || "").split(/[,，]/).map((s) => s.trim()).filter(Boolean);
}

// A metadata value as `engram --filter metadata.k=v` reads it: JSON scalars keep their type, a
// quoted one is that text ("3" in quotes is the text 3, not the number; it was sent with its quotes).
function scalar(raw) {
  try {
    const value = JSON.parse(raw);
    if (value === null || ["number", "boolean", "string"].includes(typeof value)) return value;
  } catch { /* text */ }
  return raw;
}

// Metadata pairs: a comma starts a new pair only before another `key=` ("title=Q3, planning"
// is one pair, whose value holds a comma; it was split into title=Q3 and a made-up planning=true).
function pairs(value) {
  return (value || "").split(/[,，](?=\s*[^=,，"]+=)/).map((s) => s.trim()).filter(Boolean);
}

export function fromParams(p) {
  const out = { kind: p.get("kind") || "", meta: p.getAll("meta").join(", ") };
  for (const [name] of TEXT_FIELDS) out[name] = p.get(name) || "";
  return out;
}

export function toParams(values) {
  const out = { kind: values.kind, meta: pairs(values.meta) };
  for (const [name] of TEXT_FIELDS) out[name] = (values[name] || "").trim();
  return out;
}

export function isEmpty(values) {
  return !values.kind && !pairs(values.meta).length && TEXT_FIELDS.every(([name]) => !(values[name] || "").trim());
}

// For POST /v1/memories/search.
export function searchFilters(values) {
  const out = {};
  if (values.kind) out.kind = values.kind;
  for (const [name, key] of TEXT_FIELDS) {
    const value = (values[name] || "").trim();
    if (!value) continue;
    out[key] = ["person", "entity"].includes(name) ? split(value) : value;
  }
  for (const pair of pairs(values.meta)) {
    const at = pair.indexOf("=");
    if (at > 0) out[`metadata.${pair.slice(0, at).trim()}`] = scalar(pair.slice(at + 1).trim());
    else out[`metadata.${pair}`] = true; // the server names the mistake if it is one
  }
  return out;
}

// For GET /v1/memories?filter=key=value.
export function listFilters(values) {
  const out = [];
  if (values.kind) out.push(`kind=${values.kind}`);
  for (const [name, key] of TEXT_FIELDS) {
    const value = (values[name] || "").trim();
    if (!value) continue;
    if (["person", "entity"].includes(name)) split(value).forEach((v) => out.push(`${key}=${v}`));
    else out.push(`${key}=${value}`);
  }
  for (const pair of pairs(values.meta)) out.push(pair.includes("=") ? `metadata.${pair}` : `metadata.${pair}=true`);
  return out;
}

// The form controls, filled from `values`; `read()` gives the values back.
export function filterFields(values, idPrefix) {
  const inputs = {};
  const field = (name, label, control) => h("label", { class: "field", for: `${idPrefix}-${name}` },
    h("span", {}, label), control);
  const kind = h("select", { id: `${idPrefix}-kind`, name: "kind" },
    h("option", { value: "" }, "any kind"), ...KINDS.map((k) => h("option", { value: k, selected: values.kind === k }, k)));
  inputs.kind = kind;
  const fields = [field("kind", "Kind", kind)];
  for (const [name, , label, placeholder] of TEXT_FIELDS) {
    const input = h("input", { id: `${idPrefix}-${name}`, name, value: values[name] || "", placeholder, autocomplete: "off" });
    inputs[name] = input;
    fields.push(field(name, label, input));
  }
  const meta = h("input", { id: `${idPrefix}-meta`, name: "meta", value: values.meta || "", placeholder: "project=alpha, done=true",
    autocomplete: "off" });
  inputs.meta = meta;
  fields.push(field("meta", "Metadata", meta));
  const read = () => Object.fromEntries(Object.entries(inputs).map(([name, el]) => [name, el.value]));
  return { fields, read };
}
