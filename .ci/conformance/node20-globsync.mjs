// Lets the MCP conformance suite run on Node 20. Its releases from 0.1.14 on
// import `globSync` from `fs`, which Node has only from 22. This module is
// preloaded with `node --import`; it registers a resolve hook that hands the
// suite a `fs` with `globSync` added. The suite calls it only in its
// `tier-check` command, with patterns of the form `**/NAME`, which is all the
// stand-in below supports (anything else throws).
import { register } from "node:module";

const shim = `
import fs from "node:fs";
import path from "node:path";
export * from "node:fs";
export default fs;
export function globSync(pattern, options = {}) {
  if (typeof fs.globSync === "function") return fs.globSync(pattern, options);
  const m = /^\\*\\*\\/([^*?[\\]{}\\/]+)$/.exec(String(pattern));
  if (!m) throw new Error("globSync stand-in (Node 20): only '**/NAME' patterns, not " + pattern);
  const cwd = options.cwd ? String(options.cwd) : process.cwd();
  const found = [];
  const walk = (rel) => {
    for (const entry of fs.readdirSync(path.join(cwd, rel), { withFileTypes: true })) {
      const next = rel ? path.join(rel, entry.name) : entry.name;
      if (entry.isDirectory()) walk(next);
      else if (entry.name === m[1]) found.push(next);
    }
  };
  walk("");
  return found;
}
`;

const shimUrl = "data:text/javascript," + encodeURIComponent(shim);

const hooks = `
const shimUrl = ${JSON.stringify(shimUrl)};
export async function resolve(specifier, context, next) {
  if ((specifier === "fs" || specifier === "node:fs") && context.parentURL !== shimUrl) {
    return { url: shimUrl, shortCircuit: true, format: "module" };
  }
  return next(specifier, context);
}
`;

register("data:text/javascript," + encodeURIComponent(hooks));
