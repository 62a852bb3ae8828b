// A host of MCP Apps, on the TypeScript SDK's client: declares the UI
// extension (or not, with `--plain`), and runs the steps given as JSON on
// one session, printing one JSON summary with each step's outcome. A page's
// calls are what a host sends for it: plain `tools/call` and
// `resources/read` on the same session.
//
//   node apps_host.mjs NODE_MODULES URL STEPS_JSON [--plain]
//
// Steps: {"list": "tools"|"resources"}, {"read": URI}, {"call": NAME}.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, url, stepsJson, ...flags] = process.argv.slice(2);
const load = (rel) => import(pathToFileURL(join(modules, rel)).href);
const { Client } = await load('@modelcontextprotocol/sdk/dist/esm/client/index.js');
const { StreamableHTTPClientTransport } = await load(
  '@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js',
);

const plain = flags.includes('--plain');
const capabilities = plain
  ? {}
  : { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } };
const client = new Client({ name: 'apps-host', version: '1.0.0' }, { capabilities });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const outcome = async (work) => {
  try {
    return { ok: await work() };
  } catch (e) {
    return { error: String(e?.message ?? e) };
  }
};
const steps = [];
for (const step of JSON.parse(stepsJson)) {
  let result;
  if (step.list === 'tools') {
    result = await outcome(async () => (await client.listTools()).tools);
  } else if (step.list === 'resources') {
    result = await outcome(async () => (await client.listResources()).resources);
  } else if (step.read) {
    result = await outcome(() => client.readResource({ uri: step.read }));
  } else if (step.call) {
    result = await outcome(() => client.callTool({ name: step.call, arguments: {} }));
  }
  steps.push({ step, ...result });
}
console.log(
  JSON.stringify({
    capabilities: client.getServerCapabilities(),
    steps,
  }),
);
await client.close();
